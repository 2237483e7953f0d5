package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// hermes plans the Hermes family (Hermes, HPCA 2025): one consumer GPU and J NDP-DIMMs
// that hold every weight and the KV cache. Per layer and token (§IV-A, Fig. 6):
//
//	QKV block   GPU (activated hot neurons + 2·T_sync) ∥ each DIMM (its activated cold
//	            neurons), then the partial sums merge over the DIMM-links
//	attention   on the DIMMs that hold the KV heads
//	projection  dense W_O on the GPU; meanwhile promoted neurons are copied to the GPU over
//	            PCIe and, once per window, cold neurons move between DIMMs
//	MLP block   as the QKV block
//
// with Eq. 1–3's max(T_GPU, max_j T_DIMM_j) per sparse block falling out of the schedule.
// Prefill streams the weights through the GPU (FlexGen-style) and reloads the hot set.
// Switches make the baselines: cold = host (Hermes-host: the host CPU computes the cold
// neurons from host DRAM), sparsity off (Hermes-base: whole FC layers on the GPU or dense
// on the DIMMs), and the ablation path random mapping → partition → adjustment → remap.
type hermes struct {
	cfg  *Config
	hc   *HermesConfig
	sh   Shard
	gpu  Device
	home Device // one NDP core with its DIMM's internal bandwidth, or the host CPU
	pcie Link
	link Link
	J    int // home locations: DIMMs, or 1 (the host)
	host bool
	ns   *neuronSim
	// Hermes-base: GPU-resident sparse blocks.
	dense []bool

	hermesKV
	kvHeadOn []int // KV heads on each home location (kv-head h on DIMM h mod J)

	lane                           []Lane
	laneGPU, laneHome0, lanePCIe   int
	laneLink                       int
	nQKV, nMLP                     int
	bQKV, bMLP                     float64 // bytes per neuron
	qDim, kvDim                    int
	hotBytes                       float64 // GPU bytes holding hot-neuron copies
	budget                         float64 // S_GPU
	modelBytes, projBytes, lmBytes float64

	// Per-step records for observe.
	homeBytes  []float64 // bytes each home location read this step (cold neurons + KV)
	coldBytes  []float64 // of which cold neurons
	homeFlops  []float64
	gpuBytes   float64
	promoted   int
	promotedB  float64
	remapped   int
	remappedB  float64
	remapPairs int
	zBefore    []int32
	zAfter     []int32
	kvRead     []float64
	tokens     int // decode tokens of the current batch
	// Σ over this step's sparse blocks of the slowest and the mean DIMM's cold bytes.
	blkMax, blkMean float64
}

const hermesKVBlockTokens = 16

func init() {
	register(SystemHermes, func(c *Config) (system, error) { return newHermes(c) })
}

// hermesShape checks the model and split a Hermes-family system can run and returns the
// shard.
func hermesShape(c *Config) (Shard, error) {
	sh := c.shard()
	if sh.TP != 1 || sh.PP != 1 {
		return sh, fmt.Errorf("the %s family runs on one GPU: set model.tp = 1 and model.pp = 1 (got tp=%d pp=%d)", c.Family, sh.TP, sh.PP)
	}
	if c.Model.Experts > 0 {
		return sh, fmt.Errorf("%s is a mixture-of-experts model; the Hermes family models dense ReLU LLMs (OPT, ReLU-LLaMA2, ReLU-Falcon)", c.Model.Display)
	}
	return sh, nil
}

