package ui

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// tlRow is one row of the timeline: a lane, or a group of lanes shown as one (the 32
// PIM channels of NeuPIMs), whose cells show the fraction of its lanes that are busy.
type tlRow struct {
	name  string
	lanes []int
	group bool
}

// timeline is the sub-batch timeline pane: one row per resource, spans coloured by
// sub-batch and labelled by operation, bubbles hatched. Zoomed out, each column shows
// the span that covers most of it, so a frame costs one pass over the spans however
// many there are.
type timeline struct {
	c    *Common
	w, h int
	snap *sim.Snapshot

	byLane  [][]int // span indices per lane, in time order
	bubLane [][]int // bubble indices per lane, in time order
	busy    []sim.Time
	layers  [][2]sim.Time // per layer: first start, last end
	sbUsed  [3]bool
	crit    []bool // per span: on the critical path

	rows     []tlRow
	expanded bool
	t0, t1   sim.Time // the window shown
	fit      bool     // the window follows the whole iteration
	cursor   sim.Time
	row, top int
	layer    int // selected layer, -1 = all
}

func newTimeline(c *Common) *timeline { return &timeline{c: c, fit: true, layer: -1} }

func (m *timeline) SetSize(w, h int) {
	m.w, m.h = w, h
	m.scrollRows()
}

func (m *timeline) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	tl := &s.Timeline
	n := len(tl.Lanes)
	// Index the spans and bubbles by lane in one pass over each, into last step's
	// slices: an iteration's lanes hold about what the last one's did, so they seldom
	// grow, and the spans, hundreds of kilobytes, are read once.
	m.byLane, m.bubLane = laneSlices(m.byLane, n), laneSlices(m.bubLane, n)
	m.busy = slices.Grow(m.busy[:0], n)[:n]
	clear(m.busy)
	m.sbUsed = [3]bool{}
	m.layers = m.layers[:0]
	for len(m.layers) < tl.Layers {
		m.layers = append(m.layers, [2]sim.Time{-1, -1})
	}
	for i := range tl.Spans {
		sp := &tl.Spans[i]
		for len(m.layers) <= sp.Layer {
			m.layers = append(m.layers, [2]sim.Time{-1, -1})
		}
		if sp.Lane < 0 || sp.Lane >= n {
			continue
		}
		m.byLane[sp.Lane] = append(m.byLane[sp.Lane], i)
		m.busy[sp.Lane] += sp.Dur
		m.sbUsed[clamp(sp.SubBatch, 0, 2)] = true
		if sp.Layer >= 0 {
			e := &m.layers[sp.Layer]
			if e[0] < 0 || sp.Start < e[0] {
				e[0] = sp.Start
			}
			e[1] = max(e[1], sp.End())
		}
	}
	for i := range tl.Bubbles {
		if l := tl.Bubbles[i].Lane; l >= 0 && l < n {
			m.bubLane[l] = append(m.bubLane[l], i)
		}
	}
	// Spans on a lane never overlap; the scheduler emits them in time order, but the
	// column pass in cells relies on it, so make sure.
	for l := range n {
		sp := m.byLane[l]
		for k := 1; k < len(sp); k++ {
			if tl.Spans[sp[k]].Start < tl.Spans[sp[k-1]].Start {
				sort.SliceStable(sp, func(i, j int) bool { return tl.Spans[sp[i]].Start < tl.Spans[sp[j]].Start })
				break
			}
		}
		bb := m.bubLane[l]
		for k := 1; k < len(bb); k++ {
			if tl.Bubbles[bb[k]].Start < tl.Bubbles[bb[k-1]].Start {
				sort.SliceStable(bb, func(i, j int) bool { return tl.Bubbles[bb[i]].Start < tl.Bubbles[bb[j]].Start })
				break
			}
		}
	}
	if m.layer >= len(m.layers) {
		m.layer = -1
	}
	m.markCritical()
	m.buildRows()
	m.place()
}

// laneSlices is idx for n lanes, each emptied but keeping its array.
func laneSlices(idx [][]int, n int) [][]int {
	if cap(idx) < n {
		idx = append(idx[:cap(idx)], make([][]int, n-cap(idx))...)
	}
	idx = idx[:n]
	for l := range idx {
		idx[l] = idx[l][:0]
	}
	return idx
}

// place fits the window to the new iteration: the whole of it, the selected layer, or
// the user's zoom clamped to the iteration.
func (m *timeline) place() {
	end := m.end()
	switch {
	case m.layer >= 0:
		m.t0, m.t1 = m.layerWindow(m.layer)
	case m.fit || m.t1 <= m.t0:
		m.t0, m.t1 = 0, end
	default:
		w := min(m.t1-m.t0, end)
		m.t0 = clamp64(m.t0, 0, end-w)
		m.t1 = m.t0 + w
	}
	m.cursor = clamp64(m.cursor, m.t0, max(m.t0, m.t1-1))
}

