package ui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// lectureSizes are the screens a lecture is projected on: a large one, a laptop's and the
// smallest usual terminal.
var lectureSizes = [][2]int{{200, 60}, {120, 40}, {80, 24}}

// tinySpread is the fixture with every bank's PIM share within 0.05 points of 22.1%: the
// spread that, stretched over the glyphs, once drew half the banks as idle.
func tinySpread() *sim.Snapshot {
	s := fixture(3)
	for i := range s.Banks.PIM {
		s.Banks.PIM[i] = 0.2208 + 0.0005*float64(i%2)
	}
	return s
}

// The bank grid's scale is absolute by default: banks 0.05 points apart read alike, in
// the glyph of their share. a spreads the iteration's range over digits 1–5, which no
// one reads as a share, and the legend and title say relative, with the range.
func TestHeatmapScaleAbsoluteByDefault(t *testing.T) {
	p := newHeatmap(testCommon(false))
	p.SetSnapshot(tinySpread())
	p.SetSize(72, 18)
	// cells are the grid's cells: four groups of four banks after each channel's label.
	row := regexp.MustCompile(`(?m)^ch\d+ ((?:\S{4} ){3}\S{4})  `)
	cells := func(out string) string {
		var b strings.Builder
		for _, m := range row.FindAllStringSubmatch(out, -1) {
			b.WriteString(m[1] + "\n")
		}
		if b.Len() == 0 {
			t.Fatalf("no grid row:\n%s", out)
		}
		return b.String()
	}
	out := ansi.Strip(p.View())
	grid := cells(out)
	if strings.ContainsAny(grid, "·▒▓█12345") || !strings.Contains(grid, "░") {
		t.Fatalf("absolute: banks at 22.1%% are not all ░:\n%s", out)
	}
	if !strings.Contains(out, "PIM busy ·<20 ░<40 ▒<60 ▓<80 █≥80%") || strings.Contains(p.Title(), "relative") {
		t.Fatalf("absolute legend or title:\n%s\n%s", p.Title(), out)
	}
	p.Update(keyPress("a"))
	out = ansi.Strip(p.View())
	grid = cells(out)
	if strings.ContainsAny(grid, "·░▒▓█") || !strings.Contains(grid, "1") || !strings.Contains(grid, "5") {
		t.Fatalf("relative: the grid is not drawn in digits 1–5:\n%s", out)
	}
	if !strings.Contains(out, "PIM busy relative 22.08% 12345 22.13%") || !strings.Contains(p.Title(), "PIM relative") {
		t.Fatalf("relative legend or title:\n%s\n%s", p.Title(), out)
	}
	// Banks all alike have no range: the legend says so, over the absolute shades.
	s := tinySpread()
	for i := range s.Banks.PIM {
		s.Banks.PIM[i] = 0.2208
	}
	p.SetSnapshot(s)
	out = ansi.Strip(p.View())
	if grid = cells(out); strings.ContainsAny(grid, "12345") || !strings.Contains(out, "PIM busy relative: every bank at 22.1%; ·<20") {
		t.Fatalf("relative over equal banks:\n%s", out)
	}
}

// lectureScreen is the explorer on preset after steps iterations at w×h, focused on pane
// focus after keys, plain or in colour.
func lectureScreen(t *testing.T, preset string, steps int, w, h int, color bool, keys ...string) string {
	t.Helper()
	cfg, err := smallConfig(preset)
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	opts.Color = color
	d := startDriver(t, cfg, opts, w, h)
	for range steps - 1 {
		d.keys("n")
	}
	d.keys(keys...)
	out := d.m.View().Content
	checkFits(t, preset, out, w, h)
	if !color {
		return ansi.Strip(out)
	}
	return out
}

// Goldens of the screens the lecture's fixes show: the bank grid on the absolute and the
// relative scale, the words for each share, the placeholders of a step that has measured
// nothing yet; at every lecture size, in colour and without.
func TestLectureScreens(t *testing.T) {
	cases := []struct {
		name, preset string
		steps        int
		keys         []string
	}{
		{"helios-absolute", "helios", 3, []string{"1"}},
		{"helios-relative", "helios", 3, []string{"1", "a"}},
		{"l3-pcie", "l3", 12, []string{"5"}},
		{"hermes-first-step", "hermes", 1, []string{"4"}},
	}
	for _, tc := range cases {
		for _, sz := range lectureSizes {
			for _, color := range []bool{false, true} {
				name := fmt.Sprintf("%s/%dx%d", tc.name, sz[0], sz[1])
				if color {
					name += "-color"
				}
				t.Run(name, func(t *testing.T) {
					golden.RequireEqual(t, lectureScreen(t, tc.preset, tc.steps, sz[0], sz[1], color, tc.keys...))
				})
			}
		}
	}
}

