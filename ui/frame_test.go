package ui

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

// Autoplay draws each step's frame once: the tick, which only starts the step, leaves
// the frame as it was; the step landing draws the next one.
func TestAutoplayDrawsOncePerStep(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("space")
	var tick tea.Msg
	for _, msg := range d.later {
		if _, ok := msg.(tickMsg); ok {
			tick = msg
		}
	}
	if tick == nil {
		t.Fatal("playing scheduled no tick")
	}
	before, at := d.m.View(), d.m.snap.Step
	drawn := d.m.frame.drawn
	_, step := d.m.Update(tick)
	if after := d.m.View(); d.m.frame.drawn != drawn || after.Content != before.Content {
		t.Fatal("the tick drew a frame")
	}
	if step == nil {
		t.Fatal("the tick started no step")
	}
	d.run(step)
	if d.m.View(); d.m.frame.drawn == drawn || d.m.snap.Step != at+1 {
		t.Fatalf("the step's frame was not drawn (step %d after %d)", d.m.snap.Step, at)
	}
	drawn = d.m.frame.drawn
	d.keys("tab")
	if d.m.View(); d.m.frame.drawn == drawn {
		t.Fatal("a key that changes the screen did not draw a frame")
	}
}
