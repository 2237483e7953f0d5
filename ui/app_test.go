package ui

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/sim"
)

func TestStepBackAndReset(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	if d.m.snap == nil || d.m.snap.Step != 1 {
		t.Fatal("init did not take the first step")
	}
	d.keys("n", "right")
	if d.m.snap.Step != 3 {
		t.Fatalf("step %d after two steps, want 3", d.m.snap.Step)
	}
	d.keys("b")
	if d.m.snap.Step != 2 {
		t.Fatalf("step %d after back, want 2", d.m.snap.Step)
	}
	d.keys("left", "left")
	if d.m.snap.Step != 1 || !strings.Contains(d.m.status, "start of the kept history") {
		t.Fatalf("step %d, status %q after stepping back past the start", d.m.snap.Step, d.m.status)
	}
	d.keys("n", "n", "n")
	if d.m.snap.Step != 4 {
		t.Fatalf("step %d after replaying forward, want 4", d.m.snap.Step)
	}
	d.keys("r")
	if d.m.snap.Step != 1 {
		t.Fatalf("step %d after reset, want 1", d.m.snap.Step)
	}
	if got := d.m.metrics.recent(10); len(got) != 1 {
		t.Fatalf("the sparklines kept %d steps across a reset", len(got))
	}
}

// Keys pressed while a step is in flight queue up; only one step command runs at a time.
func TestStepsQueueWhileBusy(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	_, first := d.m.Update(keyPress("n"))
	if first == nil {
		t.Fatal("n issued no step")
	}
	for range 3 {
		if _, cmd := d.m.Update(keyPress("n")); cmd != nil {
			t.Fatal("a second step was issued while one was in flight")
		}
	}
	if d.m.pending != 3 {
		t.Fatalf("pending %d, want 3", d.m.pending)
	}
	d.run(first)
	if d.m.snap.Step != 5 || d.m.busy || d.m.pending != 0 {
		t.Fatalf("step %d busy %v pending %d after the queue drained", d.m.snap.Step, d.m.busy, d.m.pending)
	}
}

func TestStaleStepIsDropped(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	before := d.m.snap
	d.send(stepMsg{seq: d.m.seq - 1, snap: &sim.Snapshot{Step: 99}})
	if d.m.snap != before {
		t.Fatal("a stale step replaced the snapshot")
	}
}

func TestPlayPauseAndSpeed(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("space")
	if !d.m.playing || d.m.snap.Step != 2 {
		t.Fatalf("space: playing %v step %d", d.m.playing, d.m.snap.Step)
	}
	d.advance()
	d.advance()
	if d.m.snap.Step != 4 {
		t.Fatalf("step %d after two ticks, want 4", d.m.snap.Step)
	}
	if !strings.Contains(d.screen(), "playing 4/s") {
		t.Fatalf("header lacks the play state:\n%s", d.screen())
	}
	d.keys("space")
	d.advance()
	if d.m.playing || d.m.snap.Step != 4 {
		t.Fatalf("paused but playing %v step %d", d.m.playing, d.m.snap.Step)
	}
	for range 20 {
		d.keys("+")
	}
	if speeds[d.m.speed] != 60 {
		t.Fatalf("top speed %v", speeds[d.m.speed])
	}
	for range 20 {
		d.keys("-")
	}
	if speeds[d.m.speed] != 0.25 {
		t.Fatalf("bottom speed %v", speeds[d.m.speed])
	}
	if !strings.Contains(d.screen(), "paused") {
		t.Fatalf("header lacks paused:\n%s", d.screen())
	}
}

func TestRunFinishes(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	cfg := d.m.cfg
	cfg.Workload.Steps = 3
	d.run(d.m.restart(cfg, false))
	d.keys("space")
	for i := 0; !d.m.finished && i < 10; i++ {
		d.advance()
	}
	if d.m.playing || !d.m.finished || d.m.snap.Step != 3 {
		t.Fatalf("playing %v finished %v step %d", d.m.playing, d.m.finished, d.m.snap.Step)
	}
	// A budget that leaves requests unserved says so, and how to lift it.
	if s := d.screen(); !strings.Contains(s, "step 3 of 3 (--steps 0 runs to the end)") || !strings.Contains(s, "stopped at the budget") ||
		!strings.Contains(s, "stopped at the step budget (--steps 3): 0 of 64 requests done") {
		t.Fatalf("no end of run on screen:\n%s", s)
	}
}

