package main

import (
	"runtime/debug"
	"testing"
)

// The explorer's soft memory limit is the floor until the live heap nears it, then a
// quarter above the live heap.
func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{{0, memoryFloor}, {60 << 20, memoryFloor}, {96 << 20, memoryFloor}, {100 << 20, 125 << 20}, {1 << 30, 5 << 28}} {
		if got := memoryLimit(c.live); got != c.want {
			t.Errorf("live %d MiB: limit %d MiB, want %d MiB", c.live>>20, got>>20, c.want>>20)
		}
	}
}

// boundMemory sets the limit while the explorer runs and restores it after; a limit the
// user set with GOMEMLIMIT is left alone.
func TestBoundMemory(t *testing.T) {
	const mine = 1 << 40
	prev := debug.SetMemoryLimit(mine)
	defer debug.SetMemoryLimit(prev)
	t.Setenv("GOMEMLIMIT", "")
	stop := boundMemory()
	if got := debug.SetMemoryLimit(-1); got != memoryFloor {
		t.Errorf("limit %d while bound, want the floor %d", got, int64(memoryFloor))
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != mine {
		t.Errorf("limit %d after, want %d restored", got, int64(mine))
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	boundMemory()()
	if got := debug.SetMemoryLimit(-1); got != mine {
		t.Errorf("limit %d with GOMEMLIMIT set, want %d untouched", got, int64(mine))
	}
}