func (m *timeline) end() sim.Time {
	if m.snap == nil {
		return 1
	}
	return max(1, m.snap.Timeline.Makespan)
}

func (m *timeline) layerWindow(l int) (sim.Time, sim.Time) {
	e := m.layers[l]
	if e[0] < 0 {
		return 0, m.end()
	}
	pad := (e[1] - e[0]) / 50
	return max(0, e[0]-pad), min(m.end(), e[1]+pad)
}

func (m *timeline) buildRows() {
	tl := &m.snap.Timeline
	m.rows = m.rows[:0]
	for i := 0; i < len(tl.Lanes); {
		j := i + 1
		for j < len(tl.Lanes) && tl.Lanes[j].Group == tl.Lanes[i].Group {
			j++
		}
		if j-i >= 4 {
			lanes := make([]int, 0, j-i)
			for l := i; l < j; l++ {
				lanes = append(lanes, l)
			}
			m.rows = append(m.rows, tlRow{name: groupName(tl.Lanes[i:j]), lanes: lanes, group: true})
			if m.expanded {
				for _, l := range lanes {
					m.rows = append(m.rows, tlRow{name: tl.Lanes[l].Name, lanes: []int{l}})
				}
			}
		} else {
			for l := i; l < j; l++ {
				m.rows = append(m.rows, tlRow{name: tl.Lanes[l].Name, lanes: []int{l}})
			}
		}
		i = j
	}
	m.row = clamp(m.row, 0, max(0, len(m.rows)-1))
	m.scrollRows()
}

