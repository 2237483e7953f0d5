package ui

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// neuronMode is what the neuron map shades.
type neuronMode int

const (
	nmWhere neuronMode = iota
	nmGPU
	nmActive
	nmMiss
	nmState
	numNeuronModes
)

var neuronModeNames = [numNeuronModes]string{"location", "on the GPU", "active", "mispredicted", "predictor state"}

// neurons is the hot/cold neuron partition: one row per layer, its QKV and MLP neurons
// in bins from the hottest (left) to the coldest, marked by where most of a bin's neurons
// run (GPU or memory device k, dimmed where they rarely fire), or shaded by the share on the GPU, the
// share active this token, the share the predictor got wrong, or the predictor's state.
// Systems without a neuron partition say why it does not apply, and the pane shows where
// each operation runs instead, labelled as operator placement so it is not mistaken for
// neuron hotness.
type neurons struct {
	c         *Common
	w, h      int
	snap      *sim.Snapshot
	placement []placement // opPlacement of snap, made when first drawn (placed)
	placed    bool

	mode   neuronMode
	cr, cc int      // cursor: layer, column over the QKV bins then the MLP bins
	layers int      // rows of the full map
	bins   [2]int   // bins of a QKV and an MLP block (1 for a block without bins)
	block  [][2]int // per layer: index of its QKV and MLP blocks, -1 = none
}

// placement is the operations one group of lanes ran this iteration.
type placement struct {
	where string
	ops   []string
}

func newNeurons(c *Common) *neurons { return &neurons{c: c} }

func (m *neurons) SetSize(w, h int) { m.w, m.h = w, h }

func (m *neurons) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	// The placement walks every span; only the pane of a system without a neuron
	// partition, drawn with room for it, shows it, so it waits for that.
	m.placement, m.placed = nil, false
	nr := &s.Neurons
	m.layers, m.bins, m.block = 0, [2]int{}, m.block[:0]
	for _, b := range nr.Blocks {
		m.layers = max(m.layers, b.Layer+1)
	}
	for range m.layers {
		m.block = append(m.block, [2]int{-1, -1})
	}
	for i, b := range nr.Blocks {
		k := kindIndex(b.Kind)
		if b.Layer < 0 {
			continue
		}
		m.block[b.Layer][k] = i
		m.bins[k] = max(m.bins[k], max(1, len(b.Bins)))
	}
	m.cr = clamp(m.cr, 0, max(0, m.layers-1))
	m.cc = clamp(m.cc, 0, max(0, m.bins[0]+m.bins[1]-1))
}

func kindIndex(kind string) int {
	if kind == "QKV" {
		return 0
	}
	return 1
}

// opPlacement lists the operations each group of lanes ran, in the order they first ran.
func opPlacement(tl *sim.Timeline) []placement {
	group := map[string]int{}
	var lanes [][]sim.Lane
	laneGroup := make([]int, len(tl.Lanes))
	for i, l := range tl.Lanes {
		g, ok := group[l.Group]
		if !ok {
			g = len(lanes)
			group[l.Group] = g
			lanes = append(lanes, nil)
		}
		lanes[g] = append(lanes[g], l)
		laneGroup[i] = g
	}
	seen := make([]map[string]bool, len(lanes))
	ops := make([][]string, len(lanes))
	for _, sp := range tl.Spans {
		if sp.Lane < 0 || sp.Lane >= len(laneGroup) {
			continue
		}
		g := laneGroup[sp.Lane]
		if seen[g] == nil {
			seen[g] = map[string]bool{}
		}
		if !seen[g][sp.Name] {
			seen[g][sp.Name] = true
			ops[g] = append(ops[g], sp.Name)
		}
	}
	out := make([]placement, 0, len(lanes))
	for g, ls := range lanes {
		where := ls[0].Name
		if len(ls) > 1 {
			where = groupName(ls)
		}
		out = append(out, placement{where: where, ops: ops[g]})
	}
	return out
}

