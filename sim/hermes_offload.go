package sim

import (
	"errors"
	"fmt"
)

// offload plans the Hermes paper's offloading baselines (Hermes, HPCA 2025, §V-A): one
// consumer GPU whose memory holds part of the weights (and the KV cache) while the rest
// stays in host DRAM and crosses PCIe every token.
//
//	accelerate  HuggingFace Accelerate: whole decoder layers are GPU-resident while they
//	            fit; every other layer is fetched on demand right before it runs, with no
//	            overlap (copy, compute, next copy).
//	flexgen     FlexGen's zig-zag schedule at small batch: every layer keeps the same
//	            resident fraction, and the rest of layer l+1 streams while layer l computes,
//	            so a layer costs max(compute, load).
//	dejavu      Deja Vu adapted to offloading: an MLP predictor picks the active neurons of
//	            each sparse block and only the active non-resident ones are fetched; the
//	            predictor costs its own share of compute time.
//
// Each framework's host-to-GPU copies run at its own effective rate
// (offload.effective_pcie_gbps), a named parameter of the baseline.
type offload struct {
	cfg  *Config
	hc   *HermesConfig
	sh   Shard
	gpu  Device
	pcie Link
	ns   *neuronSim

	lane     []Lane
	kv       *kvPool
	kvBlk    float64
	frac     float64 // resident fraction of every matrix (flexgen, dejavu)
	resident int     // resident whole layers (accelerate)
	budget   float64
	kvRoom   float64 // GPU memory beside the LM head, for weights and KV
	layerB   float64 // weight bytes of one decoder layer
	nQKV     int
	nMLP     int
	bQKV     float64
	bMLP     float64
	gpuBytes float64
	pcieB    float64
}

const (
	offLaneGPU  = 0
	offLanePCIe = 1
)

func init() {
	register(SystemOffload, func(c *Config) (system, error) { return newOffload(c) })
}

