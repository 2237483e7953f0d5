package experiment

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/presets/internal/testutil"
	"github.com/pimtui/pimtui/sim"
)

// Every preset's declared paper results hold as declared: a reproduced figure is within
// the scoring rule, and one declared not reproduced is outside it (so the declaration
// stays true) yet points the same way as the paper.
func TestDeclaredExpectations(t *testing.T) {
	if testutil.Quick() {
		t.Skip("the expectation grids take seconds; skipped in -short mode")
	}
	for _, n := range presets.Names() {
		f, err := presets.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Expect) == 0 {
			continue
		}
		outs, err := Evaluate(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for _, o := range outs {
			rule := KindOf(o.Expect).Rule()
			t.Logf("%s %s: paper %.2f%s, pimtui %.2f%s over %d points (%s)", n, o.ID, o.Target(), unit(o), o.Measured, unit(o), o.Points, rule)
			switch {
			case o.Reproduced && !o.Within:
				t.Errorf("%s %s: declared reproduced, but %.2f%s against %.2f%s is not %s", n, o.ID, o.Measured, unit(o), o.Target(), unit(o), rule)
			case !o.Reproduced && o.Within:
				t.Errorf("%s %s: declared not reproduced, but %.2f%s against %.2f%s is %s; update the preset", n, o.ID, o.Measured, unit(o), o.Target(), unit(o), rule)
			case !o.Reproduced && o.Gap == "":
				t.Errorf("%s %s: not reproduced and no gap explains why", n, o.ID)
			case o.Versus != "" && (o.Measured > 1) != (o.Ratio > 1):
				t.Errorf("%s %s: pimtui %.2f× points the other way from the paper's %.2f×", n, o.ID, o.Measured, o.Ratio)
			}
		}
	}
}

// unit is how an outcome's figures print: × for a ratio, the metric for an absolute value.
func unit(o Outcome) string {
	if o.Versus == "" {
		return " " + o.Metric
	}
	return "×"
}

// A steady-state measurement starts once the mean live length (input plus generated
// tokens of the requests decoding) has settled: over the measured window it is within 5%
// of its mean over the four windows after it, at the largest batch of each grid's first
// model and dataset (the one with the longest requests). Windows of a settled batch still
// differ by a few percent as long prompts come and go (by up to 8% over 512 iterations at
// NeuPIMs' ShareGPT batch of 512, so its window is 2,048); before it settles the live
// length is far lower (that batch lives at 214 tokens on average over its first 512
// iterations, about 310 in the long run).
func TestSteadyStateSettled(t *testing.T) {
	if testutil.Quick() {
		t.Skip("long runs; skipped in -short mode")
	}
	seen := map[string]bool{}
	for _, n := range presets.Names() {
		f, err := presets.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range f.Expect {
			if e.Method != "steady" {
				continue
			}
			b := slices.Max(batchesOf(e, 0))
			for _, d := range datasetsOf(e, 0)[:1] {
				key := fmt.Sprint(n, e.Grid.Model[0], d, b, e.Warmup, e.Steps)
				if seen[key] {
					continue
				}
				seen[key] = true
				window, after := liveLength(t, n, e.Grid.Model[0], d, b, e.Warmup, e.Steps)
				t.Logf("%s %s %s on %s at batch %d: mean live length %.0f measured, %.0f after", n, e.ID, e.Grid.Model[0], d, b, window, after)
				if math.Abs(window/after-1) > 0.05 {
					t.Errorf("%s %s (%s, %s, batch %d): mean live length %.0f over the measured window, %.0f after it: the %d-iteration warm-up has not settled it",
						n, e.ID, e.Grid.Model[0], d, b, window, after, e.Warmup)
				}
			}
		}
	}
}

// liveLength runs preset on a closed loop kept full, configured as a steady-state grid
// point, and returns the mean live length over
// iterations warmup+1 … warmup+steps and over the 4·steps iterations after them.
func liveLength(t *testing.T, preset, model, dataset string, batch, warmup, steps int) (window, after float64) {
	t.Helper()
	cfg, err := gridPoint{preset: preset, model: model, dataset: dataset, batch: batch, method: "steady", warmup: warmup, steps: 5 * steps}.config()
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var sum [2]float64
	for i := 1; i <= warmup+5*steps; i++ {
		s, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		if i <= warmup {
			continue
		}
		n, l := 0, 0
		for _, r := range s.Requests {
			if r.Status == sim.Running {
				n++
				l += r.InputLen + r.Generated
			}
		}
		if n > 0 {
			sum[min(1, (i-warmup-1)/steps)] += float64(l) / float64(n)
		}
	}
	return sum[0] / float64(steps), sum[1] / float64(4*steps)
}

