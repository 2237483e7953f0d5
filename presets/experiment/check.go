package experiment

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// Check is one figure pimtui is validated against: a number measured outside this
// project (the NeuPIMs authors' simulator, a real H100, a paper's measured table) beside
// what pimtui computes for the same configuration and workload.
type Check struct {
	Reference string  // which reference: "neupims-sim", "h100", "lolpim-table8"
	Name      string  // the figure within it, e.g. "neupims · iteration" or "B=64 L=2048 · full"
	Preset    string  // the pimtui preset whose figure this is (the explorer shows it with the preset)
	Source    string  // where the reference figure comes from: file, commit, configuration, batch
	Unit      string  // "ms", "µs", "tok/s", "%"
	Ref       float64 // the reference's figure
	Pimtui    float64 // pimtui's figure for the same point
	Tol       float64 // the relative tolerance the check is held to (0.10 = ±10%)
	Detail    bool    // a finer figure (a stage, an op, a part of a layer), shown with --detail
	// Gap, when pimtui is outside the tolerance, says which mechanism or missing fact
	// explains the difference; a check outside its tolerance without one fails the tests.
	Gap string
}

// Error is pimtui's relative error against the reference: pimtui / reference − 1.
func (c Check) Error() float64 {
	if c.Ref == 0 {
		return math.NaN()
	}
	return c.Pimtui/c.Ref - 1
}

// Within reports whether pimtui's figure is within the check's tolerance.
func (c Check) Within() bool {
	e := c.Error()
	return !math.IsNaN(e) && math.Abs(e) <= c.Tol+1e-12
}

// A checker measures one reference's checks.
type checker struct {
	name string
	run  func() ([]Check, error)
}

var checkers []checker

// registerChecks adds a reference's checks to those Validations runs; each reference's
// file registers itself.
func registerChecks(name string, run func() ([]Check, error)) {
	if slices.ContainsFunc(checkers, func(c checker) bool { return c.name == name }) {
		panic(fmt.Sprintf("experiment: reference %q registered twice", name))
	}
	checkers = append(checkers, checker{name, run})
}

// A Reference is a source of figures measured outside pimtui, as the command and the
// explorer describe it.
type Reference struct {
	Name  string // as registered: "neupims-sim"
	Title string // what it is, for the heading of its checks
	Short string // the same in a few words, for the explorer's preset picker
}

// references says what each reference named in the checks is.
var references = map[string]Reference{
	"neupims-sim": {Title: "the NeuPIMs authors' cycle-level simulator (casys-kaist/NeuPIMs: main f299af3, npu+pim e51a4af, npu-only 57617ee), one layer of one decode step composed into 32 layers",
		Short: "authors' simulator"},
	"h100": {Title: "a real H100's decode layer: one LLaMA-2-70B-class layer (d_model 8192, 64 query and 8 KV heads) timed on an H100 80GB SXM",
		Short: "real H100"},
	"lolpim-table8": {Title: "LoL-PIM's measured Table 8: Qwen1.5-7B and 14B on Musique, throughput and utilisation on the PIM modules",
		Short: "LoL-PIM Table 8"},
}

// Describe says what reference name is; a reference without a description is titled by
// its name.
func Describe(name string) Reference {
	r, ok := references[name]
	if !ok {
		r = Reference{Title: name, Short: name}
	}
	r.Name = name
	return r
}

// References lists the registered references' names in registration order.
func References() []string {
	out := make([]string, len(checkers))
	for i, c := range checkers {
		out[i] = c.name
	}
	return out
}

// Validations measures the checks of the named references (all when names is empty),
// each reference on its own goroutine, in registration order.
func Validations(names ...string) ([]Check, error) {
	var run []checker
	for _, c := range checkers {
		if len(names) == 0 || slices.Contains(names, c.name) {
			run = append(run, c)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(checkers, func(c checker) bool { return c.name == n }) {
			return nil, fmt.Errorf("no reference %q; the references are %v", n, References())
		}
	}
	out := make([][]Check, len(run))
	errs := make([]error, len(run))
	var wg sync.WaitGroup
	for i, c := range run {
		wg.Go(func() { out[i], errs[i] = c.run() })
	}
	wg.Wait()
	var all []Check
	for i := range run {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s: %w", run[i].name, errs[i])
		}
		all = append(all, out[i]...)
	}
	return all, nil
}
