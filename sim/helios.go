package sim

import (
	"errors"
	"fmt"
	"math"
)

// The HeLioS family ("Hardware-Software Co-design for 3D-DRAM-based LLM Serving
// Accelerator", Li, Yin et al., arXiv 2603.04797): decode on HB-Devices, each a logic die
// with a mesh of processing elements (PEs) under four hybrid-bonded DRAM dies, and the
// A100-hosted baselines the paper compares against. Prefill runs on A100 GPUs in a
// disaggregated cluster and streams each prompt's KV cache to the decode instance.
const (
	SystemHeLioS = "helios"  // HB-Device: PE mesh, tiled or non-tiled attention
	SystemGPUNMP = "gpu-nmp" // A100 GPUs, optionally with near-memory processing in their HBM cubes
)

// Attention flows on the HB-Device.
const (
	FlowTiled    = "tiled"     // HeLioS: Algorithm 1 on every PE, partials merged with Eq. 1-2
	FlowNonTiled = "non_tiled" // Stratum's flow: QKᵀ → full softmax → P·V within a fixed PE group
)

// Operator dataflows on the HB-Device: how FCs are partitioned over the PEs and which
// collectives join them.
const (
	DataflowMesh = "mesh" // HeLioS: FCs 2-D tiled, 1-D and 2-D collectives along the mesh axes (Figs. 11-14)
	DataflowRing = "ring" // Stratum's ring, a subset of the mesh (Sec. VI-A): FCs split over all PEs, ring collectives
)

// KV allocation policies of the HeLioS family.
const (
	AllocSpatial      = "spatial"       // HeLioS Algorithm 2: blocks over all PEs, CMPFull / CMLast
	AllocStaticModule = "static_module" // the baselines: each KV head pinned to one module, full context reserved
	AllocRoundRobin   = "round_robin"   // blocks dealt to PEs in turn (a teaching foil, not in the paper)
	AllocBalancedOnly = "balanced_only" // Algorithm 2 with only the T_sum comparison (an ablation, not in the paper)
)

// What the non-tiled flow computes over under a static reservation.
const (
	StaticWindow = "window" // the reserved context window, the GEMM shape the static partition fixes (HeLioS Fig. 4-a)
	StaticLive   = "live"   // only the request's live tokens (a smarter schedule, not the paper's baselines)
)

// Near-memory processing in the A100's HBM cubes.
const (
	NMPNone = "none" // plain GPU serving (SGLang + FlashInfer)
	NMPBank = "bank" // In-die NMP: a small FPU next to every bank (AttAcc-style)
	NMPCube = "cube" // Duplex: FPUs on each cube's logic die with extra TSV bandwidth
)

// HeLioSConfig is the HeLioS family's hardware and policy. HB describes the HB-Device
// (system "helios"), NMP the A100 host of the baselines (system "gpu-nmp"); Cluster and KV
// are shared.
type HeLioSConfig struct {
	HB      HBDevice
	NMP     NMPHost
	Cluster HeLioSCluster
	KV      HeLioSKV
}

// HBDevice is one HB-Device: a logic die with a Mesh×Mesh array of PEs under Dies DRAM
// dies of BankGrid×BankGrid banks; PE(x, y) owns the banks above it on every die.
type HBDevice struct {
	Mesh        int     // PEs per side
	Dies        int     // stacked DRAM dies
	BankGrid    int     // banks per side of one die
	BankMB      float64 // capacity of one bank, 10^6 bytes
	BankPins    int     // data pins per bank
	PinGbps     float64 // per-pin rate
	Channels    int     // DRAM channels; bandwidth scales with Channels/BaseChannels
	ClockGHz    float64
	MACsPerPE   int // MACs per cycle of one PE of the 4×4 design; other meshes keep the device total
	VectorLanes int // vector-unit lanes of one PE of the 4×4 design (softmax of the non-tiled flow)
	// ComputeBufferMB is a PE's compute buffer (Sec. III-B: 2.5 MB beside a 2.5 MB transfer
	// buffer): tiled attention works inside it; the non-tiled flow's score rows spill to
	// DRAM when a module's rows do not fit.
	ComputeBufferMB float64
	NoCLinkGBps     float64 // bandwidth of one mesh link per direction
	NoCHopNs        float64 // latency of one hop
	// RowBytes is a bank's row: a fetch of contiguous bytes from one bank opens one row for
	// each RowBytes of it. Opening one costs an activation (RowActivateNs, tRCD) and closing
	// it a precharge (RowPrechargeNs, tRP), during which the bank moves nothing: every bank
	// has its own I/O, so no other bank's transfer hides them (RowEff).
	RowBytes       float64
	RowActivateNs  float64
	RowPrechargeNs float64
	Flow           string // FlowTiled or FlowNonTiled
	Dataflow       string // DataflowMesh or DataflowRing
}

