package sim

import (
	"errors"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// gpt3_7b and testNeuPIMs mirror the embedded neupims preset so sim tests stand alone.
var gpt3_7b = Model{Name: "gpt3-7b", Display: "GPT3-7B", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, FFN: "gelu", DFFN: 16384, Vocab: 50304}

func testNeuPIMs() Config {
	return Config{
		Preset: "neupims", System: SystemNeuPIMs, Model: gpt3_7b, TP: 4, PP: 1, Precision: 2,
		Workload: Workload{
			Dataset:  Dataset{Name: "sharegpt", InMean: 80.3, InStd: 227, InMin: 1, InMax: 2047, OutMean: 295, OutStd: 150, OutMin: 1, OutMax: 2047, MaxSeqLen: 2048},
			Requests: 1000, MaxBatch: 256, Arrival: ArrivalClosed, Prefill: PrefillSkip, Seed: 1,
		},
		NPU: NPU{SystolicArrays: 8, SARows: 128, SACols: 128, VectorUnits: 8, VectorWidth: 128, ClockGHz: 1, MemoryEfficiency: 1, SRAMKiB: 134218, PreloadOverlap: true},
		Memory: DRAM{Channels: 32, BankGroups: 8, BanksPerChannel: 32, RowsPerBank: 32768, PageBytes: 1024, BusBits: 128, ClockGHz: 1, TransfersPerClk: 2,
			Timing: DRAMTiming{RP: 14, RCD: 14, RAS: 34, RRDL: 6, WR: 16, CCDS: 1, CCDL: 2, REFI: 3900, RFC: 260, FAW: 30}},
		PIM:       PIM{Enabled: true, DualRowBuffer: true, TileCycles: 184, GWriteCycles: 100, MultipliersPerBank: 16, CompCycles: 2, MinComps: 6},
		Scheduler: Scheduler{SubBatchInterleaving: true, SBIMinBatch: 256, ChannelAlloc: GreedyMinLoad},
	}
}

// eachStep steps e to the end of its run, calling fn with every snapshot.
func eachStep(t testing.TB, e *Engine, fn func(*Snapshot)) {
	t.Helper()
	for {
		s, err := e.Step()
		if errors.Is(err, ErrDone) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(s)
	}
}

// firstStep builds an engine for c and runs its first iteration.
func firstStep(t *testing.T, c Config) (*Engine, *Snapshot) {
	t.Helper()
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Step()
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}

// firstSnap is the snapshot of c's first iteration.
func firstSnap(t *testing.T, c Config) *Snapshot {
	t.Helper()
	_, s := firstStep(t, c)
	return s
}

func runAll(t testing.TB, c Config) (*Engine, Result) {
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	eachStep(t, e, func(*Snapshot) {})
	return e, e.Result()
}

func TestEngineCompletesEveryRequest(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Requests = 300
	_, r := runAll(t, c)
	if r.RequestsCompleted != 300 {
		t.Fatalf("completed %d of 300", r.RequestsCompleted)
	}
	if r.ThroughputTokS <= 0 || r.SimTimeS <= 0 {
		t.Fatalf("throughput %v over %v s", r.ThroughputTokS, r.SimTimeS)
	}
	for k, v := range r.Utilization {
		if v < 0 || v > 1 {
			t.Errorf("utilization %s = %v outside [0,1]", k, v)
		}
	}
}

func TestEveryTokenIsGenerated(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Requests = 200
	c.Workload.MaxBatch = 64
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	seen := map[int]int{}
	eachStep(t, e, func(s *Snapshot) {
		if s.Batch > 64 {
			t.Fatalf("batch %d above the limit", s.Batch)
		}
		for _, r := range s.Requests {
			if r.Status == Done && seen[r.ID] == 0 {
				seen[r.ID] = r.OutputLen
				want += r.OutputLen
				if r.Generated != r.OutputLen {
					t.Fatalf("request %d done with %d of %d tokens", r.ID, r.Generated, r.OutputLen)
				}
			}
		}
	})
	r := e.Result()
	if r.RequestsCompleted != 200 {
		t.Fatalf("completed %d", r.RequestsCompleted)
	}
	if e.last.KV.Used != 0 || e.last.KV.Reserved != 0 {
		t.Fatalf("KV not returned at the end: used %d reserved %d", e.last.KV.Used, e.last.KV.Reserved)
	}
}

// steppedWithHistory is a small NeuPIMs engine keeping histCap snapshots, stepped n
// times, with the snapshots it returned.
func steppedWithHistory(t *testing.T, histCap, n int) (*Engine, []*Snapshot) {
	t.Helper()
	c := testNeuPIMs()
	c.Workload.Requests = 50
	c.Workload.MaxBatch = 16
	c.HistoryCap = histCap
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var snaps []*Snapshot
	for range n {
		s, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	return e, snaps
}

func TestStepBackReplaysHistory(t *testing.T) {
	e, snaps := steppedWithHistory(t, 8, 5)
	if b := e.Back(); !reflect.DeepEqual(b, snaps[3]) {
		t.Fatalf("back gave step %d, want 4 as it was", b.Step)
	}
	if b := e.Back(); !reflect.DeepEqual(b, snaps[2]) || e.Last() != b {
		t.Fatalf("second back gave step %d, want 3 as it was", b.Step)
	}
	if s, _ := e.Step(); !reflect.DeepEqual(s, snaps[3]) {
		t.Fatal("forward after back did not replay the history")
	}
	s, _ := e.Step()
	if s != snaps[4] {
		t.Fatal("replay did not return to the head")
	}
	if s, _ = e.Step(); s.Step != 6 {
		t.Fatalf("after the head, step %d, want 6", s.Step)
	}
}

// History lists the kept snapshots, at most the cap, oldest first, and reading it does not
// move the position Back and Step replay from.
func TestHistoryIsReadOnly(t *testing.T) {
	e, snaps := steppedWithHistory(t, 4, 6)
	e.Back()
	h := e.History()
	if h.Len() != 4 || h.Step(0) != 3 || !reflect.DeepEqual(h.Snapshot(0), snaps[2]) || !reflect.DeepEqual(h.Snapshot(3), snaps[5]) {
		t.Fatalf("history %d snapshots from step %d, want steps 3–6 as they were", h.Len(), h.Step(0))
	}
	if e.Last().Step != 5 {
		t.Fatalf("reading the history moved the position to step %d", e.Last().Step)
	}
	if s, _ := e.Step(); s != snaps[5] {
		t.Fatal("after History, forward did not replay the kept step 6")
	}
	e.Step()
	if h.Len() != 4 || h.Step(0) != 3 {
		t.Fatal("stepping on changed a history already returned")
	}
}

// A memory budget keeps fewer iterations, oldest dropped first, but never fewer than two.
func TestHistoryBudget(t *testing.T) {
	e, _ := steppedWithHistory(t, 8, 8)
	full := e.histBytes
	per := full / 8
	c := testNeuPIMs()
	c.Workload.Requests, c.Workload.MaxBatch = 50, 16
	for _, tc := range []struct{ budget, want int }{{full, 8}, {3*per + per/2, 3}, {1, 2}} {
		c.HistoryCap, c.HistoryBytes = 8, tc.budget
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for range 8 {
			if _, err := e.Step(); err != nil {
				t.Fatal(err)
			}
		}
		if h := e.History(); h.Len() != tc.want || h.Step(h.Len()-1) != 8 {
			t.Errorf("budget %d bytes (%d per iteration): kept %d iterations up to step %d, want %d up to step 8",
				tc.budget, per, h.Len(), h.Step(h.Len()-1), tc.want)
		}
		if e.histBytes > max(tc.budget, 2*per+per/2) {
			t.Errorf("budget %d bytes: the history holds %d", tc.budget, e.histBytes)
		}
	}
}

func TestDeterministic(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Requests = 100
	_, a := runAll(t, c)
	_, b := runAll(t, c)
	if a.ThroughputTokS != b.ThroughputTokS || a.SimTimeS != b.SimTimeS || a.Iterations != b.Iterations {
		t.Fatalf("same seed, different runs: %+v vs %+v", a, b)
	}
}

// Sub-batch interleaving follows the A–F schedule: 2 + 2(N−1) + 2 stages, with the PIM idle
// in A and F and both sub-batches present.
func TestSBIStageSchedule(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 300, 50
	c.Workload.Requests = 256
	e, _ := New(c)
	s, err := e.Step()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(s.Timeline.Stages), 2+2*31+2; got != want {
		t.Fatalf("%d stages, want %d", got, want)
	}
	if s.Timeline.Stages[0].Name != "A" || s.Timeline.Stages[len(s.Timeline.Stages)-1].Name != "F" {
		t.Fatalf("stages %v", s.Timeline.Stages)
	}
	subs := map[int]bool{}
	for _, sp := range s.Timeline.Spans {
		subs[sp.SubBatch] = true
		if sp.Stage == 0 && sp.Lane >= lanePIM0 {
			t.Fatalf("PIM busy in stage A: %+v", sp)
		}
	}
	if !subs[1] || !subs[2] || subs[0] {
		t.Fatalf("sub-batches seen %v", subs)
	}
	// Spans on one lane never overlap.
	last := map[int]Time{}
	for _, sp := range s.Timeline.Spans {
		if sp.Start < last[sp.Lane] {
			t.Fatalf("overlap on lane %d at %v", sp.Lane, sp.Start)
		}
		last[sp.Lane] = sp.End()
	}
}

// With the same hardware, each NeuPIMs mechanism can only help on a long-context batch.
func TestMechanismsOrder(t *testing.T) {
	thr := func(edit func(*Config)) float64 {
		c := testNeuPIMs()
		c.Workload.InputLen, c.Workload.OutputLen = 600, 64
		c.Workload.Requests, c.Workload.MaxBatch = 256, 256
		c.Workload.Steps = 40
		edit(&c)
		_, r := runAll(t, c)
		return r.ThroughputTokS
	}
	naive := thr(func(c *Config) {
		c.PIM.DualRowBuffer, c.Scheduler.SubBatchInterleaving, c.Scheduler.ChannelAlloc = false, false, RoundRobin
	})
	drb := thr(func(c *Config) { c.Scheduler.SubBatchInterleaving, c.Scheduler.ChannelAlloc = false, RoundRobin })
	full := thr(func(c *Config) {})
	npuOnly := thr(func(c *Config) { c.PIM.Enabled, c.Scheduler.SubBatchInterleaving = false, false })
	if !(naive <= drb && drb < full) {
		t.Fatalf("naive %.0f, +DRB %.0f, NeuPIMs %.0f: each mechanism should help", naive, drb, full)
	}
	if !(npuOnly < naive) {
		t.Fatalf("NPU-only %.0f should trail naive NPU+PIM %.0f at 664-token contexts", npuOnly, naive)
	}
}

func TestPoissonArrivalsWait(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Arrival, c.Workload.Rate = ArrivalPoisson, 50
	c.Workload.Requests = 30
	e, r := runAll(t, c)
	if r.RequestsCompleted != 30 {
		t.Fatalf("completed %d", r.RequestsCompleted)
	}
	// 30 arrivals at 50/s span about 0.6 s of simulated time.
	if r.SimTimeS < 0.2 {
		t.Fatalf("sim time %.3f s too short for Poisson arrivals", r.SimTimeS)
	}
	_ = e
}

func TestPrefillRunGivesFirstToken(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Prefill = PrefillRun
	c.Workload.InputLen, c.Workload.OutputLen = 100, 3
	c.Workload.Requests, c.Workload.MaxBatch = 8, 8
	e, _ := New(c)
	s, _ := e.Step()
	if s.Prefills != 8 || s.Batch != 0 || s.Tokens != 8 {
		t.Fatalf("first step: %d prefills, batch %d, %d tokens", s.Prefills, s.Batch, s.Tokens)
	}
	s, _ = e.Step()
	if s.Batch != 8 {
		t.Fatalf("second step batch %d, want 8", s.Batch)
	}
	_, r := runAll(t, c)
	if r.TokensGenerated != 24 {
		t.Fatalf("tokens %d, want 24", r.TokensGenerated)
	}
}

// Under the reserve policy KV capacity limits admission from the first step; under the
// paged policy every request is admitted and the youngest are preempted as they grow.
func TestCapacityLimitsAdmission(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 200, 1800
	c.Workload.Requests, c.Workload.MaxBatch = 2048, 512
	c.Workload.KVPolicy = KVReserve
	e, s := firstStep(t, c)
	if s.Batch >= 512 || s.Batch == 0 || s.Queue == 0 {
		t.Fatalf("reserve: batch %d, queue %d: capacity should limit admission", s.Batch, s.Queue)
	}
	c.Workload.KVPolicy = KVPaged
	c.Workload.Steps = 1500
	e, _ = New(c)
	first, _ := e.Step()
	if first.Batch != 512 {
		t.Fatalf("paged: first batch %d, want 512", first.Batch)
	}
	for {
		s, err := e.Step()
		if err != nil {
			break
		}
		if s.Metrics.KVUtil > 1 || s.KV.Used > s.KV.Capacity {
			t.Fatalf("KV over capacity at step %d: %d of %d", s.Step, s.KV.Used, s.KV.Capacity)
		}
	}
	if r := e.Result(); r.Preemptions == 0 {
		t.Fatal("paged: no preemption although the batch outgrew the memory")
	}
}

func TestImpossibleConfigsAreErrors(t *testing.T) {
	c := testNeuPIMs()
	c.Model.Layers, c.Model.DModel, c.Model.Heads, c.Model.KVHeads = 96, 12288, 96, 96
	c.TP = 1
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "raise tp or pp") {
		t.Fatalf("got %v", err)
	}
	c = testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 5_000_000, 1
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "request 1 (5000000 input + 1 output tokens) can never run") {
		t.Fatalf("got %v", err)
	}
}

