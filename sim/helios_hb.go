package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// hbSystem plans decode on HB-Devices (HeLioS Sec. III-V). Every device of the
// tensor-parallel group does the same work, so one device is simulated: its PE mesh runs
// each layer as a sequence of barrier-separated phases (the operator partition of
// Fig. 11 and the collectives of Figs. 12-14):
//
//	T5 norm stats → QKV FC → T1 Q replication → T2 K/V delivery → attention (per PE) →
//	T3 reduce-scatter with Eq. 1-2 → O FC → T4 all-reduce → NVLink TP all-reduce →
//	T5 → FFN/MoE FCs with 1-D all-reduces → NVLink TP all-reduce
//
// Every phase but attention is the same on every PE (FCs are 2-D tiled, collectives
// involve every PE); attention takes each PE's local tokens, so the barrier after it is
// where imbalance shows. With the tiled flow (HeLioS) each PE runs Algorithm 1 over its
// blocks; with the non-tiled flow (Stratum, the HB-non-Tiled baseline) each KV head lives
// on a module of PEs: QKᵀ over a slice of the context, the scores all-gathered in the
// module, a full softmax on the vector unit, then P·V over a slice of the head dimension.
// The baseline also runs Stratum's operator dataflow round a ring instead of these mesh
// collectives (helios_ring.go).
//
// It plans every iteration, even headless (it is no jumper, sim/jump.go). Under the spatial
// policy a request's new tokens move to another PE whenever its last block fills, the PE
// Algorithm 2 picks from its running state, and at the defaults the KV cache gains a block
// in most iterations: the slowest PE at the attention barrier and the slope of each PE's
// load change at nearly every one, and a probe could not stand for the placements without
// making them. Under either policy a request joins or retires every five or six iterations
// at the defaults, so stretches of eight or more hold about half the iterations, and a
// prompt's KV cache arrives from the prefill instance on its own clock.
type hbSystem struct {
	cfg  *Config
	sh   Shard
	hb   HBDevice
	cl   HeLioSCluster
	m    int // mesh side
	pes  int
	side int // lanes per side (the mesh is aggregated into at most 4×4 lanes)
	agg  int // PEs per lane side

	peFLOPS, peBW float64 // achievable (with the efficiencies)
	hop           Time
	link          float64 // bytes/s per NoC link direction
	kv            *heliosKV
	pl            *kvPool
	pre           *prefillInstance
	kvTokLayer    float64 // KV bytes per token per layer on the device (all its KV heads)
	blockBytes    float64
	rowEffKV      float64 // DRAM row efficiency of attention's KV reads
	tiled         bool
	ring          bool // Stratum's ring dataflow instead of HeLioS' mesh collectives

	lane                                   []Lane
	lnNoC, lnRouter, lnNV, lnPre, lnStream int

	// per-iteration results kept for observe
	load     []float64 // head-tokens per PE this iteration
	attn     []Time    // attention time per PE per layer
	peBytes  []float64 // DRAM bytes per PE over the iteration
	flops    float64
	bytes    float64
	attnMax  Time
	attnMean float64
	now      Time
	// per lane: the attention ops of one layer (several for the non-tiled flow)
	laneOps [][]Op
	scratch []int
}

func init() {
	register(SystemHeLioS, func(c *Config) (system, error) { return newHBSystem(c) })
}

// newHBSystem builds the HB-Device planner: the configuration checked, the mesh and its
// rates derived, the KV cache sized in what the weights leave of each PE, then the lanes.
func newHBSystem(c *Config) (*hbSystem, error) {
	if err := checkHB(c); err != nil {
		return nil, err
	}
	s := deriveHB(c)
	if err := s.sizeKV(); err != nil {
		return nil, err
	}
	s.addLanes()
	return s, nil
}

// checkHB refuses a device, attention flow, KV allocation or dataflow the planner cannot
// run, saying what to change.
func checkHB(c *Config) error {
	if err := heliosCheck(c); err != nil {
		return err
	}
	hb := c.HeLioS.HB
	kvc := c.HeLioS.KV
	if hb.BankGrid < 1 || hb.Dies < 1 || hb.Mesh < 1 || hb.BankGrid%hb.Mesh != 0 {
		return fmt.Errorf("a %d×%d PE mesh does not divide a die's %d×%d bank grid into equal partitions; pick a mesh side that divides %d (1, 2, 4, 8 or 16 for the paper's die)",
			hb.Mesh, hb.Mesh, hb.BankGrid, hb.BankGrid, hb.BankGrid)
	}
	if hb.Channels < 1 || !(hb.PinGbps > 0) || hb.BankPins < 1 || !(hb.BankMB > 0) || hb.MACsPerPE < 1 || !(hb.ClockGHz > 0) || !(hb.NoCLinkGBps > 0) {
		return errors.New("the HB-Device needs at least one channel and positive pins, pin rate, bank capacity, MACs, clock and NoC bandwidth")
	}
	switch hb.Flow {
	case FlowTiled, FlowNonTiled:
	default:
		return fmt.Errorf("unknown attention flow %q; want %s or %s", hb.Flow, FlowTiled, FlowNonTiled)
	}
	switch kvc.Alloc {
	case AllocSpatial, AllocRoundRobin, AllocBalancedOnly, AllocStaticModule:
	default:
		return fmt.Errorf("unknown KV allocation %q; want spatial, static_module, round_robin or balanced_only", kvc.Alloc)
	}
	if hb.Flow == FlowNonTiled && kvc.Alloc != AllocStaticModule {
		return fmt.Errorf("the non-tiled flow keeps each KV head on one module of PEs; set kvcache.alloc=static_module (got %s)", kvc.Alloc)
	}
	switch hb.Dataflow {
	case DataflowMesh:
	case DataflowRing:
		if hb.Flow != FlowNonTiled {
			return fmt.Errorf("the ring dataflow is Stratum's, whose attention is non-tiled; set hb.attention_flow=non_tiled (got %s)", hb.Flow)
		}
		if hb.Mesh > 1 && hb.Mesh%2 == 1 {
			return fmt.Errorf("a ring through every PE of a %d×%d mesh needs an even side; pick hb.mesh 2, 4, 8 or 16", hb.Mesh, hb.Mesh)
		}
	default:
		return fmt.Errorf("unknown dataflow %q; want %s or %s", hb.Dataflow, DataflowMesh, DataflowRing)
	}
	if group, pes := modulePEs(kvc), hb.MeshPEs(); pes%group != 0 {
		return fmt.Errorf("modules of %d PEs do not divide the %d PEs of a %d×%d mesh; pick kvcache.module_pes dividing %d", group, pes, hb.Mesh, hb.Mesh, pes)
	}
	return nil
}

