package ui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// helpOverlay is the help overlay's state, shared by the explorer and the compare view:
// whether it is open and how far it is scrolled.
type helpOverlay struct {
	help    bool
	helpTop int
}

// helpKey takes a key while the overlay is open: the movement and page keys scroll, any
// other key closes it, q too (ctrl+c, seen before, quits).
func (o *helpOverlay) helpKey(msg tea.KeyPressMsg, k *KeyMap) tea.Cmd {
	switch {
	case key.Matches(msg, k.Down):
		o.helpTop++
	case key.Matches(msg, k.Up):
		o.helpTop = max(0, o.helpTop-1)
	case msg.String() == "pgdown" || msg.String() == "space":
		o.helpTop += 10
	case msg.String() == "pgup":
		o.helpTop = max(0, o.helpTop-10)
	default:
		o.help = false
	}
	return nil
}

// helpWidth is the help box's width on a screen w wide; its text is 4 cells narrower.
func helpWidth(w int) int { return min(w, 100) }

// helpFrame frames lines as the help overlay for a screen of w×h, scrolled to top.
func (o *helpOverlay) helpFrame(st *Styles, lines []string, w, h int) []string {
	bw := helpWidth(w)
	room := max(1, h-2)
	top := clamp(o.helpTop, 0, max(0, len(lines)-room+1))
	body := lines[top:]
	if len(body) > room {
		body = append(body[:room-1:room-1], st.Faint.render("… j/k scroll · esc or ? close"))
	}
	return frame(st, " Help ", padBox(body, bw-4), bw, min(h, len(body)+2), true)
}

// guide explains how to read each view; the help overlay shows it under the keys.
var guide = []string{
	"Words: busy is the share of the iteration's time a lane worked (a group's: the mean of its lanes); it is the figure of every timeline row, of the units beside the banks, of the banks' PIM cells and of Metrics' busy rows, so one lane reads the same everywhere. FLOP util is the FLOPs done over what the unit's peak FLOP/s could do in that time: a unit busy throughout on memory-bound work scores low. bandwidth is the bytes moved over what the memory's peak bandwidth could move in that time. idle = 100% − busy; bubbles are idle time other than having no work at all.",
	"Banks: the memory as its hardware is built, one cell per bank: rows and columns follow the system's hierarchy (L3's channels, each of DIMMs of ranks of bank groups of banks; LoL-PIM's nodes of modules; Hermes' DIMMs of ranks), labelled at each level, with the compute units beside the banks as bars ▁ to █ of their busy share (a rank PU per rank, a DIMM's NDP core) and the system's other units on the busy line above (GPU, NPU, NoC, PCIe), named as the timeline names them. A PE mesh (HeLioS) is drawn as its mesh: a tile per PE, a line per stacked die, the NoC links between tiles; enter shows a PE's banks. A cell gives its bank's PIM busy share (HeLioS: the PE's attention time) or, in memory mode (m), its bandwidth, on an absolute scale: · <20%, ░ <40%, ▒ <60%, ▓ <80%, █ ≥80%. a switches to this iteration's range, drawn in digits 1 (least) to 5 (most) with the range in the legend and relative in the title, so differences between banks show however small; a again goes back. Modes (m): PIM, memory, both, owner. Larger grids show blocks that follow the hierarchy; enter shows a block's banks.",
	"Timeline: one row per resource over one iteration, with the time axis below; the figure before each row is its busy share. Each cell shows the share of its time the lane was busy: a span's fill when busy throughout, coloured by sub-batch (SB1 blue █, SB2 orange ▓, whole batch grey █) and labelled with its operation when wide enough; a bar ▁ to █ when busy part of the time, however short its spans; ░ only where the lane sat idle throughout. The cursor line says what a bubble waited for. ━ on a row's first line marks the critical path: the chain of operations, each starting when the one before it ends, that sets the iteration's time. A group row (PIM ×32) shows the share of its lanes busy, its figure their mean. Lanes scrolled out of view are counted (↑3 more, ↓5 more). The ruler marks stages A–F or layer starts.",
	"Bubbles: every idle interval has a cause: dependency (waiting for an operation on a computing lane), transfer (waiting for a link, bus, NoC or I/O lane), stage barrier, load imbalance (a peer lane of the same group ends the iteration), tail (the iteration ends on another group's lane), capacity stall (nothing to do while a request waits for KV space) and no work. The title's bubble share is the idle lane-time, no-work time aside, over the lane-time the lanes could have used; Metrics splits it by cause in one bar. B puts the cursor on the largest bubble of the biggest cause, then of the next cause; { and } step to the previous and next iteration whose share is above the threshold (% changes it).",
	"KV blocks: one bar per location (channel, HBM…) drawn to the scale of its capacity: █/▓ a request's blocks in its colour, ▌ the part of its blocks partly filled tokens leave empty, ░ blocks reserved but not yet used, · free. Select a request here or in the request table to highlight its blocks everywhere.",
	"Neurons: for systems that split neurons between the GPU and memory (Hermes and its baselines), a wide map with one row per layer, its QKV and MLP neurons in bins from the hottest (left) to the coldest, marked (m) by where most of a bin's neurons run (G the GPU, k memory device k, dimmed where they rarely fire), or shaded by the share on the GPU, active this token, mispredicted, or the predictor's state. Figures that need a decode token (the GPU's share, the predictor's accuracy) read — until the first one. Other systems get a one-line note saying why there is no partition; z shows where each operation runs.",
	"Requests: / filters by id, location or status (a number is whole: ch3 is not ch30), o sorts by the next column and O reverses; a location every request shares is said once, in the title.",
	"Metrics: this iteration's figures, each under the word for what it measures: busy per lane group (the mean of the timeline's rows of that group), FLOP util of the compute engines, bandwidth of the memories; then the bubble share by cause, and sparklines of the recent steps; after stepping back they end at the step shown. M shows the last status messages.",
}

