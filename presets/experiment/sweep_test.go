package experiment

import (
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"testing"
)

// neupimsSweep is a sweep of n×10 points of the neupims preset: batch × seed.
func neupimsSweep(batches int) SweepSpec {
	s := SweepSpec{Presets: []string{"neupims"}, Base: []string{"workload.requests=96", "workload.dataset=alpaca"}}
	b := Axis{Name: "batch"}
	for i := range batches {
		v := strconv.Itoa(16 * (i + 1))
		b.Levels = append(b.Levels, Level{Label: v, Sets: []string{"workload.batch=" + v}})
	}
	seed := Axis{Name: "seed"}
	for i := range 10 {
		v := strconv.Itoa(i + 1)
		seed.Levels = append(seed.Levels, Level{Label: v, Sets: []string{"workload.seed=" + v}})
	}
	s.Axes = []Axis{b, seed}
	return s
}

// The rows do not depend on how many workers run them, and come in the documented
// order.
func TestSweepDeterministicAcrossWorkers(t *testing.T) {
	s := neupimsSweep(2)
	s.Base = []string{"workload.requests=32", "workload.dataset=alpaca"}
	s.Presets = []string{"neupims", "npu-only"}
	s.Workers = 1
	one, err := Sweep(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Workers = 5
	calls := 0
	s.Progress = func(done, total int) {
		calls++
		if done != calls || total != 40 {
			t.Errorf("progress %d/%d after %d calls", done, total, calls)
		}
	}
	many, err := Sweep(s)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 40 {
		t.Errorf("%d progress calls for 40 points", calls)
	}
	if !reflect.DeepEqual(one, many) {
		t.Fatal("1 and 5 workers give different rows")
	}
	if len(one) != 40 || one[0].Preset != "neupims" || one[20].Preset != "npu-only" ||
		fmt.Sprint(one[1].Labels) != "[16 2]" || fmt.Sprint(one[10].Labels) != "[32 1]" {
		t.Fatalf("order: %d rows, row 1 %v, row 10 %v, row 20 %s", len(one), one[1].Labels, one[10].Labels, one[20].Preset)
	}
	if one[0].Result.Seed == one[1].Result.Seed || one[0].Result.MaxBatch != 16 || one[10].Result.MaxBatch != 32 {
		t.Errorf("levels not applied: seeds %d %d, batches %d %d", one[0].Result.Seed, one[1].Result.Seed, one[0].Result.MaxBatch, one[10].Result.MaxBatch)
	}
}

func TestSweepBadKeyFailsBeforeRunning(t *testing.T) {
	s := neupimsSweep(1)
	s.Axes[0].Levels[0].Sets = []string{"workload.bach=16"}
	ran := false
	s.Progress = func(int, int) { ran = true }
	if _, err := Sweep(s); err == nil || ran {
		t.Fatalf("err %v, ran %v", err, ran)
	}
}

// BenchmarkSweepNeupims100 runs a 100-point sweep of neupims (10 batches × 10 seeds) at
// GOMAXPROCS 1 and at every core (the garbage collector included); the ratio of the two
// is the speed-up from parallelism.
//
//	go test ./presets/experiment -run XX -bench SweepNeupims100 -benchtime 3x
func BenchmarkSweepNeupims100(b *testing.B) {
	all := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(all)
	for _, w := range []int{1, all} {
		b.Run(fmt.Sprintf("cores=%d", w), func(b *testing.B) {
			runtime.GOMAXPROCS(w)
			s := neupimsSweep(10)
			for b.Loop() {
				rows, err := Sweep(s)
				if err != nil || len(rows) != 100 {
					b.Fatal(err, len(rows))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/sweep")
		})
	}
}
