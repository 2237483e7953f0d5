package sim

import (
	"fmt"
	"reflect"
	"testing"
)

func TestScheduleDependenciesAndBubbles(t *testing.T) {
	s := NewSchedule([]Lane{{Name: "NPU", Group: "npu"}, {Name: "PIM", Group: "pim"}}, 8, 8)
	a := s.Add(Op{Name: "QKV", Lane: 0, Dur: 10})
	b := s.Add(Op{Name: "MHA", Lane: 1, Dur: 30}, a)
	c := s.Add(Op{Name: "FFN", Lane: 0, Dur: 5}, b)
	if got := s.Spans[b].Start; got != 10 {
		t.Fatalf("MHA starts at %d, want 10 (after QKV)", got)
	}
	if got := s.Spans[c].Start; got != 40 {
		t.Fatalf("FFN starts at %d, want 40 (after MHA)", got)
	}
	if ms := s.Finish(); ms != 45 {
		t.Fatalf("makespan %d, want 45", ms)
	}
	// NPU idles 10..40 waiting for MHA; PIM idles 0..10 waiting for QKV and 40..45 at the tail.
	want := []Bubble{
		{Lane: 1, Start: 0, Dur: 10, Cause: CauseDependency, Waited: a},
		{Lane: 0, Start: 10, Dur: 30, Cause: CauseDependency, Waited: b},
		{Lane: 1, Start: 40, Dur: 5, Cause: CauseTail, Waited: c},
	}
	if len(s.Bubbles) != len(want) {
		t.Fatalf("bubbles %+v, want %+v", s.Bubbles, want)
	}
	for i := range want {
		if s.Bubbles[i] != want[i] {
			t.Errorf("bubble %d = %+v, want %+v", i, s.Bubbles[i], want[i])
		}
	}
	busy := s.Busy()
	if busy[0] != 15 || busy[1] != 30 {
		t.Fatalf("busy %v, want [15 30]", busy)
	}
}

func TestScheduleStageBarrier(t *testing.T) {
	s := NewSchedule([]Lane{{Name: "NPU", Group: "npu"}, {Name: "PIM", Group: "pim"}}, 8, 8)
	s.Add(Op{Name: "A", Lane: 0, Dur: 10, Stage: 0})
	long := s.Add(Op{Name: "B", Lane: 1, Dur: 50, Stage: 0})
	n := s.Add(Op{Name: "C", Lane: 0, Dur: 5, Stage: 1})
	if s.Spans[n].Start != 50 {
		t.Fatalf("stage-1 op starts at %d, want 50 (barrier)", s.Spans[n].Start)
	}
	bb := s.Bubbles[0]
	if bb.Cause != CauseBarrier || bb.Waited != long || bb.Start != 10 || bb.Dur != 40 {
		t.Fatalf("barrier bubble %+v", bb)
	}
	s.Finish()
	last := s.Bubbles[len(s.Bubbles)-1]
	if last.Lane != 1 || last.Cause != CauseTail || last.Dur != 5 {
		t.Fatalf("tail bubble %+v", last)
	}
}

func TestScheduleNoWorkLane(t *testing.T) {
	s := NewSchedule([]Lane{{Name: "NPU", Group: "npu"}, {Name: "idle", Group: "pim"}}, 1, 1)
	s.Add(Op{Name: "A", Lane: 0, Dur: 7})
	s.Finish()
	if len(s.Bubbles) != 1 || s.Bubbles[0].Cause != CauseNoWork || s.Bubbles[0].Dur != 7 {
		t.Fatalf("bubbles %+v, want one no-work bubble of 7", s.Bubbles)
	}
}

// A lane that waits for an op on a data-moving lane waits on a transfer; one that waits
// for a computing lane waits on a dependency.
func TestScheduleTransferBubble(t *testing.T) {
	s := NewSchedule([]Lane{{Name: "GPU", Group: "gpu"}, {Name: "PCIe", Group: "pcie", Transfer: true}, {Name: "DIMM", Group: "ndp"}}, 8, 8)
	fetch := s.Add(Op{Name: "fetch", Lane: 1, Dur: 10})
	gemm := s.Add(Op{Name: "GEMM", Lane: 0, Dur: 5}, fetch)
	s.Add(Op{Name: "GEMV", Lane: 2, Dur: 5}, gemm)
	s.Finish()
	want := []Bubble{
		{Lane: 0, Start: 0, Dur: 10, Cause: CauseTransfer, Waited: fetch},
		{Lane: 2, Start: 0, Dur: 15, Cause: CauseDependency, Waited: gemm},
	}
	for i, w := range want {
		if s.Bubbles[i] != w {
			t.Errorf("bubble %d = %+v, want %+v", i, s.Bubbles[i], w)
		}
	}
}

