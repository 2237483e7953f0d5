package sim

import (
	"errors"
	"fmt"
)

// nmpSystem plans decode on A100 GPUs for HeLioS's baselines (HeLioS Sec. VI-A): every
// FC runs on the GPU under the roofline and each layer ends its attention and its FFN
// with a tensor-parallel all-reduce over NVLink. Decode attention runs
//   - on the GPU (SGLang with FlashInfer: the KV cache paged in HBM, no locality), or
//   - in the HBM cubes (In-die NMP with a small FPU per bank, or Duplex with FPUs on each
//     cube's logic die): each KV head of a request is pinned to one cube with the whole
//     context window reserved (HeLioS Table I: "Full-length Static"), and each cube runs
//     QKᵀ, the full softmax and P·V for the heads it holds over their reserved windows
//     (kvcache.static_compute), one after another (cubeAttention); the cubes finish at a
//     barrier, so the most loaded cube sets the pace.
//
// With ExpertOffload (Duplex's flow, which the paper also gives In-die NMP) a MoE layer
// splits its touched experts between the GPU and the cubes so that both finish together.
type nmpSystem struct {
	cfg   *Config
	sh    Shard
	n     NMPHost
	cl    HeLioSCluster
	gpu   Device
	nmp   bool
	cubes int
	kv    *heliosKV
	pl    *kvPool
	pre   *prefillInstance
	blk   float64
	kvTok float64 // KV bytes per token on the device, all layers

	lane                  []Lane
	lnGPU, lnNV           int
	lnCube0, lnPre, lnStr int

	now      Time
	load     []float64
	cubeT    []Time // attention per cube per layer
	cubeX    []cubeParts
	cubeBusy []Time
	cubeByte []float64
	flops    float64
	bytes    float64 // over the GPU's HBM interface
	attnMax  Time
	attnMean float64
}

func init() {
	register(SystemGPUNMP, func(c *Config) (system, error) { return newNMPSystem(c) })
}

