package sim

import (
	"errors"
	"fmt"
)

// offload plans the Hermes paper's offloading baselines (Hermes, HPCA 2025, §V-A): one
// consumer GPU whose memory holds part of the weights (and the KV cache) while the rest
// stays in host DRAM and crosses PCIe every token. Each framework runs its own schedule,
// as its public code does:
//
//	accelerate  HuggingFace Accelerate (src/accelerate/utils/modeling.py,
//	            infer_auto_device_map; src/accelerate/hooks.py, AlignDevicesHook):
//	            device_map "auto" keeps whole decoder layers on the GPU in order while they
//	            fit, less room for the largest layer; every module of an offloaded layer
//	            (each Linear, each LayerNorm) copies its weight and bias from ordinary host
//	            tensors to the GPU right before its forward and drops them after, one
//	            blocking copy per tensor, nothing prefetched.
//	flexgen     FlexGen (FMInference/FlexLLMGen flex_opt.py): attention and MLP are
//	            separate layers; each weight tensor of a layer lives on the GPU or the host by
//	            where the middle of its bytes falls in the layer's cumulative size against
//	            the policy's GPU percentage (init_weight_list); the policy is the largest
//	            percentage whose resident tensors and the double buffer of a layer's copies
//	            fit the GPU (the cost model of experimental/cost_model.py: time falls with
//	            every weight kept, so at batch 1–16 the search ends at the memory bound).
//	            Layer j+1's host tensors load from pinned memory on a copy stream while layer
//	            j computes, then the GPU and the streams synchronise
//	            (generation_loop_overlap_single_batch): a layer costs max(compute, load).
//	            A batch of 1–16 is one GPU batch, so the zig-zag block visits each layer once.
//	dejavu      Deja Vu adapted to offloading: a predictor per sparse block (Linear(d, 1000),
//	            Linear(1000, d_ffn), FMInference/DejaVu hf_opt_sparse_mlp_attention.py) runs
//	            on the layer's input, so both blocks' predictions are known as the layer
//	            starts; the host gathers the predicted-active rows that are not resident into
//	            one tensor and copies it to the GPU; each block computes once its rows are
//	            there. The predictors' weights stay on the GPU and cost their measured share
//	            of GPU time.
//
// A pinned copy is a DMA over the PCIe link at the rate every system of the family gets
// from it (HermesPlatform.PCIeBytesPerSec); what a framework adds on top is its own: a
// copy from ordinary (pageable) host memory, as Accelerate's and Deja Vu's are, is staged
// by the CPU through a pinned buffer (read and write at the host's memory bandwidth)
// before the DMA, and Deja Vu's gather reads and writes the rows at that bandwidth too.
type offload struct {
	cfg *Config
	hc  *HermesConfig
	sh  Shard
	gpu Device
	ns  *neuronSim
	// tokens is Deja Vu's decode tokens of the current batch, as the neuron view counts
	// them (Hermes' own count).
	tokens int

	lane []Lane
	hermesKV
	budget   float64 // GPU bytes for weights (and FlexGen's copy buffers) after KV, LM head, predictors
	kvRoom   float64 // GPU memory beside the LM head (and Deja Vu's predictors), for weights and KV
	dma      float64 // pinned host-to-GPU bytes/s
	host     float64 // host memory bytes/s
	lat      Time    // per copy
	layerB   float64 // weight bytes of one decoder layer
	gpuBytes float64 // GPU memory traffic of the iteration

	// Accelerate
	resident int // GPU-resident decoder layers
	mods     []accModule

	// FlexGen
	percent  int        // GPU share of every layer's weights, per cent
	fgRes    [2]float64 // resident bytes of the attention and the MLP layer
	fgFetch  [2]float64 // bytes they load each pass
	fgCopies [2]int     // host tensors they copy

	// Deja Vu
	frac  float64 // resident share of every sparse block, by native index
	predB float64 // predictor weight bytes on the GPU
	nQKV  int
	nMLP  int
	bQKV  float64
	bMLP  float64
}

// accModule is one module of a decoder layer as Accelerate hooks it: its weight tensors
// (each copied separately), their bytes, and the parameters each token multiplies (0 for
// the attention over the KV cache, which has no weights).
type accModule struct {
	name    string
	tensors int
	bytes   float64
	params  float64
}