// A lane that finishes early while a peer of its group ends the iteration idles for
// imbalance; a lane of another group idles at the tail; a lane that ran nothing is
// no-work, or a capacity stall when admission left a request waiting for KV space.
func TestScheduleTailCauses(t *testing.T) {
	lanes := []Lane{{Name: "ch0", Group: "pim"}, {Name: "ch1", Group: "pim"}, {Name: "NPU", Group: "npu"}, {Name: "prefill", Group: "prefill"}}
	for _, stall := range []bool{false, true} {
		s := NewSchedule(lanes, 8, 8)
		s.Add(Op{Name: "MHA", Lane: 0, Dur: 10})
		last := s.Add(Op{Name: "MHA", Lane: 1, Dur: 30})
		s.Add(Op{Name: "LN", Lane: 2, Dur: 5})
		s.kvStall = stall
		if ms := s.Finish(); ms != 30 {
			t.Fatalf("makespan %d, want 30", ms)
		}
		idle := CauseNoWork
		if stall {
			idle = CauseCapacity
		}
		want := []Bubble{
			{Lane: 0, Start: 10, Dur: 20, Cause: CauseImbalance, Waited: last},
			{Lane: 2, Start: 5, Dur: 25, Cause: CauseTail, Waited: last},
			{Lane: 3, Start: 0, Dur: 30, Cause: idle, Waited: last},
		}
		if len(s.Bubbles) != len(want) {
			t.Fatalf("stall %v: bubbles %+v, want %+v", stall, s.Bubbles, want)
		}
		for i, w := range want {
			if s.Bubbles[i] != w {
				t.Errorf("stall %v: bubble %d = %+v, want %+v", stall, i, s.Bubbles[i], w)
			}
		}
	}
}

// The critical path chains back from the span that ends last through what set each
// start: here the lane order, a stage barrier and a dependency.
func TestScheduleCriticalPath(t *testing.T) {
	s := NewSchedule([]Lane{{Name: "NPU", Group: "npu"}, {Name: "PIM", Group: "pim"}, {Name: "I/O", Group: "io", Transfer: true}}, 8, 8)
	qkv := s.Add(Op{Name: "QKV", Lane: 0, Dur: 10})
	mha := s.Add(Op{Name: "MHA", Lane: 1, Dur: 25}, qkv)     // dependency: starts at 10
	ln := s.Add(Op{Name: "LN", Lane: 0, Dur: 5})             // lane order: starts at 10
	in := s.Add(Op{Name: "in", Lane: 2, Dur: 4, Stage: 1})   // barrier: starts at 35
	out := s.Add(Op{Name: "out", Lane: 2, Dur: 6, Stage: 1}) // lane order: starts at 39
	ffn := s.Add(Op{Name: "FFN", Lane: 0, Dur: 2, Stage: 1}, ln)
	if ms := s.Finish(); ms != 45 {
		t.Fatalf("makespan %d, want 45", ms)
	}
	by := map[int]int{qkv: -1, mha: qkv, ln: qkv, in: mha, out: in, ffn: mha}
	for i, want := range by {
		if got := s.Spans[i].By; got != want {
			t.Errorf("span %s: By = %d, want %d", s.Spans[i].Name, got, want)
		}
	}
	want := []int{qkv, mha, in, out}
	if len(s.Critical) != len(want) {
		t.Fatalf("critical path %v, want %v", s.Critical, want)
	}
	for i := range want {
		if s.Critical[i] != want[i] {
			t.Fatalf("critical path %v, want %v", s.Critical, want)
		}
	}
	// Every link is tight: each span starts when the one before it ends, from 0 to the end.
	at := Time(0)
	for _, i := range s.Critical {
		if s.Spans[i].Start != at {
			t.Fatalf("critical span %s starts at %d, want %d", s.Spans[i].Name, s.Spans[i].Start, at)
		}
		at = s.Spans[i].End()
	}
	if at != 45 {
		t.Fatalf("critical path ends at %d, want 45", at)
	}
	// Reset clears the path for the next iteration.
	s.Reset(s.Lanes)
	if len(s.Critical) != 0 || s.kvStall {
		t.Fatalf("after Reset: critical %v, stall %v", s.Critical, s.kvStall)
	}
}

