package ui

import (
	"errors"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// tinyLessons are two small lessons over quick presets.
var tinyLessons = []LessonInfo{
	{Name: "tiny", Title: "Tiny lesson", Family: "neupims", Summary: "Two presets, one after the other.", Steps: []LessonStepInfo{
		{Title: "Blocked PIM", Preset: "npu-pim", Focus: "timeline", Steps: 3, Text: "The naive NPU+PIM.", Notice: "bubbles on NPU-S.",
			Claims: []string{"The PIM idles most of the time.", "The NPU waits for attention."}},
		{Title: "One GPU", Preset: "gpu-h100", Set: []string{"workload.warmup=1", "kvcache.block_tokens=32"}, Focus: "kv", Steps: 2, Text: "A GPU alone.", Notice: "the paged KV cache in HBM."},
	}},
	{Name: "other", Title: "Another lesson", Family: "gpu", Summary: "One step.", Steps: []LessonStepInfo{
		{Title: "Only", Preset: "npu-only", Focus: "metrics", Steps: 1, Text: "The NPU alone.", Notice: "the metrics."},
	}},
}

// tinyStep builds a tiny lesson step's configuration, counting the calls.
func tinyStep(calls *int) func(string, int) (sim.Config, error) {
	return func(name string, i int) (sim.Config, error) {
		*calls++
		for _, l := range tinyLessons {
			if l.Name == name {
				return smallConfig(l.Steps[i].Preset)
			}
		}
		return sim.Config{}, errors.New("no lesson " + name)
	}
}

// newLessonDriver opens the explorer on lesson name (or, with name "", with the lesson
// picker) the way the command line does: the engine built from the first step.
func newLessonDriver(t testing.TB, name string, w, h int) *driver {
	t.Helper()
	calls := 0
	opts := testOptions(t)
	opts.Lessons, opts.LessonStep = tinyLessons, tinyStep(&calls)
	preset := "neupims"
	if name != "" {
		opts.Lesson = name
		preset = tinyLessons[slices.IndexFunc(tinyLessons, func(l LessonInfo) bool { return l.Name == name })].Steps[0].Preset
	} else {
		opts.LessonPicker = true
	}
	cfg, err := smallConfig(preset)
	if err != nil {
		t.Fatal(err)
	}
	return startDriver(t, cfg, opts, w, h)
}

// The header names the settings a lesson step switches, so two steps of one preset read
// apart; a step without any names its preset alone.
func TestLessonHeaderNamesSwitchedSettings(t *testing.T) {
	d := newLessonDriver(t, "tiny", 160, 48)
	if h := firstLine(d.screen()); !strings.Contains(h, "pimtui npu-pim · ") {
		t.Fatalf("step 1 header %q", h)
	}
	d.keys(")")
	if h := firstLine(d.screen()); !strings.Contains(h, "pimtui gpu-h100 +warmup=1 +block_tokens=32 · ") {
		t.Fatalf("step 2 header %q", h)
	}
}

// A lesson opens on its first step: the step's iterations run, its pane has the focus and
// the panel names the lesson and the step, with the text, what to notice and the claims.
func TestLessonOpensOnFirstStep(t *testing.T) {
	d := newLessonDriver(t, "tiny", 160, 48)
	m := d.m
	if m.lesson == nil || m.lesson.step != 0 {
		t.Fatal("not in the lesson")
	}
	if m.snap == nil || m.snap.Step != 3 {
		t.Fatalf("the step should run 3 iterations, snapshot %v", m.snap)
	}
	if m.focus != paneTimeline {
		t.Fatalf("focus %v, want the timeline", m.focus)
	}
	s := d.screen()
	for _, want := range []string{"Lesson: Tiny lesson — step 1/2: Blocked PIM", "The naive NPU+PIM.", "Notice: bubbles on NPU-S.",
		"• The PIM idles most of the time.", "( previous step · ) next step"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	checkFits(t, "lesson", m.View().Content, 160, 48)
	// At the dashboard's size the panel leaves the whole dashboard in place.
	if m.lay.tabs {
		t.Error("the lesson panel pushed the dashboard into tabs at 160×48")
	}
}

// ) and ( move between steps: each loads its preset fresh, runs its iterations and
// focuses its pane; the ends of the lesson say so; r replays the step.
func TestLessonStepsForwardAndBack(t *testing.T) {
	d := newLessonDriver(t, "tiny", 160, 48)
	d.keys(")")
	m := d.m
	if m.lesson.step != 1 || m.cfg.Preset != "gpu-h100" || m.snap == nil || m.snap.Step != 2 || m.focus != paneKV {
		t.Fatalf("after ): step %d preset %s snap %v focus %v", m.lesson.step, m.cfg.Preset, m.snap, m.focus)
	}
	if s := d.screen(); !strings.Contains(s, "step 2/2: One GPU") || strings.Contains(s, "The PIM idles") {
		t.Fatalf("panel not on step 2:\n%s", s)
	}
	d.keys(")")
	if m.lesson.step != 1 || !strings.Contains(m.status, "last step") {
		t.Fatalf("past the end: step %d status %q", m.lesson.step, m.status)
	}
	d.keys("n", "n")
	if m.snap.Step != 4 {
		t.Fatalf("stepping inside a lesson: step %d", m.snap.Step)
	}
	d.keys("r")
	if m.snap.Step != 2 || m.lesson == nil {
		t.Fatalf("r should replay the step's 2 iterations, at %d", m.snap.Step)
	}
	d.keys("(")
	if m.lesson.step != 0 || m.cfg.Preset != "npu-pim" || m.snap.Step != 3 || m.focus != paneTimeline {
		t.Fatalf("after (: step %d preset %s", m.lesson.step, m.cfg.Preset)
	}
	d.keys("(")
	if !strings.Contains(m.status, "first step") {
		t.Fatalf("before the start: status %q", m.status)
	}
}

// esc leaves the lesson and the explorer goes on with the run; where the focused pane
// has something to go back from, esc goes to the pane first.
func TestLessonEsc(t *testing.T) {
	d := newLessonDriver(t, "tiny", 160, 48)
	d.keys(")") // the KV map has the focus
	d.keys("l")
	if d.m.c.Selected == 0 {
		t.Fatal("l selected no request")
	}
	d.keys("esc")
	if d.m.lesson == nil || d.m.c.Selected != 0 {
		t.Fatalf("the first esc should clear the selection and keep the lesson (selected %d)", d.m.c.Selected)
	}
	snap := d.m.snap
	d.keys("esc")
	if d.m.lesson != nil {
		t.Fatal("esc did not leave the lesson")
	}
	if d.m.snap != snap || strings.Contains(d.screen(), "Lesson:") {
		t.Fatal("leaving the lesson should keep the run and drop the panel")
	}
	d.keys("n")
	if d.m.snap.Step != snap.Step+1 {
		t.Fatal("the run does not go on after the lesson")
	}
	d.keys(")")
	if d.m.lesson != nil || d.m.cfg.Preset != "gpu-h100" {
		t.Fatal(") outside a lesson did something")
	}
}

// t opens the lesson picker; enter opens the chosen lesson at its first step; esc closes
// the picker and leaves the explorer as it was.
func TestLessonPicker(t *testing.T) {
	d := newLessonDriver(t, "", 120, 40)
	if d.m.picker == nil || !strings.Contains(d.screen(), "Lessons") || !strings.Contains(d.screen(), "Another lesson") {
		t.Fatalf("the picker is not open:\n%s", d.screen())
	}
	if !strings.Contains(d.screen(), "Two presets, one after the other.") {
		t.Fatalf("the picker does not summarise the selected lesson:\n%s", d.screen())
	}
	d.keys("esc")
	if d.m.picker != nil || d.m.lesson != nil || d.m.cfg.Preset != "neupims" {
		t.Fatal("esc should close the picker without a lesson")
	}
	d.keys("t", "o", "t", "h", "enter")
	if d.m.lesson == nil || d.m.lesson.info.Name != "other" || d.m.cfg.Preset != "npu-only" || d.m.focus != paneMetrics {
		t.Fatalf("picked lesson not open: %+v", d.m.lesson)
	}
	// Loading a preset with p leaves the lesson: its text would no longer match the run.
	d.keys("p", "enter")
	if d.m.lesson != nil {
		t.Fatal("a preset picked in a lesson kept the lesson panel")
	}
}

// Without lessons, t says so.
func TestNoLessons(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("t")
	if d.m.picker != nil || !d.m.statusBad || !strings.Contains(d.m.status, "no lessons") {
		t.Fatalf("picker %v status %q", d.m.picker != nil, d.m.status)
	}
	if _, err := New(smallConfigMust(t, "neupims"), Options{LessonOptions: LessonOptions{Lesson: "nope"}}); err == nil {
		t.Fatal("New accepted an unknown lesson")
	}
}

func smallConfigMust(t *testing.T, p string) sim.Config {
	t.Helper()
	c, err := smallConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A step whose configuration fails leaves the lesson where it was, with the reason.
func TestLessonStepFailureKeepsStep(t *testing.T) {
	d := newLessonDriver(t, "tiny", 120, 40)
	d.m.opts.LessonStep = func(string, int) (sim.Config, error) { return sim.Config{}, errors.New("boom") }
	snap := d.m.snap
	d.keys(")")
	if d.m.lesson.step != 0 || d.m.snap != snap || !d.m.statusBad || !strings.Contains(d.m.status, "tiny step 2: boom") {
		t.Fatalf("step %d status %q", d.m.lesson.step, d.m.status)
	}
	d.m.opts.LessonStep = func(string, int) (sim.Config, error) {
		c, err := smallConfig("gpu-h100")
		c.Workload.MaxBatch = 0
		return c, err
	}
	d.keys(")")
	if d.m.lesson.step != 0 || d.m.snap != snap || !d.m.statusBad {
		t.Fatalf("an engine that cannot start moved the lesson: step %d", d.m.lesson.step)
	}
}

// Steps load off the UI goroutine; when the student moves on before a load arrives, only
// the latest load is shown.
func TestLessonStaleLoadDropped(t *testing.T) {
	d := newLessonDriver(t, "tiny", 120, 40)
	l := d.m.lesson.info
	first := d.exec(d.m.enterStep(l, 1))
	second := d.exec(d.m.enterStep(l, 0))
	if d.m.lesson.step != 0 || d.m.cfg.Preset != "npu-pim" || !strings.Contains(d.m.status, "loading tiny step 1/2") {
		t.Fatalf("a load changed the run before it arrived: step %d, status %q", d.m.lesson.step, d.m.status)
	}
	for _, msg := range append(second, first...) {
		d.send(msg)
	}
	if d.m.lesson.step != 0 || d.m.cfg.Preset != "npu-pim" || d.m.snap == nil || d.m.snap.Step != 3 {
		t.Fatalf("the stale load of step 2 replaced the latest: step %d preset %s", d.m.lesson.step, d.m.cfg.Preset)
	}
}

// The panel gives way as the terminal shrinks: what to notice and the keys stay longest,
// and nothing is ever wider than the terminal.
func TestLessonPanelShrinks(t *testing.T) {
	d := newLessonDriver(t, "tiny", 100, 30)
	s := d.screen()
	if !strings.Contains(s, "Notice:") || !strings.Contains(s, "next step") {
		t.Fatalf("100×30 lost the notice or the keys:\n%s", s)
	}
	d.send(tea.WindowSizeMsg{Width: 60, Height: 16})
	s = d.screen()
	if !strings.Contains(s, "Notice:") {
		t.Fatalf("60×16 lost the notice:\n%s", s)
	}
	checkFits(t, "60×16", d.m.View().Content, 60, 16)
	if d.m.lessonH > 16-10 {
		t.Fatalf("panel of %d lines leaves the panes less than 10", d.m.lessonH)
	}
	for _, l := range cut([]string{"a", "b", "c"}, 2) {
		if l == "c" {
			t.Fatal("cut kept a line past its limit")
		}
	}
	if got := cut([]string{"a", "b", "c"}, 2); got[1] != "b …" {
		t.Fatalf("cut marks the cut: %q", got)
	}
}

// i shows the step's whole text over the dashboard, for terminals where the panel cuts
// it; any key closes it and does nothing else.
func TestLessonReadWholeStep(t *testing.T) {
	d := newLessonDriver(t, "tiny", 60, 16)
	if strings.Contains(d.screen(), "The NPU waits for attention.") {
		t.Fatal("at 60×16 the panel should not have room for the claims")
	}
	d.keys("i")
	s := d.screen()
	for _, want := range []string{"Step 1/2: Blocked PIM", "The naive NPU+PIM.", "Notice: bubbles on NPU-S.", "• The NPU waits for attention.", "any key closes"} {
		if !strings.Contains(s, want) {
			t.Errorf("the whole step lacks %q:\n%s", want, s)
		}
	}
	checkFits(t, "reading", d.m.View().Content, 60, 16)
	d.keys(")")
	if d.m.lesson.reading || d.m.lesson.step != 0 || strings.Contains(d.screen(), "any key closes") {
		t.Fatal(") should only close the text")
	}
}

// Every pane a lesson file may name is one of the explorer's.
func TestLessonPaneNames(t *testing.T) {
	for _, p := range presets.LessonPanes {
		if _, ok := lessonPanes[p]; !ok {
			t.Errorf("lesson pane %q is not the explorer's", p)
		}
	}
	if len(lessonPanes) != len(presets.LessonPanes) {
		t.Errorf("the explorer has %d lesson panes, lesson files %d", len(lessonPanes), len(presets.LessonPanes))
	}
}

// Every embedded lesson opens and steps through in the explorer at the sizes a class
// uses, each step on its preset with its pane focused and its panel fitting the screen.
func TestEveryLessonSteps(t *testing.T) {
	ls, err := presets.Lessons()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		t.Run(l.Name, func(t *testing.T) {
			if quick() && l.Family == "hermes" {
				t.Skip("Hermes tracks every neuron of a 70B model: seconds per step under the race detector")
			}
			info := LessonInfo{Name: l.Name, Title: l.Title}
			for _, s := range l.Steps {
				info.Steps = append(info.Steps, LessonStepInfo{Title: s.Title, Preset: s.Preset, Focus: s.Focus, Text: s.Text, Notice: s.Notice, Steps: s.Steps})
			}
			step := func(_ string, i int) (sim.Config, error) { return l.StepConfig(i) }
			opts := testOptions(t)
			opts.Lessons, opts.LessonStep, opts.Lesson = []LessonInfo{info}, step, l.Name
			cfg, err := l.StepConfig(0)
			if err != nil {
				t.Fatal(err)
			}
			d := startDriver(t, cfg, opts, 160, 48)
			for i, s := range l.Steps {
				if i > 0 {
					d.keys(")")
				}
				m := d.m
				if m.lesson == nil || m.lesson.step != i || m.cfg.Preset != s.Preset || m.err != nil {
					t.Fatalf("step %d: lesson %v preset %s err %v", i+1, m.lesson, m.cfg.Preset, m.err)
				}
				if m.snap == nil || m.snap.Step != s.Steps || m.focus != lessonPanes[s.Focus] {
					t.Fatalf("step %d: snapshot %v, focus %v", i+1, m.snap, m.focus)
				}
				for _, sz := range [][2]int{{160, 48}, {100, 30}} {
					d.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
					checkFits(t, l.Name, m.View().Content, sz[0], sz[1])
					if !strings.Contains(d.screen(), "Notice:") {
						t.Fatalf("step %d at %dx%d: no notice", i+1, sz[0], sz[1])
					}
				}
				d.send(tea.WindowSizeMsg{Width: 160, Height: 48})
			}
		})
	}
}
