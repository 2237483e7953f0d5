// Package presets holds pimtui's embedded preset systems and catalogues of models,
// datasets and GPUs (TOML), and turns a preset plus command-line overrides into a
// sim.Config. Decoding is strict: an unknown key, a wrong type or a value out of range is
// an error that names the file, line and column. The embedded lessons load here too;
// running what presets declare and lessons claim is package presets/experiment.
package presets

// File is one preset file. Struct tags give each key's TOML name, its allowed range
// (min/max) or values (enum), and a one-line meaning (doc) that `presets show` and error
// messages use; a section's systems tag names the systems that need it, every key
// included. Units are in the key names.
type File struct {
	Name        string       `toml:"name" doc:"preset name"`
	Extends     string       `toml:"extends,omitempty" doc:"the embedded preset this one takes every key from, but its name, description and expectations; the file sets only what differs"`
	Description string       `toml:"description" doc:"one-line description"`
	Family      string       `toml:"family" doc:"preset family (the paper)"`
	System      string       `toml:"system" doc:"planner: neupims (NPU + HBM-PIM family), gpu (GPU-only serving), …"`
	Paper       string       `toml:"paper" doc:"the paper the preset follows"`
	Model       ModelSec     `toml:"model"`
	Workload    WorkSec      `toml:"workload"`
	NPU         *NPUSec      `toml:"npu" systems:"neupims"`
	Memory      *MemSec      `toml:"memory" systems:"neupims"`
	PIM         *PIMSec      `toml:"pim" systems:"neupims"`
	Scheduler   *SchedSec    `toml:"scheduler" systems:"neupims"`
	GPU         *GPUSec      `toml:"gpu" systems:"gpu"`
	HB          *HBSec       `toml:"hb" systems:"helios"`
	NMP         *NMPSec      `toml:"nmp" systems:"gpu-nmp"`
	Cluster     *ClusterSec  `toml:"cluster" systems:"helios,gpu-nmp"`
	KVCache     *KVCacheSec  `toml:"kvcache" systems:"helios,gpu-nmp"`
	LoLPIM      *LoLPIMSec   `toml:"lolpim" systems:"lolpim"`
	AiM         *AiMSec      `toml:"aim" systems:"lolpim"`
	L3          *L3Sec       `toml:"l3" systems:"l3"`
	Platform    *PlatformSec `toml:"platform" systems:"hermes,offload"`
	NDP         *NDPSec      `toml:"ndp" systems:"hermes"`
	Sparsity    *SparsitySec `toml:"sparsity" systems:"hermes,offload"`
	Hermes      *HermesSec   `toml:"hermes" systems:"hermes"`
	Offload     *OffloadSec  `toml:"offload" systems:"offload"`
	Expect      []Expect     `toml:"expect"`
	// Shared names the keys (or whole tables) that every preset of the family holds at the
	// same value: the hardware and the calibration knobs a baseline shares with its system.
	// A family's own preset declares them; a test checks the others.
	Shared []string `toml:"shared"`

	// tpSet and ppSet record model.tp and model.pp set by an override, which a later
	// change of model keeps.
	tpSet, ppSet bool
}

// ModelSec picks a catalogue model and how it is split over devices.
type ModelSec struct {
	Name           string `toml:"name" doc:"model name from the catalogue (pimtui presets models)"`
	TP             int    `toml:"tp" min:"1" max:"64" doc:"tensor-parallel degree (devices per layer)"`
	PP             int    `toml:"pp" min:"1" max:"64" doc:"pipeline-parallel degree (layer groups)"`
	PrecisionBytes int    `toml:"precision_bytes" min:"1" max:"4" doc:"bytes per weight and KV element (2 = FP16)"`
	// Split is the paper's split per model: another model (--model, --set model.name)
	// takes its split from here unless model.tp or model.pp is set too.
	Split []Split `toml:"split" doc:"the paper's tp and pp per model"`
}

// Split is the tensor- and pipeline-parallel degrees a paper runs one model at.
type Split struct {
	Model string `toml:"model" doc:"model name from the catalogue"`
	TP    int    `toml:"tp" min:"1" max:"64" doc:"tensor-parallel degree"`
	PP    int    `toml:"pp" min:"1" max:"64" doc:"pipeline-parallel degree"`
}

// SplitOf is the paper's split of model, if the preset names one.
func (m ModelSec) SplitOf(model string) (Split, bool) {
	for _, s := range m.Split {
		if s.Model == model {
			return s, true
		}
	}
	return Split{}, false
}

