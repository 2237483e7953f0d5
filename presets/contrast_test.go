package presets

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

// small gets preset name on a small request stream with sets applied.
func small(t *testing.T, name string, sets ...string) *File {
	t.Helper()
	f, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range append([]string{"workload.requests=64", "workload.batch=32"}, sets...) {
		if err := f.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func keysOf(ss []sim.Setting) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Key)
	}
	return out
}

// The differences of two presets are the keys whose resolved values differ, each with
// its meaning from the schema, and a section only one side's planner reads.
func TestDifferences(t *testing.T) {
	doc := map[string]string{}
	for _, k := range Keys() {
		doc[k.Key] = k.Doc
	}
	cases := []struct {
		a, b string
		sets []string // on b
		want []string
	}{
		{"neupims", "npu-pim", nil, []string{"pim.dual_row_buffer", "scheduler.sub_batch_interleaving", "scheduler.channel_alloc"}},
		{"neupims", "npu-only", nil, []string{"npu.preload_overlap", "pim.enabled", "pim.dual_row_buffer", "scheduler.sub_batch_interleaving"}},
		{"neupims", "neupims", []string{"workload.batch=8", "memory.timing.t_rp=20"}, []string{"workload.batch", "memory.timing.t_rp"}},
		{"neupims", "neupims", nil, nil},
		{"neupims", "gpu-a100", nil, []string{"system", "[npu]", "[memory]", "[pim]", "[scheduler]", "[gpu]"}},
	}
	for _, c := range cases {
		a, b := small(t, c.a), small(t, c.b, c.sets...)
		got := Differences(a, b)
		if !slices.Equal(keysOf(got), c.want) {
			t.Errorf("%s vs %s %v: %v, want %v", c.a, c.b, c.sets, keysOf(got), c.want)
		}
		for _, s := range got {
			if want, ok := doc[s.Key]; ok && s.Meaning != want || s.Meaning == "" || s.A == s.B {
				t.Errorf("%s vs %s: %+v (the schema says %q)", c.a, c.b, s, doc[s.Key])
			}
		}
	}
	d := Differences(small(t, "neupims"), small(t, "npu-pim"))
	if d[2].A != "greedy_min_load" || d[2].B != "round_robin" || d[0].A != "true" || d[0].B != "false" {
		t.Errorf("values %+v", d)
	}
}

// The switch attribution of neupims against npu-pim names exactly the switches that
// differ, splits the difference among them by the two orders (the Shapley value over
// them) and sums to it; a side with more than three switches gets each switch's effect
// alone and what they leave to their interplay; sides of different planners get none,
// and say why.
func TestContrastAttribution(t *testing.T) {
	explain := func(a, b *File) *sim.Why {
		t.Helper()
		ca, err := Build(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := Build(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := sim.ExplainRuns(context.Background(), ca, cb, Contrast(a, b, nil), 1, 12, nil)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	sum := func(a *sim.Attribution) float64 {
		s := a.InteractionMS
		for _, sw := range a.Switches {
			s += sw.DeltaMS
		}
		return s
	}

	w := explain(small(t, "neupims"), small(t, "npu-pim"))
	at := w.Attribution
	var keys []string
	for _, s := range at.Switches {
		keys = append(keys, s.Key)
	}
	if want := []string{"pim.dual_row_buffer", "scheduler.sub_batch_interleaving", "scheduler.channel_alloc"}; !slices.Equal(keys, want) {
		t.Fatalf("switches %v, want %v", keys, want)
	}
	if at.Method != sim.MethodTwoOrder || at.Runs != 4 || at.InteractionMS != 0 || math.Abs(sum(at)-w.DeltaMS) > 1e-9*w.BMS || w.DeltaMS <= 0 {
		t.Errorf("%+v sums to %g of %g", at, sum(at), w.DeltaMS)
	}
	if !strings.Contains(w.Summary, "pim.dual_row_buffer true → false accounts for") {
		t.Errorf("summary %q", w.Summary)
	}

	w = explain(small(t, "neupims"), small(t, "npu-pim", "scheduler.channel_alloc=greedy_min_load", "scheduler.sub_batch_interleaving=true"))
	if at := w.Attribution; at.Method != sim.MethodShapley || len(at.Switches) != 1 || at.Switches[0].DeltaMS != w.DeltaMS || at.Runs != 0 {
		t.Errorf("one switch: %+v of %g", at, w.DeltaMS)
	}

	w = explain(small(t, "neupims"), small(t, "npu-only"))
	if at := w.Attribution; at.Method != sim.MethodSingle || len(at.Switches) != 4 || at.Runs != 4 ||
		math.Abs(sum(at)-w.DeltaMS) > 1e-9*w.BMS || !strings.Contains(at.Note, "need not sum") {
		t.Errorf("four switches: %+v", at)
	}

	w = explain(small(t, "neupims"), small(t, "gpu-a100"))
	if at := w.Attribution; at.Method != sim.MethodNone || len(at.Switches) != 0 || !strings.Contains(at.Note, "different planners (neupims, gpu)") {
		t.Errorf("different planners: %+v", at)
	}

	w = explain(small(t, "neupims"), small(t, "neupims"))
	if at := w.Attribution; at.Method != sim.MethodNone || at.Note != "the two configurations are the same" || w.DeltaMS != 0 {
		t.Errorf("the same: %+v, Δ %g", at, w.DeltaMS)
	}
}

// A configuration between the sides that does not build names the switches it turned
// and what is wrong; the explanation goes on without the attribution.
func TestContrastAttributionThatDoesNotBuild(t *testing.T) {
	a := small(t, "neupims")
	b := small(t, "neupims", "memory.banks_per_channel=24", "memory.bank_groups=6")
	c := Contrast(a, b, nil)
	if _, err := c.Toggle([]bool{true, true}); err != nil {
		t.Fatalf("B itself: %v", err)
	}
	ca, _ := Build(a, nil)
	cb, _ := Build(b, nil)
	w, err := sim.ExplainRuns(context.Background(), ca, cb, c, 1, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if at := w.Attribution; at.Method != sim.MethodNone ||
		!strings.Contains(at.Note, "A with memory.bank_groups = 6 does not build: memory.bank_groups: 6 bank groups do not divide 32 banks per channel") {
		t.Errorf("%+v", at)
	}
	if len(w.Path) == 0 || w.Steps != 4 {
		t.Errorf("no explanation: %+v", w)
	}
	if a.Memory.BankGroups != 8 {
		t.Errorf("toggling changed side A's file: %d bank groups", a.Memory.BankGroups)
	}
}
