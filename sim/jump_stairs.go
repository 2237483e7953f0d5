package sim

import "slices"

// Staircases. Some costs round a length up to whole cycles of a unit the batch's summed
// length crosses only every so many iterations (Hermes' softmax on the NDP activation
// unit takes ⌈ctx·heads/u⌉ cycles). Over a stretch such a duration is affine in the
// iteration k and in the staircase y(k), a whole number the planner counts. Every start
// time is then a maximum of functions affine in (k, y), and the argument of jump.go holds
// in that plane: a deciding predecessor that is the same at every vertex of the convex
// hull of the points (k, y(k)) is the same everywhere inside it, every iteration of the
// stretch included, so every time and metric is affine in (k, y) there. The engine probes
// the hull's vertices and the stretch's middle (where a kink of the planner's own shows,
// as in jump.go), fits the plane through three of them and checks that the others lie on
// it. A staircase that rises a step every few iterations has a hull of a handful of
// vertices, where the residue classes of its period would take two probes each.

// stairer is implemented by a jumper whose durations over a stretch are affine in the
// iteration and in one staircase it can count.
type stairer interface {
	// stairs is the staircase at each of the next n iterations of decode (each request
	// one token longer per iteration); nil when its durations follow no single one.
	stairs(decode []*Request, n int) []int
}

// hull is the vertices of the convex hull of the points (k, ys[k]) counter-clockwise: the
// lower hull from the first point to the last, then the upper hull back. Points on an
// edge are not vertices.
func hull(ys []int) []int {
	cross := func(o, a, b int) int { return (a-o)*(ys[b]-ys[o]) - (ys[a]-ys[o])*(b-o) }
	var lower, upper []int
	for k := range ys {
		for len(lower) >= 2 && cross(lower[len(lower)-2], lower[len(lower)-1], k) <= 0 {
			lower = lower[:len(lower)-1]
		}
		lower = append(lower, k)
		for len(upper) >= 2 && cross(upper[len(upper)-2], upper[len(upper)-1], k) >= 0 {
			upper = upper[:len(upper)-1]
		}
		upper = append(upper, k)
	}
	for i := len(upper) - 2; i > 0; i-- {
		lower = append(lower, upper[i])
	}
	return lower
}

// plane is the affine map from the points (k, y) of a stretch to the weights of its three
// anchor samples: the sample at (k, y) is a + f·(b − a) + g·(c − a).
type plane struct {
	ka, ya, kb, yb, kc, yc int
}

// weights are f and g at (k, y); g is 0 when the anchors are on one line (c = a).
func (p plane) weights(k, y int) (f, g float64) {
	dk1, dy1, dk2, dy2 := p.kb-p.ka, p.yb-p.ya, p.kc-p.ka, p.yc-p.ya
	det := dk1*dy2 - dk2*dy1
	if det == 0 {
		return float64(k-p.ka) / float64(dk1), 0
	}
	return float64((k-p.ka)*dy2-dk2*(y-p.ya)) / float64(det), float64(dk1*(y-p.ya)-(k-p.ka)*dy1) / float64(det)
}

// stairStretch looks for a stretch of up to len(ys) iterations whose samples are affine
// in the iteration and the staircase ys, halving it until they are, as startStretch does.
// A last iteration of another shape than the first cuts it first where it last has the
// first's shape (lastAlike), as a stretch of residue classes is cut.
func (e *Engine) stairStretch(j jumper, decode []*Request, ys []int, kvStall bool) {
	a, ok := e.sampleAt(j, decode, 0, kvStall)
	n := len(ys)
	var b *sample
	if ok {
		var last sample
		if last, ok = e.sampleAt(j, decode, n-1, kvStall); ok {
			b = &last
			if !sameShape(a, last) {
				var q int
				q, last, ok = e.lastAlike(j, decode, kvStall, a, n-1)
				if n = q + 1; ok && n < minStretch {
					e.jumpRetry = e.step + n
					return
				}
			}
		}
	}
	for ; ok && n >= minStretch; n /= 2 {
		var st *stretch
		if st, ok = e.stairFit(j, decode, ys[:n], a, b, kvStall); st != nil {
			e.jump = st
			return
		}
		// The halved stretch ends elsewhere: its last iteration is probed afresh.
		b = nil
	}
	e.jumpRetry = e.step + minStretch
}

// stairFit probes the hull of the first len(ys) iterations and the middle one and returns
// their stretch if every probe lies on the plane through the first, the last and the hull
// vertex farthest from the line between them; false when the planner cannot probe. last,
// when not nil, is the last iteration's sample, already probed.
func (e *Engine) stairFit(j jumper, decode []*Request, ys []int, a sample, last *sample, kvStall bool) (*stretch, bool) {
	n := len(ys)
	p := plane{ka: 0, ya: ys[0], kb: n - 1, yb: ys[n-1], kc: 0, yc: ys[0]}
	far := 0
	vs := hull(ys)
	for _, v := range vs {
		if d := abs((ys[v]-p.ya)*p.kb - (p.yb-p.ya)*v); d > far {
			far, p.kc, p.yc = d, v, ys[v]
		}
	}
	var b sample
	ok := true
	if last != nil {
		b = *last
	} else if b, ok = e.sampleAt(j, decode, p.kb, kvStall); !ok {
		return nil, false
	}
	c := a
	if p.kc != 0 {
		if c, ok = e.sampleAt(j, decode, p.kc, kvStall); !ok {
			return nil, false
		}
	}
	if !slices.Contains(vs, (n-1)/2) {
		vs = append(vs, (n-1)/2)
	}
	for _, k := range vs {
		if k == p.ka || k == p.kb || k == p.kc {
			continue
		}
		m, ok := e.sampleAt(j, decode, k, kvStall)
		if !ok {
			return nil, false
		}
		f, g := p.weights(k, ys[k])
		if !onPlane(a, b, c, m, f, g) {
			return nil, true
		}
	}
	return &stretch{events: e.events, batch: len(decode), decode: decode, kvStall: kvStall, n: n, per: 1,
		a: []sample{a}, b: []sample{b}, c: c, ys: ys, plane: p}, true
}
