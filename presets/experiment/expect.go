package experiment

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// Outcome is an expectation measured: the mean over its grid of this preset's metric
// divided by the baseline's (or the metric itself), scored by the one rule (Within).
type Outcome struct {
	presets.Expect
	Preset   string
	Measured float64
	Within   bool // by the rule of score.go
	Points   int
	Skipped  int // grid points left out because a system cannot hold a request of the workload
	// FLOPUtilization is, for each system of the comparison (this preset and its baselines)
	// that reports one, the mean over the grid's points of its flop_utilization: the share
	// of its compute units' peak FLOP rate the run fills.
	FLOPUtilization map[string]float64
}

// gridPoint is one run of an expectation's grid.
type gridPoint struct {
	preset, model, dataset string
	tp, pp, batch          int
	method                 string
	steps, warmup          int // steady
	requests               int // whole (0: one batch)
	metric                 string
}

// point is the run of e's grid at model, dataset and batch for preset.
func point(preset string, e presets.Expect, model, dataset string, tp, pp, batch int) gridPoint {
	return gridPoint{preset, model, dataset, tp, pp, batch, e.Method, e.Steps, e.Warmup, e.Requests, e.Metric}
}

// Evaluate measures every expectation a preset declares. Runs are shared between
// expectations and spread over the machine's cores; results do not depend on how many.
func Evaluate(name string) ([]Outcome, error) { return EvaluateIDs(name, nil) }

// EvaluateIDs measures the expectations of a preset with these ids (all when ids is
// empty), in the preset's order.
func EvaluateIDs(name string, ids []string) ([]Outcome, error) {
	f, err := presets.Get(name)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		f.Expect = slices.DeleteFunc(f.Expect, func(e presets.Expect) bool { return !slices.Contains(ids, e.ID) })
	}
	return EvaluateGrid(name, f.Expect)
}

// EvaluateOn is Evaluate on at most workers goroutines (0: one per core): the explorer
// measures in the background on one, so that stepping keeps the other cores.
func EvaluateOn(name string, workers int) ([]Outcome, error) {
	f, err := presets.Get(name)
	if err != nil {
		return nil, err
	}
	return evaluate(name, f.Expect, workers)
}

// EvaluateGrid measures expectations of preset name as given, grids included (a
// smaller grid than the preset declares, say, for a quick check).
func EvaluateGrid(name string, exps []presets.Expect) ([]Outcome, error) {
	return evaluate(name, exps, 0)
}

