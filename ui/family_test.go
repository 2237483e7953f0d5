package ui

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/pimtui/pimtui/sim"
)

// familyRuns are one preset of each family, stepped to where its mechanisms show: L3 past
// its first prompts into decode, Hermes past the prompt.
var familyRuns = []struct {
	preset string
	steps  int
}{{"neupims", 3}, {"l3", 12}, {"lolpim", 3}, {"helios", 3}, {"hermes", 3}}

// familySizes are the terminal sizes the family screens are drawn at: the smallest the
// explorer takes, a laptop's, the dashboard's and a large screen's.
var familySizes = [][2]int{{60, 16}, {80, 24}, {120, 40}, {200, 60}}

// cutNumber finds a figure cut short by an ellipsis: "73…", "0.3…", "9…%".
var cutNumber = regexp.MustCompile(`[0-9][.,]?…`)

// The explorer of each family at every size: its golden, no figure cut in two, and the
// timeline's hidden lanes counted.
func TestFamilyScreens(t *testing.T) {
	for _, run := range familyRuns {
		for _, sz := range familySizes {
			t.Run(fmt.Sprintf("%s/%dx%d", run.preset, sz[0], sz[1]), func(t *testing.T) {
				d := newDriver(t, run.preset, sz[0], sz[1])
				for range run.steps - 1 {
					d.keys("n")
				}
				for _, focus := range []string{"1", "2", "3", "4", "5", "6"} {
					d.keys(focus)
					out := d.m.View().Content
					checkFits(t, run.preset, out, sz[0], sz[1])
					plain := ansi.Strip(out)
					if cut := cutNumber.FindString(plain); cut != "" {
						t.Fatalf("pane %s: a figure is cut (%q):\n%s", focus, cut, plain)
					}
					if focus == "2" {
						golden.RequireEqual(t, plain)
					}
				}
				d.keys("2", "x")
				tp := d.m.timelinePane()
				g := tp.geom()
				if _, below := tp.clipped(&g); below > 0 && !strings.Contains(d.screen(), fmt.Sprintf("↓%d more", below)) {
					t.Fatalf("%d lanes hidden below without a marker:\n%s", below, d.screen())
				}
				d.keys("G")
				for range len(tp.rows) {
					d.keys("j")
				}
				if above, _ := tp.clipped(&g); above > 0 && !strings.Contains(d.screen(), fmt.Sprintf("↑%d more", above)) {
					t.Fatalf("%d lanes hidden above without a marker:\n%s", above, d.screen())
				}
			})
		}
	}
}

// idleRune reports a cell that draws no busy time: blank or the bubble hatch.
func idleRune(r rune) bool { return r == ' ' || r == bubbleGlyph }

// laneCells are the columns of row r as drawn after its label, each the runes of its
// lines from top to bottom.
func laneCells(m *timeline, r int) []string {
	g := m.geom()
	s := newScratch(g.cw)
	cols := make([]string, g.cw)
	for _, l := range m.rowLines(&g, r, false, -1, s) {
		for c, x := range []rune(ansi.Strip(l))[g.labelW:] {
			cols[c] += string(x)
		}
	}
	return cols
}

// idleColumn reports a column whose every line draws no busy time.
func idleColumn(col string) bool {
	return !strings.ContainsFunc(col, func(c rune) bool { return !idleRune(c) })
}

// busyIn is how long lane l was busy inside the window shown.
func busyIn(m *timeline, l int) sim.Time {
	var b sim.Time
	for _, i := range m.byLane[l] {
		sp := &m.snap.Timeline.Spans[i]
		if a, e := max(sp.Start, m.t0), min(sp.End(), m.t1); e > a {
			b += e - a
		}
	}
	return b
}