// modulePEs is the PEs that hold a KV head together: a module under the static
// allocation (the NMP baselines), one PE otherwise.
func modulePEs(kvc HeLioSKV) int {
	if kvc.Alloc == AllocStaticModule {
		return max(1, kvc.ModulePEs)
	}
	return 1
}

// deriveHB is the planner's fixed parameters: the mesh, its lanes' aggregation, each PE's
// achievable FLOP rate and bandwidth, and the NoC's hop latency and link bandwidth.
func deriveHB(c *Config) *hbSystem {
	hb := c.HeLioS.HB
	cl := c.HeLioS.Cluster
	s := &hbSystem{cfg: c, sh: c.shard(), hb: hb, cl: cl, m: hb.Mesh, pes: hb.MeshPEs(), tiled: hb.Flow == FlowTiled, ring: hb.Dataflow == DataflowRing}
	s.side = min(s.m, 4)
	s.agg = s.m / s.side
	s.peFLOPS = hb.PEFLOPS() * cl.ComputeEff
	s.peBW = hb.PEBandwidth() * cl.MemoryEff
	s.hop = FromSeconds(hb.NoCHopNs * 1e-9)
	s.link = hb.NoCLinkGBps * 1e9
	return s
}

// sizeKV places the KV cache in what the weights leave of each PE (or the capacity a
// preset gives), in blocks of the allocation's unit, and the DRAM row efficiency of its
// reads.
func (s *hbSystem) sizeKV() error {
	c, sh, hb := s.cfg, s.sh, s.hb
	kvc := c.HeLioS.KV
	group := modulePEs(kvc)
	weights := heliosWeights(sh, s.cl.EP)
	perPE := weights / float64(s.pes)
	free := hb.PECapacity() - perPE
	if free <= 0 {
		return fmt.Errorf("%s needs %.2f GB of weights per PE at tp=%d (%.1f GB per device over %d PEs) but a PE holds %.2f GB; raise tp or pp",
			c.Model.Display, perPE/1e9, sh.TP, weights/1e9, s.pes, hb.PECapacity()/1e9)
	}
	kvh := sh.KVHeadsDev()
	s.kvTokLayer = 2 * float64(kvh*sh.HeadDim*sh.Precision)
	kvTok := s.kvTokLayer * float64(sh.LayersDev())
	b := kvc.BlockTokens
	heads := 1
	unitTok := kvTok // bytes one block-token holds
	if kvc.Alloc == AllocStaticModule {
		heads = kvh
		unitTok = kvTok / float64(kvh)
	}
	s.blockBytes = float64(b) * unitTok
	capBlocks := int(free / s.blockBytes)
	if kvc.CapacityTokensPerPE > 0 {
		capBlocks = kvc.CapacityTokensPerPE * heads / b
	}
	ctx := c.contextTokens()
	s.kv = newHeliosKV(kvc.Alloc, s.pes, s.m, capBlocks, b, kvh, group, ctx, kvc.TieTolerance)
	// The pool mirrors the blocks taken for the views; the static policy's reservations
	// are an admission rule on top, so requests can wait while the memory has room
	// (HeLioS Fig. 4).
	s.pl = newKVPool(s.pes, capBlocks, func(n int) (int, int) { return heads * ceilDiv(n, b), 0 })

	// KV reads: a block's slice of one layer spread over the PE's banks (tiled), or a
	// module share of the reserved context (static), per row opened.
	contig := float64(b) * s.kvTokLayer / float64(hb.BanksPerPE())
	if kvc.Alloc == AllocStaticModule {
		contig = float64(ctx) / float64(group) * s.kvTokLayer / float64(kvh) / float64(hb.BanksPerPE())
	}
	s.rowEffKV = hb.RowEff(contig)
	return nil
}