func newHermes(c *Config) (*hermes, error) {
	hc := &c.Hermes
	sh, err := hermesShape(c)
	if err != nil {
		return nil, err
	}
	p := hc.Platform
	nd := hc.NDP
	h := &hermes{cfg: c, hc: hc, sh: sh, host: hc.Policy.Cold == ColdHost}
	if err := checkPlatform(p); err != nil {
		return nil, err
	}
	if nd.DIMMs < 1 {
		return nil, fmt.Errorf("Hermes keeps every weight and the KV cache on the NDP-DIMMs, so it needs at least one; got ndp.dimms = %d (the paper uses 8)", nd.DIMMs)
	}
	if nd.CapacityGB <= 0 || nd.Ranks < 1 || nd.BankGroups < 1 || nd.BanksPerGroup < 1 || nd.DataRateMTs <= 0 || nd.RankBusBytes < 1 {
		return nil, errors.New("the NDP-DIMM needs a positive capacity, ranks, bank groups, banks per group, data rate and bus width")
	}
	h.gpu = gpuDevice(p)
	h.pcie = Link{Name: "PCIe", Bandwidth: p.PCIeBytesPerSec(), Latency: FromSeconds(p.PCIeLatencyUs * 1e-6)}
	if h.host {
		if p.HostGBps <= 0 || p.HostGFLOPS <= 0 {
			return nil, errors.New("Hermes-host computes cold neurons on the host CPU: platform.host_gbps and platform.host_gflops must be positive")
		}
		h.J = 1
		h.home = Device{Name: "CPU", PeakFLOPS: p.HostGFLOPS * 1e9, MemBandwidth: p.HostGBps * 1e9, ComputeEff: 1, MemoryEff: 1}
	} else {
		if nd.GFLOPS() <= 0 || nd.LinkGBps <= 0 {
			return nil, errors.New("the NDP core needs a positive clock, multipliers and bit-serial cycles, and the DIMM-link a positive bandwidth")
		}
		if nd.DIMMs > 254 {
			return nil, fmt.Errorf("at most 254 NDP-DIMMs are supported, got %d", nd.DIMMs)
		}
		h.J = nd.DIMMs
		h.home = Device{Name: "NDP", PeakFLOPS: nd.GFLOPS() * 1e9, MemBandwidth: nd.InternalGBps() * 1e9, ComputeEff: 1, MemoryEff: 1}
		h.link = Link{Name: "DIMM-link", Bandwidth: nd.LinkGBps * 1e9}
	}
	prec := float64(sh.Precision)
	h.qDim, h.kvDim = sh.Heads*sh.HeadDim, sh.KVHeads*sh.HeadDim
	h.nQKV, h.nMLP = sh.DModel, sh.DFFN
	h.bQKV = float64(h.qDim+2*h.kvDim) * prec
	h.bMLP = sh.ffnMatrices() * float64(sh.DModel) * prec
	L := sh.Layers
	h.projBytes = sh.ProjParams() * prec * float64(L)
	h.lmBytes = float64(sh.Vocab) * float64(sh.DModel) * prec
	h.modelBytes = sh.WeightBytes()

	// Capacity: every weight lives on the DIMMs (or in host DRAM), the hot neurons are
	// copies, and W_O and the LM head stay on the GPU.
	dimmBytes := nd.CapacityGB * 1e9
	if total := dimmBytes * float64(nd.DIMMs); h.modelBytes > total {
		need := int(math.Ceil(h.modelBytes / dimmBytes))
		where := "NDP-DIMMs"
		if h.host {
			where = "host DIMMs"
		}
		return nil, fmt.Errorf("%s needs %.1f GB of weights but %d %s of %.0f GB hold %.1f GB; use at least %d (--set ndp.dimms=%d) or larger DIMMs",
			c.Model.Display, h.modelBytes/1e9, nd.DIMMs, where, nd.CapacityGB, total/1e9, need, need)
	}
	h.budget = p.GPUWeightGB*1e9 - h.projBytes - h.lmBytes
	if h.budget < 0 {
		return nil, fmt.Errorf("%s's dense projection (%.1f GB) and LM head (%.1f GB) do not fit in the %.1f GB of %s memory set aside for weights (platform.gpu_weight_gb)",
			c.Model.Display, h.projBytes/1e9, h.lmBytes/1e9, p.GPUWeightGB, p.GPUDisplay)
	}

	// Lanes: GPU, the home locations, PCIe, the DIMM-links.
	h.laneGPU = 0
	h.lane = []Lane{{Name: "GPU", Group: "gpu"}}
	h.laneHome0 = len(h.lane)
	if h.host {
		h.lane = append(h.lane, Lane{Name: "CPU", Group: "host"})
	} else {
		for j := range h.J {
			h.lane = append(h.lane, Lane{Name: "DIMM" + strconv.Itoa(j), Group: "ndp"})
		}
	}
	h.lanePCIe = len(h.lane)
	h.lane = append(h.lane, Lane{Name: "PCIe", Group: "pcie", Transfer: true})
	h.laneLink = -1
	if !h.host && h.J > 1 {
		h.laneLink = len(h.lane)
		h.lane = append(h.lane, Lane{Name: "DIMM-link", Group: "link", Transfer: true})
	}

	// The offline mapping, once for every batch (§IV-B): Eq. 4–5 weigh each neuron's
	// profiled activation frequency by the time one unit takes to compute it, one token's
	// worth (T_l^j), and 2·T_sync moves one token's vector each way.
	if hc.Sparsity.Enabled {
		if err := checkSparsity(hc.Sparsity); err != nil {
			return nil, err
		}
		cost := neuronCosts{budget: h.budget, homes: h.J, sync: 2 * (h.pcie.Time(float64(sh.DModel) * prec)).Seconds()}
		for k, by := range [2]float64{h.bQKV, h.bMLP} {
			cost.gpu[k] = h.gpu.Time(2*by/prec, by).Seconds() - h.gpu.LaunchOverhead.Seconds()
			cost.dimm[k] = h.home.Time(2*by/prec, by).Seconds()
		}
		ns, err := newNeuronSim(hc.Sparsity, hc.Policy, c.Workload.Seed, L, [2]int{h.nQKV, h.nMLP}, [2]float64{h.bQKV, h.bMLP}, h.J, cost)
		if err != nil {
			return nil, err
		}
		h.ns = ns
		for _, b := range ns.blocks {
			h.hotBytes += float64(b.slot) * b.bytes
		}
	} else {
		// Hermes-base: a whole FC layer is GPU-resident while the budget lasts, in layer
		// order; the others run densely on the DIMMs.
		h.dense = make([]bool, 2*L)
		left := h.budget
		for b := range h.dense {
			by := float64(h.nQKV) * h.bQKV
			if b%2 == kindMLP {
				by = float64(h.nMLP) * h.bMLP
			}
			if by <= left {
				h.dense[b] = true
				left -= by
				h.hotBytes += by
			}
		}
	}

	// KV cache on the DIMMs, kv-head sharded: kv-head h on DIMM h mod J, one block = 16
	// tokens of one head in every layer, K or V (the paper gives no layout).
	h.kvBlk = float64(hermesKVBlockTokens*sh.HeadDim) * prec * float64(L)
	h.perTok = sh.KVBytesPerToken()
	h.kvHeadOn = make([]int, h.J)
	for hd := range sh.KVHeads {
		h.kvHeadOn[hd%h.J]++
	}
	maxHeads := 0
	for _, n := range h.kvHeadOn {
		maxHeads = max(maxHeads, n)
	}
	free := dimmBytes - h.modelBytes/float64(nd.DIMMs)
	if h.host {
		free = dimmBytes*float64(nd.DIMMs) - h.modelBytes
		maxHeads = sh.KVHeads
	}
	perHead := int(free / (h.kvBlk * float64(maxHeads)))
	kvh := sh.KVHeads
	h.kv = newKVPool(1, perHead*kvh, func(n int) (int, int) {
		k := kvh * ceilDiv(n, hermesKVBlockTokens)
		return k, k
	})
	h.kv.full = c.Workload.KVPolicy == KVReserve
	h.homeBytes = make([]float64, h.J)
	h.coldBytes = make([]float64, h.J)
	h.homeFlops = make([]float64, h.J)
	h.kvRead = make([]float64, h.J)
	h.zBefore = make([]int32, h.J)
	h.zAfter = make([]int32, h.J)
	return h, nil
}

