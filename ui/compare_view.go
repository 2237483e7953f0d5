package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/sim"
)

// compareLayout places the compare view's frames: the two sides (a zero width hides
// one) and the difference strip.
type compareLayout struct {
	side  [2]rect
	strip rect
	stack bool // sides one above the other
}

// The sides stand next to each other from this width; below it they stack, and below
// sideMinRows rows each only the focused side shows.
const (
	compareSideBySide = 120
	sideMinRows       = 8
)

// computeCompareLayout splits a w×h screen (header and footer included) whose strip
// wants stripWant lines inside its frame.
func computeCompareLayout(w, h, focus, stripWant int) compareLayout {
	body := h - 2
	var l compareLayout
	if w >= compareSideBySide {
		sh := clamp(stripWant+2, 4, max(4, body/2))
		ph := body - sh
		l.side = [2]rect{{0, 1, w / 2, ph}, {w / 2, 1, w - w/2, ph}}
		l.strip = rect{0, 1 + ph, w, sh}
		return l
	}
	l.stack = true
	sh := clamp(stripWant+2, 4, max(4, body/3))
	avail := body - sh
	if avail >= 2*sideMinRows {
		l.side = [2]rect{{0, 1, w, avail / 2}, {0, 1 + avail/2, w, avail - avail/2}}
	} else {
		l.side[focus] = rect{0, 1, w, avail}
	}
	l.strip = rect{0, 1 + avail, w, sh}
	return l
}

// sideFigureLines is how many lines of figures a side shows under its timeline in a
// frame of inner height h.
func sideFigureLines(h int) int {
	switch {
	case h >= 10:
		return 2
	case h >= 6:
		return 1
	}
	return 0
}

// relayout gives each side's timeline its size and redraws the footer's keys.
func (m *Compare) relayout() {
	l := computeCompareLayout(m.c.Width, m.c.Height, m.focus, m.stripWant())
	for i, s := range m.sides {
		r := l.side[i]
		if r.w == 0 {
			r = l.side[1-i]
		}
		ih := max(0, r.h-2)
		s.tl.SetSize(max(0, r.w-2), ih-sideFigureLines(ih))
	}
	m.footer.Styles = m.c.Styles.Help
	m.footer.SetWidth(m.c.Width)
	m.keyLine = m.footer.ShortHelpView(append(m.shortHelp(), m.sides[m.focus].tl.ShortHelp()...))
}

func (m *Compare) tooSmall() bool { return m.c.Width < MinWidth || m.c.Height < MinHeight }

func (m *Compare) render() string {
	w, h := m.c.Width, m.c.Height
	if w <= 0 || h <= 0 {
		return ""
	}
	if m.tooSmall() {
		return tooSmallScreen(w, h)
	}
	l := computeCompareLayout(w, h, m.focus, m.stripWant())
	lines := make([]string, 0, h)
	lines = append(lines, m.header(w))
	var frames [2][]string
	for i := range m.sides {
		if r := l.side[i]; r.w > 0 {
			frames[i] = m.sidePane(i, r.w, r.h)
		}
	}
	if l.stack {
		lines = append(lines, frames[0]...)
		lines = append(lines, frames[1]...)
	} else {
		for y := range frames[0] {
			lines = append(lines, frames[0][y]+frames[1][y])
		}
	}
	sr := l.strip
	title := fmt.Sprintf("Difference · B vs A · step %d", m.step)
	if m.sides[0].ended || m.sides[1].ended {
		title = fmt.Sprintf("Difference · step %d · %s", m.step, m.finishedText())
	}
	lines = append(lines, frame(m.c.Styles, title, m.strip(sr.w-2, sr.h-2), sr.w, sr.h, false)...)
	if m.jump.typing {
		lines = append(lines, fitLine(m.jump.line(m.c.Styles, w), w))
	} else {
		lines = append(lines, m.footerLine(m.c.Styles, m.keyLine, w))
	}
	lines = fitLines(lines, w, h)
	if m.help {
		box := m.helpBox(w, h)
		lines = overlay(lines, box, (w-ansi.StringWidth(box[0]))/2, max(0, (h-len(box))/2))
	}
	if m.why.open != nil {
		box := m.whyBox(w, h)
		lines = overlay(lines, box, (w-ansi.StringWidth(box[0]))/2, max(0, (h-len(box))/2))
	}
	return strings.Join(lines, "\n")
}

