package presets

import (
	"testing"
)

// Every preset's declared paper results hold as declared: a reproduced ratio is within
// its tolerance, and one declared not reproduced is outside it (so the declaration stays
// true) yet points the same way as the paper.
func TestDeclaredExpectations(t *testing.T) {
	if testing.Short() {
		t.Skip("the expectation grids take seconds; skipped in -short mode")
	}
	for _, n := range Names() {
		f, err := Get(n)
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
			t.Logf("%s %s: paper %.2f%s, pimtui %.2f%s over %d points (tolerance ±%.0f%%)", n, o.ID, o.Target(), unit(o), o.Measured, unit(o), o.Points, 100*o.Tolerance)
			switch {
			case o.Reproduced && !o.Within:
				t.Errorf("%s %s: declared reproduced, but %.2f%s is outside %.2f%s ± %.0f%%", n, o.ID, o.Measured, unit(o), o.Target(), unit(o), 100*o.Tolerance)
			case !o.Reproduced && o.Within:
				t.Errorf("%s %s: declared not reproduced, but %.2f%s is within %.2f%s ± %.0f%%; update the preset", n, o.ID, o.Measured, unit(o), o.Target(), unit(o), 100*o.Tolerance)
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