func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		d := newDriver(t, "neupims", 120, 40)
		d.keys(k)
		if !d.quit {
			t.Fatalf("%s did not quit", k)
		}
	}
	// The help overlay and the message log say any key closes them: q too, which
	// quits only once they are closed; esc never quits.
	d := newDriver(t, "neupims", 120, 40)
	d.keys("?", "esc", "esc")
	if d.quit {
		t.Fatal("esc quit")
	}
	for _, overlay := range []string{"?", "M"} {
		d.keys(overlay, "q")
		if d.quit || d.m.help || d.m.showLog {
			t.Fatalf("q after %s: quit %v, help %v, log %v", overlay, d.quit, d.m.help, d.m.showLog)
		}
	}
	d.keys("q")
	if !d.quit {
		t.Fatal("q did not quit once the overlays were closed")
	}
}

func TestFocusAndKeyRouting(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	if d.m.focus != paneTimeline {
		t.Fatalf("initial focus %d", d.m.focus)
	}
	for i := range numPanes {
		d.keys("tab")
		if want := (paneTimeline + 1 + i) % numPanes; d.m.focus != want {
			t.Fatalf("tab %d: focus %d, want %d", i, d.m.focus, want)
		}
	}
	d.keys("shift+tab")
	if d.m.focus != paneBanks {
		t.Fatalf("shift+tab: focus %d", d.m.focus)
	}
	hm := d.m.panes[paneBanks].(*heatmap)
	d.keys("2", "m")
	if hm.mode != modePIM {
		t.Fatal("m changed the heatmap while the timeline had the focus")
	}
	d.keys("1", "m")
	if hm.mode != modeMem {
		t.Fatal("m did not reach the focused heatmap")
	}
	d.keys("6")
	if d.m.focus != paneRequests {
		t.Fatalf("6: focus %d", d.m.focus)
	}
	// → steps even while a pane has the focus.
	step := d.m.snap.Step
	d.keys("right")
	if d.m.snap.Step != step+1 {
		t.Fatal("→ did not step with a pane focused")
	}
}

func TestMaximiseAndLayouts(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	if len(d.m.rects) != int(numPanes) {
		t.Fatalf("dashboard shows %d panes, want all", len(d.m.rects))
	}
	d.keys("3", "z")
	if len(d.m.rects) != 1 || d.m.rects[paneKV].w != 160 {
		t.Fatalf("z: %v", d.m.rects)
	}
	d.keys("z")
	if len(d.m.rects) != int(numPanes) {
		t.Fatal("z did not restore the dashboard")
	}
	d.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	if _, ok := d.m.rects[paneKV]; !ok || len(d.m.rects) != 2 {
		t.Fatalf("100×30 should stack the focused pane and its companion: %v", d.m.rects)
	}
	d.send(tea.WindowSizeMsg{Width: 60, Height: 16})
	if _, ok := d.m.rects[paneKV]; !ok || len(d.m.rects) != 1 {
		t.Fatalf("60×16 should show the focused pane alone: %v", d.m.rects)
	}
	s := d.screen()
	for _, want := range []string{"step 1 ", "3 KV blocks", "? help"} {
		if !strings.Contains(s, want) {
			t.Errorf("60×16 lacks %q:\n%s", want, s)
		}
	}
	d.send(tea.WindowSizeMsg{Width: 59, Height: 16})
	if s := d.screen(); !strings.Contains(s, "terminal too small (have 59×16, need 60×16)") {
		t.Fatalf("no too-small screen:\n%s", s)
	}
}

func TestHelpOverlay(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("?")
	s := d.screen()
	for _, want := range []string{"Keys", "space play/pause", "Reading the screen"} {
		if !strings.Contains(s, want) {
			t.Errorf("help lacks %q:\n%s", want, s)
		}
	}
	step := d.m.snap.Step
	d.keys("j", "j", "n")
	if d.m.help || d.m.snap.Step != step {
		t.Fatal("a key other than scrolling should close the help without acting")
	}
}