// A step that decoded nothing (Hermes' first, the prompt's) measured no activation: the
// neuron figures read — and say when they come, the DIMMs' notes say none was read.
func TestNoPlaceholderReadsAsAMeasurement(t *testing.T) {
	d := newDriver(t, "hermes", 200, 60)
	if d.m.snap.Batch != 0 {
		t.Fatalf("step 1 decodes %d requests; the test wants a prompt's step", d.m.snap.Batch)
	}
	s := d.screen()
	for _, bad := range []string{"GPU serves 0.0%", "accuracy 100.0%", "recall 0.0%", "cold 0 MB"} {
		if strings.Contains(s, bad) {
			t.Fatalf("step 1 shows %q as a measurement:\n%s", bad, s)
		}
	}
	for _, want := range []string{"GPU serves — of active bytes (after the first decode step)", "accuracy — · recall —", "prompt step: no cold neurons"} {
		if !strings.Contains(s, want) {
			t.Fatalf("step 1 lacks %q:\n%s", want, s)
		}
	}
	d.keys("n")
	s = d.screen()
	if strings.Contains(s, "—") || !regexp.MustCompile(`GPU serves \d+\.\d% of active bytes`).MatchString(s) || !strings.Contains(s, "read cold ") {
		t.Fatalf("step 2 does not show its measurements:\n%s", s)
	}
}

// A number typed in the request filter is whole: /ch3 finds the requests on ch3, not on
// ch30 or ch13; #1 finds request 1 only.
func TestRequestFilterWholeNumbers(t *testing.T) {
	f := textEntry{text: "ch3"}
	for field, want := range map[string]bool{"ch3": true, "ch30": false, "ch31": false, "ch13": false, "CH3": true} {
		if f.matches(field) != want {
			t.Errorf("/ch3 on %q: %v", field, !want)
		}
	}
	f.text = "#1"
	if !f.matches("#1") || f.matches("#12") {
		t.Error("/#1 does not find request 1 alone")
	}
	f.text = "ch"
	if !f.matches("ch30") {
		t.Error("/ch does not find every channel")
	}
	f.text = "run"
	if !f.matches("run") || f.matches("wait") {
		t.Error("/run")
	}
}

// The picker finds a family's presets by its name: l3 lists L3's baselines too, helios
// Duplex and in-die NMP; the exact name stays first.
func TestPickerMatchesTheFamily(t *testing.T) {
	for filter, want := range map[string][]string{
		"l3":     {"l3", "hbm-pim", "gpu-dgx", "cpu-offload", "rank-pim"},
		"helios": {"helios", "duplex", "indie-nmp", "gpu-sglang"},
	} {
		p := newPicker(testCommon(false), presetList(), "neupims")
		for _, r := range filter {
			p.Update(keyPress(string(r)))
		}
		var got []string
		for _, i := range p.matches {
			got = append(got, p.items[i].Name)
		}
		if len(got) == 0 || got[0] != filter {
			t.Fatalf("%s: %v does not start with %s", filter, got, filter)
		}
		for _, w := range want {
			if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+w+" ") {
				t.Errorf("%s: %v lacks %s", filter, got, w)
			}
		}
	}
}

// The neuron map's legend names every mark the map can draw: Hermes' eight DIMMs, 0 to 7.
func TestNeuronLegendNamesEveryDevice(t *testing.T) {
	s := withNeurons(fixture(3))
	s.Neurons.Locations = []string{"GPU", "DIMM0", "DIMM1", "DIMM2", "DIMM3", "DIMM4", "DIMM5", "DIMM6", "DIMM7"}
	for _, w := range []int{46, 72, 118} {
		p := newNeurons(testCommon(false))
		p.SetSnapshot(s)
		p.SetSize(w, 18)
		out := ansi.Strip(p.View())
		if !strings.Contains(out, "G GPU 01234567 DIMM0–7") {
			t.Fatalf("%d wide: the legend does not name every DIMM:\n%s", w, out)
		}
	}
}

// Autoplay says the rate its steps land at when the engine cannot keep the speed asked.
func TestAutoplaySaysTheRateAchieved(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	clock := time.Unix(0, 0)
	d.m.now = func() time.Time { return clock }
	d.keys("+", "+", "+", "+", "+", "space") // 60/s
	for range 8 {
		clock = clock.Add(time.Second / 15)
		d.advance()
	}
	if h := firstLine(d.screen()); !strings.Contains(h, "playing 15/s (60/s asked)") {
		t.Fatalf("the header does not say the rate achieved: %q", h)
	}
	d.keys("-", "-", "-") // 8/s, which 15 steps a second keep up with
	for range 8 {
		clock = clock.Add(time.Second / 8)
		d.advance()
	}
	if h := firstLine(d.screen()); !strings.Contains(h, "playing 8/s") || strings.Contains(h, "asked") {
		t.Fatalf("a rate kept is said plainly: %q", h)
	}
}