// addLanes lays out the PE lanes (the mesh aggregated into at most 4×4), the two NoCs,
// NVLink and, when prefill runs, the prefill instance and its KV stream; and the per-PE
// state observe fills.
func (s *hbSystem) addLanes() {
	for i := range s.side * s.side {
		x, y := i/s.side, i%s.side
		name := fmt.Sprintf("PE(%d,%d)", x, y)
		if s.agg > 1 {
			name = fmt.Sprintf("PEs(%d-%d,%d-%d)", x*s.agg, x*s.agg+s.agg-1, y*s.agg, y*s.agg+s.agg-1)
		}
		s.lane = append(s.lane, Lane{Name: name, Group: "pe"})
	}
	s.lnNoC = len(s.lane)
	s.lane = append(s.lane, Lane{Name: "inter-PE NoC", Group: "noc", Transfer: true})
	s.lnRouter = len(s.lane)
	s.lane = append(s.lane, Lane{Name: "router NoC", Group: "noc", Transfer: true})
	s.lnNV = len(s.lane)
	s.lane = append(s.lane, Lane{Name: "NVLink", Group: "nvlink", Transfer: true})
	s.lnPre, s.lnStream = -1, -1
	if s.cfg.Workload.Prefill == PrefillRun {
		s.pre = newPrefillInstance(s.cfg, s.kvTokLayer*float64(s.sh.LayersDev()))
		s.lnPre = len(s.lane)
		s.lane = append(s.lane, Lane{Name: "A100 prefill", Group: "prefill"})
		s.lnStream = len(s.lane)
		s.lane = append(s.lane, Lane{Name: "KV stream", Group: "kv_stream", Transfer: true})
	}
	s.load = make([]float64, s.pes)
	s.attn = make([]Time, s.pes)
	s.peBytes = make([]float64, s.pes)
}

func (s *hbSystem) lanes() []Lane { return s.lane }
func (s *hbSystem) layers() int   { return s.sh.LayersDev() }
func (s *hbSystem) pool() *kvPool { return s.pl }
func (s *hbSystem) utilKeys() []string {
	return []string{"pe", "bandwidth", "noc", "nvlink"}
}

func (s *hbSystem) arrive(r *Request) {
	if s.pre != nil {
		r.ready = s.pre.schedule(r, r.Arrival)
	}
}

func (s *hbSystem) fit(in, out int) string {
	return s.kv.fit(in, out, "PE", s.cfg.Model.Display, s.sh.TP)
}

func (s *hbSystem) admit(cands, _ []*Request) []bool {
	placed := make([]bool, len(cands))
	for i, r := range cands {
		if s.kv.admit(r) {
			placed[i] = true
			r.Loc = s.kv.target(r)
		}
	}
	s.syncPool()
	return placed
}

func (s *hbSystem) grow(r *Request) bool {
	ok := s.kv.grow(r)
	if ok {
		r.Loc = s.kv.target(r)
	}
	s.syncPool()
	return ok
}

func (s *hbSystem) release(r *Request) {
	s.kv.release(r)
	s.syncPool()
	if r.Status != Done && s.pre != nil {
		// preempted: its KV cache is gone, so its prompt and tokens are prefilled again
		r.ready = s.pre.schedule(r, max(r.LastToken, r.Arrival))
	}
}

// syncPool mirrors the allocator's occupancy into the engine's pool.
func (s *hbSystem) syncPool() { copy(s.pl.used, s.kv.used) }

// lanePE is the lane of PE p.
func (s *hbSystem) lanePE(p int) int {
	x, y := p/s.m, p%s.m
	return (x/s.agg)*s.side + y/s.agg
}

// peTime is a PE operation under the roofline.
func (s *hbSystem) peTime(flops, bytes, rowEff float64) Time {
	return max(FromSeconds(flops/s.peFLOPS), FromSeconds(bytes/(s.peBW*rowEff)))
}

// fc is one PE's tile of an FC layer of hin → hout over batch b (Fig. 11): weights
// (hin/m)×(hout/m), input chunk b×hin/m, partial output b×hout/m.
func (s *hbSystem) fc(b int, hin, hout float64) (Time, float64, float64) {
	p := float64(s.sh.Precision)
	m2 := float64(s.pes)
	mf := float64(s.m)
	w := hin * hout / m2 * p
	flops := 2 * float64(b) * hin * hout / m2
	bytes := w + float64(b)*(hin+hout)/mf*p
	eff := s.hb.RowEff(w / float64(s.hb.BanksPerPE()))
	return s.peTime(flops, bytes, eff), flops, bytes
}

// hbSeg is one part of a PE phase: an FC tile (compute) or a collective, which also
// shows on the inter-PE NoC lane.
type hbSeg struct {
	name         string
	dur          Time
	flops, bytes float64 // per PE
	comm         bool
}

// hbPhase is one barrier-separated step of a layer: segments that run back to back on every
// PE (FCs and collectives, the same on every PE), per-PE attention, or an NVLink
// all-reduce while the PEs wait.
type hbPhase struct {
	name string
	segs []hbSeg
	attn bool
	nv   Time // NVLink all-reduce
	rt   Time // its router-NoC gather and scatter, pipelined with it
}

// pe is a uniform phase's duration on the PE lanes.
func (p *hbPhase) pe() Time {
	var t Time
	for _, g := range p.segs {
		t += g.dur
	}
	return t
}

// tick is called by the engine with the time the iteration starts.
func (s *hbSystem) tick(now Time) { s.now = now }

