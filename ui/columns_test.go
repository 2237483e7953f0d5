package ui

import (
	"math/rand/v2"
	"slices"
	"testing"

	"charm.land/lipgloss/v2"
	"github.com/NimbleMarkets/ntcharts/v2/canvas"
	"github.com/NimbleMarkets/ntcharts/v2/canvas/graph"
)

// columns draws what ntcharts' column chart draws on an empty canvas, for heights from
// 0.02 of a row to the chart's full height, fewer columns than cells and as many.
func TestColumnsDrawAsNtcharts(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		w, rows := 1+rnd.IntN(40), 1+rnd.IntN(3)
		heights := make([]float64, rnd.IntN(w+1))
		for i := range heights {
			heights[i] = max(rnd.Float64(), 0.02) * float64(rows)
			if trial%7 == 0 {
				heights[i] = float64(rnd.IntN(rows+1)) + []float64{0, 0.0625, 0.9375, 0.999}[rnd.IntN(4)]
			}
		}
		cv := canvas.New(w, rows)
		graph.DrawColumns(&cv, canvas.Point{X: w - len(heights), Y: rows - 1}, heights, lipgloss.NewStyle())
		want := make([]string, rows)
		for y := range want {
			row := make([]rune, w)
			for x := range row {
				if row[x] = cv.Cell(canvas.Point{X: x, Y: y}).Rune; row[x] == 0 {
					row[x] = ' '
				}
			}
			want[y] = string(row)
		}
		if got := columns(heights, w, rows); !slices.Equal(got, want) {
			t.Fatalf("heights %v in %d×%d: got %q, ntcharts draws %q", heights, w, rows, got, want)
		}
	}
}
