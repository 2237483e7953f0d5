package sim

import (
	"bytes"
	"math"
	"slices"
	"unsafe"
)

// Event jumps. Between two events (an admission, a retirement, a preemption, a prompt, a
// change of KV stall) a decode batch is the same requests, each one token longer per
// iteration. The list scheduler is a max-plus network in emission order: a span starts
// at the latest of its lane's previous end, its dependencies' ends and its stage barrier.
// For a fixed op graph whose durations are affine in the iteration k of the stretch,
// every start time is a maximum of affine functions. If the spans' deciding predecessors
// (By), the bubbles' lanes, causes and awaited spans, and the critical path are the same
// at both ends of [0, n−1], each start time is affine over it: by induction in emission
// order S_i(k) = S_j(k) + d_j(k) with j the predecessor chosen at both ends, S_j affine,
// every other candidate convex, so their difference is concave, ≥ 0 at both ends and
// therefore ≥ 0 between. The iteration time, each lane's busy time, each idle cause's
// time and the FLOPs are then affine in k, and the engine interpolates them instead of
// planning each iteration. A planner's costs are affine only up to its own discrete
// decisions (a ceiling of a length over a block, a re-split of its sub-batches); the
// same check at the middle of the stretch, where any kink of a convex or concave function
// shows, rejects a stretch over one, and the engine then halves it. Durations are whole
// picoseconds, rounded per op, so the interpolation is exact to a picosecond per span:
// within 1e-9 of the stepped run's times and sums.
//
// Some costs round a length up to a slot (L3's bank PUs read K in slots of one token per
// bank): summed over a batch they kink every few iterations, but each request's cost
// repeats with the slot, so over the iterations k ≡ j (mod the slot) every duration is
// affine again. A planner declares that period (cycle); the engine then interpolates each
// residue class between its own first and last iteration, checked as above. A planner's
// discrete decisions that compare lengths (which sub-batch a request joins) compare affine
// functions of k: the same outcome at both ends of a class is the same throughout, so
// they are part of the signature (decided).
//
// The engine still runs every iteration's admission, token accounting, retirement and
// KV growth as stepping does, so events end a stretch exactly where they happen, and
// every percentile reads the same per-iteration times.

// jumper is implemented by a planner that can lay out, without changing its state, the
// iteration its decode batch will run some iterations on.
type jumper interface {
	// probe plans on s the iteration of decode shift iterations on (every request shift
	// tokens longer) with no prompts; false when its plan over a stretch depends on state
	// it keeps (a predictor fitted online, an adaptive admission), which a probe cannot
	// stand for.
	probe(s *Schedule, decode []*Request, shift int) bool
	// kvStats is the KV cache as observe reports it after an iteration: blocks in use,
	// fragmentation and utilisation.
	kvStats(running []*Request) (used int, frag, util float64)
	// stuck reports whether an admission that placed no one will place no one until a
	// request leaves or arrives: what it checks only tightens as the batch grows.
	stuck() bool
	// fragPeak is the KV cache's highest fragmentation over the next m iterations of
	// running, each request of decode one token longer per iteration (the others wait);
	// false when it cannot tell without stepping them.
	fragPeak(running, decode []*Request, m int) (float64, bool)
	// cycle is the period over whose residue classes the probed plan's durations are
	// affine, and how many iterations from now they stay so, for decode over a stretch of
	// at most n iterations (a short stretch may have a shorter period).
	cycle(decode []*Request, n int) (period, limit int)
	// decided appends to sig the discrete decisions of the plan probe just laid out.
	decided(sig []int32) []int32
	// balance is the load imbalance observe just reported, as its numerator (the busiest
	// unit's load), its denominator (the mean load) and the busiest unit, each affine
	// over a stretch whose busiest unit does not change.
	balance() (top, mean float64, at int)
}

// decliner is a planner whose admission may keep a request waiting by choice, not for
// want of room.
type decliner interface {
	// declines is how many of the next m admissions, r at the head of the queue, place
	// nothing and report the same refusal as the last, decode one token longer each
	// iteration.
	declines(running, decode []*Request, r *Request, m int) int
}

// minStretch is the shortest stretch worth its three probes.
const minStretch = 8

