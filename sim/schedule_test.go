package sim

import "testing"

func TestScheduleDependenciesAndBubbles(t *testing.T) {
	s := NewSchedule([]Lane{{"NPU", "npu"}, {"PIM", "pim"}}, 8, 8)
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
	s := NewSchedule([]Lane{{"NPU", "npu"}, {"PIM", "pim"}}, 8, 8)
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
	s := NewSchedule([]Lane{{"NPU", "npu"}, {"idle", "pim"}}, 1, 1)
	s.Add(Op{Name: "A", Lane: 0, Dur: 7})
	s.Finish()
	if len(s.Bubbles) != 1 || s.Bubbles[0].Cause != CauseNoWork || s.Bubbles[0].Dur != 7 {
		t.Fatalf("bubbles %+v, want one no-work bubble of 7", s.Bubbles)
	}
}
