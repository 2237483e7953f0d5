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

// selectMsg asks every pane to highlight request id (0 clears the selection).
type selectMsg struct{ id int }

func selectCmd(id int) tea.Cmd { return func() tea.Msg { return selectMsg{id} } }

// kvmap is the KV block map: one bar per location (channel, HBM, PE…) drawn to scale of
// its capacity, each request's blocks in its colour, partly filled blocks, blocks
// reserved but not yet used, and free space. Where the system reports block addresses
// the bar is the physical layout; otherwise a location's blocks are drawn in request
// order. Locations of a mesh are laid out as the mesh.
type kvmap struct {
	c      *Common
	w, h   int
	snap   *sim.Snapshot
	locs   [][]sim.KVHolder // holders per location, by request id
	segs   [][]kvSeg        // each location's blocks laid out, by segments
	paged  bool             // some location is drawn from block addresses
	loc    int
	hold   int // holder under the cursor in loc, -1 = none
	top    int
	finder map[int][2]int // request → location, holder
	// pageOwner is pageSegments' table of pages, kept to be reused.
	pageOwner []int32
}

func newKVMap(c *Common) *kvmap { return &kvmap{c: c, hold: -1} }

func (m *kvmap) SetSize(w, h int) {
	m.w, m.h = w, h
	m.scroll()
}

func (m *kvmap) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	m.locs = make([][]sim.KVHolder, len(s.KV.Locations))
	m.finder = make(map[int][2]int, len(s.Requests))
	for i, l := range s.KV.Locations {
		h := slices.Clone(l.Holders)
		slices.SortFunc(h, func(a, b sim.KVHolder) int { return a.Request - b.Request })
		m.locs[i] = h
		for j, x := range h {
			m.finder[x.Request] = [2]int{i, j}
		}
	}
	m.segs = make([][]kvSeg, len(m.locs))
	m.paged = false
	for i := range m.locs {
		if segs, ok := m.pageSegments(i); ok {
			m.segs[i], m.paged = segs, true
			continue
		}
		m.segs[i] = m.segments(i)
	}
	m.loc = clamp(m.loc, 0, max(0, len(m.locs)-1))
	m.follow(m.c.Selected)
	m.scroll()
}

// follow puts the cursor on request id's blocks, wherever they live.
func (m *kvmap) follow(id int) {
	if p, ok := m.finder[id]; ok {
		m.loc, m.hold = p[0], p[1]
		return
	}
	m.hold = -1
}

func (m *kvmap) Title() string {
	t := "3 KV blocks"
	if m.snap != nil && m.snap.KV.Capacity > 0 {
		kv := &m.snap.KV
		t += " · " + pct(float64(kv.Used)/float64(kv.Capacity)) + " used · " + pct(kv.Fragmentation) + " fragmented"
	}
	return t
}

func (m *kvmap) ShortHelp() []key.Binding {
	return []key.Binding{helpOnly("j/k", "location"), helpOnly("h/l", "request"), helpOnly("esc", "clear")}
}

func (m *kvmap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{helpOnly("j/k ↑/↓", "location"), helpOnly("h/l", "select a request there"), helpOnly("esc", "clear the selection")}}
}

// kvGeom lays the bars out in columns of locations.
type kvGeom struct {
	head, rows      int // lines above the bars, lines of bars
	flows           int // columns of bars
	per             int // lines per bar
	labelW, barW    int
	entryW          int
	legend, detail2 bool
	mesh            bool // locations in mesh order: row-major, one column of bars per mesh column
}

func (m *kvmap) geom() kvGeom {
	var g kvGeom
	n := len(m.locs)
	g.head = 1
	if m.h >= 9 {
		g.head = 2
	}
	fixed := g.head + 1
	if m.h >= 7 {
		g.legend = true
		fixed++
	}
	if m.h >= 12 {
		g.detail2 = true
		fixed++
	}
	g.rows = max(1, m.h-fixed)
	for _, l := range m.snap.KV.Locations {
		g.labelW = max(g.labelW, width(l.Label))
	}
	// Long location names give way to the bars.
	g.labelW = min(g.labelW, max(4, m.w/3)) + 1
	const minBar = 12
	g.flows, g.per = 1, 1
	kv := &m.snap.KV
	if mr, mc := kv.MeshRows, kv.MeshCols; mr > 0 && mc > 1 && mr*mc == n && mr <= g.rows && mc*(g.labelW+minBar/2+6+2) <= m.w+2 {
		g.mesh, g.flows = true, mc
		g.per = max(1, g.rows/mr)
	} else if n <= g.rows {
		g.per = max(1, g.rows/max(1, n))
	} else {
		want := (n + g.rows - 1) / g.rows
		fit := max(1, (m.w+2)/(g.labelW+minBar+6+2))
		g.flows = max(1, min(want, fit))
	}
	g.entryW = (m.w - 2*(g.flows-1)) / g.flows
	g.barW = max(1, g.entryW-g.labelW-6)
	return g
}

