package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// heatMode is what the bank heatmap colours.
type heatMode int

const (
	modePIM heatMode = iota
	modeMem
	modeBoth
	modeOwner
	numHeatModes
)

var heatModeNames = [numHeatModes]string{"PIM compute", "memory traffic", "PIM|mem", "owner"}

// ownerGlyphs name the owners of cells in owner mode; the legend maps them to requests.
const ownerGlyphs = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// heatmap is the bank utilisation pane: the memory's real geometry (rows of channels,
// ranks or PEs × columns of banks in bank groups), one cell per bank. When the grid is
// larger than the pane it shows an overview of blocks of cells (the mean of each), and
// enter drills down to full resolution around the cursor.
type heatmap struct {
	c      *Common
	w, h   int
	snap   *sim.Snapshot
	mode   heatMode
	cr, cc int // cursor, in grid rows and columns
	drill  bool
	r0, c0 int // first grid row and column shown while drilled down
	owners map[int]int
	byIdx  []int // owner ids in glyph order
}

func newHeatmap(c *Common) *heatmap { return &heatmap{c: c} }

func (m *heatmap) SetSize(w, h int) {
	m.w, m.h = w, h
	m.scroll()
}

func (m *heatmap) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	g := m.grid()
	if g == nil {
		return
	}
	m.cr, m.cc = clamp(m.cr, 0, g.Rows-1), clamp(m.cc, 0, g.Cols-1)
	// Owner glyphs follow request ids so a request keeps its letter from step to step
	// as long as the set of owners does not change.
	ids := make([]int, 0, g.Rows)
	seen := map[int]bool{}
	for _, o := range g.Owner {
		if o > 0 && !seen[o] {
			seen[o] = true
			ids = append(ids, o)
		}
	}
	slices.Sort(ids)
	m.byIdx = ids
	m.owners = make(map[int]int, len(ids))
	for i, id := range ids {
		m.owners[id] = i
	}
	m.scroll()
}

// grid is the snapshot's bank grid, or nil when the system has none.
func (m *heatmap) grid() *sim.BankGrid {
	if m.snap == nil || m.snap.Banks.Rows <= 0 || m.snap.Banks.Cols <= 0 {
		return nil
	}
	g := &m.snap.Banks
	if len(g.PIM) < g.Rows*g.Cols || len(g.Mem) < g.Rows*g.Cols {
		return nil
	}
	return g
}

func (m *heatmap) Title() string {
	t := "1 Banks"
	g := m.grid()
	if g == nil {
		return t
	}
	t += " · " + heatModeNames[m.mode]
	switch q := m.geom(); {
	case m.drill && !q.whole:
		t += " · detail"
	case q.fr > 1 && q.fc > 1:
		t += fmt.Sprintf(" · %d %s × %d %s/cell", q.fr, plural(g.RowKind), q.fc, plural(g.ColKind))
	case q.fr > 1:
		t += fmt.Sprintf(" · %d %s/row", q.fr, plural(g.RowKind))
	case q.fc > 1:
		t += fmt.Sprintf(" · %d %s/cell", q.fc, plural(g.ColKind))
	}
	return t
}

func (m *heatmap) ShortHelp() []key.Binding {
	return []key.Binding{helpOnly("m", "mode"), helpOnly("h/j/k/l", "cursor"), helpOnly("enter", "detail")}
}

func (m *heatmap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{helpOnly("m", "mode: PIM, memory, both, owner"), helpOnly("h/j/k/l ↑/↓", "cursor"),
		helpOnly("enter", "a block's banks"), helpOnly("esc", "back to the overview")}}
}

// heatGeom places the grid in the pane.
type heatGeom struct {
	labelW, cellW int
	fr, fc        int // grid rows and columns per shown cell
	r0, c0        int // first grid row and column shown
	nr, nc        int // shown rows and columns
	top           int // line of the first grid row
	whole         bool
}

func (m *heatmap) rowLabel(r int) string {
	g := &m.snap.Banks
	if g.MeshCols > 0 && g.MeshRows*g.MeshCols == g.Rows {
		return "PE(" + strconv.Itoa(r/g.MeshCols) + "," + strconv.Itoa(r%g.MeshCols) + ")"
	}
	p := map[string]string{"channel": "ch", "rank": "rk", "dimm": "dimm", "pe": "pe", "module": "mod"}[g.RowKind]
	if p == "" && g.RowKind != "" {
		p = g.RowKind[:min(2, len(g.RowKind))]
	}
	return p + strconv.Itoa(r)
}

// extraLines are the lines below the grid: legend and cursor figures, plus the reason
// when the system reports one beside its grid.
func (m *heatmap) extraLines() int {
	n := 2
	if m.snap != nil && m.snap.Banks.Reason != "" {
		n++
	}
	return n
}

