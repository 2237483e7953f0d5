package experiment

import (
	"math"
	"strings"

	"github.com/pimtui/pimtui/presets"
)

// The one rule every family's paper figures are scored by. A speed-up (any ratio of a
// system to a baseline, batch sizes included) is within when its ratio is within ±25% of
// the paper's and its logarithm within ±25% of the paper's logarithm: the second half
// keeps a small gain honest (1.20× against 1.6× is 75% of the ratio but 39% of the gain)
// and a large one too (7.1× against 5.0× is 142% of the ratio). An absolute figure
// (tokens/s) is within ±15%; a utilisation within ±0.05.
const (
	SpeedupRatioTol = 0.25
	SpeedupLogTol   = 0.25
	AbsoluteTol     = 0.15
	UtilizationTol  = 0.05
)

// Kind is what a paper figure measures, which decides how it is scored.
type Kind int

// The kinds of figure.
const (
	Speedup     Kind = iota // a ratio to a baseline
	Absolute                // a value in its unit (tokens/s, a batch size)
	Utilization             // a fraction of a resource's peak, 0 to 1
)

// KindOf is the kind of figure an expectation declares.
func KindOf(e presets.Expect) Kind {
	switch {
	case e.Versus != "":
		return Speedup
	case strings.HasPrefix(e.Metric, "utilization."):
		return Utilization
	}
	return Absolute
}

// Within reports whether measured matches the paper's figure by the rule.
func Within(k Kind, paper, measured float64) bool {
	if math.IsNaN(measured) || math.IsInf(measured, 0) {
		return false
	}
	switch k {
	case Speedup:
		if paper <= 0 || measured <= 0 {
			return false
		}
		lp, lm := math.Log(paper), math.Log(measured)
		return math.Abs(measured/paper-1) <= SpeedupRatioTol && math.Abs(lm-lp) <= SpeedupLogTol*math.Abs(lp)
	case Utilization:
		return math.Abs(measured-paper) <= UtilizationTol
	}
	return math.Abs(measured/paper-1) <= AbsoluteTol
}

// Rule states the rule for a kind of figure, for tables and JSON.
func (k Kind) Rule() string {
	switch k {
	case Speedup:
		return "ratio within ±25% and its logarithm within ±25%"
	case Utilization:
		return "within ±0.05"
	}
	return "within ±15%"
}
