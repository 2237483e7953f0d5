package ui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/NimbleMarkets/ntcharts/v2/canvas/runes"

	"github.com/pimtui/pimtui/sim"
)

// histCap is how many recent steps the sparklines remember; the memory it takes is fixed
// however long autoplay runs.
const histCap = 512

// sample is what the sparklines plot of one step.
type sample struct {
	step  int
	iter  float64 // ms
	tokps float64
	kv    float64
	batch float64
}

// series is one sparkline.
type series struct {
	name   string
	value  func(sample) float64
	format func(float64) string
	zero   bool // scaled from zero rather than from the window's minimum
}

var allSeries = []series{
	{"iteration", func(s sample) float64 { return s.iter }, func(v float64) string { return fmtTime(sim.Time(v * float64(sim.Millisecond))) }, false},
	{"tok/s", func(s sample) float64 { return s.tokps }, si, false},
	{"KV used", func(s sample) float64 { return s.kv }, pct, true},
	{"batch", func(s sample) float64 { return s.batch }, func(v float64) string { return fmt.Sprintf("%.0f", v) }, true},
}

// metrics is the figures pane: this iteration's time, throughput, utilisation and idle
// share per lane group, KV use and load imbalance, with sparklines of the recent steps.
type metrics struct {
	c     *Common
	w, h  int
	snap  *sim.Snapshot
	hist  [histCap]sample
	spark []string // rendered sparkline lines
	rows  int      // lines per sparkline
}

func newMetrics(c *Common) *metrics { return &metrics{c: c} }

// reset forgets the history, for a new run.
func (m *metrics) reset() {
	m.hist = [histCap]sample{}
	m.snap = nil
	m.spark = nil
}

func (m *metrics) SetSize(w, h int) {
	m.w, m.h = w, h
	m.draw()
}

func (m *metrics) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	m.hist[s.Step%histCap] = sample{
		step: s.Step, iter: s.IterTime.Milliseconds(), tokps: s.Metrics.StepTokPerSec,
		kv: s.Metrics.KVUtil, batch: float64(s.Batch + s.Prefills),
	}
	m.draw()
}

// recent returns the samples of the last n steps up to the shown one, oldest first. After
// stepping back, the steps after the shown one are left out.
func (m *metrics) recent(n int) []sample {
	if m.snap == nil {
		return nil
	}
	return lastSteps(&m.hist, func(s sample) int { return s.step }, m.snap.Step, n)
}

// lastSteps returns the entries of ring, kept at their step modulo histCap, of the last
// n steps up to step, oldest first; a step not kept (overwritten or never filled) ends
// the list.
func lastSteps[S any](ring *[histCap]S, stepOf func(S) int, step, n int) []S {
	out := make([]S, 0, min(n, histCap))
	for st := step; st > 0 && st > step-min(n, histCap); st-- {
		s := ring[st%histCap]
		if stepOf(s) != st {
			break
		}
		out = append(out, s)
	}
	slices.Reverse(out)
	return out
}

func (m *metrics) Title() string { return "5 Metrics" }

func (m *metrics) ShortHelp() []key.Binding  { return nil }
func (m *metrics) FullHelp() [][]key.Binding { return nil }

func (m *metrics) Update(tea.Msg) (pane, tea.Cmd) { return m, nil }

// figures are the text lines above the sparklines.
func (m *metrics) figures() []string {
	st := m.c.Styles
	s := m.snap
	mt := &s.Metrics
	var lines []string
	lines = append(lines, flow(fmt.Sprintf("iteration %s · %s tok/s (run %s)", s.IterTime, si(mt.StepTokPerSec), si(mt.Throughput)), m.w)...)
	lines = append(lines, flow(fmt.Sprintf("batch %d · prefill %d · queue %d · done %s/%s", s.Batch, s.Prefills, s.Queue, thousands(s.Done), thousands(s.Total)), m.w)...)
	keys := sortedKeys(mt.Util)
	nameW := 0
	for _, k := range keys {
		nameW = max(nameW, len(k))
	}
	barW := clamp(m.w-nameW-9, 4, 30)
	for _, k := range keys {
		f := mt.Util[k]
		var rb rowBuf
		rb.str("", fmt.Sprintf("%-*s ", nameW, k))
		n := clamp(int(f*float64(barW)+0.5), 0, barW)
		rb.str(st.Accent, strings.Repeat("█", n))
		rb.str(st.Faint, strings.Repeat("·", barW-n))
		rb.str("", " "+pct(f))
		lines = append(lines, rb.line(rb.w))
	}
	lines = append(lines, causeBar(st, mt, m.w)...)
	if b := sortedKeys(mt.Bubble); len(b) > 0 {
		parts := make([]string, len(b))
		for i, k := range b {
			parts[i] = k + " " + pct(mt.Bubble[k])
		}
		lines = append(lines, flow("idle: "+strings.Join(parts, partSep), m.w)...)
	}
	kv := "KV used " + pct(mt.KVUtil)
	if mt.LoadImbalance > 0 {
		kv += fmt.Sprintf(" · imbalance %.3g× max/mean", mt.LoadImbalance)
	}
	return append(lines, flow(kv, m.w)...)
}