func (m *neurons) partitioned() bool { return m.snap != nil && m.layers > 0 }

func (m *neurons) Title() string {
	switch {
	case m.partitioned():
		return "4 Neurons · " + neuronModeNames[m.mode]
	case m.snap != nil && m.snap.Neurons.Reason != "":
		return "4 Neurons · not modelled"
	}
	return "4 Neurons"
}

func (m *neurons) ShortHelp() []key.Binding {
	if !m.partitioned() {
		return nil
	}
	return []key.Binding{helpOnly("m", "shade"), helpOnly("j/k", "layer"), helpOnly("h/l", "bin")}
}

func (m *neurons) FullHelp() [][]key.Binding {
	return [][]key.Binding{{helpOnly("m", "shade: location, on GPU, active, mispredicted, predictor state"), helpOnly("j/k ↑/↓", "layer"), helpOnly("h/l", "bin")}}
}

func (m *neurons) Update(msg tea.Msg) (pane, tea.Cmd) {
	if !m.partitioned() {
		return m, nil
	}
	k := m.c.Keys
	q := m.geom()
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Mode):
			m.mode = (m.mode + 1) % numNeuronModes
		case key.Matches(msg, k.Up):
			m.cr = max(0, m.cr-q.fr)
		case key.Matches(msg, k.Down):
			m.cr = min(m.layers-1, m.cr+q.fr)
		case key.Matches(msg, k.Left):
			m.cc = max(0, m.cc-q.fc)
		case key.Matches(msg, k.Right):
			m.cc = min(m.bins[0]+m.bins[1]-1, m.cc+q.fc)
		}
	case tea.MouseClickMsg:
		row := msg.Y - q.top
		if row < 0 || row >= q.nr {
			return m, nil
		}
		x := msg.X - q.labelW
		if x >= q.nq {
			x-- // the gap between the QKV and MLP bins
		}
		if x < 0 || x >= q.nq+q.nm {
			return m, nil
		}
		m.cr = min(m.layers-1, row*q.fr)
		if x < q.nq {
			m.cc = min(m.bins[0]-1, x*q.fc)
		} else {
			m.cc = min(m.bins[0]+m.bins[1]-1, m.bins[0]+(x-q.nq)*q.fc)
		}
	}
	return m, nil
}

// nGeom places the map: fr layers a row, fc bins a cell.
type nGeom struct {
	labelW, top int
	fr, fc      int
	nr, nq, nm  int // rows; shown QKV and MLP cells
}

func (m *neurons) headLines() int { return min(3, max(0, m.h-6)) }

func (m *neurons) geom() nGeom {
	q := nGeom{labelW: len("L"+strconv.Itoa(m.layers-1)) + 1, fr: 1, fc: 1}
	q.top = m.headLines() + 1
	availR := max(1, m.h-q.top-2)
	availW := max(3, m.w-q.labelW-1)
	q.fr = (m.layers + availR - 1) / availR
	q.nr = (m.layers + q.fr - 1) / q.fr
	for ; ; q.fc++ {
		q.nq, q.nm = (m.bins[0]+q.fc-1)/q.fc, (m.bins[1]+q.fc-1)/q.fc
		if q.nq+q.nm <= availW || q.nq+q.nm <= 2 {
			break
		}
	}
	return q
}

// nCell is the sum of the bins a shown cell covers.
type nCell struct {
	neurons, gpu, active, pred, fp, fn, promoted, remapped int
	state, freq                                            float64 // neuron-weighted sums
	// where counts the neurons per location (as Neurons.Locations; the last slot also
	// holds any location past it).
	where [maxWhere]int
}

const maxWhere = 16

