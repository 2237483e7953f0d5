package sim_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// side runs preset name (with sets) for steps steps on a small stream and returns its
// configuration and its breakdown over them.
func side(t *testing.T, name string, steps int, sets ...string) (sim.Config, *sim.Breakdown, bool) {
	t.Helper()
	f, err := presets.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range append([]string{"workload.requests=24"}, sets...) {
		if err := f.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := presets.Build(f, nil)
	if err != nil {
		return cfg, nil, false // a prefill mode the family does not run
	}
	e, err := sim.New(cfg)
	if err != nil {
		return cfg, nil, false
	}
	b := &sim.Breakdown{}
	for range steps {
		s, err := e.Step()
		if errors.Is(err, sim.ErrDone) {
			break
		}
		if err != nil {
			t.Fatalf("%s %v: %v", name, sets, err)
		}
		b.Add(s)
	}
	return cfg, b, true
}

// near reports whether x is y within 1e-9 of scale.
func near(x, y, scale float64) bool { return math.Abs(x-y) <= 1e-9*scale }

// For every pair of presets of each family, decode only and with prompts where the
// family runs them: the critical path's parts sum to each side's iteration time and
// their changes to the difference, and each lane group's busy and idle time per lane sum
// to the iteration time, to 1e-9 relative.
func TestExplainPartsSumToTheDifference(t *testing.T) {
	families := map[string][]string{}
	for _, name := range presets.Names() {
		f, err := presets.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		families[f.Family] = append(families[f.Family], name)
	}
	if len(families) < 5 {
		t.Fatalf("families %v", families)
	}
	pairs := 0
	for family, names := range families {
		for _, prefill := range []string{"skip", "run"} {
			var bds []*sim.Breakdown
			var ran []string
			sets := []string{"workload.prefill=" + prefill}
			if family == "hermes" {
				// Its presets build every neuron of LLaMA2-70B; LLaMA2-7B runs the same
				// planners in half the time.
				sets = append(sets, "model.name=llama2-7b")
			}
			for _, name := range names {
				if _, b, ok := side(t, name, 2, sets...); ok {
					bds, ran = append(bds, b), append(ran, name)
				}
			}
			if prefill == "skip" && len(ran) != len(names) {
				t.Errorf("%s: only %v of %v ran", family, ran, names)
			}
			for i := range bds {
				for j := range bds {
					if i == j {
						continue
					}
					pairs++
					w := sim.Explain(bds[i], bds[j], nil)
					what := family + " " + ran[i] + " vs " + ran[j] + " prefill " + prefill
					scale := max(w.AMS, w.BMS)
					var a, b, d float64
					for _, p := range w.Path {
						a, b, d = a+p.AMS, b+p.BMS, d+p.DeltaMS
					}
					if !near(a, w.AMS, scale) || !near(b, w.BMS, scale) || !near(d, w.DeltaMS, scale) {
						t.Errorf("%s: the critical path's parts sum to %g, %g (Δ %g), the iterations to %g, %g (Δ %g)", what, a, b, d, w.AMS, w.BMS, w.DeltaMS)
					}
					for _, g := range w.Groups {
						if g.ALanes == 0 || g.BLanes == 0 {
							continue
						}
						a, b, d := g.Busy.AMS, g.Busy.BMS, g.Busy.DeltaMS
						for _, c := range g.Idle {
							a, b, d = a+c.AMS, b+c.BMS, d+c.DeltaMS
						}
						if !near(a, w.AMS, scale) || !near(b, w.BMS, scale) || !near(d, w.DeltaMS, scale) {
							t.Errorf("%s: lane group %s is busy and idle %g, %g (Δ %g) of iterations %g, %g (Δ %g)", what, g.Group, a, b, d, w.AMS, w.BMS, w.DeltaMS)
						}
					}
				}
			}
		}
	}
	if pairs < 60 {
		t.Fatalf("only %d pairs", pairs)
	}
}

// The kinds table names the operations of every family, by lane; a name it does not know
// is "other" on a lane that computes and a transfer on one that moves data.
func TestOpKind(t *testing.T) {
	compute, link := sim.Lane{Group: "npu"}, sim.Lane{Group: "pcie", Transfer: true}
	cases := []struct {
		lane sim.Lane
		name string
		want string
	}{
		{compute, "QKV", sim.KindQKV}, {compute, "q_proj", sim.KindQKV}, {compute, "Gen", sim.KindQKV}, {compute, "T5·QKV FC", sim.KindQKV},
		{compute, "QKV cold", sim.KindQKV}, {link, "QKV", sim.KindTransfer},
		{compute, "MHA", sim.KindAttention}, {compute, "dMHA (rank PU)", sim.KindAttention}, {compute, "pMHA · r3 chunk 2", sim.KindAttention},
		{compute, "logit GEMV", sim.KindAttention}, {compute, "QKᵀ", sim.KindAttention}, {compute, "SV", sim.KindAttention}, {compute, "P·V", sim.KindAttention},
		{compute, "softmax", sim.KindSoftmax}, {compute, "softmax wait + write-back", sim.KindSoftmax},
		{compute, "Proj", sim.KindProjection}, {compute, "O proj", sim.KindProjection}, {compute, "out_proj", sim.KindProjection}, {compute, "T3·O FC·T4", sim.KindProjection},
		{compute, "Proj+FF", sim.KindProjFFN}, {compute, "Proj+FFN join", sim.KindProjFFN},
		{compute, "FC1", sim.KindFFN}, {compute, "GELU", sim.KindFFN}, {compute, "MLP sparse", sim.KindFFN}, {compute, "T5·FFN FC1·AR", sim.KindFFN}, {compute, "FFN2", sim.KindFFN},
		{compute, "LN1", sim.KindNorm}, {compute, "norm/resid", sim.KindNorm},
		{compute, "LM head", sim.KindLMHead},
		{compute, "S all-gather", sim.KindCollective}, {compute, "T1/T2", sim.KindCollective}, {link, "TP all-reduce", sim.KindCollective}, {link, "FFN AR", sim.KindCollective},
		{link, "merge", sim.KindCollective},
		{link, "fetch W", sim.KindTransfer}, {link, "copy fc1", sim.KindTransfer}, {link, "KV stream #3", sim.KindTransfer}, {compute, "KV in", sim.KindTransfer},
		{compute, "predictor", sim.KindNeuron}, {link, "promote", sim.KindNeuron}, {link, "reload hot", sim.KindNeuron}, {compute, "gather", sim.KindNeuron},
		{compute, "prefill #2", sim.KindPrefill}, {link, "prefill KV", sim.KindPrefill},
		{sim.Lane{Group: "pim"}, "NPU traffic", sim.KindTraffic},
		{compute, "something new", sim.KindOther}, {link, "something new", sim.KindTransfer}, {compute, "", sim.KindOther},
	}
	for _, c := range cases {
		if got := sim.OpKind(c.lane, c.name); got != c.want {
			t.Errorf("%q on %s: %q, want %q", c.name, c.lane.Group, got, c.want)
		}
	}
}

// A critical path that starts on its own clock waits until it does; a span past the end
// of the iteration counts only up to it.
func TestBreakdownWaitAndOverhang(t *testing.T) {
	lanes := []sim.Lane{{Name: "prefill", Group: "prefill"}, {Name: "GPU", Group: "gpu"}}
	s := sim.NewSchedule(lanes, 4, 4)
	us := sim.Microsecond
	p := s.AddAt(sim.Op{Name: "prefill", Lane: 0, Dur: 30 * us}, 5*us)
	s.Add(sim.Op{Name: "QKV", Lane: 1, Dur: 10 * us}, p)
	s.AddAt(sim.Op{Name: "prefill", Lane: 0, Dur: 50 * us}, 35*us)
	t0 := s.Finish()
	snap := &sim.Snapshot{Step: 1, IterTime: t0, Timeline: sim.Timeline{Lanes: s.Lanes, Spans: s.Spans, Bubbles: s.Bubbles, Critical: s.Critical, Makespan: t0}}
	var b sim.Breakdown
	b.Add(snap)
	w := sim.Explain(&b, &b, nil)
	got := map[string]float64{}
	for _, p := range w.Path {
		got[p.Label()] = p.AMS
	}
	if t0 != 45*us || got["waiting before the critical path starts"] != 0.005 || got["prefill on prefill"] != 0.03 || got["QKV GEMM on gpu"] != 0.01 {
		t.Fatalf("iteration %v, path %v", t0, got)
	}
	for _, g := range w.Groups {
		sum := g.Busy.AMS
		for _, c := range g.Idle {
			sum += c.AMS
		}
		if !near(sum, w.AMS, w.AMS) {
			t.Errorf("%s: busy and idle %g of %g", g.Group, sum, w.AMS)
		}
	}
}

// The summary names the three largest changes of the critical path, and the switches by
// their share; sides on different hardware are summarised by operation kind.
func TestWhySummary(t *testing.T) {
	_, a, _ := side(t, "neupims", 3, "workload.requests=256")
	_, b, _ := side(t, "npu-pim", 3, "workload.requests=256")
	w := sim.Explain(a, b, nil)
	if !strings.HasPrefix(w.Summary, "B is ") || !strings.Contains(w.Summary, "× slower, +") || !strings.Contains(w.Summary, "attention on pim") || strings.Count(w.Summary, ", ") != 3 {
		t.Errorf("summary %q", w.Summary)
	}
	w.SetAttribution(&sim.Attribution{Method: sim.MethodShapley, Switches: []sim.SwitchShare{
		{Key: "x", A: "1", B: "2", DeltaMS: 0.1}, {Key: "y", A: "true", B: "false", DeltaMS: w.DeltaMS - 0.1}}})
	if !strings.Contains(w.Summary, "y true → false accounts for") || !strings.Contains(w.Summary, "x 1 → 2 for +100µs") {
		t.Errorf("summary %q", w.Summary)
	}
	w.SetAttribution(&sim.Attribution{Method: sim.MethodShapley, Switches: []sim.SwitchShare{{Key: "x", A: "1", B: "2"}}})
	if strings.Contains(w.Summary, "Of the") {
		t.Errorf("switches that change nothing are said to account for the difference: %q", w.Summary)
	}
	if w := sim.Explain(a, a, nil); w.Summary != "B takes as long as A per iteration." || sim.SignedMS(w.DeltaMS) != "±0" {
		t.Errorf("the same side: %q, %s", w.Summary, sim.SignedMS(w.DeltaMS))
	}
	w = sim.Explain(b, a, nil)
	if !strings.Contains(w.Summary, "× faster, -") {
		t.Errorf("summary %q", w.Summary)
	}
	_, g, _ := side(t, "gpu-a100", 3, "workload.requests=256")
	if w := sim.Explain(a, g, nil); !strings.Contains(w.Summary, " → gpu") {
		t.Errorf("summary %q", w.Summary)
	}
}

// ExplainRuns reads the schedule of every step of the window, even where a jumping
// engine would leap over steps (L3 with fixed lengths: one batch for many iterations): its
// explanation is the one of engines stepping every iteration.
func TestExplainRunsReadsEveryStep(t *testing.T) {
	sets := []string{"workload.input_len=64", "workload.output_len=200", "workload.requests=16", "workload.batch=16"}
	ca, a, _ := side(t, "l3", 150, sets...)
	cb, b, _ := side(t, "rank-pim", 150, sets...)
	jumping := ca
	jumping.Jump, jumping.Recycle = true, true
	e, err := sim.New(jumping)
	if err != nil {
		t.Fatal(err)
	}
	leapt := false
	for prev := 0; prev < 150; {
		s, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		leapt = leapt || s.Step != prev+1 || len(s.Timeline.Lanes) == 0
		prev = s.Step
	}
	if !leapt {
		t.Fatal("the jumping engine stepped every iteration; the case tests nothing")
	}
	want := sim.Explain(a, b, nil)
	got, err := sim.ExplainRuns(context.Background(), ca, cb, &sim.Contrast{}, 1, 150, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Steps != 150 || got.AMS != want.AMS || got.BMS != want.BMS || !slices.Equal(got.Path, want.Path) {
		t.Fatalf("ExplainRuns %d steps %g, %g %v; stepping %g, %g %v", got.Steps, got.AMS, got.BMS, got.Path, want.AMS, want.BMS, want.Path)
	}
}
