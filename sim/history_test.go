package sim

import (
	"math"
	"reflect"
	"testing"
)

// TestPackRoundTrip packs a timeline whose operations repeat with a period and then
// break it: a span one period on that shares its name but not its duration, its bytes
// or the sign of its zero FLOPs must unpack as itself, not as the operation before it.
func TestPackRoundTrip(t *testing.T) {
	lanes := []Lane{{Name: "a"}, {Name: "b"}}
	negZero := math.Copysign(0, -1)
	ops := []Op{
		{Name: "QKV", Dur: 10, FLOPs: 4, Bytes: 8, Lane: 0},
		{Name: "MHA", Dur: 20, FLOPs: 0, Bytes: 8, Lane: 1},
		{Name: "QKV", Dur: 10, FLOPs: 4, Bytes: 8, Lane: 0, Layer: 1},
		{Name: "MHA", Dur: 20, FLOPs: 0, Bytes: 8, Lane: 1, Layer: 1},
		{Name: "QKV", Dur: 11, FLOPs: 4, Bytes: 8, Lane: 0, Layer: 2},
		{Name: "MHA", Dur: 20, FLOPs: negZero, Bytes: 8, Lane: 1, Layer: 2},
		{Name: "QKV", Dur: 10, FLOPs: 4, Bytes: 9, Lane: 0, Layer: 3},
		{Name: "MHA", Dur: 20, FLOPs: 0, Bytes: 8, Lane: 1, Layer: 3, SubBatch: 1},
	}
	s := NewSchedule(lanes, 0, 0)
	prev := -1
	for _, op := range ops {
		if prev < 0 {
			prev = s.Add(op)
		} else {
			prev = s.Add(op, prev)
		}
	}
	s.Finish()
	snap := &Snapshot{Step: 1, Timeline: Timeline{Lanes: lanes, Spans: s.Spans, Bubbles: s.Bubbles, Critical: s.Critical}}
	var p packer
	got := p.pack(snap).unpack()
	if !reflect.DeepEqual(got, snap) {
		t.Fatalf("unpacked spans differ:\n got %+v\nwant %+v", got.Timeline.Spans, snap.Timeline.Spans)
	}
	if f := got.Timeline.Spans[5].FLOPs; !math.Signbit(f) {
		t.Fatalf("span 5's FLOPs lost their sign: %v", f)
	}
	if n := len(p.pack(snap).ops); n != 6 {
		t.Fatalf("the table holds %d operations, want 6", n)
	}
}
