package ui

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// plotFixture is a throughput-against-batch chart of four systems, one of which runs
// out of memory at the largest batch.
func plotFixture() PlotData {
	b := []float64{64, 128, 256, 384, 512}
	return PlotData{Title: "throughput_tok_s against batch", XLabel: "batch", YLabel: "throughput_tok_s", Series: []Series{
		{"neupims", b, []float64{15800, 23400, 40200, 49800, 55900}},
		{"npu-pim", b, []float64{12900, 19100, 27800, 31200, 33400}},
		{"npu-only", b, []float64{11200, 15600, 22900, 24100, 24800}},
		{"gpu-a100", b, []float64{12100, 17200, 22600, 23900, math.NaN()}},
	}}
}

// TestPlotGolden draws the chart at two sizes, plain (what NO_COLOR shows): exactly h
// lines, none wider than w, every series' glyph in the legend.
func TestPlotGolden(t *testing.T) {
	for _, sz := range [][2]int{{80, 20}, {48, 14}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			out := Plot(plotFixture(), sz[0], sz[1], false)
			checkPlot(t, out, sz[0], sz[1])
			if strings.Contains(out, "\x1b") {
				t.Fatal("escape sequences without colour")
			}
			for i, s := range plotFixture().Series {
				if want := string(plotMarks[i]) + " " + s.Name; !strings.Contains(out, want) {
					t.Errorf("legend lacks %q", want)
				}
			}
			golden.RequireEqual(t, out)
		})
	}
}

func checkPlot(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Fatalf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, n, w, ansi.Strip(l))
		}
	}
}

// Colour only adds escapes: stripped, the coloured chart is the plain one.
func TestPlotColourMatchesPlain(t *testing.T) {
	col := Plot(plotFixture(), 72, 18, true)
	if !strings.Contains(col, "\x1b[") {
		t.Fatal("no colour")
	}
	checkPlot(t, col, 72, 18)
	if ansi.Strip(col) != Plot(plotFixture(), 72, 18, false) {
		t.Error("coloured and plain charts differ in their text")
	}
}

// Categorical axes, a single point, no data and tiny sizes draw without panicking and
// keep to the size.
func TestPlotEdgeCases(t *testing.T) {
	cases := map[string]PlotData{
		"categorical": {Title: "t", XLabel: "model", YLabel: "y", XTicks: []string{"gpt3-7b", "gpt3-13b", "gpt3-30b"},
			Series: []Series{{"a", []float64{0, 1, 2}, []float64{3, 2, 1}}}},
		"one point": {Series: []Series{{"a", []float64{5}, []float64{7}}}},
		"empty":     {},
		"all NaN":   {Series: []Series{{"a", []float64{1, 2}, []float64{math.NaN(), math.NaN()}}}},
		"negative":  {Series: []Series{{"a", []float64{1, 2, 3}, []float64{-5, 0, 5}}}},
		"many": {Series: func() []Series {
			s := make([]Series, 14)
			for i := range s {
				s[i] = Series{fmt.Sprintf("series-%d", i), []float64{1, 2}, []float64{float64(i), float64(2 * i)}}
			}
			return s
		}()},
	}
	for name, d := range cases {
		for _, sz := range [][2]int{{20, 8}, {60, 16}, {5, 3}} {
			t.Run(fmt.Sprintf("%s %dx%d", name, sz[0], sz[1]), func(t *testing.T) {
				out := Plot(d, sz[0], sz[1], false)
				checkPlot(t, out, max(sz[0], 20), max(sz[1], 8))
			})
		}
	}
	out := Plot(cases["categorical"], 60, 16, false)
	for _, m := range []string{"gpt3-7b", "gpt3-13b", "gpt3-30b"} {
		if !strings.Contains(out, m) {
			t.Errorf("categorical tick %s missing:\n%s", m, out)
		}
	}
}
