package sim

// Systems the engine can plan.
const (
	SystemNeuPIMs = "neupims" // NPU + HBM-PIM and its baselines (naive NPU+PIM, NPU-only)
	SystemGPU     = "gpu"     // GPU-only serving
)

// Arrival processes.
const (
	ArrivalClosed  = "closed"  // every request is there at time 0; the batch is kept full
	ArrivalPoisson = "poisson" // exponential inter-arrival times at Rate requests/s
)

// KV-cache policies.
const (
	KVPaged   = "paged"   // blocks taken as sequences grow; preempt when full (vLLM)
	KVReserve = "reserve" // a request's full length reserved at admission; no preemption
)

// Prefill modes.
const (
	PrefillRun  = "run"  // admitted requests run their prompt before decoding
	PrefillSkip = "skip" // requests start decode with their input already in the KV cache
)

// Config is everything an Engine needs, as plain data. The presets package builds it from
// TOML; tests build it directly.
type Config struct {
	Preset      string
	Description string
	Family      string
	System      string

	Model     Model
	TP, PP    int
	Precision int // bytes per element

	Workload  Workload
	NPU       NPU
	Memory    DRAM
	PIM       PIM
	Scheduler Scheduler
	GPU       GPU
	HeLioS    HeLioSConfig // HeLioS family: HB-Device, its A100-hosted baselines, cluster and KV policy
	Hermes    HermesConfig // Hermes family: consumer GPU + NDP-DIMMs, hot/cold neurons, offloading baselines
	LoLPIM    LoLPIMConfig // LoL-PIM family: multi-node AiM PIM, TP/PP, ITPP, DPA, ping-pong, GPU+PIM
	L3        L3Config     // L3 family: GPUs + DIMM-PIM host memory, ranksets, sub-batch interleaving, and its baselines

	// OpenAt is the iteration the explorer opens at, where the preset's regime of interest
	// begins (StepTo); headless runs start at the first.
	OpenAt int

	// HistoryCap is how many past snapshots the engine keeps for stepping back (0: none).
	HistoryCap int
	// HistoryBytes, when set, also bounds the memory the history holds: beyond it the
	// oldest iterations go first (the newest two are always kept).
	HistoryBytes int
	// Recycle lets each Step reuse the previous snapshot's timeline buffers. Headless runs
	// that read every snapshot before the next Step set it to spare the allocator; it
	// cannot be combined with history.
	Recycle bool
	// Jump lets the engine advance a stretch of iterations between two events at once
	// (sim/jump.go) when the caller reads only the run's result and each snapshot's
	// counters, not its timeline, grid or maps: headless whole runs. A Step may then pass
	// many iterations, its snapshot the last of them with only its counters filled; a
	// stepped iteration's snapshot lists no requests and no KV holders either.
	// Results equal stepping every iteration within 1e-9 relative.
	Jump bool
}

// Workload is the request stream.
type Workload struct {
	Dataset   Dataset
	Requests  int // total requests to serve
	MaxBatch  int // most requests decoding at once
	Arrival   string
	Rate      float64 // requests/s for Poisson arrivals
	Prefill   string
	KVPolicy  string
	InputLen  int // fixed input length (0: from the dataset)
	OutputLen int // fixed output length (0: from the dataset)
	Trace     []TraceRequest
	Seed      uint64
	Steps     int // stop after this many iterations (0: when every request is done)
	Warmup    int // iterations left out of the metrics while a closed batch mixes
}

// NPU is the NeuPIMs NPU: systolic arrays for GEMMs and vector units for the rest.
type NPU struct {
	SystolicArrays   int
	SARows, SACols   int
	VectorUnits      int
	VectorWidth      int
	ClockGHz         float64
	MemoryEfficiency float64 // fraction of peak bandwidth a weight stream reaches
	SRAMKiB          int     // scratchpad; GEMMs are cut into tiles that fit half of it (npu_gemm.go)
	PreloadOverlap   bool    // a weight preload follows the previous instruction's start (true) or waits for it to drain
}

// PeakFLOPS is the NPU's dense FLOP rate: 2 × arrays × rows × cols × clock.
func (n NPU) PeakFLOPS() float64 {
	return 2 * float64(n.SystolicArrays*n.SARows*n.SACols) * n.ClockGHz * 1e9
}

// PIM is the processing-in-memory side of an HBM-PIM device.
type PIM struct {
	Enabled            bool
	DualRowBuffer      bool // NeuPIMs' MEM + PIM row buffers; false = blocked Newton-style PIM
	TileCycles         int
	GWriteCycles       int
	MultipliersPerBank int
	CompCycles         int // cycles between two COMPs of a PIM_GEMV (0: every tile costs TileCycles)
	MinComps           int // COMP slots a PIM_GEMV takes at least (the adder tree's pipeline fill)
}

// Scheduler holds the policy switches of a system.
type Scheduler struct {
	SubBatchInterleaving bool
	SBIMinBatch          int
	ChannelAlloc         ChannelAlloc
}

// GPU is a GPU-only serving device and its software.
type GPU struct {
	Name              string
	Display           string
	PeakTFLOPS        float64
	BandwidthGBps     float64
	CapacityGB        float64
	LaunchOverheadUs  float64
	ComputeEfficiency float64 // fraction of PeakTFLOPS a GEMM reaches (at the power cap where one is given)
	MemoryEfficiency  float64 // fraction of the bandwidth a GEMM's tiled weight stream reaches
	SweepEfficiency   float64 // fraction of the bandwidth a sequential stream (KV cache, activations) reaches
	MemoryUtilization float64 // fraction of capacity the serving engine may use
	// The power roof (roofline.go): the card's power cap, what it draws idle and the energy
	// of a bit moved from DRAM. Zero: no power figures, no power roof.
	PowerCapW, IdlePowerW, MemoryPJPerBit float64
	// Decode attention's latency beyond its kernel launch: the floor no decode attention
	// goes under, and the latency it adds to its KV stream (gpu.go). Zero: none.
	AttnFloorUs, AttnLatencyUs float64
	KVBlockTokens              int // paged KV block size in tokens
	// Links a tensor-parallel split crosses (GPU-only serving): GPUsPerNode GPUs share a
	// node and reach each other at IntraNodeGBps; nodes talk over one NodeLinkGBps link
	// each. A zero bandwidth charges no collective on that link.
	GPUsPerNode   int
	IntraNodeGBps float64
	NodeLinkGBps  float64
}

// shard is the per-device slice of the model.
func (c *Config) shard() Shard {
	return Shard{Model: c.Model, TP: max(1, c.TP), PP: max(1, c.PP), Precision: max(1, c.Precision)}
}