// sample is what one iteration adds to the run's metrics (time-weighted, as observe adds
// them) and its schedule's signature.
type sample struct {
	t            Time
	flops        float64
	util, bubble map[string]float64
	cause        map[string]Causes
	top, mean    float64 // load imbalance = top / mean (0: none reported)
	sig          []int32
	spans        int
}

// stretch is a run of iterations whose samples are interpolated, each residue class j
// (mod per) between a[j] and b[j], or, over a staircase ys (jump_stairs.go), on the plane
// through a[0], b[0] and c.
type stretch struct {
	events  int        // the engine's event count when it began
	batch   int        // requests decoding
	decode  []*Request // the requests decoding, as the engine fetched them
	kvStall bool       // admission's KV stall, which the bubbles' causes depend on
	k, n    int        // iterations done, in all
	per     int
	a, b    []sample
	c       sample
	ys      []int
	plane   plane
	// The run's time-weighted sums while tick adds to them, per key of keys, so that an
	// iteration adds without looking its keys up; flush hands them back.
	keys    []string // util's keys, bubble's, then cause's
	nu, nb  int      // how many of keys are util's, bubble's
	sums    []float64
	causes  []Causes
	fa, fb  []flat // a's and b's metrics in the order of keys
	fc      flat
	pending bool // sums hold additions flush has not handed back
}

// flat is a sample's metrics in its stretch's order of keys.
type flat struct {
	vals   []float64
	causes []Causes
}

// signature is what must not change over a stretch for its times to be affine: each
// span's lane and what set its start, each bubble's lane, cause and awaited span, and the
// critical path. sampleAt gives it a buffer with room for the planner's decisions too.
// It also returns the spans' FLOPs, summed in the same pass over the spans as observe
// sums them (most spans do none, and adding 0 leaves the sum as it is).
func signature(s *Schedule, buf []int32) (sig []int32, flops float64) {
	if n := 3 + 3*(len(s.Spans)+len(s.Bubbles)) + len(s.Critical); cap(buf) < n {
		buf = make([]int32, 0, n)
	}
	buf = append(buf[:0], int32(len(s.Spans)), int32(len(s.Bubbles)), int32(len(s.Critical)))
	for i := range s.Spans {
		sp := &s.Spans[i]
		buf = append(buf, int32(sp.Lane), int32(sp.By), int32(sp.Stage))
		if sp.FLOPs != 0 {
			flops += sp.FLOPs
		}
	}
	for i := range s.Bubbles {
		b := &s.Bubbles[i]
		buf = append(buf, int32(b.Lane), int32(b.Cause), int32(b.Waited))
	}
	for _, c := range s.Critical {
		buf = append(buf, int32(c))
	}
	return buf, flops
}

// sampleAt probes the planner shift iterations on and measures the iteration as observe
// would; false when the planner cannot probe.
func (e *Engine) sampleAt(j jumper, decode []*Request, shift int, kvStall bool) (sample, bool) {
	if e.probeS == nil {
		e.probeS = NewSchedule(e.sys.lanes(), e.spanHint, e.bubbleHint)
	} else {
		e.probeS.Reset(e.sys.lanes())
	}
	s := e.probeS
	if !j.probe(s, decode, shift) {
		return sample{}, false
	}
	s.kvStall = kvStall
	t := s.Finish()
	if t <= 0 {
		return sample{}, false
	}
	// The sample reads the snapshot's utilisations and load imbalance, which the schedule
	// and the plan give; with no requests passed, the planner does not measure its KV cache
	// for a snapshot no one reads.
	snap := &Snapshot{IterTime: t}
	snap.Metrics.Util = map[string]float64{}
	e.sys.observe(snap, s, nil)
	// Room for the planner's decisions too: a few of its own and one per decoding request.
	// A stretch keeps no signature once it is found, so the next search reuses them.
	if e.nsig == len(e.sigs) {
		e.sigs = append(e.sigs, nil)
	}
	buf := e.sigs[e.nsig][:0]
	if n := 3 + 3*(len(s.Spans)+len(s.Bubbles)) + len(s.Critical) + len(decode) + 8; cap(buf) < n {
		buf = make([]int32, 0, n)
	}
	sig, flops := signature(s, buf)
	sm := sample{t: t, flops: flops, util: map[string]float64{}, bubble: map[string]float64{}, cause: map[string]Causes{},
		sig: j.decided(sig), spans: len(s.Spans)}
	e.sigs[e.nsig] = sm.sig
	e.nsig++
	if snap.Metrics.LoadImbalance > 0 {
		top, mean, at := j.balance()
		sm.top, sm.mean, sm.sig = top, mean, append(sm.sig, int32(at))
	}
	for k, v := range snap.Metrics.Util {
		sm.util[k] = v * float64(t)
	}
	for k, v := range bubbleByGroup(s, t) {
		sm.bubble[k] = v * float64(t)
	}
	causes, _, _ := bubbleForensics(s, t)
	for k, v := range causes {
		for i := range v {
			v[i] *= float64(t)
		}
		sm.cause[k] = v
	}
	return sm, true
}