func (m *heatmap) gapBefore(q *heatGeom, j int) bool {
	cg := m.snap.Banks.ColGroup
	return j > 0 && cg > 0 && q.fc < cg && cg%q.fc == 0 && (q.c0+j*q.fc)%cg == 0
}

// width of nc shown columns from c0 at factor fc.
func (m *heatmap) cellsWidth(q *heatGeom) int {
	w := q.nc * q.cellW
	for j := 1; j < q.nc; j++ {
		if m.gapBefore(q, j) {
			w++
		}
	}
	return w
}

// base is the geometry at full resolution from the top-left corner.
func (m *heatmap) base() (q heatGeom, availW, availR int) {
	g := m.grid()
	q = heatGeom{cellW: 1, fr: 1, fc: 1, top: 1}
	if m.mode == modeBoth {
		q.cellW = 2
	}
	q.labelW = len(m.rowLabel(g.Rows-1)) + 1
	availW = max(1, m.w-q.labelW)
	availR = max(1, m.h-1-m.extraLines())
	q.nr, q.nc = g.Rows, g.Cols
	q.whole = g.Rows <= availR && m.cellsWidth(&q) <= availW
	return q, availW, availR
}

func (m *heatmap) geom() heatGeom {
	g := m.grid()
	if g == nil {
		return heatGeom{cellW: 1, fr: 1, fc: 1, top: 1}
	}
	q, availW, availR := m.base()
	if q.whole {
		return q
	}
	if m.drill {
		q.r0, q.c0 = m.r0, m.c0
		q.nr = min(availR, g.Rows-q.r0)
		q.nc = 1
		for q.c0+q.nc < g.Cols {
			q.nc++
			if m.cellsWidth(&q) > availW {
				q.nc--
				break
			}
		}
		return q
	}
	q.fr = (g.Rows + availR - 1) / availR
	q.nr = (g.Rows + q.fr - 1) / q.fr
	for q.fc = 1; ; q.fc++ {
		q.nc = (g.Cols + q.fc - 1) / q.fc
		if m.cellsWidth(&q) <= availW || q.nc == 1 {
			break
		}
	}
	return q
}

// scroll keeps the cursor inside the drilled-down window, and leaves detail once the
// whole grid fits.
func (m *heatmap) scroll() {
	g := m.grid()
	if g == nil || !m.drill {
		return
	}
	if q, _, _ := m.base(); q.whole {
		m.drill = false
		return
	}
	_, _, visR := m.base()
	m.r0 = clamp(m.r0, max(0, m.cr-visR+1), m.cr)
	m.r0 = clamp(m.r0, 0, max(0, g.Rows-visR))
	if m.cc < m.c0 {
		m.c0 = m.cc
	}
	for q := m.geom(); m.cc >= m.c0+q.nc && m.c0 < m.cc; q = m.geom() {
		m.c0++
	}
}

func (m *heatmap) Update(msg tea.Msg) (pane, tea.Cmd) {
	g := m.grid()
	k := m.c.Keys
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if key.Matches(msg, k.Mode) {
			m.mode = (m.mode + 1) % numHeatModes
			m.scroll()
			return m, nil
		}
		if g == nil {
			return m, nil
		}
		q := m.geom()
		dr, dc := q.fr, q.fc
		switch {
		case key.Matches(msg, k.Left):
			m.cc = max(0, m.cc-dc)
		case key.Matches(msg, k.Right):
			m.cc = min(g.Cols-1, m.cc+dc)
		case key.Matches(msg, k.Up):
			m.cr = max(0, m.cr-dr)
		case key.Matches(msg, k.Down):
			m.cr = min(g.Rows-1, m.cr+dr)
		case key.Matches(msg, k.Enter):
			if !q.whole && !m.drill {
				m.drill = true
				m.r0, m.c0 = m.cr, m.cc
			}
		case key.Matches(msg, k.Close):
			m.drill = false
		}
		m.scroll()
	case tea.MouseClickMsg:
		if g == nil {
			return m, nil
		}
		q := m.geom()
		row := msg.Y - q.top
		if row < 0 || row >= q.nr {
			return m, nil
		}
		x := q.labelW
		for j := range q.nc {
			if m.gapBefore(&q, j) {
				x++
			}
			if msg.X >= x && msg.X < x+q.cellW {
				m.cr = min(g.Rows-1, q.r0+row*q.fr)
				m.cc = min(g.Cols-1, q.c0+j*q.fc)
				m.scroll()
				return m, nil
			}
			x += q.cellW
		}
	}
	return m, nil
}