// BaseChannels is the paper's channel count, at which the banks deliver their full rate
// (HeLioS Sec. VI-G sweeps 4–64 around it).
const BaseChannels = 16

// MeshPEs is the number of PEs.
func (h HBDevice) MeshPEs() int { return h.Mesh * h.Mesh }

// BanksPerPE is the banks a PE owns over all dies: (BankGrid/Mesh)² per die.
func (h HBDevice) BanksPerPE() int {
	n := h.BankGrid / max(1, h.Mesh)
	return n * n * h.Dies
}

// PEBandwidth is a PE's peak DRAM bandwidth in bytes/s: banks × pins × rate, scaled by the
// channel count (HeLioS: 64 banks × 256 pins × 0.5 Gb/s = 1,024 GB/s).
func (h HBDevice) PEBandwidth() float64 {
	return float64(h.BanksPerPE()*h.BankPins) * h.PinGbps * 1e9 / 8 * float64(h.Channels) / BaseChannels
}

// BankRate is one bank's peak rate in bytes/s.
func (h HBDevice) BankRate() float64 { return h.PEBandwidth() / float64(max(1, h.BanksPerPE())) }

// RowEff is the share of a bank's rate a fetch of s contiguous bytes from it reaches: it
// moves s bytes at the bank's rate and opens ⌈s/RowBytes⌉ rows, each an activation and a
// precharge long. The same row model prices every layout: FC weight tiles, HeLioS' KV
// blocks, a static module's reserved window and the non-tiled flow's spilled scores.
func (h HBDevice) RowEff(s float64) float64 {
	if s <= 0 || h.RowBytes <= 0 {
		return 1
	}
	move := s / h.BankRate()
	open := math.Ceil(s/h.RowBytes-1e-9) * (h.RowActivateNs + h.RowPrechargeNs) * 1e-9
	return move / (move + open)
}

// PECapacity is a PE's DRAM in bytes.
func (h HBDevice) PECapacity() float64 { return float64(h.BanksPerPE()) * h.BankMB * 1e6 }

// PEFLOPS is a PE's peak FLOP rate: the 4×4 design's MACs × 16 spread over the mesh, × 2 × clock.
func (h HBDevice) PEFLOPS() float64 {
	return 2 * float64(h.MACsPerPE) * 16 / float64(h.MeshPEs()) * h.ClockGHz * 1e9
}

// PEVectorRate is a PE's vector-unit element rate per second.
func (h HBDevice) PEVectorRate() float64 {
	return float64(h.VectorLanes) * 16 / float64(h.MeshPEs()) * h.ClockGHz * 1e9
}

// PEBufferBytes is a PE's compute buffer, the 4×4 design's spread over the mesh.
func (h HBDevice) PEBufferBytes() float64 {
	return h.ComputeBufferMB * 1e6 * 16 / float64(h.MeshPEs())
}

// NMPHost is an A100 GPU whose HBM cubes may compute near memory.
type NMPHost struct {
	GPU  GPU
	Kind string // NMPNone, NMPBank or NMPCube
	// Cubes is the HBM cubes per GPU; each has an equal share of the GPU's bandwidth, its
	// external bandwidth.
	Cubes int
	// In-die NMP (AttAcc's bank-level PIM): the banks together deliver BankBWScale times
	// the cube's external bandwidth to their processing units, which do BankFLOPPerByte
	// FLOPs per byte a bank reads.
	BankBWScale     float64
	BankFLOPPerByte float64
	CubeFPUs        int     // Duplex: FPUs on a cube's logic die
	FPUMACs         int     // Duplex: MACs per FPU per cycle
	CubeClockGHz    float64 // Duplex
	CubeBWScale     float64 // Duplex: NMP bandwidth / the cube's external bandwidth
	// SoftmaxGFLOPS is a cube's softmax unit, which takes the score rows between the two
	// GEMMs of the non-tiled flow; a score costs SoftmaxFLOPs.
	SoftmaxGFLOPS    float64
	ExpertOffload    bool    // Duplex flow: low-intensity MoE experts run on the NMP, overlapped with the GPU
	KernelOverheadUs float64 // per GPU kernel
}