// Memory stays flat over a long run once the history is full: 100,000 iterations.
func TestMemoryBoundedOverLongRun(t *testing.T) {
	if quick() {
		t.Skip("long run skipped in -short mode")
	}
	c := testNeuPIMs()
	c.Workload.MaxBatch, c.Workload.Requests = 16, 10_000_000
	c.Workload.InputLen, c.Workload.OutputLen = 64, 32
	c.Model.Layers = 4
	c.HistoryCap = 64
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var at10k uint64
	for i := 1; i <= 100_000; i++ {
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
		if i == 10_000 {
			at10k = heap()
		}
	}
	if end := heap(); end > at10k+4<<20 {
		t.Fatalf("heap grew from %d to %d bytes between 10k and 100k steps", at10k, end)
	}
}

// A batch is a cap: admission takes what the KV memory holds and the rest wait, and the
// run says so; it never refuses the batch.
func TestBatchBeyondMemoryIsACap(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.MaxBatch = 60000
	c.Workload.Requests = 60000
	c.Workload.InputLen, c.Workload.OutputLen = 1000, 10
	c.Workload.Steps = 3
	e, err := New(c)
	if err != nil {
		t.Fatalf("a batch beyond memory refused: %v", err)
	}
	var s *Snapshot
	for range 3 {
		if s, err = e.Step(); err != nil {
			t.Fatal(err)
		}
	}
	peak, byKV := e.BatchCap()
	if !byKV || peak >= 60000 || peak < 1 || s.Batch != peak || s.Queue == 0 {
		t.Fatalf("peak %d (by KV %v), batch %d, queue %d: want the KV memory to cap the batch and the rest to wait", peak, byKV, s.Batch, s.Queue)
	}
	if r := e.Result(); r.PeakBatch != peak || r.QueuePeak == 0 {
		t.Fatalf("result: peak_batch %d, queue_peak %d", r.PeakBatch, r.QueuePeak)
	}
	for _, row := range s.Requests {
		if row.Status == Waiting && row.Loc >= 0 {
			t.Fatalf("waiting request %d has a KV location", row.ID)
		}
	}
}