// block is the figures of one shown cell: the mean (and peak) of the grid cells it covers.
type block struct {
	pim, mem, pimMax, memMax float64
	owner                    int
}

// block sums the cells of a shown cell. votes, when not nil, is scratch space for
// finding the owner that holds most of them; without it the owner is left out.
func (m *heatmap) block(r0, c0, fr, fc int, votes map[int]int) block {
	g := &m.snap.Banks
	b := block{owner: -1}
	n := 0
	clear(votes)
	for r := r0; r < min(r0+fr, g.Rows); r++ {
		for c := c0; c < min(c0+fc, g.Cols); c++ {
			i := r*g.Cols + c
			p, mm := g.PIM[i], g.Mem[i]
			b.pim += p
			b.mem += mm
			b.pimMax, b.memMax = max(b.pimMax, p), max(b.memMax, mm)
			n++
			if votes != nil && i < len(g.Owner) {
				votes[g.Owner[i]]++
			}
		}
	}
	if n > 0 {
		b.pim /= float64(n)
		b.mem /= float64(n)
	}
	best := 0
	for o, v := range votes {
		if v > best || (v == best && o > b.owner) {
			b.owner, best = o, v
		}
	}
	return b
}

func (m *heatmap) View() string {
	st := m.c.Styles
	if s, ok := placeholder(m.w, m.h, m.snap); ok {
		return s
	}
	g := m.grid()
	if g == nil {
		reason := m.snap.Banks.Reason
		if reason == "" {
			reason = "this system reports no bank grid"
		}
		var lines []string
		for _, l := range wrap(reason, m.w) {
			lines = append(lines, st.Faint.render(l))
		}
		return strings.Join(fitLines(lines, m.w, m.h), "\n")
	}
	q := m.geom()
	lines := make([]string, 0, m.h)
	lines = append(lines, m.header(&q))
	curR, curC := (m.cr-q.r0)/q.fr, (m.cc-q.c0)/q.fc
	noteW := m.w - q.labelW - m.cellsWidth(&q) - 2
	var votes map[int]int
	if m.mode == modeOwner {
		votes = map[int]int{}
	}
	for i := range q.nr {
		var rb rowBuf
		r := q.r0 + i*q.fr
		label := m.rowLabel(r)
		lp := st.Faint
		if i == curR {
			lp = st.Bold
		}
		rb.str(lp, label)
		rb.spaces(q.labelW - len(label))
		for j := range q.nc {
			if m.gapBefore(&q, j) {
				rb.spaces(1)
			}
			b := m.block(r, q.c0+j*q.fc, q.fr, q.fc, votes)
			cur := paint("")
			if i == curR && j == curC {
				cur = st.Rev
			}
			m.cell(&rb, b, cur)
		}
		if q.fr == 1 && noteW >= 8 && r < len(g.RowNotes) && g.RowNotes[r] != "" {
			rb.spaces(2)
			rb.str(st.Faint, truncate(g.RowNotes[r], noteW))
		}
		lines = append(lines, rb.line(m.w))
	}
	// The cursor's figures wrap into whatever lines the grid leaves free.
	detail := wrap(m.detail(&q), m.w)
	nd := clamp(len(detail), 1, 1+max(0, m.h-len(lines)-m.extraLines()))
	for len(lines) < m.h-m.extraLines()-nd+1 {
		lines = append(lines, "")
	}
	if g.Reason != "" {
		lines = append(lines, st.Faint.render(truncate(g.Reason, m.w)))
	}
	lines = append(lines, m.legend())
	for _, d := range detail[:nd] {
		lines = append(lines, st.Bold.render(d))
	}
	return strings.Join(fitLines(lines, m.w, m.h), "\n")
}

func (m *heatmap) cell(rb *rowBuf, b block, cur paint) {
	st := m.c.Styles
	switch m.mode {
	case modePIM:
		l := heatLevel(b.pim)
		rb.cell(st.PIM[l]+cur, heatGlyphs[l])
	case modeMem:
		l := heatLevel(b.mem)
		rb.cell(st.Mem[l]+cur, heatGlyphs[l])
	case modeBoth:
		lp, lm := heatLevel(b.pim), heatLevel(b.mem)
		rb.cell(st.PIM[lp]+cur, heatGlyphs[lp])
		rb.cell(st.Mem[lm]+cur, heatGlyphs[lm])
	case modeOwner:
		i, ok := m.owners[b.owner]
		if !ok {
			rb.cell(st.Free+cur, freeGlyph)
			return
		}
		p := st.reqPaint(b.owner)
		if b.owner == m.c.Selected {
			p += st.Bold + st.Under
		}
		rb.cell(p+cur, rune(ownerGlyphs[i%len(ownerGlyphs)]))
	}
}

