package sim

import "fmt"

// gpuSystem is GPU-only serving: every operation of the iteration runs on the GPU as a
// kernel under the roofline, the KV cache is paged in HBM (vLLM-style blocks) and batching
// is continuous. A decode layer runs the kernels of a pre-norm decoder layer, each its own,
// as PyTorch runs them (in a CUDA graph, each still pays a kernel's latency): norm, QKV
// GEMM, the new token's K and V written into the cache, attention over the cache, output
// projection, residual add, norm, the FFN's up GEMM (gate and up fused in one for a gated
// FFN), activation, down GEMM, residual add. The GEMMs read the weights once per iteration as tiles; decode
// attention and the small kernels stream sequentially, which reaches more of the
// bandwidth (SweepEfficiency). A tensor-parallel split (Megatron) ends the attention block
// and the FFN with an all-reduce of the layer's activations over the GPUs' links.
type gpuSystem struct {
	cfg *Config
	sh  Shard
	dev Device // GEMMs: tiled weight streams
	seq Device // decode attention and the small kernels: sequential streams
	// attnFloor and attnLat are decode attention's latency beyond its launch: the floor
	// it never goes under and the latency it adds to its KV stream.
	attnFloor, attnLat Time
	kv                 *kvPool
	blk                float64
	lane               []Lane
	ar                 bool // the split pays its all-reduces on the "node link" lane
}

// gpuLaneLink is the lane of the tensor-parallel all-reduces.
const gpuLaneLink = 1

func init() {
	register(SystemGPU, func(c *Config) (system, error) { return newGPUSystem(c) })
}

func newGPUSystem(c *Config) (*gpuSystem, error) {
	g := c.GPU
	sh := c.shard()
	dev := Device{
		Name:           g.Display,
		PeakFLOPS:      g.PeakTFLOPS * 1e12,
		MemBandwidth:   g.BandwidthGBps * 1e9,
		ComputeEff:     g.ComputeEfficiency,
		MemoryEff:      g.MemoryEfficiency,
		LaunchOverhead: FromSeconds(g.LaunchOverheadUs * 1e-6),
	}
	if g.PowerCapW < 0 || g.IdlePowerW < 0 || g.MemoryPJPerBit < 0 || g.AttnFloorUs < 0 || g.AttnLatencyUs < 0 || g.SweepEfficiency < 0 || g.SweepEfficiency > 1 {
		return nil, fmt.Errorf("%s: power, DRAM energy and attention latencies must not be negative and the sweep efficiency must be a share in [0, 1]", g.Display)
	}
	if g.PowerCapW > 0 {
		if g.IdlePowerW >= g.PowerCapW {
			return nil, fmt.Errorf("%s draws %g W idle, not under its %g W power cap", g.Display, g.IdlePowerW, g.PowerCapW)
		}
		dev.PowerBudget = g.PowerCapW - g.IdlePowerW
		dev.MemoryJPerByte = 8 * g.MemoryPJPerBit * 1e-12
	}
	seq := dev
	if g.SweepEfficiency > 0 {
		seq.MemoryEff = g.SweepEfficiency
	}
	usable := g.CapacityGB * 1e9 * g.MemoryUtilization
	free := usable - sh.WeightBytes()
	if free <= 0 {
		return nil, fmt.Errorf("%s needs %.1f GB of weights per GPU at tp=%d pp=%d but a %s offers %.1f GB; raise tp or pp, or pick a larger GPU",
			c.Model.Display, sh.WeightBytes()/1e9, sh.TP, sh.PP, g.Display, usable/1e9)
	}
	bt := max(1, g.KVBlockTokens)
	s := &gpuSystem{cfg: c, sh: sh, dev: dev, seq: seq, attnFloor: FromSeconds(g.AttnFloorUs * 1e-6), attnLat: FromSeconds(g.AttnLatencyUs * 1e-6), blk: float64(bt) * sh.KVBytesPerToken(), lane: []Lane{{Name: "GPU", Group: "gpu"}}}
	if g.GPUsPerNode < 0 || g.IntraNodeGBps < 0 || g.NodeLinkGBps < 0 {
		return nil, fmt.Errorf("gpus_per_node, intra_node_gbps and node_link_gbps must not be negative (got %d, %g, %g)", g.GPUsPerNode, g.IntraNodeGBps, g.NodeLinkGBps)
	}
	if sh.TP > 1 && (g.IntraNodeGBps > 0 || g.NodeLinkGBps > 0) {
		if g.GPUsPerNode < 1 {
			return nil, fmt.Errorf("a tensor-parallel split over links needs gpu.gpus_per_node ≥ 1 to tell which links it crosses (got %d)", g.GPUsPerNode)
		}
		s.ar = true
		s.lane = append(s.lane, Lane{Name: "node link", Group: "link", Transfer: true})
	}
	s.kv = newKVPool(1, int(free/s.blk), func(l int) (int, int) {
		k := ceilDiv(l, bt)
		return k, k
	})
	// K and V of a block are counted as two half blocks so the map can tell them apart.
	s.blk /= 2
	s.kv.capacity[0] *= 2
	s.kv.full = c.Workload.KVPolicy == KVReserve
	return s, nil
}