func (s *hbSystem) plan(sc *Schedule, decode, prefill []*Request) []StageMark {
	sh := s.sh
	N := sh.LayersDev()
	clear(s.peBytes)
	s.flops, s.bytes = 0, 0
	s.attnMax, s.attnMean = 0, 0
	nl := s.side * s.side

	stage := 0
	var clock Time // start of the next phase
	// KV ingress of the requests that join: their prompt's KV cache is written from the
	// PEs' transfer buffers into DRAM where Algorithm 2 placed it (not overlapped).
	if len(prefill) > 0 {
		in := make([]float64, s.pes)
		for _, r := range prefill {
			if q := s.kv.reqs[r.ID]; q != nil {
				for p := range s.pes {
					in[p] += float64(s.kv.tokensAt(q, p)) * s.kvTokLayer * float64(N) / float64(s.kv.heads)
				}
			}
		}
		laneD := make([]Time, nl)
		laneB := make([]float64, nl)
		for p, by := range in {
			d := FromSeconds(by / (s.peBW * s.rowEffKV))
			l := s.lanePE(p)
			laneD[l] = max(laneD[l], d)
			laneB[l] += by
			s.peBytes[p] += by
			s.bytes += by
		}
		for l, d := range laneD {
			if d > 0 {
				sc.Add(Op{Name: "KV in", Lane: l, Dur: d, Bytes: laneB[l], Stage: stage})
				clock = max(clock, d)
			}
		}
	}
	if len(decode) > 0 {
		ph := s.phases(decode)
		var fcFlops, fcBytes float64
		for _, p := range ph {
			for _, g := range p.segs {
				if !g.comm {
					fcFlops += g.flops
					fcBytes += g.bytes
				}
			}
		}
		for p := range s.pes {
			s.peBytes[p] += float64(N) * fcBytes
		}
		s.flops += float64(N) * fcFlops * float64(s.pes)
		s.bytes += float64(N) * fcBytes * float64(s.pes)
		for l := range N {
			for i := range ph {
				stage++
				clock = s.emit(sc, &ph[i], l, stage, clock)
			}
		}
	}
	if s.pre != nil {
		s.planPrefill(sc)
	}
	return nil
}

// emit places one phase of layer l starting at clock (the barrier of the phase before)
// and returns when it ends.
func (s *hbSystem) emit(sc *Schedule, p *hbPhase, layer, stage int, clock Time) Time {
	if p.nv > 0 || p.rt > 0 {
		if p.nv > 0 {
			sc.Add(Op{Name: p.name, Lane: s.lnNV, Dur: p.nv, Stage: stage, Layer: layer})
		}
		if p.rt > 0 {
			sc.Add(Op{Name: p.name, Lane: s.lnRouter, Dur: p.rt, Stage: stage, Layer: layer})
		}
		return clock + max(p.nv, p.rt)
	}
	if p.attn {
		for l, ops := range s.laneOps {
			for i, op := range ops {
				op.Lane, op.Stage, op.Layer = l, stage, layer
				if i == 0 {
					sc.Add(op)
				} else {
					sc.Add(op, len(sc.Spans)-1)
				}
			}
		}
		return clock + s.attnMax
	}
	d := p.pe()
	if d <= 0 {
		return clock
	}
	var fl, by float64
	at := clock
	for _, g := range p.segs {
		if g.comm && g.dur > 0 {
			sc.AddAt(Op{Name: g.name, Lane: s.lnNoC, Dur: g.dur, Stage: stage, Layer: layer}, at)
		}
		fl += g.flops
		by += g.bytes
		at += g.dur
	}
	per := float64(s.agg * s.agg)
	for l := range s.side * s.side {
		sc.Add(Op{Name: p.name, Lane: l, Dur: d, FLOPs: fl * per, Bytes: by * per, Stage: stage, Layer: layer})
	}
	return clock + d
}

// nvlinkPhase is the tensor-parallel all-reduce of a layer's b output rows over NVLink:
// the device router gathers the partial sums from the mesh and scatters the result back
// over the router NoC, one link per mesh column, pipelined with NVLink.
func (s *hbSystem) nvlinkPhase(name string, b int) hbPhase {
	S := float64(b) * float64(s.sh.DModel) * float64(s.sh.Precision)
	nv := ringAllReduce(s.sh.TP, S, s.cl.NVLinkGBps*1e9, FromSeconds(s.cl.NVLinkLatencyUs*1e-6))
	rt := Time(2*s.m)*s.hop + FromSeconds(2*S/(float64(s.m)*s.link))
	return hbPhase{name: name, nv: nv, rt: rt}
}

// normStatBytes is the bytes per request T5 all-reduces: the sum of squares for RMSNorm,
// or (mean, variance, count) for LayerNorm combined with Eq. 3. Gated-FFN models use
// RMSNorm, the others LayerNorm.
func (s *hbSystem) normStatBytes() float64 {
	if s.sh.FFN == "swiglu" {
		return 4
	}
	return 12
}

