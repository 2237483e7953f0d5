package experiment

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/pimtui/pimtui/presets"
)

// ClaimResult is a claim checked against a run: Value is the step's metric, Against the
// right-hand side (the value, or factor × the other step's metric).
type ClaimResult struct {
	Step, Index int // 1-based
	presets.Claim
	Value, Against float64
	Holds          bool
}

// measureStep runs step i (0-based) of l with overrides for the iterations its claims
// measure and returns the run's metrics by name, as a sweep names them.
func measureStep(l *presets.Lesson, i int, overrides ...string) (map[string]float64, error) {
	cfg, err := l.StepConfig(i, overrides...)
	if err != nil {
		return nil, err
	}
	s := l.Steps[i]
	n := s.Steps
	if s.MeasureSteps > 0 {
		n = s.MeasureSteps
	}
	if w := cfg.Workload.Warmup; w >= n {
		return nil, fmt.Errorf("lesson %s step %d measures %d iterations but workload.warmup leaves out the first %d", l.Name, i+1, n, w)
	}
	cfg.Workload.Steps = n
	cfg.Recycle = true
	r, err := runToEnd(cfg)
	if err != nil {
		return nil, fmt.Errorf("lesson %s step %d (%s): %w", l.Name, i+1, s.Preset, err)
	}
	return r.MetricValues(), nil
}

// EvaluateClaims runs every step of l that has a claim or is compared with, spread over
// the machine's cores, and checks each claim. overrides apply to every step, as on the
// command line. A claim on a metric the step's system does not report is an error.
func EvaluateClaims(l *presets.Lesson, overrides ...string) ([]ClaimResult, error) {
	need := make([]bool, len(l.Steps))
	for i, s := range l.Steps {
		for _, c := range s.Claims {
			need[i] = true
			if c.ThanStep != nil {
				need[*c.ThanStep-1] = true
			}
		}
	}
	metrics := make([]map[string]float64, len(l.Steps))
	errs := make([]error, len(l.Steps))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range l.Steps {
		if !need[i] {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			metrics[i], errs[i] = measureStep(l, i, overrides...)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	lookup := func(step int, name string) (float64, error) {
		v, ok := metrics[step][name]
		if !ok {
			var have []string
			for k := range metrics[step] {
				have = append(have, k)
			}
			sort.Strings(have)
			return 0, fmt.Errorf("lesson %s step %d (%s) reports no %s; %s", l.Name, step+1, l.Steps[step].Preset, name, presets.DidYouMean(name, have))
		}
		return v, nil
	}
	var out []ClaimResult
	for i, s := range l.Steps {
		for j, c := range s.Claims {
			r := ClaimResult{Step: i + 1, Index: j + 1, Claim: c}
			var err error
			if r.Value, err = lookup(i, c.Metric); err != nil {
				return nil, err
			}
			if c.Value != nil {
				r.Against = *c.Value
			} else {
				o, err := lookup(*c.ThanStep-1, c.Metric)
				if err != nil {
					return nil, err
				}
				r.Against = o * factor(c)
			}
			r.Holds = compare(r.Value, c.Op, r.Against)
			out = append(out, r)
		}
	}
	return out, nil
}

// factor is the claim's factor, 1 when it gives none.
func factor(c presets.Claim) float64 {
	if c.Factor == nil {
		return 1
	}
	return *c.Factor
}

func compare(a float64, op string, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	switch op {
	case "<":
		return a < b
	case ">":
		return a > b
	case "<=":
		return a <= b
	case ">=":
		return a >= b
	}
	return false
}