// Work on its own clock records nothing as its cause unless its lane was still busy.
func TestScheduleAddAtBy(t *testing.T) {
	s := NewSchedule([]Lane{{Name: "NPU", Group: "npu"}, {Name: "prefill", Group: "prefill"}}, 8, 8)
	s.Add(Op{Name: "QKV", Lane: 0, Dur: 40})
	a := s.AddAt(Op{Name: "prefill #1", Lane: 1, Dur: 20}, 5)
	b := s.AddAt(Op{Name: "prefill #2", Lane: 1, Dur: 10}, 15)
	if s.Spans[a].By != -1 || s.Spans[b].By != a || s.Spans[b].Start != 25 {
		t.Fatalf("AddAt spans %+v", s.Spans[a:])
	}
	s.kvStall = true
	s.Finish()
	// The gap before the first prefill is no-work even in a capacity-stalled iteration:
	// admission does not hold back work on its own clock.
	if b0 := s.Bubbles[0]; b0.Lane != 1 || b0.Cause != CauseNoWork || b0.Dur != 5 {
		t.Fatalf("gap before AddAt work: %+v", b0)
	}
}

// Add and AddAt copy an op onto its span field by field: every field of Op, including
// one added later, must arrive.
func TestSpanKeepsEveryOpField(t *testing.T) {
	var op Op
	v := reflect.ValueOf(&op).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("op " + v.Type().Field(i).Name)
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i) + 1)
		default:
			t.Fatalf("Op.%s is a %s: set it here so the test checks it is copied", v.Type().Field(i).Name, f.Kind())
		}
	}
	op.Lane = 1
	s := NewSchedule([]Lane{{Name: "a"}, {Name: "b"}}, 0, 0)
	i := s.Add(op)
	j := s.AddAt(op, 1000)
	if s.Spans[i].Op != op || s.Spans[j].Op != op {
		t.Fatalf("spans %+v and %+v, want op %+v", s.Spans[i].Op, s.Spans[j].Op, op)
	}
}

// repeatLayout adds period i of a layout that repeats with a stage barrier every period
// or none, from a prefix with a long op on its own lane and a lane that is only used now
// and then; durations come from dur, the same for every period.
func repeatLayout(s *Schedule, i int, staged bool, dur []Time, carry *[]int) {
	stage := 0
	if staged {
		stage = 2*i + 1
	}
	op := func(name string, lane int, d Time, st int, deps ...int) int {
		return s.Add(Op{Name: name, Lane: lane, Dur: d, Stage: st, Layer: i, SubBatch: lane % 2, FLOPs: float64(d) * 1.5, Bytes: float64(d) / 3}, deps...)
	}
	qkv := op("QKV", 0, dur[0], stage, (*carry)...)
	var mha []int
	for c := 2; c < 6; c++ {
		if dur[c] > 0 {
			mha = append(mha, op("MHA", c, dur[c], stage, qkv))
		}
	}
	mha = append(mha, op("softmax", 1, dur[1], stage, qkv))
	if staged {
		stage++
	}
	pj := op("Proj", 0, dur[6], stage, mha...)
	ffn := op("FFN", 0, dur[7], stage, pj)
	*carry = []int{op("GELU", 1, dur[8], stage, ffn)}
}

// Repeat writes what Add would: spans, bubbles, busy and idle times, the critical path and
// the makespan of a layout laid out op by op, whether the periods meet at a barrier or
// chain through a dependency, and whether or not an op before them holds the iteration's end.
func TestScheduleRepeatMatchesAdd(t *testing.T) {
	lanes := []Lane{{Name: "NPU-S", Group: "npu"}, {Name: "NPU-V", Group: "npu_vector"},
		{Name: "ch0", Group: "pim"}, {Name: "ch1", Group: "pim"}, {Name: "ch2", Group: "pim"}, {Name: "ch3", Group: "pim", Transfer: true}, {Name: "prefill", Group: "prefill"}}
	const periods = 12
	for _, staged := range []bool{false, true} {
		for _, long := range []Time{0, 7, 1_000_000} {
			for seed := range 40 {
				tail := seed%2 == 1
				dur := make([]Time, 9)
				for k := range dur {
					dur[k] = Time(1 + (seed*7919+k*104729)%97)
				}
				if seed%3 == 0 {
					dur[3] = 0 // a channel without work
				}
				build := func(repeat bool) (*Schedule, int) {
					s := NewSchedule(lanes, 0, 0)
					if long > 0 {
						s.Add(Op{Name: "prefill", Lane: 6, Dur: long})
					}
					var carry []int
					var prev, last Mark
					repeated := -1
					for i := range periods {
						m := s.Mark()
						if repeat && i >= 2 && s.Repeat(prev, last, periods-i) {
							repeated = i
							carry[0] += len(s.Spans) - m.spans
							break
						}
						repeatLayout(s, i, staged, dur, &carry)
						prev, last = last, m
					}
					// After the periods, but for a layout that ends with them: an op in
					// the last period's stage, held by its barrier if it has one, and two
					// in the next stage, one after the last period and one held by the
					// barrier only.
					if tail {
						st := 0
						if staged {
							st = 2 * periods
						}
						s.Add(Op{Name: "tail", Lane: 2, Dur: 3, Stage: st})
						s.Add(Op{Name: "end", Lane: 0, Dur: 4, Stage: st + 1}, carry...)
						s.Add(Op{Name: "fence", Lane: 6, Dur: 1, Stage: st + 1})
					}
					s.Finish()
					return s, repeated
				}
				want, _ := build(false)
				got, at := build(true)
				name := fmt.Sprintf("staged=%v long=%d seed=%d tail=%v", staged, long, seed, tail)
				if long < 1_000_000 && at < 0 {
					t.Errorf("%s: never repeated", name)
				}
				if !reflect.DeepEqual(got.Spans, want.Spans) || !reflect.DeepEqual(got.Bubbles, want.Bubbles) ||
					!reflect.DeepEqual(got.Critical, want.Critical) || !reflect.DeepEqual(got.Busy(), want.Busy()) ||
					!reflect.DeepEqual(got.laneIdle, want.laneIdle) || got.Makespan() != want.Makespan() {
					t.Fatalf("%s: repeating from period %d lays out differently from adding op by op", name, at)
				}
			}
		}
	}
}