// helpLines builds the help overlay's text for width w.
func (m *Model) helpLines(w int) []string {
	st := m.c.Styles
	var lines []string
	section := func(title string) {
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, st.Title.render(title))
	}
	group := func(label string, bs []key.Binding) {
		var parts []string
		for _, b := range bs {
			if h := b.Help(); h.Key != "" {
				parts = append(parts, st.Bold.render(h.Key)+" "+h.Desc)
			}
		}
		if len(parts) == 0 {
			return
		}
		text := strings.Join(parts, " · ")
		if label != "" {
			text = st.Bold.render(label+": ") + text
		}
		lines = append(lines, wrap(text, w)...)
	}
	section("Keys")
	labels := []string{"Run", "Panes", "More", "Lessons", "Bubbles"}
	for i, g := range m.c.Keys.FullHelp() {
		group(labels[i], g)
	}
	if m.noMouse {
		lines = append(lines, wrap("Mouse: off (--no-mouse), so the terminal keeps text selection.", w)...)
	} else {
		lines = append(lines, wrap("Mouse: click focuses a pane and selects a bank, a span or a request; the wheel zooms the timeline. Start with --no-mouse to select text instead.", w)...)
	}
	section("Keys inside a pane (they act on the focused one)")
	for i, p := range m.panes {
		for _, g := range p.FullHelp() {
			group(strings.TrimSpace(string(rune('1'+i))+" "+paneNames[i]), g)
		}
	}
	section("Reading the screen")
	for _, g := range guide {
		lines = append(lines, wrap(g, w)...)
	}
	return lines
}

// helpBox draws the help overlay for a screen of w×h, scrolled by m.helpTop.
func (m *Model) helpBox(w, h int) []string {
	return m.helpFrame(m.c.Styles, m.helpLines(helpWidth(w)-4), w, h)
}