// Every lane busy at all in the window draws a busy cell, at every zoom and width: a lane
// of spans far narrower than a cell is not drawn as idle.
func TestEveryBusyLaneShowsAtEveryZoom(t *testing.T) {
	for _, run := range familyRuns {
		t.Run(run.preset, func(t *testing.T) {
			d := newDriver(t, run.preset, 120, 40)
			for range run.steps - 1 {
				d.keys("n")
			}
			tp := d.m.timelinePane()
			tp.expanded = true
			tp.buildRows()
			for _, w := range []int{58, 78, 118, 198} {
				tp.SetSize(w, 30)
				tp.layer, tp.fit = -1, true
				tp.place()
				for zoom := 1; zoom <= 64; zoom *= 2 {
					for r, row := range tp.rows {
						var busy sim.Time
						for _, l := range row.lanes {
							busy += busyIn(tp, l)
						}
						if busy == 0 {
							continue
						}
						cols := laneCells(tp, r)
						if !slices.ContainsFunc(cols, func(c string) bool { return !idleColumn(c) }) {
							t.Fatalf("width %d zoom ×%d window %v–%v: %s busy %v draws no busy cell: %q",
								w, zoom, tp.t0, tp.t1, row.name, busy, cols)
						}
					}
					tp.zoom(2, tp.t0+(tp.t1-tp.t0)/3)
				}
			}
		})
	}
}

// shortSpans is a one-lane timeline of many spans far narrower than a cell: a span of
// 1µs every 3µs over 3ms, busy a third of the time.
func shortSpans() *sim.Snapshot {
	s := fixture(1)
	tl := &s.Timeline
	tl.Lanes = []sim.Lane{{Name: "PIM rs0", Group: "pim"}, {Name: "GPU", Group: "gpu"}}
	tl.Spans, tl.Bubbles, tl.Critical, tl.Stages = nil, nil, nil, nil
	us := sim.Microsecond
	for i := range 1000 {
		at := sim.Time(3*i) * us
		tl.Spans = append(tl.Spans, sim.Span{Op: sim.Op{Name: "dMHA", Lane: 0, SubBatch: 1 + i%2, Dur: us}, Start: at})
		tl.Bubbles = append(tl.Bubbles, sim.Bubble{Lane: 0, Start: at + us, Dur: 2 * us, Cause: sim.CauseDependency, Waited: len(tl.Spans) - 1})
	}
	tl.Spans = append(tl.Spans, sim.Span{Op: sim.Op{Name: "Gen", Lane: 1, SubBatch: 1, Dur: 3000 * us}, Start: 0})
	tl.Makespan, tl.Layers = 3000*us, 1
	s.IterTime = tl.Makespan
	return s
}

// A lane of many short spans reads as a third busy, not as one long bubble.
func TestTimelineShortSpans(t *testing.T) {
	for _, sz := range [][2]int{{58, 8}, {118, 12}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := newTimeline(testCommon(false))
			m.SetSnapshot(shortSpans())
			m.SetSize(sz[0], sz[1])
			out := m.View()
			checkFits(t, "short spans", out, sz[0], sz[1])
			for _, c := range laneCells(m, 0) {
				if idleColumn(c) {
					t.Fatalf("a cell of a lane busy a third of every cell is drawn idle: %q", laneCells(m, 0))
				}
			}
			golden.RequireEqual(t, m.Title()+"\n"+ansi.Strip(out))
		})
	}
}