// phases computes one layer's phases for this iteration's batch (every layer is the
// same) and the per-PE attention work. Collectives share a PE span with the FC next to
// them; the inter-PE NoC lane shows each one on its own.
func (s *hbSystem) phases(decode []*Request) []hbPhase {
	if s.ring {
		return s.ringPhases(decode)
	}
	sh := s.sh
	B := len(decode)
	bf := float64(B)
	P := float64(sh.Precision)
	d := float64(sh.DModel)
	hd := float64(sh.HeadDim)
	q := float64(sh.HeadsDev())
	kvh := float64(sh.KVHeadsDev())
	m := s.m
	mf := float64(m)
	fc := func(name string, b int, hin, hout float64) hbSeg {
		t, fl, by := s.fc(b, hin, hout)
		return hbSeg{name: name, dur: t, flops: fl, bytes: by}
	}
	coll := func(name string, t Time) hbSeg { return hbSeg{name: name, dur: t, comm: true} }
	var out []hbPhase
	phase := func(name string, segs ...hbSeg) { out = append(out, hbPhase{name: name, segs: segs}) }
	nvlink := func(name string) {
		if sh.TP > 1 {
			out = append(out, s.nvlinkPhase(name, B))
		}
	}
	stat := bf * s.normStatBytes()
	t5 := coll("T5 norm", lineAllReduce(m, stat, s.hop, s.link))

	phase("T5·QKV FC", t5, fc("QKV FC", B, d, (q+2*kvh)*hd))
	targets := s.scratch[:0]
	for _, r := range decode {
		targets = append(targets, s.kv.target(r))
	}
	s.scratch = targets
	xr, xs, yg, ys := t2Cost(m, targets, 2*kvh*hd/mf*P, s.hop, s.link)
	phase("T1/T2", coll("T1 Q", lineAllReduce(m, bf*q*hd/mf*P, s.hop, s.link)+lineAllGather(m, bf*q*hd*P, s.hop, s.link)),
		coll("T2 K/V", xr+xs+yg+ys))
	s.attention(decode, targets)
	out = append(out, hbPhase{name: "attention", attn: true})
	sx := bf * q * (hd*P + 8) // partial O plus (m, l) per query head in FP32
	phase("T3·O FC·T4",
		coll("T3 O", lineAllGather(m, sx, s.hop, s.link)+lineAllGather(m, sx/mf, s.hop, s.link)+lineAllGather(m, bf*q*hd*P/mf, s.hop, s.link)),
		fc("O FC", B, q*hd, d),
		coll("T4 AR", lineAllReduce(m, bf*d/mf*P, s.hop, s.link)))
	nvlink("TP all-reduce")
	mats := sh.ffnMatrices()
	arOut := coll("FFN AR", lineAllReduce(m, bf*d/mf*P, s.hop, s.link))
	if sh.Experts > 0 {
		w := moeWork(sh, s.cl.EP, B)
		f := float64(sh.DFFN)
		m2 := float64(s.pes)
		eff := s.hb.RowEff(w.params / mats * P / m2 / float64(s.hb.BanksPerPE()))
		ex := func(name string, hin, hout float64) hbSeg {
			fl := 2 * w.tokens * hin * hout / m2
			by := w.touched*hin*hout/m2*P + w.tokens*(hin+hout)/mf*P
			return hbSeg{name: name, dur: s.peTime(fl, by, eff), flops: fl, bytes: by}
		}
		touched := Time(math.Ceil(w.touched))
		phase("T5·experts FC1·AR", t5, fc("router FC", B, d, float64(sh.Experts)), ex("expert FC1", d, (mats-1)*f),
			coll("expert AR", touched*Time(2*(m-1))*s.hop+lineAllReduce(m, w.tokens*(mats-1)*f/mf*P, 0, s.link)))
		phase("experts FC2·AR", ex("expert FC2", f, d), arOut)
	} else {
		f := float64(sh.DFFN) / float64(sh.TP)
		phase("T5·FFN FC1·AR", t5, fc("FFN FC1", B, d, (mats-1)*f), coll("FFN AR", lineAllReduce(m, bf*(mats-1)*f/mf*P, s.hop, s.link)))
		phase("FFN FC2·AR", fc("FFN FC2", B, f, d), arOut)
	}
	nvlink("TP all-reduce")
	return out
}

// attention computes each PE's attention work of one layer and the lanes' ops. load is in
// head-tokens (tokens × KV heads held); the query heads of a KV head's group share its
// reads (GQA). The non-tiled flow covers each pair's reserved window (window) unless
// kvcache.static_compute says live; the new token's K and V are written either way.
func (s *hbSystem) attention(decode []*Request, targets []int) {
	sh := s.sh
	P := float64(sh.Precision)
	hd := float64(sh.HeadDim)
	gqa := float64(sh.HeadsDev()) / float64(sh.KVHeadsDev())
	window := !s.tiled && s.cfg.HeLioS.KV.StaticCompute == StaticWindow
	if window {
		s.kv.windowTokens(s.load)
	} else {
		s.kv.headTokens(s.load)
	}
	writes := make([]float64, s.pes)
	for i, r := range decode {
		if s.kv.policy == AllocStaticModule {
			q := s.kv.reqs[r.ID]
			g := float64(s.kv.group)
			for _, md := range q.mods {
				for _, p := range s.kv.modPE[md] {
					if !window {
						s.load[p] += 1 / g
					}
					writes[p] += s.kvTokLayer / float64(s.kv.heads) / g
				}
			}
			continue
		}
		if t := targets[i]; t >= 0 {
			s.load[t] += float64(s.kv.kvh)
			writes[t] += s.kvTokLayer
		}
	}
	nl := s.side * s.side
	if len(s.laneOps) != nl {
		s.laneOps = make([][]Op, nl)
	}
	best := make([]int, nl) // PE with the longest attention in each lane
	for l := range best {
		best[l] = -1
	}
	var sum float64
	N := float64(sh.LayersDev())
	var pp []ntParts
	if !s.tiled {
		pp = make([]ntParts, s.pes)
	}
	g := s.kv.group
	for p := range s.pes {
		ld := s.load[p]
		flops := 4 * gqa * hd * ld
		bytes := 2*hd*P*ld + writes[p]
		var t Time
		if s.tiled {
			t = s.peTime(flops, bytes, s.rowEffKV)
		} else {
			x := s.nonTiled(ld, flops, writes[p], gqa, g)
			pp[p] = x
			bytes += x.spill
			t = x.qk + x.ag + x.sm + x.pv
		}
		if ld == 0 {
			t = 0
		}
		s.attn[p] = t
		sum += float64(t)
		s.attnMax = max(s.attnMax, t)
		s.flops += N * flops
		s.bytes += N * bytes
		s.peBytes[p] += N * bytes
		l := s.lanePE(p)
		if best[l] < 0 || t > s.attn[best[l]] {
			best[l] = p
		}
	}
	s.attnMean = sum / float64(s.pes)
	for l := range nl {
		ops := s.laneOps[l][:0]
		p := best[l]
		var fl, by, spill float64
		for pe := range s.pes {
			if s.lanePE(pe) == l {
				fl += 4 * gqa * hd * s.load[pe]
				by += 2*hd*P*s.load[pe] + writes[pe]
				if !s.tiled {
					spill += pp[pe].spill
				}
			}
		}
		switch {
		case p < 0 || s.attn[p] == 0:
		case s.tiled:
			ops = append(ops, Op{Name: "attention", Dur: s.attn[p], FLOPs: fl, Bytes: by})
		default:
			x := pp[p]
			ops = append(ops, Op{Name: "QKᵀ", Dur: x.qk, FLOPs: fl / 2, Bytes: by / 2},
				Op{Name: "S all-gather", Dur: x.ag},
				Op{Name: "softmax", Dur: x.sm, Bytes: spill},
				Op{Name: "P·V", Dur: x.pv, FLOPs: fl / 2, Bytes: by / 2})
			ops = slicesDeleteZero(ops)
		}
		s.laneOps[l] = ops
	}
}