func newNMPSystem(c *Config) (*nmpSystem, error) {
	if err := heliosCheck(c); err != nil {
		return nil, err
	}
	n := c.HeLioS.NMP
	cl := c.HeLioS.Cluster
	g := n.GPU
	if !(g.PeakTFLOPS > 0) || !(g.BandwidthGBps > 0) || !(g.CapacityGB > 0) {
		return nil, errors.New("the GPU needs a FLOP rate, a bandwidth and a capacity above 0")
	}
	sh := c.shard()
	s := &nmpSystem{cfg: c, sh: sh, n: n, cl: cl, cubes: max(1, n.Cubes)}
	s.gpu = Device{Name: g.Display, PeakFLOPS: g.PeakTFLOPS * 1e12, MemBandwidth: g.BandwidthGBps * 1e9,
		ComputeEff: cl.ComputeEff, MemoryEff: cl.MemoryEff, LaunchOverhead: FromSeconds(n.KernelOverheadUs * 1e-6)}
	kvc := c.HeLioS.KV
	switch n.Kind {
	case NMPNone:
	case NMPBank, NMPCube:
		s.nmp = true
		if !(n.CubeFLOPS() > 0) || !(n.CubeBandwidth() > 0) || !(n.SoftmaxGFLOPS > 0) {
			return nil, fmt.Errorf("%s near-memory processing needs a FLOP rate, a bandwidth and a softmax rate above 0 per cube", n.Kind)
		}
		if kvc.Alloc != AllocStaticModule {
			return nil, fmt.Errorf("the NMP baselines pin each KV head to one HBM cube; set kvcache.alloc=static_module (got %s)", kvc.Alloc)
		}
	default:
		return nil, fmt.Errorf("unknown near-memory processing %q; want none, bank or cube", n.Kind)
	}
	usable := g.CapacityGB * 1e9 * g.MemoryUtilization
	weights := heliosWeights(sh, cl.EP)
	free := usable - weights
	if free <= 0 {
		return nil, fmt.Errorf("%s needs %.1f GB of weights per GPU at tp=%d but a %s offers %.1f GB; raise tp or pp",
			c.Model.Display, weights/1e9, sh.TP, g.Display, usable/1e9)
	}
	kvh := sh.KVHeadsDev()
	s.kvTok = 2 * float64(kvh*sh.HeadDim*sh.Precision*sh.LayersDev())
	b := kvc.BlockTokens
	locs, heads, policy := 1, 1, AllocRoundRobin // plain GPU: one paged pool
	unit := s.kvTok
	if s.nmp {
		locs, heads, policy = s.cubes, kvh, AllocStaticModule
		unit = s.kvTok / float64(kvh)
		free /= float64(s.cubes) // weights interleave over every cube
	}
	s.blk = float64(b) * unit
	capBlocks := int(free / s.blk)
	if kvc.CapacityTokensPerPE > 0 {
		capBlocks = kvc.CapacityTokensPerPE * heads / b
	}
	s.kv = newHeliosKV(policy, locs, 0, capBlocks, b, kvh, 1, c.contextTokens(), 0)
	// the pool mirrors the blocks taken for the views; reservations are an admission rule
	s.pl = newKVPool(locs, capBlocks, func(l int) (int, int) { return heads * ceilDiv(l, b), 0 })

	s.lane = []Lane{{Name: "GPU", Group: "gpu"}}
	s.lnGPU = 0
	s.lnCube0 = len(s.lane)
	if s.nmp {
		for i := range s.cubes {
			s.lane = append(s.lane, Lane{Name: fmt.Sprintf("NMP cube %d", i), Group: "nmp"})
		}
	}
	s.lnNV = len(s.lane)
	s.lane = append(s.lane, Lane{Name: "NVLink", Group: "nvlink", Transfer: true})
	s.lnPre, s.lnStr = -1, -1
	if c.Workload.Prefill == PrefillRun {
		s.pre = newPrefillInstance(c, s.kvTok)
		s.lnPre = len(s.lane)
		s.lane = append(s.lane, Lane{Name: "A100 prefill", Group: "prefill"})
		s.lnStr = len(s.lane)
		s.lane = append(s.lane, Lane{Name: "KV stream", Group: "kv_stream", Transfer: true})
	}
	s.load = make([]float64, locs)
	s.cubeT = make([]Time, s.cubes)
	s.cubeX = make([]cubeParts, s.cubes)
	s.cubeBusy = make([]Time, s.cubes)
	s.cubeByte = make([]float64, s.cubes)
	return s, nil
}

func (s *nmpSystem) kvLocKind() string {
	if s.nmp {
		return "HBM cube"
	}
	return "GPU"
}

func (s *nmpSystem) lanes() []Lane { return s.lane }
func (s *nmpSystem) layers() int   { return s.sh.LayersDev() }
func (s *nmpSystem) pool() *kvPool { return s.pl }
func (s *nmpSystem) tick(now Time) { s.now = now }
func (s *nmpSystem) syncPool()     { copy(s.pl.used, s.kv.used) }
func (s *nmpSystem) utilKeys() []string {
	if s.nmp {
		return []string{"gpu", "bandwidth", "nmp", "nvlink"}
	}
	return []string{"gpu", "bandwidth", "nvlink"}
}

func (s *nmpSystem) arrive(r *Request) {
	if s.pre != nil {
		r.ready = s.pre.schedule(r, r.Arrival)
	}
}

func (s *nmpSystem) fit(in, out int) string {
	return s.kv.fit(in, out, s.kvLocKind(), s.cfg.Model.Display, s.sh.TP)
}

func (s *nmpSystem) admit(cands, _ []*Request) []bool {
	placed := make([]bool, len(cands))
	for i, r := range cands {
		if s.kv.admit(r) {
			placed[i] = true
			r.Loc = max(0, s.kv.target(r))
		}
	}
	s.syncPool()
	return placed
}

func (s *nmpSystem) grow(r *Request) bool {
	ok := s.kv.grow(r)
	s.syncPool()
	return ok
}

func (s *nmpSystem) release(r *Request) {
	s.kv.release(r)
	s.syncPool()
	if r.Status != Done && s.pre != nil {
		r.ready = s.pre.schedule(r, max(r.LastToken, r.Arrival))
	}
}

