package ui

import (
	"math"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// w opens the why overlay over the step shown: its step column is that step's difference
// of the two sides run alone, its window the mean over the steps both keep, each split
// by the critical path into parts that sum to it, and the switches of neupims against
// npu-pim, found by running the configurations between them, sum to it too. Any other key
// closes it, and the run goes on from where it was.
func TestCompareWhyOverlay(t *testing.T) {
	sa, sb := pairSides(t, "neupims", "npu-pim")
	d := newCmpDriver(t, sa, sb, 120, 40, false)
	d.keys("n", "n", "n", "n")
	d.keys("w")
	o := d.m.why.open
	if o == nil || o.window == nil || o.step == nil || o.attributing || o.err != nil {
		t.Fatalf("overlay %+v", o)
	}
	ra, rb := alone(t, sa, 5), alone(t, sb, 5)
	ms := func(t sim.Time) float64 { return t.Milliseconds() }
	if o.step.AMS != ms(ra[4].iter) || o.step.BMS != ms(rb[4].iter) {
		t.Errorf("step %g, %g; alone %v, %v", o.step.AMS, o.step.BMS, ra[4].iter, rb[4].iter)
	}
	var sumA, sumB sim.Time
	for i := range 5 {
		sumA, sumB = sumA+ra[i].iter, sumB+rb[i].iter
	}
	if w := o.window; w.From != 1 || w.To != 5 || math.Abs(w.AMS-ms(sumA)/5) > 1e-12 || math.Abs(w.BMS-ms(sumB)/5) > 1e-12 {
		t.Errorf("window %d–%d %g, %g; alone %g, %g", w.From, w.To, w.AMS, w.BMS, ms(sumA)/5, ms(sumB)/5)
	}
	for _, y := range []*sim.Why{o.step, o.window} {
		var path, sw float64
		for _, p := range y.Path {
			path += p.DeltaMS
		}
		for _, s := range y.Attribution.Switches {
			sw += s.DeltaMS
		}
		if math.Abs(path-y.DeltaMS) > 1e-9*y.BMS || math.Abs(sw-y.DeltaMS) > 1e-9*y.BMS || len(y.Attribution.Switches) != 3 {
			t.Errorf("steps %d–%d: Δ %g, the path's parts %g, the switches %g (%d)", y.From, y.To, y.DeltaMS, path, sw, len(y.Attribution.Switches))
		}
	}
	screen := d.screen()
	for _, want := range []string{"Why B differs from A", "step 5", "steps 1–5", "Step 5: B is ", "pim.dual_row_buffer true → false"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the overlay lacks %q:\n%s", want, screen)
		}
	}
	text := strings.Join(d.m.whyLines(96), "\n")
	for _, want := range []string{"Critical path, B − A per iteration", "attention on pim", "Lane groups, B − A per lane and iteration",
		"npu idle, dependency", "Switches, B − A per iteration", "scheduler.channel_alloc greedy_min_load → round_robin", "two of the six orders"} {
		if !strings.Contains(text, want) {
			t.Errorf("the overlay lacks %q:\n%s", want, text)
		}
	}
	d.keys("j", "pgdown")
	if d.m.why.open == nil || d.m.step != 5 {
		t.Fatal("scrolling closed the overlay or stepped")
	}
	d.keys("x")
	if d.m.why.open != nil || strings.Contains(d.screen(), "Why B differs") {
		t.Fatal("a key other than scrolling did not close the overlay")
	}
	d.keys("n")
	if d.m.step != 6 {
		t.Fatalf("step %d after closing and stepping", d.m.step)
	}
	d.keys("w")
	d.keys("q")
	if !d.quit {
		t.Fatal("q in the overlay did not quit")
	}
}

// The overlay fits every screen, scrolled anywhere, with colour and without.
func TestCompareWhyOverlayFits(t *testing.T) {
	sa, sb := pairSides(t, "neupims", "npu-only")
	for _, color := range []bool{false, true} {
		d := newCmpDriver(t, sa, sb, 80, 24, color)
		d.keys("n", "w")
		for _, size := range [][2]int{{80, 24}, {60, 16}, {200, 60}, {120, 40}} {
			d.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			for range 8 {
				checkFits(t, "why", d.m.View().Content, size[0], size[1])
				d.keys("pgdown")
			}
		}
		if !strings.Contains(strings.Join(d.m.whyLines(96), "\n"), "4 switches: each turned alone") {
			t.Errorf("npu-only's four switches are not said to be single-switch effects")
		}
	}
}

// Opened while a move is in flight, the overlay waits for it; a side built without its
// settings is explained without them and without switches.
func TestCompareWhyWaitsAndWithoutSettings(t *testing.T) {
	sa, sb := pairSides(t, "neupims", "npu-pim")
	sb.Contrast = nil
	d := newCmpDriver(t, sa, sb, 120, 40, false)
	d.keys("n")
	d.m.busy = true
	d.keys("w")
	if o := d.m.why.open; o == nil || !o.waiting || !strings.Contains(d.screen(), "waiting for the step in flight") {
		t.Fatalf("overlay %+v:\n%s", o, d.screen())
	}
	d.send(compareStepMsg{seq: d.m.seq})
	o := d.m.why.open
	if o == nil || o.waiting || o.window == nil || o.window.Steps != 2 {
		t.Fatalf("overlay %+v after the move arrived", o)
	}
	text := strings.Join(d.m.whyLines(96), "\n")
	for _, want := range []string{"not known: side B was built without them", "none: side B was built without its settings"} {
		if !strings.Contains(text, want) {
			t.Errorf("the overlay lacks %q:\n%s", want, text)
		}
	}
}