func (g *gpuSystem) fit(in, out int) string {
	need, have, ok := g.kv.alone(in, out)
	if ok {
		return ""
	}
	return fmt.Sprintf("its KV cache needs %.1f GB but a %s has %.1f GB left after %s's weights at tp %d, pp %d; shorten the sequences, raise model.tp or pick a larger GPU",
		float64(need)*g.blk/1e9, g.cfg.GPU.Display, float64(have)*g.blk/1e9, g.cfg.Model.Display, g.sh.TP, g.sh.PP)
}

func (g *gpuSystem) lanes() []Lane        { return g.lane }
func (g *gpuSystem) layers() int          { return g.sh.LayersDev() }
func (g *gpuSystem) grow(r *Request) bool { return g.kv.grow(r) }
func (g *gpuSystem) release(r *Request)   { g.kv.release(r) }

func (g *gpuSystem) utilKeys() []string {
	if g.ar {
		return []string{"gpu", "bandwidth", "link"}
	}
	return []string{"gpu", "bandwidth"}
}

// allReduce is one tensor-parallel all-reduce of v bytes on every GPU: a ring over the
// GPUs of a node on its intra-node links, then a ring over the nodes the split spans,
// each on its one node link (the link model the PIM systems of the family pay, LoL-PIM
// §8.1: 10 GB/s "matched across systems").
func (g *gpuSystem) allReduce(v float64) Time {
	c := g.cfg.GPU
	k := min(g.sh.TP, c.GPUsPerNode)
	n := ceilDiv(g.sh.TP, c.GPUsPerNode)
	ns := nodeRing(n, v, c.NodeLinkGBps)
	if k > 1 && c.IntraNodeGBps > 0 {
		ns += 2 * float64(k-1) / float64(k) * v / c.IntraNodeGBps
	}
	return FromSeconds(ns * 1e-9)
}

func (g *gpuSystem) admit(cands, _ []*Request) []bool {
	return g.kv.admitInOrder(cands)
}

func (g *gpuSystem) kernel(name string, flops, bytes float64) Op {
	return Op{Name: name, Dur: g.dev.Time(flops, bytes), FLOPs: flops, Bytes: bytes}
}

func (g *gpuSystem) gemm(name string, b int, flopParams, readParams float64, in, out int) Op {
	p := float64(g.sh.Precision)
	return g.kernel(name, 2*float64(b)*flopParams, readParams*p+float64(b*(in+out))*p)
}

// elementwise is a small memory-bound kernel over b rows: it reads in and writes out
// elements a row, sequentially, with a few FLOPs an element.
func (g *gpuSystem) elementwise(name string, b, in, out int) Op {
	fl, by := float64(b*out)*4, float64(b*(in+out)*g.sh.Precision)
	return Op{Name: name, Dur: g.seq.Time(fl, by), FLOPs: fl, Bytes: by}
}

// attention is the decode attention of the batch, flops over bytes of KV cache (and the
// queries and outputs). It streams the cache sequentially behind a latency of its own
// (the query's load, the softmax's dependent steps, the merge of a split sequence), and
// takes no less than its floor however short the cache.
func (g *gpuSystem) attention(flops, bytes float64) Op {
	t := g.seq.Time(flops, bytes) - g.seq.LaunchOverhead
	return Op{Name: "attention", Dur: g.seq.LaunchOverhead + max(g.attnFloor, g.attnLat+t), FLOPs: flops, Bytes: bytes}
}