func evaluate(name string, exps []presets.Expect, workers int) ([]Outcome, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	points := gridPoints(name, exps)
	index := map[gridPoint]int{}
	for i, p := range points {
		index[p] = i
	}
	runs := make([]map[string]float64, len(points))
	errs := make([]error, len(points))
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(workers, max(1, len(points))) {
		wg.Go(func() {
			for i := range work {
				runs[i], errs[i] = measureRun(points[i])
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
	value := func(p gridPoint) float64 { return metric(runs[index[p]], p.metric) }
	var out []Outcome
	for _, e := range exps {
		o := Outcome{Expect: e, Preset: name}
		var sum float64
		util := map[string][]float64{}
		for i, m := range e.Grid.Model {
			tp, pp := split(e, i)
			for _, d := range datasetsOf(e, i) {
				for _, b := range batchesOf(e, i) {
					for _, sys := range append([]string{name}, baselines(e)...) {
						if u, ok := runs[index[point(sys, e, m, d, tp, pp, b)]][flopUtilization]; ok {
							util[sys] = append(util[sys], u)
						}
					}
					a := value(point(name, e, m, d, tp, pp, b))
					v := 0.0
					if e.Versus == "" {
						v = 1 // absolute: the metric itself
					}
					for _, bl := range baselines(e) {
						v = max(v, value(point(bl, e, m, d, tp, pp, b)))
					}
					if math.IsNaN(a) || math.IsNaN(v) {
						// a system that cannot hold a request of this point's workload has no
						// ratio (the paper's figures leave such a bar out)
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
		o.Within = o.Points > 0 && Within(KindOf(e), e.Target(), o.Measured)
		for sys, us := range util {
			if o.FLOPUtilization == nil {
				o.FLOPUtilization = map[string]float64{}
			}
			o.FLOPUtilization[sys] = mean(us)
		}
		out = append(out, o)
	}
	return out, nil
}

// datasetsOf and batchesOf are the datasets and batches model i of e's grid runs.
func datasetsOf(e presets.Expect, i int) []string {
	if i < len(e.Grid.ModelDataset) {
		return e.Grid.ModelDataset[i]
	}
	return e.Grid.Dataset
}

func batchesOf(e presets.Expect, i int) []int {
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

// gridPoints are the runs the expectations exps of preset name measure, each once, in
// the grids' order.
func gridPoints(name string, exps []presets.Expect) []gridPoint {
	var points []gridPoint
	add := func(p gridPoint) {
		if !slices.Contains(points, p) {
			points = append(points, p)
		}
	}
	for _, e := range exps {
		for i, m := range e.Grid.Model {
			tp, pp := split(e, i)
			for _, d := range datasetsOf(e, i) {
				for _, b := range batchesOf(e, i) {
					add(point(name, e, m, d, tp, pp, b))
					for _, v := range baselines(e) {
						add(point(v, e, m, d, tp, pp, b))
					}
				}
			}
		}
	}
	return points
}

// split is the tensor and pipeline split of grid model i of e. A grid without tp or pp
// leaves each preset (the tested one and its baselines) at its own split: 0 means "as the
// preset file says".
func split(e presets.Expect, i int) (tp, pp int) {
	if i < len(e.Grid.TP) {
		tp = e.Grid.TP[i]
	}
	if i < len(e.Grid.PP) {
		pp = e.Grid.PP[i]
	}
	return tp, pp
}

// baselines are the presets e compares against: versus and best_of (none for an absolute
// expectation).
func baselines(e presets.Expect) []string {
	if e.Versus == "" {
		return nil
	}
	return append([]string{e.Versus}, e.BestOf...)
}

// steadyRequests is the request stream of a steady-state run: more than any warm-up and
// window can finish, so the closed loop stays full (requests are drawn as they are needed).
const steadyRequests = 10_000_000

// slots caps the runs measuring at once, whichever evaluations ask for them, to the
// machine's cores.
var slots = make(chan struct{}, runtime.GOMAXPROCS(0))

// measured keeps each grid point's run: runs are deterministic, and a curve redraws
// points its expectation's grid already ran. A point asked for while it runs is waited
// for, not run again: `reproduce` measures every preset at once, and presets share
// baselines (NeuPIMs' npu-only, L3's own curve point).
var measured sync.Map // gridPoint without its metric → func() (map[string]float64, error)

// flopUtilization is the metric of a run's flop_utilization, where its system gives one.
const flopUtilization = "flop_utilization"

// measure is one grid point's metric as the paper measured it (measureRun); NaN where the
// system cannot hold a request of the workload.
func measure(p gridPoint) (float64, error) {
	m, err := measureRun(p)
	return metric(m, p.metric), err
}

// metric is a run's metric, NaN for a run that did not run (nil).
func metric(run map[string]float64, name string) float64 {
	if run == nil {
		return math.NaN()
	}
	return run[name]
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// measureRun runs one grid point as the paper measured: a steady state (a closed loop
// whose batch is kept full, warmed up, then measured) or whole runs (every request from
// its admission to its last token, all output tokens over all the time), and gives the
// run's metrics (Metrics). A system that cannot hold a request of the workload gives nil:
// it has no figure at this point.
func measureRun(p gridPoint) (map[string]float64, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	p.metric = ""
	// A grid that names the preset's own split and one that leaves it to the preset ask
	// for the same run.
	p.tp, p.pp = max(1, cfg.TP), max(1, cfg.PP)
	run, _ := measured.LoadOrStore(p, sync.OnceValues(func() (map[string]float64, error) { return runPoint(p, cfg) }))
	return run.(func() (map[string]float64, error))()
}

// runPoint runs grid point p, configured as cfg, once (measureRun).
func runPoint(p gridPoint, cfg sim.Config) (map[string]float64, error) {
	cfg.Recycle = true
	slots <- struct{}{}
	r, err := runToEnd(cfg)
	<-slots
	var unfit *sim.UnfitError
	switch {
	case err == nil:
		return r.MetricValues(), nil
	case errors.As(err, &unfit):
		return nil, nil
	}
	return nil, fmt.Errorf("%s on %s: %w", p.preset, p.model, err)
}

// config is the engine configuration of grid point p: its preset on the point's model,
// dataset, split and batch, run by the point's method.
func (p gridPoint) config() (sim.Config, error) {
	f, err := presets.Get(p.preset)
	if err != nil {
		return sim.Config{}, err
	}
	sets := []string{"model.name=" + p.model, "workload.dataset=" + p.dataset, "workload.arrival=closed",
		fmt.Sprintf("workload.batch=%d", p.batch)}
	switch p.method {
	case "steady":
		sets = append(sets, fmt.Sprintf("workload.requests=%d", steadyRequests),
			fmt.Sprintf("workload.steps=%d", p.steps+p.warmup), fmt.Sprintf("workload.warmup=%d", p.warmup))
	case "whole":
		sets = append(sets, fmt.Sprintf("workload.requests=%d", cmp.Or(p.requests, p.batch)), "workload.steps=0", "workload.warmup=0")
	default:
		return sim.Config{}, fmt.Errorf("%s: unknown method %q", p.preset, p.method)
	}
	if p.tp > 0 {
		sets = append(sets, fmt.Sprintf("model.tp=%d", p.tp))
	}
	if p.pp > 0 {
		sets = append(sets, fmt.Sprintf("model.pp=%d", p.pp))
	}
	for _, kv := range sets {
		if err := f.Set(kv); err != nil {
			return sim.Config{}, fmt.Errorf("%s: %w", p.preset, err)
		}
	}
	cfg, err := presets.Build(f, nil)
	if err != nil {
		return sim.Config{}, fmt.Errorf("%s on %s: %w", p.preset, p.model, err)
	}
	return cfg, nil
}