// Repeat adds nothing unless the last period is the one before it moved on in time.
func TestScheduleRepeatRefuses(t *testing.T) {
	lanes := []Lane{{Name: "a"}, {Name: "b"}}
	s := NewSchedule(lanes, 0, 0)
	a := s.Mark()
	x := s.Add(Op{Name: "A", Lane: 0, Dur: 10})
	s.Add(Op{Name: "B", Lane: 1, Dur: 5}, x)
	b := s.Mark()
	y := s.Add(Op{Name: "A", Lane: 0, Dur: 10})
	s.Add(Op{Name: "B", Lane: 1, Dur: 6}, y)
	if s.Repeat(a, b, 3) || len(s.Spans) != 4 {
		t.Fatalf("repeated periods of different durations: %d spans", len(s.Spans))
	}
	c := s.Mark()
	s.Add(Op{Name: "A", Lane: 0, Dur: 10})
	if s.Repeat(b, c, 3) || len(s.Spans) != 5 {
		t.Fatalf("repeated periods of different lengths: %d spans", len(s.Spans))
	}
	if s.Repeat(c, s.Mark(), 0) {
		t.Fatal("repeated no periods")
	}
	// Two periods of two stages that lay out alike, left in a state that is not the one
	// before moved on: the barrier or the end so far stands elsewhere.
	for _, tamper := range []func(*Schedule){nil, func(s *Schedule) { s.barrier++ }, func(s *Schedule) { s.makespan++ }, func(s *Schedule) { s.critical = 0 }} {
		s := NewSchedule(lanes, 0, 0)
		var marks []Mark
		for i := range 3 {
			marks = append(marks, s.Mark())
			x := s.Add(Op{Name: "A", Lane: 0, Dur: 10, Stage: 2*i + 1})
			s.Add(Op{Name: "B", Lane: 1, Dur: 5, Stage: 2*i + 2}, x)
		}
		if tamper != nil {
			tamper(s)
		}
		if got := s.Repeat(marks[1], marks[2], 2); got != (tamper == nil) {
			t.Errorf("tampered %v: Repeat = %v", tamper != nil, got)
		}
	}
}

// Repeat copies a period only when each of its ops is, field by field, the one a period
// before moved on: a field Op gains must be compared there too, or this fails.
func TestScheduleRepeatComparesEveryField(t *testing.T) {
	lanes := []Lane{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for f := -1; f < reflect.TypeFor[Op]().NumField(); f++ {
		s := NewSchedule(lanes, 0, 0)
		var marks []Mark
		for i := range 3 {
			marks = append(marks, s.Mark())
			x := s.Add(Op{Name: "A", Lane: 0, Dur: 10, Layer: i})
			op := Op{Name: "B", Lane: 1, Dur: 5, FLOPs: 1, Bytes: 2, Layer: i, SubBatch: 1}
			if i == 2 && f >= 0 {
				v := reflect.ValueOf(&op).Elem().Field(f)
				switch v.Kind() {
				case reflect.String:
					v.SetString(v.String() + "'")
				case reflect.Int, reflect.Int64:
					v.SetInt(v.Int() + 1)
				case reflect.Float64:
					v.SetFloat(v.Float() + 1)
				default:
					t.Fatalf("Op.%s is a %s: teach this test to change it", reflect.TypeFor[Op]().Field(f).Name, v.Kind())
				}
			}
			s.Add(op, x)
		}
		if got := s.Repeat(marks[1], marks[2], 2); got != (f < 0) {
			name := "nothing"
			if f >= 0 {
				name = reflect.TypeFor[Op]().Field(f).Name
			}
			t.Errorf("last period's op differs in %s: Repeat = %v", name, got)
		}
	}
}
