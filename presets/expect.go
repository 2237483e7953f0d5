package presets

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/pimtui/pimtui/sim"
)

// Outcome is an expectation measured: the mean over its grid of this preset's metric
// divided by the baseline's.
type Outcome struct {
	Expect
	Preset   string
	Measured float64
	Within   bool // |Measured/Ratio − 1| ≤ Tolerance
	Points   int
	Skipped  int // grid points left out because a system cannot hold a request of the workload
}

type gridPoint struct {
	preset, model, dataset       string
	tp, pp, batch, steps, warmup int
	metric                       string
	requests                     int // requests per run (0: batch × 20)
}

// Evaluate measures every expectation a preset declares. Runs are shared between
// expectations and spread over the machine's cores; results do not depend on how many.
func Evaluate(name string) ([]Outcome, error) { return EvaluateIDs(name, nil) }

// EvaluateIDs measures the expectations of a preset with these ids (all when ids is
// empty), in the preset's order.
func EvaluateIDs(name string, ids []string) ([]Outcome, error) {
	f, err := Get(name)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		f.Expect = slices.DeleteFunc(f.Expect, func(e Expect) bool { return !slices.Contains(ids, e.ID) })
	}
	return EvaluateGrid(name, f.Expect)
}

// EvaluateOn is Evaluate on at most workers goroutines (0: one per core): the explorer
// measures in the background on one, so that stepping keeps the other cores.
func EvaluateOn(name string, workers int) ([]Outcome, error) {
	f, err := Get(name)
	if err != nil {
		return nil, err
	}
	return evaluate(name, f.Expect, workers)
}

// EvaluateGrid measures expectations of preset name as given, grids included (a
// smaller grid than the preset declares, say, for a quick check).
func EvaluateGrid(name string, exps []Expect) ([]Outcome, error) {
	return evaluate(name, exps, 0)
}