// shown is how many locations fit.
func (g *kvGeom) shown() int { return g.flows * (g.rows / g.per) }

// at is the location shown in column f, bar s, counting from the first shown.
func (g *kvGeom) at(top, f, s int) int {
	if g.mesh {
		return s*g.flows + f
	}
	return top + f*(g.rows/g.per) + s
}

func (m *kvmap) scroll() {
	if m.snap == nil || len(m.locs) == 0 {
		return
	}
	g := m.geom()
	if g.mesh {
		m.top = 0
		return
	}
	n := max(1, g.shown())
	m.top = clamp(m.top, max(0, m.loc-n+1), m.loc)
	m.top = clamp(m.top, 0, max(0, len(m.locs)-n))
}

func (m *kvmap) Update(msg tea.Msg) (pane, tea.Cmd) {
	if m.snap == nil || len(m.locs) == 0 {
		return m, nil
	}
	k := m.c.Keys
	switch msg := msg.(type) {
	case selectMsg:
		m.follow(msg.id)
		m.scroll()
		return m, nil
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Up):
			m.loc, m.hold = max(0, m.loc-1), -1
		case key.Matches(msg, k.Down):
			m.loc, m.hold = min(len(m.locs)-1, m.loc+1), -1
		case key.Matches(msg, k.Left), key.Matches(msg, k.Right):
			n := len(m.locs[m.loc])
			if n == 0 {
				return m, nil
			}
			if key.Matches(msg, k.Left) {
				m.hold = (max(m.hold, 0) - 1 + n) % n
			} else {
				m.hold = (m.hold + 1) % n
			}
			m.scroll()
			return m, selectCmd(m.holderID())
		case key.Matches(msg, k.Close):
			m.hold = -1
			return m, selectCmd(0)
		}
		m.scroll()
		if m.c.Selected != 0 && m.hold < 0 {
			return m, selectCmd(0)
		}
	case tea.MouseClickMsg:
		g := m.geom()
		row := msg.Y - g.head
		f := msg.X / (g.entryW + 2)
		if row < 0 || row >= g.rows || f >= g.flows {
			return m, nil
		}
		perFlow := g.rows / g.per
		i := g.at(m.top, f, row/g.per)
		if i >= len(m.locs) || row/g.per >= perFlow {
			return m, nil
		}
		m.loc, m.hold = i, -1
		x := msg.X - f*(g.entryW+2) - g.labelW
		if x >= 0 && x < g.barW {
			cell := (row%g.per)*g.barW + x
			if segs := m.segs[i]; len(segs) > 0 {
				total := g.barW * g.per
				a, b := m.cellBlocks(i, cell, total)
				m.hold = dominant(segs, a, b).holder
			}
		}
		return m, selectCmd(m.holderID())
	}
	return m, nil
}

func (m *kvmap) holderID() int {
	if m.hold < 0 || m.hold >= len(m.locs[m.loc]) {
		return 0
	}
	return m.locs[m.loc][m.hold].Request
}

// Kinds of blocks in a location.
const (
	kvFull = iota
	kvPart
	kvReserved
	kvFree
	kvKinds
)

// kvSeg is a run of blocks of one kind (and holder) in a location.
type kvSeg struct {
	kind, holder int
	from, to     float64 // block positions
}

// segments lays a location's blocks out: each request's filled blocks, the share of its
// blocks left empty by partly filled blocks, its reserved but unused blocks; then
// reservations no request claims, and free space.
func (m *kvmap) segments(i int) []kvSeg {
	loc := &m.snap.KV.Locations[i]
	var segs []kvSeg
	pos := 0.0
	add := func(kind, holder int, n float64) {
		if n > 0 {
			segs = append(segs, kvSeg{kind, holder, pos, pos + n})
			pos += n
		}
	}
	used, resv := 0, 0
	for j, h := range m.locs[i] {
		blocks := h.KBlocks + h.VBlocks
		fill := math.Max(0, math.Min(1, h.Fill))
		add(kvFull, j, float64(blocks)*fill)
		add(kvPart, j, float64(blocks)*(1-fill))
		add(kvReserved, j, float64(max(0, h.Reserved-blocks)))
		used += blocks
		resv += max(h.Reserved, blocks)
	}
	add(kvFull, -1, float64(max(0, loc.Used-used)))
	add(kvReserved, -1, float64(max(0, loc.Reserved-max(resv, loc.Used))))
	add(kvFree, -1, float64(loc.Capacity)-pos)
	return segs
}

