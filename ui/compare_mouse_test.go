package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// tlState is what a click or the wheel can change on a side's timeline.
type tlState struct {
	cursor, t0, t1 sim.Time
	row            int
}

func stateOf(tl *timeline) tlState { return tlState{tl.cursor, tl.t0, tl.t1, tl.row} }

// timelineCell returns the screen cell of side i's timeline at column c of its plot, on
// the last line of lane row r, and the plot's width.
func timelineCell(m *Compare, i, c, r int) (x, y, cw int) {
	l := computeCompareLayout(m.c.Width, m.c.Height, m.focus, m.stripWant())
	ox, oy := m.timelineOrigin(i, l.side[i])
	g := m.sides[i].tl.geom()
	if g.ruler {
		oy++
	}
	return ox + g.labelW + c, oy + (r+1)*g.rowH - 1, g.cw
}

// A click on B's timeline focuses B and moves B's cursor and row there, not A's; the
// wheel zooms the side under the pointer and leaves the focus where it is.
func TestCompareMouse(t *testing.T) {
	a, b := pairSides(t, "neupims", "npu-only")
	d := newCmpDriver(t, a, b, 160, 48, false)
	d.keys("n", "n")
	if d.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Fatal("the compare view leaves the mouse off by default")
	}
	tlA, tlB := d.m.sides[0].tl, d.m.sides[1].tl
	before := stateOf(tlA)
	x, y, cw := timelineCell(d.m, 1, 0, 1)
	c := cw / 3
	d.send(tea.MouseClickMsg{X: x + c, Y: y, Button: tea.MouseLeft})
	if d.m.focus != 1 {
		t.Fatalf("a click on B's timeline left the focus on %d", d.m.focus)
	}
	if lo, hi := tlB.colTime(c, cw), tlB.colTime(c+1, cw); tlB.cursor < lo || tlB.cursor >= hi {
		t.Fatalf("B's cursor %d is outside the clicked column [%d, %d)", tlB.cursor, lo, hi)
	}
	if tlB.row != tlB.top+1 {
		t.Fatalf("B's row %d, want the clicked lane %d", tlB.row, tlB.top+1)
	}
	if stateOf(tlA) != before {
		t.Fatalf("a click on B moved A's timeline: %+v, was %+v", stateOf(tlA), before)
	}
	if !strings.Contains(d.screen(), "┏━B npu-only") {
		t.Fatal("B clicked but not drawn focused")
	}

	spanA, spanB := tlA.t1-tlA.t0, tlB.t1-tlB.t0
	x, y, _ = timelineCell(d.m, 0, 10, 0)
	d.send(tea.MouseWheelMsg{X: x, Y: y, Button: tea.MouseWheelUp})
	if tlA.t1-tlA.t0 >= spanA || !strings.Contains(tlA.Title(), "zoom") {
		t.Fatalf("the wheel over A did not zoom A: span %d, was %d", tlA.t1-tlA.t0, spanA)
	}
	if tlB.t1-tlB.t0 != spanB || d.m.focus != 1 {
		t.Fatalf("the wheel over A zoomed B (span %d, was %d) or moved the focus (%d)", tlB.t1-tlB.t0, spanB, d.m.focus)
	}
	x, y, _ = timelineCell(d.m, 1, 10, 0)
	d.send(tea.MouseWheelMsg{X: x, Y: y, Button: tea.MouseWheelUp})
	if tlB.t1-tlB.t0 >= spanB {
		t.Fatal("the wheel over B did not zoom B")
	}

	// With the help open the mouse does nothing.
	d.keys("?")
	before = stateOf(tlA)
	x, y, _ = timelineCell(d.m, 0, 2, 0)
	d.send(tea.MouseClickMsg{X: x, Y: y, Button: tea.MouseLeft})
	if d.m.focus != 1 || stateOf(tlA) != before {
		t.Fatal("a click under the help overlay reached A")
	}
}