func TestPresetPicker(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("p")
	if d.m.picker == nil || !strings.Contains(d.screen(), "gpu-h100") {
		t.Fatalf("p did not open the picker:\n%s", d.screen())
	}
	d.keys("esc")
	if d.m.picker != nil || d.m.cfg.Preset != "neupims" {
		t.Fatal("esc should close the picker without a change")
	}
	d.keys("p")
	d.typeText("h100")
	if got := len(d.m.picker.matches); got != 1 {
		t.Fatalf("filter h100 matches %d presets", got)
	}
	d.keys("enter")
	if d.m.picker != nil || d.m.cfg.Preset != "gpu-h100" || d.m.snap == nil || d.m.snap.Step != 1 {
		t.Fatalf("after picking: preset %q snap %v", d.m.cfg.Preset, d.m.snap)
	}
	if s := d.screen(); !strings.Contains(s, "GPU-only") || !strings.Contains(s, "no processing in") {
		t.Fatalf("the screen does not show the GPU preset:\n%s", s)
	}
}

// Typing a name puts the cursor on that name first, then on names that start with it,
// names that hold its letters in order and descriptions that mention it; every keystroke
// moves the cursor back to the best match, in the preset, lesson and compare pickers.
func TestPickerRanksNamesFirst(t *testing.T) {
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	d := startDriver(t, cfg, compareOptions(t), 120, 40)
	d.keys("p", "down", "down", "down")
	typed := ""
	for _, r := range "hermes" {
		d.keys(string(r))
		typed += string(r)
		if d.m.picker.cur != 0 {
			t.Fatalf("after %q the cursor is at %d, not the best match", typed, d.m.picker.cur)
		}
	}
	var names []string
	for _, i := range d.m.picker.matches {
		names = append(names, d.m.picker.items[i].Name)
	}
	if names[0] != "hermes" || !slices.Contains(names[1:3], "hermes-base") || !slices.Contains(names[1:3], "hermes-host") {
		t.Fatalf("ranking %v: want hermes, then the names starting with it", names)
	}
	// rank-pim matches only by its description, which names Hermes: after every name.
	if i := slices.Index(names, "rank-pim"); i < 3 {
		t.Fatalf("rank-pim, a description match, ranks %d in %v", i, names)
	}
	d.keys("enter")
	if d.m.cfg.Preset != "hermes" {
		t.Fatalf("typing hermes and enter loaded %q", d.m.cfg.Preset)
	}

	// A fuzzy name beats a description: "npuo" is npu-only's letters in order.
	d.keys("p")
	d.typeText("npuo")
	if got := d.m.picker.selected(); got != "npu-only" {
		t.Fatalf("npuo selects %q", got)
	}
	d.keys("esc")

	// The compare chooser and the lesson picker rank the same way.
	d.keys("c")
	d.typeText("flexgen")
	if got := d.m.chooser.selected(); got != "flexgen" {
		t.Fatalf("the compare chooser selects %q for flexgen", got)
	}
	d.keys("esc")
	d.m.opts.Lessons, d.m.opts.LessonStep = tinyLessons, tinyStep(new(int))
	d.keys("t", "down", "o", "t", "h")
	if got := d.m.picker.selected(); got != "other" {
		t.Fatalf("the lesson picker selects %q for oth", got)
	}
}

func TestMouse(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	if d.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Fatal("mouse is off by default")
	}
	r := d.m.rects[paneKV]
	d.send(tea.MouseClickMsg{X: r.x + 3, Y: r.y + 4, Button: tea.MouseLeft})
	if d.m.focus != paneKV {
		t.Fatalf("click did not focus the KV map: %d", d.m.focus)
	}
	tr := d.m.rects[paneTimeline]
	tl := d.m.panes[paneTimeline].(*timeline)
	span := tl.t1 - tl.t0
	d.send(tea.MouseWheelMsg{X: tr.x + tr.w/2, Y: tr.y + 3, Button: tea.MouseWheelUp})
	if tl.t1-tl.t0 >= span || !strings.Contains(tl.Title(), "zoom") {
		t.Fatal("the wheel did not zoom the timeline")
	}
	if d.m.focus != paneKV {
		t.Fatal("the wheel moved the focus")
	}
	hr := d.m.rects[paneBanks]
	hm := d.m.panes[paneBanks].(*heatmap)
	q := hm.geom()
	d.send(tea.MouseClickMsg{X: hr.x + 1 + q.xs[4], Y: hr.y + 1 + q.top + 2, Button: tea.MouseLeft})
	if d.m.focus != paneBanks || hm.cr != 2*q.fr || hm.cc != 4*q.fc {
		t.Fatalf("click on a bank: focus %d cursor %d,%d", d.m.focus, hm.cr, hm.cc)
	}
	d.send(tea.MouseClickMsg{X: 2, Y: d.m.c.Height - 1, Button: tea.MouseLeft})
	d.send(tea.MouseWheelMsg{X: 200, Y: 200, Button: tea.MouseWheelDown})

	cfg, _ := smallConfig("neupims")
	opts := testOptions(t)
	opts.NoMouse = true
	m, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.View().MouseMode != tea.MouseModeNone {
		t.Fatal("--no-mouse still captures the mouse")
	}
}