// within reports whether x is within the interpolation's error of y: a picosecond per span
// (every op's duration is rounded to one) and 1e-9 relative.
func within(x, y float64, spans int) bool {
	return math.Abs(x-y) <= 1e-9*max(math.Abs(x), math.Abs(y))+float64(spans)
}

// onPlane reports whether m lies where a + f·(b − a) + g·(c − a) puts it (on the line
// from a to b when c is a), with the same schedule shape.
func onPlane(a, b, c, m sample, f, g float64) bool {
	if !sameShape(a, m) || !sameShape(a, b) || !sameShape(a, c) {
		return false
	}
	lerp := func(x, y, z float64) float64 { return x + (y-x)*f + (z-x)*g }
	if !within(float64(m.t), lerp(float64(a.t), float64(b.t), float64(c.t)), a.spans) || !within(m.flops, lerp(a.flops, b.flops, c.flops), a.spans) ||
		!within(m.top, lerp(a.top, b.top, c.top), a.spans) || !within(m.mean, lerp(a.mean, b.mean, c.mean), a.spans) {
		return false
	}
	for _, mp := range [][4]map[string]float64{{a.util, m.util, b.util, c.util}, {a.bubble, m.bubble, b.bubble, c.bubble}} {
		for k, x := range mp[0] {
			if !within(mp[1][k], lerp(x, mp[2][k], mp[3][k]), a.spans) {
				return false
			}
		}
	}
	for k, x := range a.cause {
		y, z, w := m.cause[k], b.cause[k], c.cause[k]
		for i := range x {
			if !within(y[i], lerp(x[i], z[i], w[i]), a.spans) {
				return false
			}
		}
	}
	return true
}

// sameShape reports whether two samples have the same schedule shape and decisions and
// report the same metrics.
func sameShape(a, b sample) bool {
	if !sameSig(a.sig, b.sig) || (a.mean > 0) != (b.mean > 0) || len(a.util) != len(b.util) ||
		len(a.bubble) != len(b.bubble) || len(a.cause) != len(b.cause) {
		return false
	}
	for _, mp := range [][2]map[string]float64{{a.util, b.util}, {a.bubble, b.bubble}} {
		for k := range mp[0] {
			if _, ok := mp[1][k]; !ok {
				return false
			}
		}
	}
	for k := range a.cause {
		if _, ok := b.cause[k]; !ok {
			return false
		}
	}
	return true
}

// sameSig reports whether two signatures are equal. They run to thousands of numbers and
// are compared several times a probe, so they are compared as the bytes they occupy,
// which the runtime compares many at a time, where slices.Equal would compare one number
// at a time.
func sameSig(a, b []int32) bool {
	return len(a) == len(b) && bytes.Equal(int32Bytes(a), int32Bytes(b))
}

