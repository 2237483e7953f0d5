package ui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// The mesh view of the bank heatmap: a mesh of processing elements (HeLioS' PEs under
// their stacked DRAM dies) drawn as the mesh it is. Each tile is one PE's banks, a line
// per die (die 0 on top) or per group of dies when lines are short; the NoC links between
// neighbouring tiles are shaded by the NoC's busy share.

// meshGeom places the mesh in the pane.
type meshGeom struct {
	labelW    int  // "x0 " before each row of tiles
	tw, th    int  // tile width in cells and height in lines
	fc        int  // banks of a die per cell
	dpl       int  // dies per tile line
	links     bool // a line of vertical links between rows of tiles
	dies, bpd int  // dies, and banks of a PE on each
}

const meshGap = 3 // " ─ " between tiles

// meshLayout fits the mesh in the pane, largest tiles first; ok is false when even one
// line and one cell a tile do not fit.
func (m *heatmap) meshLayout() (q meshGeom, ok bool) {
	g := &m.snap.Banks
	q.dies = max(1, g.Dies)
	if g.Cols%q.dies != 0 {
		q.dies = 1
	}
	q.bpd = g.Cols / q.dies
	q.labelW = len("x"+strconv.Itoa(g.MeshRows-1)) + 1
	room := m.h - m.extraLines() - 1 // the column labels
	if len(m.sysUnits()) > 0 {
		room--
	}
	cellW := 1
	if m.mode == modeBoth {
		cellW = 2
	}
	for fc := 1; fc <= q.bpd; fc++ {
		if q.bpd%fc != 0 {
			continue
		}
		if w := q.labelW + g.MeshCols*(q.bpd/fc)*cellW + (g.MeshCols-1)*meshGap; w <= m.w {
			q.fc, q.tw = fc, q.bpd/fc
			break
		}
	}
	if q.tw == 0 {
		return q, false
	}
	for th := q.dies; th >= 1; th-- {
		if q.dies%th != 0 {
			continue
		}
		for _, links := range []bool{true, false} {
			n := g.MeshRows * th
			if links {
				n += g.MeshRows - 1
			}
			if n <= room {
				q.th, q.dpl, q.links = th, q.dies/th, links
				return q, true
			}
		}
	}
	return q, false
}

// nocBusy is the busy share of the mesh's NoC between PEs, -1 when the system gives none.
func (m *heatmap) nocBusy() float64 {
	for _, u := range m.snap.Banks.Units {
		if u.Level == sim.UnitSystem && strings.Contains(u.Name, "NoC") && len(u.Busy) == 1 {
			return u.Busy[0]
		}
	}
	return -1
}

// link draws a NoC link: ─ or │ when the NoC is busy less than half the time, ━ or ┃
// when more, a faint · when idle.
func (m *heatmap) link(rb *rowBuf, vertical bool) {
	st := m.c.Styles
	f := m.nocBusy()
	switch {
	case f < 0:
		rb.spaces(1)
	case f == 0:
		rb.cell(st.Faint, '·')
	default:
		g := [2][2]rune{{'─', '━'}, {'│', '┃'}}
		heavy := 0
		if f >= 0.5 {
			heavy = 1
		}
		v := 0
		if vertical {
			v = 1
		}
		rb.cell(st.PIM[max(1, heatLevel(f))], g[v][heavy])
	}
}