// SoftmaxFLOPs is the work of one score in a full softmax: its max, exponent, sum and
// normalisation (AttAcc's simulator counts 5, scale-snu/attacc_simulator src/model.py).
const SoftmaxFLOPs = 5

// CubeExternal is one cube's share of the GPU's bandwidth in bytes/s.
func (n NMPHost) CubeExternal() float64 {
	return n.GPU.BandwidthGBps * 1e9 / float64(max(1, n.Cubes))
}

// CubeFLOPS is one cube's NMP FLOP rate.
func (n NMPHost) CubeFLOPS() float64 {
	switch n.Kind {
	case NMPBank:
		return n.BankFLOPPerByte * n.CubeBandwidth()
	case NMPCube:
		return 2 * float64(n.CubeFPUs*n.FPUMACs) * n.CubeClockGHz * 1e9
	}
	return 0
}

// CubeBandwidth is one cube's NMP bandwidth in bytes/s.
func (n NMPHost) CubeBandwidth() float64 {
	switch n.Kind {
	case NMPBank:
		return n.BankBWScale * n.CubeExternal()
	case NMPCube:
		return n.CubeBWScale * n.CubeExternal()
	}
	return 0
}

// HeLioSCluster is what the HeLioS family shares: the node's links, the disaggregated
// prefill instance and the calibration knobs every device of the family uses.
type HeLioSCluster struct {
	EP              int     // expert parallelism (MoE models); experts are whole on each device
	NVLinkGBps      float64 // per device
	NVLinkLatencyUs float64 // per collective
	ComputeEff      float64 // fraction of peak FLOP/s a GEMM reaches (shared calibration knob)
	MemoryEff       float64 // fraction of peak bandwidth a stream reaches (shared calibration knob)
	PrefillGPU      GPU     // one GPU of the prefill instance
	PrefillGPUs     int     // GPUs of the prefill instance (tensor parallel)
	PCIeGBps        float64 // host → decode device
	NICGbps         float64 // per NIC
	NICs            int     // per node
}

// HeLioSKV is the KV-cache policy.
type HeLioSKV struct {
	Alloc               string // AllocSpatial, AllocStaticModule, AllocRoundRobin or AllocBalancedOnly
	BlockTokens         int    // tokens per block
	ModulePEs           int    // static_module on the HB-Device: PEs per module
	ContextTokens       int    // the context window the static policy reserves (0: the workload's longest sequence)
	StaticCompute       string // StaticWindow or StaticLive: what the non-tiled flow covers under the static policy
	TieTolerance        int    // Algorithm 2 extension: T_sum differences below this are ties (0: the paper)
	CapacityTokensPerPE int    // > 0: a PE (or cube) holds this many tokens of KV, for teaching examples
}

// heliosCheck validates what both HeLioS-family systems share.
func heliosCheck(c *Config) error {
	h := c.HeLioS
	w := c.Workload
	if w.Arrival == ArrivalPoisson && w.Trace == nil && (!(w.Rate > 0) || math.IsInf(w.Rate, 0)) {
		return fmt.Errorf("Poisson arrivals need a rate above 0 requests/s, got %g; e.g. --arrival poisson:10", w.Rate)
	}
	if h.KV.BlockTokens < 1 || h.KV.BlockTokens > 1<<16 {
		return fmt.Errorf("KV block size %d tokens is out of range; want 1 to 65536 (the paper sweeps 4-1024)", h.KV.BlockTokens)
	}
	if sc := h.KV.StaticCompute; sc != StaticWindow && sc != StaticLive {
		return fmt.Errorf("unknown static_compute %q; want %s (the reserved window, the paper's baselines) or %s (the live tokens)", sc, StaticWindow, StaticLive)
	}
	cl := h.Cluster
	if !(cl.NVLinkGBps > 0) || !(cl.ComputeEff > 0 && cl.ComputeEff <= 1) || !(cl.MemoryEff > 0 && cl.MemoryEff <= 1) {
		return errors.New("the cluster needs an NVLink bandwidth above 0 and compute and memory efficiencies in (0, 1]")
	}
	if c.Model.Experts > 0 {
		ep := max(1, cl.EP)
		if c.Model.Experts%ep != 0 {
			return fmt.Errorf("%s has %d experts, which ep=%d does not divide; pick a divisor of %d", c.Model.Display, c.Model.Experts, ep, c.Model.Experts)
		}
	}
	if w.Prefill == PrefillRun && (cl.PrefillGPUs < 1 || !(cl.PrefillGPU.PeakTFLOPS > 0) || !(cl.PrefillGPU.BandwidthGBps > 0)) {
		return errors.New("prefill runs on the prefill instance, which needs at least one GPU with a FLOP rate and a bandwidth")
	}
	return nil
}

