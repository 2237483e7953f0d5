package experiment

import (
	"math"
	"strings"
	"testing"
)

// pimtui's gpu-h100 decode layer agrees with the real H100's on every measured point:
// the layer, its GEMMs and its attention within ±10% each, and within 5% on average.
func TestH100ChecksAgree(t *testing.T) {
	cs, err := Validations("h100")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 6*4*2+6 {
		t.Fatalf("%d checks, want a layer and an attention for each of 6 × 4 points and the GEMMs of each of 6 batches", len(cs))
	}
	var sum float64
	for _, c := range cs {
		if c.Reference != "h100" || c.Preset != "gpu-h100" || c.Unit != "µs" || c.Tol != 0.10 {
			t.Errorf("%s: reference %q, preset %q, unit %q, tolerance %g", c.Name, c.Reference, c.Preset, c.Unit, c.Tol)
		}
		if detail := !strings.HasSuffix(c.Name, "· full"); c.Detail != detail {
			t.Errorf("%s: detail %v, want %v", c.Name, c.Detail, detail)
		}
		if !c.Within() || c.Gap != "" {
			t.Errorf("%s: pimtui %.1f µs against %.1f µs measured (%+.1f%%), gap %q", c.Name, c.Pimtui, c.Ref, 100*c.Error(), c.Gap)
		}
		sum += math.Abs(c.Error())
		t.Logf("%-22s measured %9.1f µs  pimtui %9.1f µs  %+5.1f%%", c.Name, c.Ref, c.Pimtui, 100*c.Error())
	}
	mean := sum / float64(len(cs))
	t.Logf("mean |error| %.2f%% over %d checks", 100*mean, len(cs))
	if mean > 0.05 {
		t.Errorf("mean |error| %.1f%%, want at most 5%%", 100*mean)
	}
}