// header labels the column groups (bank groups) above the grid.
func (m *heatmap) header(q *heatGeom) string {
	g := &m.snap.Banks
	width := m.cellsWidth(q)
	buf := []rune(strings.Repeat(" ", q.labelW+width))
	x := q.labelW
	free := 0
	for j := range q.nc {
		if m.gapBefore(q, j) {
			x++
		}
		c := q.c0 + j*q.fc
		var label string
		switch {
		case g.ColGroup > 0 && c%g.ColGroup == 0 && q.fc < g.ColGroup:
			label = "g" + strconv.Itoa(c/g.ColGroup)
			if m.dies() {
				label = "die" + strconv.Itoa(c/g.ColGroup)
			}
		case g.ColGroup == 0 || q.fc >= g.ColGroup:
			label = strconv.Itoa(c)
		}
		if label != "" && x >= free && x+len(label) <= len(buf) {
			copy(buf[x:], []rune(label))
			free = x + len(label) + 1
		}
		x += q.cellW
	}
	kind := "bank"
	switch {
	case m.dies() && q.fc < g.ColGroup:
		kind = "DRAM dies"
	case g.ColGroup > 0 && q.fc < g.ColGroup:
		kind = "bank groups"
	}
	if g.ColKind != "" && kind == "bank" {
		kind = g.ColKind
	}
	head := string(buf)
	if rest := m.w - len(buf) - 2; rest >= len(kind) {
		head += "  " + kind
	}
	return m.c.Styles.Faint.render(head)
}

func (m *heatmap) ramp(label string, ramp *[6]paint) string {
	var rb rowBuf
	rb.str("", label+" ")
	for i, t := range []string{"<20", "<40", "<60", "<80", "≥80%"} {
		rb.cell(ramp[i+1], heatGlyphs[i+1])
		rb.str("", t+" ")
	}
	return rb.line(rb.w)
}

func (m *heatmap) legend() string {
	st := m.c.Styles
	switch m.mode {
	case modePIM:
		return m.ramp("PIM busy", &st.PIM)
	case modeMem:
		return m.ramp("mem busy", &st.Mem)
	case modeBoth:
		return m.ramp("PIM|mem", &st.PIM)
	}
	var rb rowBuf
	rb.str("", "request with most work: ")
	for i, id := range m.byIdx {
		if rb.w > m.w {
			break
		}
		rb.str(st.reqPaint(id), string(ownerGlyphs[i%len(ownerGlyphs)]))
		rb.str("", "=#"+strconv.Itoa(id)+" ")
	}
	return rb.line(min(rb.w, m.w))
}

func (m *heatmap) detail(q *heatGeom) string {
	g := &m.snap.Banks
	r0, c0 := m.cr, m.cc
	fr, fc := 1, 1
	if !q.whole && !m.drill {
		r0, c0 = q.r0+(m.cr-q.r0)/q.fr*q.fr, q.c0+(m.cc-q.c0)/q.fc*q.fc
		fr, fc = q.fr, q.fc
	}
	b := m.block(r0, c0, fr, fc, map[int]int{})
	span := func(a, n, limit int, label func(int) string) string {
		e := min(a+n, limit) - 1
		if e <= a {
			return label(a)
		}
		return label(a) + "–" + strconv.Itoa(e)
	}
	where := span(r0, fr, g.Rows, m.rowLabel) + " · " + span(c0, fc, g.Cols, func(c int) string {
		s := "bank " + strconv.Itoa(c)
		switch {
		case fc == 1 && m.dies():
			s += fmt.Sprintf(" (die %d)", c/g.ColGroup)
		case fc == 1 && g.ColGroup > 0:
			s += fmt.Sprintf(" (group %d)", c/g.ColGroup)
		}
		return s
	})
	fig := " · PIM " + pct(b.pim) + " · mem " + pct(b.mem)
	if fr*fc > 1 {
		fig = fmt.Sprintf(" · PIM %s (peak %s) · mem %s (peak %s)", pct(b.pim), pct(b.pimMax), pct(b.mem), pct(b.memMax))
	}
	own := " · no owner"
	if b.owner > 0 {
		own = " · owner #" + strconv.Itoa(b.owner)
	}
	return where + fig + own
}

// dies reports whether the column groups are stacked DRAM dies rather than bank groups.
func (m *heatmap) dies() bool {
	g := &m.snap.Banks
	return g.Dies > 0 && g.ColGroup > 0 && g.Cols == g.Dies*g.ColGroup
}

// plural names several of a grid's rows or columns: channels, PEs, DIMMs.
func plural(kind string) string {
	switch kind {
	case "":
		return "cells"
	case "pe", "dimm":
		return strings.ToUpper(kind) + "s"
	}
	return kind + "s"
}
