package ui

import (
	"fmt"
	"strings"
)

// Minimum terminal size the explorer needs: header, one pane and footer.
const (
	MinWidth  = 60
	MinHeight = 16
)

// The dashboard shows every pane from this size up; below it panes stack.
const (
	gridWidth  = 120
	gridHeight = 36
)

// rect is a pane's frame on the screen.
type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool {
	return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h
}

// cell is one pane in a band.
type cell struct {
	id paneID
	w  int
}

// band is a row of panes of one height.
type band struct {
	h     int
	cells []cell
}

// layout is how the body is split: bands of panes, under an optional tab strip.
type layout struct {
	tabs  bool
	bands []band
}

// companion is the pane shown with the focused one when only two fit.
var companion = [numPanes]paneID{
	paneBanks:    paneTimeline,
	paneTimeline: paneBanks,
	paneKV:       paneRequests,
	paneNeurons:  paneMetrics,
	paneMetrics:  paneTimeline,
	paneRequests: paneKV,
}

// noteH is the height of the neuron pane's band where the system has no neuron partition:
// one line of note in its frame.
const noteH = 3

// computeLayout splits a w×h screen (header and footer included). At the dashboard size
// every pane shows: banks beside the timeline over the KV map beside the metrics, over the
// request table. The neuron map sits where the system needs it: wide, in place of the KV
// map (which moves beside it), where neurons are split between the GPU and memory
// (neurons); otherwise as a one-line note between the metrics and the request table.
// Smaller screens show the focused pane with a companion, then the focused pane alone,
// with a tab strip naming the hidden ones. A system without a bank grid (noBanks) gets
// the metrics as the timeline's companion instead.
func computeLayout(w, h int, focus paneID, maxed bool, noBanks, neurons bool) layout {
	body := h - 2
	if !maxed && w >= gridWidth && h >= gridHeight {
		req := clamp(body/5, 6, 12)
		rest := body - req
		if !neurons {
			rest -= noteH
		}
		top := rest * 55 / 100
		left := clamp(w*2/5, 46, w-60)
		right := w - left
		mid := []cell{{paneKV, left}, {paneMetrics, right}}
		if neurons {
			kv := right / 3
			mid = []cell{{paneNeurons, left}, {paneKV, kv}, {paneMetrics, right - kv}}
		}
		bands := []band{
			{top, []cell{{paneBanks, left}, {paneTimeline, right}}},
			{rest - top, mid},
		}
		if !neurons {
			bands = append(bands, band{noteH, []cell{{paneNeurons, w}}})
		}
		return layout{bands: append(bands, band{req, []cell{{paneRequests, w}}})}
	}
	body--
	other := companion[focus]
	if other == paneBanks && noBanks {
		other = paneMetrics
	}
	switch {
	case maxed || body < 22:
		return layout{tabs: true, bands: []band{{body, []cell{{focus, w}}}}}
	case w >= gridWidth:
		fw := w * 3 / 5
		return layout{tabs: true, bands: []band{{body, []cell{{focus, fw}, {other, w - fw}}}}}
	}
	fh := body * 3 / 5
	return layout{tabs: true, bands: []band{{fh, []cell{{focus, w}}}, {body - fh, []cell{{other, w}}}}}
}

// rects places each visible pane's frame on the screen.
func (l layout) rects() map[paneID]rect {
	out := map[paneID]rect{}
	y := 1
	if l.tabs {
		y++
	}
	for _, b := range l.bands {
		x := 0
		for _, c := range b.cells {
			out[c.id] = rect{x, y, c.w, b.h}
			x += c.w
		}
		y += b.h
	}
	return out
}

// tabLabels are the tab strip's names: padded when the width allows, compact below.
func tabLabels(w int) [numPanes]string {
	var full, compact [numPanes]string
	n := 0
	for i := range numPanes {
		full[i] = " " + string(rune('1'+i)) + " " + paneNames[i] + " "
		compact[i] = string(rune('1'+i)) + " " + strings.Fields(paneNames[i])[0]
		n += len(full[i]) + 1
	}
	if n <= w {
		return full
	}
	return compact
}

// tabX is where each pane's name starts and ends in the tab strip of width w.
func tabX(w int) [numPanes][2]int {
	var out [numPanes][2]int
	x := 0
	for i, l := range tabLabels(w) {
		out[i] = [2]int{x, x + len(l)}
		x += len(l) + 1
	}
	return out
}

// tooSmallScreen is what a w×h screen below the minimum size shows instead of a view.
func tooSmallScreen(w, h int) string {
	msg := fmt.Sprintf("terminal too small (have %d×%d, need %d×%d)", w, h, MinWidth, MinHeight)
	lines := append(wrap(msg, w), wrap("enlarge the window, or press q to quit", w)...)
	return strings.Join(fitLines(lines, w, h), "\n")
}