func newOffload(c *Config) (*offload, error) {
	hc := &c.Hermes
	sh, err := hermesShape(c)
	if err != nil {
		return nil, err
	}
	p := hc.Platform
	if err := checkPlatform(p); err != nil {
		return nil, err
	}
	op := hc.Offload
	switch op.Framework {
	case OffloadAccelerate, OffloadFlexGen, OffloadDejaVu:
	default:
		return nil, fmt.Errorf("unknown offloading framework %q (want accelerate, flexgen or dejavu)", op.Framework)
	}
	if op.EffectivePCIeGBps <= 0 {
		return nil, errors.New("offload.effective_pcie_gbps must be positive")
	}
	if op.Framework == OffloadDejaVu && !hc.Sparsity.Enabled {
		return nil, errors.New("Deja Vu fetches only the active neurons: it needs sparsity.enabled = true")
	}
	if op.PredictorShare < 0 || op.PredictorShare >= 1 {
		return nil, fmt.Errorf("offload.predictor_share must be in [0, 1), got %g", op.PredictorShare)
	}
	prec := float64(sh.Precision)
	o := &offload{cfg: c, hc: hc, sh: sh, gpu: gpuDevice(p),
		pcie: Link{Name: "PCIe", Bandwidth: op.EffectivePCIeGBps * 1e9, Latency: FromSeconds(p.PCIeLatencyUs * 1e-6)},
		lane: []Lane{{Name: "GPU", Group: "gpu"}, {Name: "PCIe", Group: "pcie", Transfer: true}}}
	o.layerB = sh.LayerParams() * prec
	o.nQKV, o.nMLP = sh.DModel, sh.DFFN
	o.bQKV = float64((sh.Heads+2*sh.KVHeads)*sh.HeadDim) * prec
	o.bMLP = sh.ffnMatrices() * float64(sh.DModel) * prec
	lm := float64(sh.Vocab) * float64(sh.DModel) * prec
	if lm > p.GPUWeightGB*1e9 {
		return nil, fmt.Errorf("%s's LM head (%.1f GB) does not fit in the %.1f GB of %s memory for weights and KV; raise platform.gpu_weight_gb",
			c.Model.Display, lm/1e9, p.GPUWeightGB, p.GPUDisplay)
	}
	// The KV cache of the batch at the workload's longest sequence stays in GPU memory, as
	// many requests as the memory beside the LM head holds, up to the batch; the rest of
	// the memory holds weights.
	perTok := sh.KVBytesPerToken()
	o.kvBlk = float64(hermesKVBlockTokens) * perTok / 2
	perReq := float64(maxSeqLen(c)) * perTok
	o.kvRoom = p.GPUWeightGB*1e9 - lm
	n := min(max(1, c.Workload.MaxBatch), int(o.kvRoom/perReq))
	kvReserve := float64(n) * perReq
	o.budget = o.kvRoom - kvReserve
	all := o.layerB * float64(sh.Layers)
	o.frac = min(1, o.budget/all)
	o.resident = min(sh.Layers, int(o.budget/o.layerB))
	o.kv = newKVPool(1, 2*int(kvReserve/(2*o.kvBlk))+2, func(n int) (int, int) {
		k := ceilDiv(n, hermesKVBlockTokens)
		return k, k
	})
	o.kv.full = c.Workload.KVPolicy == KVReserve
	if op.Framework == OffloadDejaVu {
		if err := checkSparsity(hc.Sparsity); err != nil {
			return nil, err
		}
		pol := HermesPolicy{Mapper: mapperFraction, Predictor: PredictOracle, HotThreshold: 15, StateInc: 4, StateDec: 1, Threshold: 15, Lambda: 6}
		// Only the sparse blocks' share of the budget is placed by the neuron map; W_O
		// keeps the same resident fraction.
		sparse := (float64(o.nQKV)*o.bQKV + float64(o.nMLP)*o.bMLP) * float64(sh.Layers)
		ns, err := newNeuronSim(hc.Sparsity, pol, c.Workload.Seed, sh.Layers, [2]int{o.nQKV, o.nMLP}, [2]float64{o.bQKV, o.bMLP}, 1,
			neuronCosts{budget: o.frac * sparse, homes: 1})
		if err != nil {
			return nil, err
		}
		o.ns = ns
	}
	return o, nil
}

func (o *offload) lanes() []Lane        { return o.lane }
func (o *offload) layers() int          { return o.sh.Layers }
func (o *offload) pool() *kvPool        { return o.kv }
func (o *offload) grow(r *Request) bool { return o.kv.grow(r) }
func (o *offload) release(r *Request)   { o.kv.release(r) }
func (o *offload) utilKeys() []string   { return []string{"gpu", "gpu_bandwidth", "pcie"} }

func (o *offload) fit(in, out int) string {
	need, _, ok := o.kv.alone(in, out)
	if ok {
		return ""
	}
	return fmt.Sprintf("its KV cache needs %.1f GB but %s has %.1f GB beside %s's LM head for weights and KV; shorten the sequences or raise platform.gpu_weight_gb",
		float64(need)*o.kvBlk/1e9, o.hc.Platform.GPUDisplay, o.kvRoom/1e9, o.cfg.Model.Display)
}

func (o *offload) admit(cands, _ []*Request) []bool {
	return o.kv.admitInOrder(cands)
}

func (o *offload) add(s *Schedule, op Op, layer int, deps ...int) int {
	op.Layer = layer
	d := deps[:0:0]
	for _, x := range deps {
		if x >= 0 {
			d = append(d, x)
		}
	}
	return s.Add(op, d...)
}

func (o *offload) gpuOp(name string, bytes, flops float64) Op {
	o.gpuBytes += bytes
	return Op{Name: name, Lane: offLaneGPU, Dur: o.gpu.Time(flops, bytes), FLOPs: flops, Bytes: bytes}
}

func (o *offload) fetch(name string, bytes float64) Op {
	o.pcieB += bytes
	return Op{Name: name, Lane: offLanePCIe, Dur: o.pcie.Time(bytes), Bytes: bytes}
}