// groupName names a run of lanes by what their names share: "PIM ch0".."PIM ch31" → "PIM ×32".
func groupName(lanes []sim.Lane) string {
	p := lanes[0].Name
	for _, l := range lanes[1:] {
		for !strings.HasPrefix(l.Name, p) {
			p = p[:len(p)-1]
		}
	}
	if i := strings.LastIndexByte(p, ' '); i > 0 {
		p = p[:i]
	}
	// "PE(0,0)".."PE(3,3)" share "PE(": keep the name, not the punctuation.
	p = strings.TrimRightFunc(p, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if p == "" {
		p = strings.ToUpper(lanes[0].Group)
	}
	return p + " ×" + strconv.Itoa(len(lanes))
}

func (m *timeline) Title() string {
	t := "2 Timeline"
	if m.snap == nil {
		return t
	}
	t += " · iteration " + m.snap.IterTime.String() + " · bubbles " + pctInt(m.snap.Metrics.BubbleShare)
	if m.layer >= 0 {
		t += fmt.Sprintf(" · layer %d of %d", m.layer, len(m.layers))
	}
	if z := float64(m.end()) / float64(max(1, m.t1-m.t0)); z > 1.01 {
		t += fmt.Sprintf(" · zoom ×%.3g", z)
	}
	return t
}

func (m *timeline) ShortHelp() []key.Binding {
	return []key.Binding{helpOnly("]/[", "zoom"), helpOnly("</>", "layer"), helpOnly("h/l", "time"), helpOnly("j/k", "lane"), helpOnly("x", "lanes"),
		m.c.Keys.Largest}
}

func (m *timeline) FullHelp() [][]key.Binding {
	return [][]key.Binding{{helpOnly("h/l", "time cursor"), helpOnly("j/k ↑/↓", "lane"), helpOnly("]", "zoom in"), helpOnly("[", "zoom out"),
		helpOnly("0", "whole iteration"), helpOnly("H/L ⇧←/⇧→", "pan"), helpOnly("< >", "previous/next layer"),
		helpOnly("x, enter", "unfold/fold a lane group"), helpOnly("wheel", "zoom")}}
}

// layout of the pane's lines.
type tlGeom struct {
	labelW, cw      int
	ruler           bool
	lanes           int // rows of lanes shown
	rowH            int // lines per row
	legend, detail2 bool
	pctCol          bool
}

func (m *timeline) geom() tlGeom {
	g := tlGeom{rowH: 1}
	name := 4
	for _, r := range m.rows {
		name = max(name, utf8.RuneCountInString(r.name))
	}
	g.labelW = name + 2
	if m.w-g.labelW-6 >= 20 {
		g.pctCol = true
		g.labelW += 6
	}
	g.cw = max(1, m.w-g.labelW)
	// The cursor's explanation stays under the lanes: lanes scroll before it goes.
	fixed := 2 // axis and the explanation's first line
	if m.h >= 5 {
		g.ruler = true
		fixed++
	}
	if m.h >= 7 {
		g.detail2 = true
		fixed++
	}
	if m.h >= 8 {
		g.legend = true
		fixed++
	}
	room := max(0, m.h-fixed)
	g.lanes = min(len(m.rows), room)
	// Spare lines thicken the bars: a group row becomes a bar chart of its busy lanes.
	if len(m.rows) > 0 {
		g.rowH = clamp(room/len(m.rows), 1, 6)
	}
	if g.rowH > 1 {
		g.lanes = len(m.rows)
	}
	return g
}

// clipped is how many rows are scrolled out of view above and below.
func (m *timeline) clipped(g *tlGeom) (above, below int) {
	return m.top, max(0, len(m.rows)-m.top-g.lanes)
}

func (m *timeline) scrollRows() {
	n := m.geom().lanes
	if n <= 0 {
		m.top = 0
		return
	}
	m.top = clamp(m.top, max(0, m.row-n+1), m.row)
	m.top = clamp(m.top, 0, max(0, len(m.rows)-n))
}

// colTime is where column c starts.
func (m *timeline) colTime(c, cw int) sim.Time {
	return m.t0 + sim.Time(int64(m.t1-m.t0)*int64(c)/int64(cw))
}

func (m *timeline) timeCol(t sim.Time, cw int) int {
	if m.t1 <= m.t0 {
		return 0
	}
	return int(int64(t-m.t0) * int64(cw) / int64(m.t1-m.t0))
}

func (m *timeline) zoom(f float64, anchor sim.Time) {
	end := m.end()
	span := m.t1 - m.t0
	minSpan := sim.Time(max(1, m.geom().cw)) * 10 * sim.Picosecond
	ns := sim.Time(math.Round(float64(span) / f))
	ns = clamp64(ns, min(minSpan, end), end)
	anchor = clamp64(anchor, m.t0, m.t1)
	t0 := anchor - sim.Time(float64(anchor-m.t0)*float64(ns)/float64(max(1, span)))
	m.t0 = clamp64(t0, 0, end-ns)
	m.t1 = m.t0 + ns
	m.fit = m.t0 == 0 && m.t1 == end
	m.layer = -1
	m.cursor = clamp64(m.cursor, m.t0, m.t1-1)
}

func (m *timeline) pan(d sim.Time) {
	span := m.t1 - m.t0
	m.t0 = clamp64(m.t0+d, 0, m.end()-span)
	m.t1 = m.t0 + span
	m.fit = m.t0 == 0 && m.t1 == m.end()
	m.cursor = clamp64(m.cursor+d, m.t0, m.t1-1)
}

func (m *timeline) Update(msg tea.Msg) (pane, tea.Cmd) {
	if m.snap == nil || len(m.rows) == 0 {
		return m, nil
	}
	k := m.c.Keys
	g := m.geom()
	step := max(1, (m.t1-m.t0)/sim.Time(g.cw))
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Left):
			m.moveCursor(-step)
		case key.Matches(msg, k.Right):
			m.moveCursor(step)
		case key.Matches(msg, k.Up):
			m.row = max(0, m.row-1)
		case key.Matches(msg, k.Down):
			m.row = min(len(m.rows)-1, m.row+1)
		case key.Matches(msg, k.ZoomIn):
			m.zoom(2, m.cursor)
		case key.Matches(msg, k.ZoomOut):
			m.zoom(0.5, m.cursor)
		case key.Matches(msg, k.Fit):
			m.layer, m.fit = -1, true
			m.place()
		case key.Matches(msg, k.PanLeft):
			m.pan(-(m.t1 - m.t0) / 2)
		case key.Matches(msg, k.PanRight):
			m.pan((m.t1 - m.t0) / 2)
		case key.Matches(msg, k.NextLayer), key.Matches(msg, k.PrevLayer):
			if len(m.layers) == 0 {
				break
			}
			d := 1
			if key.Matches(msg, k.PrevLayer) {
				d = -1
			}
			// -1 (all layers) sits between the last layer and the first.
			m.layer = (m.layer+1+d+len(m.layers)+1)%(len(m.layers)+1) - 1
			if m.layer < 0 {
				m.fit = true
			}
			m.place()
			if m.layer >= 0 {
				m.cursor = m.layers[m.layer][0]
			}
		case key.Matches(msg, k.Expand), key.Matches(msg, k.Enter) && m.rows[m.row].group:
			name := m.rows[m.row].name
			m.expanded = !m.expanded
			m.buildRows()
			for i, r := range m.rows {
				if r.name == name {
					m.row = i
				}
			}
		}
		m.scrollRows()
	case tea.MouseClickMsg:
		row, c := msg.Y, msg.X-g.labelW
		if g.ruler {
			row--
		}
		if row >= 0 && row < g.lanes*g.rowH {
			m.row = min(len(m.rows)-1, m.top+row/g.rowH)
		}
		if c >= 0 && c < g.cw {
			m.cursor = (m.colTime(c, g.cw) + m.colTime(c+1, g.cw)) / 2
		}
	case tea.MouseWheelMsg:
		c := clamp(msg.X-g.labelW, 0, g.cw-1)
		anchor := (m.colTime(c, g.cw) + m.colTime(c+1, g.cw)) / 2
		switch msg.Button {
		case tea.MouseWheelUp:
			m.zoom(1.25, anchor)
		case tea.MouseWheelDown:
			m.zoom(0.8, anchor)
		case tea.MouseWheelLeft:
			m.pan(-(m.t1 - m.t0) / 8)
		case tea.MouseWheelRight:
			m.pan((m.t1 - m.t0) / 8)
		}
	}
	return m, nil
}