func checkPlatform(p HermesPlatform) error {
	switch {
	case p.GPUTFLOPS <= 0 || p.GPUBandwidthGBps <= 0:
		return errors.New("the GPU needs positive FP16 TFLOPS and bandwidth")
	case p.GPUWeightGB <= 0 || p.GPUWeightGB > p.GPUCapacityGB:
		return fmt.Errorf("platform.gpu_weight_gb must be above 0 and at most the GPU's %.0f GB, got %g", p.GPUCapacityGB, p.GPUWeightGB)
	case p.PCIeGBps <= 0:
		return errors.New("platform.pcie_gbps must be positive")
	case !(p.PCIeEfficiency > 0 && p.PCIeEfficiency <= 1):
		return fmt.Errorf("platform.pcie_efficiency must be in (0, 1], got %g", p.PCIeEfficiency)
	case p.ComputeEfficiency <= 0 || p.MemoryEfficiency <= 0:
		return errors.New("the GPU's compute and memory efficiencies must be positive")
	}
	return nil
}

func checkSparsity(s Sparsity) error {
	switch {
	case s.MLPActive <= 0 || s.MLPActive >= 0.99 || s.QKVActive <= 0 || s.QKVActive >= 0.99:
		return fmt.Errorf("activation rates must be in (0, 0.99): mlp %g, qkv %g", s.MLPActive, s.QKVActive)
	case s.Beta+s.Gamma > 1:
		return fmt.Errorf("sparsity.beta + sparsity.gamma must be at most 1, got %g", s.Beta+s.Gamma)
	case s.HotFrac <= 0 || s.HotFrac >= 1 || s.HotShare <= s.HotFrac || s.HotShare >= 1:
		return fmt.Errorf("the hot fraction must be in (0,1) and its share above it and below 1: %g carrying %g", s.HotFrac, s.HotShare)
	}
	return nil
}

func gpuDevice(p HermesPlatform) Device {
	return Device{Name: p.GPUDisplay, PeakFLOPS: p.GPUTFLOPS * 1e12, MemBandwidth: p.GPUBandwidthGBps * 1e9,
		ComputeEff: p.ComputeEfficiency, MemoryEff: p.MemoryEfficiency, LaunchOverhead: FromSeconds(p.LaunchOverheadUs * 1e-6)}
}

func (h *hermes) lanes() []Lane        { return h.lane }
func (h *hermes) layers() int          { return h.sh.Layers }
func (h *hermes) pool() *kvPool        { return h.kv }
func (h *hermes) grow(r *Request) bool { return h.kv.grow(r) }
func (h *hermes) release(r *Request)   { h.kv.release(r) }

func (h *hermes) utilKeys() []string {
	if h.host {
		return []string{"gpu", "gpu_bandwidth", "host", "pcie"}
	}
	return []string{"gpu", "gpu_bandwidth", "ndp", "ndp_bandwidth", "pcie", "link"}
}

func (h *hermes) fit(in, out int) string {
	need, have, ok := h.kv.alone(in, out)
	if ok {
		return ""
	}
	where := "DIMMs"
	if h.host {
		where = "host memory"
	}
	return fmt.Sprintf("its KV cache needs %.1f GB but the %s have %.1f GB left after the weights; shorten the sequences",
		float64(need)*h.kvBlk/1e9, where, float64(have)*h.kvBlk/1e9)
}

func (h *hermes) admit(cands, _ []*Request) []bool {
	return h.kv.admitInOrder(cands)
}

// hplan is the state of one iteration's emission.
type hplan struct {
	s    *Schedule
	last int // the op the next layer waits for (−1: none)
	// scratch of sparseBlock: each home location's neurons, the ops the merge waits for,
	// each location's neuron-requests (GPU first)
	homeN, ends []int
	work        []int32
}

func (h *hermes) add(p *hplan, op Op, layer int, deps ...int) int {
	op.Layer = layer
	return p.s.Add(op, present(deps)...)
}

// present is deps without the absent ones (−1): deps itself when none is absent.
func present(deps []int) []int {
	for i, x := range deps {
		if x < 0 {
			d := append(make([]int, 0, len(deps)-1), deps[:i]...)
			for _, y := range deps[i+1:] {
				if y >= 0 {
					d = append(d, y)
				}
			}
			return d
		}
	}
	return deps
}

func (h *hermes) gpuOp(name string, bytes, flops float64) Op {
	return Op{Name: name, Lane: h.laneGPU, Dur: h.gpu.Time(flops, bytes), FLOPs: flops, Bytes: bytes}
}

func (h *hermes) pcieOp(name string, bytes float64) Op {
	return Op{Name: name, Lane: h.lanePCIe, Dur: h.pcie.Time(bytes), Bytes: bytes}
}

func (h *hermes) homeOp(j int, name string, bytes, flops float64, extra Time) Op {
	return Op{Name: name, Lane: h.laneHome0 + j, Dur: h.home.Time(flops, bytes) + extra, FLOPs: flops, Bytes: bytes}
}

func (h *hermes) plan(s *Schedule, decode, prefill []*Request) []StageMark {
	p := &hplan{s: s, last: -1, homeN: make([]int, h.J), work: make([]int32, 1+h.J)}
	clear(h.homeBytes)
	clear(h.coldBytes)
	clear(h.homeFlops)
	clear(h.kvRead)
	clear(h.zBefore)
	clear(h.zAfter)
	h.gpuBytes, h.promoted, h.promotedB, h.remapped, h.remappedB, h.remapPairs = 0, 0, 0, 0, 0, 0
	h.blkMax, h.blkMean = 0, 0
	if h.ns != nil {
		ids, fresh, plen := batchIDs(decode, prefill)
		if len(prefill) > 0 {
			h.tokens = 0
			if len(decode) == 0 {
				h.resetGPUSet()
			}
		}
		h.ns.setBatch(ids, fresh, plen)
	}
	if len(prefill) > 0 {
		if h.host && h.ns != nil {
			h.planPrefillHybrid(p, prefill)
		} else {
			h.planPrefill(p, prefill)
		}
	}
	if len(decode) > 0 {
		h.planDecode(p, decode)
	}
	return nil
}