// WorkSec is the request stream.
type WorkSec struct {
	Dataset   string  `toml:"dataset" doc:"length distribution from the catalogue"`
	Requests  int     `toml:"requests" min:"1" max:"10000000" doc:"requests to serve"`
	Batch     int     `toml:"batch" min:"1" max:"65536" doc:"most requests decoding at once"`
	Arrival   string  `toml:"arrival" enum:"closed,poisson" doc:"closed: all requests at t=0, batch kept full; poisson: random arrivals at rate_per_s"`
	RatePerS  float64 `toml:"rate_per_s" min:"0" max:"1e7" doc:"Poisson arrival rate in requests/s"`
	Prefill   string  `toml:"prefill" enum:"run,skip" doc:"run prompts before decode, or start with the input already in the KV cache"`
	KVPolicy  string  `toml:"kv_policy" enum:"paged,reserve" doc:"paged: KV blocks taken as sequences grow, preempting when full (vLLM); reserve: full length reserved at admission"`
	InputLen  int     `toml:"input_len" min:"0" max:"16777216" doc:"fixed input length in tokens (0: from the dataset)"`
	OutputLen int     `toml:"output_len" min:"0" max:"16777216" doc:"fixed output length in tokens (0: from the dataset)"`
	Seed      int64   `toml:"seed" min:"0" max:"9223372036854775807" doc:"random seed of the workload"`
	Steps     int     `toml:"steps" min:"0" max:"100000000" doc:"stop after this many iterations (0: when every request is done)"`
	Warmup    int     `toml:"warmup" min:"0" max:"100000000" doc:"iterations left out of the metrics"`
	OpenAt    int     `toml:"open_at" min:"0" max:"100000000" doc:"the iteration the explorer opens at, where the regime of interest begins (0: the first); headless runs start at the first"`
}

// NPUSec is the NeuPIMs NPU.
type NPUSec struct {
	SystolicArrays   int     `toml:"systolic_arrays" min:"1" max:"1024" doc:"systolic arrays per chip"`
	SARows           int     `toml:"sa_rows" min:"1" max:"4096" doc:"rows of one systolic array"`
	SACols           int     `toml:"sa_cols" min:"1" max:"4096" doc:"columns of one systolic array"`
	VectorUnits      int     `toml:"vector_units" min:"1" max:"1024" doc:"vector units per chip"`
	VectorWidth      int     `toml:"vector_width" min:"2" max:"65536" doc:"lanes of one vector unit (at least 2: its add and compare trees reduce a slice to one)"`
	ClockGHz         float64 `toml:"clock_ghz" min:"0.01" max:"10" doc:"NPU clock in GHz"`
	MemoryEfficiency float64 `toml:"memory_efficiency" min:"0.01" max:"1" doc:"fraction of the peak bandwidth a weight stream reaches"`
	SRAMKiB          int     `toml:"sram_kib" min:"1" max:"16777216" doc:"scratchpad in KiB; a GEMM is cut into tiles that fit half of it"`
	PreloadOverlap   bool    `toml:"preload_overlap" doc:"a weight preload of the systolic arrays starts while the previous instruction streams (false: after it drains)"`
}

// MemSec is the DRAM/HBM organisation.
type MemSec struct {
	Channels          int       `toml:"channels" min:"1" max:"4096" doc:"memory channels per device"`
	BankGroups        int       `toml:"bank_groups" min:"1" max:"64" doc:"bank groups per channel"`
	BanksPerChannel   int       `toml:"banks_per_channel" min:"1" max:"1024" doc:"banks per channel"`
	RowsPerBank       int       `toml:"rows_per_bank" min:"1" max:"16777216" doc:"rows per bank"`
	PageBytes         int       `toml:"page_bytes" min:"32" max:"65536" doc:"row-buffer (page) size in bytes"`
	BusBits           int       `toml:"bus_bits" min:"1" max:"4096" doc:"data bus width per channel in bits"`
	ClockGHz          float64   `toml:"clock_ghz" min:"0.01" max:"10" doc:"memory clock in GHz (tCK = 1/clock)"`
	TransfersPerClock int       `toml:"transfers_per_clock" min:"1" max:"16" doc:"data transfers per clock (2 = double data rate)"`
	Timing            TimingSec `toml:"timing"`
}