func int32Bytes(x []int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// plainDecode is the iteration's decode batch when every running request is decoding and
// nothing else runs, or nil. A system that fetches its decodes (L3 §5.3 step 1) may leave
// some waiting for room: they hold their KV cache and take no token, and they keep waiting
// until blocks are freed, which only an event does, since the others' growth only takes
// room. The batch is then the fetched requests.
func (e *Engine) plainDecode() []*Request {
	for _, r := range e.running {
		if r.Status != Running {
			return nil
		}
	}
	decode := slices.Clone(e.running)
	if f, ok := e.sys.(decodeFetcher); ok {
		decode = f.fetch(decode)
		if len(decode) == 0 {
			return nil
		}
	}
	return decode
}

// startStretch, after an iteration has been stepped, looks for a stretch the next
// iterations can jump: as long as the same requests decode, up to the first to finish (or
// reach its context window), the first preemption, the run's step limit and the end of
// the planner's cycle, shortened by halves until the planner's iteration is affine over
// every residue class of its period. Each class is probed at its first and last iteration,
// the first class also at its middle.
func (e *Engine) startStretch(kvStall bool) {
	e.jump, e.nsig = nil, 0
	j, ok := e.sys.(jumper)
	if !ok || !e.cfg.Jump || e.step < e.jumpRetry || len(e.running) == 0 || e.Done() {
		return
	}
	decode := e.plainDecode()
	if decode == nil {
		return
	}
	n := math.MaxInt
	for _, r := range decode {
		n = min(n, r.OutputLen-r.Generated)
		if l := r.InputLen + r.Generated; r.window > 0 && l < r.window {
			n = min(n, r.window-l)
		}
	}
	if w := e.cfg.Workload; w.Steps > 0 {
		n = min(n, w.Steps-e.step)
	}
	// A preemption ends the stretch with the iteration whose KV growth does not fit.
	n = min(n, e.sys.pool().growsFor(decode, n)+1)
	per, limit := j.cycle(decode, n)
	n = min(n, limit)
	if sj, ok := j.(stairer); ok && n >= minStretch {
		if ys := sj.stairs(decode, n); ys != nil {
			e.stairStretch(j, decode, ys, kvStall)
			return
		}
	}
	// Below three periods the probes would cost more than the iterations they stand for.
	shortest := max(minStretch, 3*per)
	if n < shortest {
		return
	}
	// The first class is probed at its ends and, once they have one shape, its middle; the
	// others, at their ends, only once it passes.
	a := make([]sample, per)
	probed := 1
	a[0], ok = e.sampleAt(j, decode, 0, kvStall)
	for ok && n >= shortest {
		q := lastOf(0, n, per) / per
		mid := q / 2
		b := make([]sample, per)
		var m sample
		if b[0], ok = e.sampleAt(j, decode, q*per, kvStall); !ok {
			break
		}
		if per == 1 && !sameShape(a[0], b[0]) {
			// The schedule changes shape within (a lane that was the last to finish no
			// longer is): the stretch ends where it last has the first iteration's.
			if q, b[0], ok = e.lastAlike(j, decode, kvStall, a[0], q); !ok {
				break
			}
			if n = q + 1; n < shortest {
				e.jumpRetry = e.step + n
				return
			}
			mid = q / 2
		}
		if !sameShape(a[0], b[0]) {
			// The first class ends in another shape than it starts in, which no middle
			// can mend (onPlane checks the ends' shapes first): halve without probing it.
			n /= 2
			continue
		}
		if m, ok = e.sampleAt(j, decode, mid*per, kvStall); !ok {
			break
		}
		same := onPlane(a[0], b[0], a[0], m, float64(mid)/float64(q), 0)
		for r := 1; r < per && same; r++ {
			if r == probed {
				a[r], ok = e.sampleAt(j, decode, r, kvStall)
				probed++
			}
			if ok {
				b[r], ok = e.sampleAt(j, decode, lastOf(r, n, per), kvStall)
			}
			same = ok && sameShape(a[r], b[r])
		}
		if same {
			e.jump = &stretch{events: e.events, batch: len(decode), decode: decode, kvStall: kvStall, n: n, per: per, a: a, b: b}
			return
		}
		n /= 2
	}
	// Not affine here: step a while before probing again.
	e.jumpRetry = e.step + max(minStretch, per)
}

// lastAlike is, for a stretch whose iteration hi has another schedule shape than its
// first (a), the last iteration lo < hi whose shape is a's, found by halving, and lo's
// sample. Between two iterations of the same shape every start time is affine (see
// above), so the stretch up to lo needs no iteration in between to be alike; halving
// finds one where the shape changes, the last when it changes once.
func (e *Engine) lastAlike(j jumper, decode []*Request, kvStall bool, a sample, hi int) (int, sample, bool) {
	lo, at := 0, a
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		m, ok := e.sampleAt(j, decode, mid, kvStall)
		if !ok {
			return 0, sample{}, false
		}
		if sameShape(a, m) {
			lo, at = mid, m
		} else {
			hi = mid
		}
	}
	return lo, at, true
}