func TestTabStripClick(t *testing.T) {
	d := newDriver(t, "neupims", 100, 30)
	x := tabX(100)[paneMetrics]
	d.send(tea.MouseClickMsg{X: x[0] + 1, Y: 1, Button: tea.MouseLeft})
	if d.m.focus != paneMetrics {
		t.Fatalf("tab click: focus %d", d.m.focus)
	}
}

// Selecting a request in the table highlights it in the KV map, which moves to it.
func TestSelectionIsShared(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	d.keys("6", "j", "j", "j")
	rows := d.m.snap.Requests
	id := rows[2].ID
	if d.m.c.Selected != id {
		t.Fatalf("selected %d, want %d", d.m.c.Selected, id)
	}
	kv := d.m.panes[paneKV].(*kvmap)
	if kv.loc != rows[2].Loc || kv.holderID() != id {
		t.Fatalf("KV cursor at location %d holder %d, want %d/%d", kv.loc, kv.holderID(), rows[2].Loc, id)
	}
	d.keys("3", "j")
	if d.m.c.Selected != 0 {
		t.Fatal("moving to another location kept the selection")
	}
	d.keys("l")
	if d.m.c.Selected == 0 || d.m.c.Selected != kv.holderID() || kv.loc != min(rows[2].Loc+1, len(kv.locs)-1) {
		t.Fatalf("l in the KV map selected %d at location %d", d.m.c.Selected, kv.loc)
	}
	d.keys("esc")
	if d.m.c.Selected != 0 {
		t.Fatal("esc did not clear the selection")
	}
}

func TestTimelineNavigation(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	tl := d.m.panes[paneTimeline].(*timeline)
	end := d.m.snap.Timeline.Makespan
	if tl.t0 != 0 || tl.t1 != end {
		t.Fatalf("window %v–%v, want the whole iteration", tl.t0, tl.t1)
	}
	d.keys("]", "]")
	if got := tl.t1 - tl.t0; got > end/4+1 || got < end/4-1 {
		t.Fatalf("two zooms give a window of %v, want %v", got, end/4)
	}
	d.keys("L")
	if tl.t0 == 0 {
		t.Fatal("L did not pan")
	}
	d.keys("n")
	if tl.fit || tl.t1-tl.t0 > end/4+1 {
		t.Fatal("stepping lost the zoom")
	}
	d.keys("0")
	if tl.t0 != 0 || tl.t1 != d.m.snap.Timeline.Makespan {
		t.Fatal("0 did not fit the iteration")
	}
	d.keys(">")
	if tl.layer != 0 || tl.t1 >= d.m.snap.Timeline.Makespan {
		t.Fatalf("> selected layer %d window %v–%v", tl.layer, tl.t0, tl.t1)
	}
	if s := d.screen(); !strings.Contains(s, "layer 0 of") || !strings.Contains(s, "(layer 0)") {
		t.Fatalf("layer 0 not shown:\n%s", s)
	}
	d.keys("<")
	if tl.layer != -1 {
		t.Fatalf("< from layer 0 should show all layers, got %d", tl.layer)
	}
	d.keys("j", "j")
	if !tl.rows[tl.row].group {
		t.Fatalf("row %d is %q, want the PIM group", tl.row, tl.rows[tl.row].name)
	}
	n := len(tl.rows)
	d.keys("x")
	if len(tl.rows) != n+32 || !tl.rows[tl.row].group {
		t.Fatalf("x: %d rows, cursor on %q", len(tl.rows), tl.rows[tl.row].name)
	}
	for range 40 {
		d.keys("j")
	}
	if s := d.screen(); !strings.Contains(s, "PIM ch31") {
		t.Fatalf("the last channel is not reachable:\n%s", s)
	}
	for range 300 {
		d.keys("l")
	}
	if tl.cursor >= tl.t1 || tl.cursor < tl.t0 {
		t.Fatal("the cursor left the window")
	}
}