// batchIDs lists the requests of an iteration for the activation model: every request,
// the newly prefilled ones, and the prefills' mean length.
func batchIDs(decode, prefill []*Request) (ids, fresh []int, plen float64) {
	ids = make([]int, 0, len(decode)+len(prefill))
	fresh = make([]int, 0, len(prefill))
	for _, r := range decode {
		ids = append(ids, r.ID)
	}
	for _, r := range prefill {
		ids = append(ids, r.ID)
		fresh = append(fresh, r.ID)
		plen += float64(r.SeqLen())
	}
	if len(prefill) > 0 {
		plen /= float64(len(prefill))
	}
	return ids, fresh, plen
}

// resetGPUSet restores the offline hot set: a prefill streams every weight through the
// GPU's memory and then loads "the selected hot neurons" back (§IV-A).
func (h *hermes) resetGPUSet() {
	for _, b := range h.ns.blocks {
		for r := range b.n {
			if b.isHot0(r) {
				b.loc[r] = 0
			} else {
				b.loc[r] = 1 + b.home[r]
			}
		}
		b.collect()
	}
	h.ns.churn = 0
}

// planPrefill runs the prompts on the GPU with the weights streamed over PCIe layer by
// layer (the next layer's stream overlaps this layer's compute), writes the prompt's K
// and V to the DIMMs and reloads the hot set: per layer max(stream/BW_PCIe, compute).
func (h *hermes) planPrefill(p *hplan, reqs []*Request) {
	sh := h.sh
	prec := float64(sh.Precision)
	T, attn := h.promptWork(reqs)
	layerParams := sh.QKVParams() + sh.ProjParams() + sh.FFNParams()
	stream := (sh.QKVParams() + sh.FFNParams()) * prec
	L := sh.Layers
	st := make([]int, L)
	st[0] = h.add(p, h.pcieOp("stream W", stream), 0, p.last)
	prevGPU := p.last
	kvOut := -1
	for l := range L {
		if l+1 < L {
			st[l+1] = h.add(p, h.pcieOp("stream W", stream), l+1)
		}
		g := h.add(p, h.gpuOp("prefill", layerParams*prec, 2*T*layerParams+attn), l, st[l], prevGPU)
		prevGPU = g
		kvOut = h.add(p, h.pcieOp("KV→DIMM", T*2*float64(h.kvDim)*prec), l, g)
	}
	lm := h.add(p, h.gpuOp("LM head", h.lmBytes, 2*float64(len(reqs))*float64(sh.Vocab*sh.DModel)), L-1, prevGPU)
	reload := h.add(p, h.pcieOp("reload hot", h.hotBytes), L-1, lm, kvOut)
	h.gpuBytes += layerParams * prec * float64(L)
	p.last = reload
}

// promptWork is a prefill's tokens and its attention FLOPs per layer (QKᵀ and ×V over
// each causal prompt).
func (h *hermes) promptWork(reqs []*Request) (tokens, attn float64) {
	for _, r := range reqs {
		n := float64(r.SeqLen())
		tokens += n
		attn += 2 * float64(h.qDim) * n * n
	}
	return tokens, attn
}

// planPrefillHybrid is the prompting stage of Hermes-host, which follows PowerInfer's
// configuration (§V-A, [53]): PowerInfer builds one split graph whatever the number of
// tokens (llama.cpp llm_build_ffn_sparse), so the prompt runs as a decode token does, the
// GPU computing its resident neurons for every prompt token and the host CPU its own from
// host memory, each row the prompt fires read once and multiplied for every token that
// fires it (ggml.c ggml_compute_forward_mul_mat_sparse); only the tokens' vectors cross
// PCIe. Attention runs on the host, beside the KV cache; the projection on the GPU. The
// rows and neuron-tokens are the expected ones of the profiled frequencies: a neuron of
// frequency f is read when any of the prompt's T tokens fires it, 1 − (1 − f)^T.
func (h *hermes) planPrefillHybrid(p *hplan, reqs []*Request) {
	sh := h.sh
	prec := float64(sh.Precision)
	T, attn := h.promptWork(reqs)
	var read [2][]float64
	for k, kd := range h.ns.kinds {
		read[k] = make([]float64, kd.n)
		for r, f := range kd.p {
			read[k][r] = 1 - math.Pow(1-f, T)
		}
	}
	block := func(bid, layer int, after int) int {
		b := h.ns.blocks[bid]
		f := b.kind0.p
		rd := read[b.kind]
		var rows, fired [2]float64 // GPU, host
		for r, l := range b.loc {
			at := min(1, int(l))
			rows[at] += rd[r]
			fired[at] += f[r]
		}
		out := h.qDim + 2*h.kvDim
		if b.kind == kindMLP {
			out = sh.DModel
		}
		per := 2 * b.bytes / prec
		si := h.add(p, h.pcieOp("sync in", T*float64(sh.DModel)*prec), layer, after)
		g := h.add(p, h.gpuOp("prefill hot", rows[0]*b.bytes, T*fired[0]*per), layer, si)
		so := h.add(p, h.pcieOp("sync out", T*float64(out)*prec), layer, g)
		c := h.add(p, h.homeOp(0, "prefill cold", rows[1]*b.bytes, T*fired[1]*per, 0), layer, after)
		h.gpuBytes += rows[0] * b.bytes
		h.homeBytes[0] += rows[1] * b.bytes
		h.coldBytes[0] += rows[1] * b.bytes
		h.homeFlops[0] += T * fired[1] * per
		partial := T * float64(out) * prec
		return h.add(p, h.homeOp(0, "merge", 3*partial, T*float64(out), 0), layer, so, c)
	}
	prev := p.last
	for l := range sh.Layers {
		qkv := block(2*l, l, prev)
		kvB := T * 2 * float64(h.kvDim) * prec
		a := h.add(p, h.homeOp(0, "attention", kvB, attn, 0), l, qkv)
		h.homeBytes[0] += kvB
		h.homeFlops[0] += attn
		in := h.add(p, h.pcieOp("sync in", T*float64(h.qDim)*prec), l, a)
		pj := h.add(p, h.gpuOp("Proj", sh.ProjParams()*prec, 2*T*sh.ProjParams()), l, in)
		h.gpuBytes += sh.ProjParams() * prec
		out := h.add(p, h.pcieOp("sync out", T*float64(sh.DModel)*prec), l, pj)
		prev = block(2*l+1, l, out)
	}
	in := h.add(p, h.pcieOp("sync in", float64(len(reqs)*sh.DModel)*prec), sh.Layers-1, prev)
	p.last = h.add(p, h.gpuOp("LM head", h.lmBytes, 2*float64(len(reqs))*float64(sh.Vocab*sh.DModel)), sh.Layers-1, in)
	h.gpuBytes += h.lmBytes
}