// meshBody draws the column labels and the mesh, and says what is under the cursor.
func (m *heatmap) meshBody() ([]string, string) {
	st := m.c.Styles
	g := &m.snap.Banks
	q, _ := m.meshLayout()
	cellW := 1
	if m.mode == modeBoth {
		cellW = 2
	}
	tileW := q.tw * cellW
	var head rowBuf
	head.spaces(q.labelW)
	for y := range g.MeshCols {
		if y > 0 {
			head.spaces(meshGap)
		}
		head.str(st.Faint, fitLine("y"+strconv.Itoa(y), tileW))
	}
	lines := []string{head.line(m.w)}
	var votes map[int]int
	if m.mode == modeOwner {
		votes = map[int]int{}
	}
	for x := range g.MeshRows {
		for t := range q.th {
			var rb rowBuf
			if t == 0 {
				rb.str(st.Faint, fitLine("x"+strconv.Itoa(x), q.labelW))
			} else {
				rb.spaces(q.labelW)
			}
			for y := range g.MeshCols {
				pe := x*g.MeshCols + y
				if y > 0 {
					rb.spaces(1)
					if t == q.th/2 {
						m.link(&rb, false)
					} else {
						rb.spaces(1)
					}
					rb.spaces(1)
				}
				cur := paint("")
				if pe == m.cr {
					cur = st.Rev
				}
				for j := range q.tw {
					m.cell(&rb, m.dieBlock(pe, t*q.dpl, q.dpl, j*q.fc, q.fc, q.bpd, votes), cur)
				}
			}
			lines = append(lines, rb.line(m.w))
		}
		if q.links && x < g.MeshRows-1 {
			var rb rowBuf
			rb.spaces(q.labelW)
			for y := range g.MeshCols {
				if y > 0 {
					rb.spaces(meshGap)
				}
				rb.spaces(tileW / 2)
				m.link(&rb, true)
				rb.spaces(tileW - tileW/2 - 1)
			}
			lines = append(lines, rb.line(m.w))
		}
	}
	return lines, m.meshDetail()
}

// dieBlock sums banks [b0, b0+nb) of dies [d0, d0+nd) of PE pe.
func (m *heatmap) dieBlock(pe, d0, nd, b0, nb, bpd int, votes map[int]int) block {
	var sum block
	n := 0
	clear(votes)
	sum.owner = -1
	for d := d0; d < d0+nd; d++ {
		b := m.block(pe, d*bpd+b0, 1, nb, nil)
		sum.pim += b.pim
		sum.mem += b.mem
		sum.pimMax, sum.memMax = max(sum.pimMax, b.pimMax), max(sum.memMax, b.memMax)
		n++
	}
	if n > 0 {
		sum.pim /= float64(n)
		sum.mem /= float64(n)
	}
	if votes != nil {
		sum.owner = m.block(pe, 0, 1, m.snap.Banks.Cols, votes).owner
	}
	return sum
}

// meshDetail gives the figures of the PE under the cursor.
func (m *heatmap) meshDetail() string {
	g := &m.snap.Banks
	b := m.block(m.cr, 0, 1, g.Cols, map[int]int{})
	parts := []string{m.rowLabel(m.cr), m.pimWord() + " " + pct(b.pim), wordBandwidth + " " + pct(b.mem)}
	if m.cr < len(g.RowNotes) && g.RowNotes[m.cr] != "" {
		parts = append(parts, g.RowNotes[m.cr])
	}
	if b.owner > 0 {
		parts = append(parts, "owner #"+strconv.Itoa(b.owner))
	}
	return strings.Join(append(parts, "enter: its banks"), partSep)
}

// meshKey moves the cursor between PEs; enter shows the banks around the PE.
func (m *heatmap) meshKey(msg tea.KeyPressMsg) {
	g := &m.snap.Banks
	k := m.c.Keys
	x, y := m.cr/g.MeshCols, m.cr%g.MeshCols
	switch {
	case key.Matches(msg, k.Left):
		y = max(0, y-1)
	case key.Matches(msg, k.Right):
		y = min(g.MeshCols-1, y+1)
	case key.Matches(msg, k.Up):
		x = max(0, x-1)
	case key.Matches(msg, k.Down):
		x = min(g.MeshRows-1, x+1)
	case key.Matches(msg, k.Enter):
		m.drill, m.r0, m.c0, m.cc = true, m.cr, 0, 0
		m.scroll()
		return
	}
	m.cr = x*g.MeshCols + y
}

// meshClick puts the cursor on the PE under (x, y).
func (m *heatmap) meshClick(x, y int) {
	g := &m.snap.Banks
	q, ok := m.meshLayout()
	if !ok {
		return
	}
	cellW := 1
	if m.mode == modeBoth {
		cellW = 2
	}
	row := y - 1
	if len(m.sysUnits()) > 0 {
		row--
	}
	per := q.th
	if q.links {
		per++
	}
	tx, ty := row/per, (x-q.labelW)/(q.tw*cellW+meshGap)
	if row < 0 || x < q.labelW || tx >= g.MeshRows || ty >= g.MeshCols || row%per >= q.th {
		return
	}
	m.cr = tx*g.MeshCols + ty
}
