package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHullHoldsEveryPoint checks the hull of random staircases: its vertices are points
// of the staircase, the first and the last among them, and every point lies inside the
// polygon they make, so a predecessor the same at every vertex is the same at every point.
func TestHullHoldsEveryPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 200 {
		n := 2 + rng.IntN(300)
		per, rise, y0 := 1+rng.IntN(64), 1+rng.IntN(3), rng.IntN(1000)
		ys := make([]int, n)
		for k := range ys {
			ys[k] = (y0 + rise*k + per - 1) / per
		}
		vs := hull(ys)
		if vs[0] != 0 || !slices.Contains(vs, n-1) {
			t.Fatalf("n %d per %d: hull %v misses an end", n, per, vs)
		}
		poly := vs // counter-clockwise
		for k := range ys {
			for i := range poly {
				o, a := poly[i], poly[(i+1)%len(poly)]
				if len(poly) > 2 && (a-o)*(ys[k]-ys[o])-(ys[a]-ys[o])*(k-o) < 0 {
					t.Fatalf("n %d per %d rise %d: point (%d, %d) outside the hull %v", n, per, rise, k, ys[k], vs)
				}
			}
		}
	}
}

// TestPlaneWeights checks that the plane puts its anchors at their samples and a point
// off the line from a to b on c's side: a sample affine in (k, y) is a + f·(b−a) + g·(c−a).
func TestPlaneWeights(t *testing.T) {
	p := plane{ka: 0, ya: 5, kb: 126, yb: 8, kc: 31, yc: 5}
	val := func(k, y int) float64 { return 7 + 3*float64(k) + 1000*float64(y) }
	for _, pt := range [][2]int{{0, 5}, {126, 8}, {31, 5}, {96, 8}, {63, 6}, {64, 7}} {
		f, g := p.weights(pt[0], pt[1])
		a, b, c := val(p.ka, p.ya), val(p.kb, p.yb), val(p.kc, p.yc)
		if got, want := a+(b-a)*f+(c-a)*g, val(pt[0], pt[1]); got-want > 1e-9*want || want-got > 1e-9*want {
			t.Errorf("(%d, %d): %v, want %v", pt[0], pt[1], got, want)
		}
	}
	if f, g := (plane{kb: 10, yb: 10}).weights(4, 4); f != 0.4 || g != 0 {
		t.Errorf("collinear anchors: weights %v, %v, want 0.4, 0", f, g)
	}
	a := sample{t: 1000, util: map[string]float64{}, bubble: map[string]float64{}, cause: map[string]Causes{}, spans: 1}
	b, c, m := a, a, a
	b.t, c.t = 2000, 1100
	f, g := p.weights(96, 8)
	m.t = Time(1000 + 1000*f + 100*g)
	if !onPlane(a, b, c, m, f, g) {
		t.Error("a sample on the plane was refused")
	}
	m.t += 50
	if onPlane(a, b, c, m, f, g) {
		t.Error("a sample 50 ps off the plane was accepted")
	}
}

// kinkStairs is a planner of one op whose duration is affine in the iteration up to kink
// and steeper after it, over the staircase y(k) = k: the schedule keeps one shape, so only
// the middle check can find the kink.
type kinkStairs struct {
	shift, kink int
}

func (p *kinkStairs) lanes() []Lane                            { return []Lane{{Name: "gpu", Group: "gpu"}} }
func (p *kinkStairs) admit(cands, running []*Request) []bool   { return make([]bool, len(cands)) }
func (p *kinkStairs) grow(*Request) bool                       { return true }
func (p *kinkStairs) release(*Request)                         {}
func (p *kinkStairs) fit(in, out int) string                   { return "" }
func (p *kinkStairs) observe(*Snapshot, *Schedule, []*Request) {}
func (p *kinkStairs) utilKeys() []string                       { return nil }
func (p *kinkStairs) layers() int                              { return 1 }
func (p *kinkStairs) pool() *kvPool                            { return nil }
func (p *kinkStairs) plan(s *Schedule, decode, prefill []*Request) []StageMark {
	d := 1000 + 10*p.shift + 50*max(0, p.shift-p.kink)
	s.Add(Op{Name: "op", Lane: 0, Dur: Time(d)})
	return nil
}
func (p *kinkStairs) probe(s *Schedule, decode []*Request, shift int) bool {
	p.shift = shift
	p.plan(s, decode, nil)
	return true
}
func (p *kinkStairs) kvStats([]*Request) (int, float64, float64)      { return 0, 0, 0 }
func (p *kinkStairs) stuck() bool                                     { return false }
func (p *kinkStairs) fragPeak(_, _ []*Request, _ int) (float64, bool) { return 0, false }
func (p *kinkStairs) cycle([]*Request, int) (int, int)                { return 1, math.MaxInt }
func (p *kinkStairs) decided(sig []int32) []int32                     { return sig }
func (p *kinkStairs) balance() (float64, float64, int)                { return 0, 0, 0 }
func (p *kinkStairs) stairs(decode []*Request, n int) []int {
	ys := make([]int, n)
	for k := range ys {
		ys[k] = k
	}
	return ys
}

// TestStairStretchHalvesAfresh checks that a staircase stretch refused for a kink inside
// it is halved with its new last iteration probed, not the old one's sample standing in:
// 64 iterations with a kink at 40 jump the first 32.
func TestStairStretchHalvesAfresh(t *testing.T) {
	p := &kinkStairs{kink: 40}
	e := &Engine{sys: p}
	e.stairStretch(p, []*Request{{}}, p.stairs(nil, 64), false)
	if e.jump == nil || e.jump.n != 32 {
		t.Fatalf("stretch %+v, want the first 32 of 64 iterations", e.jump)
	}
	if got, want := e.jump.b[0].t, Time(1000+10*31); got != want {
		t.Errorf("last iteration's time %v, want %v", got, want)
	}
}