const (
	offLaneGPU  = 0
	offLanePCIe = 1
	offLaneCPU  = 2
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
	if !(p.HostGBps > 0) {
		return nil, errors.New("the offloading baselines stage their copies through host memory: platform.host_gbps must be positive")
	}
	if op.Framework == OffloadDejaVu && !hc.Sparsity.Enabled {
		return nil, errors.New("Deja Vu fetches only the active neurons: it needs sparsity.enabled = true")
	}
	if op.PredictorShare < 0 || op.PredictorShare >= 1 {
		return nil, fmt.Errorf("offload.predictor_share must be in [0, 1), got %g", op.PredictorShare)
	}
	prec := float64(sh.Precision)
	o := &offload{cfg: c, hc: hc, sh: sh, gpu: gpuDevice(p),
		dma: p.PCIeBytesPerSec(), host: p.HostGBps * 1e9, lat: FromSeconds(p.PCIeLatencyUs * 1e-6),
		lane: []Lane{{Name: "GPU", Group: "gpu"}, {Name: "PCIe", Group: "pcie", Transfer: true}}}
	if op.Framework == OffloadDejaVu {
		o.lane = append(o.lane, Lane{Name: "CPU gather", Group: "host"})
	}
	o.layerB = sh.LayerParams() * prec
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
	o.perTok = perTok
	perReq := float64(maxSeqLen(c)) * perTok
	o.kvRoom = p.GPUWeightGB*1e9 - lm
	if op.Framework == OffloadDejaVu {
		// one predictor per sparse block: Linear(d, 1000) then Linear(1000, neurons)
		d := float64(sh.DModel)
		o.predB = float64(sh.Layers) * (d*1000 + 1000*d + d*1000 + 1000*float64(sh.DFFN)) * prec
		o.kvRoom -= o.predB
	}
	n := min(max(1, c.Workload.MaxBatch), max(0, int(o.kvRoom/perReq)))
	kvReserve := float64(n) * perReq
	o.budget = max(0, o.kvRoom-kvReserve)
	o.kv = newKVPool(1, 2*int(kvReserve/(2*o.kvBlk))+2, func(n int) (int, int) {
		k := ceilDiv(n, hermesKVBlockTokens)
		return k, k
	})
	o.kv.full = c.Workload.KVPolicy == KVReserve
	switch op.Framework {
	case OffloadAccelerate:
		o.mods = accModules(sh)
		// infer_auto_device_map keeps the largest layer's room free on the GPU once any
		// layer is offloaded
		o.resident = min(sh.Layers, int(o.budget/o.layerB))
		if o.resident < sh.Layers {
			o.resident = max(0, int((o.budget-o.layerB)/o.layerB))
		}
	case OffloadFlexGen:
		o.flexgenPolicy()
	case OffloadDejaVu:
		if err := checkSparsity(hc.Sparsity); err != nil {
			return nil, err
		}
		o.nQKV, o.nMLP = sh.DModel, sh.DFFN
		o.bQKV = float64((sh.Heads+2*sh.KVHeads)*sh.HeadDim) * prec
		o.bMLP = sh.ffnMatrices() * float64(sh.DModel) * prec
		o.frac = min(1, o.budget/(o.layerB*float64(sh.Layers)))
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

// accModules are a decoder layer's modules in forward order, as Accelerate hooks them.
func accModules(sh Shard) []accModule {
	p := float64(sh.Precision)
	d := float64(sh.DModel)
	q, kv := float64(sh.Heads*sh.HeadDim), float64(sh.KVHeads*sh.HeadDim)
	f := float64(sh.DFFN)
	lin := func(name string, in, out float64) accModule {
		return accModule{name: name, tensors: 2, bytes: (in*out + out) * p, params: in * out}
	}
	ln := func(name string) accModule { return accModule{name: name, tensors: 2, bytes: 2 * d * p} }
	m := []accModule{ln("LN1"), lin("q_proj", d, q), lin("k_proj", d, kv), lin("v_proj", d, kv), {name: "attention"}, lin("out_proj", q, d), ln("LN2")}
	if sh.FFN == "swiglu" {
		m = append(m, lin("gate_proj", d, f))
	}
	return append(m, lin("fc1", d, f), lin("fc2", f, d))
}

// fgTensors are the sizes of a FlexGen layer's weight tensors in its init_weight order:
// the attention layer (q, k, v and out projections with their biases, the LayerNorm) and
// the MLP layer (fc1, fc2 with biases, the LayerNorm).
func fgTensors(sh Shard) [2][]float64 {
	p := float64(sh.Precision)
	d := float64(sh.DModel)
	q, kv := float64(sh.Heads*sh.HeadDim), float64(sh.KVHeads*sh.HeadDim)
	f := float64(sh.DFFN) * (sh.ffnMatrices() - 1)
	return [2][]float64{
		{d * q * p, q * p, d * kv * p, kv * p, d * kv * p, kv * p, q * d * p, d * p, d * p, d * p},
		{d * f * p, f * p, float64(sh.DFFN) * d * p, d * p, d * p, d * p},
	}
}

// fgPlace splits a layer's tensors at a GPU percentage as init_weight_list does: a tensor
// is on the GPU when the middle of its bytes lies past the host's (100 − percent)% of the
// layer. It returns the resident bytes, the bytes on the host and their tensor count.
func fgPlace(sizes []float64, percent int) (res, host float64, copies int) {
	var total float64
	for _, s := range sizes {
		total += s
	}
	var cum float64
	for _, s := range sizes {
		cum += s
		if (cum-s/2)/total*100 < float64(100-percent) {
			host += s
			copies++
		} else {
			res += s
		}
	}
	return res, host, copies
}

// flexgenPolicy picks FlexGen's GPU weight percentage: the largest whose resident tensors
// over every layer, plus two layers' worth of copied tensors (the weight buffers of the
// layer computing and the layer loading, cost_model.py's 2·w·(1 − wg)), fit the budget.
func (o *offload) flexgenPolicy() {
	ts := fgTensors(o.sh)
	L := float64(o.sh.Layers)
	for pc := 100; pc >= 0; pc-- {
		var res, host [2]float64
		var n [2]int
		for k := range 2 {
			res[k], host[k], n[k] = fgPlace(ts[k], pc)
		}
		if L*(res[0]+res[1])+2*(host[0]+host[1]) <= o.budget || pc == 0 {
			o.percent, o.fgRes, o.fgFetch, o.fgCopies = pc, res, host, n
			return
		}
	}
}

func (o *offload) lanes() []Lane        { return o.lane }
func (o *offload) layers() int          { return o.sh.Layers }
func (o *offload) pool() *kvPool        { return o.kv }
func (o *offload) grow(r *Request) bool { return o.kv.grow(r) }
func (o *offload) release(r *Request)   { o.kv.release(r) }
func (o *offload) utilKeys() []string {
	if o.hc.Offload.Framework == OffloadDejaVu {
		return []string{"gpu", "gpu_bandwidth", "pcie", "host"}
	}
	return []string{"gpu", "gpu_bandwidth", "pcie"}
}

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
	if op.Lane == offLaneGPU {
		o.gpuBytes += op.Bytes
	}
	return s.Add(op, present(deps)...)
}

func (o *offload) gpuOp(name string, bytes, flops float64) Op {
	return Op{Name: name, Lane: offLaneGPU, Dur: o.gpu.Time(flops, bytes), FLOPs: flops, Bytes: bytes}
}

// pinned is a DMA of bytes in copies transfers from pinned host memory.
func (o *offload) pinned(name string, bytes float64, copies int) Op {
	return Op{Name: name, Lane: offLanePCIe, Dur: Time(copies)*o.lat + FromSeconds(bytes/o.dma), Bytes: bytes}
}

// pageable is a copy from ordinary host memory: the CPU stages it through a pinned
// buffer (reading and writing host memory), then the DMA moves it.
func (o *offload) pageable(name string, bytes float64, copies int) Op {
	return Op{Name: name, Lane: offLanePCIe, Dur: Time(copies)*o.lat + FromSeconds(2*bytes/o.host+bytes/o.dma), Bytes: bytes}
}

func (o *offload) plan(s *Schedule, decode, prefill []*Request) []StageMark {
	o.gpuBytes = 0
	last := -1
	if o.ns != nil {
		ids, fresh, plen := batchIDs(decode, prefill)
		o.ns.setBatch(ids, fresh, plen)
		if len(prefill) > 0 {
			o.tokens = 0
		}
	}
	if len(prefill) > 0 {
		last = o.planPrefill(s, prefill)
	}
	if len(decode) > 0 {
		o.planDecode(s, decode, last)
	}
	return nil
}

// work is one pass's compute: tokens through the FC weights, attention FLOPs and the KV
// bytes it reads per layer.
type work struct {
	tok          float64
	attnF, attnB float64
}

// layerOps is the compute of one decoder layer on the GPU for a pass: the attention layer
// (QKV, attention, projection) and the MLP layer, as FlexGen splits them.
func (o *offload) layerOps(w work) [2]Op {
	sh := o.sh
	prec := float64(sh.Precision)
	att := sh.QKVParams() + sh.ProjParams()
	return [2]Op{
		o.gpuOp("attention", att*prec+w.attnB, 2*w.tok*att+w.attnF),
		o.gpuOp("MLP", sh.FFNParams()*prec, 2*w.tok*sh.FFNParams()),
	}
}

func (o *offload) planPrefill(s *Schedule, reqs []*Request) int {
	sh := o.sh
	var w work
	for _, r := range reqs {
		n := float64(r.SeqLen())
		w.tok += n
		w.attnF += 2 * float64(sh.Heads*sh.HeadDim) * n * n
		w.attnB += n * sh.KVBytesPerToken() / float64(sh.Layers)
	}
	var prev int
	switch o.hc.Offload.Framework {
	case OffloadFlexGen:
		prev = o.flexgenPass(s, w, -1)
	case OffloadAccelerate:
		prev = o.acceleratePass(s, w, -1)
	default:
		// Deja Vu runs the prompt densely, layer by layer, through its host modules.
		prev = -1
		for l := range sh.Layers {
			f := o.add(s, o.pageable("fetch W", (1-o.frac)*o.layerB, 1), l, prev)
			ops := o.layerOps(w)
			a := o.add(s, ops[0], l, f, prev)
			prev = o.add(s, ops[1], l, a)
		}
	}
	return o.lmHead(s, len(reqs), prev)
}

func (o *offload) lmHead(s *Schedule, batch int, after int) int {
	sh := o.sh
	v := float64(sh.Vocab * sh.DModel)
	return o.add(s, o.gpuOp("LM head", v*float64(sh.Precision), 2*float64(batch)*v), sh.Layers-1, after)
}

// flexgenPass is FlexGen's per-layer loop over the attention and MLP layers: load layer
// j+1's host tensors while layer j computes, then synchronise. The first attention
// layer's tensors load while the input embedding (resident) runs, so each pass starts
// with them exposed.
func (o *offload) flexgenPass(s *Schedule, w work, after int) int {
	ops := o.layerOps(w)
	n := 2 * o.sh.Layers
	prevC, prevF := after, -1
	if o.fgFetch[0] > 0 {
		prevF = o.add(s, o.pinned("fetch W", o.fgFetch[0], o.fgCopies[0]), 0, after)
	}
	for j := range n {
		f := -1
		if k := (j + 1) % 2; j+1 < n && o.fgFetch[k] > 0 {
			f = o.add(s, o.pinned("fetch W", o.fgFetch[k], o.fgCopies[k]), (j+1)/2, prevC, prevF)
		}
		c := o.add(s, ops[j%2], j/2, prevC, prevF)
		prevC, prevF = c, f
	}
	return prevC
}

// acceleratePass is Accelerate's module-by-module forward: every module of an offloaded
// layer copies its tensors (blocking, from pageable host memory) and then computes.
func (o *offload) acceleratePass(s *Schedule, w work, after int) int {
	prec := float64(o.sh.Precision)
	prev := after
	for l := range o.sh.Layers {
		for _, m := range o.mods {
			if l >= o.resident && m.tensors > 0 {
				prev = o.add(s, o.pageable("copy "+m.name, m.bytes, m.tensors), l, prev)
			}
			op := o.gpuOp(m.name, m.params*prec, 2*w.tok*m.params)
			if m.name == "attention" {
				op = o.gpuOp(m.name, w.attnB, w.attnF)
			}
			prev = o.add(s, op, l, prev)
		}
	}
	return prev
}

func (o *offload) planDecode(s *Schedule, decode []*Request, last int) {
	sh := o.sh
	var w work
	w.tok = float64(len(decode))
	for _, r := range decode {
		w.attnF += 4 * float64(sh.Heads*sh.HeadDim) * float64(r.SeqLen())
		w.attnB += float64(r.SeqLen()) * sh.KVBytesPerToken() / float64(sh.Layers)
	}
	var prev int
	switch o.hc.Offload.Framework {
	case OffloadFlexGen:
		prev = o.flexgenPass(s, w, last)
	case OffloadAccelerate:
		prev = o.acceleratePass(s, w, last)
	default:
		prev = o.dejavuPass(s, w, last)
	}
	o.lmHead(s, len(decode), prev)
}

// dejavuPass is one decode token under Deja Vu: both predictors run on the layer's input,
// the host gathers each block's predicted-active rows that are not resident and copies
// them (the QKV rows, the non-resident part of the dense W_O, then the MLP rows), and each
// block computes once its rows are on the GPU.
func (o *offload) dejavuPass(s *Schedule, w work, after int) int {
	sh := o.sh
	prec := float64(sh.Precision)
	o.ns.token++
	o.tokens++
	proj := sh.ProjParams()
	prev := after
	share := o.hc.Offload.PredictorShare
	for l := range sh.Layers {
		var pred, gather [2]int
		var cops [2]Op
		var rows [2]float64
		for k := range 2 {
			b := o.ns.blocks[2*l+k]
			o.ns.pass(b)
			// the rows read once, each multiplied for every request that fired it
			active := float64(b.comp[0]+b.comp[1]) * b.bytes
			name := "QKV sparse"
			if k == kindMLP {
				name = "MLP sparse"
			}
			cops[k] = o.gpuOp(name, active, 2*float64(b.work[0]+b.work[1])*b.bytes/prec)
			// the predictor: its measured share of the block's GPU time (Fig. 12a)
			pred[k] = o.add(s, Op{Name: "predictor", Lane: offLaneGPU, Dur: FromSeconds(cops[k].Dur.Seconds() * share / (1 - share))}, l, prev)
			gather[k] = -1
			if rows[k] = float64(b.comp[1]) * b.bytes; rows[k] > 0 {
				gather[k] = o.add(s, Op{Name: "gather", Lane: offLaneCPU, Dur: FromSeconds(2 * rows[k] / o.host), Bytes: rows[k]}, l, pred[k])
			}
		}
		fq, fm, fo := -1, -1, -1
		if rows[kindQKV] > 0 {
			fq = o.add(s, o.pageable("fetch active", rows[kindQKV], 1), l, gather[kindQKV])
		}
		if by := (1 - o.frac) * proj * prec; by > 0 {
			fo = o.add(s, o.pageable("fetch W_O", by, 2), l, prev)
		}
		if rows[kindMLP] > 0 {
			fm = o.add(s, o.pageable("fetch active", rows[kindMLP], 1), l, gather[kindMLP])
		}
		q := o.add(s, cops[kindQKV], l, pred[kindMLP], fq)
		a := o.add(s, o.gpuOp("attention", w.attnB, w.attnF), l, q)
		pj := o.add(s, o.gpuOp("Proj", proj*prec, 2*w.tok*proj), l, a, fo)
		prev = o.add(s, cops[kindMLP], l, pj, fm)
	}
	return prev
}

func (o *offload) observe(snap *Snapshot, s *Schedule, running []*Request) {
	T := float64(snap.IterTime)
	sec := snap.IterTime.Seconds()
	busy := s.Busy()
	u := snap.Metrics.Util
	u["gpu"] = float64(busy[offLaneGPU]) / T
	u["gpu_bandwidth"] = min(1, o.gpuBytes/(o.gpu.MemBandwidth*sec))
	u["pcie"] = float64(busy[offLanePCIe]) / T
	if o.hc.Offload.Framework == OffloadDejaVu {
		u["host"] = float64(busy[offLaneCPU]) / T
	}
	snap.Banks.Reason = "offloading baseline: the weights sit in plain host DRAM with no near-data processing; see PCIe in the timeline"
	snap.KV.Unit = fmt.Sprintf("%d tokens of one request in all layers, K or V", hermesKVBlockTokens)
	snap.KV.LocKind = "GPU"
	snap.KV.BlockBytes = o.kvBlk
	perTok := o.sh.KVBytesPerToken()
	o.kv.snapshot(&snap.KV, func(int) string { return "GPU" }, running, func(r *Request) float64 { return float64(r.SeqLen()) * perTok })
	if snap.KV.Capacity > 0 {
		snap.Metrics.KVUtil = float64(snap.KV.Used) / float64(snap.KV.Capacity)
	}
	if o.cfg.Jump {
		// A headless run reads only the metrics and the KV cache's counts: no neuron view.
		return
	}
	switch o.hc.Offload.Framework {
	case OffloadAccelerate:
		snap.Neurons = Neurons{Reason: fmt.Sprintf("Accelerate keeps %d of %d decoder layers on the GPU and copies every module of the others before it runs; it does not use activation sparsity, so there is no hot/cold partition.",
			o.resident, o.sh.Layers)}
		return
	case OffloadFlexGen:
		snap.Neurons = Neurons{Reason: fmt.Sprintf("FlexGen's policy keeps %d%% of every layer's weights on the GPU (%.0f%% once whole tensors are placed) and streams the rest; it does not use activation sparsity, so there is no hot/cold partition.",
			o.percent, 100*(o.fgRes[0]+o.fgRes[1])/o.layerB)}
		return
	}
	neuronSnapshot(&snap.Neurons, o.ns, []string{"GPU", "host"}, o.cfg.Recycle)
	snap.Neurons.Stats.Token = o.tokens
	snap.Neurons.Stats.HotMB = o.frac * float64(o.sh.Layers) * (float64(o.nQKV)*o.bQKV + float64(o.nMLP)*o.bMLP) / 1e6
	snap.Neurons.Stats.BudgetMB = o.budget / 1e6
}
