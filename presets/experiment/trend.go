package experiment

import (
	"runtime"
	"slices"
	"sync"

	"github.com/pimtui/pimtui/presets"
)

// Trend is a paper figure's curve redrawn: a preset's metric against batch size, next to
// the baselines its expectations compare it with, at the first model and dataset of the
// expectation's grid (the batches are the grid's).
type Trend struct {
	Preset, Expect, Metric string
	Model, Dataset         string
	TP, PP                 int // the split (the paper's for the model, or the grid's); 0: as each preset file says
	Batches                []int
	Series                 []TrendSeries
}

// TrendSeries is one system's curve: its metric at each batch (NaN where it runs out of
// memory).
type TrendSeries struct {
	Preset string
	Values []float64
}

// TrendPlan returns the curve a preset's expectations imply, without measuring it: the
// first expectation that compares against a baseline over three or more batch sizes,
// with every baseline of the preset's expectations on the same metric over the same
// batches. ok is false when no expectation is a curve.
func TrendPlan(name string) (Trend, bool, error) {
	f, err := presets.Get(name)
	if err != nil {
		return Trend{}, false, err
	}
	for _, e := range f.Expect {
		if e.Versus == "" || len(e.Grid.Model) == 0 || len(batchesOf(e, 0)) < 3 || len(datasetsOf(e, 0)) == 0 {
			continue
		}
		t := Trend{Preset: name, Expect: e.ID, Metric: e.Metric, Model: e.Grid.Model[0], Dataset: datasetsOf(e, 0)[0], Batches: batchesOf(e, 0)}
		if sp, ok := f.Model.SplitOf(t.Model); ok {
			t.TP, t.PP = sp.TP, sp.PP
		}
		if len(e.Grid.TP) > 0 {
			t.TP = e.Grid.TP[0]
		}
		if len(e.Grid.PP) > 0 {
			t.PP = e.Grid.PP[0]
		}
		t.Series = []TrendSeries{{Preset: name}}
		for _, o := range f.Expect {
			if o.Metric != e.Metric || !slices.Equal(o.Grid.Batch, e.Grid.Batch) {
				continue
			}
			for _, b := range baselines(o) {
				if !slices.ContainsFunc(t.Series, func(s TrendSeries) bool { return s.Preset == b }) {
					t.Series = append(t.Series, TrendSeries{Preset: b})
				}
			}
		}
		return t, true, nil
	}
	return Trend{}, false, nil
}

// MeasureTrend fills in a planned trend's values, running the points over the machine's
// cores exactly as Evaluate runs an expectation's grid (warm-up, then the measured
// iterations), so the curve agrees with the outcome it illustrates.
func MeasureTrend(t Trend) (Trend, error) {
	f, err := presets.Get(t.Preset)
	if err != nil {
		return t, err
	}
	var e presets.Expect
	for _, x := range f.Expect {
		if x.ID == t.Expect {
			e = x
		}
	}
	type job struct{ s, b int }
	var jobs []job
	for i := range t.Series {
		t.Series[i].Values = make([]float64, len(t.Batches))
		for j := range t.Batches {
			jobs = append(jobs, job{i, j})
		}
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for k := range work {
				j := jobs[k]
				p := point(t.Series[j.s].Preset, e, t.Model, t.Dataset, t.TP, t.PP, t.Batches[j.b])
				t.Series[j.s].Values[j.b], errs[k] = measure(p)
			}
		})
	}
	for k := range jobs {
		work <- k
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return t, err
		}
	}
	return t, nil
}