// ntParts are the steps of the non-tiled flow on one PE and the score bytes it moves
// through DRAM.
type ntParts struct {
	qk, ag, sm, pv Time
	spill          float64
}

// nonTiled is one PE's share of a layer's attention in Stratum's non-tiled flow (HeLioS
// Fig. 3-a, 4-a: two stand-alone GEMMs with a full softmax between them) on a module of g
// PEs holding ld head-tokens of it: K split along the context, so QKᵀ scores this PE's
// slice of every (request, head) pair; the score slices are all-gathered in the module,
// since P·V (V split along the head dimension) needs every pair's whole row of
// probabilities; the softmax then runs over the whole rows (max and sum, then normalise)
// on the vector unit; P·V multiplies them with this PE's slice of V. Between the GEMMs the
// module's score rows (gqa query heads × the context of every pair) are materialised:
// where they outgrow the compute buffer they go through DRAM — QKᵀ writes its slice, the
// gathered slices are written, the softmax reads the rows twice and writes the
// probabilities, and P·V reads them back — while tiled attention (Algorithm 1) keeps
// every block's scores in the buffer.
func (s *hbSystem) nonTiled(ld, flops, writes, gqa float64, g int) (x ntParts) {
	P := float64(s.sh.Precision)
	hd := float64(s.sh.HeadDim)
	gf := float64(g)
	slice := gqa * ld * P // this PE's scores
	rows := slice * gf    // the module's whole score rows
	var own, gathered, soft, probs float64
	if rows > s.hb.PEBufferBytes() {
		own, gathered, soft, probs = slice, slice*(gf-1), 3*rows, rows
	}
	// the spilled rows are contiguous on every bank of the PE: the same row model as the KV
	se := s.hb.RowEff(rows / float64(s.hb.BanksPerPE()))
	step := func(flops, kv, spill float64) Time {
		return max(FromSeconds(flops/s.peFLOPS), FromSeconds(kv/(s.peBW*s.rowEffKV)+spill/(s.peBW*se)))
	}
	x.qk = step(flops/2, hd*P*ld+writes, own)
	x.ag = lineAllGather(g, rows, s.hop, s.link)
	x.sm = max(FromSeconds(4*gqa*ld*gf/s.hb.PEVectorRate()), step(0, 0, gathered+soft))
	x.pv = step(flops/2, hd*P*ld, probs)
	x.spill = own + gathered + soft + probs
	return x
}

// slicesDeleteZero drops zero-length ops.
func slicesDeleteZero(ops []Op) []Op {
	out := ops[:0]
	for _, o := range ops {
		if o.Dur > 0 {
			out = append(out, o)
		}
	}
	return out
}

