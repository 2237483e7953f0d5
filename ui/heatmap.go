package ui

import (
	"fmt"
	"math"
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

var heatModeNames = [numHeatModes]string{"PIM", "memory", "PIM|mem", "owner"}

// ownerGlyphs name the owners of cells in owner mode; the legend maps them to requests.
const ownerGlyphs = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// heatmap is the bank utilisation pane. It draws the memory as its hardware is built: the
// grid's rows and columns walk the system's hierarchy (L3's channels, each of DIMMs of
// ranks of bank groups of banks), with gaps and labels at its levels, the compute units
// beside the banks (a rank PU per rank, a DIMM's NDP core) and the system's other units
// (GPU, NPU, NoC) above; a mesh of processing elements is drawn as a mesh, each PE's dies
// stacked, the NoC between neighbours. When the grid is larger than the pane it shows
// blocks of cells aligned to the hierarchy (the mean of each), and enter shows a window at
// full resolution. The scale is absolute (0–100%), so a glyph means the same share in
// every system and step; a spreads this iteration's range over digits 1–5 instead, so
// differences between banks show however small, and the legend gives the range.
type heatmap struct {
	c        *Common
	w, h     int
	snap     *sim.Snapshot
	mode     heatMode
	relScale bool
	cr, cc   int // cursor, in grid rows and columns
	drill    bool
	r0, c0   int // first grid row and column shown while drilled down
	owners   map[int]int
	byIdx    []int // owner ids in glyph order

	rows, cols axis
	lo, hi     [2]float64 // this iteration's range of PIM and memory busy over the banks
	ranged     [2]bool    // whether lo and hi of PIM and memory are taken yet
}

func newHeatmap(c *Common) *heatmap { return &heatmap{c: c} }

// axis is one direction of the grid: its levels, outermost first, and how many grid
// cells a member of each level spans.
type axis struct {
	lv  []sim.BankLevel
	grp []int
}

func newAxis(lv []sim.BankLevel) axis {
	a := axis{lv: lv, grp: make([]int, len(lv))}
	n := 1
	for k := len(lv) - 1; k >= 0; k-- {
		a.grp[k] = n
		n *= max(1, lv[k].N)
	}
	return a
}

// size is the number of grid cells along the axis.
func (a axis) size() int {
	if len(a.lv) == 0 {
		return 0
	}
	return a.grp[0] * a.lv[0].N
}

// member is cell i's index among the members of level k inside their parent.
func (a axis) member(i, k int) int { return i / a.grp[k] % max(1, a.lv[k].N) }

// name names cell i down to level k: "ch3 DIMM1 rank0".
func (a axis) name(i, k int) string {
	parts := make([]string, 0, k+1)
	for j := 0; j <= k && j < len(a.lv); j++ {
		parts = append(parts, a.lv[j].Label+strconv.Itoa(a.member(i, j)))
	}
	return strings.Join(parts, " ")
}

// factors are the block sizes a view may aggregate cells by: any divisor of a level's
// member size (a block never straddles a member of that level), or any multiple of the
// outermost member size, smallest first.
func (a axis) factors() []int {
	set := map[int]bool{}
	for _, g := range a.grp {
		for d := 1; d <= g; d++ {
			if g%d == 0 {
				set[d] = true
			}
		}
	}
	if len(a.grp) > 0 {
		for m := 1; m*a.grp[0] <= a.size(); m++ {
			set[m*a.grp[0]] = true
		}
	}
	out := make([]int, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// levelsOf is a grid's hierarchy along one axis, or one made of its older fields.
func levelsOf(lv []sim.BankLevel, n int, kind string, group int) []sim.BankLevel {
	prod := 1
	for _, l := range lv {
		prod *= l.N
	}
	if len(lv) > 0 && prod == n {
		return lv
	}
	label := map[string]string{"channel": "ch", "rank": "rank", "DIMM": "DIMM", "pe": "PE", "module": "mod", "bank": "bank", "cube": "cube"}[kind]
	if label == "" {
		label = kind
	}
	if group > 0 && group < n && n%group == 0 {
		return []sim.BankLevel{{Name: "bank group", Label: "g", N: n / group}, {Name: kind, Label: label, N: group}}
	}
	return []sim.BankLevel{{Name: kind, Label: label, N: n}}
}

func (m *heatmap) SetSize(w, h int) {
	m.w, m.h = w, h
	m.scroll()
}

func (m *heatmap) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	m.ranged = [2]bool{}
	m.owners, m.byIdx = nil, nil
	g := m.grid()
	if g == nil {
		return
	}
	m.rows = newAxis(levelsOf(g.RowLevels, g.Rows, g.RowKind, 0))
	m.cols = newAxis(levelsOf(g.ColLevels, g.Cols, g.ColKind, g.ColGroup))
	m.cr, m.cc = clamp(m.cr, 0, g.Rows-1), clamp(m.cc, 0, g.Cols-1)
	m.scroll()
}

// ownerGlyph is the index of request id's glyph among the owners of this iteration's
// banks. Glyphs follow request ids, so a request keeps its letter from step to step as
// long as the set of owners does not change. Only the owner map shows them, so they are
// listed when it first asks.
func (m *heatmap) ownerGlyph(id int) (int, bool) {
	m.listOwners()
	i, ok := m.owners[id]
	return i, ok
}

// listOwners lists the owners of this iteration's banks in glyph order, once. Owners come
// in runs (a channel's banks, a stage's modules), so only a change of owner is looked up.
func (m *heatmap) listOwners() {
	if m.owners != nil {
		return
	}
	g := m.grid()
	if g == nil {
		m.owners = map[int]int{}
		return
	}
	ids := make([]int, 0, g.Rows)
	seen := map[int]bool{}
	last := 0
	for _, o := range g.Owner {
		if o > 0 && o != last && !seen[o] {
			seen[o] = true
			ids = append(ids, o)
		}
		last = o
	}
	slices.Sort(ids)
	m.byIdx = ids
	m.owners = make(map[int]int, len(ids))
	for i, id := range ids {
		m.owners[id] = i
	}
}

// scale is this iteration's range of mode i (0 PIM, 1 memory) over the banks. It is taken
// when a frame first asks for it: a frame shows one mode's scale, most often PIM's.
func (m *heatmap) scale(i int) (float64, float64) {
	if !m.ranged[i] {
		if g := m.grid(); g != nil {
			vals := g.PIM
			if i == 1 {
				vals = g.Mem
			}
			m.lo[i], m.hi[i] = minMax(vals[:g.Rows*g.Cols])
		}
		m.ranged[i] = true
	}
	return m.lo[i], m.hi[i]
}

// minMax is slices.Min and slices.Max of a non-empty slice in one pass over it. It
// keeps four minima and maxima, merged at the end, so the processor overlaps their
// comparisons; min and max are associative and commutative, NaN and −0 included, so the
// result is the same.
func minMax(v []float64) (float64, float64) {
	var lo, hi [4]float64
	for k := range lo {
		lo[k], hi[k] = v[0], v[0]
	}
	i := 1
	for ; i+4 <= len(v); i += 4 {
		w := v[i : i+4 : i+4]
		lo[0], hi[0] = min(lo[0], w[0]), max(hi[0], w[0])
		lo[1], hi[1] = min(lo[1], w[1]), max(hi[1], w[1])
		lo[2], hi[2] = min(lo[2], w[2]), max(hi[2], w[2])
		lo[3], hi[3] = min(lo[3], w[3]), max(hi[3], w[3])
	}
	for _, x := range v[i:] {
		lo[0], hi[0] = min(lo[0], x), max(hi[0], x)
	}
	return min(lo[0], lo[1], lo[2], lo[3]), max(hi[0], hi[1], hi[2], hi[3])
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

// mesh reports whether the rows are a mesh of processing elements, drawn as one.
func (m *heatmap) mesh() bool {
	g := m.grid()
	return g != nil && g.MeshRows > 0 && g.MeshCols > 0 && g.MeshRows*g.MeshCols == g.Rows
}

// meshShown reports whether the pane draws the mesh: when it fits, and until enter shows
// the banks instead.
func (m *heatmap) meshShown() bool {
	if !m.mesh() || m.drill {
		return false
	}
	_, ok := m.meshLayout()
	return ok
}

func (m *heatmap) Title() string {
	t := "1 Banks"
	g := m.grid()
	if g == nil {
		return t
	}
	t += " · " + heatModeNames[m.mode]
	if m.relScale && m.mode != modeOwner {
		t += " relative"
	}
	if m.meshShown() {
		return t + fmt.Sprintf(" · %d×%d PE mesh", g.MeshRows, g.MeshCols)
	}
	row, col := m.rows.lv[len(m.rows.lv)-1], m.cols.lv[len(m.cols.lv)-1]
	switch q := m.geom(); {
	case m.drill && !q.whole:
		t += " · detail"
	case q.fr > 1 && q.fc > 1:
		t += fmt.Sprintf(" · %d %s × %d %s/cell", q.fr, row.Label, q.fc, plural(col.Name))
	case q.fr > 1:
		t += fmt.Sprintf(" · %d %s/row", q.fr, row.Label)
	case q.fc > 1:
		t += fmt.Sprintf(" · %d %s/cell", q.fc, plural(col.Name))
	}
	return t
}

func (m *heatmap) ShortHelp() []key.Binding {
	return []key.Binding{helpOnly("m", "mode"), helpOnly("a", "scale"), helpOnly("h/j/k/l", "cursor"), helpOnly("enter", "detail")}
}

func (m *heatmap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{helpOnly("m", "mode: PIM, memory, both, owner"), helpOnly("a", "scale: 0–100% (shades) or this iteration's range (digits 1–5)"),
		helpOnly("h/j/k/l ↑/↓", "cursor"), helpOnly("enter", "a block's banks (a PE's, on a mesh)"), helpOnly("esc", "back to the overview")}}
}

// heatGeom places the grid in the pane.
type heatGeom struct {
	labelW  int   // row labels and the row unit's cell
	rowUnit int   // index in Units of the unit each row has, -1 = none
	cellW   int   // cells per shown column (2 in PIM|mem mode)
	fr, fc  int   // grid rows and columns per shown cell
	r0, c0  int   // first grid row and column shown
	nr, nc  int   // shown rows and columns
	top     int   // line of the first grid row
	heads   int   // header lines above the grid
	whole   bool  // every cell shown at full resolution
	gapLv   int   // column levels above this one get a gap at their boundaries
	xs      []int // x of each shown column, from the grid's left edge
	units   []unitCell
	width   int // the grid's width, labels included
}

// unitCell is a column-level unit drawn before a shown column: which unit and which of
// its groups in a row.
type unitCell struct {
	x, unit, group int
}

// sysUnits are the units of the whole system, drawn above the grid.
func (m *heatmap) sysUnits() []sim.BankUnit {
	var out []sim.BankUnit
	for _, u := range m.snap.Banks.Units {
		if u.Level == sim.UnitSystem && len(u.Busy) == 1 {
			out = append(out, u)
		}
	}
	return out
}

// rowUnit is the index of the unit each row has (a DIMM's NDP core), -1 if none.
func (m *heatmap) rowUnit() int {
	g := &m.snap.Banks
	for i, u := range g.Units {
		if u.Level == sim.UnitRow && len(u.Busy) == g.Rows {
			return i
		}
	}
	return -1
}

// rowLabelW is the width of the row labels at fr rows a line.
func (m *heatmap) rowLabelW(fr int) int {
	g := &m.snap.Banks
	if m.mesh() {
		return len(m.rowLabel(g.Rows-1)) + 1
	}
	w := 0
	for k, l := range m.rows.lv {
		if m.rows.grp[k]*l.N > fr || k == 0 {
			w += len(l.Label) + len(strconv.Itoa(l.N-1)) + 1
		}
	}
	return w
}

// rowLabel names grid row r in full.
func (m *heatmap) rowLabel(r int) string {
	g := &m.snap.Banks
	if m.mesh() {
		return "PE(" + strconv.Itoa(r/g.MeshCols) + "," + strconv.Itoa(r%g.MeshCols) + ")"
	}
	return m.rows.name(r, len(m.rows.lv)-1)
}

// colLabel names grid column c in full.
func (m *heatmap) colLabel(c int) string { return m.cols.name(c, len(m.cols.lv)-1) }

// headLines is how many lines of column labels the grid gets.
func (m *heatmap) headLines() int {
	if m.h >= 12 && len(m.cols.lv) >= 3 {
		return 2
	}
	return 1
}

// extraLines are the lines below the grid: the reason when the system gives one beside
// its grid, the legend and at least one line of the cursor's figures.
func (m *heatmap) extraLines() int {
	n := 2
	if m.snap != nil && m.snap.Banks.Reason != "" {
		n++
	}
	return n
}

// topLines are the lines above the grid: the system's units and the column labels.
func (m *heatmap) topLines() int {
	n := m.headLines()
	if len(m.sysUnits()) > 0 {
		n++
	}
	return n
}

// layout places nc shown columns from c0, fc columns a cell, with gaps at the boundaries
// of the column levels above gapLv and each column-level unit before the first column of
// its groups (when a block never straddles one).
func (m *heatmap) layout(q *heatGeom) {
	g := &m.snap.Banks
	q.xs = q.xs[:0]
	q.units = q.units[:0]
	x := q.labelW
	for j := range q.nc {
		c := q.c0 + j*q.fc
		if j > 0 {
			for k := range q.gapLv {
				if c%m.cols.grp[k] == 0 {
					x++
					break
				}
			}
		}
		for ui, u := range g.Units {
			if u.Level < 0 || u.Level >= len(m.cols.lv) {
				continue
			}
			grp := m.cols.grp[u.Level]
			if grp%q.fc == 0 && c%grp == 0 && len(u.Busy) == g.Rows*(g.Cols/grp) {
				q.units = append(q.units, unitCell{x: x, unit: ui, group: c / grp})
				x++
			}
		}
		q.xs = append(q.xs, x)
		x += q.cellW
	}
	q.width = x
}

// geom lays the grid out: whole when it fits, else blocks of cells aligned to the
// hierarchy, the smallest that fit, keeping the gaps of the outer levels as long as they
// fit; or, drilled down, a window at full resolution.
func (m *heatmap) geom() heatGeom {
	g := m.grid()
	if g == nil {
		return heatGeom{cellW: 1, fr: 1, fc: 1, top: 1, rowUnit: -1}
	}
	q := heatGeom{cellW: 1, fr: 1, fc: 1, rowUnit: m.rowUnit()}
	if m.mode == modeBoth {
		q.cellW = 2
	}
	q.heads = m.headLines()
	q.top = m.topLines()
	availR := max(1, m.h-q.top-m.extraLines())
	setRows := func(fr int) {
		q.fr = fr
		q.labelW = m.rowLabelW(fr)
		if q.rowUnit >= 0 {
			q.labelW += 2 // the row's unit and a space
		}
	}
	fit := func() bool {
		for q.gapLv = len(m.cols.lv) - 1; q.gapLv >= 0; q.gapLv-- {
			m.layout(&q)
			if q.width <= m.w {
				return true
			}
		}
		q.gapLv = 0
		m.layout(&q)
		return false
	}
	// Whole, at full resolution.
	setRows(1)
	q.nr, q.nc = g.Rows, g.Cols
	if g.Rows <= availR && fit() {
		q.whole = true
		return q
	}
	if m.drill {
		q.r0, q.c0 = m.r0, m.c0
		q.nr = min(availR, g.Rows-q.r0)
		for q.nc = g.Cols - q.c0; q.nc > 1; q.nc-- {
			if fit() {
				break
			}
		}
		fit()
		return q
	}
	for _, fr := range m.rows.factors() {
		if (g.Rows+fr-1)/fr <= availR {
			setRows(fr)
			break
		}
		setRows(fr)
	}
	q.nr = (g.Rows + q.fr - 1) / q.fr
	for _, fc := range m.cols.factors() {
		q.fc = fc
		q.nc = (g.Cols + fc - 1) / fc
		if fit() {
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
	// Detail ends once the whole grid fits, except on a mesh, where it is the way to a
	// PE's banks.
	m.drill = false
	if q := m.geom(); q.whole && !m.mesh() {
		return
	}
	m.drill = true
	q := m.geom()
	visR := max(1, m.h-q.top-m.extraLines())
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
		switch {
		case key.Matches(msg, k.Mode):
			m.mode = (m.mode + 1) % numHeatModes
			m.scroll()
			return m, nil
		case key.Matches(msg, k.Scale):
			m.relScale = !m.relScale
			return m, nil
		}
		if g == nil {
			return m, nil
		}
		if m.meshShown() {
			m.meshKey(msg)
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
		if m.meshShown() {
			m.meshClick(msg.X, msg.Y)
			return m, nil
		}
		q := m.geom()
		row := msg.Y - q.top
		if row < 0 || row >= q.nr {
			return m, nil
		}
		for j, x := range q.xs {
			if msg.X >= x && msg.X < x+q.cellW {
				m.cr = min(g.Rows-1, q.r0+row*q.fr)
				m.cc = min(g.Cols-1, q.c0+j*q.fc)
				m.scroll()
				return m, nil
			}
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
	// The maxima start at +0 and only grow, so a comparison (or a NaN, which max
	// keeps) gives what max would, at a fraction of its cost. The sums and maxima are
	// kept in locals, which stay in registers, and added in the cells' order.
	var pim, mem, pimMax, memMax float64
	for r := r0; r < min(r0+fr, g.Rows); r++ {
		lo, hi := r*g.Cols+c0, r*g.Cols+max(c0, min(c0+fc, g.Cols))
		ps := g.PIM[lo:hi]
		ms := g.Mem[lo:hi]
		ms = ms[:len(ps)]
		for i, p := range ps {
			mm := ms[i]
			pim += p
			mem += mm
			if p > pimMax || p != p {
				pimMax = p
			}
			if mm > memMax || mm != mm {
				memMax = mm
			}
		}
		n += hi - lo
		if votes != nil && lo < len(g.Owner) {
			for _, o := range g.Owner[lo:min(hi, len(g.Owner))] {
				votes[o]++
			}
		}
	}
	b.pim, b.mem, b.pimMax, b.memMax = pim, mem, pimMax, memMax
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

// means fills pim and mem with the mean PIM and memory busy of the len(pim) blocks of
// fr×fc cells side by side from grid row r0 and column c0: block's means, bit for bit,
// without the maxima and owners a shown cell does not draw. It goes along each grid
// row once, adding each block's cells in the order block adds them.
func (m *heatmap) means(pim, mem []float64, r0, c0, fr, fc int) {
	g := &m.snap.Banks
	clear(pim)
	clear(mem)
	mem = mem[:len(pim)]
	r1 := min(r0+fr, g.Rows)
	for r := r0; r < r1; r++ {
		row := r * g.Cols
		for j := range pim {
			lo := c0 + j*fc
			hi := min(lo+fc, g.Cols)
			if hi <= lo {
				continue
			}
			ps := g.PIM[row+lo : row+hi]
			ms := g.Mem[row+lo : row+hi]
			ms = ms[:len(ps)]
			p, q := pim[j], mem[j]
			for i, x := range ps {
				p += x
				q += ms[i]
			}
			pim[j], mem[j] = p, q
		}
	}
	for j := range pim {
		lo := c0 + j*fc
		if n := (r1 - r0) * (max(lo, min(lo+fc, g.Cols)) - lo); n > 0 {
			pim[j] /= float64(n)
			mem[j] /= float64(n)
		}
	}
}

// unitBusy is the mean busy share of unit u over rows [r0, r0+fr) for group grp (ignored
// for a row unit).
func (m *heatmap) unitBusy(u, r0, fr, grp int) float64 {
	g := &m.snap.Banks
	un := g.Units[u]
	per := 1
	if un.Level >= 0 {
		per = g.Cols / m.cols.grp[un.Level]
	}
	sum, n := 0.0, 0
	for r := r0; r < min(r0+fr, g.Rows); r++ {
		i := r * per
		if un.Level >= 0 {
			i += grp
		}
		if i < len(un.Busy) {
			sum += un.Busy[i]
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// relative reports whether the glyphs span this iteration's range of mode i (0 PIM, 1
// memory): when asked for (a) and the banks differ at all.
func (m *heatmap) relative(i int) bool {
	if !m.relScale {
		return false
	}
	lo, hi := m.scale(i)
	return hi-lo >= 5e-6 // what the legend's three decimals of a percentage tell apart
}

// glyph is the mark of ramp level l of mode i: the absolute scale's shades, or on the
// iteration's range the digits 1–5, which no one reads as an absolute share.
func (m *heatmap) glyph(l, i int) rune {
	if m.relative(i) {
		return relGlyphs[l]
	}
	return heatGlyphs[l]
}

// level is the ramp index of value v of mode i (0 PIM, 1 memory) on the current scale:
// idle cells stay blank; on the iteration's range the least busy bank gets the lightest
// glyph and the busiest the darkest.
func (m *heatmap) level(v float64, i int) int {
	if !m.relative(i) || !(v > 0) {
		return heatLevel(v)
	}
	return 1 + clamp(int((v-m.lo[i])/(m.hi[i]-m.lo[i])*5), 0, 4)
}

// unitGlyph is a unit's busy share as a bar: ▁ to █ in eighths, · when idle.
func unitGlyph(f float64) rune {
	if !(f > 0) {
		return freeGlyph
	}
	return barGlyphs[clamp(int(math.Round(f*8)), 1, 8)]
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
	var lines []string
	if su := m.sysUnits(); len(su) > 0 {
		lines = append(lines, m.unitsLine(su))
	}
	var detail string
	if m.meshShown() {
		var body []string
		body, detail = m.meshBody()
		lines = append(lines, body...)
	} else {
		var body []string
		body, detail = m.gridBody()
		lines = append(lines, body...)
	}
	// Below the grid: the reason, the legend (on two lines when they are free) and the
	// cursor's figures in the lines left.
	free := m.h - len(lines)
	if g.Reason != "" {
		free--
	}
	legend := flow(m.legend(), m.w)
	nl := 1
	if len(legend) > 1 && free >= 3 {
		nl = 2
	}
	legend = flowN(m.legend(), m.w, nl)
	det := flowN(detail, m.w, max(1, free-len(legend)))
	for len(lines) < m.h-len(legend)-len(det)-min(1, len(g.Reason)) {
		lines = append(lines, "")
	}
	if g.Reason != "" {
		lines = append(lines, st.Faint.render(shorten(g.Reason, m.w)))
	}
	lines = append(lines, legend...)
	for _, d := range det {
		lines = append(lines, st.Bold.render(d))
	}
	return strings.Join(fitLines(lines, m.w, m.h), "\n")
}

// unitsLine shows the system's units with their busy share: "GPU ▆ 62% · PCIe ▂ 11%".
func (m *heatmap) unitsLine(us []sim.BankUnit) string {
	parts := make([]string, len(us))
	for i, u := range us {
		lv := heatLevel(u.Busy[0])
		parts[i] = u.Name + " " + m.c.Styles.PIM[max(1, lv)].render(string(unitGlyph(u.Busy[0]))) + " " + pctInt(u.Busy[0])
	}
	return shorten(m.c.Styles.Faint.render(wordBusy)+"  "+strings.Join(parts, partSep), m.w)
}

// gridBody draws the column labels and the grid, and says what is under the cursor.
func (m *heatmap) gridBody() ([]string, string) {
	st := m.c.Styles
	g := &m.snap.Banks
	q := m.geom()
	lines := m.header(&q)
	curR, curC := (m.cr-q.r0)/q.fr, (m.cc-q.c0)/q.fc
	noteW := m.w - q.width - 2
	var votes map[int]int
	if m.mode == modeOwner {
		votes = map[int]int{}
	}
	var pim, mem []float64
	if votes == nil {
		pim, mem = make([]float64, q.nc), make([]float64, q.nc)
	}
	prev := -1
	for i := range q.nr {
		var rb rowBuf
		r := q.r0 + i*q.fr
		if votes == nil {
			m.means(pim, mem, r, q.c0, q.fr, q.fc)
		}
		lp := st.Faint
		if i == curR {
			lp = st.Bold
		}
		label := m.shownRowLabel(r, prev, q.fr)
		prev = r
		rb.str(lp, label)
		if q.rowUnit >= 0 {
			rb.spaces(q.labelW - width(label) - 2)
			f := m.unitBusy(q.rowUnit, r, q.fr, 0)
			rb.cell(st.PIM[max(1, heatLevel(f))], unitGlyph(f))
		}
		units := q.units
		for j := range q.nc {
			for len(units) > 0 && units[0].x < q.xs[j] {
				u := units[0]
				rb.spaces(u.x - rb.w)
				f := m.unitBusy(u.unit, r, q.fr, u.group)
				rb.cell(st.PIM[max(1, heatLevel(f))], unitGlyph(f))
				units = units[1:]
			}
			rb.spaces(q.xs[j] - rb.w)
			b := block{owner: -1}
			if votes == nil {
				b.pim, b.mem = pim[j], mem[j]
			} else {
				b = m.block(r, q.c0+j*q.fc, q.fr, q.fc, votes)
			}
			cur := paint("")
			if i == curR && j == curC {
				cur = st.Rev
			}
			m.cell(&rb, b, cur)
		}
		if q.fr == 1 && noteW >= 8 && r < len(g.RowNotes) && g.RowNotes[r] != "" {
			rb.spaces(2)
			rb.str(st.Faint, shorten(g.RowNotes[r], noteW))
		}
		lines = append(lines, rb.line(m.w))
	}
	return lines, m.detail(&q)
}

// shownRowLabel labels the shown row starting at grid row r, fr rows a line: each level
// that tells the rows apart, an outer level's label only where its member starts (after
// the row prev shown above).
func (m *heatmap) shownRowLabel(r, prev, fr int) string {
	if m.mesh() {
		return m.rowLabel(r)
	}
	var parts []string
	for k, l := range m.rows.lv {
		if m.rows.grp[k]*l.N <= fr && k > 0 {
			continue
		}
		lab := l.Label + strconv.Itoa(m.rows.member(r, k))
		inner := k == len(m.rows.lv)-1 || m.rows.grp[k+1]*m.rows.lv[k+1].N <= fr || m.rows.grp[k] < fr
		if !inner && prev >= 0 && r/m.rows.grp[k] == prev/m.rows.grp[k] {
			lab = strings.Repeat(" ", len(l.Label)+len(strconv.Itoa(l.N-1)))
		} else {
			lab = fitLine(lab, len(l.Label)+len(strconv.Itoa(l.N-1)))
		}
		parts = append(parts, lab)
		if m.rows.grp[k] < fr {
			break
		}
	}
	return strings.TrimRight(strings.Join(parts, " "), " ")
}

func (m *heatmap) cell(rb *rowBuf, b block, cur paint) {
	st := m.c.Styles
	switch m.mode {
	case modePIM:
		l := m.level(b.pim, 0)
		rb.cell(st.PIM[l].with(cur), m.glyph(l, 0))
	case modeMem:
		l := m.level(b.mem, 1)
		rb.cell(st.Mem[l].with(cur), m.glyph(l, 1))
	case modeBoth:
		lp, lm := m.level(b.pim, 0), m.level(b.mem, 1)
		rb.cell(st.PIM[lp].with(cur), m.glyph(lp, 0))
		rb.cell(st.Mem[lm].with(cur), m.glyph(lm, 1))
	case modeOwner:
		i, ok := m.ownerGlyph(b.owner)
		if !ok {
			rb.cell(st.Free.with(cur), freeGlyph)
			return
		}
		p := st.reqPaint(b.owner)
		if b.owner == m.c.Selected {
			p += st.Bold + st.Under
		}
		rb.cell(p.with(cur), rune(ownerGlyphs[i%len(ownerGlyphs)]))
	}
}

// header labels the column levels above the grid: the outermost level whose members
// span more than one shown cell, and on a second line the next such level when its labels
// fit.
func (m *heatmap) header(q *heatGeom) []string {
	var out []string
	for k := range m.cols.lv {
		if len(out) == q.heads {
			break
		}
		l := m.cols.lv[k]
		span := m.cols.grp[k] / q.fc
		if l.N < 2 && k < len(m.cols.lv)-1 || span < 1 {
			continue
		}
		if len(out) > 0 && span*q.cellW < len(l.Label)+len(strconv.Itoa(l.N-1))+1 {
			break
		}
		buf := []rune(strings.Repeat(" ", q.width))
		free := 0
		for j := range q.nc {
			c := q.c0 + j*q.fc
			if c%m.cols.grp[k] != 0 && j > 0 {
				continue
			}
			x := q.xs[j]
			for _, u := range q.units {
				if u.x == x-1 {
					x--
				}
			}
			label := []rune(l.Label + strconv.Itoa(m.cols.member(c, k)))
			if x >= free && x+len(label) <= len(buf) {
				copy(buf[x:], label)
				free = x + len(label) + 1
			}
		}
		out = append(out, m.c.Styles.Faint.render(string(buf)))
	}
	for len(out) < q.heads {
		out = append(out, "")
	}
	return out
}

// ramp is a scale's legend: absolute, the glyphs' steps; on the iteration's range, the
// word relative and the least and greatest value at the ends of its digits.
func (m *heatmap) ramp(label string, ramp *[6]paint, i int) string {
	var rb rowBuf
	rb.str("", label+" ")
	if m.relative(i) {
		lo, hi := pctApart(m.scale(i))
		rb.str("", "relative "+lo+" ")
		for l := 1; l <= 5; l++ {
			rb.cell(ramp[l], relGlyphs[l])
		}
		rb.str("", " "+hi)
	} else {
		if m.relScale {
			// Asked for the range, but every bank has the same share: there is none.
			_, hi := m.scale(i)
			rb.str("", "relative: every bank at "+pct(hi)+"; ")
		}
		for l, t := range []string{"<20", "<40", "<60", "<80", "≥80%"} {
			if l > 0 {
				rb.spaces(1)
			}
			rb.cell(ramp[l+1], heatGlyphs[l+1])
			rb.str("", t)
		}
	}
	return rb.line(rb.w)
}

// pimWord names the PIM cells' figure: the time the banks' compute unit was busy, or
// busy with the one kind of work the system counts there (HeLioS's PEs: attention).
func (m *heatmap) pimWord() string {
	if w := m.snap.Banks.PIMWork; w != "" {
		return w + " " + wordBusy
	}
	return "PIM " + wordBusy
}

func (m *heatmap) legend() string {
	st := m.c.Styles
	var parts []string
	switch m.mode {
	case modePIM:
		parts = append(parts, m.ramp(m.pimWord(), &st.PIM, 0))
	case modeMem:
		parts = append(parts, m.ramp(wordBandwidth, &st.Mem, 1))
	case modeBoth:
		parts = append(parts, m.ramp(m.pimWord(), &st.PIM, 0), m.ramp(wordBandwidth, &st.Mem, 1))
	default:
		var rb rowBuf
		rb.str("", "request with most work: ")
		m.listOwners()
		for i, id := range m.byIdx {
			if rb.w > m.w {
				break
			}
			rb.str(st.reqPaint(id), string(ownerGlyphs[i%len(ownerGlyphs)]))
			rb.str("", "=#"+strconv.Itoa(id)+" ")
		}
		return rb.line(min(rb.w, m.w))
	}
	var names []string
	for _, u := range m.snap.Banks.Units {
		if u.Level != sim.UnitSystem && !slices.Contains(names, u.Name) {
			names = append(names, u.Name)
		}
	}
	if len(names) > 0 {
		parts = append(parts, "▁▄█ "+strings.Join(names, ", ")+" busy")
	}
	if m.meshShown() {
		parts = append(parts, "─━ NoC links")
	}
	return shorten(strings.Join(parts, partSep), m.w)
}

// detail gives the figures of the cell (or block) under the cursor, with the units it
// belongs to.
func (m *heatmap) detail(q *heatGeom) string {
	g := &m.snap.Banks
	r0, c0 := m.cr, m.cc
	fr, fc := 1, 1
	if !q.whole && !m.drill {
		r0, c0 = q.r0+(m.cr-q.r0)/q.fr*q.fr, q.c0+(m.cc-q.c0)/q.fc*q.fc
		fr, fc = q.fr, q.fc
	}
	b := m.block(r0, c0, fr, fc, map[int]int{})
	where := m.span(m.rows, r0, fr, g.Rows, m.rowLabel) + partSep + m.span(m.cols, c0, fc, g.Cols, m.colLabel)
	fig := m.pimWord() + " " + pct(b.pim) + partSep + wordBandwidth + " " + pct(b.mem)
	if fr*fc > 1 {
		fig = fmt.Sprintf("%s %s (peak %s) · %s %s (peak %s)", m.pimWord(), pct(b.pim), pct(b.pimMax), wordBandwidth, pct(b.mem), pct(b.memMax))
	}
	var units []string
	for i, u := range g.Units {
		switch {
		case u.Level == sim.UnitRow && len(u.Busy) == g.Rows:
			units = append(units, u.Name+" "+pct(m.unitBusy(i, r0, fr, 0)))
		case u.Level >= 0 && u.Level < len(m.cols.lv) && m.cols.grp[u.Level]%fc == 0:
			units = append(units, u.Name+" "+pct(m.unitBusy(i, r0, fr, c0/m.cols.grp[u.Level])))
		}
	}
	own := "no owner"
	if b.owner > 0 {
		own = "owner #" + strconv.Itoa(b.owner)
	}
	parts := append([]string{where, fig}, units...)
	if fr == 1 && r0 < len(g.RowNotes) && g.RowNotes[r0] != "" {
		parts = append(parts, g.RowNotes[r0])
	}
	return strings.Join(append(parts, own), partSep)
}

// pctApart writes two different fractions as percentages with as many decimals as it
// takes to tell them apart (up to three).
func pctApart(a, b float64) (string, string) {
	for dec := 1; dec < 3; dec++ {
		x, y := strconv.FormatFloat(100*a, 'f', dec, 64), strconv.FormatFloat(100*b, 'f', dec, 64)
		if x != y {
			return x + "%", y + "%"
		}
	}
	return strconv.FormatFloat(100*a, 'f', 3, 64) + "%", strconv.FormatFloat(100*b, 'f', 3, 64) + "%"
}

// span names cells [a, a+n) of an axis, a block as short as its alignment allows:
// "ch0–3", "node0–1" for whole nodes, "DIMM0 rank0 BG0 bank0–1".
func (m *heatmap) span(ax axis, a, n, limit int, label func(int) string) string {
	e := min(a+n, limit) - 1
	if e <= a {
		return label(a)
	}
	for k := range ax.lv {
		if a/ax.grp[k] == e/ax.grp[k] {
			continue
		}
		// The first level whose members differ: a whole run of its members reads as a range.
		if a%ax.grp[k] != 0 || (e+1)%ax.grp[k] != 0 || (k > 0 && a/ax.grp[k-1] != e/ax.grp[k-1]) {
			break
		}
		prefix := ""
		if k > 0 {
			prefix = ax.name(a, k-1) + " "
		}
		return prefix + ax.lv[k].Label + strconv.Itoa(ax.member(a, k)) + "–" + strconv.Itoa(ax.member(e, k))
	}
	return label(a) + " – " + label(e)
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
