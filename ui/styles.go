package ui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/sim"
)

// paint is an SGR prefix. Grids of thousands of cells are painted run by run with
// precomputed prefixes rather than through a lipgloss.Style per cell, which keeps a
// full redraw within a few milliseconds. Paints concatenate: bold+reverse is p1+p2.
type paint string

func (p paint) render(s string) string {
	if p == "" || s == "" {
		return s
	}
	return string(p) + s + ansi.ResetStyle
}

// with is p followed by q. Cells are painted with the cursor's paint added to their own,
// which is most often none: then p is returned as it is, without a concatenation.
func (p paint) with(q paint) paint {
	if q == "" {
		return p
	}
	return p + q
}

// Glyph ramps carry every colour-coded value as a shape too, so the views read under
// NO_COLOR and in black-and-white screenshots.
var (
	heatGlyphs = []rune(" ·░▒▓█")       // a cell's busy fraction: 0, <20%, <40%, <60%, <80%, ≥80%
	relGlyphs  = []rune(" 12345")       // a cell's place in the iteration's range, least to most
	barGlyphs  = []rune(" ▁▂▃▄▅▆▇█")    // a lane group's fraction of busy lanes
	sbGlyphs   = [3]rune{'█', '█', '▓'} // span fill without colour: whole batch, SB1, SB2
	// causeGlyphs tell the causes of idle time apart in a stacked bar without colour.
	causeGlyphs = [sim.NumCauses]rune{
		sim.CauseDependency: '█', sim.CauseTransfer: '▓', sim.CauseBarrier: '▒', sim.CauseImbalance: '░',
		sim.CauseTail: '▄', sim.CauseCapacity: '▀', sim.CauseNoWork: ' ',
	}
)

const (
	bubbleGlyph  = '░'
	freeGlyph    = '·'
	partGlyph    = '▌'
	reserveGlyph = '░'
)

// heatLevel maps a fraction in [0,1] to an index into heatGlyphs.
func heatLevel(v float64) int {
	switch {
	case !(v > 0):
		return 0
	case v >= 1:
		return 5
	}
	return 1 + min(4, int(v*5))
}

// Styles is the palette of the explorer. Every colour has a light- and a dark-background
// variant; without colour only text attributes (bold, faint, reverse) remain.
type Styles struct {
	Title, Bold, Faint, Rev, Under paint
	Accent, Good, Warn, Bad        paint
	Border, BorderFocus            paint

	PIM, Mem [6]paint // heat ramps, by heatLevel
	SB       [3]paint // timeline span cells: background by sub-batch, contrasting text
	SBFg     [3]paint // the same hues as foreground
	Bubble   paint
	Cause    [sim.NumCauses]paint // idle time by cause
	Req      [12]paint            // request identities
	Free     paint

	Help help.Styles
}

