package presets

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/assets"
	"github.com/pimtui/pimtui/presets/internal/testutil"
)

// The lessons a class is promised: the basics and every family's mechanisms.
var wantLessons = []string{"decode-memory-bound", "dual-row-buffers", "sub-batch-interleaving", "channel-load-balancing",
	"kv-capacity-hbm-vs-dimms", "static-vs-lazy-kv", "spatial-kv-placement", "hot-cold-neurons"}

// Every embedded lesson parses, names its file, covers a family, and every step's
// preset and settings build an engine; together they cover every family.
func TestEmbeddedLessonsLoad(t *testing.T) {
	ls, err := Lessons()
	if err != nil {
		t.Fatal(err)
	}
	names := LessonNames()
	for _, w := range wantLessons {
		if !slices.Contains(names, w) {
			t.Errorf("lesson %s missing (have %v)", w, names)
		}
	}
	families := map[string]bool{}
	orders := map[string]bool{}
	for _, l := range ls {
		families[l.Family] = true
		key := fmt.Sprintf("%s/%d", l.Family, l.Order)
		if orders[key] {
			t.Errorf("%s: two lessons of family %s have order %d", l.Name, l.Family, l.Order)
		}
		orders[key] = true
		for i, s := range l.Steps {
			cfg, err := l.StepConfig(i)
			if err != nil {
				t.Errorf("%s step %d: %v", l.Name, i+1, err)
				continue
			}
			if cfg.Preset != s.Preset {
				t.Errorf("%s step %d: config of preset %q, want %q", l.Name, i+1, cfg.Preset, s.Preset)
			}
		}
	}
	for _, f := range lessonFamilies {
		if !families[f] {
			t.Errorf("no lesson for family %s", f)
		}
	}
	if ls[0].Name != "decode-memory-bound" {
		t.Errorf("the basics come first, not %s", ls[0].Name)
	}
}

