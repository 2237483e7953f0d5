package ui

import (
	"strings"

	"charm.land/bubbles/v2/key"
)

// guide explains how to read each view; the help overlay shows it under the keys.
var guide = []string{
	"Banks: one cell per bank; rows are channels (ranks, PEs…), columns are banks in bank groups. The glyph and its colour give the busy share of the iteration: ' ' idle, · <20%, ░ <40%, ▒ <60%, ▓ <80%, █ ≥80%. Modes: PIM compute, memory traffic, both (two glyphs per bank: PIM then memory) and owner (a letter per request, mapped in the legend). Larger grids open as an overview of blocks; enter shows a block's banks.",
	"Timeline: one row per resource over one iteration, with the time axis below. Spans are coloured by sub-batch (SB1 blue █, SB2 orange ▓, whole batch grey █) and labelled with their operation when wide enough; ░ marks a bubble, time the lane sat idle, and the cursor line says what it waited for. ━ on a row's first line marks the critical path: the chain of operations, each starting when the one before it ends, that sets the iteration's time. A group row (PIM ×32) shows the share of its lanes busy, ▁ to █. The ruler marks stages A–F or layer starts.",
	"Bubbles: every idle interval has a cause: dependency (waiting for an operation on a computing lane), transfer (waiting for a link, bus, NoC or I/O lane), stage barrier, load imbalance (a peer lane of the same group ends the iteration), tail (the iteration ends on another group's lane), capacity stall (nothing to do while a request waits for KV space) and no work. The title's bubble share is the idle lane-time, no-work time aside, over the lane-time the lanes could have used; { and } step to the previous and next iteration whose share is above the threshold (% changes it), B puts the cursor on the largest bubble.",
	"KV blocks: one bar per location (channel, HBM…) drawn to the scale of its capacity: █/▓ a request's blocks in its colour, ▌ the part of its blocks partly filled tokens leave empty, ░ blocks reserved but not yet used, · free. Select a request here or in the request table to highlight its blocks everywhere.",
	"Neurons: for systems that split neurons between the GPU and memory, one row per layer with its QKV and MLP neurons in bins from the hottest (left) to the coldest, marked (m) by where most of a bin's neurons run (G the GPU, k memory device k, dimmed where they rarely fire), or shaded by the share on the GPU, active this token, mispredicted, or the predictor's state. Other systems say why there is no partition and list where each operation runs.",
	"Metrics: this iteration's figures and sparklines of the recent steps; after stepping back they end at the step shown.",
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
	bw := min(w, 100)
	inner := bw - 4
	lines := m.helpLines(inner)
	room := max(1, h-2)
	top := clamp(m.helpTop, 0, max(0, len(lines)-room+1))
	body := lines[top:]
	if len(body) > room {
		body = append(body[:room-1:room-1], m.c.Styles.Faint.render("… j/k scroll · esc or ? close"))
	}
	return frame(m.c.Styles, " Help ", padBox(body, inner), bw, min(h, len(body)+2), true)
}