func (h *hermes) planDecode(p *hplan, decode []*Request) {
	sh := h.sh
	B := len(decode)
	fB := float64(B)
	prec := float64(sh.Precision)
	L := sh.Layers
	pol := h.hc.Policy
	ns := h.ns
	// Attention work per home location (the same in every layer).
	var ctx float64
	for _, r := range decode {
		ctx += float64(r.SeqLen())
	}
	group := float64(sh.Heads) / float64(sh.KVHeads)
	attnB := make([]float64, h.J)
	attnF := make([]float64, h.J)
	soft := make([]Time, h.J)
	for j, nh := range h.kvHeadOn {
		attnB[j] = ctx * float64(nh*sh.HeadDim) * 2 * prec
		attnF[j] = 4 * ctx * float64(nh) * group * float64(sh.HeadDim)
		if h.host {
			attnF[j] += 5 * ctx * float64(nh) * group // softmax on the CPU
		} else if h.hc.NDP.ActivationUnits > 0 {
			soft[j] = Cycles(h.softmaxCycles(ctx, nh), h.hc.NDP.ClockGHz)
		}
	}
	projOp := h.gpuOp("Proj", sh.ProjParams()*prec+fB*float64(h.qDim+sh.DModel)*prec, 2*fB*sh.ProjParams())
	projT := projOp.Dur - h.gpu.LaunchOverhead
	prev := p.last
	if ns != nil {
		ns.token++
	}
	h.tokens++
	remapDue := ns != nil && pol.Remap && !h.host && h.J > 1 && pol.Window > 0
	att := make([]int, 0, h.J)
	for l := range L {
		// QKV block.
		qkv := h.sparseBlock(p, 2*l, l, fB, prev, -1, -1)
		// Attention on the DIMMs (or the CPU) holding the KV heads.
		att = att[:0]
		for j := range h.J {
			if attnB[j] == 0 {
				continue
			}
			att = append(att, h.add(p, h.homeOp(j, "attention", attnB[j], attnF[j], soft[j]), l, qkv))
			h.homeBytes[j] += attnB[j]
			h.homeFlops[j] += attnF[j]
			h.kvRead[j] += attnB[j]
		}
		// Projection on the GPU; the DIMMs are idle, so migrations run in its shadow.
		in := h.add(p, h.pcieOp("sync in", fB*float64(h.qDim)*prec), l, att...)
		pj := h.add(p, projOp, l, in)
		h.gpuBytes += projOp.Bytes
		copyOp, remapOp := -1, -1
		if ns != nil && pol.Adjust {
			budget := math.Inf(1)
			if pol.Overflow != OverflowStall {
				budget = max(0, (projT-h.pcie.Latency).Seconds()) * h.pcie.Bandwidth
			}
			var bytes float64
			for _, b := range h.windowBlocks(l) {
				n := ns.promote(b, budget-bytes)
				bytes += float64(n) * b.bytes
				h.promoted += n
			}
			if bytes > 0 {
				copyOp = h.add(p, h.pcieOp("promote", bytes), l, in)
				h.promotedB += bytes
			}
		}
		if remapDue {
			var pair []float64
			for _, b := range h.windowBlocks(l) {
				if b.sinc < pol.Window {
					continue
				}
				res := ns.remap(b)
				if pair == nil {
					pair = make([]float64, len(res.pairBytes))
				}
				for i, v := range res.pairBytes {
					pair[i] += v
				}
				for j := range h.J {
					h.zBefore[j] += res.before[j]
					h.zAfter[j] += res.after[j]
				}
				h.remapped += res.moved
			}
			var worst, sum float64
			for _, v := range pair {
				worst = max(worst, v)
				sum += v
			}
			if worst > 0 {
				remapOp = h.add(p, Op{Name: "remap", Lane: h.laneLink, Dur: h.link.Time(worst), Bytes: sum}, l, att...)
				h.remappedB += sum
				h.remapPairs++
			}
		}
		out := h.add(p, h.pcieOp("sync out", fB*float64(sh.DModel)*prec), l, pj)
		// MLP block.
		prev = h.sparseBlock(p, 2*l+1, l, fB, out, copyOp, remapOp)
	}
	in := h.add(p, h.pcieOp("sync in", fB*float64(sh.DModel)*prec), L-1, prev)
	lm := h.add(p, h.gpuOp("LM head", h.lmBytes, 2*fB*float64(sh.Vocab*sh.DModel)), L-1, in)
	h.gpuBytes += h.lmBytes
	p.last = h.add(p, h.pcieOp("token", 4*fB), L-1, lm)
}

// softmaxCycles is the cycles a DIMM's activation unit takes for the softmax of its nh KV
// heads' query groups over ctx tokens in all, one score per lane and cycle (§IV-B).
func (h *hermes) softmaxCycles(ctx float64, nh int) float64 {
	group := float64(h.sh.Heads) / float64(h.sh.KVHeads)
	return math.Ceil(ctx * float64(nh) * group / float64(h.hc.NDP.ActivationUnits))
}

