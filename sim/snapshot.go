package sim

// Snapshot is the immutable state of the system after one iteration: everything a view
// needs and nothing it must recompute (design §2.1). A Snapshot is never changed after
// Step returns it.
type Snapshot struct {
	Step     int  // 1-based iteration number
	Now      Time // simulated time at the end of the iteration
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

// Timeline is the iteration's schedule: lanes, spans and bubbles.
type Timeline struct {
	Lanes    []Lane
	Spans    []Span
	Bubbles  []Bubble
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
	PIM      []float64 // rows×cols: PIM compute busy fraction
	Mem      []float64 // rows×cols: memory-traffic busy fraction
	Owner    []int     // rows×cols: request whose work dominates the cell, -1 = none
	RowNotes []string  // per row: a short annotation (requests, Σ seq, load)
	Reason   string    // why the grid is empty, for systems without a bank model
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
}

// KVLocation is one place KV blocks live and who holds them.
type KVLocation struct {
	Label    string
	Capacity int
	Used     int
	Reserved int
	Holders  []KVHolder
}

// KVHolder is one request's blocks in one location.
type KVHolder struct {
	Request  int
	KBlocks  int
	VBlocks  int
	Reserved int     // blocks reserved for the request's full length (≥ K+V)
	Fill     float64 // live-token bytes / allocated block bytes
}

// Neurons is the hot/cold neuron partition (Hermes family); elsewhere Reason says why it
// does not apply.
type Neurons struct {
	Reason string
}

// Metrics are the figures of one iteration and the run so far.
type Metrics struct {
	IterTime      Time
	Throughput    float64            // tokens/s over the run so far (after warm-up)
	StepTokPerSec float64            // this iteration's tokens / iteration time
	Util          map[string]float64 // this iteration's utilisation per lane group
	Bubble        map[string]float64 // this iteration's idle fraction per lane group
	LoadImbalance float64            // max/mean load over locations this iteration (1 = even)
	KVUtil        float64            // used blocks / capacity
}