// kernel is one GPU kernel under the roofline.
func (s *nmpSystem) kernel(name string, flops, bytes float64) Op {
	return Op{Name: name, Lane: s.lnGPU, Dur: s.gpu.Time(flops, bytes), FLOPs: flops, Bytes: bytes}
}

func (s *nmpSystem) gemm(name string, b int, hin, hout float64) Op {
	p := float64(s.sh.Precision)
	return s.kernel(name, 2*float64(b)*hin*hout, (hin*hout+float64(b)*(hin+hout))*p)
}

// cubeParts is one cube's attention of one layer in the non-tiled flow, and the work of
// each GEMM and of the softmax.
type cubeParts struct {
	qk, sm, pv                    Time
	gemmFLOPs, gemmBytes, smFLOPs float64
}

// cubeAttention is a cube's attention over ld head-tokens, gqa query heads to a KV head,
// as every NMP design of HeLioS Sec. II-D runs it (Fig. 3-a): QKᵀ scores the queries
// against the keys, the whole score rows go through a full softmax, then P·V weighs the
// values, one after another. Each GEMM takes the longer of its FLOPs on the cube's NMP and
// its K or V bytes at the NMP's bandwidth; the softmax, SoftmaxFLOPs a score on the cube's
// softmax unit (AttAcc's sits on the buffer die and takes the rows the banks produce).
func (s *nmpSystem) cubeAttention(ld, gqa float64) cubeParts {
	hd := float64(s.sh.HeadDim)
	P := float64(s.sh.Precision)
	x := cubeParts{gemmFLOPs: 2 * gqa * hd * ld, gemmBytes: hd * P * ld, smFLOPs: SoftmaxFLOPs * gqa * ld}
	x.qk = max(FromSeconds(x.gemmFLOPs/(s.n.CubeFLOPS()*s.cl.ComputeEff)), FromSeconds(x.gemmBytes/(s.n.CubeBandwidth()*s.cl.MemoryEff)))
	x.pv = x.qk
	x.sm = FromSeconds(x.smFLOPs / (s.n.SoftmaxGFLOPS * 1e9 * s.cl.ComputeEff))
	return x
}

// cubeTime is NMP work spread evenly over every cube (an expert's weights interleave
// over all of them).
func (s *nmpSystem) cubeTime(flops, bytes float64) Time {
	c := float64(s.cubes)
	return max(FromSeconds(flops/(c*s.n.CubeFLOPS()*s.cl.ComputeEff)), FromSeconds(bytes/(c*s.n.CubeBandwidth()*s.cl.MemoryEff)))
}