// windowBlocks are the blocks whose promotions and remaps run in layer l's projection
// window: MLP(l), which runs next, and QKV(l+1) (QKV(0) of the next token after the last
// layer).
func (h *hermes) windowBlocks(l int) [2]*nblock {
	nb := 2 * h.sh.Layers
	return [2]*nblock{h.ns.blocks[2*l+1], h.ns.blocks[(2*l+2)%nb]}
}

// sparseBlock emits one sparse block: the GPU's activated hot neurons (input fetched and
// partial sum returned over PCIe, the paper's 2·T_sync) in parallel with each home
// location's activated cold neurons, then the merge of the partial sums over the
// DIMM-links. It returns the op the next stage waits for.
func (h *hermes) sparseBlock(p *hplan, bid, layer int, fB float64, after, copyOp, remapOp int) int {
	sh := h.sh
	prec := float64(sh.Precision)
	kind := bid % 2
	n, by := h.nQKV, h.bQKV
	outW := h.qDim + 2*h.kvDim
	hot, cold := "QKV hot", "QKV cold"
	if kind == kindMLP {
		n, by, outW, hot, cold = h.nMLP, h.bMLP, sh.DModel, "MLP hot", "MLP cold"
	}
	// Each unit reads its computed neurons' rows once and multiplies each for every
	// request whose input needs it: its neuron-requests (work), or, dense, every neuron
	// for every request.
	var gpuN int
	homeN, work := p.homeN, p.work
	clear(homeN)
	if h.ns != nil {
		b := h.ns.blocks[bid]
		h.ns.pass(b)
		gpuN = int(b.comp[0])
		for j := range h.J {
			homeN[j] = int(b.comp[1+j])
		}
		copy(work, b.work)
	} else {
		if h.dense[bid] {
			gpuN = n
		} else {
			for j := range h.J {
				homeN[j] = n / h.J
				if j < n%h.J {
					homeN[j]++
				}
			}
		}
		work[0] = int32(gpuN) * int32(fB)
		for j, c := range homeN {
			work[1+j] = int32(c) * int32(fB)
		}
	}
	perWork := 2 * by / prec // FLOPs of one neuron for one request
	in := fB * float64(sh.DModel) * prec
	ends := p.ends[:0]
	if gpuN > 0 {
		si := h.add(p, h.pcieOp("sync in", in), layer, after)
		gb := float64(gpuN) * by
		g := h.add(p, h.gpuOp(hot, gb, float64(work[0])*perWork), layer, si, copyOp)
		h.gpuBytes += gb
		ends = append(ends, h.add(p, h.pcieOp("sync out", fB*float64(outW)*prec), layer, g))
	}
	if h.J > 1 {
		// Eq. 2: the block waits for its slowest DIMM, so the imbalance that costs time is
		// per block: Σ_blocks max_j / Σ_blocks mean_j over the step.
		var mx, sum int
		for _, c := range homeN {
			mx = max(mx, c)
			sum += c
		}
		h.blkMax += float64(mx) * by
		h.blkMean += float64(sum) * by / float64(h.J)
	}
	for j, c := range homeN {
		if c == 0 {
			continue
		}
		bb := float64(c) * by
		f := float64(work[1+j]) * perWork
		ends = append(ends, h.add(p, h.homeOp(j, cold, bb, f, 0), layer, after, remapOp))
		h.homeBytes[j] += bb
		h.coldBytes[j] += bb
		h.homeFlops[j] += f
	}
	p.ends = ends
	if len(ends) == 0 {
		return after
	}
	partial := fB * float64(outW) * prec
	if h.host {
		return h.add(p, h.homeOp(0, "merge", 3*partial, fB*float64(outW), 0), layer, ends...)
	}
	if h.J > 1 {
		rounds := math.Ceil(math.Log2(float64(h.J)))
		return h.add(p, Op{Name: "merge", Lane: h.laneLink, Dur: h.link.Time(rounds * partial), Bytes: rounds * partial}, layer, ends...)
	}
	return h.add(p, h.homeOp(0, "merge", 3*partial, fB*float64(outW), 0), layer, ends...)
}

func (h *hermes) observe(snap *Snapshot, s *Schedule, running []*Request) {
	T := float64(snap.IterTime)
	sec := snap.IterTime.Seconds()
	busy := s.Busy()
	u := snap.Metrics.Util
	u["gpu"] = float64(busy[h.laneGPU]) / T
	u["gpu_bandwidth"] = min(1, h.gpuBytes/(h.gpu.MemBandwidth*sec))
	u["pcie"] = float64(busy[h.lanePCIe]) / T
	var hb, hbytes float64
	for j := range h.J {
		hb += float64(busy[h.laneHome0+j])
		hbytes += h.homeBytes[j]
	}
	if h.host {
		u["host"] = hb / T
	} else {
		u["ndp"] = hb / (T * float64(h.J))
		u["ndp_bandwidth"] = min(1, hbytes/(h.home.MemBandwidth*float64(h.J)*sec))
		u["link"] = 0
		if h.laneLink >= 0 {
			u["link"] = float64(busy[h.laneLink]) / T
		}
	}
	if h.blkMean > 0 {
		snap.Metrics.LoadImbalance = h.blkMax / h.blkMean
	}
	if h.cfg.Jump {
		// A headless run reads only the metrics and the KV cache's counts: no bank grid,
		// no KV map, no neuron view.
		snap.KV.Used, snap.KV.Capacity = h.kv.totals()
		_, snap.KV.Fragmentation, snap.Metrics.KVUtil = h.kvStats(running)
		return
	}
	h.observeBanks(snap, busy, T, sec)
	h.observeKV(snap, running)
	h.observeNeurons(snap)
}

