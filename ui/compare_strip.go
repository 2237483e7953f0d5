package ui

import (
	"fmt"
	"math"
	"strings"

	"github.com/pimtui/pimtui/sim"
)

// diffKind says how a figure of the difference strip is written and its difference read.
type diffKind int

const (
	diffTime  diffKind = iota // picoseconds, written with a unit
	diffRate                  // tokens/s
	diffShare                 // a fraction, written as a percentage; Δ in points
	diffCount                 // requests
)

// diffRow is one figure of both sides at the step shown, and how B relates to A.
type diffRow struct {
	name string
	kind diffKind
	v    [2]float64
	has  [2]bool // the side has the figure at this step (a side that has ended has not)
	// better is +1 when a higher value is better, -1 when a lower one is, 0 when neither.
	better int
}

func (r diffRow) both() bool { return r.has[0] && r.has[1] }

// delta is B − A, NaN unless both sides have the figure.
func (r diffRow) delta() float64 {
	if !r.both() {
		return math.NaN()
	}
	return r.v[1] - r.v[0]
}

// ratio is B / A, NaN unless both sides have the figure and A's is not zero.
func (r diffRow) ratio() float64 {
	if !r.both() || r.v[0] == 0 {
		return math.NaN()
	}
	return r.v[1] / r.v[0]
}

// compareSample is the strip's ratios at one step, by figure, for the sparklines.
type compareSample struct {
	step  int
	ratio map[string]float64
}

// diffs are the strip's figures at the lockstep step: iteration time, this step's and
// the run's throughput, utilisation of each lane group both sides have, batch and queue.
// A side that has ended keeps only its run throughput.
func (m *Compare) diffs() []diffRow {
	var at, last [2]*sim.Snapshot
	for i, s := range m.sides {
		last[i] = s.snap
		if s.snap != nil && s.snap.Step == m.step {
			at[i] = s.snap
		}
	}
	var rows []diffRow
	add := func(name string, kind diffKind, better int, from [2]*sim.Snapshot, f func(*sim.Snapshot) (float64, bool)) {
		r := diffRow{name: name, kind: kind, better: better}
		for i, s := range from {
			if s != nil {
				r.v[i], r.has[i] = f(s)
			}
		}
		rows = append(rows, r)
	}
	add("iteration", diffTime, -1, at, func(s *sim.Snapshot) (float64, bool) { return float64(s.IterTime), true })
	add("step tok/s", diffRate, 1, at, func(s *sim.Snapshot) (float64, bool) { return s.Metrics.StepTokPerSec, true })
	add("run tok/s", diffRate, 1, last, func(s *sim.Snapshot) (float64, bool) { return s.Metrics.Throughput, true })
	for _, g := range m.groups {
		add("util "+g, diffShare, 0, at, func(s *sim.Snapshot) (float64, bool) { v, ok := s.Metrics.Util[g]; return v, ok })
	}
	add("batch", diffCount, 0, at, func(s *sim.Snapshot) (float64, bool) { return float64(s.Batch), true })
	add("queue", diffCount, 0, at, func(s *sim.Snapshot) (float64, bool) { return float64(s.Queue), true })
	return rows
}

// record keeps the ratios of the step just reached for the sparklines.
func (m *Compare) record() {
	rows := m.diffs()
	s := compareSample{step: m.step, ratio: make(map[string]float64, len(rows))}
	for _, r := range rows {
		s.ratio[r.name] = r.ratio()
	}
	m.hist[m.step%histCap] = s
}

// recent returns the samples of the last n steps up to the shown one, oldest first.
func (m *Compare) recent(n int) []compareSample {
	return lastSteps(&m.hist, func(s compareSample) int { return s.step }, m.step, n)
}

func fmtValue(k diffKind, v float64) string {
	switch k {
	case diffTime:
		return fmtTime(sim.Time(v))
	case diffRate:
		return si(v)
	case diffShare:
		return pct(v)
	}
	return thousands(int(v))
}

func fmtDelta(k diffKind, d float64) string {
	if math.IsNaN(d) {
		return "–"
	}
	sign := "+"
	if d < 0 {
		sign = "-"
	}
	a := math.Abs(d)
	switch k {
	case diffTime:
		if a == 0 {
			return "±0"
		}
		return sign + sim.Time(a).String()
	case diffRate:
		return sign + si(a)
	case diffShare:
		return fmt.Sprintf("%s%.1f pt", sign, 100*a)
	}
	if a == 0 {
		return "±0"
	}
	return sign + thousands(int(a))
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "–"
	}
	return ratioNum(r) + "×"
}

// ratioNum writes a ratio with three significant digits, trailing zeros kept (1.00) but
// never a bare trailing point (156, not 156.).
func ratioNum(r float64) string {
	if math.Abs(r) >= 1000 {
		return si(r)
	}
	return strings.TrimSuffix(fmt.Sprintf("%#.3g", r), ".")
}

// Widths of the strip's columns.
const (
	stripValW   = 9
	stripDeltaW = 11
	stripRatioW = 8
	stripRangeW = 13
)