// pageSegments lays a location out from its requests' block addresses: each page in a
// request's virtual order holds tokens (the last of them partly filled) or is reserved.
// It reports false when the location's requests carry no addresses. The pages are
// bucketed by address into a table kept from one snapshot to the next, so laying out
// a location with thousands of pages takes one pass and no sort.
func (m *kvmap) pageSegments(i int) ([]kvSeg, bool) {
	loc := &m.snap.KV.Locations[i]
	end, paged := 0, false
	for _, h := range m.locs[i] {
		if len(h.Pages) == 0 {
			if h.KBlocks+h.VBlocks > 0 {
				return nil, false
			}
			continue
		}
		paged = true
		for _, pg := range h.Pages {
			if pg < 0 {
				return nil, false
			}
			end = max(end, int(pg)+1)
		}
	}
	if !paged {
		return nil, false
	}
	// owner[page] is 0 for a free page, else 1 + holder×kvKinds + kind.
	owner := slices.Grow(m.pageOwner[:0], end)[:end]
	clear(owner)
	m.pageOwner = owner
	for j, h := range m.locs[i] {
		used := h.KBlocks + h.VBlocks
		for k, pg := range h.Pages {
			kind := kvFull
			switch {
			case k >= used:
				kind = kvReserved
			case k == used-1 && h.Last > 0:
				kind = kvPart
			}
			owner[pg] = int32(1 + j*kvKinds + kind)
		}
	}
	// Neighbouring pages of one kind and request make a run; the gaps are free space.
	var out []kvSeg
	for p := 0; p < end; {
		o, q := owner[p], p+1
		for q < end && owner[q] == o {
			q++
		}
		sg := kvSeg{kind: kvFree, holder: -1, from: float64(p), to: float64(q)}
		if o > 0 {
			sg.kind, sg.holder = int(o-1)%kvKinds, int(o-1)/kvKinds
		}
		out = append(out, sg)
		p = q
	}
	if c := float64(loc.Capacity); c > float64(end) {
		out = append(out, kvSeg{kind: kvFree, holder: -1, from: float64(end), to: c})
	}
	return out, true
}

// cellBlocks is the range of blocks cell c of n covers in location i.
func (m *kvmap) cellBlocks(i, c, n int) (float64, float64) {
	capa := float64(max(1, m.snap.KV.Locations[i].Capacity))
	return capa * float64(c) / float64(n), capa * float64(c+1) / float64(n)
}

// dominant is the segment covering most of [a, b).
func dominant(segs []kvSeg, a, b float64) kvSeg {
	best, bestOv := kvSeg{kind: kvFree, holder: -1}, 0.0
	for _, s := range segs {
		if s.to <= a {
			continue
		}
		if s.from >= b {
			break
		}
		if ov := math.Min(b, s.to) - math.Max(a, s.from); ov > bestOv {
			best, bestOv = s, ov
		}
	}
	return best
}

func (m *kvmap) View() string {
	st := m.c.Styles
	if s, ok := placeholder(m.w, m.h, m.snap); ok {
		return s
	}
	kv := &m.snap.KV
	if len(m.locs) == 0 || kv.Capacity <= 0 {
		return strings.Join(fitLines([]string{st.Faint.render("this system reports no KV cache map")}, m.w, m.h), "\n")
	}
	g := m.geom()
	lines := make([]string, 0, m.h)
	// A request spread over several locations (HeLioS' PEs, LoL-PIM's modules) counts once.
	lines = append(lines, shorten(fmt.Sprintf("%s of %s blocks used · %s reserved · %s",
		thousands(kv.Used), thousands(kv.Capacity), thousands(kv.Reserved), count(len(m.finder), "request")), m.w))
	if g.head > 1 {
		lines = append(lines, st.Faint.render(shorten("block = "+kv.Unit+partSep+bytesText(kv.BlockBytes), m.w)))
	}
	perFlow := g.rows / g.per
	grid := make([]rowBuf, g.rows)
	for f := range g.flows {
		for s := range perFlow {
			i := g.at(m.top, f, s)
			for p := range g.per {
				rb := &grid[s*g.per+p]
				if f > 0 {
					rb.spaces(2)
				}
				if i >= len(m.locs) {
					rb.spaces(g.entryW)
					continue
				}
				m.entry(rb, &g, i, p)
			}
		}
	}
	for i := range grid {
		lines = append(lines, grid[i].line(m.w))
	}
	if g.legend {
		lines = append(lines, m.legend())
	}
	// The location's figures come first; the hint under them gives way to them.
	n := 1
	if g.detail2 {
		n = 2
	}
	d1, d2 := m.detail()
	var a, b []string
	if _, selected := m.finder[m.c.Selected]; selected {
		a, b = explain(d1, d2, m.w, n)
	} else {
		a = flowN(d1, m.w, n)
		b = flowN(d2, m.w, n-len(a))
	}
	for _, l := range a {
		lines = append(lines, st.Bold.render(l))
	}
	lines = append(lines, b...)
	return strings.Join(fitLines(lines, m.w, m.h), "\n")
}