// fetched is the bytes of layer l that cross PCIe when the whole layer is needed.
func (o *offload) fetched(l int) float64 {
	if o.hc.Offload.Framework == OffloadAccelerate {
		if l < o.resident {
			return 0
		}
		return o.layerB
	}
	return (1 - o.frac) * o.layerB
}

func (o *offload) plan(s *Schedule, decode, prefill []*Request) []StageMark {
	o.gpuBytes, o.pcieB = 0, 0
	last := -1
	if o.ns != nil {
		ids, fresh, plen := batchIDs(decode, prefill)
		o.ns.setBatch(ids, fresh, plen)
	}
	if len(prefill) > 0 {
		last = o.planPrefill(s, prefill)
	}
	if len(decode) > 0 {
		o.planDecode(s, decode, last)
	}
	return nil
}

// planPrefill runs the prompts on the GPU layer by layer with the non-resident weights
// fetched (prefetched one layer ahead, except Accelerate).
func (o *offload) planPrefill(s *Schedule, reqs []*Request) int {
	sh := o.sh
	prec := float64(sh.Precision)
	tok := 0
	var attn float64
	for _, r := range reqs {
		n := r.SeqLen()
		tok += n
		attn += 2 * float64(sh.Heads*sh.HeadDim) * float64(n) * float64(n)
	}
	params := sh.LayerParams()
	prevGPU := -1
	var fetches []int
	overlap := o.hc.Offload.Framework != OffloadAccelerate
	for l := range sh.Layers {
		f := -1
		if by := o.fetched(l); by > 0 {
			if overlap {
				var dep int = -1
				if l >= 2 {
					dep = fetches[l-2]
				}
				f = o.add(s, o.fetch("fetch W", by), l, dep)
			} else {
				f = o.add(s, o.fetch("fetch W", by), l, prevGPU)
			}
		}
		fetches = append(fetches, prevGPU)
		prevGPU = o.add(s, o.gpuOp("prefill", params*prec+float64(tok)*sh.KVBytesPerToken()/float64(sh.Layers), 2*float64(tok)*params+attn), l, f, prevGPU)
		fetches[l] = prevGPU
	}
	return o.add(s, o.gpuOp("LM head", float64(sh.Vocab*sh.DModel)*prec, 2*float64(len(reqs))*float64(sh.Vocab*sh.DModel)), sh.Layers-1, prevGPU)
}

func (o *offload) planDecode(s *Schedule, decode []*Request, last int) {
	sh := o.sh
	prec := float64(sh.Precision)
	B := len(decode)
	fB := float64(B)
	var ctx float64
	for _, r := range decode {
		ctx += float64(r.SeqLen())
	}
	kvRead := ctx * sh.KVBytesPerToken() / float64(sh.Layers)
	attnF := 4 * ctx * float64(sh.Heads*sh.HeadDim)
	proj := sh.ProjParams()
	fw := o.hc.Offload.Framework
	// gpuDone[l] is the last GPU op of layer l (FlexGen's double buffer: the fetch for
	// layer l+1 may start once layer l−1 is done).
	gpuDone := make([]int, sh.Layers)
	prev := last
	if o.ns != nil {
		o.ns.token++
	}
	for l := range sh.Layers {
		switch fw {
		case OffloadAccelerate, OffloadFlexGen:
			f := -1
			if by := o.fetched(l); by > 0 {
				dep := prev // Accelerate: fetch on demand, after the previous layer
				if fw == OffloadFlexGen {
					dep = -1
					if l >= 2 {
						dep = gpuDone[l-2]
					} else {
						dep = last
					}
				}
				f = o.add(s, o.fetch("fetch W", by), l, dep)
			}
			q := o.add(s, o.gpuOp("QKV", sh.QKVParams()*prec, 2*fB*sh.QKVParams()), l, prev, f)
			a := o.add(s, o.gpuOp("attention", kvRead, attnF), l, q)
			pj := o.add(s, o.gpuOp("Proj", proj*prec, 2*fB*proj), l, a)
			prev = o.add(s, o.gpuOp("FFN", sh.FFNParams()*prec, 2*fB*sh.FFNParams()), l, pj)
		case OffloadDejaVu:
			q := o.dejavuBlock(s, 2*l, l, fB, prev)
			a := o.add(s, o.gpuOp("attention", kvRead, attnF), l, q)
			f := -1
			if by := (1 - o.frac) * proj * prec; by > 0 {
				f = o.add(s, o.fetch("fetch W_O", by), l, q)
			}
			pj := o.add(s, o.gpuOp("Proj", proj*prec, 2*fB*proj), l, a, f)
			prev = o.dejavuBlock(s, 2*l+1, l, fB, pj)
		}
		gpuDone[l] = prev
	}
	o.add(s, o.gpuOp("LM head", float64(sh.Vocab*sh.DModel)*prec, 2*fB*float64(sh.Vocab*sh.DModel)), sh.Layers-1, prev)
}