func (m *timeline) moveCursor(d sim.Time) {
	m.cursor = clamp64(m.cursor+d, 0, m.end()-1)
	if m.cursor < m.t0 {
		m.pan(m.cursor - m.t0)
	} else if m.cursor >= m.t1 {
		m.pan(m.cursor - m.t1 + 1)
	}
}

// Cell kinds of a rendered lane row.
const (
	cellNone   uint8 = iota // nothing ran and nothing waited: outside the lane's work
	cellSpan                // busy throughout (to the nearest eighth of a line)
	cellPart                // busy part of the time: a bar as tall as the busy share
	cellBubble              // idle throughout, waiting
)

// scratch holds per-column buffers reused across the rows of one frame.
type scratch struct {
	kind  []uint8
	level []int
	idx   []int
	ov    []sim.Time
	busy  []sim.Time
	sbw   [][3]sim.Time
	bubbl []bool
}

func newScratch(cw int) *scratch {
	return &scratch{kind: make([]uint8, cw), level: make([]int, cw), idx: make([]int, cw), ov: make([]sim.Time, cw),
		busy: make([]sim.Time, cw), sbw: make([][3]sim.Time, cw), bubbl: make([]bool, cw)}
}

func (s *scratch) reset() {
	for c := range s.kind {
		s.kind[c], s.level[c], s.idx[c], s.ov[c], s.busy[c], s.sbw[c], s.bubbl[c] = cellNone, 0, -1, 0, 0, [3]sim.Time{}, false
	}
}

// cells fills s for lane l: per column the span covering most of it, the busy time and
// the time per sub-batch; and whether a bubble touches the column. It visits, column by
// column, every span of the lane that overlaps the window, with how much of the column
// it covers; spans on a lane never overlap, so one pass over the lane's spans serves
// every column.
func (m *timeline) cells(l, cw int, s *scratch) {
	tl := &m.snap.Timeline
	spans := m.byLane[l]
	i := sort.Search(len(spans), func(i int) bool { return tl.Spans[spans[i]].End() > m.t0 })
	a := m.colTime(0, cw)
	for c := 0; c < cw && i < len(spans); c++ {
		b := m.colTime(c+1, cw)
		for i < len(spans) && tl.Spans[spans[i]].End() <= a {
			i++
		}
		for _, k := range spans[i:] {
			sp := &tl.Spans[k]
			if sp.Start >= b {
				break
			}
			ov := min(b, sp.End()) - max(a, sp.Start)
			s.busy[c] += ov
			s.sbw[c][clamp(sp.SubBatch, 0, 2)] += ov
			if ov > s.ov[c] {
				s.idx[c], s.ov[c] = k, ov
			}
		}
		a = b
	}
	bubs := m.bubLane[l]
	bi := sort.Search(len(bubs), func(i int) bool { b := tl.Bubbles[bubs[i]]; return b.Start+b.Dur > m.t0 })
	for c := 0; c < cw && bi < len(bubs); c++ {
		a, b := m.colTime(c, cw), m.colTime(c+1, cw)
		for bi < len(bubs) && tl.Bubbles[bubs[bi]].Start+tl.Bubbles[bubs[bi]].Dur <= a {
			bi++
		}
		if bi < len(bubs) && tl.Bubbles[bubs[bi]].Start < b {
			s.bubbl[c] = true
		}
	}
}