// The one refusal: a request of the workload that cannot run alone in the empty memory,
// named with its lengths, what it needs, what the memory holds and what to change; it is
// found among the requests actually drawn, not from the dataset's longest possible one.
func TestRequestThatNeverFitsIsRefused(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 40000, 10
	_, err := New(c)
	var u *UnfitError
	if !errors.As(err, &u) || u.ID != 1 || u.Input != 40000 {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"request 1 (40000 input + 10 output tokens) can never run", "needs", "holds", "after GPT3-7B's weights", "raise model.tp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	// A trace row that never fits is refused by its row number.
	c = testNeuPIMs()
	c.Workload.Trace = []TraceRequest{{0, 10, 10}, {0, 10, 10}, {0, 40000, 1}}
	if _, err := New(c); !errors.As(err, &u) || u.ID != 3 {
		t.Fatalf("trace: got %v", err)
	}
	// The dataset allows sequences the memory cannot hold, but none of these draws is one.
	c = testNeuPIMs()
	c.Workload.Dataset.OutMax, c.Workload.Dataset.MaxSeqLen = 1<<20, 0
	c.Workload.Requests = 50
	if _, err := New(c); err != nil {
		t.Fatalf("refused for a length the dataset allows but no request has: %v", err)
	}
}

// A request the engine did not check ahead is refused when it is drawn.
func TestUnfitRequestBeyondThePrescanIsRefusedWhenDrawn(t *testing.T) {
	defer func(n int) { prescan = n }(prescan)
	prescan = 1
	c := testNeuPIMs()
	c.Workload.Arrival = ArrivalPoisson
	c.Workload.Trace = []TraceRequest{{0, 10, 2}, {FromSeconds(1), 10, 2}, {FromSeconds(2), 40000, 1}}
	e, err := New(c)
	if err != nil {
		t.Fatalf("refused before the run: %v", err)
	}
	var u *UnfitError
	for range 5 {
		if _, err = e.Step(); err != nil {
			break
		}
	}
	if !errors.As(err, &u) || u.ID != 3 {
		t.Fatalf("got %v, want request 3 refused when drawn", err)
	}
}

// StepTo leaves the engine where the next step is the one asked for, the iterations
// before it in the history, and stops quietly at the end of a run.
func TestStepTo(t *testing.T) {
	c := testNeuPIMs()
	c.HistoryCap = 8
	c.Workload.Requests, c.Workload.MaxBatch = 20, 8
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.StepTo(30); err != nil {
		t.Fatal(err)
	}
	s, err := e.Step()
	if err != nil || s.Step != 30 || e.History().Len() != 8 {
		t.Fatalf("step %v, history %d, err %v", s, e.History().Len(), err)
	}
	if err := e.StepTo(1 << 30); err != nil || e.Done() {
		t.Fatalf("past the end: %v, done %v", err, e.Done())
	}
	last, err := e.Step()
	if err != nil || !e.Done() || last.Done != c.Workload.Requests {
		t.Fatalf("after StepTo past the end, the next step is %v (err %v), done %v; want the run's last iteration", last, err, e.Done())
	}
}

// checkNear reports got when it is further than rel (relative) from want.
func checkNear(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %g, want %g (±%g%%)", what, got, want, 100*rel)
	}
}

// A closed loop's requests all arrive at time 0, so every request not yet in the batch
// waits, from the first iteration on, however far ahead the engine has created them.
func TestClosedLoopQueueCountsEveryWaitingRequest(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Arrival = ArrivalClosed
	c.Workload.Requests, c.Workload.MaxBatch = 100, 8
	c.Workload.InputLen, c.Workload.OutputLen = 16, 4
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	done := 0 // before the step: the queue is counted as the step admits
	for i := 1; i <= 6; i++ {
		s, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		if want := c.Workload.Requests - s.Batch - done; s.Queue != want {
			t.Fatalf("step %d: queue %d, want %d (100 requests, %d decoding, %d done before)", i, s.Queue, want, s.Batch, done)
		}
		done = s.Done
	}
	eachStep(t, e, func(*Snapshot) {})
	if r := e.Result(); r.QueuePeak != 92 {
		t.Fatalf("queue_peak %d, want 92", r.QueuePeak)
	}
}
