package ui

import (
	"math"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/NimbleMarkets/ntcharts/v2/canvas"
	"github.com/NimbleMarkets/ntcharts/v2/linechart"
	"github.com/charmbracelet/x/ansi"
)

// Series is one curve of a plot: a name for the legend and its points. A NaN Y is a
// point the system could not run; the curve breaks there.
type Series struct {
	Name string
	X, Y []float64
}

// PlotData is what a line chart shows. When XTicks is set, X values are indices into it
// (a categorical axis: models, datasets); otherwise X is numeric and ticks sit at the
// data's X values.
type PlotData struct {
	Title, XLabel, YLabel string
	Series                []Series
	XTicks                []string
}

// plotMarks tell series apart without colour: each curve's points carry its own glyph,
// repeated in the legend.
var plotMarks = []rune{'●', '■', '▲', '◆', '✚', '○', '□', '△', '◇', '×'}

// plotColours are the series colours on a dark and a light background.
var plotColours = []string{"#4E79A7", "#F28E2B", "#59A14F", "#E15759", "#B07AA1", "#76B7B2", "#EDC948", "#FF9DA7", "#9C755F", "#BAB0AC"}

// Plot draws d as a line chart of exactly h lines no wider than w: title, Y-axis label,
// the chart with its axes and ticks, X-axis label and a legend. It is a pure function of
// its arguments; without colour the series differ by their point glyphs.
func Plot(d PlotData, w, h int, color bool) string {
	w, h = max(w, 20), max(h, 8)
	var legend []string
	line := ""
	for i, s := range d.Series {
		item := string(plotMarks[i%len(plotMarks)]) + " " + s.Name
		if color {
			item = seriesStyle(i, true).Render(string(plotMarks[i%len(plotMarks)])) + " " + s.Name
		}
		if line != "" && ansi.StringWidth(line)+3+ansi.StringWidth(item) > w {
			legend = append(legend, line)
			line = ""
		}
		if line != "" {
			line += "   "
		}
		line += item
	}
	if line != "" {
		legend = append(legend, line)
	}
	head := []string{truncate(d.Title, w), truncate("↑ "+d.YLabel, w)}
	foot := []string{padLeft(truncate(d.XLabel+" →", w), w)}
	ch := h - len(head) - len(foot) - len(legend)
	if ch < 4 {
		legend = legend[:0]
		ch = h - len(head) - len(foot)
	}

	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range d.Series {
		for i := range s.X {
			if i >= len(s.Y) || math.IsNaN(s.Y[i]) {
				continue
			}
			minX, maxX = min(minX, s.X[i]), max(maxX, s.X[i])
			minY, maxY = min(minY, s.Y[i]), max(maxY, s.Y[i])
		}
	}
	if len(d.XTicks) > 0 {
		minX, maxX = -0.5, float64(len(d.XTicks))-0.5
	}
	if math.IsInf(minY, 0) {
		minY, maxY = 0, 1
	}
	if math.IsInf(minX, 0) {
		minX, maxX = 0, 1
	}
	if maxX <= minX {
		minX, maxX = minX-1, maxX+1
	}
	minY, maxY = yRange(minY, maxY, ch-2)

	axis, label := lipgloss.NewStyle(), lipgloss.NewStyle()
	if color {
		axis = axis.Foreground(lipgloss.Color("#71717A"))
		label = label.Foreground(lipgloss.Color("#A1A1AA"))
	}
	lc := linechart.New(w, ch, minX, maxX, minY, maxY,
		linechart.WithXYSteps(1, 2),
		linechart.WithStyles(axis, label, lipgloss.NewStyle()),
		linechart.WithXLabelFormatter(func(int, float64) string { return "" }),
		linechart.WithYLabelFormatter(func(_ int, v float64) string { return compact(v) }),
	)
	lc.DrawXYAxisAndLabel()
	pt := func(x, y float64) canvas.Float64Point { return canvas.Float64Point{X: x, Y: y} }
	for i, s := range d.Series {
		st := seriesStyle(i, color)
		for j := 1; j < min(len(s.X), len(s.Y)); j++ {
			if math.IsNaN(s.Y[j-1]) || math.IsNaN(s.Y[j]) {
				continue
			}
			lc.DrawRuneLineWithStyle(pt(s.X[j-1], s.Y[j-1]), pt(s.X[j], s.Y[j]), '·', st)
		}
	}
	// Points last. Where two series meet in one cell, the later one moves a cell or two
	// sideways so both glyphs show: the value (the row) stays exact.
	taken := map[canvas.Point]bool{}
	for i, s := range d.Series {
		st := seriesStyle(i, color)
		for j := range min(len(s.X), len(s.Y)) {
			if math.IsNaN(s.Y[j]) {
				continue
			}
			p := canvas.CanvasPointFromFloat64Point(lc.Origin(), lc.ScaleFloat64Point(pt(s.X[j], s.Y[j])))
			p.X, p.Y = p.X+1, p.Y-1
			for _, dx := range []int{0, 1, -1, 2, -2} {
				q := canvas.Point{X: p.X + dx, Y: p.Y}
				if !taken[q] && q.X > lc.Origin().X && q.X < w {
					p = q
					break
				}
			}
			taken[p] = true
			lc.Canvas.SetCell(p, canvas.NewCellWithStyle(plotMarks[i%len(plotMarks)], st))
		}
	}
	// Ticks under the X axis at the data's values (or the categories), centred, skipping
	// any that would touch the previous one.
	type tick struct {
		x float64
		s string
	}
	var ticks []tick
	if len(d.XTicks) > 0 {
		for i, s := range d.XTicks {
			ticks = append(ticks, tick{float64(i), s})
		}
	} else {
		seen := map[float64]bool{}
		for _, s := range d.Series {
			for _, x := range s.X {
				if !seen[x] {
					seen[x] = true
					ticks = append(ticks, tick{x, compact(x)})
				}
			}
		}
		sortTicks := func(a, b tick) bool { return a.x < b.x }
		for i := 1; i < len(ticks); i++ {
			for j := i; j > 0 && sortTicks(ticks[j], ticks[j-1]); j-- {
				ticks[j], ticks[j-1] = ticks[j-1], ticks[j]
			}
		}
	}
	o := lc.Origin()
	next := 0
	for _, t := range ticks {
		col := canvas.CanvasPointFromFloat64Point(o, lc.ScaleFloat64Point(pt(t.x, 0))).X + 1
		n := ansi.StringWidth(t.s)
		at := min(max(col-n/2, next), w-n)
		if at < next || at < 0 {
			continue
		}
		lc.Canvas.SetStringWithStyle(canvas.Point{X: at, Y: o.Y + 1}, t.s, label)
		next = at + n + 1
	}

	out := append([]string(nil), head...)
	for _, l := range strings.Split(lc.View(), "\n") {
		out = append(out, l)
	}
	out = append(out, foot...)
	out = append(out, legend...)
	if !color {
		for i := range out {
			out[i] = ansi.Strip(out[i])
		}
	}
	return strings.Join(fitHeight(out, h), "\n")
}