// lastOf is the last iteration of residue class r (mod per) among the first n.
func lastOf(r, n, per int) int { return r + (n-1-r)/per*per }

// leap runs the admitted iteration it as the next of the stretch, if one is under way and
// nothing has happened since it began: the planner is not asked, its time and metrics are
// the stretch's interpolation, and everything else runs as stepping runs it.
func (e *Engine) leap(it *iteration) (*Snapshot, bool) {
	st := e.jump
	if st == nil {
		return nil, false
	}
	if e.events != st.events || it.kvStall != st.kvStall || len(it.prefill) > 0 {
		e.jump = nil
		return nil, false
	}
	decode := e.plainDecode()
	if !slices.Equal(decode, st.decode) {
		e.jump = nil
		return nil, false
	}
	t := e.tick(st)
	it.decode, it.t = decode, t
	it.measured = e.step > e.cfg.Workload.Warmup
	e.retire(it)
	if it.measured {
		e.stats.tokens += it.tokens
		e.kvPeaks()
	}
	if st.k < st.n-1 {
		e.bulk(st, it)
	}
	e.flush(st)
	if st.k == st.n {
		e.jump = nil
	}
	snap := &Snapshot{Step: e.step, Now: e.now, IterTime: t, Batch: len(it.decode), Queue: e.waiting(),
		Tokens: it.tokens, Done: e.done, Total: e.cfg.Workload.Requests}
	snap.Metrics.IterTime = t
	snap.Metrics.StepTokPerSec = float64(it.tokens) / t.Seconds()
	if e.stats.time > 0 {
		snap.Metrics.Throughput = float64(e.stats.tokens) / e.stats.time.Seconds()
	}
	return snap, true
}

// tick advances the clock by the stretch's next iteration and adds its interpolated time
// and metrics to the run's, as observe adds a stepped one's; the caller gives its tokens.
func (e *Engine) tick(st *stretch) Time {
	r := st.k % st.per
	a, b, c := &st.a[r], &st.b[r], &st.a[r]
	st.index()
	fa, fb, fc := &st.fa[r], &st.fb[r], &st.fa[r]
	var f, g float64
	if st.ys != nil {
		c, fc = &st.c, &st.fc
		f, g = st.plane.weights(st.k, st.ys[st.k])
	} else if q := lastOf(r, st.n, st.per) / st.per; q > 0 {
		f = float64(st.k/st.per) / float64(q)
	}
	lerp := func(x, y, z float64) float64 { return x + (y-x)*f + (z-x)*g }
	t := a.t + Time(math.Round(float64(b.t-a.t)*f+float64(c.t-a.t)*g))
	e.now += t
	e.step++
	st.k++
	e.jumped++
	if e.step <= e.cfg.Workload.Warmup {
		return t
	}
	s := &e.stats
	s.iters++
	s.batchSum += st.batch
	s.time += t
	s.iter.add(t, 1)
	s.flops += lerp(a.flops, b.flops, c.flops)
	e.take(st)
	for i, x := range fa.vals {
		st.sums[i] += lerp(x, fb.vals[i], fc.vals[i])
	}
	for i, x := range fa.causes {
		sum, y, z := &st.causes[i], &fb.causes[i], &fc.causes[i]
		for j := range sum {
			sum[j] += lerp(x[j], y[j], z[j])
		}
	}
	if a.mean > 0 {
		s.imbalance += lerp(a.top, b.top, c.top) / lerp(a.mean, b.mean, c.mean)
		s.imbalanceN++
	}
	return t
}

// index orders st's metric keys and its samples' metrics in that order, once.
func (st *stretch) index() {
	if st.keys != nil {
		return
	}
	a := &st.a[0]
	for _, m := range []map[string]float64{a.util, a.bubble} {
		for k := range m {
			st.keys = append(st.keys, k)
		}
	}
	st.nu, st.nb = len(a.util), len(a.bubble)
	for k := range a.cause {
		st.keys = append(st.keys, k)
	}
	st.sums = make([]float64, st.nu+st.nb)
	st.causes = make([]Causes, len(a.cause))
	for r := range st.a {
		st.fa = append(st.fa, st.flatten(&st.a[r]))
		st.fb = append(st.fb, st.flatten(&st.b[r]))
	}
	if st.ys != nil {
		st.fc = st.flatten(&st.c)
	}
}

