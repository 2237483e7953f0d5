package ui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// paneSizes are the content sizes every pane is rendered at: cramped, ordinary, roomy.
var paneSizes = [][2]int{{24, 6}, {46, 12}, {72, 18}, {118, 30}}

// newPane builds pane id over the fixture after a few steps, so the sparklines have a
// history.
func newPane(id paneID, color bool) (pane, *Common) {
	c := testCommon(color)
	p := [numPanes]func(*Common) pane{
		func(c *Common) pane { return newHeatmap(c) },
		func(c *Common) pane { return newTimeline(c) },
		func(c *Common) pane { return newKVMap(c) },
		func(c *Common) pane { return newNeurons(c) },
		func(c *Common) pane { return newMetrics(c) },
		func(c *Common) pane { return newRequests(c) },
	}[id](c)
	for step := 1; step <= 6; step++ {
		p.SetSnapshot(fixture(step))
	}
	return p, c
}

// TestPaneGoldens renders every pane at several sizes, plain text (what NO_COLOR shows).
func TestPaneGoldens(t *testing.T) {
	for id := range numPanes {
		t.Run(paneNames[id], func(t *testing.T) {
			for _, sz := range paneSizes {
				t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
					p, _ := newPane(id, false)
					p.SetSize(sz[0], sz[1])
					out := p.View()
					checkFits(t, paneNames[id], out, sz[0], sz[1])
					golden.RequireEqual(t, p.Title()+"\n"+ansi.Strip(out))
				})
			}
		})
	}
}

// TestPaneStates renders the states a pane reaches through its keys.
func TestPaneStates(t *testing.T) {
	cases := []struct {
		name string
		id   paneID
		keys []string
		w, h int
	}{
		{"heatmap-mem", paneBanks, []string{"m"}, 60, 16},
		{"heatmap-both", paneBanks, []string{"m", "m"}, 60, 16},
		{"heatmap-owner", paneBanks, []string{"m", "m", "m"}, 60, 16},
		{"heatmap-overview", paneBanks, []string{"j", "j", "l"}, 30, 7},
		{"heatmap-drill", paneBanks, []string{"j", "j", "l", "enter", "j"}, 30, 7},
		{"timeline-zoom", paneTimeline, []string{"l", "l", "]", "]", "]"}, 72, 18},
		{"timeline-layer", paneTimeline, []string{">", ">"}, 72, 18},
		{"timeline-expanded", paneTimeline, []string{"x", "j", "j", "j"}, 72, 14},
		{"timeline-bubble", paneTimeline, []string{"j", "l", "l", "l", "l", "l", "l"}, 72, 18},
		{"kv-select", paneKV, []string{"j", "l", "l"}, 72, 18},
		{"requests-scroll", paneRequests, []string{"G"}, 46, 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, c := newPane(tc.id, false)
			p.SetSize(tc.w, tc.h)
			for _, k := range tc.keys {
				var cmd tea.Cmd
				p, cmd = p.Update(keyPress(k))
				if cmd != nil {
					if sel, ok := cmd().(selectMsg); ok {
						c.Selected = sel.id
						p, _ = p.Update(sel)
					}
				}
			}
			out := p.View()
			checkFits(t, tc.name, out, tc.w, tc.h)
			golden.RequireEqual(t, p.Title()+"\n"+ansi.Strip(out))
		})
	}
}

// TestPaneColorGolden keeps one styled rendering of each pane, escapes included, to
// catch palette regressions.
func TestPaneColorGolden(t *testing.T) {
	for id := range numPanes {
		t.Run(paneNames[id], func(t *testing.T) {
			p, _ := newPane(id, true)
			p.SetSize(72, 18)
			out := p.View()
			checkFits(t, paneNames[id], out, 72, 18)
			golden.RequireEqual(t, out)
		})
	}
}

// TestScreenGoldens renders the whole explorer on the engine's real snapshots.
func TestScreenGoldens(t *testing.T) {
	for _, p := range []string{"neupims", "gpu-h100"} {
		for _, sz := range [][2]int{{160, 48}, {120, 36}, {100, 30}, {60, 16}, {40, 10}} {
			t.Run(fmt.Sprintf("%s/%dx%d", p, sz[0], sz[1]), func(t *testing.T) {
				d := newDriver(t, p, sz[0], sz[1])
				d.keys("n")
				out := d.m.View().Content
				checkFits(t, p, out, sz[0], sz[1])
				golden.RequireEqual(t, ansi.Strip(out))
			})
		}
	}
}

// Every pane fits any size it can be given, including degenerate ones.
func TestPanesFitEverySize(t *testing.T) {
	stride := 1
	if quick() {
		stride = 3
	}
	for id := range numPanes {
		for _, color := range []bool{false, true} {
			p, _ := newPane(id, color)
			for w := 0; w <= 130; w += 3 * stride {
				for h := 0; h <= 40; h += 2 * stride {
					p.SetSize(w, h)
					out := p.View()
					if w == 0 || h == 0 {
						if out != "" {
							t.Fatalf("%s %dx%d: %q", paneNames[id], w, h, out)
						}
						continue
					}
					checkFits(t, fmt.Sprintf("%s %dx%d", paneNames[id], w, h), out, w, h)
					if strings.Contains(p.Title(), "\n") {
						t.Fatal("title with a newline")
					}
				}
			}
		}
	}
}

// TestNeuronMap renders the hot/cold partition in each shading and at several sizes.
func TestNeuronMap(t *testing.T) {
	for _, sz := range [][2]int{{24, 8}, {40, 14}, {72, 18}} {
		for mode := range numNeuronModes {
			t.Run(fmt.Sprintf("%dx%d/%d", sz[0], sz[1], mode), func(t *testing.T) {
				c := testCommon(false)
				p := newNeurons(c)
				p.SetSnapshot(withNeurons(fixture(3)))
				p.SetSize(sz[0], sz[1])
				var pn pane = p
				for range mode {
					pn, _ = pn.Update(keyPress("m"))
				}
				pn, _ = pn.Update(keyPress("j"))
				pn, _ = pn.Update(keyPress("l"))
				out := pn.View()
				checkFits(t, "neurons", out, sz[0], sz[1])
				golden.RequireEqual(t, pn.Title()+"\n"+ansi.Strip(out))
			})
		}
	}
}
