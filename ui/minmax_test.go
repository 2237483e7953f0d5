package ui

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

// TestMinMax checks minMax against slices.Min and slices.Max bit for bit, on every
// length around its stride, with negative zeros, infinities and NaNs among the values.
func TestMinMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float64{math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), math.NaN()}
	for n := 1; n <= 40; n++ {
		for trial := range 50 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.Float64()*2 - 1
				if trial%3 > 0 && rng.IntN(4) == 0 {
					v[i] = special[rng.IntN(len(special)-trial%2)]
				}
			}
			lo, hi := minMax(v)
			wlo, whi := slices.Min(v), slices.Max(v)
			if !same(lo, wlo) || !same(hi, whi) {
				t.Fatalf("minMax(%v) = %v, %v, want %v, %v", v, lo, hi, wlo, whi)
			}
		}
	}
}

func same(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// TestBlock checks a shown cell's sums and maxima against max itself, over blocks
// that run off the grid's edges and values that include negative zeros and NaNs.
func TestBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float64{math.Copysign(0, -1), 0, 1, math.NaN()}
	g := sim.BankGrid{Rows: 7, Cols: 9}
	n := g.Rows * g.Cols
	g.PIM, g.Mem, g.Owner = make([]float64, n), make([]float64, n), make([]int, n)
	for trial := range 40 {
		for i := range n {
			g.PIM[i], g.Mem[i], g.Owner[i] = rng.Float64(), rng.Float64(), rng.IntN(3)
			if trial%2 == 1 && rng.IntN(5) == 0 {
				g.PIM[i] = special[rng.IntN(len(special)-trial%4/2)]
				g.Mem[i] = special[rng.IntN(len(special))]
			}
		}
		m := &heatmap{snap: &sim.Snapshot{Banks: g}}
		for r0 := 0; r0 < g.Rows+1; r0 += 2 {
			for c0 := 0; c0 < g.Cols+2; c0 += 3 {
				got := m.block(r0, c0, 3, 4, map[int]int{})
				// means has the same means, bit for bit, for a row of such blocks.
				pim, mem := make([]float64, 3), make([]float64, 3)
				m.means(pim, mem, r0, c0, 3, 4)
				if b := m.block(r0, c0, 3, 4, nil); !same(pim[0], b.pim) || !same(mem[0], b.mem) {
					t.Fatalf("means at (%d, %d) = %v, %v; block has %v, %v", r0, c0, pim[0], mem[0], b.pim, b.mem)
				}
				for j := 1; j < 3 && c0+j*4 < g.Cols; j++ {
					if b := m.block(r0, c0+j*4, 3, 4, nil); !same(pim[j], b.pim) || !same(mem[j], b.mem) {
						t.Fatalf("means at (%d, %d) block %d = %v, %v; block has %v, %v", r0, c0, j, pim[j], mem[j], b.pim, b.mem)
					}
				}
				want := block{owner: -1}
				cells := 0
				var votes [3]int // owners are 0–2
				for r := r0; r < min(r0+3, g.Rows); r++ {
					for c := c0; c < min(c0+4, g.Cols); c++ {
						i := r*g.Cols + c
						want.pim += g.PIM[i]
						want.mem += g.Mem[i]
						want.pimMax, want.memMax = max(want.pimMax, g.PIM[i]), max(want.memMax, g.Mem[i])
						votes[g.Owner[i]]++
						cells++
					}
				}
				if cells > 0 {
					want.pim /= float64(cells)
					want.mem /= float64(cells)
				}
				// The owner of most cells, the larger id on a tie.
				for o, best := 2, 0; o >= 0; o-- {
					if votes[o] > best {
						want.owner, best = o, votes[o]
					}
				}
				if !same(got.pim, want.pim) || !same(got.mem, want.mem) || !same(got.pimMax, want.pimMax) ||
					!same(got.memMax, want.memMax) || got.owner != want.owner {
					t.Fatalf("block at %d,%d: %+v, want %+v", r0, c0, got, want)
				}
			}
		}
	}
}