func (m *timeline) View() string {
	st := m.c.Styles
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	if m.snap == nil || len(m.rows) == 0 {
		return strings.Join(fitLines([]string{"waiting for the first step…"}, m.w, m.h), "\n")
	}
	g := m.geom()
	lines := make([]string, 0, m.h)
	curCol := m.timeCol(m.cursor, g.cw)
	if g.ruler {
		lines = append(lines, m.ruler(&g))
	}
	s := newScratch(g.cw)
	for r := m.top; r < m.top+g.lanes && r < len(m.rows); r++ {
		lines = append(lines, m.rowLines(&g, r, r == m.row, curCol, s)...)
	}
	lines = append(lines, m.axis(&g, curCol))
	if g.legend {
		lines = append(lines, m.legend())
	}
	// The explanation takes the lines left: two pinned, and any spare.
	n := 1
	if g.detail2 {
		n = max(2, m.h-len(lines))
	}
	d1, d2 := m.detail()
	a, b := explain(d1, d2, m.w, n)
	for _, l := range a {
		lines = append(lines, fitLine(st.Bold.render(l), m.w))
	}
	for _, l := range b {
		lines = append(lines, fitLine(st.Faint.render(l), m.w))
	}
	// The ruler, rows, axis and legend are built to the pane's width already.
	return strings.Join(padLines(lines, m.w, m.h), "\n")
}

// label is the row's name and busy share, or blank for the extra lines of a thick row.
func (m *timeline) label(g *tlGeom, r int, cur, first bool) string {
	st := m.c.Styles
	row := m.rows[r]
	var rb rowBuf
	if !first {
		rb.spaces(g.labelW - 1)
		rb.str(st.Faint, "│")
		return rb.line(g.labelW)
	}
	p := paint("")
	if cur {
		p = st.Rev
	}
	rb.str(p, row.name)
	pad := g.labelW - 1 - rb.w
	if g.pctCol {
		var b sim.Time
		for _, l := range row.lanes {
			b += m.busy[l]
		}
		f := float64(b) / float64(len(row.lanes)) / float64(m.end())
		rb.spaces(pad - 6)
		rb.str(st.Faint, fmt.Sprintf("%5.0f%%", 100*f))
		pad = 0
	}
	rb.spaces(pad)
	rb.str(st.Faint, "│")
	return rb.line(g.labelW)
}

// rowLines draws row r over g.rowH lines.
func (m *timeline) rowLines(g *tlGeom, r int, cur bool, curCol int, s *scratch) []string {
	st := m.c.Styles
	tl := &m.snap.Timeline
	row := m.rows[r]
	curP := func(c int) paint {
		if cur && c == curCol {
			return st.Rev
		}
		return ""
	}
	s.reset()
	for _, l := range row.lanes {
		m.cells(l, g.cw, s)
	}
	end := m.end()
	out := make([]string, g.rowH)
	if row.group {
		// A bar chart of the share of busy lanes, eighths of a line per step. A thick row
		// gives its first line to the critical path where it runs on one of the lanes.
		levels := 8 * g.rowH
		var crit []bool
		if g.rowH > 1 {
			crit = m.criticalCols(row.lanes, g.cw)
		}
		for i := range out {
			var rb rowBuf
			rb.styled(m.label(g, r, cur, i == 0))
			below := 8 * (g.rowH - 1 - i)
			for c := range g.cw {
				width := m.colTime(c+1, g.cw) - m.colTime(c, g.cw)
				f := float64(s.busy[c]) / float64(len(row.lanes)) / float64(max(1, width))
				sb := 0
				for x := 1; x < 3; x++ {
					if s.sbw[c][x] > s.sbw[c][sb] {
						sb = x
					}
				}
				p := st.SBFg[sb]
				if m.layer >= 0 && s.idx[c] >= 0 && tl.Spans[s.idx[c]].Layer != m.layer {
					p += st.Faint
				}
				lv := 0
				if f > 0 {
					lv = max(1, int(math.Round(f*float64(levels))))
				}
				switch {
				case i == 0 && crit != nil && crit[c]:
					rb.cell(st.Bold.with(curP(c)), critGlyph)
				case lv > below:
					rb.cell(p.with(curP(c)), barGlyphs[min(8, lv-below)])
				case f == 0 && s.bubbl[c] && i == g.rowH-1:
					rb.cell(st.Bubble.with(curP(c)), bubbleGlyph)
				default:
					rb.cell(curP(c), ' ')
				}
			}
			out[i] = rb.line(m.w)
		}
		return out
	}
	// Each cell shows the share of its time range the lane was busy: a span's fill when
	// busy throughout, a bar of eighths when busy part of the time, however narrow the
	// spans, and the bubble hatch only when it was idle throughout.
	// A cell busy to within an eighth of a line is a span's, whatever the row's height,
	// so it keeps its sub-batch's fill and label.
	levels := 8 * g.rowH
	for c := range g.cw {
		width := m.colTime(c+1, g.cw) - m.colTime(c, g.cw)
		s.level[c] = busyLevel(s.busy[c], width, levels)
		switch {
		case busyLevel(s.busy[c], width, 8) == 8:
			s.kind[c] = cellSpan
		case s.level[c] > 0:
			s.kind[c] = cellPart
		case s.bubbl[c] && m.colTime(c, g.cw) < end:
			s.kind[c] = cellBubble
		}
	}
	for i := range out {
		var rb rowBuf
		rb.styled(m.label(g, r, cur, i == 0))
		below := 8 * (g.rowH - 1 - i)
		for c := 0; c < g.cw; {
			if s.kind[c] == cellPart {
				m.partCell(&rb, s, c, i == 0 && g.rowH > 1, s.level[c]-below, curP(c))
				c++
				continue
			}
			e := c + 1
			for e < g.cw && s.kind[e] == s.kind[c] && sameSpanKey(tl, s.kind[c], s.idx[c], s.idx[e]) && m.critical(s.idx[c]) == m.critical(s.idx[e]) {
				e++
			}
			m.segment(&rb, s, c, e, i == 0, curP)
			c = e
		}
		out[i] = rb.line(m.w)
	}
	return out
}