// StepConfig applies the step's settings, then the command line's overrides.
func TestStepConfigOrder(t *testing.T) {
	l, err := ParseLesson("x.toml", []byte(testutil.ValidLesson))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := l.StepConfig(0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PIM.DualRowBuffer || cfg.Workload.MaxBatch != 128 {
		t.Fatalf("settings not applied: %+v batch %d", cfg.PIM, cfg.Workload.MaxBatch)
	}
	cfg, err = l.StepConfig(0, "pim.dual_row_buffer=true", "workload.batch=32")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.PIM.DualRowBuffer || cfg.Workload.MaxBatch != 32 {
		t.Fatal("overrides do not come after the step's settings")
	}
	if _, err := l.StepConfig(0, "pim.dual_row_bufer=true"); err == nil || !strings.Contains(err.Error(), `--set pim.dual_row_bufer: unknown key; did you mean "pim.dual_row_buffer"`) {
		t.Fatalf("bad override: %v", err)
	}
	if _, err := l.StepConfig(2); err == nil {
		t.Fatal("step 3 of a two-step lesson built")
	}
}

func TestGetLesson(t *testing.T) {
	l, err := GetLesson("dual-row-buffers")
	if err != nil || l.Name != "dual-row-buffers" {
		t.Fatalf("%v %v", l, err)
	}
	if _, err := GetLesson("dual-row-buffer"); err == nil || !strings.Contains(err.Error(), `unknown lesson "dual-row-buffer"; did you mean "dual-row-buffers"`) {
		t.Fatalf("got %v", err)
	}
}

func TestParseLessonErrors(t *testing.T) {
	line := func(sub string) int { return lineOf(testutil.ValidLesson, sub) }
	cases := []struct{ name, from, to, want string }{
		{"syntax", `steps = 2`, `steps = = 2`, fmt.Sprintf("x.toml:%d:", line("steps = 2"))},
		{"unknown top key", `summary =`, `sumary =`, `x.toml:4:1: sumary: unknown key; did you mean "summary"`},
		{"unknown step key", `focus = "timeline"`, `focs = "timeline"`, fmt.Sprintf(`x.toml:%d:1: step.focs: unknown key; did you mean "focus"`, line(`focus = "timeline"`))},
		{"unknown claim key", `than_step = 1`, `than_stp = 1`, fmt.Sprintf(`x.toml:%d:1: step.claim.than_stp: unknown key; did you mean "than_step"`, line("than_step = 1"))},
		{"wrong type", `steps = 2`, `steps = "two"`, fmt.Sprintf("x.toml:%d:9: step.steps: wrong type: want an integer", line("steps = 2"))},
		{"missing title", `title = "Tiny"`, `title = ""`, "x.toml:2:1: title: missing a title"},
		{"bad name", `name = "tiny"`, `name = "Tiny Lesson"`, `x.toml:1:1: name: "Tiny Lesson": want lowercase words`},
		{"unknown family", `family = "neupims"`, `family = "neupim"`, `x.toml:3:1: family: unknown family "neupim"; did you mean "neupims"`},
		{"unknown preset", `preset = "npu-pim"`, `preset = "npu-pin"`, fmt.Sprintf(`x.toml:%d:1: step.1.preset: unknown preset "npu-pin"; did you mean "npu-pim"`, line(`preset = "npu-pim"`))},
		{"bad setting", `"workload.batch=128"]`, `"workload.bach=128"]`, fmt.Sprintf(`x.toml:%d:37: step.1.set.2: workload.bach: unknown key; did you mean "workload.batch"`, line(`"workload.batch=128"]`))},
		{"bad setting value", `"workload.batch=128"]`, `"workload.batch=0"]`, `step.1.set.2: workload.batch: 0 is out of range`},
		{"unknown pane", `focus = "timeline"`, `focus = "timelines"`, fmt.Sprintf(`x.toml:%d:1: step.1.focus: unknown pane "timelines"; did you mean "timeline"`, line(`focus = "timeline"`))},
		{"too many steps", `steps = 2`, `steps = 500`, `step.1.steps: 500 is out of range; want 1 to 50`},
		{"no steps", `steps = 2`, `steps = 0`, `step.1.steps: 0 is out of range`},
		{"measure steps", `measure_steps = 3`, `measure_steps = -1`, `step.2.measure_steps: -1 is out of range`},
		{"unknown metric", `metric = "iteration_ms.mean"`, `metric = "iteration_ms.men"`, fmt.Sprintf(`x.toml:%d:1: step.2.claim.1.metric: unknown metric "iteration_ms.men"; did you mean "iteration_ms.mean"`, line(`metric = "iteration_ms.mean"`))},
		{"bad op", `op = "<"`, `op = "=="`, `step.2.claim.1.op: "==" is not a comparison; want one of "<", ">", "<=", ">="`},
		{"both sides", `than_step = 1`, "than_step = 1\nvalue = 2", `step.2.claim.1: give exactly one of than_step`},
		{"no side", `than_step = 1`, ``, `step.2.claim.1: give exactly one of than_step`},
		{"own step", `than_step = 1`, `than_step = 2`, `step.2.claim.1.than_step: 2 is not another step of this lesson; want 1 to 2, not 2`},
		{"factor with value", `value = 0.01`, "value = 0.01\nfactor = 2", `step.2.claim.2.factor: factor scales another step's metric`},
		{"bad factor", `than_step = 1`, "than_step = 1\nfactor = -1", `step.2.claim.1.factor: want a finite number above 0`},
		{"no claim text", `text = "Shorter."`, `text = " "`, `step.2.claim.1.text: missing the claim in words`},
		{"no notice", `notice = "Bubbles."`, `notice = ""`, `step.1.notice: missing what to notice on screen`},
		{"settings that cannot build", `"workload.batch=128"]`, `"workload.batch=128", "model.tp=3"]`, `step.1.set: model.tp: GPT3-7B has 32 heads, which tp=3 does not divide`},
		{"run stops too early", `"workload.batch=128"]`, `"workload.batch=128", "workload.steps=1"]`, `step.1.steps: the run stops after 1 iterations (workload.steps), before the 2 this step needs`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(testutil.ValidLesson, c.from, c.to, 1)
			if src == testutil.ValidLesson {
				t.Fatalf("edit %q not applied", c.from)
			}
			_, err := ParseLesson("x.toml", []byte(src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant it to contain %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "x.toml:") {
				t.Fatalf("error %q does not start with the file name", err)
			}
		})
	}
	if _, err := ParseLesson("x.toml", []byte(`name = "x"
title = "x"
family = "gpu"
summary = "x"`)); err == nil || !strings.Contains(err.Error(), "at least one [[step]]") {
		t.Fatalf("lesson without steps: %v", err)
	}
}

func FuzzParseLesson(f *testing.F) {
	f.Add([]byte(testutil.ValidLesson))
	ents, _ := assets.Lessons.ReadDir("lessons")
	for _, e := range ents {
		b, _ := assets.Lessons.ReadFile("lessons/" + e.Name())
		f.Add(b)
	}
	f.Add([]byte("[[step]]\n[[step.claim]]\nthan_step = 99\n"))
	f.Add([]byte("name = 1\n[[step]]\nset = [1, 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLesson("f.toml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.toml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		// A lesson that parses has steps whose configurations build and whose claims
		// compare with steps that exist.
		for i, s := range l.Steps {
			if _, err := l.StepConfig(i); err != nil {
				t.Fatalf("step %d parsed but does not build: %v", i+1, err)
			}
			for _, c := range s.Claims {
				if c.ThanStep != nil && (*c.ThanStep < 1 || *c.ThanStep > len(l.Steps)) {
					t.Fatalf("claim compares with step %d of %d", *c.ThanStep, len(l.Steps))
				}
			}
		}
	})
}
