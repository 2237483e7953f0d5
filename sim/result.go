package sim

import "sort"

// Result is the summary of a run; its JSON field names are a documented contract.
type Result struct {
	Preset            string             `json:"preset"`
	System            string             `json:"system"`
	Model             string             `json:"model"`
	Dataset           string             `json:"dataset"`
	TP                int                `json:"tp"`
	PP                int                `json:"pp"`
	Seed              uint64             `json:"seed"`
	MaxBatch          int                `json:"max_batch"`
	PeakBatch         int                `json:"peak_batch"`
	Requests          int                `json:"requests"`
	Iterations        int                `json:"iterations"`
	SimTimeS          float64            `json:"sim_time_s"`
	RequestsCompleted int                `json:"requests_completed"`
	Preemptions       int                `json:"preemptions"`
	TokensGenerated   int                `json:"tokens_generated"`
	ThroughputTokS    float64            `json:"throughput_tok_s"`
	MeanBatch         float64            `json:"mean_batch"`
	IterationMS       Dist3              `json:"iteration_ms"`
	TBTMS             Dist2              `json:"tbt_ms"`
	TTFTMS            Dist2              `json:"ttft_ms"`
	E2EMS             Dist2              `json:"e2e_ms"`
	QueuePeak         int                `json:"queue_peak"`
	Utilization       map[string]float64 `json:"utilization"`
	BubbleFraction    map[string]float64 `json:"bubble_fraction"`
	// BubbleByCause splits each group's bubble_fraction by cause (the BubbleCause names):
	// idle time of that cause / (lanes × time) over the measured iterations. The causes of
	// a group sum to its bubble_fraction, except where work on its own clock beside the
	// iteration (Schedule.AddAt: a disaggregated prefill instance, HeLioS' NoC transfers)
	// runs past an iteration's end: bubble_fraction counts that overhang as busy time and
	// lowers by overhang / (lanes × time), while no bubble lies beyond the end to split.
	BubbleByCause map[string]map[string]float64 `json:"bubble_by_cause"`
	KV            KVSummary                     `json:"kv"`
	LoadImbalance *float64                      `json:"load_imbalance"`
	// FLOPUtilization is the useful FLOPs of the measured iterations over the peak FLOP
	// rate of the system's compute units × measured time (null where a system gives none).
	FLOPUtilization *float64 `json:"flop_utilization"`
	EnergyJ         *float64 `json:"energy_j"`
}

// Dist3 is a mean and two percentiles in milliseconds.
type Dist3 struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
}

// Dist2 is two percentiles in milliseconds.
type Dist2 struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// KVSummary is the KV cache at its fullest.
type KVSummary struct {
	PeakBlocksUsed    int     `json:"peak_blocks_used"`
	PeakFragmentation float64 `json:"peak_fragmentation"`
	PeakUtilization   float64 `json:"peak_utilization"`
}

// Result summarises the measured iterations (those after warm-up).
func (e *Engine) Result() Result {
	st := &e.stats
	c := e.cfg
	r := Result{
		Preset: c.Preset, System: c.System, Model: c.Model.Name, Dataset: c.Workload.Dataset.Name,
		Seed: c.Workload.Seed, MaxBatch: c.Workload.MaxBatch, PeakBatch: e.peakBatch, Requests: c.Workload.Requests,
		Iterations: e.step, SimTimeS: e.now.Seconds(), RequestsCompleted: e.done, Preemptions: e.preempted, TokensGenerated: st.tokens,
		IterationMS: Dist3{Mean: st.iter.mean().Milliseconds(), P50: st.iter.quantile(0.5).Milliseconds(), P99: st.iter.quantile(0.99).Milliseconds()},
		TBTMS:       Dist2{P50: st.tbt.quantile(0.5).Milliseconds(), P99: st.tbt.quantile(0.99).Milliseconds()},
		TTFTMS:      Dist2{P50: st.ttft.quantile(0.5).Milliseconds(), P99: st.ttft.quantile(0.99).Milliseconds()},
		E2EMS:       Dist2{P50: st.e2e.quantile(0.5).Milliseconds(), P99: st.e2e.quantile(0.99).Milliseconds()},
		QueuePeak:   st.queuePeak,
		Utilization: map[string]float64{}, BubbleFraction: map[string]float64{},
		KV: KVSummary{PeakBlocksUsed: st.kvPeakUsed, PeakFragmentation: st.kvPeakFrag, PeakUtilization: st.kvPeakUtil},
	}
	r.TP, r.PP = e.Split()
	if c.Workload.InputLen > 0 || c.Workload.OutputLen > 0 {
		r.Dataset = "fixed"
	}
	if c.Workload.Trace != nil {
		r.Dataset = "trace"
	}
	if st.time > 0 {
		r.ThroughputTokS = float64(st.tokens) / st.time.Seconds()
	}
	if st.iters > 0 {
		r.MeanBatch = float64(st.batchSum) / float64(st.iters)
	}
	for _, k := range e.utilKeys {
		r.Utilization[k] = 0
		if st.time > 0 {
			r.Utilization[k] = st.util[k] / float64(st.time)
		}
	}
	keys := make([]string, 0, len(st.bubble))
	for k := range st.bubble {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	r.BubbleByCause = make(map[string]map[string]float64, len(keys))
	for _, k := range keys {
		r.BubbleFraction[k] = st.bubble[k] / float64(st.time)
		by := make(map[string]float64, NumCauses)
		c := st.cause[k]
		for i := range NumCauses {
			by[i.String()] = c[i] / float64(st.time)
		}
		r.BubbleByCause[k] = by
	}
	if st.imbalanceN > 0 {
		v := st.imbalance / float64(st.imbalanceN)
		r.LoadImbalance = &v
	}
	if e.peak > 0 && st.time > 0 {
		v := st.flops / (e.peak * st.time.Seconds())
		r.FLOPUtilization = &v
	}
	return r
}

// splitter is implemented by a system that splits the model over its devices by its own
// settings rather than model.tp and model.pp (LoL-PIM's modules).
type splitter interface {
	split() (tp, pp int)
}

// Split is the model's parallel split over the system's devices: tensor-parallel degree
// and pipeline stages.
func (e *Engine) Split() (tp, pp int) { return e.tp, e.pp }

// BatchCap reports the most requests the run admitted at once, and whether admission
// ever left a request waiting for KV space while the batch had room: the batch was then
// capped by the KV memory, not by workload.batch.
func (e *Engine) BatchCap() (peak int, byKV bool) { return e.peakBatch, e.kvCapped }