func (g *gpuSystem) plan(s *Schedule, decode, prefill []*Request) []StageMark {
	sh := g.sh
	prev := -1
	add := func(op Op, layer int) {
		op.Layer = layer
		if prev >= 0 {
			prev = s.Add(op, prev)
		} else {
			prev = s.Add(op)
		}
	}
	ptok := 0
	var pattn float64
	for _, r := range prefill {
		ptok += r.SeqLen()
		pattn += 2 * float64(sh.HeadsDev()*sh.HeadDim) * float64(r.SeqLen()) * float64(r.SeqLen())
	}
	b := len(decode)
	var aFl, aBy float64
	embed, kvTok, layers := sh.HeadsDev()*sh.HeadDim, sh.KVBytesPerToken(), float64(sh.LayersDev())
	for _, r := range decode {
		aFl += 4 * float64(embed*r.SeqLen())
		aBy += float64(r.SeqLen()) * kvTok / layers
	}
	// The attention reads each request's query and writes its output too.
	aBy += float64(2 * b * embed * sh.Precision)
	dffn := sh.DFFN / sh.TP
	kvNew := 2 * sh.KVEmbedDev() // this token's K and V, per request
	// reduce is the all-reduce of tok tokens' d_model activations after Proj or FC2.
	reduce := func(name string, tok, times int, l int) {
		if g.ar && tok > 0 {
			v := float64(tok * sh.DModel * sh.Precision)
			add(Op{Name: name, Lane: gpuLaneLink, Dur: Time(times) * g.allReduce(v), Bytes: float64(times) * v}, l)
		}
	}
	// Every layer runs the same kernels: the schedule copies a layer once it repeats.
	s.Periods(sh.LayersDev(), func(l int) {
		if ptok > 0 {
			perTok, read := sh.FFNActive(ptok)
			fl := 2*float64(ptok)*(sh.QKVParams()+sh.ProjParams()+perTok) + pattn
			by := (sh.QKVParams()+sh.ProjParams()+read)*float64(sh.Precision) + float64(ptok)*sh.KVBytesPerToken()/float64(sh.LayersDev())
			add(g.kernel("prefill", fl, by), l)
			reduce("prefill all-reduces", ptok, 2, l)
		}
		if b == 0 {
			return
		}
		add(g.elementwise("LN1", b, sh.DModel, sh.DModel), l)
		add(g.gemm("QKV", b, sh.QKVParams(), sh.QKVParams(), sh.DModel, (sh.HeadsDev()+2*sh.KVHeadsDev())*sh.HeadDim), l)
		add(g.elementwise("KV append", b, kvNew, kvNew), l)
		add(g.attention(aFl, aBy), l)
		add(g.gemm("Proj", b, sh.ProjParams(), sh.ProjParams(), sh.HeadsDev()*sh.HeadDim, sh.DModel), l)
		reduce("all-reduce", b, 1, l)
		add(g.elementwise("residual", b, 2*sh.DModel, sh.DModel), l)
		add(g.elementwise("LN2", b, sh.DModel, sh.DModel), l)
		perTok, read := sh.FFNActive(b)
		m := sh.ffnMatrices()
		up := perTok * (m - 1) / m
		upRead := read * (m - 1) / m
		add(g.gemm("FC1", b, up, upRead, sh.DModel, int(m-1)*dffn), l)
		// The activation reads the up projection (and the gate's, for a gated FFN).
		add(g.elementwise("act", b, int(m-1)*dffn, dffn), l)
		add(g.gemm("FC2", b, perTok-up, read-upRead, dffn, sh.DModel), l)
		reduce("all-reduce", b, 1, l)
		add(g.elementwise("residual", b, 2*sh.DModel, sh.DModel), l)
	}, func(d int) { prev += d })
	return nil
}

func (g *gpuSystem) observe(snap *Snapshot, s *Schedule, running []*Request) {
	var fl, by float64
	for i := range s.Spans {
		sp := &s.Spans[i]
		fl += sp.FLOPs
		if sp.Lane != gpuLaneLink {
			by += sp.Bytes // HBM traffic; the all-reduces' bytes cross the links
		}
	}
	sec := snap.IterTime.Seconds()
	snap.Metrics.Util["gpu"] = fl / (g.dev.PeakFLOPS * sec)
	if g.ar {
		snap.Metrics.Util["link"] = float64(s.Busy()[gpuLaneLink]) / float64(snap.IterTime)
	}
	snap.Metrics.Util["bandwidth"] = min(1, by/(g.dev.MemBandwidth*sec))
	snap.Banks.Reason = "GPU-only: the GPU's HBM has no processing in memory, so there is no bank activity to show"
	snap.KV.Unit = fmt.Sprintf("paged block (%d tokens, K or V)", max(1, g.cfg.GPU.KVBlockTokens))
	snap.KV.LocKind = "HBM"
	snap.KV.BlockBytes = g.blk
	perTok := g.sh.KVBytesPerToken()
	g.kv.snapshot(&snap.KV, func(int) string { return "HBM" }, running, func(r *Request) float64 { return float64(r.SeqLen()) * perTok })
	if snap.KV.Capacity > 0 {
		snap.Metrics.KVUtil = float64(snap.KV.Used) / float64(snap.KV.Capacity)
	}
}

func (g *gpuSystem) pool() *kvPool { return g.kv }

// peakFLOPS is one GPU's: the schedule holds one device's share of every operation.
func (g *gpuSystem) peakFLOPS() float64 { return g.dev.PeakFLOPS }