// dejavuBlock is one sparse block under Deja Vu: the MLP predictor on the GPU, the fetch
// of the predicted-active neurons that are not resident, then the GPU over every
// predicted-active neuron.
func (o *offload) dejavuBlock(s *Schedule, bid, layer int, fB float64, after int) int {
	b := o.ns.blocks[bid]
	o.ns.pass(b)
	name := "QKV"
	if b.kind == kindMLP {
		name = "MLP"
	}
	active := float64(b.comp[0]+b.comp[1]) * b.bytes
	compute := o.gpuOp(name+" sparse", active, fB*active)
	share := o.hc.Offload.PredictorShare
	pred := Op{Name: "predictor", Lane: offLaneGPU, Dur: FromSeconds(compute.Dur.Seconds() * share / (1 - share))}
	p := after
	if pred.Dur > 0 {
		p = o.add(s, pred, layer, after)
	}
	f := -1
	if by := float64(b.comp[1]) * b.bytes; by > 0 {
		f = o.add(s, o.fetch("fetch active", by), layer, p)
	}
	return o.add(s, compute, layer, p, f)
}

func (o *offload) observe(snap *Snapshot, s *Schedule, running []*Request) {
	T := float64(snap.IterTime)
	sec := snap.IterTime.Seconds()
	busy := s.Busy()
	u := snap.Metrics.Util
	u["gpu"] = float64(busy[offLaneGPU]) / T
	u["gpu_bandwidth"] = min(1, o.gpuBytes/(o.gpu.MemBandwidth*sec))
	u["pcie"] = float64(busy[offLanePCIe]) / T
	snap.Banks.Reason = "offloading baseline: the weights sit in plain host DRAM with no near-data processing; see PCIe in the timeline"
	snap.KV.Unit = fmt.Sprintf("%d tokens of one request in all layers, K or V", hermesKVBlockTokens)
	snap.KV.LocKind = "GPU"
	snap.KV.BlockBytes = o.kvBlk
	perTok := o.sh.KVBytesPerToken()
	o.kv.snapshot(&snap.KV, func(int) string { return "GPU" }, running, func(r *Request) float64 { return float64(r.SeqLen()) * perTok })
	if snap.KV.Capacity > 0 {
		snap.Metrics.KVUtil = float64(snap.KV.Used) / float64(snap.KV.Capacity)
	}
	if o.ns == nil {
		snap.Neurons = Neurons{Reason: fmt.Sprintf("%s streams whole weight matrices (%.0f%% of every layer resident, %d of %d layers for Accelerate); it does not use activation sparsity, so there is no hot/cold partition.",
			o.hc.Offload.Framework, 100*o.frac, o.resident, o.sh.Layers)}
		return
	}
	neuronSnapshot(&snap.Neurons, o.ns, []string{"GPU", "host"}, o.cfg.Recycle)
	snap.Neurons.Stats.HotMB = o.frac * float64(o.sh.Layers) * (float64(o.nQKV)*o.bQKV + float64(o.nMLP)*o.bMLP) / 1e6
	snap.Neurons.Stats.BudgetMB = o.budget / 1e6
}