// modelText is a configuration's model and how it is split: "GPT3-7B tp4".
func modelText(c sim.Config) string {
	s := c.Model.Display
	if c.TP > 1 || c.PP > 1 {
		s += fmt.Sprintf(" tp%d", max(1, c.TP))
		if c.PP > 1 {
			s += fmt.Sprintf(" pp%d", c.PP)
		}
	}
	return s
}

// streamText describes a request stream: dataset (or fixed lengths, or a trace),
// requests, arrivals and seed.
func streamText(c sim.Config) string {
	w := c.Workload
	ds, n, arr := w.Stream()
	if arr == "" {
		arr = "closed"
	}
	return fmt.Sprintf("%s · %s requests · %s · seed %d", ds, thousands(n), arr, w.Seed)
}

// header names both sides and the request stream they share on the left, the lockstep
// step and play state on the right; narrow screens drop the left-hand details first.
func (m *Compare) header(w int) string {
	st := m.c.Styles
	state := m.playState(m.sides[0].ended && m.sides[1].ended)
	rights := []string{fmt.Sprintf("step %d · %s", m.step, state), fmt.Sprintf("step %d", m.step)}
	a, b := m.sides[0], m.sides[1]
	names := "A " + a.Name + " vs B " + b.Name
	lefts := [][]string{
		{names, "same requests (A's): " + streamText(a.Config)},
		{names, "same requests (A's)"},
		{names},
		{"A vs B"},
	}
	for _, r := range rights {
		for _, l := range lefts {
			left := st.Title.render("pimtui compare")
			for _, x := range l {
				left += " · " + x
			}
			if gap := w - ansi.StringWidth(left) - ansi.StringWidth(r); gap >= 2 {
				return left + strings.Repeat(" ", gap) + r
			}
		}
	}
	return truncate(rights[len(rights)-1]+" · "+names, w)
}

// sidePane draws side i in a w×h frame: its name, system and model in the title, its
// timeline, and its figures under it. The focused side has the heavy frame.
func (m *Compare) sidePane(i, w, h int) []string {
	s := m.sides[i]
	name := SideLetter(i) + " " + s.Name
	l := computeCompareLayout(m.c.Width, m.c.Height, m.focus, m.stripWant())
	if l.stack && l.side[1-i].w == 0 {
		name = SideLetter(i) + " (tab: " + SideLetter(1-i) + ") " + s.Name
	}
	// The title gives way from the right: zoom and layer, then the system, the model.
	tl := strings.TrimPrefix(s.tl.Title(), "2 Timeline")
	it, _, _ := strings.Cut(strings.TrimPrefix(tl, " · "), " · ")
	if tl != "" {
		it = " · " + it
	}
	sys := systemName(s.Config)
	if sys != "" {
		sys = " · " + sys
	}
	mdl := " · " + modelText(s.Config)
	title := name
	for _, t := range []string{name + sys + mdl + tl, name + sys + mdl + it, name + mdl + it, name + it} {
		if width(t) <= w-4 {
			title = t
			break
		}
	}
	ih := max(0, h-2)
	body := strings.Split(s.tl.View(), "\n")
	if s.tl.h == 0 {
		body = nil
	}
	if n := sideFigureLines(ih); n > 0 {
		body = append(body, m.sideFigures(i, w-2)[:n]...)
	}
	if m.err != nil && i == m.focus {
		body = append([]string{m.c.Styles.Bad.render(truncate("error: "+m.err.Error(), w-2))}, body...)
	}
	return frame(m.c.Styles, title, body, w, h, i == m.focus)
}

