package ui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/sim"
)

// width is the cells s takes on screen. Every frame measures thousands of strings, so
// text made only of escape sequences and runes known to be one cell wide (Latin, Greek,
// punctuation, arrows, box drawing and block glyphs) is counted directly; anything else
// goes to the full grapheme-aware measure.
func width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1b {
			// CSI sequence: ESC [ parameters final byte.
			if i+1 < len(s) && s[i+1] == '[' {
				j := i + 2
				for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
					j++
				}
				i = j + 1
				continue
			}
			return ansi.StringWidth(s)
		}
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return ansi.StringWidth(s)
			}
			n++
			i++
			continue
		}
		// Box drawing, blocks, arrows and punctuation (E2 xx xx) and Latin or Greek
		// (C2–CF xx) are decoded here; the decoder takes the rest.
		r, size := rune(utf8.RuneError), 1
		switch {
		case c == 0xe2 && i+2 < len(s) && s[i+1]&0xc0 == 0x80 && s[i+2]&0xc0 == 0x80:
			r, size = rune(s[i+1]&0x3f)<<6|rune(s[i+2]&0x3f)|0x2000, 3
		case c >= 0xc2 && c <= 0xcf && i+1 < len(s) && s[i+1]&0xc0 == 0x80:
			r, size = rune(c&0x1f)<<6|rune(s[i+1]&0x3f), 2
		default:
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if !narrow(r) {
			return ansi.StringWidth(s)
		}
		n++
		i += size
	}
	return n
}

// narrow reports runes that are one cell wide and never combine with their neighbours.
// The soft hyphen and the line, paragraph and direction marks take no cell, and two
// squares among the geometric shapes take two: they are left to the full measure.
func narrow(r rune) bool {
	switch {
	case r == 0xad, r >= 0x2028 && r <= 0x202e, r == 0x25fd, r == 0x25fe:
		return false
	case r >= 0xa0 && r < 0x300, r >= 0x370 && r < 0x400:
		return true
	case r >= 0x2010 && r < 0x2060, r >= 0x2190 && r < 0x2200:
		return true
	case r >= 0x2500 && r < 0x2600:
		return true
	}
	return false
}

// rowBuf builds one line of cells, opening a new SGR run only where the paint changes.
type rowBuf struct {
	b    strings.Builder
	p    paint
	open bool
	w    int
}

func (r *rowBuf) setPaint(p paint) {
	if p == r.p {
		return
	}
	if r.open {
		r.b.WriteString(ansi.ResetStyle)
		r.open = false
	}
	if p != "" {
		r.b.WriteString(string(p))
		r.open = true
	}
	r.p = p
}

// cell writes one single-width rune.
func (r *rowBuf) cell(p paint, c rune) {
	r.setPaint(p)
	r.b.WriteRune(c)
	r.w++
}

// str writes plain text (no escapes) in one paint.
func (r *rowBuf) str(p paint, s string) {
	if s == "" {
		return
	}
	r.setPaint(p)
	r.b.WriteString(s)
	r.w += width(s)
}

// styled writes text that may carry its own escapes.
func (r *rowBuf) styled(s string) {
	r.setPaint("")
	r.b.WriteString(s)
	r.w += width(s)
}

func (r *rowBuf) spaces(n int) {
	if n > 0 {
		r.setPaint("")
		r.b.WriteString(strings.Repeat(" ", n))
		r.w += n
	}
}

// line closes the row, padded or cut to exactly w cells.
func (r *rowBuf) line(w int) string {
	r.setPaint("")
	if r.w < w {
		r.b.WriteString(strings.Repeat(" ", w-r.w))
		return r.b.String()
	}
	if r.w > w {
		return ansi.Truncate(r.b.String(), w, "")
	}
	return r.b.String()
}

// fitLine pads or cuts s to exactly w cells.
func fitLine(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := width(s)
	switch {
	case n < w:
		return s + strings.Repeat(" ", w-n)
	case n > w:
		return ansi.Truncate(s, w, "…")
	}
	return s
}

// fitLines gives exactly h lines of exactly w cells.
func fitLines(lines []string, w, h int) []string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fitLine(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(0, w))
		}
	}
	return out
}

// padLines gives exactly h lines of lines that are each already w cells wide.
func padLines(lines []string, w, h int) []string {
	if len(lines) >= h {
		return lines[:h]
	}
	blank := strings.Repeat(" ", max(0, w))
	for len(lines) < h {
		lines = append(lines, blank)
	}
	return lines
}

// truncate cuts s to at most w cells.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// partSep joins the parts of a line of figures: "iteration 7ms · 36.7k tok/s".
const partSep = " · "

// shorten fits a line of parts joined by partSep into w cells by dropping whole parts
// from the end and marking the cut with "…", so that a number is never cut in two. A first
// part wider than w (a name, a sentence) is cut at a space.
func shorten(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	parts := strings.Split(s, partSep)
	for n := len(parts) - 1; n > 0; n-- {
		head := strings.Join(parts[:n], partSep) + " …"
		if width(head) <= w {
			return head
		}
	}
	return cutWords(parts[0], w)
}

// cutWords cuts s to at most w cells at a space, ending in "…"; a single word wider than
// w is cut where it must be.
func cutWords(s string, w int) string {
	if width(s) <= w {
		return s
	}
	if w < 2 {
		return truncate(s, w)
	}
	first := strings.TrimRight(strings.Split(ansi.Wordwrap(s, w-2, ""), "\n")[0], " ")
	if first == "" || width(first) > w-2 {
		return cutBeforeNumber(s, w)
	}
	return first + " …"
}

