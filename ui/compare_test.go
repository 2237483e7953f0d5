package ui

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// sideFile loads "NAME+key=value+…" (values without "+") with a short workload.
func sideFile(t testing.TB, spec string) *presets.File {
	t.Helper()
	parts := strings.Split(spec, "+")
	f, err := presets.Get(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	f.Workload.Requests = 48
	f.Workload.Batch = min(f.Workload.Batch, 16)
	for _, kv := range parts[1:] {
		if err := f.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// pairSides builds two sides as the command line does: B serves A's request stream and
// keeps its own batch and KV policy.
func pairSides(t testing.TB, a, b string) (Side, Side) {
	t.Helper()
	fa, fb := sideFile(t, a), sideFile(t, b)
	w := fa.Workload
	w.Batch, w.KVPolicy = fb.Workload.Batch, fb.Workload.KVPolicy
	fb.Workload = w
	ca, err := presets.Build(fa, nil)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := presets.Build(fb, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Side{Name: a, Config: ca}, Side{Name: b, Config: cb, Contrast: presets.Contrast(fa, fb, nil)}
}

// compareOptions are the explorer's options with the compare chooser on: the running
// preset with each switch turned over, then the other presets.
func compareOptions(t testing.TB) Options {
	o := testOptions(t)
	o.CompareWith = func(name string) []CompareChoice {
		var out []CompareChoice
		f, err := presets.Get(name)
		if err != nil {
			return nil
		}
		for _, sw := range f.Switches() {
			kv := sw.Key + "=" + map[bool]string{true: "true", false: "false"}[!sw.On]
			out = append(out, CompareChoice{Side: name + "+" + kv, Label: name + " with " + kv, Description: sw.Doc})
		}
		for _, p := range presetList() {
			if p.Name != name {
				out = append(out, CompareChoice{Side: p.Name, Label: p.Name, Description: p.Description})
			}
		}
		return out
	}
	o.CompareLoad = func(a, b string) (Side, Side, error) {
		if strings.HasPrefix(b, "bad") {
			return Side{}, Side{}, errors.New("side B \"" + b + "\": unknown preset")
		}
		sa, sb := pairSides(t, a, b)
		return sa, sb, nil
	}
	return o
}

func newCmpDriver(t testing.TB, a, b Side, w, h int, color bool) *cmpDriver {
	t.Helper()
	opts := testOptions(t)
	opts.Color = color
	m, err := NewCompare(a, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return start(t, m, w, h)
}

// stepFigures are the figures of one snapshot the strip compares.
type stepFigures struct {
	step          int
	iter          sim.Time
	stepTok, run  float64
	util          map[string]float64
	batch, queue  int
	done, pending int
}

func figuresOf(s *sim.Snapshot) stepFigures {
	return stepFigures{s.Step, s.IterTime, s.Metrics.StepTokPerSec, s.Metrics.Throughput, s.Metrics.Util, s.Batch, s.Queue, s.Done, s.Total - s.Done}
}

// alone runs a side's engine by itself to the end, or for at most limit steps (0: no
// limit), and keeps every step's figures.
func alone(t *testing.T, s Side, limit int) []stepFigures {
	t.Helper()
	e, err := sim.New(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	var out []stepFigures
	for {
		snap, err := e.Step()
		if errors.Is(err, sim.ErrDone) || limit > 0 && len(out) == limit {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, figuresOf(snap))
	}
}

func sameFigures(a, b stepFigures) bool {
	if a.step != b.step || a.iter != b.iter || a.stepTok != b.stepTok || a.run != b.run || a.batch != b.batch || a.queue != b.queue || len(a.util) != len(b.util) {
		return false
	}
	for k, v := range a.util {
		if w, ok := b.util[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkStrip checks the strip's rows at lockstep step k against the two sides run alone.
func checkStrip(t *testing.T, m *Compare, ra, rb []stepFigures, k int) {
	t.Helper()
	var fa, fb *stepFigures
	if k <= len(ra) {
		fa = &ra[k-1]
	}
	if k <= len(rb) {
		fb = &rb[k-1]
	}
	for _, r := range m.diffs() {
		var want [2]float64
		var has [2]bool
		for i, f := range []*stepFigures{fa, fb} {
			if f == nil {
				if r.name == "run tok/s" {
					last := [][]stepFigures{ra, rb}[i]
					want[i], has[i] = last[len(last)-1].run, true
				}
				continue
			}
			has[i] = true
			switch {
			case r.name == "iteration":
				want[i] = float64(f.iter)
			case r.name == "step tok/s":
				want[i] = f.stepTok
			case r.name == "run tok/s":
				want[i] = f.run
			case r.name == "batch":
				want[i] = float64(f.batch)
			case r.name == "queue":
				want[i] = float64(f.queue)
			case r.util != "":
				want[i], has[i] = f.util[r.util]
			default:
				t.Fatalf("unexpected strip row %q", r.name)
			}
		}
		if r.has != has || r.v != want {
			t.Fatalf("step %d %s: strip has %v %v, the sides alone %v %v", k, r.name, r.has, r.v, has, want)
		}
		if has[0] && has[1] {
			if d := r.delta(); d != want[1]-want[0] {
				t.Fatalf("step %d %s: Δ %v, want %v", k, r.name, d, want[1]-want[0])
			}
			if want[0] != 0 && r.ratio() != want[1]/want[0] {
				t.Fatalf("step %d %s: ratio %v, want %v", k, r.name, r.ratio(), want[1]/want[0])
			}
		} else if !math.IsNaN(r.delta()) || !math.IsNaN(r.ratio()) {
			t.Fatalf("step %d %s: a difference without both sides", k, r.name)
		}
	}
}

// The lockstep guarantee: every step a compare view shows, of each side and of their
// differences, is what the two engines give run alone; stepping back and forward again
// shows the same.
func TestCompareLockstep(t *testing.T) {
	pairs := [][2]string{
		{"neupims", "npu-only"},
		{"neupims", "neupims+pim.dual_row_buffer=false"},
		{"npu-pim", "gpu-h100+workload.batch=4"},
		{"lolpim", "aimx"},
	}
	for _, p := range pairs {
		t.Run(p[0]+" vs "+p[1], func(t *testing.T) {
			a, b := pairSides(t, p[0], p[1])
			ra, rb := alone(t, a, 14), alone(t, b, 14)
			d := newCmpDriver(t, a, b, 160, 48, true)
			check := func() {
				t.Helper()
				k := d.m.step
				for i, r := range [][]stepFigures{ra, rb} {
					s := d.m.sides[i].snap
					want := r[min(k, len(r))-1]
					if !sameFigures(figuresOf(s), want) {
						t.Fatalf("step %d side %s: %+v, alone %+v", k, SideLetter(i), figuresOf(s), want)
					}
				}
				checkStrip(t, d.m, ra, rb, k)
			}
			for range 12 {
				check()
				d.keys("n")
			}
			check()
			d.keys("b", "b", "left")
			if d.m.step != 10 {
				t.Fatalf("step %d after three steps back from 13", d.m.step)
			}
			check()
			d.keys("n", "right")
			check()
		})
	}
}

// When one side has served every request it stops at its last step while the other goes
// on; the strip and the status say which ended when; stepping back brings both back.
func TestCompareOneSideFinishes(t *testing.T) {
	a, b := pairSides(t, "gpu-h100+workload.requests=8+workload.batch=8+workload.input_len=16+workload.output_len=4", "gpu-h100+workload.batch=2")
	ra, rb := alone(t, a, 0), alone(t, b, 0)
	if len(ra) >= len(rb) {
		t.Fatalf("A runs %d steps, B %d: the test needs A to end first", len(ra), len(rb))
	}
	d := newCmpDriver(t, a, b, 160, 48, false)
	for d.m.step < len(ra) {
		d.keys("n")
	}
	if d.m.sides[0].ended {
		t.Fatal("A ended before the step after its last")
	}
	d.keys("n")
	if !d.m.sides[0].ended || d.m.sides[1].ended || d.m.step != len(ra)+1 {
		t.Fatalf("ended %v %v at step %d", d.m.sides[0].ended, d.m.sides[1].ended, d.m.step)
	}
	want := "A finished after " + itoa(len(ra)) + " steps; B goes on"
	if s := d.screen(); !strings.Contains(s, want) || !strings.Contains(s, "finished after "+itoa(len(ra))+" steps · run") {
		t.Fatalf("the screen does not say %q:\n%s", want, s)
	}
	checkStrip(t, d.m, ra, rb, d.m.step)
	for d.m.step < len(ra)+3 {
		d.keys("n")
	}
	if d.m.sides[0].snap.Step != len(ra) || d.m.sides[1].snap.Step != len(ra)+3 {
		t.Fatalf("A at %d, B at %d", d.m.sides[0].snap.Step, d.m.sides[1].snap.Step)
	}
	checkStrip(t, d.m, ra, rb, d.m.step)
	// Back past A's last step: both go back together.
	d.keys("b", "b", "b", "b")
	if d.m.step != len(ra)-1 || d.m.sides[0].snap.Step != len(ra)-1 || d.m.sides[0].ended {
		t.Fatalf("after stepping back: step %d, A at %d, ended %v", d.m.step, d.m.sides[0].snap.Step, d.m.sides[0].ended)
	}
	checkStrip(t, d.m, ra, rb, d.m.step)
	for range len(rb) + 5 {
		d.keys("n")
	}
	if !d.m.sides[0].ended || !d.m.sides[1].ended || d.m.step != len(rb) {
		t.Fatalf("after the end: ended %v %v, step %d of %d", d.m.sides[0].ended, d.m.sides[1].ended, d.m.step, len(rb))
	}
	s := d.screen()
	if !strings.Contains(s, "both runs finished: A after "+itoa(len(ra))+" steps, B after "+itoa(len(rb))) || !strings.Contains(firstLine(s), "finished") {
		t.Fatalf("no end of both runs on screen:\n%s", s)
	}
	checkStrip(t, d.m, ra, rb, d.m.step)
}

func itoa(n int) string { return thousands(n) }

func TestCompareKeys(t *testing.T) {
	a, b := pairSides(t, "neupims", "npu-only")
	d := newCmpDriver(t, a, b, 160, 48, true)
	if d.m.step != 1 {
		t.Fatalf("init left step %d", d.m.step)
	}
	// One move in flight at a time; keys queue behind it.
	_, first := d.m.Update(keyPress("n"))
	for range 2 {
		if _, cmd := d.m.Update(keyPress("n")); cmd != nil {
			t.Fatal("a second move was issued while one was in flight")
		}
	}
	d.run(first)
	if d.m.step != 4 || d.m.busy || d.m.pending != 0 {
		t.Fatalf("step %d busy %v pending %d after the queue drained", d.m.step, d.m.busy, d.m.pending)
	}
	// A stale move is dropped.
	d.send(compareStepMsg{seq: d.m.seq - 1, moved: [2]bool{true, true}, snaps: [2]*sim.Snapshot{{Step: 99}, {Step: 99}}})
	if d.m.sides[0].snap.Step != 4 {
		t.Fatal("a stale move replaced the snapshots")
	}
	// Pane keys go to the focused side's timeline; tab moves the focus.
	d.keys("]")
	if !strings.Contains(d.m.sides[0].tl.Title(), "zoom") || strings.Contains(d.m.sides[1].tl.Title(), "zoom") {
		t.Fatalf("] zoomed %q and %q", d.m.sides[0].tl.Title(), d.m.sides[1].tl.Title())
	}
	d.keys("tab", "]", "]")
	if d.m.focus != 1 || !strings.Contains(d.m.sides[1].tl.Title(), "zoom ×4") || !strings.Contains(d.m.sides[0].tl.Title(), "zoom ×2") {
		t.Fatalf("focus %d, titles %q %q", d.m.focus, d.m.sides[0].tl.Title(), d.m.sides[1].tl.Title())
	}
	lines := strings.Split(d.screen(), "\n")
	if !strings.HasPrefix(lines[1], "╭─A npu") && !strings.HasPrefix(lines[1], "╭─A neupims") || !strings.Contains(lines[1], "┏━B npu-only") {
		t.Fatalf("the focused side has no heavy frame: %s", lines[1])
	}
	d.keys("shift+tab")
	if d.m.focus != 0 {
		t.Fatal("shift+tab did not move the focus back")
	}
	// Play, speed, pause.
	d.keys("space")
	d.advance()
	d.advance()
	if !d.m.playing || d.m.step != 7 || !strings.Contains(firstLine(d.screen()), "playing 4/s") {
		t.Fatalf("playing %v step %d: %s", d.m.playing, d.m.step, firstLine(d.screen()))
	}
	d.keys("+", "+", "space")
	d.advance()
	if d.m.playing || d.m.step != 7 || speeds[d.m.speed] != 15 {
		t.Fatalf("paused: playing %v step %d speed %v", d.m.playing, d.m.step, speeds[d.m.speed])
	}
	d.keys("-")
	if speeds[d.m.speed] != 8 {
		t.Fatalf("speed %v after -", speeds[d.m.speed])
	}
	// Help opens and closes; esc alone does nothing outside the explorer.
	d.keys("?")
	if !d.m.help || !strings.Contains(d.screen(), "Reading the compare screen") {
		t.Fatal("? shows no help")
	}
	d.keys("esc")
	if d.m.help {
		t.Fatal("esc left the help open")
	}
	d.keys("esc")
	if d.quit || d.m.step != 7 {
		t.Fatal("esc did something outside the explorer")
	}
	// Reset starts both sides again.
	d.keys("r")
	if d.m.step != 1 || d.m.sides[0].snap.Step != 1 || d.m.sides[1].snap.Step != 1 || len(d.m.recent(10)) != 1 {
		t.Fatalf("after reset: step %d, sides %d %d, %d samples", d.m.step, d.m.sides[0].snap.Step, d.m.sides[1].snap.Step, len(d.m.recent(10)))
	}
	d.keys("b")
	if d.m.step != 1 || !strings.Contains(d.m.status, "first step") {
		t.Fatalf("back from step 1: step %d, status %q", d.m.step, d.m.status)
	}
	d.keys("q")
	if !d.quit {
		t.Fatal("q did not quit")
	}
}

// The header says both sides serve A's requests; when the models differ, the strip says so.
func TestCompareSaysStreamAndModels(t *testing.T) {
	a, b := pairSides(t, "neupims", "hermes")
	d := newCmpDriver(t, a, b, 200, 50, false)
	s := d.screen()
	if !strings.Contains(firstLine(s), "A neupims vs B hermes · same requests (A's): ShareGPT · 48 requests · closed · seed 1") {
		t.Fatalf("header: %s", firstLine(s))
	}
	if !strings.Contains(s, "≠ models differ: A GPT3-7B tp4 · B LLaMA2-70B") {
		t.Fatalf("the strip does not say the models differ:\n%s", s)
	}
	a, b = pairSides(t, "neupims", "npu-only")
	if s := newCmpDriver(t, a, b, 200, 50, false).screen(); strings.Contains(s, "models differ") {
		t.Fatalf("same models said to differ:\n%s", s)
	}
}

// No line is ever wider than the terminal, at any size, with or without help; below
// the minimum the too-small screen shows.
func TestCompareFitsEverySize(t *testing.T) {
	stride := 1
	if quick() {
		stride = 3
	}
	a, b := pairSides(t, "neupims", "neupims+pim.dual_row_buffer=false")
	d := newCmpDriver(t, a, b, 120, 40, true)
	d.keys("n", "n")
	for w := 1; w <= 230; w += 11 * stride {
		for h := 1; h <= 75; h += 5 * stride {
			d.send(tea.WindowSizeMsg{Width: w, Height: h})
			checkFits(t, "compare", d.m.View().Content, w, h)
			if w < MinWidth || h < MinHeight {
				if w >= 40 && h >= 2 && !strings.Contains(d.screen(), "terminal too small (have") {
					t.Fatalf("%d×%d: no too-small screen:\n%s", w, h, d.screen())
				}
				continue
			}
			for _, k := range []string{"tab", "?"} {
				d.keys(k)
				checkFits(t, "compare "+k, d.m.View().Content, w, h)
			}
			d.keys("esc")
		}
	}
}

// Without colour the screen carries no colour codes, and every value is a number or a
// glyph: the focused side has the heavy frame, the ratios their figures.
func TestCompareNoColor(t *testing.T) {
	a, b := pairSides(t, "neupims", "neupims+pim.dual_row_buffer=false")
	d := newCmpDriver(t, a, b, 160, 48, false)
	d.keys("n", "n", "n")
	raw := d.m.View().Content
	if regexp.MustCompile(`\x1b\[[0-9;]*[34]8;`).MatchString(raw) {
		t.Fatal("colour codes under NO_COLOR")
	}
	s := ansi.Strip(raw)
	for _, want := range []string{"┏━A neupims", "╭─B neupims+pim.dual_row_buffer=false", "Δ B−A", "B/A over the last 4 steps", "×", "░ bubble"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	for _, r := range d.m.diffs() {
		if r.name == "iteration" && !strings.Contains(s, fmtRatio(r.ratio())) {
			t.Errorf("the iteration ratio %s is not on screen", fmtRatio(r.ratio()))
		}
	}
}

// The explorer's c opens a chooser of the running preset with a switch turned over and
// of the other presets; choosing opens the compare view, esc comes back to the explorer
// as it was, and a step the explorer had in flight still lands there.
func TestExplorerOpensCompare(t *testing.T) {
	d := newDriver(t, "neupims", 160, 48)
	d.m.opts = compareOptions(t)
	d.keys("n")
	_, inFlight := d.m.Update(keyPress("n"))
	d.keys("c")
	if d.m.chooser == nil {
		t.Fatal("c opened no chooser")
	}
	s := d.screen()
	for _, want := range []string{"Compare neupims with", "neupims with pim.dual_row_buffer=false", "neupims with scheduler.sub_batch_interleaving=false", "npu-only", "enter compare"} {
		if !strings.Contains(s, want) {
			t.Errorf("chooser lacks %q:\n%s", want, s)
		}
	}
	d.keys("d", "u", "a", "l", "enter")
	if d.m.compare == nil || d.m.chooser != nil {
		t.Fatalf("no compare view after choosing: status %q", d.m.status)
	}
	if got := d.m.compare.sides[1].Name; got != "neupims+pim.dual_row_buffer=false" {
		t.Fatalf("side B is %q", got)
	}
	if !strings.Contains(firstLine(d.screen()), "A neupims vs B neupims+pim.dual_row_buffer=false") || !strings.Contains(d.screen(), "esc back to the explorer") {
		t.Fatalf("compare screen:\n%s", d.screen())
	}
	d.keys("n", "n")
	if d.m.compare.step != 3 || d.m.snap.Step != 2 {
		t.Fatalf("compare at %d, explorer at %d", d.m.compare.step, d.m.snap.Step)
	}
	d.run(inFlight)
	if d.m.snap.Step != 3 || d.m.busy || d.m.compare.step != 3 {
		t.Fatalf("the explorer's step in flight: explorer at %d busy %v, compare at %d", d.m.snap.Step, d.m.busy, d.m.compare.step)
	}
	d.send(tea.WindowSizeMsg{Width: 100, Height: 30})
	checkFits(t, "compare in the explorer", d.m.View().Content, 100, 30)
	d.keys("esc")
	if d.m.compare != nil || !strings.Contains(firstLine(d.screen()), "step 3 ") {
		t.Fatalf("esc did not return to the explorer:\n%s", d.screen())
	}
	checkFits(t, "explorer after compare", d.m.View().Content, 100, 30)
	// A side that cannot load leaves the explorer as it was, with the reason.
	d.m.opts.CompareWith = func(string) []CompareChoice { return []CompareChoice{{Side: "bad", Label: "bad"}} }
	d.keys("c", "enter")
	if d.m.compare != nil || !d.m.statusBad || !strings.Contains(d.m.status, "unknown preset") {
		t.Fatalf("compare %v, status %q", d.m.compare != nil, d.m.status)
	}
	// Without the compare options c says there is nothing to compare with.
	d.m.opts.CompareWith = nil
	d.keys("c")
	if d.m.chooser != nil || !strings.Contains(d.m.status, "nothing to compare with") {
		t.Fatalf("chooser %v, status %q", d.m.chooser != nil, d.m.status)
	}
}

// fuzzCompareKeys are the keys the compare fuzzer presses: every binding of the compare
// view, the chooser's and some it ignores.
var fuzzCompareKeys = []string{"space", "n", "right", "b", "left", "+", "-", "r", "tab", "shift+tab", "?", "esc", "enter", "c",
	"h", "j", "k", "l", "up", "down", "[", "]", "0", "H", "L", "<", ">", "x", "pgup", "pgdown", "backspace", "d", "1", "p", "é", "w"}

// FuzzCompareUpdate drives the explorer into and out of the compare view under random
// keys, clicks, wheel turns and sizes: no panic, and the screen always fits.
func FuzzCompareUpdate(f *testing.F) {
	f.Add([]byte("nnbb r?"), uint8(160), uint8(48))
	f.Add([]byte{12, 12, 2, 9, 9, 3, 3, 3, 11, 13, 1}, uint8(70), uint8(20))
	f.Add([]byte{7, 250, 90, 1, 1, 4, 7, 30, 10}, uint8(120), uint8(40))
	f.Add([]byte{1, 1, 11, 100, 30, 0, 17, 40, 20, 0, 34, 130, 60, 2, 40, 200, 9, 1}, uint8(160), uint8(48))
	f.Fuzz(func(t *testing.T, in []byte, w, h uint8) {
		d := newDriver(t, "neupims", int(w), int(h))
		d.m.opts = compareOptions(t)
		d.keys("c", "enter")
		for i := 0; i < len(in) && i < 40; i++ {
			b := in[i]
			switch {
			case b%23 == 7:
				var x, y int
				if i+2 < len(in) {
					x, y = int(in[i+1]), int(in[i+2])/2
				}
				d.send(tea.WindowSizeMsg{Width: x, Height: y})
				i += 2
			case b%23 == 19:
				d.advance()
			case b%23 == 11 || b%23 == 17:
				var x, y, k int
				if i+3 < len(in) {
					x, y, k = int(in[i+1]), int(in[i+2])/3, int(in[i+3])
				}
				if b%23 == 11 {
					d.send(tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseButton(1 + k%3)})
				} else {
					d.send(tea.MouseWheelMsg{X: x, Y: y, Button: tea.MouseWheelUp + tea.MouseButton(k%4)})
				}
				i += 3
			default:
				d.keys(fuzzCompareKeys[int(b)%len(fuzzCompareKeys)])
			}
			if d.quit {
				return
			}
		}
		if d.m.c.Width > 0 && d.m.c.Height > 0 {
			checkFits(t, "fuzz", d.m.View().Content, d.m.c.Width, d.m.c.Height)
		}
		if c := d.m.compare; c != nil {
			for _, s := range c.sides {
				if s.snap != nil && s.snap.Step > c.step {
					t.Fatalf("a side at step %d beyond the lockstep %d", s.snap.Step, c.step)
				}
			}
		}
	})
}
