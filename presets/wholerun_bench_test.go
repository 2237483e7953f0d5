package presets

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

// wholeRuns are the whole runs BenchmarkWholeRun times: the L3 family on the paper's
// OPT-66B and OpenR1 (§6.1), every other preset at its defaults.
func wholeRuns() map[string][]string {
	runs := map[string][]string{}
	for _, n := range Names() {
		runs[n] = nil
	}
	for _, n := range l3Family {
		runs[n] = []string{"model.name=opt-66b", "workload.dataset=openr1"}
	}
	return runs
}

// BenchmarkWholeRun times a headless whole run (no step limit) of 1,000 requests of each
// preset (40 under -short), jumping from event to event as run does, and, on 20 requests
// (2 under -short), stepping every iteration. The presets that draw every neuron each
// token (hermes, hermes-host, dejavu: tens of milliseconds a token, 128 tokens a request)
// cannot jump, so their runs are 20 requests (1 under -short) in both modes.
func BenchmarkWholeRun(b *testing.B) {
	runs := wholeRuns()
	for _, name := range Names() {
		tracks := !denseHermes[name] && familyOf(name) == "hermes"
		for _, mode := range []string{"jump", "step"} {
			req := 1000
			switch {
			case testing.Short() && tracks:
				req = 1
			case testing.Short() && mode == "jump":
				req = 40
			case testing.Short():
				req = 2
			case mode == "step" || tracks:
				req = 20
			}
			b.Run(fmt.Sprintf("%s/%s/%d", name, mode, req), func(b *testing.B) {
				edits := append([]string{fmt.Sprintf("workload.requests=%d", req), "workload.steps=0"}, runs[name]...)
				var iters int
				for range b.N {
					e := benchEngine(b, name, mode == "jump", edits)
					for {
						if _, err := e.Step(); errors.Is(err, sim.ErrDone) {
							break
						} else if err != nil {
							b.Fatal(err)
						}
					}
					iters = e.Result().Iterations
				}
				b.ReportMetric(float64(iters), "iterations")
			})
		}
	}
}