// cell sums layers [l0, l0+fr) and bins [b0, b0+fc) of kind k. A block without bins
// counts as one bin.
func (m *neurons) cell(k, l0, fr, b0, fc int) nCell {
	var c nCell
	blocks := m.snap.Neurons.Blocks
	for l := l0; l < min(l0+fr, m.layers); l++ {
		i := m.block[l][k]
		if i < 0 {
			continue
		}
		b := &blocks[i]
		if len(b.Bins) == 0 {
			if b0 == 0 {
				c.neurons += b.Neurons
				c.gpu += b.GPUSlots
				c.active += int(b.Active)
				c.pred += int(b.Predicted)
				c.fp += int(b.FP)
				c.fn += int(b.FN)
				c.promoted += int(b.Promoted)
				c.remapped += int(b.Remapped)
			}
			continue
		}
		nl := len(m.snap.Neurons.Locations)
		for j := b0; j < min(b0+fc, len(b.Bins)); j++ {
			if nl > 0 && len(b.BinPlaced) >= (j+1)*nl {
				for loc, v := range b.BinPlaced[j*nl : (j+1)*nl] {
					c.where[min(loc, maxWhere-1)] += int(v)
				}
			}
			bn := &b.Bins[j]
			n := int(bn.Neurons)
			c.neurons += n
			c.gpu += int(bn.GPU)
			c.active += int(bn.Active)
			c.pred += int(bn.Predicted)
			c.fp += int(bn.FP)
			c.fn += int(bn.FN)
			c.promoted += int(bn.Promoted)
			c.remapped += int(bn.Remapped)
			c.state += float64(bn.State) * float64(n)
			c.freq += float64(bn.Freq) * float64(n)
		}
	}
	return c
}

// value is the shaded fraction of a cell in the current mode.
func (m *neurons) value(c nCell) float64 {
	if c.neurons == 0 {
		return 0
	}
	n := float64(c.neurons)
	switch m.mode {
	case nmActive:
		return float64(c.active) / n
	case nmMiss:
		return float64(c.fp+c.fn) / n
	case nmState:
		return c.state / n / 15
	}
	return float64(c.gpu) / n
}

func (m *neurons) View() string {
	st := m.c.Styles
	if s, ok := placeholder(m.w, m.h, m.snap); ok {
		return s
	}
	if !m.partitioned() {
		return m.reasonView()
	}
	q := m.geom()
	lines := make([]string, 0, m.h)
	lines = append(lines, m.figures()[:m.headLines()]...)
	lines = append(lines, m.header(&q))
	ramp := &st.PIM
	if m.mode == nmActive || m.mode == nmState {
		ramp = &st.Mem
	}
	curR, curC := m.cr/q.fr, m.shownCol(&q, m.cc)
	for i := range q.nr {
		var rb rowBuf
		l := i * q.fr
		lp := st.Faint
		if i == curR {
			lp = st.Bold
		}
		label := "L" + strconv.Itoa(l)
		rb.str(lp, label)
		rb.spaces(q.labelW - len(label))
		for j := range q.nq + q.nm {
			if j == q.nq {
				rb.spaces(1)
			}
			c := m.shownCell(&q, l, j)
			if m.mode == nmWhere {
				p, g := m.whereCell(c)
				if i == curR && j == curC {
					p += st.Rev
				}
				rb.cell(p, g)
				continue
			}
			lv := heatLevel(m.value(c))
			p := ramp[lv]
			if i == curR && j == curC {
				p += st.Rev
			}
			g := heatGlyphs[lv]
			if c.neurons == 0 {
				p, g = p+st.Faint, freeGlyph
			}
			rb.cell(p, g)
		}
		lines = append(lines, rb.line(m.w))
	}
	// The cursor's figures take the lines the map leaves free.
	det := flowN(m.detail(&q), m.w, max(1, m.h-len(lines)-1))
	for len(lines) < m.h-1-len(det) {
		lines = append(lines, "")
	}
	legend := m.legend(ramp)
	if m.mode == nmWhere {
		legend = m.whereLegend()
	}
	lines = append(lines, legend)
	for _, d := range det {
		lines = append(lines, st.Bold.render(d))
	}
	return strings.Join(fitLines(lines, m.w, m.h), "\n")
}

