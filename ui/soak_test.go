package ui

import (
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var (
	soak      = flag.Bool("soak", false, "soak: autoplay 100,000 steps of each family's largest configuration, sampling the heap")
	soakSteps = flag.Int("soak-steps", 100_000, "soak: steps per configuration")
	soakOnly  = flag.String("soak-only", "", "soak: run only these configurations (comma-separated names)")
)

// soakCase is a configuration the soak autoplays: a preset with edits that make it the
// largest of its family. The soak gives it a workload that does not end: a million
// requests and no step limit.
type soakCase struct {
	name, preset string
	edit         []string
}

// soakCases are each family's largest configuration: the biggest model its paper runs, at
// the batch the preset (or the memory) allows. The batch is kept full (closed arrivals) so
// the request queue does not grow with the run as an overloaded Poisson stream's would.
var soakCases = []soakCase{
	{"neupims-gpt3-175b", "neupims", []string{"model.name=gpt3-175b", "model.tp=8", "model.pp=4"}},
	{"l3-gpt3-175b", "l3", nil},
	{"lolpim-qwen1.5-72b", "lolpim", []string{"model.name=qwen1.5-72b", "workload.batch=22"}},
	{"helios-mixtral-8x22b", "helios", []string{"model.name=mixtral-8x22b", "workload.arrival=closed"}},
	{"hermes-llama2-70b", "hermes", nil},
}

// soakGrowth is how far the live heap may rise after the history is full: 10% of the
// reference sample plus 8 MiB. Once 128 snapshots are kept, what remains live changes only
// with the workload's state (requests in flight, their KV blocks, the snapshots' request
// tables); over 100,000 steps of each family's largest configuration that moved the heap
// by at most 4 MiB, 3% of it. A leak of a few hundred bytes a step would pass the bound
// within the 100,000 steps.
func soakGrowth(ref uint64) uint64 { return ref + ref/10 + 8<<20 }

// soakRun autoplays c for steps steps through the explorer, as the program does (one
// step message at a time into the model, a 200×60 frame every 100 steps), and samples the
// live heap 20 times. It fails if the workload ends or the heap grows past soakGrowth of
// the first sample after both the history is full and a tenth of the run has passed.
func soakRun(t *testing.T, c soakCase, steps int) {
	m := benchModel(t, c.preset, 200, 60, append(slices.Clone(c.edit), "workload.steps=0")...)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	every := max(1, steps/20)
	refAt := max(steps/10, 2*historyCap)
	var ref uint64
	var curve []string
	for i := 2; i <= steps; i++ {
		m.benchStep()
		if m.finished || m.err != nil {
			t.Fatalf("the workload ended at step %d (%v); a soak needs one that does not", m.snap.Step, m.err)
		}
		if i%100 == 0 {
			_ = m.View()
		}
		if i%every != 0 && i != steps {
			continue
		}
		h := heap()
		curve = append(curve, fmt.Sprintf("%d:%.1f", i, float64(h)/(1<<20)))
		t.Logf("%s step %d heap %.1f MiB", c.name, i, float64(h)/(1<<20))
		switch {
		case ref == 0 && i >= refAt:
			ref = h
		case ref > 0 && h > soakGrowth(ref):
			t.Fatalf("heap %.1f MiB at step %d, more than %.1f MiB (reference %.1f MiB); curve (step:MiB) %s",
				float64(h)/(1<<20), i, float64(soakGrowth(ref))/(1<<20), float64(ref)/(1<<20), strings.Join(curve, " "))
		}
	}
	if ref == 0 {
		t.Fatalf("no sample after the history filled in %d steps", steps)
	}
	kept := m.eng.History().Len()
	if kept < 2 || kept > historyCap {
		t.Fatalf("the engine keeps %d iterations, want 2 to the explorer's cap %d", kept, historyCap)
	}
	t.Logf("%s keeps %d iterations; heap curve (step:MiB) %s", c.name, kept, strings.Join(curve, " "))
	runtime.KeepAlive(m)
}

// TestSoak autoplays each family's largest configuration for 100,000 steps with the
// explorer's history cap and checks that the live heap stays flat once the history is
// full: go test ./ui -run TestSoak -soak -v -timeout 0 (ten minutes without Hermes, whose
// steps take about 40 ms, an hour and a half with it; -soak-only and -soak-steps pick a
// part).
// Without -soak it runs 2,000 steps of the neupims preset (300 with -short), so the path
// is exercised on every test run.
func TestSoak(t *testing.T) {
	if !*soak {
		steps := 2000
		if quick() {
			steps = 300
		}
		soakRun(t, soakCase{name: "neupims", preset: "neupims"}, steps)
		return
	}
	only := strings.Split(*soakOnly, ",")
	for _, c := range soakCases {
		if *soakOnly != "" && !slices.Contains(only, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) { soakRun(t, c, *soakSteps) })
	}
}