// sideFigures are a side's two lines of figures: this step's time and throughput, then
// batch, queue, progress and utilisation per lane group.
func (m *Compare) sideFigures(i, w int) []string {
	st := m.c.Styles
	s := m.sides[i].snap
	if s == nil {
		return []string{"waiting for the first step…", ""}
	}
	mt := &s.Metrics
	first := fmt.Sprintf("step %d · iteration %s · %s tok/s (run %s)", s.Step, fmtTime(s.IterTime), si(mt.StepTokPerSec), si(mt.Throughput))
	if s.Step != m.step {
		first = fmt.Sprintf("finished after %d steps · run %s tok/s", s.Step, si(mt.Throughput))
	}
	parts := []string{fmt.Sprintf("batch %d · queue %d · done %s/%s", s.Batch, s.Queue, thousands(s.Done), thousands(s.Total))}
	for _, r := range utilRows(s) {
		parts = append(parts, r.name+" "+measureWord(r.measure)+" "+pct(r.v))
	}
	p := paint("")
	if s.Step != m.step {
		p = st.Faint
	}
	return []string{p.render(shorten(first, w)), p.render(shorten(strings.Join(parts, partSep), w))}
}

// compareGuide explains the compare screen; the help overlay shows it under the keys.
var compareGuide = []string{
	"Both sides serve the same requests: side A's request stream (dataset, requests, arrivals, lengths, request trace, seed, prefill, steps and warm-up) after the command line's overrides. Each side keeps its own hardware, model, batch and KV policy; when the models differ the strip says so.",
	"One step advances both sides by one decode iteration, and stepping back goes back on both. When one side has served every request it stops at its last step and the other goes on; the strip says which ended when.",
	"Each side shows its timeline (the explorer's timeline: spans by sub-batch, ░ bubbles, group rows ▁ to █) and its figures. tab, or a click on a side, gives that side's timeline the pane keys; a click on a timeline also moves its cursor there, and the wheel over a side zooms its timeline.",
	"The strip compares the step shown: A, B, the difference B−A (percentage points for utilisation) and the ratio B/A, with a bar per recent step of that ratio, scaled from its least to its greatest value (the range follows). A ratio better for B than for A is green, a worse one red; the number says it without colour. – marks a figure a side does not have at this step.",
	"w says why B differs from A, for the step shown and for the steps both sides keep: the settings that differ, the critical path's time by lane group and operation (its parts sum to the difference), each lane group's time per lane, busy and idle by cause, and how much each switch accounts for, found by running the configurations between A and B (a line shows their progress).",
}

// helpBox draws the help overlay for a screen of w×h, scrolled by m.helpTop.
func (m *Compare) helpBox(w, h int) []string {
	st := m.c.Styles
	inner := helpWidth(w) - 4
	var lines []string
	section := func(title string) {
		if len(lines) > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, st.Title.render(title))
	}
	section("Keys")
	k := m.c.Keys
	var parts []string
	for _, b := range append(m.shortHelp(), k.GoTo, k.Faster, k.Slower) {
		if hb := b.Help(); hb.Key != "" {
			parts = append(parts, st.Bold.render(hb.Key)+" "+hb.Desc)
		}
	}
	lines = append(lines, wrap(strings.Join(parts, " · "), inner)...)
	section("Keys of the focused side's timeline")
	for _, g := range m.sides[m.focus].tl.FullHelp() {
		parts = parts[:0]
		for _, b := range g {
			if hb := b.Help(); hb.Key != "" {
				parts = append(parts, st.Bold.render(hb.Key)+" "+hb.Desc)
			}
		}
		lines = append(lines, wrap(strings.Join(parts, " · "), inner)...)
	}
	section("Reading the compare screen")
	for _, g := range compareGuide {
		lines = append(lines, wrap(g, inner)...)
	}
	return m.helpFrame(st, lines, w, h)
}
