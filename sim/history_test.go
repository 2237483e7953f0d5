package sim

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"testing"
	"unsafe"
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

// TestRelease checks that a released snapshot's memory carries the next iteration, that
// the newest iteration is never taken, and that the history still gives back every
// iteration as an engine that is handed nothing back steps it.
func TestRelease(t *testing.T) {
	e, snaps := steppedWithHistory(t, 16, 3)
	_, ref := steppedWithHistory(t, 16, 8)
	e.Release(snaps[2])
	if e.freed != nil {
		t.Fatal("the engine took the newest iteration's memory")
	}
	e.Release(snaps[1])
	s, err := e.Step()
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(s.Timeline.Spans) != unsafe.SliceData(snaps[1].Timeline.Spans) {
		t.Fatal("the next iteration did not reuse the released snapshot's spans")
	}
	if !reflect.DeepEqual(s, ref[3]) || !reflect.DeepEqual(snaps[2], ref[2]) {
		t.Fatal("reusing a released snapshot changed an iteration")
	}
	for range 4 {
		prev := s
		if s, err = e.Step(); err != nil {
			t.Fatal(err)
		}
		e.Release(prev)
	}
	for i := 6; i >= 0; i-- {
		if b := e.Back(); !reflect.DeepEqual(b, ref[i]) {
			t.Fatalf("stepping back to iteration %d gave a different snapshot", i+1)
		}
	}

	c := testNeuPIMs()
	c.Recycle = true
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := r.Step()
	r.Step()
	if r.Release(old); r.freed != nil {
		t.Fatal("a recycling engine, which keeps no history, took a released snapshot")
	}
}

// The packer's varints are the encoding/binary ones, byte for byte, at every length.
func TestPutVarintIsBinarys(t *testing.T) {
	vals := []int64{0, 1, -1, 63, -64, 64, -65, 127, 128, 8191, -8192, 1 << 20, -(1 << 40), math.MaxInt64, math.MinInt64}
	for s := range 64 {
		vals = append(vals, 1<<s, -(1 << s), 1<<s-1)
	}
	for _, v := range vals {
		b := make([]byte, 3+binary.MaxVarintLen64)
		n := putVarint(b, 3, v)
		if got, want := b[3:n], binary.AppendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("putVarint(%d) = %x, binary.AppendVarint = %x", v, got, want)
		}
		n = putUvarint(b, 3, uint64(v))
		if got, want := b[3:n], binary.AppendUvarint(nil, uint64(v)); !bytes.Equal(got, want) {
			t.Errorf("putUvarint(%d) = %x, binary.AppendUvarint = %x", uint64(v), got, want)
		}
	}
}