// g and a number take the engine to that step: forward without drawing the steps between,
// back through the kept history, and further back by building the run again.
func TestGoToStep(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("g")
	if !strings.Contains(d.screen(), "go to step: ") {
		t.Fatalf("g does not ask for a step:\n%s", d.screen())
	}
	drawn := d.m.frame.drawn
	d.typeText("40")
	d.keys("enter")
	for d.m.jump.jumping {
		d.advance()
	}
	if d.m.snap.Step != 40 || !strings.Contains(d.screen(), "at step 40 (from step 1)") {
		t.Fatalf("at step %d:\n%s", d.m.snap.Step, d.screen())
	}
	if d.m.frame.drawn-drawn > 10 {
		t.Fatalf("%d frames drawn on the way to step 40", d.m.frame.drawn-drawn)
	}
	if got := d.m.metrics.snap.Step; got != 40 {
		t.Fatalf("Metrics shows step %d", got)
	}
	d.keys("g", "3", "5", "enter")
	if d.m.snap.Step != 35 {
		t.Fatalf("back in the history: at step %d", d.m.snap.Step)
	}
	d.keys("n")
	if d.m.snap.Step != 36 {
		t.Fatalf("a step after going back: step %d", d.m.snap.Step)
	}
	alone, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := sim.New(interactive(alone))
	e.StepTo(2)
	want, _ := e.Step()
	d.keys("g", "2", "enter")
	if d.m.snap.Step != 2 || d.m.snap.IterTime != want.IterTime || d.m.snap.Now != want.Now {
		t.Fatalf("rebuilt to step %d (%v at %v), alone %v at %v", d.m.snap.Step, d.m.snap.IterTime, d.m.snap.Now, want.IterTime, want.Now)
	}
	d.keys("g", "x")
	if d.m.jump.typing {
		t.Fatal("a key that is not a digit does not cancel")
	}
	d.keys("g", "enter")
	if !strings.Contains(d.screen(), "type a step number") {
		t.Fatalf("an empty step number is not explained:\n%s", d.screen())
	}
}

// compare opens both sides at the later of the steps their presets open at.
func TestCompareOpensWhereThePresetsOpen(t *testing.T) {
	a, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	b := a
	b.Preset, b.OpenAt = "late", 7
	d := newCmpDriver(t, Side{Name: "neupims", Config: a}, Side{Name: "late", Config: b}, 120, 40, false)
	if d.m.step != 7 || d.m.sides[0].snap.Step != 7 || d.m.sides[1].snap.Step != 7 {
		t.Fatalf("compare opens at step %d (%d, %d), want 7", d.m.step, d.m.sides[0].snap.Step, d.m.sides[1].snap.Step)
	}
	if !strings.Contains(d.screen(), "both sides open at step 7, where late opens") {
		t.Fatalf("the opening is not explained:\n%s", d.screen())
	}
	d.keys("n")
	if d.m.step != 8 {
		t.Fatalf("a step after opening: %d", d.m.step)
	}
	d.keys("b", "b")
	if d.m.step != 6 {
		t.Fatalf("back past the opening: %d", d.m.step)
	}
}

// The strip's heading never cuts "steps" to something that reads as seconds.
func TestCompareStripHeadingWhole(t *testing.T) {
	a, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	whole := regexp.MustCompile(`^((B/A over the last |B/A, last |last )?\d+( steps?)?)?$`)
	for w := 60; w <= 130; w++ {
		d := newCmpDriver(t, Side{Name: "neupims", Config: a}, Side{Name: "npu-only", Config: a}, w, 24, false)
		for _, l := range strings.Split(d.screen(), "\n") {
			_, head, ok := strings.Cut(l, "Δ B−A")
			if !ok {
				continue
			}
			_, rest, _ := strings.Cut(head, "B/A")
			if rest = strings.TrimSpace(strings.Trim(strings.TrimSpace(rest), "│┃")); !whole.MatchString(rest) {
				t.Fatalf("%d wide: the heading is cut: %q", w, rest)
			}
		}
	}
}