// TimingSec is the DRAM timing in memory-clock cycles.
type TimingSec struct {
	RP   int `toml:"t_rp" min:"0" max:"100000" doc:"row precharge, cycles"`
	RCD  int `toml:"t_rcd" min:"0" max:"100000" doc:"activate to read/write, cycles"`
	RAS  int `toml:"t_ras" min:"0" max:"100000" doc:"activate to precharge, cycles"`
	RRDL int `toml:"t_rrd_l" min:"0" max:"100000" doc:"activate to activate, same bank group, cycles"`
	WR   int `toml:"t_wr" min:"0" max:"100000" doc:"write recovery, cycles"`
	CCDS int `toml:"t_ccd_s" min:"0" max:"100000" doc:"column to column, other bank group, cycles"`
	CCDL int `toml:"t_ccd_l" min:"0" max:"100000" doc:"column to column, same bank group, cycles"`
	REFI int `toml:"t_refi" min:"0" max:"1000000" doc:"refresh interval, cycles"`
	RFC  int `toml:"t_rfc" min:"0" max:"100000" doc:"refresh cycle time, cycles"`
	FAW  int `toml:"t_faw" min:"0" max:"100000" doc:"four-activate window, cycles"`
}

// PIMSec is the processing in memory.
type PIMSec struct {
	Enabled            bool `toml:"enabled" doc:"attention runs in the memory's PIM units (false: on the NPU)"`
	DualRowBuffer      bool `toml:"dual_row_buffer" doc:"NeuPIMs dual row buffers (false: blocked single-row-buffer PIM)"`
	TileCycles         int  `toml:"tile_cycles" min:"1" max:"1000000" doc:"L_tile: PIM GEMV latency of one tile, memory cycles"`
	GWriteCycles       int  `toml:"gwrite_cycles" min:"0" max:"1000000" doc:"L_GWRITE: global-buffer load latency, memory cycles"`
	MultipliersPerBank int  `toml:"multipliers_per_bank" min:"1" max:"4096" doc:"multipliers per bank: elements one COMP takes from each bank's row"`
	CompCycles         int  `toml:"comp_cycles" min:"0" max:"1000" doc:"memory cycles between two COMPs of a PIM GEMV (0: every tile costs tile_cycles, as Algorithm 1 charges)"`
	MinComps           int  `toml:"min_comps" min:"0" max:"1000" doc:"COMP slots a PIM GEMV takes at least (the adder tree's pipeline fill)"`
}

// SchedSec holds the scheduling switches.
type SchedSec struct {
	SubBatchInterleaving bool   `toml:"sub_batch_interleaving" doc:"split the batch in two and overlap NPU GEMMs with PIM attention (Algorithm 3, A–F stages)"`
	SBIMinBatch          int    `toml:"sbi_min_batch" min:"2" max:"65536" doc:"smallest batch that uses sub-batch interleaving"`
	ChannelAlloc         string `toml:"channel_alloc" enum:"greedy_min_load,round_robin" doc:"how new requests get a PIM channel (Algorithm 2 or round robin)"`
}

// GPUSec picks a catalogue GPU and its serving software's figures.
type GPUSec struct {
	Name              string  `toml:"name" doc:"GPU from the catalogue"`
	ComputeEfficiency float64 `toml:"compute_efficiency" min:"0.01" max:"1" doc:"fraction of peak FLOP/s a GEMM reaches (calibration knob)"`
	MemoryEfficiency  float64 `toml:"memory_efficiency" min:"0.01" max:"1" doc:"fraction of peak bandwidth a streaming kernel reaches"`
	MemoryUtilization float64 `toml:"memory_utilization" min:"0.01" max:"1" doc:"fraction of GPU memory the serving engine may use"`
	KVBlockTokens     int     `toml:"kv_block_tokens" min:"1" max:"4096" doc:"tokens per paged KV block"`
	LaunchOverheadUs  float64 `toml:"launch_overhead_us" min:"0" max:"10000" doc:"per-kernel launch overhead in µs"`
	GPUsPerNode       int     `toml:"gpus_per_node" min:"1" max:"64" doc:"GPUs sharing a node: a tensor-parallel split over more crosses node links"`
	IntraNodeGBps     float64 `toml:"intra_node_gbps" min:"0" max:"100000" doc:"link between the GPUs of a node, per GPU and direction, GB/s (0: its all-reduces are not charged)"`
	NodeLinkGBps      float64 `toml:"node_link_gbps" min:"0" max:"100000" doc:"each node's link to the other nodes, GB/s (0: its all-reduces are not charged)"`
}