func TestHeatmapModesAndDrill(t *testing.T) {
	d := newDriver(t, "neupims", 100, 30)
	d.keys("1")
	hm := d.m.panes[paneBanks].(*heatmap)
	q := hm.geom()
	if q.whole || q.fr < 2 {
		t.Fatalf("a 32-channel grid should open as an overview at 100×30: %+v", q)
	}
	d.keys("j", "j", "enter")
	if !hm.drill || hm.geom().fr != 1 || !strings.Contains(hm.Title(), "detail") {
		t.Fatal("enter did not drill down")
	}
	for range 40 {
		d.keys("j")
	}
	if hm.cr != 31 || hm.r0+hm.geom().nr != 32 {
		t.Fatalf("cursor %d, window from %d", hm.cr, hm.r0)
	}
	d.keys("esc")
	if hm.drill {
		t.Fatal("esc did not return to the overview")
	}
	for _, want := range []heatMode{modeMem, modeBoth, modeOwner, modePIM} {
		d.keys("m")
		if hm.mode != want {
			t.Fatalf("mode %d, want %d", hm.mode, want)
		}
	}
}

func TestBackgroundColour(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.send(tea.BackgroundColorMsg{Color: ansiWhite{}})
	if d.m.c.Dark {
		t.Fatal("a white background left the dark palette on")
	}
}

type ansiWhite struct{}

func (ansiWhite) RGBA() (r, g, b, a uint32) { return 0xffff, 0xffff, 0xffff, 0xffff }

// No line is ever wider than the terminal and the screen always has its height, at any
// size and in every overlay and layout.
func TestViewFitsEverySize(t *testing.T) {
	stride := 1
	if quick() {
		stride = 3
	}
	for _, p := range []string{"neupims", "gpu-h100", "npu-only", "lesson"} {
		var d *driver
		if p == "lesson" {
			d = newLessonDriver(t, "tiny", 120, 40)
		} else {
			d = newDriver(t, p, 120, 40)
		}
		d.keys("n")
		for w := 1; w <= 230; w += 13 * stride {
			for h := 1; h <= 75; h += 7 * stride {
				d.send(tea.WindowSizeMsg{Width: w, Height: h})
				for _, state := range []string{"", "?", "p", "t", "i", "z"} {
					if state != "" {
						d.keys(state)
					}
					checkFits(t, p+" "+state, d.m.View().Content, w, h)
					switch state {
					case "?", "p", "t", "i":
						d.keys("esc")
					case "z":
						d.keys("z")
					}
				}
			}
		}
	}
}

func TestHeaderNamesTheRun(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	head := strings.SplitN(d.screen(), "\n", 2)[0]
	for _, want := range []string{"neupims", "NPU + HBM-PIM", "GPT3-7B tp4", "ShareGPT", "step 1 ", "tok/s", "paused"} {
		if !strings.Contains(head, want) {
			t.Errorf("header lacks %q: %s", want, head)
		}
	}
	d.send(tea.WindowSizeMsg{Width: 60, Height: 20})
	head = strings.SplitN(d.screen(), "\n", 2)[0]
	if !strings.Contains(head, "step 1 ") || ansi.StringWidth(head) > 60 {
		t.Fatalf("narrow header: %q", head)
	}
}

// fuzzKeys are the keys the fuzzer presses: every binding and some the explorer ignores.
var fuzzKeys = []string{"space", "n", "right", "b", "left", "+", "-", "r", "p", "tab", "shift+tab", "1", "2", "3", "4", "5", "6",
	"z", "?", "esc", "enter", "h", "j", "k", "l", "up", "down", "m", "[", "]", "0", "H", "L", "shift+left", "shift+right",
	"<", ">", "x", "g", "G", "pgup", "pgdown", "backspace", "a", "/", "é", "e", "(", ")", "t", "i", "B", "{", "}", "%"}