// cutBeforeNumber cuts plain text s to at most w cells ending in "…", backing off to the
// start of a number the cut would reach ("325,696" becomes "…", never "325…").
func cutBeforeNumber(s string, w int) string {
	if strings.ContainsRune(s, 0x1b) {
		return truncate(s, w)
	}
	r := []rune(s)
	n := min(len(r), max(0, w-1))
	// A figure touching the ellipsis would read as cut, whole or not.
	digit := func(c rune) bool { return c >= '0' && c <= '9' || c == '.' || c == ',' }
	for n > 0 && digit(r[n-1]) {
		n--
	}
	return string(r[:n]) + "…"
}

// flow lays a line of parts joined by partSep out over lines of at most w cells, a part
// never split between lines; a part wider than w alone is cut at a space.
func flow(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	var out []string
	cur := ""
	for _, p := range strings.Split(s, partSep) {
		switch {
		case cur == "":
			cur = p
		case width(cur)+len(partSep)+width(p) <= w:
			cur += partSep + p
		default:
			out = append(out, cutWords(cur, w))
			cur = p
		}
	}
	return append(out, cutWords(cur, w))
}

// flowN is flow kept to at most n lines: the parts that do not fit are left out whole and
// the last line ends in "…".
func flowN(s string, w, n int) []string {
	lines := flow(s, w)
	if n <= 0 {
		return nil
	}
	if len(lines) <= n {
		return lines
	}
	// The last line takes every part left, shortened to what fits.
	parts := strings.Split(s, partSep)
	used := 0
	for _, l := range lines[:n-1] {
		used += len(strings.Split(l, partSep))
	}
	return append(lines[:n-1], shorten(strings.Join(parts[min(used, len(parts)):], partSep), w))
}

// explain lays out an explanation of two texts (each parts joined by partSep) over at
// most n lines of w cells: both whole when they fit, else the second keeps a line.
func explain(first, second string, w, n int) (a, b []string) {
	fa, fb := flow(first, w), flow(second, w)
	if second == "" {
		fb = nil
	}
	if len(fa)+len(fb) <= n {
		return fa, fb
	}
	na := min(len(fa), n)
	if len(fb) > 0 && n >= 2 {
		na = min(len(fa), max(1, n-len(fb)))
	}
	return flowN(first, w, na), flowN(second, w, n-na)
}

// wrap breaks plain text into lines of at most w cells.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Wrap(s, w, ""), "\n")
}

// frame draws a border around body lines with a title in the top edge. The focused
// pane gets a heavy border, so focus shows without colour too.
func frame(st *Styles, title string, body []string, w, h int, focused bool) []string {
	return framed(st, title, body, w, h, focused, false)
}

// framed is frame, told whether every body line is already exactly w-2 cells wide (a
// pane's view at the size it was given), so that they need not be measured again.
func framed(st *Styles, title string, body []string, w, h int, focused, fitted bool) []string {
	if w < 2 || h < 2 {
		return fitLines(nil, w, h)
	}
	tl, tr, bl, br, hz, vt := "╭", "╮", "╰", "╯", "─", "│"
	bp := st.Border
	if focused {
		tl, tr, bl, br, hz, vt = "┏", "┓", "┗", "┛", "━", "┃"
		bp = st.BorderFocus
	}
	out := make([]string, 0, h)
	inner := w - 2
	t := shorten(title, max(0, inner-2))
	var top rowBuf
	top.str(bp, tl+hz)
	if t != "" {
		tp := st.Bold
		if focused {
			tp = st.Title
		}
		top.str(tp, t)
	}
	top.str(bp, strings.Repeat(hz, max(0, inner-1-width(t)))+tr)
	out = append(out, top.line(w))
	side := bp.render(vt)
	for i := range h - 2 {
		switch {
		case i >= len(body):
			out = append(out, side+strings.Repeat(" ", inner)+side)
		case fitted:
			out = append(out, side+body[i]+side)
		default:
			out = append(out, side+fitLine(body[i], inner)+side)
		}
	}
	out = append(out, bp.render(bl+strings.Repeat(hz, inner)+br))
	return out
}

// overlay draws box over base with its top-left corner at (x, y).
func overlay(base, box []string, x, y int) []string {
	out := append([]string(nil), base...)
	for i, l := range box {
		r := y + i
		if r < 0 || r >= len(out) {
			continue
		}
		bw := ansi.StringWidth(l)
		bl := out[r]
		total := ansi.StringWidth(bl)
		left := ansi.Cut(bl, 0, x)
		right := ""
		if x+bw < total {
			right = ansi.Cut(bl, x+bw, total)
		}
		out[r] = left + ansi.ResetStyle + l + ansi.ResetStyle + right
	}
	return out
}

// clamp limits v to [lo, hi]; hi wins if the range is empty.
func clamp(v, lo, hi int) int {
	return min(max(v, lo), hi)
}

// placeholder is what a pane shows when it cannot draw yet: nothing at zero size, a
// waiting line before the first snapshot. ok reports that the pane should show it.
func placeholder(w, h int, snap *sim.Snapshot) (s string, ok bool) {
	if w <= 0 || h <= 0 {
		return "", true
	}
	if snap == nil {
		return strings.Join(fitLines([]string{"waiting for the first step…"}, w, h), "\n"), true
	}
	return "", false
}