// Expect is a paper result the preset is expected to reproduce: the ratio of this
// preset's metric to the baseline preset's, averaged over a grid of conditions, or the
// metric's value itself. Each is measured as the paper measured it (Method) and scored by
// the one rule of the experiment runner (presets/experiment/score.go).
type Expect struct {
	ID     string  `toml:"id" doc:"short name of the experiment"`
	Claim  string  `toml:"claim" doc:"what the paper states"`
	Source string  `toml:"source" doc:"where the paper states it"`
	Metric string  `toml:"metric" doc:"the compared metric: throughput_tok_s, mean_batch or utilization.GROUP"`
	Versus string  `toml:"versus" doc:"baseline preset"`
	Ratio  float64 `toml:"ratio" min:"0" max:"1e6" doc:"the paper's ratio"`
	Value  float64 `toml:"value" min:"0" max:"1e12" doc:"without versus: the paper's absolute value of the metric, averaged over the grid"`
	// Method is how the paper measured, and so how each grid point runs: "steady" warms a
	// closed loop, its batch kept full, for Warmup iterations and measures the next Steps;
	// "whole" serves Requests requests from the first admission to the last token and
	// divides every output token by the whole time.
	Method string `toml:"method" enum:"steady,whole" doc:"how the paper measured: steady (closed loop kept full, warm-up, then steps measured) or whole (every request end to end)"`
	// MethodNote says where the paper (or its notes) states the method, or that it does not
	// and which reading is the closest.
	MethodNote string `toml:"method_note" doc:"where the paper states how it measured, or the closest reading where it does not"`
	Steps      int    `toml:"steps" min:"0" max:"100000" doc:"steady: iterations measured after the warm-up"`
	Warmup     int    `toml:"warmup" min:"0" max:"100000" doc:"steady: warm-up iterations, long enough for the mean live length to settle"`
	Grid       Grid   `toml:"grid"`
	// Reduced, when set, says how the grid is smaller than the paper's and why.
	Reduced string `toml:"reduced" doc:"how the grid is smaller than the paper's, and why"`
	// Reproduced says whether pimtui's mechanistic model reaches the paper's figure by the
	// rule; where it does not, Gap explains why, and the tests check that the declaration
	// stays true either way.
	Reproduced bool   `toml:"reproduced" doc:"whether pimtui reaches the paper's figure by the rule"`
	Gap        string `toml:"gap" doc:"why the paper's figure is not reached, where it is not: the mechanism or the missing fact, with numbers"`
	// BestOf names further baseline presets: at each grid point the ratio is taken over
	// the best (highest metric) of versus and these, as "speedup over the best baseline".
	BestOf []string `toml:"best_of" doc:"further baselines; each grid point compares against the best of versus and these"`
	Mean   string   `toml:"mean" doc:"how the ratios over the grid average: arithmetic (default) or geometric; max for an \"up to\" claim"`
	// Requests is how many requests each whole run serves (0: one batch).
	Requests int `toml:"requests" doc:"whole: requests per run (0: one batch, as many as the grid's batch)"`
}

// Target is the paper's figure an expectation is checked against: the ratio, or the
// value of an absolute expectation.
func (e Expect) Target() float64 {
	if e.Versus == "" {
		return e.Value
	}
	return e.Ratio
}

// Grid is the cross product of conditions an expectation averages over.
type Grid struct {
	Model   []string `toml:"model" doc:"models"`
	TP      []int    `toml:"tp" doc:"tensor parallelism of each model (same order; default: each preset keeps its own)"`
	PP      []int    `toml:"pp" doc:"pipeline parallelism of each model (same order; default: each preset keeps its own)"`
	Dataset []string `toml:"dataset" doc:"datasets"`
	Batch   []int    `toml:"batch" doc:"batch sizes"`
	// ModelMaxBatch caps each model's batches (same order as model), and ModelDataset gives
	// each model its own datasets (replacing dataset), where a paper runs models at
	// different batch and context limits.
	ModelMaxBatch []int      `toml:"model_max_batch" doc:"largest batch of each model (same order): larger batches of the grid run at it"`
	ModelDataset  [][]string `toml:"model_dataset" doc:"datasets of each model (same order; replaces dataset)"`
}