// seriesStyle is series i's colour, or no style without colour.
func seriesStyle(i int, color bool) lipgloss.Style {
	if !color {
		return lipgloss.NewStyle()
	}
	return lipgloss.NewStyle().Foreground(lipgloss.Color(plotColours[i%len(plotColours)]))
}

// fitHeight pads or cuts lines to exactly h.
func fitHeight(lines []string, h int) []string {
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines[:h]
}

func padLeft(s string, w int) string {
	return strings.Repeat(" ", max(0, w-ansi.StringWidth(s))) + s
}

// yRange picks the Y axis of a chart with rows graph rows, labelled every second row:
// from zero when the data start near it (else from just below the lowest value, so close
// curves separate), in round steps that cover the highest value.
func yRange(lo, hi float64, rows int) (float64, float64) {
	if lo > 0 && lo < hi/3 {
		lo = 0
	}
	if lo > 0 {
		lo -= (hi - lo) / 8
	}
	if hi <= lo {
		hi = lo + max(1, math.Abs(lo))
	}
	n := max(1, rows/2)
	step := stepCeil((hi - lo) / float64(n))
	lo = math.Floor(lo/step) * step
	for lo+step*float64(n) < hi {
		step = stepCeil(step * 1.01)
		lo = math.Floor(lo/step) * step
	}
	return lo, lo + step*float64(rows)/2
}

// stepCeil rounds v up to a tick step that stays readable: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5,
// 6 or 8 times a power of ten.
func stepCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// compact prints an axis value in a few characters: 0.35, 12, 1.5k, 19k, 2.4M.
func compact(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trimZero(strconv.FormatFloat(v/1e6, 'f', 1, 64)) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case a >= 1e3:
		return trimZero(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
	case a >= 10 || a == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return trimZero(strconv.FormatFloat(v, 'f', 1, 64))
	}
	return trimZero(strconv.FormatFloat(v, 'f', 2, 64))
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
