package sim

import (
	"reflect"
	"testing"
)

func TestGreedyMinLoadAssign(t *testing.T) {
	// Loads of existing requests per channel, then three new requests with Algorithm 1
	// loads for seq 2048, 513 and 32 on 7B (50504, 19832, 7256 cycles).
	load := []int64{10000, 5000, 5000, 20000}
	got := GreedyMinLoadAssign(load, []int64{50504, 19832, 7256}, nil)
	// The longest goes to the first least-loaded channel (1; tie with 2 broken by index),
	// the next to channel 2 (5000), the last to channel 0 (10000).
	if want := []int{1, 2, 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("assignment %v, want %v", got, want)
	}
	if want := []int64{17256, 55504, 24832, 20000}; !reflect.DeepEqual(load, want) {
		t.Fatalf("loads %v, want %v", load, want)
	}
}

func TestGreedyMinLoadSkipsFullChannels(t *testing.T) {
	load := []int64{0, 100}
	got := GreedyMinLoadAssign(load, []int64{5, 5}, func(req, ch int) bool { return ch == 1 })
	if !reflect.DeepEqual(got, []int{1, 1}) {
		t.Fatalf("got %v, want both on channel 1", got)
	}
	none := GreedyMinLoadAssign(load, []int64{5}, func(int, int) bool { return false })
	if none[0] != -1 {
		t.Fatalf("got %v, want -1 when nothing fits", none)
	}
}

func TestRoundRobinAssign(t *testing.T) {
	next := 2
	got := RoundRobinAssign(4, &next, 5, func(req, ch int) bool { return ch != 3 })
	if want := []int{2, 0, 1, 2, 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if next != 1 {
		t.Fatalf("next = %d, want 1", next)
	}
}

// Algorithm 3 by hand: counts 5, 4, 3, 1, 2 → odd channels alternate ceil/floor.
func TestPartitionSubBatches(t *testing.T) {
	got := PartitionSubBatches([]int{5, 4, 3, 1, 2})
	// 5 odd, turn=true → 3 (turn→false); 4 → 2; 3 odd, turn=false → 1 (turn→true);
	// 1 odd, turn=true → 1 (turn→false); 2 → 1.
	if want := []int{3, 2, 1, 1, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
