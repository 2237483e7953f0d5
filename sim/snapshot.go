package sim

// Snapshot is the immutable state of the system after one iteration: everything a view
// needs and nothing it must recompute (docs/architecture.md). A Snapshot is never changed after
// Step returns it, unless the caller hands it back (Engine.Release).
type Snapshot struct {
	System   string // the engine's system (Config.System): what its figures measure (UtilMeasure)
	Step     int    // 1-based iteration number
	Now      Time   // simulated time at the end of the iteration
	IterTime Time
	Batch    int // requests decoding this iteration
	Prefills int // requests whose prompt ran this iteration
	Queue    int // requests waiting for admission
	Tokens   int // tokens generated this iteration
	Done     int // requests completed so far
	Total    int // requests in the workload

	Timeline Timeline
	Banks    BankGrid
	KV       KVMap
	Neurons  Neurons
	Metrics  Metrics
	Requests []RequestRow
}

// Timeline is the iteration's schedule: lanes, spans and bubbles, and its critical path:
// the spans, in time order, each of which started when the one before it ended, the last
// ending the iteration (see Schedule).
type Timeline struct {
	Lanes    []Lane
	Spans    []Span
	Bubbles  []Bubble
	Critical []int
	Makespan Time
	Layers   int // device-local decoder layers
	Stages   []StageMark
}

// StageMark is a named stage boundary of a staged schedule (NeuPIMs A–F).
type StageMark struct {
	Name  string
	Start Time
}

// BankGrid is the memory as a grid of cells: rows are channels (ranks, DIMMs, PEs,
// modules), columns are banks. Values are fractions of the iteration in [0, 1].
type BankGrid struct {
	RowKind  string // "channel"
	ColKind  string // "bank"
	Rows     int
	Cols     int
	ColGroup int       // columns per group (a bank group), 0 = no grouping
	PIM      []float64 // rows×cols: PIM compute busy fraction (of PIMWork, when set)
	Mem      []float64 // rows×cols: memory-traffic busy fraction
	Owner    []int     // rows×cols: request whose work dominates the cell, -1 = none
	RowNotes []string  // per row: a short annotation (requests, Σ seq, load)
	Reason   string    // why the grid is empty, for systems without a bank model
	// PIMWork, when set, is the one kind of work PIM counts, where the banks' compute
	// unit does other work too (HeLioS's PEs run the FC layers beside attention).
	PIMWork string
	// MeshRows×MeshCols, when set, arranges the rows as a mesh of processing elements in
	// row-major order (HeLioS's PE mesh). Dies, when set, splits each row's columns into
	// that many equal groups, one per stacked DRAM die, each a square partition of the
	// die's bank grid in row-major order, so a view can redraw a die's physical banks.
	MeshRows, MeshCols int
	Dies               int
	// RowLevels and ColLevels, when set, are the hierarchy the rows and the columns walk
	// through, outermost first: L3's columns are DIMMs × ranks × bank groups × banks. The
	// product of a list's sizes is Rows (Cols); row r is the mixed-radix number of its
	// members' indices.
	RowLevels, ColLevels []BankLevel
	// Units are the compute units beside the banks: one per group of a column level (L3's
	// rank PUs), one per row (a DIMM's NDP core) or one for the whole system (the GPU, a
	// NoC), with the share of the iteration each was busy.
	Units []BankUnit
}

// BankLevel is one level of the memory's hierarchy along a grid axis. Label prefixes a
// member's index wherever a view names it ("DIMM0", "ch3", "BG2"); N is how many members
// each member of the level above holds.
type BankLevel struct {
	Name, Label string
	N           int
}

// Where a BankUnit sits: UnitSystem, UnitRow, or the index of the column level each of
// whose groups holds one.
const (
	UnitSystem = -2
	UnitRow    = -1
)

// BankUnit is a compute unit of the memory system that is not a bank. Busy holds one
// share per unit: one for a system unit, Rows for a row unit, and Rows × the groups of
// its column level in each row (row-major) for a column-level unit.
type BankUnit struct {
	Name  string
	Level int
	Busy  []float64
}

// KVMap is where the KV cache lives.
type KVMap struct {
	Unit          string // what one block is, e.g. "PIM tile 32 KiB"
	LocKind       string // "channel", "HBM"
	BlockBytes    float64
	Locations     []KVLocation
	Capacity      int
	Used          int
	Reserved      int
	Fragmentation float64 // 1 − bytes of live tokens / bytes of allocated blocks
	// MeshRows×MeshCols, when set, arranges the locations as a mesh in row-major order.
	MeshRows, MeshCols int
}

// KVLocation is one place KV blocks live and who holds them.
type KVLocation struct {
	Label    string
	Capacity int
	Used     int
	Reserved int
	Holders  []KVHolder
	Note     string // a short annotation (e.g. HeLioS's T_sum, N_last, distance to the centre)
}

// KVHolder is one request's blocks in one location.
type KVHolder struct {
	Request  int
	KBlocks  int
	VBlocks  int
	Reserved int     // blocks reserved for the request's full length (≥ K+V)
	Fill     float64 // live-token bytes / allocated block bytes
	Last     int     // tokens in the request's last, partly filled block when it is here (0: none)
	// Pages, where the system tracks block addresses, are the physical blocks in the
	// request's virtual order (a Va2Pa table): the first KBlocks+VBlocks hold tokens, any
	// further ones are reserved. Shared with the engine; never modify.
	Pages []int32
}