// busyLevel is busy time over a cell's width in levels steps, at least one for any busy
// time at all.
func busyLevel(busy, width sim.Time, levels int) int {
	if busy <= 0 {
		return 0
	}
	f := float64(busy) / float64(max(1, width))
	return clamp(int(math.Round(f*float64(levels))), 1, levels)
}

// partCell draws a cell busy part of the time: on each line of the row, the part of a
// bar lv eighths high that reaches it (lv counted from the line's bottom), in the
// colour of the sub-batch that ran longest there, hatched above when the lane waited in
// the rest of the cell; the critical path marks the first line of a thick row (crit).
func (m *timeline) partCell(rb *rowBuf, s *scratch, c int, crit bool, lv int, cur paint) {
	st := m.c.Styles
	sb := 0
	for x := 1; x < 3; x++ {
		if s.sbw[c][x] > s.sbw[c][sb] {
			sb = x
		}
	}
	p := st.SBFg[sb]
	if m.layer >= 0 && s.idx[c] >= 0 && m.snap.Timeline.Spans[s.idx[c]].Layer != m.layer {
		p += st.Faint
	}
	switch {
	case crit && m.critical(s.idx[c]):
		rb.cell(st.Bold.with(cur), critGlyph)
	case lv > 0:
		rb.cell(p.with(cur), barGlyphs[min(8, lv)])
	case s.bubbl[c]:
		// Above the bar, the idle share of a cell that waited part of the time.
		rb.cell(st.Bubble.with(cur), bubbleGlyph)
	default:
		rb.cell(cur, ' ')
	}
}

// segment draws columns [c, e) that show the same thing; labels and the critical path go
// on the first line.
func (m *timeline) segment(rb *rowBuf, s *scratch, c, e int, first bool, curP func(int) paint) {
	st := m.c.Styles
	tl := &m.snap.Timeline
	switch s.kind[c] {
	case cellSpan:
		sp := &tl.Spans[s.idx[c]]
		sb := clamp(sp.SubBatch, 0, 2)
		p := st.SB[sb]
		fill := ' '
		if !m.c.Color {
			p, fill = "", sbGlyphs[sb]
		}
		// The critical path marks the first line of a row: the lines below keep the
		// sub-batch fill.
		if first && m.critical(s.idx[c]) {
			p, fill = p+st.Bold, critGlyph
		}
		if m.layer >= 0 && sp.Layer != m.layer {
			p += st.Faint
		}
		var label []rune
		if first {
			label = []rune(sp.Name)
			if n := e - c; n < len(label) && n < 4 {
				label = nil
			}
		}
		for x := c; x < e; x++ {
			ch := fill
			if x-c < len(label) {
				ch = label[x-c]
			}
			rb.cell(p.with(curP(x)), ch)
		}
	case cellBubble:
		for x := c; x < e; x++ {
			rb.cell(st.Bubble.with(curP(x)), bubbleGlyph)
		}
	default:
		for x := c; x < e; x++ {
			rb.cell(curP(x), ' ')
		}
	}
}

// sameSpanKey reports whether two columns show the same operation, so they merge into
// one labelled segment.
func sameSpanKey(tl *sim.Timeline, k uint8, a, b int) bool {
	if k != cellSpan {
		return true
	}
	if a == b {
		return true
	}
	x, y := &tl.Spans[a], &tl.Spans[b]
	return x.Name == y.Name && x.SubBatch == y.SubBatch && x.Layer == y.Layer
}