// contextTokens is the context window a static reservation covers.
func (c *Config) contextTokens() int {
	if n := c.HeLioS.KV.ContextTokens; n > 0 {
		return n
	}
	return maxSeqLen(c)
}

// lineAllReduce is a 1-D all-reduce of S bytes per PE over a line of m PEs:
// 2(m−1)·α + 2·(m−1)/m·S/β (a ring bound; TidalMesh does no worse).
func lineAllReduce(m int, s float64, hop Time, bw float64) Time {
	if m <= 1 || s <= 0 {
		return 0
	}
	k := float64(m - 1)
	return Time(2*(m-1))*hop + FromSeconds(2*k/float64(m)*s/bw)
}

// lineAllGather is a 1-D all-gather (or reduce-scatter) that ends with S bytes per PE:
// (m−1)·α + (m−1)/m·S/β.
func lineAllGather(m int, s float64, hop Time, bw float64) Time {
	if m <= 1 || s <= 0 {
		return 0
	}
	k := float64(m - 1)
	return Time(m-1)*hop + FromSeconds(k/float64(m)*s/bw)
}

// ringAllReduce is an all-reduce of S bytes over n devices on a ring: 2·(n−1)/n·S/BW plus
// one latency per collective.
func ringAllReduce(n int, s, bw float64, lat Time) Time {
	if n <= 1 || s <= 0 {
		return 0
	}
	return lat + FromSeconds(2*float64(n-1)/float64(n)*s/bw)
}

// moe is the per-device expert work of one MoE layer under uniform routing with whole
// experts on each device (expert parallelism): every device holds every token after the
// attention all-reduce, runs the experts it owns on the tokens routed to them, and the
// outputs are summed by the same all-reduce a dense FFN ends with.
type moe struct {
	expertsDev int     // experts on one device
	touched    float64 // expected experts with at least one token
	tokens     float64 // expected (token, expert) pairs on the device
	params     float64 // parameters of one expert
}

// moeWork is the expected expert work of a batch of b tokens on one device.
func moeWork(sh Shard, ep, b int) moe {
	e := sh.Experts
	k := min(sh.TopK, e)
	ep = max(1, ep)
	m := moe{expertsDev: e / ep, params: sh.ffnMatrices() * float64(sh.DModel) * float64(sh.DFFN)}
	p := float64(k) / float64(e)
	m.touched = float64(m.expertsDev) * (1 - math.Pow(1-p, float64(b)))
	m.tokens = float64(b) * float64(k) / float64(ep)
	return m
}

// heliosWeights is the bytes of weights one device holds: TP-split attention, TP-split
// dense FFN or EP-split whole experts, plus its share of the embedding.
func heliosWeights(sh Shard, ep int) float64 {
	attn := sh.QKVParams() + sh.ProjParams()
	ffn := sh.FFNParams()
	if sh.Experts > 0 {
		m := moeWork(sh, ep, 1)
		ffn = float64(m.expertsDev) * m.params
		ffn += sh.ffnMatrices() * float64(sh.DModel) * float64(sh.SharedDFFN) / float64(sh.TP)
	}
	emb := float64(sh.Vocab) * float64(sh.DModel) / float64(sh.TP)
	return ((attn+ffn)*float64(sh.LayersDev()) + emb) * float64(sh.Precision)
}

