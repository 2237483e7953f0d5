package experiment

import (
	"math"
	"testing"

	"github.com/pimtui/pimtui/presets"
)

// The one rule, on the cases it exists for.
func TestScoringRule(t *testing.T) {
	cases := []struct {
		kind            Kind
		paper, measured float64
		within          bool
	}{
		{Speedup, 1.6, 1.6, true},
		{Speedup, 1.6, 1.5, true},   // 94% of the ratio, 86% of the gain
		{Speedup, 1.6, 1.20, false}, // 75% of the ratio but 39% of the gain
		{Speedup, 5.0, 7.1, false},  // 142% of the ratio
		{Speedup, 5.0, 6.2, true},   // 124% of the ratio, 113% of the log
		{Speedup, 2.4, 2.9, true},   // 121% of the ratio, 122% of the log
		{Speedup, 2.4, 3.0, false},  // 125% of the ratio, but 125.5% of the log
		{Speedup, 14.3, 10.8, true}, // 76% of the ratio, 89% of the log
		{Speedup, 14.3, 10.6, false},
		{Speedup, 0.5, 0.45, true}, // a slowdown: logs of the same sign
		{Speedup, 1.6, 0.9, false}, // the other way from the paper
		{Speedup, 1.6, math.NaN(), false},
		{Absolute, 13.75, 15.8, true},
		{Absolute, 13.75, 15.9, false},
		{Absolute, 20.37, 17.4, true},
		{Absolute, 20.37, 17.2, false},
		{Utilization, 0.40, 0.45, true},
		{Utilization, 0.40, 0.351, true},
		{Utilization, 0.40, 0.46, false},
	}
	for _, c := range cases {
		if got := Within(c.kind, c.paper, c.measured); got != c.within {
			t.Errorf("%s: paper %g, measured %g: within %v, want %v", c.kind.Rule(), c.paper, c.measured, got, c.within)
		}
	}
}

// Each expectation is scored by the kind of figure it declares.
func TestKindOfExpectation(t *testing.T) {
	for _, c := range []struct {
		e    presets.Expect
		want Kind
	}{
		{presets.Expect{Versus: "npu-pim", Metric: "throughput_tok_s"}, Speedup},
		{presets.Expect{Versus: "hbm-pim", Metric: "mean_batch"}, Speedup},
		{presets.Expect{Metric: "throughput_tok_s"}, Absolute},
		{presets.Expect{Metric: "utilization.pim"}, Utilization},
	} {
		if got := KindOf(c.e); got != c.want {
			t.Errorf("%+v: kind %v, want %v", c.e, got, c.want)
		}
	}
}