// entry draws line p of location i's bar.
func (m *kvmap) entry(rb *rowBuf, g *kvGeom, i, p int) {
	st := m.c.Styles
	loc := &m.snap.KV.Locations[i]
	start := rb.w
	lp := st.Faint
	if i == m.loc {
		lp = st.Bold + st.Rev
	}
	if p == 0 {
		label := cutWords(loc.Label, g.labelW-1)
		rb.str(lp, label)
		rb.spaces(g.labelW - width(label))
	} else {
		rb.spaces(g.labelW)
	}
	segs := m.segs[i]
	total := g.barW * g.per
	k := 0
	for c := p * g.barW; c < (p+1)*g.barW; c++ {
		a, b := m.cellBlocks(i, c, total)
		for k < len(segs) && segs[k].to <= a {
			k++
		}
		s := dominant(segs[k:], a, b)
		var id int
		if s.holder >= 0 {
			id = m.locs[i][s.holder].Request
		}
		sel := paint("")
		if id != 0 && id == m.c.Selected {
			sel = st.Rev
		}
		switch s.kind {
		case kvFull:
			glyph := '█'
			if s.holder%2 == 1 {
				glyph = '▓'
			}
			rb.cell(st.reqPaint(id).with(sel), glyph)
		case kvPart:
			rb.cell(st.reqPaint(id).with(sel), partGlyph)
		case kvReserved:
			rb.cell((st.reqPaint(id) + st.Faint).with(sel), reserveGlyph)
		default:
			rb.cell(st.Free, freeGlyph)
		}
	}
	if p == 0 {
		rb.str("", fmt.Sprintf(" %4.0f%%", 100*float64(loc.Used)/float64(max(1, loc.Capacity))))
	}
	rb.spaces(g.entryW - (rb.w - start))
}

func (m *kvmap) legend() string {
	st := m.c.Styles
	var rb rowBuf
	rb.cell(st.Req[0], '█')
	rb.cell(st.Req[1], '▓')
	rb.str("", " blocks  ")
	rb.cell(st.Req[0], partGlyph)
	rb.str("", " part-filled  ")
	rb.cell(st.Req[0]+st.Faint, reserveGlyph)
	rb.str("", " reserved  ")
	rb.cell(st.Free, freeGlyph)
	rb.str("", " free")
	return rb.line(m.w)
}

func (m *kvmap) detail() (string, string) {
	loc := &m.snap.KV.Locations[m.loc]
	d1 := fmt.Sprintf("%s · %s · used %s of %s blocks (%s) · reserved %s",
		loc.Label, count(len(m.locs[m.loc]), "request"), thousands(loc.Used), thousands(loc.Capacity),
		pct(float64(loc.Used)/float64(max(1, loc.Capacity))), thousands(loc.Reserved))
	if loc.Note != "" {
		d1 += " · " + loc.Note
	}
	id := m.c.Selected
	p, ok := m.finder[id]
	if !ok {
		hint := "h/l selects a request to highlight its blocks"
		if m.paged {
			hint += "; bars show the blocks' addresses"
		}
		return d1, hint
	}
	h := m.locs[p[0]][p[1]]
	d2 := fmt.Sprintf("request #%s in %s · K %s + V %s blocks · reserved %s · live tokens fill %s of its blocks",
		strconv.Itoa(h.Request), m.snap.KV.Locations[p[0]].Label, thousands(h.KBlocks), thousands(h.VBlocks), thousands(h.Reserved), pct(h.Fill))
	if h.Last > 0 {
		d2 += fmt.Sprintf(" · last block holds %d tokens", h.Last)
	}
	return d1, d2
}
