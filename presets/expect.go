package presets

import (
	"errors"
	"fmt"
	"runtime"
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
}

type gridPoint struct {
	preset, model, dataset       string
	tp, pp, batch, steps, warmup int
}

// Evaluate measures every expectation a preset declares. Runs are shared between
// expectations and spread over the machine's cores; results do not depend on how many.
func Evaluate(name string) ([]Outcome, error) {
	f, err := Get(name)
	if err != nil {
		return nil, err
	}
	var points []gridPoint
	index := map[gridPoint]int{}
	add := func(p gridPoint) {
		if _, ok := index[p]; !ok {
			index[p] = len(points)
			points = append(points, p)
		}
	}
	split := func(e Expect, i int) (int, int) {
		tp, pp := f.Model.TP, f.Model.PP
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
			for _, d := range e.Grid.Dataset {
				for _, b := range e.Grid.Batch {
					add(gridPoint{name, m, d, tp, pp, b, e.Steps, e.Warmup})
					add(gridPoint{e.Versus, m, d, tp, pp, b, e.Steps, e.Warmup})
				}
			}
		}
	}
	values := make([]float64, len(points))
	errs := make([]error, len(points))
	var wg sync.WaitGroup
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) {
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
			for _, d := range e.Grid.Dataset {
				for _, b := range e.Grid.Batch {
					a := values[index[gridPoint{name, m, d, tp, pp, b, e.Steps, e.Warmup}]]
					v := values[index[gridPoint{e.Versus, m, d, tp, pp, b, e.Steps, e.Warmup}]]
					sum += a / v
					o.Points++
				}
			}
		}
		o.Measured = sum / float64(o.Points)
		dev := o.Measured/e.Ratio - 1
		o.Within = dev <= e.Tolerance && dev >= -e.Tolerance
		out = append(out, o)
	}
	return out, nil
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
		fmt.Sprintf("model.tp=%d", p.tp), fmt.Sprintf("model.pp=%d", p.pp),
		fmt.Sprintf("workload.batch=%d", p.batch), fmt.Sprintf("workload.requests=%d", p.batch*20),
		fmt.Sprintf("workload.steps=%d", p.steps+p.warmup), fmt.Sprintf("workload.warmup=%d", p.warmup),
		"workload.arrival=closed",
	} {
		if err := f.Set(kv); err != nil {
			return 0, fmt.Errorf("%s: %w", p.preset, err)
		}
	}
	cfg, err := Build(f, nil)
	if err != nil {
		return 0, fmt.Errorf("%s on %s: %w", p.preset, p.model, err)
	}
	cfg.Recycle = true
	e, err := sim.New(cfg)
	var be *sim.BatchError
	if errors.As(err, &be) {
		// The paper's batch does not fit this memory: run the largest one that does.
		cfg.Workload.MaxBatch = be.Max
		e, err = sim.New(cfg)
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
	return e.Result().ThroughputTokS, nil
}