func (s *nmpSystem) plan(sc *Schedule, decode, prefill []*Request) []StageMark {
	sh := s.sh
	N := sh.LayersDev()
	B := len(decode)
	P := float64(sh.Precision)
	d := float64(sh.DModel)
	hd := float64(sh.HeadDim)
	q := float64(sh.HeadsDev())
	kvh := float64(sh.KVHeadsDev())
	s.flops, s.bytes = 0, 0
	s.attnMax, s.attnMean = 0, 0
	clear(s.cubeBusy)
	clear(s.cubeByte)
	clear(s.cubeT)
	stage := 0
	add := func(op Op, layer int) {
		op.Stage, op.Layer = stage, layer
		s.flops += op.FLOPs
		if op.Lane == s.lnGPU {
			s.bytes += op.Bytes
		}
		sc.Add(op)
	}
	if len(prefill) > 0 {
		var by float64
		for _, r := range prefill {
			by += float64(r.SeqLen()) * s.kvTok
		}
		// the joining prompts' KV cache written into HBM
		add(s.kernel("KV in", 0, by), 0)
	}
	if B > 0 {
		// the per-iteration work, the same in every layer
		var sumL float64
		for _, r := range decode {
			sumL += float64(r.SeqLen())
		}
		if s.nmp && s.cfg.HeLioS.KV.StaticCompute == StaticWindow {
			s.kv.windowTokens(s.load)
		} else {
			s.kv.headTokens(s.load)
		}
		if s.nmp {
			var sum float64
			for c := range s.cubes {
				x := s.cubeAttention(s.load[c], q/kvh)
				s.cubeX[c] = x
				t := x.qk + x.sm + x.pv
				s.cubeT[c] = t
				sum += float64(t)
				s.attnMax = max(s.attnMax, t)
			}
			s.attnMean = sum / float64(s.cubes)
		}
		var moeGPU, moeNMP Op
		var moeNMPT Time
		mats := sh.ffnMatrices()
		if sh.Experts > 0 {
			w := moeWork(sh, s.cl.EP, B)
			n := max(1, int(w.touched+0.5))
			per := w.touched / float64(n)
			fl := 2 * w.tokens * w.params / float64(n) // FLOPs of one touched expert
			by := per * w.params * P
			act := w.tokens / float64(n) * (d + (mats-1)*float64(sh.DFFN)) * P * 2
			best := -1
			var bestT Time
			for k := 0; k <= n; k++ {
				if !s.nmp || !s.n.ExpertOffload {
					k = n
				}
				tg := s.gpu.Time(float64(k)*fl, float64(k)*(by+act))
				tn := s.cubeTime(float64(n-k)*fl, float64(n-k)*by)
				if k == 0 {
					tg = 0
				}
				if t := max(tg, tn); best < 0 || t < bestT {
					best, bestT = k, t
				}
			}
			if best > 0 {
				moeGPU = Op{Name: fmt.Sprintf("experts ×%d", best), Lane: s.lnGPU, Dur: s.gpu.Time(float64(best)*fl, float64(best)*(by+act)),
					FLOPs: float64(best) * fl, Bytes: float64(best) * (by + act)}
			}
			if best < n {
				moeNMPT = s.cubeTime(float64(n-best)*fl, float64(n-best)*by)
				moeNMP = Op{Name: fmt.Sprintf("experts ×%d", n-best), Dur: moeNMPT, FLOPs: float64(n-best) * fl / float64(s.cubes), Bytes: float64(n-best) * by / float64(s.cubes)}
			}
		}
		nv := ringAllReduce(sh.TP, float64(B)*d*P, s.cl.NVLinkGBps*1e9, FromSeconds(s.cl.NVLinkLatencyUs*1e-6))
		elt := func(name string, width float64) Op {
			return s.kernel(name, 4*float64(B)*width, 2*float64(B)*width*P)
		}
		f := float64(sh.DFFN) / float64(sh.TP)
		for l := range N {
			stage++
			add(elt("norm", d), l)
			add(s.gemm("QKV", B, d, (q+2*kvh)*hd), l)
			if s.nmp {
				stage++
				for c := range s.cubes {
					x := s.cubeX[c]
					lane := s.lnCube0 + c
					for _, op := range []Op{{Name: "QKᵀ", Dur: x.qk, FLOPs: x.gemmFLOPs, Bytes: x.gemmBytes},
						{Name: "softmax", Dur: x.sm, FLOPs: x.smFLOPs}, {Name: "P·V", Dur: x.pv, FLOPs: x.gemmFLOPs, Bytes: x.gemmBytes}} {
						if op.Dur > 0 {
							op.Lane = lane
							add(op, l)
						}
					}
					s.cubeBusy[c] += s.cubeT[c]
					s.cubeByte[c] += 2 * x.gemmBytes
				}
				stage++
			} else {
				add(s.kernel("attention", 4*q*hd*sumL, 2*kvh*hd*P*sumL), l)
			}
			add(s.gemm("O proj", B, q*hd, d), l)
			if nv > 0 {
				stage++
				add(Op{Name: "TP all-reduce", Lane: s.lnNV, Dur: nv}, l)
				stage++
			}
			add(elt("norm", d), l)
			if sh.Experts > 0 {
				add(s.gemm("router", B, d, float64(sh.Experts)), l)
				stage++
				if moeGPU.Dur > 0 {
					add(moeGPU, l)
				}
				if moeNMPT > 0 {
					for c := range s.cubes {
						op := moeNMP
						op.Lane = s.lnCube0 + c
						add(op, l)
						s.cubeBusy[c] += moeNMPT
						s.cubeByte[c] += op.Bytes
					}
				}
				stage++
			} else {
				add(s.gemm("FFN FC1", B, d, (mats-1)*f), l)
				add(elt("act", (mats-1)*f), l)
				add(s.gemm("FFN FC2", B, f, d), l)
			}
			if nv > 0 {
				stage++
				add(Op{Name: "TP all-reduce", Lane: s.lnNV, Dur: nv}, l)
			}
		}
	}
	if s.pre != nil {
		drawPrefill(sc, s.pre, s.now, s.lnPre, s.lnStr)
	}
	return nil
}