// A lesson tells the keys to press, never a count of zoom presses, which depends on the
// terminal's width.
func TestLessonsPrescribeNoZoomCount(t *testing.T) {
	ls, err := presets.Lessons()
	if err != nil {
		t.Fatal(err)
	}
	count := regexp.MustCompile(`[\]\[] (\w+ )?(times|twice)`)
	for _, l := range ls {
		for i, s := range l.Steps {
			if m := count.FindString(s.Text + " " + s.Notice); m != "" {
				t.Errorf("%s step %d: %q", l.Name, i+1, m)
			}
		}
	}
}

// g and a number take both sides of a comparison to that step, forward and back.
func TestCompareGoToStep(t *testing.T) {
	a, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	b, err := smallConfig("npu-only")
	if err != nil {
		t.Fatal(err)
	}
	d := newCmpDriver(t, Side{Name: "neupims", Config: a}, Side{Name: "npu-only", Config: b}, 120, 40, false)
	d.keys("g", "3", "0", "enter")
	if d.m.step != 30 || d.m.sides[0].snap.Step != 30 || d.m.sides[1].snap.Step != 30 || !strings.Contains(d.screen(), "at step 30 (from step 1)") {
		t.Fatalf("at step %d (%d, %d):\n%s", d.m.step, d.m.sides[0].snap.Step, d.m.sides[1].snap.Step, d.screen())
	}
	alone, _ := sim.New(interactive(b))
	alone.StepTo(30)
	want, _ := alone.Step()
	if got := d.m.sides[1].snap; got.Now != want.Now || got.IterTime != want.IterTime {
		t.Fatalf("side B at step 30: %v at %v, alone %v at %v", got.IterTime, got.Now, want.IterTime, want.Now)
	}
	d.keys("g", "2", "5", "enter")
	if d.m.step != 25 || d.m.sides[0].snap.Step != 25 || d.m.sides[1].snap.Step != 25 {
		t.Fatalf("back to 25: %d (%d, %d)", d.m.step, d.m.sides[0].snap.Step, d.m.sides[1].snap.Step)
	}
	d.keys("n")
	if d.m.step != 26 {
		t.Fatalf("a step after going back: %d", d.m.step)
	}
	d.keys("g", "9", "9", "9", "9", "enter")
	if !d.m.sides[0].ended || !d.m.sides[1].ended || !strings.Contains(d.screen(), ", before step 9,999") {
		t.Fatalf("past both runs' ends: step %d, ended %v %v:\n%s", d.m.step, d.m.sides[0].ended, d.m.sides[1].ended, d.screen())
	}
	// Further back than the kept history: both runs again from their start.
	d.keys("g", "5", "enter")
	if d.m.step != 5 || d.m.sides[0].snap.Step != 5 || d.m.sides[1].snap.Step != 5 || d.m.sides[0].ended {
		t.Fatalf("back to 5: %d (%d, %d)", d.m.step, d.m.sides[0].snap.Step, d.m.sides[1].snap.Step)
	}
}

// The dual-row-buffers lesson's first notice works as it says at every lecture size: >,
// x, j to PIM ch0, and l along its spans names "softmax wait + write-back".
func TestDualRowBuffersNoticeWorks(t *testing.T) {
	l, err := presets.GetLesson("dual-row-buffers")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Steps[0].Notice, "Press > to show layer 0 alone, x to unfold the PIM lanes and j to reach PIM ch0") {
		t.Fatalf("the notice changed; update this test: %q", l.Steps[0].Notice)
	}
	info := LessonInfo{Name: l.Name, Title: l.Title}
	for _, s := range l.Steps {
		info.Steps = append(info.Steps, LessonStepInfo{Title: s.Title, Preset: s.Preset, Focus: s.Focus, Text: s.Text, Notice: s.Notice, Steps: s.Steps})
	}
	for _, sz := range lectureSizes {
		opts := testOptions(t)
		opts.Lessons, opts.Lesson = []LessonInfo{info}, l.Name
		opts.LessonStep = func(_ string, i int) (sim.Config, error) { return l.StepConfig(i) }
		cfg, err := l.StepConfig(0)
		if err != nil {
			t.Fatal(err)
		}
		d := startDriver(t, cfg, opts, sz[0], sz[1])
		d.keys(">", "x", "j", "j", "j")
		if tp := d.m.timelinePane(); tp.rows[tp.row].name != "PIM ch0" {
			t.Fatalf("%dx%d: j j j is on %q", sz[0], sz[1], tp.rows[tp.row].name)
		}
		found := false
		for range 80 {
			d.keys("l")
			if strings.Contains(d.screen(), "softmax wait + write-back (layer 0) on PIM ch0") {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%dx%d: l never names the softmax wait:\n%s", sz[0], sz[1], d.screen())
		}
	}
}