// ruler marks the stage boundaries (A–F of an interleaved schedule) or, for serial
// schedules, where each layer starts.
func (m *timeline) ruler(g *tlGeom) string {
	st := m.c.Styles
	buf := []rune(strings.Repeat(" ", g.cw))
	free := 0
	put := func(t sim.Time, name string) {
		if t < m.t0 || t >= m.t1 {
			return
		}
		c, n := m.timeCol(t, g.cw), utf8.RuneCountInString(name)
		if c < free || c+n > g.cw {
			return
		}
		copy(buf[c:], []rune(name))
		free = c + n + 1
	}
	what := "layers"
	if stages := m.snap.Timeline.Stages; len(stages) > 0 {
		what = "stages"
		for _, s := range stages {
			if s.Start >= 0 {
				put(s.Start, "▏"+s.Name)
			}
		}
	} else {
		for l, e := range m.layers {
			if e[0] >= 0 {
				put(e[0], "▏L"+strconv.Itoa(l))
			}
		}
	}
	left, lp := what, st.Faint
	if m.layer >= 0 {
		left = "layer " + strconv.Itoa(m.layer)
	}
	if above, _ := m.clipped(g); above > 0 {
		left, lp = "↑"+strconv.Itoa(above)+" more", st.Bold
	}
	var rb rowBuf
	if g.pctCol && width(left)+len(wordBusy)+2 <= g.labelW {
		// The rows' figures are busy shares: the word heads their column.
		rb.str(lp, fitLine(left, g.labelW-len(wordBusy)-1))
		rb.str(st.Faint, wordBusy+" ")
	} else {
		rb.str(lp, fitLine(left, g.labelW))
	}
	rb.str(st.Faint, string(buf))
	return rb.line(m.w)
}

// axis labels the window with times from the start of the iteration.
func (m *timeline) axis(g *tlGeom, curCol int) string {
	st := m.c.Styles
	buf := []rune(strings.Repeat(" ", g.cw))
	span := m.t1 - m.t0
	step := niceStep(span * 10 / sim.Time(max(1, g.cw)))
	free := 0
	for t := (m.t0 + step - 1) / step * step; t < m.t1; t += step {
		c := m.timeCol(t, g.cw)
		label := []rune("╵" + tickText(t, step))
		// The cursor's ▲ may take a tick's mark but never a character of its text.
		if c < free || c+len(label) > g.cw || curCol > c && curCol < c+len(label) {
			continue
		}
		copy(buf[c:], label)
		free = c + len(label) + 1
	}
	var rb rowBuf
	left, lp := "time", st.Faint
	switch above, below := m.clipped(g); {
	case above > 0 && !g.ruler:
		left, lp = fmt.Sprintf("↑%d ↓%d more", above, below), st.Bold
	case below > 0:
		left, lp = "↓"+strconv.Itoa(below)+" more", st.Bold
	}
	rb.str(lp, fitLine(left, g.labelW))
	if curCol < 0 || curCol >= g.cw {
		rb.str(st.Faint, string(buf))
		return rb.line(m.w)
	}
	rb.str(st.Faint, string(buf[:curCol]))
	rb.cell(st.Bold, '▲')
	rb.str(st.Faint, string(buf[curCol+1:]))
	return rb.line(m.w)
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten picoseconds.
func niceStep(d sim.Time) sim.Time {
	s := sim.Time(1)
	for {
		for _, f := range []sim.Time{1, 2, 5} {
			if s*f >= d {
				return s * f
			}
		}
		s *= 10
	}
}

// tickText formats t in the unit of the tick step, with as many decimals as it needs.
func tickText(t, step sim.Time) string {
	units := []struct {
		u    sim.Time
		name string
	}{{sim.Second, "s"}, {sim.Millisecond, "ms"}, {sim.Microsecond, "µs"}, {sim.Nanosecond, "ns"}, {sim.Picosecond, "ps"}}
	u := units[len(units)-1]
	for _, x := range units {
		if step >= x.u || (t >= x.u && step*10 >= x.u) {
			u = x
			break
		}
	}
	dec := 0
	for q := step; q < u.u && dec < 3; q *= 10 {
		dec++
	}
	if t == 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(t)/float64(u.u), 'f', dec, 64) + u.name
}