func (h *hermes) observeBanks(snap *Snapshot, busy []Time, T, sec float64) {
	g := &snap.Banks
	if h.host {
		g.Reason = "Hermes-host: cold neurons run on the host CPU from plain DDR4 DIMMs, which have no near-data processing"
		return
	}
	nd := h.hc.NDP
	g.RowKind, g.ColKind = "DIMM", "bank"
	g.Rows, g.Cols, g.ColGroup = h.J, nd.Banks(), nd.BankGroups*nd.BanksPerGroup
	cells := g.Rows * g.Cols
	g.PIM, g.Mem, g.Owner = make([]float64, cells), make([]float64, cells), make([]int, cells)
	g.RowNotes = make([]string, g.Rows)
	// The GPU and the DIMMs: each NDP-DIMM's GEMV core sits in its buffer chip and reads
	// the DIMM's ranks, over which its neurons are striped.
	g.RowLevels = []BankLevel{{"DIMM", "DIMM", h.J}}
	g.ColLevels = []BankLevel{{"rank", "rank", nd.Ranks}, {"bank group", "BG", nd.BankGroups}, {"bank", "bank", nd.BanksPerGroup}}
	core := BankUnit{Name: "NDP core", Level: UnitRow, Busy: make([]float64, h.J)}
	g.Units = []BankUnit{core, systemUnit("GPU", busy[h.laneGPU], T), systemUnit("PCIe", busy[h.lanePCIe], T)}
	if h.laneLink >= 0 {
		g.Units = append(g.Units, systemUnit("DIMM-link", busy[h.laneLink], T))
	}
	win := ""
	if h.ns != nil && h.hc.Policy.Remap && h.hc.Policy.Window > 0 {
		win = fmt.Sprintf(" · window %d/%d", (h.tokens-1)%h.hc.Policy.Window+1, h.hc.Policy.Window)
	}
	for j := range h.J {
		pb := float64(busy[h.laneHome0+j]) / T
		core.Busy[j] = min(1, pb)
		mem := min(1, h.homeBytes[j]/(h.home.MemBandwidth*sec))
		for c := range g.Cols {
			i := j*g.Cols + c
			// Neurons are striped over a DIMM's ranks and banks, so its cells look alike.
			g.PIM[i], g.Mem[i], g.Owner[i] = pb, mem, -1
		}
		g.RowNotes[j] = fmt.Sprintf("read cold %.0f MB · KV %.0f MB%s", h.coldBytes[j]/1e6, h.kvRead[j]/1e6, win)
		if snap.Batch == 0 {
			// A prompt's step runs on the GPU from streamed weights: the DIMMs read nothing.
			g.RowNotes[j] = "prompt step: no cold neurons or KV read here; see them from the first decode step"
		}
	}
}

func (h *hermes) observeKV(snap *Snapshot, running []*Request) {
	m := &snap.KV
	m.Unit = fmt.Sprintf("%d tokens of one KV head in all layers, K or V (layout assumed: kv-head h on DIMM h mod %d)", hermesKVBlockTokens, h.J)
	m.LocKind = "DIMM (assumed layout)"
	if h.host {
		m.Unit = fmt.Sprintf("%d tokens of one KV head in all layers, K or V (layout assumed)", hermesKVBlockTokens)
		m.LocKind = "host DRAM (assumed layout)"
	}
	m.BlockBytes = h.kvBlk
	perTok := h.sh.KVBytesPerToken()
	var pooled KVMap
	pooled.BlockBytes = h.kvBlk
	h.kv.snapshot(&pooled, func(int) string { return "DIMMs" }, running, func(r *Request) float64 { return float64(r.SeqLen()) * perTok })
	m.Fragmentation = pooled.Fragmentation
	m.Capacity, m.Used, m.Reserved = pooled.Capacity, pooled.Used, pooled.Reserved
	// Split the pool over the home locations by the heads each holds.
	kvh := h.sh.KVHeads
	m.Locations = make([]KVLocation, h.J)
	for j := range h.J {
		label := "DIMM" + strconv.Itoa(j)
		if h.host {
			label = "host"
		}
		share := func(x int) int { return x * h.kvHeadOn[j] / kvh }
		loc := KVLocation{Label: label, Capacity: share(pooled.Capacity), Used: share(pooled.Used), Reserved: share(pooled.Reserved)}
		for _, hd := range pooled.Locations[0].Holders {
			hd.KBlocks, hd.VBlocks, hd.Reserved = share(hd.KBlocks), share(hd.VBlocks), share(hd.Reserved)
			if hd.KBlocks+hd.VBlocks > 0 {
				loc.Holders = append(loc.Holders, hd)
			}
		}
		m.Locations[j] = loc
	}
	if m.Capacity > 0 {
		snap.Metrics.KVUtil = float64(m.Used) / float64(m.Capacity)
	}
}

func (h *hermes) locNames() []string {
	out := []string{"GPU"}
	if h.host {
		return append(out, "CPU")
	}
	for j := range h.J {
		out = append(out, "DIMM"+strconv.Itoa(j))
	}
	return out
}