func evaluate(name string, exps []Expect, workers int) ([]Outcome, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	f := &File{Expect: exps}
	var points []gridPoint
	index := map[gridPoint]int{}
	add := func(p gridPoint) {
		if _, ok := index[p]; !ok {
			index[p] = len(points)
			points = append(points, p)
		}
	}
	// A grid without tp or pp leaves each preset (the tested one and its baselines) at its
	// own split: 0 below means "as the preset file says".
	split := func(e Expect, i int) (int, int) {
		tp, pp := 0, 0
		if i < len(e.Grid.TP) {
			tp = e.Grid.TP[i]
		}
		if i < len(e.Grid.PP) {
			pp = e.Grid.PP[i]
		}
		return tp, pp
	}
	for _, e := range f.Expect {
		for i, m := range e.Grid.Model {
			tp, pp := split(e, i)
			for _, d := range datasetsOf(e, i) {
				for _, b := range batchesOf(e, i) {
					add(gridPoint{name, m, d, tp, pp, b, e.Steps, e.Warmup, e.Metric, e.Requests})
					for _, v := range baselines(e) {
						add(gridPoint{v, m, d, tp, pp, b, e.Steps, e.Warmup, e.Metric, e.Requests})
					}
				}
			}
		}
	}
	values := make([]float64, len(points))
	errs := make([]error, len(points))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(workers, max(1, len(points))) {
		wg.Go(func() {
			for i := range work {
				values[i], errs[i] = measure(points[i])
			}
		})
	}
	for i := range points {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []Outcome
	for _, e := range f.Expect {
		o := Outcome{Expect: e, Preset: name}
		var sum float64
		for i, m := range e.Grid.Model {
			tp, pp := split(e, i)
			for _, d := range datasetsOf(e, i) {
				for _, b := range batchesOf(e, i) {
					a := values[index[gridPoint{name, m, d, tp, pp, b, e.Steps, e.Warmup, e.Metric, e.Requests}]]
					v := 0.0
					if e.Versus == "" {
						v = 1 // absolute: the metric itself
					}
					for _, bl := range baselines(e) {
						v = max(v, values[index[gridPoint{bl, m, d, tp, pp, b, e.Steps, e.Warmup, e.Metric, e.Requests}]])
					}
					if math.IsNaN(a) || math.IsNaN(v) {
						// a system that runs out of memory at this point has no ratio (the
						// paper's figures leave such a bar out)
						o.Skipped++
						continue
					}
					if e.Mean == "max" {
						if o.Points == 0 || a/v > sum {
							sum = a / v
						}
						o.Points++
						continue
					}
					if e.Mean == "geometric" {
						sum += math.Log(a / v)
					} else {
						sum += a / v
					}
					o.Points++
				}
			}
		}
		o.Measured = sum / float64(max(1, o.Points))
		if e.Mean == "max" {
			o.Measured = sum
		}
		if e.Mean == "geometric" {
			o.Measured = math.Exp(o.Measured)
		}
		dev := o.Measured/e.Target() - 1
		o.Within = dev <= e.Tolerance && dev >= -e.Tolerance
		out = append(out, o)
	}
	return out, nil
}

// datasetsOf and batchesOf are the datasets and batches model i of e's grid runs.
func datasetsOf(e Expect, i int) []string {
	if i < len(e.Grid.ModelDataset) {
		return e.Grid.ModelDataset[i]
	}
	return e.Grid.Dataset
}

func batchesOf(e Expect, i int) []int {
	if i >= len(e.Grid.ModelMaxBatch) {
		return e.Grid.Batch
	}
	var out []int
	for _, b := range e.Grid.Batch {
		b = min(b, e.Grid.ModelMaxBatch[i])
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// baselines are the presets e compares against: versus and best_of (none for an absolute
// expectation).
func baselines(e Expect) []string {
	if e.Versus == "" {
		return nil
	}
	return append([]string{e.Versus}, e.BestOf...)
}

// Target is the paper's figure an expectation is checked against: the ratio, or the
// value of an absolute expectation.
func (e Expect) Target() float64 {
	if e.Versus == "" {
		return e.Value
	}
	return e.Ratio
}

// measure runs one grid point: a closed batch warmed up to a mix of lengths, then
// measured for the given iterations, as the paper measures steady-state throughput.
func measure(p gridPoint) (float64, error) {
	f, err := Get(p.preset)
	if err != nil {
		return 0, err
	}
	for _, kv := range []string{
		"model.name=" + p.model, "workload.dataset=" + p.dataset,
		fmt.Sprintf("workload.batch=%d", p.batch), fmt.Sprintf("workload.requests=%d", cmp.Or(p.requests, p.batch*20)),
		fmt.Sprintf("workload.steps=%d", p.steps+p.warmup), fmt.Sprintf("workload.warmup=%d", p.warmup),
		"workload.arrival=closed",
	} {
		if err := f.Set(kv); err != nil {
			return 0, fmt.Errorf("%s: %w", p.preset, err)
		}
	}
	for key, v := range map[string]int{"model.tp": p.tp, "model.pp": p.pp} {
		if v > 0 {
			if err := f.Set(fmt.Sprintf("%s=%d", key, v)); err != nil {
				return 0, fmt.Errorf("%s: %w", p.preset, err)
			}
		}
	}
	cfg, err := Build(f, nil)
	if err != nil {
		return 0, fmt.Errorf("%s on %s: %w", p.preset, p.model, err)
	}
	cfg.Recycle = true
	e, err := sim.New(cfg)
	var unfit *sim.UnfitError
	if errors.As(err, &unfit) {
		// a system that cannot hold a request of the workload has no figure here
		return math.NaN(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("%s on %s: %w", p.preset, p.model, err)
	}
	for {
		if _, err := e.Step(); err != nil {
			if errors.Is(err, sim.ErrDone) {
				break
			}
			return 0, err
		}
	}
	if p.metric == "mean_batch" {
		return e.Result().MeanBatch, nil
	}
	return e.Result().ThroughputTokS, nil
}