// legend explains the glyphs, most needed first; what does not fit is left out whole.
func (m *timeline) legend() string {
	st := m.c.Styles
	type item struct {
		glyph rune
		p     paint
		text  string
	}
	var items []item
	names := [3]string{"batch", "SB1", "SB2"}
	for i, used := range m.sbUsed {
		if !used {
			continue
		}
		if m.c.Color {
			items = append(items, item{' ', st.SB[i], names[i]})
		} else {
			items = append(items, item{sbGlyphs[i], "", names[i]})
		}
	}
	items = append(items, item{bubbleGlyph, st.Bubble, "bubble"}, item{0, st.Faint, "▁▄█ busy share"})
	if len(m.snap.Timeline.Critical) > 0 {
		items = append(items, item{critGlyph, st.Bold, "critical path"})
	}
	items = append(items, item{0, st.Faint, fmt.Sprintf("window %s–%s", fmtTime(m.t0), fmtTime(m.t1))})
	var rb rowBuf
	for _, it := range items {
		n := width(it.text) + 2
		if it.glyph != 0 {
			n += 2
		}
		if rb.w+n-2 > m.w {
			continue
		}
		if it.glyph != 0 {
			rb.cell(it.p, it.glyph)
			rb.str("", " "+it.text+"  ")
		} else {
			rb.str(it.p, it.text+"  ")
		}
	}
	return rb.line(m.w)
}

func (m *timeline) hasGroup() bool {
	for _, r := range m.rows {
		if r.group {
			return true
		}
	}
	return false
}

// detail describes what is under the cursor: a span, a bubble and its cause, or a
// group's share of busy lanes.
func (m *timeline) detail() (string, string) {
	tl := &m.snap.Timeline
	row := m.rows[m.row]
	t := m.cursor
	at := " at " + fmtTime(t)
	if row.group {
		busy := 0
		counts := map[string]int{}
		top := ""
		for _, l := range row.lanes {
			if i := m.spanAt(l, t); i >= 0 {
				busy++
				k := spanName(&tl.Spans[i])
				counts[k]++
				if counts[k] > counts[top] {
					top = k
				}
			}
		}
		d := fmt.Sprintf("%s%s: %d of %d lanes busy", row.name, at, busy, len(row.lanes))
		if top != "" {
			d += " · most run " + top
		}
		hint := "x expands the group into one row per lane"
		if m.expanded {
			hint = "x folds the lanes back into their group"
		}
		if c := m.criticalAt(t); c >= 0 && slices.Contains(row.lanes, tl.Spans[c].Lane) {
			hint = "critical path here: " + spanName(&tl.Spans[c]) + " on " + tl.Lanes[tl.Spans[c].Lane].Name + " · " + hint
		}
		return d, hint
	}
	l := row.lanes[0]
	lane := tl.Lanes[l].Name
	if i := m.spanAt(l, t); i >= 0 {
		sp := &tl.Spans[i]
		d := fmt.Sprintf("%s on %s · start %s · duration %s", spanName(sp), lane, fmtTime(sp.Start), sp.Dur)
		if m.critical(i) {
			d += " · on the critical path"
		}
		var more []string
		if sp.FLOPs > 0 {
			more = append(more, si(sp.FLOPs)+" FLOP")
		}
		if sp.Bytes > 0 {
			more = append(more, bytesText(sp.Bytes)+" over the memory bus")
		}
		if sp.By >= 0 && sp.By < len(tl.Spans) && sp.By != i {
			by := &tl.Spans[sp.By]
			more = append(more, "started when "+spanName(by)+" on "+tl.Lanes[by.Lane].Name+" ended")
		}
		return d, strings.Join(more, " · ")
	}
	if i := m.bubbleAt(l, t); i >= 0 {
		b := tl.Bubbles[i]
		return fmt.Sprintf("bubble on %s · start %s · duration %s · %s", lane, fmtTime(b.Start), b.Dur, causeLabel(b.Cause)),
			sim.BubbleText(tl, b)
	}
	return lane + at + ": idle", ""
}

func spanName(sp *sim.Span) string {
	s := sp.Name
	if sp.SubBatch > 0 {
		s += " SB" + strconv.Itoa(sp.SubBatch)
	}
	return s + " (layer " + strconv.Itoa(sp.Layer) + ")"
}

func (m *timeline) spanAt(l int, t sim.Time) int {
	tl := &m.snap.Timeline
	sp := m.byLane[l]
	i := sort.Search(len(sp), func(i int) bool { return tl.Spans[sp[i]].End() > t })
	if i < len(sp) && tl.Spans[sp[i]].Start <= t {
		return sp[i]
	}
	return -1
}

func (m *timeline) bubbleAt(l int, t sim.Time) int {
	tl := &m.snap.Timeline
	bb := m.bubLane[l]
	i := sort.Search(len(bb), func(i int) bool { b := tl.Bubbles[bb[i]]; return b.Start+b.Dur > t })
	if i < len(bb) && tl.Bubbles[bb[i]].Start <= t {
		return bb[i]
	}
	return -1
}

func clamp64(v, lo, hi sim.Time) sim.Time {
	return min(max(v, lo), hi)
}
