package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// The idle time of each group splits by cause as fractions of its lane-time, and the
// bubble share leaves out the lane that had nothing to do.
func TestBubbleForensicsHandBuilt(t *testing.T) {
	lanes := []Lane{{Name: "ch0", Group: "pim"}, {Name: "ch1", Group: "pim"}, {Name: "NPU", Group: "npu"}, {Name: "prefill", Group: "prefill"}}
	s := NewSchedule(lanes, 8, 8)
	s.Add(Op{Name: "MHA", Lane: 0, Dur: 10})
	s.Add(Op{Name: "MHA", Lane: 1, Dur: 30})
	s.Add(Op{Name: "LN", Lane: 2, Dur: 5})
	T := s.Finish()
	by, share, byCause := bubbleForensics(s, T)
	// pim: ch0 idles 20 of 2×30 for imbalance; npu: 25 of 30 at the tail; prefill: no work.
	want := map[string]Causes{
		"pim":     {CauseImbalance: 20.0 / 60},
		"npu":     {CauseTail: 25.0 / 30},
		"prefill": {CauseNoWork: 1},
	}
	for g, w := range want {
		if by[g] != w {
			t.Errorf("%s: %v, want %v", g, by[g], w)
		}
	}
	groups := bubbleByGroup(s, T)
	for g, c := range by {
		if math.Abs(c.Sum()-groups[g]) > 1e-12 {
			t.Errorf("%s: causes sum to %v, idle fraction %v", g, c.Sum(), groups[g])
		}
	}
	// 45 idle of the 4×30 − 30 lane-time the lanes could use.
	if math.Abs(share-0.5) > 1e-12 || math.Abs(byCause[CauseImbalance]-20.0/90) > 1e-12 ||
		math.Abs(byCause[CauseTail]-25.0/90) > 1e-12 || byCause[CauseNoWork] != 0 {
		t.Fatalf("share %v by cause %v", share, byCause)
	}
}

// Work on its own clock that runs past the iteration is busy time for the idle fraction
// but leaves no bubble to split, so the causes exceed it by exactly the overhang.
func TestBubbleForensicsOverhang(t *testing.T) {
	s := NewSchedule([]Lane{{Name: "NPU", Group: "npu"}, {Name: "prefill", Group: "prefill"}}, 8, 8)
	s.Add(Op{Name: "QKV", Lane: 0, Dur: 40})
	s.AddAt(Op{Name: "prefill #1", Lane: 1, Dur: 30}, 20) // 10 past the end
	T := s.Finish()
	by, _, _ := bubbleForensics(s, T)
	idle := bubbleByGroup(s, T)["prefill"]
	if got, want := by["prefill"].Sum()-idle, 10.0/40; math.Abs(got-want) > 1e-12 {
		t.Fatalf("causes − idle fraction = %v, want the overhang %v", got, want)
	}
	if by["prefill"][CauseNoWork] != 20.0/40 {
		t.Fatalf("prefill by cause %v", by["prefill"])
	}
}

// A lane that runs nothing while admission leaves a request waiting for KV space is a
// capacity stall; while the batch is simply full it has no work.
func TestCapacityStall(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Prefill = PrefillRun
	c.Workload.InputLen, c.Workload.OutputLen = 200, 1800
	c.Workload.Requests, c.Workload.MaxBatch = 2048, 512
	c.Workload.KVPolicy = KVReserve
	causes := func(c Config) (Causes, *Snapshot) {
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		e.Step()
		s, err := e.Step() // nothing admitted: the prefill NPU runs nothing
		if err != nil {
			t.Fatal(err)
		}
		return s.Metrics.BubbleCause["prefill"], s
	}
	got, s := causes(c)
	if s.Batch >= 512 || s.Queue == 0 || s.Prefills != 0 {
		t.Fatalf("batch %d, queue %d, prefills %d: want a capacity-limited batch", s.Batch, s.Queue, s.Prefills)
	}
	if got[CauseCapacity] != 1 || s.Metrics.ShareByCause[CauseCapacity] <= 0 {
		t.Fatalf("prefill lane by cause %v, share by cause %v: want a capacity stall", got, s.Metrics.ShareByCause)
	}
	c.Workload.MaxBatch = 64 // the batch is full long before the KV cache
	got, s = causes(c)
	if s.Queue == 0 || got[CauseNoWork] != 1 || got[CauseCapacity] != 0 {
		t.Fatalf("queue %d, prefill lane by cause %v: want no work", s.Queue, got)
	}
}

// L3's adaptive scheduler leaves requests waiting by choice (it admits the prefills that
// fill the bubble): no capacity stall. Long prompts that fill the DIMMs are one.
func TestL3KVRefused(t *testing.T) {
	c := l3Small(testL3())
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	if len(e.queue) == 0 || e.sys.(*l3).kvRefused() {
		t.Fatalf("queue %d, refused %v: want requests waiting by choice", len(e.queue), e.sys.(*l3).kvRefused())
	}
	c = testL3()
	c.Model.Layers = 8
	c.Workload.Requests, c.Workload.Steps = 1000, 3
	c.Workload.InputLen, c.Workload.OutputLen = 20000, 100
	c.Workload.Prefill = PrefillSkip
	if e, err = New(c); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	if len(e.queue) == 0 || !e.sys.(*l3).kvRefused() {
		t.Fatalf("queue %d, refused %v: want a capacity refusal", len(e.queue), e.sys.(*l3).kvRefused())
	}
}

// Over a run the causes of each group sum to its bubble fraction (no NeuPIMs work runs on
// its own clock), and every cause is a key of every group.
func TestResultBubbleByCause(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Requests, c.Workload.MaxBatch = 64, 32
	_, r := runAll(t, c)
	if len(r.BubbleByCause) != len(r.BubbleFraction) {
		t.Fatalf("bubble_by_cause groups %v, bubble_fraction %v", r.BubbleByCause, r.BubbleFraction)
	}
	for g, f := range r.BubbleFraction {
		by := r.BubbleByCause[g]
		if len(by) != int(NumCauses) {
			t.Errorf("%s: %d causes, want %d: %v", g, len(by), NumCauses, by)
		}
		sum := 0.0
		for _, v := range by {
			sum += v
		}
		if math.Abs(sum-f) > 1e-9 {
			t.Errorf("%s: causes sum to %v, bubble_fraction %v", g, sum, f)
		}
	}
	b, err := json.Marshal(r)
	if err != nil || !bytes.Contains(b, []byte(`"bubble_by_cause":{"npu":{"barrier":`)) {
		t.Fatalf("JSON %s (%v)", b, err)
	}
}

// The trace marks the spans of the critical path and names each bubble's cause.
func TestTraceCriticalAndCauses(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Requests, c.Workload.MaxBatch = 16, 16
	s := stepN(t, c, 1)
	var buf bytes.Buffer
	tw := NewTraceWriter(&buf, "t")
	tw.Add(s)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	crit, bubbles := 0, 0
	for _, ev := range tr.TraceEvents {
		if ev.Ph == "X" && ev.Args["critical"] == true {
			crit++
		}
		if name, ok := strings.CutPrefix(ev.Name, "bubble: "); ok {
			bubbles++
			known := false
			for k := range NumCauses {
				known = known || name == k.String()
			}
			if !known {
				t.Errorf("bubble with unknown cause %q", name)
			}
		}
	}
	if crit == 0 || crit != len(s.Timeline.Critical) || bubbles != len(s.Timeline.Bubbles) {
		t.Fatalf("%d critical spans (path of %d), %d bubbles of %d", crit, len(s.Timeline.Critical), bubbles, len(s.Timeline.Bubbles))
	}
}