func (s *nmpSystem) observe(snap *Snapshot, sc *Schedule, running []*Request) {
	T := snap.IterTime
	sec := T.Seconds()
	u := snap.Metrics.Util
	u["gpu"] = s.flops / (s.gpu.PeakFLOPS * sec)
	u["bandwidth"] = min(1, s.bytes/(s.gpu.MemBandwidth*sec))
	busy := sc.Busy()
	u["nvlink"] = float64(busy[s.lnNV]) / float64(T)
	k := s.kv
	m := &snap.KV
	m.BlockBytes = s.blk
	if !s.nmp {
		snap.Banks.Reason = "GPU-only: the A100's HBM has no processing in memory, so there is no bank activity to show"
		m.LocKind = "HBM"
		m.Unit = fmt.Sprintf("paged block: %d token(s) × K and V of the GPU's KV heads and layers, no locality", k.b)
		heliosKVMap(m, k, running, func(int) string { return "HBM" }, nil)
	} else {
		var nb float64
		for c := range s.cubes {
			nb += float64(s.cubeBusy[c])
		}
		u["nmp"] = nb / (float64(s.cubes) * float64(T))
		if s.attnMean > 0 {
			snap.Metrics.LoadImbalance = float64(s.attnMax) / s.attnMean
		}
		g := &snap.Banks
		g.RowKind, g.ColKind = "cube", "bank"
		g.Rows = s.cubes
		g.Cols = 16
		cells := g.Rows * g.Cols
		g.PIM, g.Mem, g.Owner = make([]float64, cells), make([]float64, cells), make([]int, cells)
		g.RowNotes = make([]string, g.Rows)
		g.RowLevels = []BankLevel{{"HBM cube", "cube", s.cubes}}
		g.ColLevels = []BankLevel{{"bank", "bank", g.Cols}}
		g.Units = []BankUnit{systemUnit("GPU", busy[s.lnGPU], float64(T)), systemUnit("NVLink", busy[s.lnNV], float64(T))}
		for c := range s.cubes {
			pb := min(1, float64(s.cubeBusy[c])/float64(T))
			mb := min(1, s.cubeByte[c]/(s.n.CubeBandwidth()*sec))
			for b := range g.Cols {
				g.PIM[c*g.Cols+b], g.Mem[c*g.Cols+b], g.Owner[c*g.Cols+b] = pb, mb, -1
			}
			g.RowNotes[c] = fmt.Sprintf("%.0f head-tok · attn %s/layer", s.load[c], s.cubeT[c])
		}
		g.Reason = "In-die NMP (AttAcc): a processing unit beside every bank of the cube; the columns stand for the cube's banks, busy together"
		if s.n.Kind == NMPCube {
			g.Reason = "Duplex: the FPUs sit on each cube's logic die and reach its banks through extra TSVs; the columns stand for the cube's banks, busy together"
		}
		m.LocKind = "HBM cube"
		m.Unit = fmt.Sprintf("%d tokens × one KV head × %d layers; %s", k.b, s.sh.LayersDev(), k.describe())
		heliosKVMap(m, k, running, func(c int) string { return fmt.Sprintf("cube%d", c) }, g.RowNotes)
	}
	if m.Capacity > 0 {
		snap.Metrics.KVUtil = float64(m.Used) / float64(m.Capacity)
	}
}