// causeBar is the iteration's bubble share split by cause: a bar standing for all the
// lane-time the lanes could use, its idle part in one segment per cause, then the causes
// with their shares, largest first.
func causeBar(st *Styles, mt *sim.Metrics, w int) []string {
	order := causeOrder(mt)
	head := "bubbles " + pctInt(mt.BubbleShare) + " "
	barW := clamp(w-width(head), 0, 40)
	var rb rowBuf
	rb.str("", head)
	if barW >= 4 {
		cum, at := 0.0, 0
		for _, c := range order {
			cum += mt.ShareByCause[c]
			to := clamp(int(math.Round(cum*float64(barW))), at, barW)
			rb.str(st.Cause[c], strings.Repeat(string(causeGlyphs[c]), to-at))
			at = to
		}
		rb.str(st.Faint, strings.Repeat("·", barW-at))
	}
	out := []string{rb.line(rb.w)}
	if len(order) == 0 {
		return out
	}
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = st.Cause[c].render(string(causeGlyphs[c])) + " " + causeLabel(c) + " " + pct(mt.ShareByCause[c])
	}
	return append(out, flowN(strings.Join(parts, partSep), w, 2)...)
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// draw renders the sparklines for the current size and snapshot, so View only joins
// strings. Each is a column chart whose rows are painted as one run.
func (m *metrics) draw() {
	m.spark = nil
	if m.snap == nil || m.w <= 0 {
		return
	}
	room := m.h - len(m.figures())
	if room <= 0 {
		return
	}
	n := min(len(allSeries), room)
	m.rows = clamp(room/n, 1, 3)
	const nameW = 10
	valW := clamp(m.w/3, 12, 24)
	sw := m.w - nameW - valW
	if sw < 8 {
		return
	}
	data := m.recent(sw)
	for _, se := range allSeries[:n] {
		vals := make([]float64, len(data))
		lo, hi := 0.0, 0.0
		for i, s := range data {
			vals[i] = se.value(s)
			if i == 0 || vals[i] < lo {
				lo = vals[i]
			}
			hi = max(hi, vals[i])
		}
		if se.zero {
			lo = 0
		} else {
			lo -= (hi - lo) / 3
		}
		heights := make([]float64, len(vals))
		for i, v := range vals {
			f := 0.5
			if hi > lo {
				f = (v - lo) / (hi - lo)
			}
			heights[i] = max(f, 0.02) * float64(m.rows)
		}
		chart := columns(heights, sw, m.rows)
		last, rng := "–", ""
		if len(vals) > 0 {
			last = se.format(vals[len(vals)-1])
			if !se.zero {
				mn := slices.Min(vals)
				rng = " (" + se.format(mn) + "–" + se.format(hi) + ")"
			}
		}
		for i, c := range chart {
			var rb rowBuf
			if i == 0 {
				rb.str("", fitLine(se.name, nameW))
			} else {
				rb.spaces(nameW)
			}
			rb.str(m.c.Styles.Accent, fitLine(c, sw))
			if i == len(chart)-1 {
				// The range gives way before the value is cut.
				if width(last+rng)+1 > valW {
					rng = ""
				}
				rb.str("", truncate(" "+last+rng, valW))
			}
			m.spark = append(m.spark, rb.line(m.w))
		}
	}
}

// columns draws heights (in rows) as columns of block glyphs right-aligned in w cells,
// rows high, as ntcharts' column charts draw them on an empty canvas: a column of height
// v is floor(v) full blocks under the lower eighth block nearest the rest.
func columns(heights []float64, w, rows int) []string {
	grid := make([][]rune, rows)
	for y := range grid {
		grid[y] = []rune(strings.Repeat(" ", w))
	}
	for i, v := range heights {
		x := w - len(heights) + i
		if x < 0 || x >= w || v <= 0 {
			continue
		}
		n := math.Floor(v)
		full := int(n)
		for k := 0; k < full && k < rows; k++ {
			grid[rows-1-k][x] = runes.FullBlock
		}
		if r := runes.LowerBlockElementFromFloat64(v - n); r != runes.Null && full < rows {
			grid[rows-1-full][x] = r
		}
	}
	out := make([]string, rows)
	for y, row := range grid {
		out[y] = string(row)
	}
	return out
}

func (m *metrics) View() string {
	if s, ok := placeholder(m.w, m.h, m.snap); ok {
		return s
	}
	lines := m.figures()
	lines = append(lines, m.spark...)
	return strings.Join(fitLines(lines, m.w, m.h), "\n")
}
