package sim

// Systems of the Hermes family (Liu et al., "Make LLM Inference Affordable to Everyone:
// Augmenting GPU Memory with NDP-DIMM", HPCA 2025).
const (
	SystemHermes  = "hermes"  // consumer GPU + NDP-DIMMs (or the host CPU) with hot/cold neurons
	SystemOffload = "offload" // consumer GPU + host DRAM over PCIe: Accelerate, FlexGen, Deja Vu
)

// Hermes family switches.
const (
	ColdNDP  = "ndp"  // cold neurons computed by the NDP core of their home DIMM (Hermes)
	ColdHost = "host" // cold neurons computed by the host CPU from host DRAM (Hermes-host)

	MapperGreedy   = "greedy"   // ILP-equivalent greedy: hottest neurons first, water-filled per block
	MapperRandom   = "random"   // random GPU set and random home DIMMs (Hermes-random)
	MapperCapacity = "capacity" // PowerInfer's solver: the GPU memory filled with the most activated neurons

	LayoutLPT     = "lpt"     // cold neurons to the DIMM with the least activation mass so far
	LayoutChunked = "chunked" // neuron i of N to DIMM ⌊i·J/N⌋ by native index
	LayoutRandom  = "random"  // uniform random home DIMM

	PredictPaper  = "paper"  // 4-bit state + top-2 previous-block correlation (§IV-C)
	PredictOracle = "oracle" // the exact activated set (an upper bound for teaching)

	OverflowQueue = "queue" // promotions beyond a projection window's PCIe budget wait for the next window
	OverflowStall = "stall" // every promotion is copied at once; the MLP waits for the copy

	OffloadAccelerate = "accelerate" // whole layers resident or each module copied before it runs, no overlap
	OffloadFlexGen    = "flexgen"    // host tensors of the next layer loaded while this one computes
	OffloadDejaVu     = "dejavu"     // only predicted-active non-resident neurons are gathered and copied
)

// HermesConfig is a Hermes-family system: the platform (GPU, PCIe, host), the NDP-DIMMs,
// the activation-sparsity generator, the placement policy and, for the offloading
// baselines, the framework.
type HermesConfig struct {
	Platform HermesPlatform
	NDP      NDPDIMM
	Sparsity Sparsity
	Policy   HermesPolicy
	Offload  OffloadPolicy
}

// HermesPlatform is the consumer GPU, its PCIe link and the host CPU.
type HermesPlatform struct {
	GPU               string
	GPUDisplay        string
	GPUTFLOPS         float64 // dense FP16 tensor FLOP/s, in TFLOP/s
	GPUBandwidthGBps  float64
	GPUCapacityGB     float64
	GPUWeightGB       float64 // GPU memory for weights (and, offloading, KV); the rest is runtime
	ComputeEfficiency float64
	MemoryEfficiency  float64
	LaunchOverheadUs  float64 // per GPU kernel
	PCIeGBps          float64 // both directions together, as the paper counts PCIe 4.0 ×16
	PCIeEfficiency    float64 // share of one direction a DMA reaches, the same for every system
	PCIeLatencyUs     float64 // per transfer (the paper's T_sync latency part)
	HostGBps          float64 // host CPU memory bandwidth (Hermes-host)
	HostGFLOPS        float64 // host CPU FP16 GEMV compute
}

// PCIeBytesPerSec is what one transfer moves per second: one direction of the link
// (half the paper's 64 GB/s, which counts both) at the DMA efficiency every system on the
// link shares.
func (p HermesPlatform) PCIeBytesPerSec() float64 { return p.PCIeGBps / 2 * p.PCIeEfficiency * 1e9 }

// NDPDIMM is the DDR4 NDP-DIMM pool: organisation, timing, the per-DIMM GEMV core and the
// DIMM-links.
type NDPDIMM struct {
	DIMMs           int
	DIMMsPerChannel int
	CapacityGB      float64 // per DIMM
	Ranks           int     // per DIMM
	BankGroups      int     // per rank
	BanksPerGroup   int
	DataRateMTs     float64 // transfers per second per pin, millions (DDR4-3200: 3200)
	RankBusBytes    int     // data bus width of a rank in bytes (64 bits: 8)
	RowBytes        int     // one row across a rank's chips
	TCKns           float64
	Timing          NDPTiming
	RowMissPenalty  bool // charge tRP+tRCD per row streamed (no bank interleaving hides it)

	ClockGHz          float64
	Multipliers       int
	FP16PerMultiplier int // FP16 values one multiplier handles per operation (128 bit / 16)
	BitSerialCycles   int // cycles per bit-serial FP16 multiplication (one per significand bit)
	BufferKB          int
	ActivationUnits   int // exponent / adder / multiplier lanes of the activation unit

	LinkGBps     float64 // one DIMM-link, per direction of a pair
	LinkPJPerBit float64
}