// take moves the run's time-weighted sums into st's, unless they are there.
func (e *Engine) take(st *stretch) {
	if !st.pending {
		st.gather(e.stats.util, e.stats.bubble, e.stats.cause, st.sums, st.causes)
		st.pending = true
	}
}

// flush hands st's time-weighted sums back to the run's.
func (e *Engine) flush(st *stretch) {
	if !st.pending {
		return
	}
	s := &e.stats
	for i, k := range st.keys {
		switch {
		case i < st.nu:
			s.util[k] = st.sums[i]
		case i < st.nu+st.nb:
			s.bubble[k] = st.sums[i]
		default:
			s.cause[k] = st.causes[i-st.nu-st.nb]
		}
	}
	st.pending = false
}

// flatten is m's metrics in st's order of keys (every sample of a stretch reports the
// same keys: sameShape).
func (st *stretch) flatten(m *sample) flat {
	f := flat{vals: make([]float64, st.nu+st.nb), causes: make([]Causes, len(st.causes))}
	st.gather(m.util, m.bubble, m.cause, f.vals, f.causes)
	return f
}

// gather copies util's, bubble's and cause's values, in st's order of keys, into vals
// and causes.
func (st *stretch) gather(util, bubble map[string]float64, cause map[string]Causes, vals []float64, causes []Causes) {
	for i, k := range st.keys {
		switch {
		case i < st.nu:
			vals[i] = util[k]
		case i < st.nu+st.nb:
			vals[i] = bubble[k]
		default:
			causes[i-st.nu-st.nb] = cause[k]
		}
	}
}

// kvPeaks adds the KV cache as it is now to the run's peaks.
func (e *Engine) kvPeaks() {
	s := &e.stats
	used, frag, util := e.sys.(jumper).kvStats(e.running)
	s.kvPeakUsed = max(s.kvPeakUsed, used)
	s.kvPeakFrag = max(s.kvPeakFrag, frag)
	s.kvPeakUtil = max(s.kvPeakUtil, util)
}

// bulk runs, after the stretch's iteration it, as many of its following iterations as
// nothing can happen in, all but its last, at a cost that does not grow with the batch:
// nothing happened in it, and in them no admission (nothing waits, the batch is full, the
// planner's admission is stuck, or it declines the queue's head), no arrival, no
// preemption (every request's KV fits), and all on one side of the warm-up.
// Their clock, times and metrics advance one by one as the stretch interpolates them; the
// decoding requests take their tokens and their KV blocks at the end, as stepping leaves
// them, and those waiting for room stay as they are.
func (e *Engine) bulk(st *stretch, it *iteration) {
	j := e.sys.(jumper)
	w := e.cfg.Workload
	if _, ok := e.sys.(readier); ok || e.events != st.events {
		return
	}
	d, declines := e.sys.(decliner)
	waits := len(e.queue) > 0 && len(e.running) < w.MaxBatch && !(it.kvStall && j.stuck())
	if waits && !declines {
		return
	}
	m := st.n - 1 - st.k
	if e.step < w.Warmup {
		m = min(m, w.Warmup-e.step)
	}
	m = e.sys.pool().growsFor(it.decode, m)
	if waits {
		m = d.declines(e.running, it.decode, e.queue[0], m)
	}
	peak, ok := j.fragPeak(e.running, it.decode, m)
	if !ok || m < 1 {
		return
	}
	measured := e.step+1 > w.Warmup
	closed := w.Arrival == ArrivalClosed && w.Trace == nil
	done := 0
	for done < m && (closed || e.nextReq == nil || e.nextReq.Arrival > e.now) {
		t := e.tick(st)
		if measured {
			e.stats.tbt.add(t*e.ppMul, st.batch)
		}
		done++
	}
	if done < m {
		peak, _ = j.fragPeak(e.running, it.decode, done)
	}
	for _, r := range it.decode {
		r.Generated += done
		r.LastToken = e.now
	}
	e.growAll()
	if measured {
		e.stats.tokens += done * st.batch
		e.kvPeaks()
		e.stats.kvPeakFrag = max(e.stats.kvPeakFrag, peak)
	}
}

// Jumped is how many iterations the engine advanced by interpolation rather than by
// planning them (Config.Jump).
func (e *Engine) Jumped() int { return e.jumped }