func newStyles(colour, isDark bool) *Styles {
	s := &Styles{
		Title: sgr(ansi.NewStyle().Bold()),
		Bold:  sgr(ansi.NewStyle().Bold()),
		Faint: sgr(ansi.NewStyle().Faint()),
		Rev:   sgr(ansi.NewStyle().Reverse(true)),
		Under: sgr(ansi.NewStyle().Underline(true)),
	}
	s.Border = s.Faint
	s.BorderFocus = s.Bold
	s.Free = s.Faint
	s.Help = help.Styles{
		Ellipsis: lipgloss.NewStyle().Faint(true), ShortKey: lipgloss.NewStyle().Bold(true), ShortDesc: lipgloss.NewStyle(),
		ShortSeparator: lipgloss.NewStyle().Faint(true), FullKey: lipgloss.NewStyle().Bold(true), FullDesc: lipgloss.NewStyle(),
		FullSeparator: lipgloss.NewStyle().Faint(true),
	}
	if !colour {
		return s
	}
	ld := func(light, dark string) color.Color {
		return lipgloss.LightDark(isDark)(lipgloss.Color(light), lipgloss.Color(dark))
	}
	fg := func(light, dark string) paint { return sgr(ansi.NewStyle().ForegroundColor(ld(light, dark))) }
	accent := ld("#5B34D6", "#A78BFA")
	s.Title = sgr(ansi.NewStyle().Bold().ForegroundColor(accent))
	s.Accent = sgr(ansi.NewStyle().ForegroundColor(accent))
	s.Good = fg("#15803D", "#4ADE80")
	s.Warn = fg("#A16207", "#FACC15")
	s.Bad = sgr(ansi.NewStyle().Bold().ForegroundColor(ld("#B91C1C", "#F87171")))
	s.Border = fg("#A1A1AA", "#52525B")
	s.BorderFocus = sgr(ansi.NewStyle().Bold().ForegroundColor(accent))
	s.Free = fg("#A1A1AA", "#52525B")
	// Sequential ramps: on a dark background brighter means busier, on a light one darker.
	pimDark := []string{"", "#7C2D12", "#C2410C", "#EA580C", "#FB923C", "#FDE68A"}
	pimLight := []string{"", "#FDBA74", "#FB923C", "#EA580C", "#C2410C", "#7C2D12"}
	memDark := []string{"", "#1E3A8A", "#1D4ED8", "#3B82F6", "#60A5FA", "#BFDBFE"}
	memLight := []string{"", "#93C5FD", "#60A5FA", "#3B82F6", "#1D4ED8", "#1E3A8A"}
	for i := 1; i < 6; i++ {
		s.PIM[i] = fg(pimLight[i], pimDark[i])
		s.Mem[i] = fg(memLight[i], memDark[i])
	}
	// Whole batch grey-blue, SB1 blue, SB2 orange.
	sbLight := []string{"#64748B", "#2563EB", "#EA580C"}
	sbDark := []string{"#64748B", "#3B82F6", "#F97316"}
	text := []color.Color{lipgloss.Color("#FFFFFF"), lipgloss.Color("#FFFFFF"), lipgloss.Color("#000000")}
	for i := range s.SB {
		c := ld(sbLight[i], sbDark[i])
		s.SB[i] = sgr(ansi.NewStyle().BackgroundColor(c).ForegroundColor(text[i]))
		s.SBFg[i] = sgr(ansi.NewStyle().ForegroundColor(c))
	}
	s.Bubble = fg("#DC2626", "#EF4444")
	causeLight := [sim.NumCauses]string{"#B91C1C", "#C2410C", "#A16207", "#7E22CE", "#0F766E", "#BE185D", "#71717A"}
	causeDark := [sim.NumCauses]string{"#F87171", "#FB923C", "#FACC15", "#C084FC", "#2DD4BF", "#F472B6", "#A1A1AA"}
	for c := range s.Cause {
		s.Cause[c] = fg(causeLight[c], causeDark[c])
	}
	reqLight := []string{"#1F77B4", "#D62728", "#2CA02C", "#9467BD", "#8C564B", "#E377C2", "#7F7F7F", "#BCBD22", "#17BECF", "#FF7F0E", "#393B79", "#637939"}
	reqDark := []string{"#4E79A7", "#E15759", "#59A14F", "#B07AA1", "#9C755F", "#FF9DA7", "#BAB0AC", "#EDC948", "#76B7B2", "#F28E2B", "#8CD17D", "#D37295"}
	for i := range s.Req {
		s.Req[i] = fg(reqLight[i], reqDark[i])
	}
	key := ld("#52525B", "#A1A1AA")
	desc := ld("#71717A", "#71717A")
	sep := ld("#D4D4D8", "#3F3F46")
	s.Help = help.Styles{
		Ellipsis: lipgloss.NewStyle().Foreground(sep), ShortKey: lipgloss.NewStyle().Foreground(key), ShortDesc: lipgloss.NewStyle().Foreground(desc),
		ShortSeparator: lipgloss.NewStyle().Foreground(sep), FullKey: lipgloss.NewStyle().Foreground(key), FullDesc: lipgloss.NewStyle().Foreground(desc),
		FullSeparator: lipgloss.NewStyle().Foreground(sep),
	}
	return s
}

func sgr(st ansi.Style) paint { return paint(st.String()) }

// reqPaint is the colour of request id.
func (s *Styles) reqPaint(id int) paint {
	if id <= 0 {
		return s.Free
	}
	return s.Req[id%len(s.Req)]
}