// Clicks and wheel turns on the header, the frames' borders, the figures, the strip, the
// footer and outside the screen move no timeline and take no step, at several sizes,
// stacked too; a click on the one side a short stacked screen shows still reaches it.
func TestCompareMouseElsewhere(t *testing.T) {
	a, b := pairSides(t, "neupims", "neupims+pim.dual_row_buffer=false")
	d := newCmpDriver(t, a, b, 160, 48, false)
	d.keys("n", "n")
	for _, sz := range [][2]int{{160, 48}, {120, 30}, {100, 40}, {90, 24}, {MinWidth - 1, 30}} {
		w, h := sz[0], sz[1]
		d.send(tea.WindowSizeMsg{Width: w, Height: h})
		l := computeCompareLayout(w, h, d.m.focus, d.m.stripWant())
		pts := [][2]int{{0, 0}, {w - 1, 0}, {0, h - 1}, {w - 1, h - 1}, {w + 5, h + 5}, {-1, -1},
			{l.strip.x + 1, l.strip.y + 1}, {l.strip.x + l.strip.w/2, l.strip.y + l.strip.h - 1}}
		for i, r := range l.side {
			if r.w == 0 {
				continue
			}
			pts = append(pts, [2]int{r.x, r.y}, [2]int{r.x + r.w - 1, r.y + r.h - 1}, [2]int{r.x + r.w/2, r.y + r.h - 1})
			if tl := d.m.sides[i].tl; tl.h > 0 {
				x, y := d.m.timelineOrigin(i, r)
				pts = append(pts, [2]int{x + 1, y + tl.h})
			}
		}
		step := d.m.step
		for _, p := range pts {
			before := [2]tlState{stateOf(d.m.sides[0].tl), stateOf(d.m.sides[1].tl)}
			focus := d.m.focus
			inSide := false
			for _, r := range l.side {
				inSide = inSide || r.w > 0 && r.contains(p[0], p[1])
			}
			d.send(tea.MouseClickMsg{X: p[0], Y: p[1], Button: tea.MouseLeft})
			if !inSide {
				d.send(tea.MouseWheelMsg{X: p[0], Y: p[1], Button: tea.MouseWheelUp})
				d.send(tea.MouseWheelMsg{X: p[0], Y: p[1], Button: tea.MouseWheelRight})
			}
			after := [2]tlState{stateOf(d.m.sides[0].tl), stateOf(d.m.sides[1].tl)}
			if after[0].cursor != before[0].cursor || after[1].cursor != before[1].cursor || after[0].row != before[0].row || after[1].row != before[1].row {
				t.Fatalf("%d×%d: a click at %v moved a cursor: %+v, was %+v", w, h, p, after, before)
			}
			if !inSide && (d.m.focus != focus || after != before) {
				t.Fatalf("%d×%d: the mouse at %v outside both sides changed focus %d→%d or a timeline", w, h, p, focus, d.m.focus)
			}
			if d.m.step != step || d.m.busy {
				t.Fatalf("%d×%d: the mouse at %v moved the run", w, h, p)
			}
			checkFits(t, "compare after a click", d.m.View().Content, w, h)
		}
		if d.m.tooSmall() {
			continue
		}
		i := d.m.focus
		if l.side[1-i].w > 0 {
			i = 1 - i
		}
		tl := d.m.sides[i].tl
		x, y, cw := timelineCell(d.m, i, 0, 0)
		c := cw - 1
		if tl.cursor >= tl.colTime(c, cw) {
			c = 0
		}
		d.send(tea.MouseClickMsg{X: x + c, Y: y, Button: tea.MouseLeft})
		if d.m.focus != i || tl.cursor < tl.colTime(c, cw) || tl.cursor >= tl.colTime(c+1, cw) {
			t.Fatalf("%d×%d: a click on side %d's timeline: focus %d, cursor %d", w, h, i, d.m.focus, tl.cursor)
		}
	}
}

// Without the mouse the compare view leaves it to the terminal, run alone or from the
// explorer.
func TestCompareNoMouse(t *testing.T) {
	a, b := pairSides(t, "neupims", "npu-only")
	opts := testOptions(t)
	opts.NoMouse = true
	m, err := NewCompare(a, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.View().MouseMode != tea.MouseModeNone {
		t.Fatal("the compare view captures the mouse under NoMouse")
	}
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	eo := compareOptions(t)
	eo.NoMouse = true
	d := startDriver(t, cfg, eo, 160, 48)
	d.keys("c", "enter")
	if d.m.compare == nil {
		t.Fatalf("no compare view: %q", d.m.status)
	}
	if d.m.View().MouseMode != tea.MouseModeNone {
		t.Fatal("the compare view opened from the explorer captures the mouse under NoMouse")
	}
	d.keys("esc")
	d = startDriver(t, cfg, compareOptions(t), 160, 48)
	d.keys("c", "enter")
	if d.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Fatal("the compare view opened from the explorer leaves the mouse off")
	}
}