// t2Cost is communication type T2 (Fig. 12-b) on an m×m mesh: each request's new K and V
// sub-vectors (chunk bytes per mesh column) go to the PE holding its last block. Four
// steps, each costed as hops × latency plus the most loaded link's bytes over the link
// bandwidth: (1) X-reduce of every column's partial sums to the root row of the request's
// spanning tree (row ⌊(m−1)/2⌋ for target rows up to it, row m/2 otherwise), reduced in
// transit; (2) X-scatter from the root row to the target row; (3) Y-gather of the m
// column chunks in the target row to its root column; (4) Y-scatter of the whole vector
// to the target column. Last blocks on the central PEs make steps 2 and 4 free.
func t2Cost(m int, targets []int, chunk float64, hop Time, bw float64) (xr, xs, yg, ys Time) {
	if m <= 1 || len(targets) == 0 || chunk <= 0 {
		return
	}
	root := func(i int) int {
		if rootClass(i, m) == 0 {
			return (m - 1) / 2
		}
		return m / 2
	}
	step := func(depth int, load float64) Time {
		if load <= 0 {
			return 0
		}
		return Time(depth)*hop + FromSeconds(load/bw)
	}
	down := make([]float64, m-1) // link i → i+1
	up := make([]float64, m-1)   // link i+1 → i
	var n [2]int
	for _, t := range targets {
		if t >= 0 {
			n[rootClass(t/m, m)]++
		}
	}
	depth, maxL := 0, 0.0
	for c, cnt := range n {
		if cnt == 0 {
			continue
		}
		r := (m - 1) / 2
		if c == 1 {
			r = m / 2
		}
		depth = max(depth, r, m-1-r)
		for i := 0; i < r; i++ {
			down[i] += float64(cnt) * chunk
		}
		for i := r; i < m-1; i++ {
			up[i] += float64(cnt) * chunk
		}
	}
	for i := range down {
		maxL = max(maxL, down[i], up[i])
	}
	xr = step(depth, maxL)

	// (2) X-scatter: the same in every column
	clear(down)
	clear(up)
	depth, maxL = 0, 0
	for _, t := range targets {
		if t < 0 {
			continue
		}
		x := t / m
		r := root(x)
		depth = max(depth, abs(x-r))
		for i := min(x, r); i < max(x, r); i++ {
			if x > r {
				down[i] += chunk
			} else {
				up[i] += chunk
			}
		}
	}
	for i := range down {
		maxL = max(maxL, down[i], up[i])
	}
	xs = step(depth, maxL)

	// (3) Y-gather and (4) Y-scatter, per target row
	rowDown := make([]float64, m*(m-1))
	rowUp := make([]float64, m*(m-1))
	sDown := make([]float64, m*(m-1))
	sUp := make([]float64, m*(m-1))
	gd, sd := 0, 0
	for _, t := range targets {
		if t < 0 {
			continue
		}
		x, y := t/m, t%m
		ry := root(y)
		gd = max(gd, ry, m-1-ry)
		base := x * (m - 1)
		for j := 0; j < ry; j++ {
			rowDown[base+j] += float64(j+1) * chunk
		}
		for j := ry + 1; j < m; j++ {
			rowUp[base+j-1] += float64(m-j) * chunk
		}
		sd = max(sd, abs(y-ry))
		for j := min(y, ry); j < max(y, ry); j++ {
			if y > ry {
				sDown[base+j] += float64(m) * chunk
			} else {
				sUp[base+j] += float64(m) * chunk
			}
		}
	}
	maxG, maxS := 0.0, 0.0
	for i := range rowDown {
		maxG = max(maxG, rowDown[i], rowUp[i])
		maxS = max(maxS, sDown[i], sUp[i])
	}
	yg = step(gd, maxG)
	ys = step(sd, maxS)
	return
}

// planPrefill draws the prefill instance and the KV stream of the prompts in flight
// during this iteration on their own lanes (they run on their own clock).
func (s *hbSystem) planPrefill(sc *Schedule) {
	drawPrefill(sc, s.pre, s.now, s.lnPre, s.lnStream)
}

// drawPrefill places the prefill instance's work overlapping [now, now+makespan).
func drawPrefill(sc *Schedule, pre *prefillInstance, now Time, lnPre, lnStream int) {
	mk := sc.Makespan()
	if mk <= 0 {
		return
	}
	end := now + mk
	for _, j := range pre.window(now, end) {
		id := strconv.Itoa(j.id)
		if a, b := max(j.start, now), min(j.end, end); b > a {
			sc.AddAt(Op{Name: "prefill #" + id, Lane: lnPre, Dur: b - a}, a-now)
		}
		if a, b := max(j.start, now), min(j.streamDone, end); b > a {
			sc.AddAt(Op{Name: "KV stream #" + id, Lane: lnStream, Dur: b - a}, a-now)
		}
	}
}

