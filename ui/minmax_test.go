package ui

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
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