// Neurons is the hot/cold neuron partition (Hermes family); elsewhere Reason says why it
// does not apply and the other fields are empty.
type Neurons struct {
	Reason string

	// Locations names where a neuron is computed: [0] is "GPU" (a hot-neuron copy), then
	// each home location ("DIMM0"… for Hermes, "CPU" for Hermes-host, "host" for an
	// offloading baseline). NeuronBlock.Computed is indexed the same way.
	Locations []string
	// Blocks are the sparse blocks in execution order: QKV(0), MLP(0), QKV(1), MLP(1), …
	Blocks []NeuronBlock
	// BinsPerBlock is how many bins each block's neurons are aggregated into (the MLP
	// blocks; a QKV block of fewer neurons may have as many).
	BinsPerBlock int
	Stats        NeuronStats
}

// NeuronBlock is one sparse block of one layer: the QKV input neurons (rows of the stacked
// [W_Q|W_K|W_V]) or the MLP neurons (FFN channels), binned in descending order of their
// offline activation frequency: bin 0 holds the hottest neurons.
type NeuronBlock struct {
	Layer       int
	Kind        string // "QKV" or "MLP"
	Neurons     int
	NeuronBytes int
	GPUSlots    int     // neurons with a copy in GPU memory (fixed per block by the offline mapping)
	Computed    []int32 // per location: neurons computed this token (predicted active)
	// This token, over the whole batch (a neuron counts once if any request activates it):
	Active    int32 // activated
	Predicted int32 // predicted active, hence computed
	FP, FN    int32 // predicted but inactive (wasted work) / active but not predicted (skipped)
	Promoted  int32 // copied to the GPU in the projection window before this block
	Remapped  int32 // moved to another DIMM by the window remapping before this block
	Bins      []NeuronBin
	// Placed counts the block's neurons per location (indexed as Locations): [0] the GPU
	// copies, then each home location's cold neurons, as the block ran this token (after
	// the promotions and remaps of the projection window before it; QKV(0)'s, made at the
	// end of the token, show on the next). BinPlaced is the same per bin, flattened: bin
	// k's count at location j is BinPlaced[k*len(Locations)+j] (it colours a bin by GPU or
	// DIMM k). Both are empty for a dense block (Hermes-base).
	Placed    []int32
	BinPlaced []uint16
}

// NeuronBin aggregates a contiguous range of a block's neurons in frequency order.
type NeuronBin struct {
	Neurons   uint16  // neurons in the bin
	GPU       uint16  // of them with a GPU copy
	Active    uint16  // activated this token
	Predicted uint16  // predicted active (computed)
	FP, FN    uint16  // false positives / false negatives this token
	Promoted  uint16  // copied to the GPU this token
	Remapped  uint16  // moved between DIMMs this token
	State     float32 // mean 4-bit predictor state after this token (0–15; hot above T_h = 10)
	Freq      float32 // mean offline activation frequency (the profile the mapping used)
}

// NeuronStats are the figures of the neuron partition this token.
type NeuronStats struct {
	Dense     bool // no activation sparsity (Hermes-base): whole blocks on the GPU or the DIMMs
	Token     int  // decode tokens generated by the current batch
	Window    int  // tokens per remapping window (0: no remapping)
	WindowPos int  // position of this token in its window, 1…Window
	// GPUCoverage is the share of this token's activated neuron bytes served by GPU copies.
	GPUCoverage float64
	// Predictor quality over every neuron of every block this token (union over the batch).
	Accuracy, Recall, Precision float64
	Promoted                    int     // neurons copied DIMM→GPU this token
	PromotedMB                  float64 // over PCIe, in the projection windows
	Remapped                    int     // cold neurons moved between DIMMs this token
	RemappedMB                  float64 // over the DIMM-links
	// RemapBefore and RemapAfter are the window activity Z_j per DIMM, summed over the
	// blocks remapped this token, before and after Algorithm 1 (ghost bars); zero when no
	// window closed.
	RemapBefore, RemapAfter []int32
	HomeLoadMB              []float64 // cold-neuron bytes each home location read this token
	Churn                   float64   // share of the offline hot set no longer on the GPU
	HotMB, BudgetMB         float64   // GPU memory holding hot neurons, and the budget S_GPU
	// Activation statistics of the synthetic trace, to compare with the paper's figures.
	QKVActive, MLPActive float64    // fraction of neurons active this token
	Similarity           [3]float64 // |A_t ∩ A_t−d| / |A_t| at d = 1, 10, 25, averaged over the batch's tokens so far (−1 until available)
	LayerCorr            float64    // P(active | both top-2 correlated parents active)
	OneParent            float64    // P(active | exactly one of them active)
	HotShare             float64    // share of this token's MLP activations on the hot fraction (offline rank)
	Alpha                [2]float64 // fitted power-law exponents of the QKV and MLP blocks
}

// Metrics are the figures of one iteration and the run so far.
type Metrics struct {
	IterTime      Time
	Throughput    float64            // tokens/s over the run so far (after warm-up)
	StepTokPerSec float64            // this iteration's tokens / iteration time
	Util          map[string]float64 // this iteration's utilisation per lane group; UtilMeasure says of what
	Bubble        map[string]float64 // this iteration's idle fraction per lane group
	// BubbleCause splits each group's idle fraction by cause (fractions of the group's
	// lane-time; see bubbleForensics for when the sum differs from Bubble).
	BubbleCause map[string]Causes
	// BubbleShare is the share of the lane-time the lanes could use that they sat idle:
	// idle time other than no-work / (lanes × iteration time − no-work time).
	BubbleShare   float64
	ShareByCause  Causes  // BubbleShare split by cause; sums to BubbleShare
	LoadImbalance float64 // max/mean load over locations this iteration (1 = even)
	KVUtil        float64 // used blocks / capacity
}

// systemUnit is a unit of the whole system busy for busy of an iteration t long.
func systemUnit(name string, busy Time, t float64) BankUnit {
	return BankUnit{Name: name, Level: UnitSystem, Busy: []float64{min(1, float64(busy)/max(1, t))}}
}