// shownCol is the shown column of bin column c.
func (m *neurons) shownCol(q *nGeom, c int) int {
	if c < m.bins[0] {
		return c / q.fc
	}
	return q.nq + (c-m.bins[0])/q.fc
}

// shownCell sums shown column j of the rows starting at layer l.
func (m *neurons) shownCell(q *nGeom, l, j int) nCell {
	if j < q.nq {
		return m.cell(0, l, q.fr, j*q.fc, q.fc)
	}
	return m.cell(1, l, q.fr, (j-q.nq)*q.fc, q.fc)
}

// header names the two halves of each row.
func (m *neurons) header(q *nGeom) string {
	var rb rowBuf
	rb.spaces(q.labelW)
	rb.str(m.c.Styles.Faint, fitLine("QKV hot→cold", q.nq))
	rb.spaces(1)
	rb.str(m.c.Styles.Faint, fitLine("MLP hot→cold", q.nm))
	return rb.line(m.w)
}

// figures are the partition's numbers this token, most telling first.
func (m *neurons) figures() []string {
	nr := &m.snap.Neurons
	s := &nr.Stats
	gpu := fmt.Sprintf("GPU serves %s of active bytes · %.0f of %.0f MB hot", pct(s.GPUCoverage), s.HotMB, s.BudgetMB)
	pred := "dense: whole blocks on the GPU or in memory, no predictor"
	if !s.Dense {
		pred = fmt.Sprintf("predictor: accuracy %s · recall %s · precision %s", pct(s.Accuracy), pct(s.Recall), pct(s.Precision))
	}
	moves := fmt.Sprintf("token %d · promoted %s (%.3g MB) · remapped %s (%.3g MB)", s.Token, thousands(s.Promoted), s.PromotedMB, thousands(s.Remapped), s.RemappedMB)
	if s.Window > 0 {
		moves += fmt.Sprintf(" · window %d/%d", s.WindowPos, s.Window)
	}
	if len(nr.Locations) > 0 && len(nr.Blocks) > 0 {
		sum := make([]int, len(nr.Locations))
		for _, b := range nr.Blocks {
			for j, v := range b.Computed {
				if j < len(sum) {
					sum[j] += int(v)
				}
			}
		}
		parts := make([]string, len(sum))
		for j, v := range sum {
			parts[j] = nr.Locations[j] + " " + si(float64(v))
		}
		moves += " · computed: " + strings.Join(parts, " ")
	}
	out := make([]string, 0, 3)
	for _, l := range []string{gpu, pred, moves} {
		out = append(out, shorten(l, m.w))
	}
	return out
}

// whereCell marks a cell by the location most of its neurons run at: G for the GPU, the
// device's number for a memory device (H for the host), in that location's colour, dimmed
// where the neurons fire in fewer than one token in ten.
func (m *neurons) whereCell(c nCell) (paint, rune) {
	st := m.c.Styles
	if c.neurons == 0 {
		return st.Free + st.Faint, freeGlyph
	}
	best := -1
	for j, v := range c.where {
		if v > 0 && (best < 0 || v > c.where[best]) {
			best = j
		}
	}
	if best < 0 {
		return st.Free, '?'
	}
	p := st.Req[best%len(st.Req)]
	if c.freq/float64(c.neurons) < 0.1 {
		p += st.Faint
	}
	return p, m.whereGlyph(best)
}

// whereGlyph is the one-cell mark of location j.
func (m *neurons) whereGlyph(j int) rune {
	locs := m.snap.Neurons.Locations
	if j >= len(locs) || locs[j] == "" {
		return '?'
	}
	name := locs[j]
	last := rune(name[len(name)-1])
	switch {
	case strings.HasPrefix(name, "GPU"):
		return 'G'
	case last >= '0' && last <= '9':
		return last
	}
	return unicode.ToUpper(rune(name[0]))
}

