package main

import (
	"errors"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/ui"
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

// The picker's validation of a preset: its headline checks, each reference named in a
// few words; every reference is measured once, one after another, whichever preset asks.
func TestPresetValidations(t *testing.T) {
	asked := fakeChecker(t, []string{"neupims-sim", "h100"}, fakeChecks, nil)
	of := presetValidations()
	got, err := of("neupims")
	if err != nil {
		t.Fatal(err)
	}
	want := []ui.Validation{{Reference: "authors' simulator", Name: "neupims · iteration", Ref: 15.488, Pimtui: 11.182, Tol: 0.10}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("neupims: %+v, want %+v (no finer checks)", got, want)
	}
	if h, _ := of("gpu-h100"); len(h) != 1 || h[0].Reference != "real H100" || !h[0].Within {
		t.Errorf("gpu-h100: %+v", h)
	}
	if a, err := of("gpu-a100"); len(a) != 0 || err != nil {
		t.Errorf("gpu-a100: %+v, %v", a, err)
	}
	if strings.Join(*asked, ",") != "neupims-sim,h100" {
		t.Errorf("references measured %v, want each once, in order", *asked)
	}
	fakeChecker(t, []string{"neupims-sim"}, nil, errors.New("neupims-sim: reading stages.tsv: no such file"))
	if _, err := presetValidations()("neupims"); err == nil || !strings.Contains(err.Error(), "reading stages.tsv") {
		t.Errorf("a failing checker: %v", err)
	}
}
