package ui

import (
	"slices"
	"sort"

	"github.com/pimtui/pimtui/sim"
)

// critGlyph fills the spans of the critical path, in colour and without.
const critGlyph = '━'

// causeLabels name the causes of idle time as the explorer shows them.
var causeLabels = [sim.NumCauses]string{
	sim.CauseDependency: "dependency",
	sim.CauseTransfer:   "transfer",
	sim.CauseBarrier:    "stage barrier",
	sim.CauseImbalance:  "load imbalance",
	sim.CauseTail:       "tail",
	sim.CauseCapacity:   "capacity stall",
	sim.CauseNoWork:     "no work",
}

func causeLabel(c sim.BubbleCause) string {
	if c < sim.NumCauses {
		return causeLabels[c]
	}
	return c.String()
}

// markCritical notes which spans lie on the iteration's critical path.
func (m *timeline) markCritical() {
	tl := &m.snap.Timeline
	if cap(m.crit) < len(tl.Spans) {
		m.crit = make([]bool, len(tl.Spans))
	}
	m.crit = m.crit[:len(tl.Spans)]
	clear(m.crit)
	for _, i := range tl.Critical {
		if i >= 0 && i < len(m.crit) {
			m.crit[i] = true
		}
	}
}

func (m *timeline) critical(span int) bool { return span >= 0 && span < len(m.crit) && m.crit[span] }

// criticalAt is the span of the critical path running at t, or -1. The path's spans are
// in time order, each starting when the one before it ends.
func (m *timeline) criticalAt(t sim.Time) int {
	tl := &m.snap.Timeline
	c := tl.Critical
	i := sort.Search(len(c), func(i int) bool { return c[i] < 0 || c[i] >= len(tl.Spans) || tl.Spans[c[i]].End() > t })
	if i < len(c) && c[i] >= 0 && c[i] < len(tl.Spans) && tl.Spans[c[i]].Start <= t {
		return c[i]
	}
	return -1
}

// criticalCols marks the columns of a window cw columns wide in which the critical path
// runs on one of lanes.
func (m *timeline) criticalCols(lanes []int, cw int) []bool {
	tl := &m.snap.Timeline
	var out []bool
	for _, i := range tl.Critical {
		if i < 0 || i >= len(tl.Spans) {
			continue
		}
		sp := &tl.Spans[i]
		if sp.End() <= m.t0 || sp.Start >= m.t1 || !slices.Contains(lanes, sp.Lane) {
			continue
		}
		if out == nil {
			out = make([]bool, cw)
		}
		a := max(0, m.timeCol(max(sp.Start, m.t0), cw))
		b := min(cw-1, m.timeCol(min(sp.End(), m.t1)-1, cw))
		for c := a; c <= b; c++ {
			out[c] = true
		}
	}
	return out
}

// causeOrder is the causes of this iteration's bubble share, largest share first (ties in
// cause order); no-work time never counts toward the share.
func causeOrder(mt *sim.Metrics) []sim.BubbleCause {
	var out []sim.BubbleCause
	for _, c := range sim.ShareCauses() {
		if mt.ShareByCause[c] > 0 {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b sim.BubbleCause) int {
		switch x, y := mt.ShareByCause[a], mt.ShareByCause[b]; {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	return out
}

// largestOf is the iteration's longest bubble of cause c, the earliest of equals; -1 if
// there is none.
func (m *timeline) largestOf(c sim.BubbleCause) int {
	tl := &m.snap.Timeline
	best, bestDur := -1, sim.Time(0)
	for i, b := range tl.Bubbles {
		if b.Cause != c || b.Lane < 0 || b.Lane >= len(tl.Lanes) || b.Start >= tl.Makespan {
			continue
		}
		d := min(b.Start+b.Dur, tl.Makespan) - b.Start
		if d > bestDur || d == bestDur && best >= 0 && b.Start < tl.Bubbles[best].Start {
			best, bestDur = i, d
		}
	}
	return best
}

// causeJump is where B took the cursor: the cause's rank among the iteration's causes,
// how many causes there are, and the bubble.
type causeJump struct {
	rank, of int
	cause    sim.BubbleCause
	bubble   sim.Bubble
}

// jumpCause puts the cursor in the middle of the largest bubble of the iteration's
// rank-th cause by share (0: the cause with the most idle time), unfolding its lane's
// group and moving the window to it when needed.
func (m *timeline) jumpCause(rank int) (causeJump, bool) {
	if m.snap == nil {
		return causeJump{}, false
	}
	order := causeOrder(&m.snap.Metrics)
	for k := range order {
		r := (rank + k) % len(order)
		if i := m.largestOf(order[r]); i >= 0 {
			b := m.snap.Timeline.Bubbles[i]
			m.show(b.Lane, b.Start+min(b.Dur, m.end()-b.Start)/2)
			return causeJump{rank: r, of: len(order), cause: order[r], bubble: b}, true
		}
	}
	return causeJump{}, false
}

// show selects lane l's own row and puts the cursor at t, keeping the zoom.
func (m *timeline) show(l int, t sim.Time) {
	row := m.laneRow(l)
	if row < 0 {
		m.expanded = true
		m.buildRows()
		row = m.laneRow(l)
	}
	if row >= 0 {
		m.row = row
	}
	end := m.end()
	t = clamp64(t, 0, end-1)
	if t < m.t0 || t >= m.t1 {
		w := m.t1 - m.t0
		m.layer = -1
		m.t0 = clamp64(t-w/2, 0, max(0, end-w))
		m.t1 = min(end, m.t0+w)
		m.fit = m.t0 == 0 && m.t1 == end
	}
	m.cursor = t
	m.scrollRows()
}

// laneRow is the row that shows lane l alone, or -1.
func (m *timeline) laneRow(l int) int {
	for i, r := range m.rows {
		if !r.group && len(r.lanes) == 1 && r.lanes[0] == l {
			return i
		}
	}
	return -1
}