func FuzzUpdate(f *testing.F) {
	f.Add([]byte("nnb +-r?q"), uint8(80), uint8(24))
	f.Add([]byte("  nnnnbbbb"), uint8(10), uint8(3))
	f.Add([]byte{7, 200, 100, 13, 5, 5, 17, 1, 1, 2, 3, 4, 50, 60}, uint8(160), uint8(48))
	f.Add([]byte{98, 98, 47, 49, 1, 7, 90, 40, 98}, uint8(121), uint8(40))
	f.Fuzz(func(t *testing.T, in []byte, w, h uint8) {
		// Odd widths open the explorer in a lesson, so the lesson's keys and panel are
		// fuzzed too.
		var d *driver
		if w%2 == 1 {
			d = newLessonDriver(t, "tiny", int(w), int(h))
		} else {
			d = newDriver(t, "neupims", int(w), int(h))
		}
		d.m.opts.ExportDir = t.TempDir()
		for i := 0; i < len(in) && i < 60; i++ {
			b := in[i]
			arg := func(k int) int {
				if i+k < len(in) {
					return int(in[i+k])
				}
				return 0
			}
			switch {
			case b%31 == 7:
				d.send(tea.WindowSizeMsg{Width: arg(1), Height: arg(2) / 2})
				i += 2
			case b%31 == 13:
				d.send(tea.MouseClickMsg{X: arg(1), Y: arg(2) / 3, Button: tea.MouseButton(1 + arg(3)%3)})
				i += 3
			case b%31 == 17:
				d.send(tea.MouseWheelMsg{X: arg(1), Y: arg(2) / 3, Button: tea.MouseWheelUp + tea.MouseButton(arg(3)%4)})
				i += 3
			case b%31 == 19:
				d.advance()
			default:
				d.keys(fuzzKeys[int(b)%len(fuzzKeys)])
			}
		}
		if d.m.c.Width > 0 && d.m.c.Height > 0 {
			checkFits(t, "fuzz", d.m.View().Content, d.m.c.Width, d.m.c.Height)
		}
	})
}

// Every embedded preset opens, steps and draws at every layout without a line too wide.
func TestEveryPresetRenders(t *testing.T) {
	for _, p := range testOptions(t).Presets {
		t.Run(p.Name, func(t *testing.T) {
			d := newDriver(t, p.Name, 160, 48)
			if d.m.err != nil {
				t.Fatal(d.m.err)
			}
			d.keys("n", "n")
			for _, sz := range [][2]int{{200, 60}, {160, 48}, {120, 36}, {100, 30}, {60, 16}} {
				d.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				for _, k := range []string{"1", "2", "3", "4", "5", "6"} {
					d.keys(k, "z")
					checkFits(t, p.Name+" "+k, d.m.View().Content, sz[0], sz[1])
					d.keys("z")
				}
			}
		})
	}
}

// A preset that cannot build an engine leaves the current run as it was.
func TestPresetLoadFailureKeepsRun(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("n")
	snap := d.m.snap
	d.m.opts.Load = func(name string) (sim.Config, error) {
		c, err := smallConfig(name)
		c.Workload.MaxBatch = 0
		return c, err
	}
	d.keys("p", "enter")
	if d.m.cfg.Preset != "neupims" || d.m.snap != snap || !d.m.statusBad {
		t.Fatalf("preset %q, snapshot kept %v, status %q", d.m.cfg.Preset, d.m.snap == snap, d.m.status)
	}
	if s := d.screen(); !strings.Contains(s, "step 2 ") || strings.Contains(s, "waiting for the first step") {
		t.Fatalf("the run is gone from the screen:\n%s", s)
	}
}

// Engines load off the UI goroutine, one at a time: a load asked for while one runs
// waits for it, and the one running, superseded, is not adopted when it lands.
func TestOnlyLatestLoadAdopted(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	first, err := smallConfig("gpu-h100")
	if err != nil {
		t.Fatal(err)
	}
	second, err := smallConfig("npu-only")
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.m.restart(first, true), d.m.restart(second, true)
	if a == nil || b != nil {
		t.Fatal("the second load did not wait for the first")
	}
	_, next := d.m.Update(a())
	if d.m.cfg.Preset != "neupims" || next == nil {
		t.Fatalf("the superseded load was adopted (preset %q) or the waiting one not started", d.m.cfg.Preset)
	}
	d.send(next())
	if d.m.cfg.Preset != "npu-only" || d.m.snap == nil || d.m.snap.Step != 1 {
		t.Fatalf("after the latest load: preset %q, snapshot %v", d.m.cfg.Preset, d.m.snap)
	}
}