func (s *hbSystem) observe(snap *Snapshot, sc *Schedule, running []*Request) {
	T := snap.IterTime
	sec := T.Seconds()
	hb := s.hb
	u := snap.Metrics.Util
	u["pe"] = s.flops / (hb.PEFLOPS() * float64(s.pes) * sec)
	u["bandwidth"] = min(1, s.bytes/(hb.PEBandwidth()*float64(s.pes)*sec))
	busy := sc.Busy()
	u["noc"] = float64(busy[s.lnNoC]) / float64(T)
	u["nvlink"] = float64(busy[s.lnNV]) / float64(T)
	if s.attnMean > 0 {
		snap.Metrics.LoadImbalance = float64(s.attnMax) / s.attnMean
	}
	if s.cfg.Jump {
		// A headless run reads only the metrics and the KV cache's counts: no bank grid,
		// no holders.
		m := &snap.KV
		m.Used, m.Capacity, m.Fragmentation = s.kv.usedBlocks(running), s.kv.locs*s.kv.capacity, s.kv.fragmentation()
		if m.Capacity > 0 {
			snap.Metrics.KVUtil = float64(m.Used) / float64(m.Capacity)
		}
		return
	}

	// Bank grid: one row per PE (row-major over the mesh), one column per bank it owns,
	// grouped by die. Every bank of a PE is accessed evenly by its tile fetches.
	g := &snap.Banks
	n := hb.BankGrid / s.m
	g.RowKind, g.ColKind = "pe", "bank"
	g.Rows, g.Cols, g.ColGroup = s.pes, hb.BanksPerPE(), n*n
	g.MeshRows, g.MeshCols, g.Dies = s.m, s.m, hb.Dies
	// PE(x, y) sits under its banks on every stacked die; the two NoCs link neighbouring PEs.
	g.RowLevels = []BankLevel{{"mesh row", "x", s.m}, {"mesh column", "y", s.m}}
	g.ColLevels = []BankLevel{{"die", "die", hb.Dies}, {"bank", "bank", n * n}}
	g.Units = []BankUnit{systemUnit("inter-PE NoC", busy[s.lnNoC], float64(T)), systemUnit("router NoC", busy[s.lnRouter], float64(T)),
		systemUnit("NVLink", busy[s.lnNV], float64(T))}
	cells := g.Rows * g.Cols
	g.PIM, g.Mem, g.Owner = make([]float64, cells), make([]float64, cells), make([]int, cells)
	g.RowNotes = make([]string, g.Rows)
	g.PIMWork = "attention"
	g.Reason = fmt.Sprintf("a PE's %d banks (%d on each of %d dies) are fetched evenly: PIM = its attention time this iteration (the load Algorithm 2 balances), memory = its DRAM traffic, FC weights included",
		g.Cols, n*n, hb.Dies)
	owner := make([]int, s.pes)
	ownTok := make([]int, s.pes)
	for p := range owner {
		owner[p] = -1
	}
	for _, r := range running {
		q := s.kv.reqs[r.ID]
		if q == nil {
			continue
		}
		for p := range s.pes {
			if t := s.kv.tokensAt(q, p); t > ownTok[p] {
				owner[p], ownTok[p] = r.ID, t
			}
		}
	}
	for p := range s.pes {
		pb := min(1, float64(Time(s.sh.LayersDev())*s.attn[p])/float64(T))
		mb := min(1, s.peBytes[p]/(hb.PEBandwidth()*sec))
		row := g.PIM[p*g.Cols : (p+1)*g.Cols]
		for i := range row {
			row[i] = pb
		}
		row = g.Mem[p*g.Cols : (p+1)*g.Cols]
		for i := range row {
			row[i] = mb
		}
		o := g.Owner[p*g.Cols : (p+1)*g.Cols]
		for i := range o {
			o[i] = owner[p]
		}
		g.RowNotes[p] = s.peNote(p)
	}
	notes := g.RowNotes

	// KV map: one location per PE.
	k := s.kv
	m := &snap.KV
	m.LocKind, m.MeshRows, m.MeshCols = "PE", s.m, s.m
	m.BlockBytes = s.blockBytes
	if k.policy == AllocStaticModule {
		m.Unit = fmt.Sprintf("%d tokens × one KV head × %d layers; %s", k.b, s.sh.LayersDev(), k.describe())
	} else {
		m.Unit = fmt.Sprintf("%d tokens × K and V of the device's %d KV head(s) × %d layers; %s", k.b, s.sh.KVHeadsDev(), s.sh.LayersDev(), k.describe())
	}
	heliosKVMap(m, k, running, func(p int) string {
		return "PE(" + strconv.Itoa(p/s.m) + "," + strconv.Itoa(p%s.m) + ")"
	}, notes)
	if m.Capacity > 0 {
		snap.Metrics.KVUtil = float64(m.Used) / float64(m.Capacity)
	}
}

// peNote is a PE's annotation: Algorithm 2's state and this iteration's attention time.
func (s *hbSystem) peNote(p int) string {
	k := s.kv
	a := s.attn[p]
	if k.policy == AllocStaticModule {
		return fmt.Sprintf("module %d · %.0f head-tok · attn %s/layer", k.locMod[p], s.load[p], a)
	}
	return fmt.Sprintf("T_sum %d · N_last %d · D_L1 %d · L_X %d L_Y %d · attn %s/layer", k.tsum[p], k.nlast[p], k.dl1[p], k.lx(p), k.ly(p), a)
}

// heliosKVMap fills the KV map from the allocator. Holders of all locations share one
// backing array, sized in a first pass, so a large mesh costs one allocation.
func heliosKVMap(m *KVMap, k *heliosKV, running []*Request, label func(int) string, notes []string) {
	m.Locations = make([]KVLocation, k.locs)
	count := make([]int, k.locs)
	held := k.held
	total := 0
	for _, r := range running {
		if q := k.reqs[r.ID]; q != nil {
			for p := range k.locs {
				if held(q, p) {
					count[p]++
					total++
				}
			}
		}
	}
	all := make([]KVHolder, 0, total)
	for p := range k.locs {
		m.Locations[p] = KVLocation{Label: label(p), Capacity: k.capacity, Holders: all[len(all) : len(all) : len(all)+count[p]]}
		if notes != nil {
			m.Locations[p].Note = notes[p]
		}
		m.Capacity += k.capacity
		all = all[:len(all)+count[p]]
	}
	for _, r := range running {
		q := k.reqs[r.ID]
		if q == nil {
			continue
		}
		for p := range k.locs {
			if !held(q, p) {
				continue
			}
			t := k.tokensAt(q, p)
			blocks, resv := k.holding(q, p)
			last := 0
			if k.policy != AllocStaticModule && q.last == p {
				last = q.lastFill
			}
			fill := 0.0
			if blocks > 0 {
				fill = min(1, float64(t)/float64(blocks*k.b))
			}
			loc := &m.Locations[p]
			loc.Holders = append(loc.Holders, KVHolder{Request: r.ID, KBlocks: blocks, Reserved: resv, Fill: fill, Last: last})
			loc.Used += blocks
			loc.Reserved += resv
		}
	}
	for p := range m.Locations {
		m.Used += m.Locations[p].Used
		m.Reserved += m.Locations[p].Reserved
	}
	m.Fragmentation = k.fragmentation()
}

// byteSize formats a byte count.
func byteSize(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