// whereLegend maps each location's mark to its name, as many as fit.
func (m *neurons) whereLegend() string {
	var rb rowBuf
	rb.str("", "where most run: ")
	for j, name := range m.snap.Neurons.Locations {
		if j >= maxWhere || rb.w+width(name)+3 > m.w {
			break
		}
		rb.cell(m.c.Styles.Req[j%len(m.c.Styles.Req)], m.whereGlyph(j))
		rb.str("", " "+name+" ")
	}
	if rb.w+18 <= m.w {
		rb.str(m.c.Styles.Faint, "· dim: fires <10%")
	}
	return rb.line(rb.w)
}

func (m *neurons) legend(ramp *[6]paint) string {
	var rb rowBuf
	rb.str("", "share "+neuronModeNames[m.mode]+" ")
	for i, t := range []string{"<20", "<40", "<60", "<80", "≥80%"} {
		rb.cell(ramp[i+1], heatGlyphs[i+1])
		rb.str("", t+" ")
	}
	return rb.line(rb.w)
}

func (m *neurons) detail(q *nGeom) string {
	l0 := m.cr / q.fr * q.fr
	k, b0 := 0, m.cc
	if m.cc >= m.bins[0] {
		k, b0 = 1, m.cc-m.bins[0]
	}
	b0 = b0 / q.fc * q.fc
	c := m.cell(k, l0, q.fr, b0, q.fc)
	where := "L" + strconv.Itoa(l0)
	if e := min(l0+q.fr, m.layers) - 1; e > l0 {
		where += "–" + strconv.Itoa(e)
	}
	where += " " + [2]string{"QKV", "MLP"}[k] + " bin " + strconv.Itoa(b0)
	if e := min(b0+q.fc, m.bins[k]) - 1; e > b0 {
		where += "–" + strconv.Itoa(e)
	}
	d := fmt.Sprintf("%s · %s neurons · %s on GPU · %s active · %s predicted (FP %d, FN %d)",
		where, thousands(c.neurons), thousands(c.gpu), thousands(c.active), thousands(c.pred), c.fp, c.fn)
	if c.neurons > 0 && c.state > 0 {
		d += fmt.Sprintf(" · state %.1f", c.state/float64(c.neurons))
	}
	if c.promoted+c.remapped > 0 {
		d += fmt.Sprintf(" · promoted %d · remapped %d", c.promoted, c.remapped)
	}
	return d
}

// reasonView explains why the system has no neuron partition and shows where its
// operations run.
func (m *neurons) reasonView() string {
	st := m.c.Styles
	reason := m.snap.Neurons.Reason
	if reason == "" {
		reason = "This snapshot carries no neuron partition."
	}
	if m.h <= 2 {
		// The dashboard's one-line note; maximised (z), the pane says it all.
		return strings.Join(fitLines([]string{st.Faint.render(cutWords(reason+" (z: where each operation runs)", m.w))}, m.w, m.h), "\n")
	}
	var lines []string
	for _, l := range wrap("No hot/cold neuron partition", m.w) {
		lines = append(lines, st.Bold.render(l))
	}
	for _, l := range wrap(reason, m.w) {
		lines = append(lines, st.Faint.render(l))
	}
	if !m.placed && len(lines)+2 < m.h {
		m.placement, m.placed = opPlacement(&m.snap.Timeline), true
	}
	if len(m.placement) > 0 && len(lines)+2 < m.h {
		lines = append(lines, "")
		for _, l := range wrap("Op placement (not hotness):", m.w) {
			lines = append(lines, st.Bold.render(l))
		}
		for _, p := range m.placement {
			if len(p.ops) == 0 {
				continue
			}
			for i, l := range wrap(p.where+": "+strings.Join(p.ops, " "), m.w-2) {
				if i > 0 {
					l = "  " + l
				}
				lines = append(lines, l)
			}
		}
	}
	return strings.Join(fitLines(lines, m.w, m.h), "\n")
}