// prefillInstance is the disaggregated prefill side: a tensor-parallel group of GPUs that
// runs one prompt at a time, first come first served, under the roofline, and streams each
// layer's KV cache to the decode devices as it is produced (NIC → host → PCIe). A request
// is ready to decode when its prefill ends and the part of the stream that could not
// overlap it has arrived.
type prefillInstance struct {
	dev    Device
	sh     Shard // the model as one prefill GPU holds it
	n      int
	nvBW   float64
	nvLat  Time
	stream float64 // bytes/s into one decode device
	kvTok  float64 // KV bytes per token on one decode device
	free   Time    // when the instance finishes its queue
	// the prompts in flight, for the timeline's prefill lanes
	jobs []prefillJob
}

type prefillJob struct {
	id                     int
	start, end, streamDone Time
}

func newPrefillInstance(c *Config, decodeKVPerToken float64) *prefillInstance {
	cl := c.HeLioS.Cluster
	g := cl.PrefillGPU
	sh := c.shard()
	sh.TP = max(1, cl.PrefillGPUs)
	sh.PP = 1
	p := &prefillInstance{
		dev:   Device{Name: g.Display, PeakFLOPS: g.PeakTFLOPS * 1e12, MemBandwidth: g.BandwidthGBps * 1e9, ComputeEff: cl.ComputeEff, MemoryEff: cl.MemoryEff},
		sh:    sh,
		n:     sh.TP,
		nvBW:  cl.NVLinkGBps * 1e9,
		nvLat: FromSeconds(cl.NVLinkLatencyUs * 1e-6),
		kvTok: decodeKVPerToken,
	}
	nic := cl.NICGbps * 1e9 / 8 * float64(max(1, cl.NICs)) / float64(max(1, c.TP))
	p.stream = cl.PCIeGBps * 1e9
	if nic > 0 && (p.stream <= 0 || nic < p.stream) {
		p.stream = nic
	}
	return p
}

// time is the prefill of n tokens: per layer, the GEMMs over all tokens and causal
// attention (QKᵀ and P·V over n²/2 pairs each) under the roofline, plus two all-reduces of
// the n tokens' hidden states.
func (p *prefillInstance) time(n int) Time {
	sh := p.sh
	tok := float64(n)
	var ffnFlops, ffnRead float64
	if sh.Experts > 0 {
		m := moeWork(sh, p.n, n)
		ffnFlops = m.tokens * m.params
		ffnRead = m.touched * m.params
	} else {
		ffnFlops, ffnRead = sh.FFNActive(n)
		ffnFlops *= tok
	}
	attn := 2 * float64(sh.HeadsDev()*sh.HeadDim) * tok * tok
	flops := 2*tok*(sh.QKVParams()+sh.ProjParams()) + 2*ffnFlops + attn
	bytes := (sh.QKVParams() + sh.ProjParams() + ffnRead) * float64(sh.Precision)
	ar := ringAllReduce(p.n, tok*float64(sh.DModel*sh.Precision), p.nvBW, p.nvLat)
	return Time(sh.LayersDev()) * (p.dev.Time(flops, bytes) + 2*ar)
}

// schedule queues r's prompt (its whole sequence, for a preempted request) at time at and
// returns when its KV cache is in the decode devices.
func (p *prefillInstance) schedule(r *Request, at Time) Time {
	start := max(at, p.free)
	run := p.time(r.SeqLen())
	end := start + run
	p.free = end
	done := end
	if p.stream > 0 {
		xfer := FromSeconds(float64(r.SeqLen()) * p.kvTok / p.stream)
		layers := Time(max(1, p.sh.LayersDev()))
		// layer-wise streaming overlaps the prefill except the last layer, or the
		// whole excess when the stream is slower than the prefill.
		done = end + max(xfer/layers, xfer-run)
	}
	p.jobs = append(p.jobs, prefillJob{id: r.ID, start: start, end: end, streamDone: done})
	return done
}

// window returns the jobs that overlap [from, to) and forgets those that ended before from.
func (p *prefillInstance) window(from, to Time) []prefillJob {
	keep := p.jobs[:0]
	for _, j := range p.jobs {
		if j.streamDone > from {
			keep = append(keep, j)
		}
	}
	clear(p.jobs[len(keep):])
	p.jobs = keep
	out := make([]prefillJob, 0, len(keep))
	for _, j := range keep {
		if j.start < to {
			out = append(out, j)
		}
	}
	return out
}