// stripWant is how many lines the strip would like inside its frame: the column heads
// and a row per figure, after a line saying the models differ when they do.
func (m *Compare) stripWant() int {
	n := 1 + 5 + len(m.groups)
	if m.modelsDiffer() {
		n++
	}
	return n
}

// modelsDiffer reports sides that serve different models: a fair comparison of systems,
// but one the screen must say.
func (m *Compare) modelsDiffer() bool {
	return m.sides[0].Config.Model.Name != m.sides[1].Config.Model.Name
}

// strip renders the difference strip's lines for an area of w×h inside its frame. Its
// frame's title says the step and which side has ended.
func (m *Compare) strip(w, h int) []string {
	st := m.c.Styles
	rows := m.diffs()
	var lines []string
	if m.modelsDiffer() {
		a, b := m.sides[0].Config, m.sides[1].Config
		lines = append(lines, st.Warn.render(truncate("≠ models differ: A "+modelText(a)+" · B "+modelText(b), w)))
	}
	nameW := 10
	for _, r := range rows {
		nameW = max(nameW, len(r.name))
	}
	fixed := nameW + 1 + stripValW + 1 + stripValW + 1 + stripDeltaW + 1 + stripRatioW
	sparkW, rangeW := 0, 0
	switch rest := w - fixed - 2; {
	case rest >= 8+1+stripRangeW:
		rangeW = stripRangeW
		sparkW = rest - 1 - rangeW
	case rest >= 8:
		sparkW = rest
	}
	data := m.recent(sparkW)
	var hb rowBuf
	hb.spaces(nameW + 1)
	hb.str(st.Faint, fmt.Sprintf("%*s %*s %*s %*s", stripValW, "A", stripValW, "B", stripDeltaW, "Δ B−A", stripRatioW, "B/A"))
	if sparkW > 0 {
		hb.spaces(2)
		steps := "steps"
		if len(data) == 1 {
			steps = "step"
		}
		hb.str(st.Faint, truncate(fmt.Sprintf("B/A over the last %d %s", len(data), steps), sparkW+1+rangeW))
	}
	header := hb.line(w)
	var body []string
	for _, r := range rows {
		var rb rowBuf
		rb.str("", fitLine(r.name, nameW)+" ")
		for i := range 2 {
			v := "–"
			if r.has[i] {
				v = fmtValue(r.kind, r.v[i])
			}
			rb.str("", fmt.Sprintf("%*s ", stripValW, truncate(v, stripValW)))
		}
		rb.str("", fmt.Sprintf("%*s ", stripDeltaW, truncate(fmtDelta(r.kind, r.delta()), stripDeltaW)))
		ratio := r.ratio()
		p := paint("")
		if !math.IsNaN(ratio) && r.better != 0 && math.Abs(ratio-1) > 0.005 {
			p = st.Bad
			if (ratio > 1) == (r.better > 0) {
				p = st.Good
			}
		}
		rb.str(p, fmt.Sprintf("%*s", stripRatioW, truncate(fmtRatio(ratio), stripRatioW)))
		if sparkW > 0 {
			spark, lo, hi := ratioSpark(data, r.name, sparkW)
			rb.spaces(2)
			rb.str(st.Accent, spark)
			if rangeW > 0 && lo <= hi {
				if rng := ratioNum(lo) + "–" + ratioNum(hi) + "×"; width(rng) < rangeW {
					rb.str(st.Faint, " "+rng)
				}
			}
		}
		body = append(body, rb.line(w))
	}
	// The column heads say which column is which: they stay while a figure fits under them.
	if len(lines)+2 <= h {
		lines = append(lines, header)
	}
	lines = append(lines, body...)
	return fitLines(lines, w, h)
}

// ratioSpark draws one figure's ratio over the recent samples as a bar per step,
// right-aligned in w cells, and returns the least and greatest ratio (lo > hi when there
// is none). Bars scale from the least to the greatest ratio, over a span of at least a
// tenth of the ratio, so a steady ratio's rounding noise stays a flat line. A step
// without a ratio (a side had ended, A was zero) is blank.
func ratioSpark(data []compareSample, name string, w int) (string, float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range data {
		if r := s.ratio[name]; !math.IsNaN(r) {
			lo, hi = min(lo, r), max(hi, r)
		}
	}
	bot, top := lo, hi
	if span := 0.1 * max(math.Abs(lo), math.Abs(hi)); top-bot < span {
		mid := (top + bot) / 2
		bot, top = mid-span/2, mid+span/2
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", max(0, w-len(data))))
	for _, s := range data[max(0, len(data)-w):] {
		r := s.ratio[name]
		switch {
		case math.IsNaN(r):
			b.WriteByte(' ')
		case top > bot:
			b.WriteRune(barGlyphs[1+clamp(int((r-bot)/(top-bot)*8), 0, 7)])
		default:
			b.WriteRune(barGlyphs[4])
		}
	}
	return b.String(), lo, hi
}
