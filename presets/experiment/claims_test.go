package experiment

import (
	"strings"
	"testing"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/presets/internal/testutil"
)

// Every claim every lesson makes about the numbers holds when its steps run. This is
// what keeps a lesson from telling a class something the model does not compute.
func TestEmbeddedLessonClaimsHold(t *testing.T) {
	ls, err := presets.Lessons()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		t.Run(l.Name, func(t *testing.T) {
			if testutil.Quick() && l.Family == "hermes" {
				t.Skip("Hermes tracks every neuron of a 70B model: seconds per step under the race detector; go test without -short checks these claims")
			}
			t.Parallel()
			rs, err := EvaluateClaims(l)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range l.Steps {
				n += len(s.Claims)
			}
			if len(rs) != n || n == 0 {
				t.Fatalf("%d results for %d claims", len(rs), n)
			}
			for _, r := range rs {
				if !r.Holds {
					t.Errorf("step %d claim %d %q: %s = %g is not %s %g (%s)", r.Step, r.Index, r.Text, r.Metric, r.Value, r.Op, r.Against, r.AgainstText())
				}
			}
		})
	}
}

// A claim that does not hold is reported as such, with both sides measured.
func TestClaimThatFailsIsReported(t *testing.T) {
	src := strings.Replace(testutil.ValidLesson, `op = "<"`, `op = ">"`, 1)
	l, err := presets.ParseLesson("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := EvaluateClaims(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Holds || !rs[1].Holds {
		t.Fatalf("results %+v", rs)
	}
	if !(rs[0].Value > 0 && rs[0].Against > 0 && rs[0].Value < rs[0].Against) {
		t.Fatalf("dual row buffers' iteration %g should be below blocked PIM's %g", rs[0].Value, rs[0].Against)
	}
	// An override on the command line applies to every step.
	rs2, err := EvaluateClaims(l, "workload.batch=64")
	if err != nil {
		t.Fatal(err)
	}
	if rs2[0].Value == rs[0].Value {
		t.Fatal("the override changed nothing")
	}
}

// A claim on a lane group the step's system lacks fails when the lesson runs, naming
// what the system does report.
func TestClaimOnMissingLane(t *testing.T) {
	src := strings.Replace(testutil.ValidLesson, `metric = "utilization.npu"`, `metric = "utilization.gpu"`, 1)
	l, err := presets.ParseLesson("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = EvaluateClaims(l)
	if err == nil || !strings.Contains(err.Error(), "step 2 (npu-pim) reports no utilization.gpu") {
		t.Fatalf("got %v", err)
	}
}

// Measuring past a preset's warm-up is an error, not an empty result.
func TestMeasureBeyondWarmup(t *testing.T) {
	src := strings.Replace(testutil.ValidLesson, `"pim.dual_row_buffer=false", `, `"pim.dual_row_buffer=false", "workload.warmup=5", `, 1)
	l, err := presets.ParseLesson("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EvaluateClaims(l); err == nil || !strings.Contains(err.Error(), "measures 2 iterations but workload.warmup leaves out the first 5") {
		t.Fatalf("got %v", err)
	}
}