func (h *hermes) observeNeurons(snap *Snapshot) {
	nr := &snap.Neurons
	nr.Reason = ""
	nr.Locations = h.locNames()
	st := &nr.Stats
	st.Token = h.tokens
	st.Window = h.hc.Policy.Window
	if st.Window > 0 && h.tokens > 0 {
		st.WindowPos = (h.tokens-1)%st.Window + 1
	}
	st.Promoted, st.PromotedMB = h.promoted, h.promotedB/1e6
	st.Remapped, st.RemappedMB = h.remapped, h.remappedB/1e6
	st.RemapBefore = append([]int32(nil), h.zBefore...)
	st.RemapAfter = append([]int32(nil), h.zAfter...)
	st.HomeLoadMB = make([]float64, h.J)
	for j, v := range h.coldBytes {
		st.HomeLoadMB[j] = v / 1e6
	}
	st.HotMB = h.hotBytes / 1e6
	st.BudgetMB = h.budget / 1e6
	if h.ns == nil {
		st.Dense = true
		nr.Blocks = make([]NeuronBlock, 0, len(h.dense))
		for b, onGPU := range h.dense {
			n, by, kind := h.nQKV, h.bQKV, "QKV"
			if b%2 == kindMLP {
				n, by, kind = h.nMLP, h.bMLP, "MLP"
			}
			nb := NeuronBlock{Layer: b / 2, Kind: kind, Neurons: n, NeuronBytes: int(by), Computed: make([]int32, 1+h.J), Active: int32(n), Predicted: int32(n)}
			if onGPU {
				nb.GPUSlots = n
				nb.Computed[0] = int32(n)
			} else {
				for j := range h.J {
					nb.Computed[1+j] = int32(n / h.J)
				}
			}
			nr.Blocks = append(nr.Blocks, nb)
		}
		st.GPUCoverage = h.hotBytes / max(1, h.hotBytes+h.sumCold())
		st.Accuracy, st.Recall, st.Precision = 1, 1, 1
		st.Similarity = [3]float64{1, 1, 1}
		return
	}
	neuronSnapshot(nr, h.ns, nr.Locations, h.cfg.Recycle)
}

// neuronSnapshot fills the per-block bins and the predictor and trace statistics of the
// neuron view from the machinery's last pass over every block.
func neuronSnapshot(nr *Neurons, ns *neuronSim, locs []string, recycle bool) {
	nr.Reason = ""
	nr.Locations = locs
	st := &nr.Stats
	nr.BinsPerBlock = len(ns.kinds[kindMLP].binP)
	reuse := recycle && cap(nr.Blocks) >= len(ns.blocks)
	if !reuse {
		nr.Blocks = make([]NeuronBlock, len(ns.blocks))
	}
	nr.Blocks = nr.Blocks[:len(ns.blocks)]
	var act, pred, fp, fn, tot [2]int64
	var actBy, gpuBy float64
	var corrN, corrA [3]int64
	var hotAct, allAct float64
	for i, b := range ns.blocks {
		nb := &nr.Blocks[i]
		kind := "QKV"
		if b.kind == kindMLP {
			kind = "MLP"
		}
		bins, comp, placed, binPlaced := nb.Bins, nb.Computed, nb.Placed, nb.BinPlaced
		if !reuse || len(bins) != len(b.bins) || len(comp) != len(b.comp) || len(binPlaced) != len(b.binLoc) {
			bins = make([]NeuronBin, len(b.bins))
			comp = make([]int32, len(b.comp))
			placed = make([]int32, len(b.comp))
			binPlaced = make([]uint16, len(b.binLoc))
		}
		copy(bins, b.bins)
		copy(binPlaced, b.binLoc)
		clear(placed)
		locs := len(b.comp)
		for k, v := range b.binLoc {
			placed[k%locs] += int32(v)
		}
		var prom, rem int32
		bl := b.kind0.binLo
		for k := range bins {
			bins[k].Freq = b.kind0.binP[k]
			bins[k].State = b.binState(int(bl[k]), int(bl[k+1]))
			prom += int32(bins[k].Promoted)
			rem += int32(bins[k].Remapped)
		}
		copy(comp, b.comp)
		*nb = NeuronBlock{Layer: b.layer, Kind: kind, Neurons: b.n, NeuronBytes: int(b.bytes), GPUSlots: b.slot, Computed: comp,
			Active: b.act, Predicted: b.pred, FP: b.fp, FN: b.fn, Promoted: prom, Remapped: rem, Bins: bins, Placed: placed, BinPlaced: binPlaced}
		k := b.kind
		act[k] += int64(b.act)
		pred[k] += int64(b.pred)
		fp[k] += int64(b.fp)
		fn[k] += int64(b.fn)
		tot[k] += int64(b.n)
		actBy += float64(b.act) * b.bytes
		gpuBy += float64(b.actGPU) * b.bytes
		for s := range 3 {
			corrN[s] += int64(b.corrN[s])
			corrA[s] += int64(b.corrA[s])
		}
		// Activations on the top hot fraction of neurons by offline rank.
		cut := ns.sp.HotFrac * float64(b.n)
		for bi, bn := range bins {
			if b.kind != kindMLP {
				break // the 20/80 split is the MLP's (§III-A); QKV inputs fire at ~50%
			}
			a := float64(bn.Active)
			allAct += a
			lo, hi := float64(b.kind0.binLo[bi]), float64(b.kind0.binLo[bi+1])
			switch {
			case hi <= cut:
				hotAct += a
			case lo < cut:
				hotAct += a * (cut - lo) / (hi - lo)
			}
		}
	}
	var A, P, FP, FN, N int64
	for k := range 2 {
		A += act[k]
		P += pred[k]
		FP += fp[k]
		FN += fn[k]
		N += tot[k]
	}
	tp := P - FP
	st.Accuracy = 1 - float64(FP+FN)/float64(max(1, N))
	st.Recall = float64(tp) / float64(max(1, A))
	st.Precision = float64(tp) / float64(max(1, P))
	st.QKVActive = float64(act[kindQKV]) / float64(max(1, tot[kindQKV]))
	st.MLPActive = float64(act[kindMLP]) / float64(max(1, tot[kindMLP]))
	st.GPUCoverage = gpuBy / max(1, actBy)
	st.Churn = float64(ns.churn) / float64(max(1, ns.hotN))
	st.Similarity = ns.sim
	st.LayerCorr = float64(corrA[2]) / float64(max(1, corrN[2]))
	st.OneParent = float64(corrA[1]) / float64(max(1, corrN[1]))
	st.HotShare = hotAct / max(1, allAct)
	st.Alpha = [2]float64{ns.kinds[0].alpha, ns.kinds[1].alpha}
}

func (h *hermes) sumCold() float64 {
	var s float64
	for _, v := range h.coldBytes {
		s += v
	}
	return s
}