// Each family's heatmap names its hardware as the other panes do: L3's DIMMs and ranks
// with a rank PU each, Hermes' DIMMs (never DI0) with their NDP cores under the GPU,
// HeLioS' PEs as a mesh whose tiles enter opens.
func TestHeatmapHierarchy(t *testing.T) {
	d := newDriver(t, "l3", 200, 60)
	d.keys("n", "n", "1")
	hm := d.m.panes[paneBanks].(*heatmap)
	s := d.screen()
	for _, want := range []string{"DIMM0", "DIMM1", "rank0", "rank1", "rank PU", "GPU ×8"} {
		if !strings.Contains(s, want) {
			t.Fatalf("L3 banks lack %q:\n%s", want, s)
		}
	}
	if got := hm.colLabel(17); got != "DIMM0 rank1 BG0 bank1" {
		t.Fatalf("L3 column 17 is %q", got)
	}

	d = newDriver(t, "hermes", 120, 40)
	d.keys("1")
	s = d.screen()
	if !strings.Contains(s, "DIMM7") || strings.Contains(s, "DI0 ") || !strings.Contains(s, "GPU ") || !strings.Contains(s, "NDP core") {
		t.Fatalf("Hermes banks:\n%s", s)
	}

	d = newDriver(t, "helios", 120, 40)
	d.keys("1")
	hm = d.m.panes[paneBanks].(*heatmap)
	if !hm.meshShown() || !strings.Contains(hm.Title(), "4×4 PE mesh") {
		t.Fatalf("HeLioS banks are not a mesh: %q", hm.Title())
	}
	d.keys("l", "j")
	if hm.cr != 5 || !strings.Contains(d.screen(), "PE(1,1) · attention busy") {
		t.Fatalf("cursor on PE %d:\n%s", hm.cr, d.screen())
	}
	d.keys("enter")
	if hm.meshShown() || !strings.Contains(d.screen(), "PE(1,1) ") {
		t.Fatalf("enter did not show the PE's banks:\n%s", d.screen())
	}
	d.keys("esc")
	if !hm.meshShown() {
		t.Fatal("esc did not return to the mesh")
	}
}

// The colour scale spans the iteration's range, so banks that differ by a point read
// apart; a makes it absolute, where they read alike.
func TestHeatmapRelativeScale(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("n", "1")
	hm := d.m.panes[paneBanks].(*heatmap)
	g := &d.m.snap.Banks
	if hm.hi[0]-hm.lo[0] < 0.01 || hm.hi[0] > 0.6 {
		t.Skipf("the fixture run's channels do not differ the way this test needs: %v–%v", hm.lo[0], hm.hi[0])
	}
	lo, hi := slices.Index(g.PIM, hm.lo[0]), slices.Index(g.PIM, hm.hi[0])
	if hm.level(g.PIM[lo], 0) != 1 || hm.level(g.PIM[hi], 0) != 5 {
		t.Fatalf("relative: the least busy bank is level %d, the busiest %d", hm.level(g.PIM[lo], 0), hm.level(g.PIM[hi], 0))
	}
	if !strings.Contains(d.screen(), "this step") {
		t.Fatalf("the legend does not give the range:\n%s", d.screen())
	}
	d.keys("a")
	if hm.level(g.PIM[lo], 0) != heatLevel(g.PIM[lo]) || hm.level(g.PIM[hi], 0) != heatLevel(g.PIM[hi]) {
		t.Fatal("a did not make the scale absolute")
	}
}

// Each family's heatmap fits every size in every mode, drilled down or not: the mesh, the
// column-level units and the row units included.
func TestHeatmapFitsEverySize(t *testing.T) {
	stride := 1
	if quick() {
		stride = 3
	}
	for _, run := range familyRuns {
		t.Run(run.preset, func(t *testing.T) {
			d := newDriver(t, run.preset, 120, 40)
			snap := d.m.snap
			for _, color := range []bool{false, true} {
				p := newHeatmap(testCommon(color))
				p.SetSnapshot(snap)
				var pn pane = p
				for mode := range numHeatModes {
					for _, k := range []string{"", "enter"} {
						if k != "" {
							pn, _ = pn.Update(keyPress(k))
						}
						for w := 0; w <= 130; w += 7 * stride {
							for h := 0; h <= 40; h += 3 * stride {
								pn.SetSize(w, h)
								out := pn.View()
								if w > 0 && h > 0 {
									checkFits(t, fmt.Sprintf("%s mode %d %s %dx%d", run.preset, mode, k, w, h), out, w, h)
								}
								pn.Update(keyPress("l"))
								pn.Update(keyPress("j"))
							}
						}
						pn, _ = pn.Update(keyPress("esc"))
					}
					pn, _ = pn.Update(keyPress("m"))
				}
			}
		})
	}
}