// An outcome carries each compared system's FLOP utilisation (the share of peak LoL-PIM's
// Table 8 reports), the mean of its runs' flop_utilization over the grid; a system that
// reports none has no entry.
func TestOutcomeFLOPUtilization(t *testing.T) {
	f, err := presets.Get("lolpim")
	if err != nil {
		t.Fatal(err)
	}
	e := f.Expect[0]
	e.Grid = presets.Grid{Model: []string{"qwen1.5-7b"}, Dataset: []string{"musique", "qmsum"}, Batch: []int{1024}}
	e.Steps = 8
	outs, err := EvaluateGrid("lolpim", []presets.Expect{e})
	if err != nil {
		t.Fatal(err)
	}
	u := outs[0].FLOPUtilization
	for _, sys := range []string{"lolpim", e.Versus} {
		var sum float64
		for _, d := range e.Grid.Dataset {
			r, err := measureRun(point(sys, e, "qwen1.5-7b", d, 0, 0, 1024))
			if err != nil {
				t.Fatal(err)
			}
			sum += r[flopUtilization]
		}
		if got, ok := u[sys]; !ok || got != sum/2 || got <= 0 || got >= 1 {
			t.Errorf("%s: flop utilisation %v (present %v), the runs' mean is %v", sys, got, ok, sum/2)
		}
	}
	if u["lolpim"] < 5*u[e.Versus] {
		t.Errorf("LoL-PIM fills %.3f of its peak, the GPU %.3f: decode on a GPU leaves its FLOPs idle", u["lolpim"], u[e.Versus])
	}
	h, _ := presets.Get("hermes")
	he := h.Expect[0]
	he.Grid = presets.Grid{Model: he.Grid.Model[:1], Dataset: he.Grid.Dataset[:1], Batch: []int{1}}
	he.Method, he.Steps, he.Warmup = "steady", 2, 0
	outs, err = EvaluateGrid("hermes", []presets.Expect{he})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].FLOPUtilization != nil {
		t.Errorf("Hermes reports no FLOP peak, yet %v", outs[0].FLOPUtilization)
	}
}

// A grid point asked for by several evaluations at once runs once: every caller gets the
// same run, not a copy measured again beside it.
func TestConcurrentPointRunsOnce(t *testing.T) {
	p := gridPoint{preset: "npu-only", model: "gpt3-7b", dataset: "alpaca", batch: 8, method: "steady", steps: 8, warmup: 8, metric: "throughput_tok_s"}
	const callers = 8
	runs := make([]map[string]float64, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			var err error
			if runs[i], err = measureRun(p); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, r := range runs {
		if r == nil || reflect.ValueOf(r).UnsafePointer() != reflect.ValueOf(runs[0]).UnsafePointer() {
			t.Fatalf("caller %d got a run of its own (%p, first %p): the point ran more than once", i, r, runs[0])
		}
	}
	if v := metric(runs[0], p.metric); !(v > 0) {
		t.Errorf("throughput %v, want > 0", v)
	}
}

// Runs are shared by their resolved split: a grid point that names its preset's own split
// builds exactly the configuration of the point that leaves the split to the preset, so
// measuring them once is measuring both. Checked on every declared grid point and curve.
func TestSplitKeyedPointsAreOneConfiguration(t *testing.T) {
	shared := 0
	for _, n := range presets.Names() {
		f, err := presets.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		pts := gridPoints(n, f.Expect)
		if tr, ok, err := TrendPlan(n); err != nil {
			t.Fatal(err)
		} else if ok {
			e := f.Expect[slices.IndexFunc(f.Expect, func(x presets.Expect) bool { return x.ID == tr.Expect })]
			for _, s := range tr.Series {
				for _, b := range tr.Batches {
					pts = append(pts, point(s.Preset, e, tr.Model, tr.Dataset, tr.TP, tr.PP, b))
				}
			}
		}
		for _, p := range pts {
			cfg, err := p.config()
			if err != nil {
				t.Fatal(err)
			}
			q := p
			q.tp, q.pp = max(1, cfg.TP), max(1, cfg.PP)
			if q == p {
				continue
			}
			named, err := q.config()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg, named) {
				t.Errorf("%v and %v resolve to the same split but build different configurations", p, q)
			}
			shared++
		}
	}
	if shared == 0 {
		t.Error("no grid point leaves its split to its preset: the check checked nothing")
	}
}