// NDPTiming is Table II's DDR4 timing in DRAM clock cycles.
type NDPTiming struct {
	RC, RCD, CL, RP, BL, CCDS, CCDL, RRDS, RRDL, FAW int
}

// RankGBps is the peak bandwidth of one rank: data rate × bus width.
func (d NDPDIMM) RankGBps() float64 { return d.DataRateMTs * 1e6 * float64(d.RankBusBytes) / 1e9 }

// RowEfficiency is the fraction of a rank's peak bandwidth a row stream keeps when each
// row costs a precharge and an activate (tRP + tRCD) on top of its bursts: for DDR4-3200
// and an 8 KB row, 128 bursts of tBL = 4 cycles, 512/(512+48) = 0.914. Without the
// penalty it is 1.
func (d NDPDIMM) RowEfficiency() float64 {
	if !d.RowMissPenalty || d.RankBusBytes <= 0 || d.RowBytes <= 0 {
		return 1
	}
	burst := float64(d.RankBusBytes * 8) // BL8
	bursts := float64(d.RowBytes) / burst
	data := bursts * float64(d.Timing.BL)
	return data / (data + float64(d.Timing.RP+d.Timing.RCD))
}

// InternalGBps is one DIMM's internal bandwidth: its ranks stream in parallel into the
// centre buffer, each at the rank's peak times the row efficiency.
func (d NDPDIMM) InternalGBps() float64 {
	return float64(d.Ranks) * d.RankGBps() * d.RowEfficiency()
}

// GFLOPS is one NDP core's FP16 rate: multipliers × values per multiplier × clock /
// cycles per bit-serial multiplication, two FLOPs per multiply-accumulate. A bit-serial
// multiplier takes one cycle per bit of the multiplier's significand, 11 for FP16 (ten
// stored bits and the implicit one); the exponents add alongside.
func (d NDPDIMM) GFLOPS() float64 {
	if d.BitSerialCycles <= 0 {
		return 0
	}
	return 2 * float64(d.Multipliers*d.FP16PerMultiplier) * d.ClockGHz / float64(d.BitSerialCycles)
}

// Banks is the number of banks of one DIMM.
func (d NDPDIMM) Banks() int { return d.Ranks * d.BankGroups * d.BanksPerGroup }

// Sparsity is the synthetic activation generator of the Hermes family: per-block power-law
// neuron frequencies and a latent Gaussian per neuron and token (persistent per request,
// short-term AR(1) drift, slowly drifting co-activation clusters, correlation with two
// parents in the previous sparse block).
type Sparsity struct {
	Enabled    bool
	MLPActive  float64 // mean fraction of MLP neurons active per token
	QKVActive  float64 // mean fraction of QKV input neurons active per token
	HotFrac    float64 // the "hot" fraction of neurons …
	HotShare   float64 // … carries this share of activations (20/80)
	Phi        float64 // token-level AR(1) coefficient
	Beta       float64 // variance share persistent per request
	Gamma      float64 // variance share of the co-activation clusters
	Clusters   int     // clusters per block (contiguous native index ranges)
	PhiCluster float64 // cluster AR(1) coefficient
	Kappa      float64 // variance share inherited from the two parents
	Bins       int     // bins per block in the neuron view
}

// HermesPolicy holds the mechanisms the paper's ablation switches.
type HermesPolicy struct {
	Cold         string // ColdNDP or ColdHost
	Mapper       string // offline mapping
	Layout       string // initial home DIMMs of cold neurons
	Predictor    string
	Compare      string // ">=" or ">" in s1 + λ·s2 vs T
	Lambda       int
	Threshold    int
	StateInc     int
	StateDec     int
	HotThreshold int    // T_h: promote when the state exceeds it
	InitBins     string // "log" or "linear" quantisation of prefill frequencies into 16 states
	Adjust       bool   // online promotion of hot neurons to the GPU
	Overflow     string // OverflowQueue or OverflowStall
	Remap        bool   // window-based remapping of cold neurons across DIMMs (Algorithm 1)
	Window       int    // tokens per remapping window
}

// OffloadPolicy is an offloading baseline: which framework and its figures.
type OffloadPolicy struct {
	Framework      string
	PredictorShare float64 // Deja Vu: the MLP predictor's share of GPU compute time
}