// / filters the request table by id, location or status (the keys go to the filter
// while it is typed), o sorts by the next column and O reverses; esc clears the filter.
func TestRequestsFilterAndSort(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	d.keys("n", "6")
	rq := d.m.panes[paneRequests].(*requests)
	all := len(rq.rows)
	loc := rq.where(rq.rows[0])
	d.keys("/")
	d.typeText(loc)
	if !rq.typing || d.m.snap.Step != 2 {
		t.Fatal("typing a filter should not act on the run")
	}
	d.keys("enter")
	if len(rq.rows) == 0 || len(rq.rows) >= all {
		t.Fatalf("filter %q keeps %d of %d rows", loc, len(rq.rows), all)
	}
	for _, i := range rq.rows {
		if w := rq.where(i); !strings.Contains(strings.ToLower(w), strings.ToLower(loc)) {
			t.Fatalf("row at %s passes the filter %q", w, loc)
		}
	}
	if !strings.Contains(rq.Title(), "/"+loc+": ") {
		t.Fatalf("title %q does not show the filter", rq.Title())
	}
	d.keys("esc")
	if len(rq.rows) != all || rq.filter.text != "" {
		t.Fatal("esc should clear the filter")
	}
	d.keys("/", "w", "a", "i", "t", "enter")
	for _, i := range rq.rows {
		if st := d.m.snap.Requests[i].Status; st != sim.Waiting {
			t.Fatalf("filter wait keeps a %v request", st)
		}
	}
	d.keys("esc", "o")
	if rq.sortBy != colInput {
		t.Fatalf("o sorts by %v", rq.sortBy)
	}
	in := func(k int) int { return d.m.snap.Requests[rq.rows[k]].InputLen }
	for k := 1; k < len(rq.rows); k++ {
		if in(k) < in(k-1) {
			t.Fatalf("rows not in input order at %d: %d after %d", k, in(k), in(k-1))
		}
	}
	d.keys("O")
	if in(0) < in(len(rq.rows)-1) {
		t.Fatal("O should reverse the order")
	}
	if !strings.Contains(d.screen(), "input▼") {
		t.Fatalf("the header does not mark the sort:\n%s", d.screen())
	}
}

// The status messages go into a log that M shows, newest last, with the step each came at;
// any key closes it.
func TestMessageLog(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("n", "%", "%")
	d.keys("M")
	if !d.m.showLog {
		t.Fatal("M did not open the message log")
	}
	s := d.screen()
	for _, want := range []string{"Messages", "bubble threshold 50%", "bubble threshold 75%", "step 2"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the log lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "threshold 50%") > strings.Index(s, "threshold 75%") {
		t.Fatal("the log is not in order")
	}
	d.keys("n")
	if d.m.showLog || d.m.snap.Step != 2 {
		t.Fatal("a key should close the log without acting")
	}
}

// A preset whose regime of interest comes late opens there (workload.open_at), and a
// reset goes back there; the iterations before it stay in the history.
func TestOpensAtThePresetsIteration(t *testing.T) {
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	cfg.OpenAt = 40
	d := startDriver(t, cfg, testOptions(t), 160, 48)
	if d.m.snap == nil || d.m.snap.Step != 40 {
		t.Fatal("did not open at iteration 40")
	}
	d.keys("b")
	if d.m.snap.Step != 39 {
		t.Fatalf("stepped back to %d, want 39", d.m.snap.Step)
	}
	d.keys("n", "n", "r")
	if d.m.snap.Step != 40 {
		t.Fatalf("reset to %d, want iteration 40", d.m.snap.Step)
	}
	// A run that ends first opens on its last iteration.
	cfg.Workload.Steps = 10
	d = startDriver(t, cfg, testOptions(t), 160, 48)
	if d.m.snap == nil || d.m.snap.Step != 10 {
		t.Fatal("a run of 10 iterations did not open on its last")
	}
}
