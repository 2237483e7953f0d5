package sim

import (
	"slices"
	"strconv"
	"unsafe"
)

// Lane is one resource that runs one operation at a time: an NPU's systolic arrays, a PIM
// channel, a GPU, a link direction. Group names the lane group utilisation is reported for
// (e.g. "npu", "pim"); lanes of one group are summed. Transfer marks a lane that moves
// data (a link, a bus, a NoC, an I/O interface) rather than computing: a lane waiting for
// one of its spans waits on a transfer.
type Lane struct {
	Name     string
	Group    string
	Transfer bool
}

// Op is one operation of an iteration as a planner emits it.
type Op struct {
	Name     string  // "QKV", "MHA", "FC1", …
	Dur      Time    // duration on its lane
	FLOPs    float64 // useful floating-point operations
	Bytes    float64 // bytes moved over the external memory bus
	Lane     int     // index into the schedule's lanes
	Stage    int     // barrier stage: starts after every op of an earlier stage ends
	Layer    int     // decoder layer (device-local)
	SubBatch int     // 0 = whole batch, 1 and 2 = NeuPIMs sub-batches
}

// Span is an op placed on its lane. By is the span whose end set its start: the
// dependency it waited for, the op that closed the stage barrier, or the previous span on
// its lane; -1 when nothing held it back (it started at 0, or on its own clock, AddAt).
type Span struct {
	Op
	Start Time
	By    int
}

// End is the time the span finishes. It takes the span by pointer: a span is some ninety
// bytes, which a call on a span in a slice copied every time, in loops over thousands.
func (s *Span) End() Time { return s.Start + s.Dur }

// BubbleCause says why a lane sat idle. The scheduler classifies every idle interval as
// it places the ops, from what held the next op back (docs/architecture.md):
//
//   - dependency: the next op waited for an op on another lane that computes;
//   - transfer: the same, but the awaited op moves data (its lane is a Transfer lane);
//   - barrier: the next op waited at a stage barrier for the last op of the stage;
//   - imbalance: the lane finished early and the op that ends the iteration runs on a
//     peer lane of the same group (another channel, PE or DIMM had more work);
//   - tail: the lane finished early and the iteration ends on a lane of another group
//     (it waits for the critical path elsewhere);
//   - capacity: the lane ran nothing in an iteration in which admission left a request
//     waiting because its KV cache did not fit while the batch had room;
//   - no_work: the lane ran nothing, or idled before work on its own clock (AddAt).
//
// Their String names are stable: the JSON result uses them as keys.
type BubbleCause uint8

// Causes of idle time on a lane, in the order reports list them.
const (
	CauseDependency BubbleCause = iota // waited for an op on another lane
	CauseTransfer                      // waited for an op on a lane that moves data
	CauseBarrier                       // waited at a stage barrier
	CauseImbalance                     // lane finished early; a peer of its group ends the iteration
	CauseTail                          // lane finished early; the iteration ends on another group's lane
	CauseCapacity                      // the lane had nothing to do because the KV cache was full
	CauseNoWork                        // the lane had nothing to do this iteration
	NumCauses                          // the number of causes
)

var causeNames = [NumCauses]string{"dependency", "transfer", "barrier", "imbalance", "tail", "capacity", "no_work"}

func (c BubbleCause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// Bubble is an idle interval on a lane with its cause. Waited is the index of the span that
// was waited for (the dependency or the op that ended the stage or iteration), or -1.
type Bubble struct {
	Lane   int
	Start  Time
	Dur    Time
	Cause  BubbleCause
	Waited int
}

// Schedule is a list scheduler: ops are added in an order where every dependency comes
// first, and each is placed at the earliest time that respects its dependencies, its
// lane's exclusivity and the barrier of its stage (docs/architecture.md). Idle gaps become bubbles
// that name what was waited for, and each span records what set its start, so Finish can
// trace the critical path: the chain of spans, each starting when the one before it ends,
// that ends with the iteration. Shortening any span off that chain cannot shorten the
// iteration; shortening one on it can.
type Schedule struct {
	Lanes    []Lane
	Spans    []Span
	Bubbles  []Bubble
	Critical []int // after Finish: the critical path, span indices in time order

	laneFree []Time
	laneLast []int  // last span index on the lane, -1 if none
	laneBusy []Time // busy time of the lane so far, kept as spans are placed for Busy
	// laneIdle is each lane's idle time by cause inside the iteration (the bubbles of Add
	// and Finish, which end by the makespan), kept as they are recorded for the bubble
	// forensics; ownClock indexes the bubbles before AddAt spans, which may reach past it.
	laneIdle  [][NumCauses]Time
	ownClock  []int
	stage     int  // current stage (ops arrive in non-decreasing stage order)
	barrier   Time // end of all ops of earlier stages
	barrierBy int  // span that set the barrier
	makespan  Time // end of the ops so far: at a stage's first op, the stage barrier
	critical  int  // span that ends last
	// kvStall is set by the engine when admission left a request waiting for KV space
	// this iteration: lanes that run nothing are then capacity stalls.
	kvStall bool
}

// NewSchedule returns an empty schedule over lanes with room for spans and bubbles.
func NewSchedule(lanes []Lane, spans, bubbles int) *Schedule {
	s := &Schedule{Spans: make([]Span, 0, spans), Bubbles: make([]Bubble, 0, max(bubbles, len(lanes)))}
	s.Reset(lanes)
	return s
}

// Reset empties the schedule for reuse over lanes, keeping its buffers.
func (s *Schedule) Reset(lanes []Lane) {
	s.Lanes = lanes
	s.Spans, s.Bubbles, s.Critical = s.Spans[:0], s.Bubbles[:0], s.Critical[:0]
	s.laneFree = append(s.laneFree[:0], make([]Time, len(lanes))...)
	s.laneBusy = append(s.laneBusy[:0], make([]Time, len(lanes))...)
	s.laneIdle = append(s.laneIdle[:0], make([][NumCauses]Time, len(lanes))...)
	s.ownClock = s.ownClock[:0]
	s.laneLast = s.laneLast[:0]
	for range lanes {
		s.laneLast = append(s.laneLast, -1)
	}
	s.stage, s.barrier, s.makespan = 0, 0, 0
	s.barrierBy, s.critical = -1, -1
	s.kvStall = false
}

// Add places op after the spans deps and returns its span index.
func (s *Schedule) Add(op Op, deps ...int) int { return s.add(&op, deps) }

// add is Add for a planner that keeps its ops and lays them out again and again, layer
// after layer: an op is some seventy bytes, which a call by value copies every time.
func (s *Schedule) add(op *Op, deps []int) int {
	if op.Stage > s.stage {
		if s.makespan > s.barrier {
			s.barrier, s.barrierBy = s.makespan, s.critical
		}
		s.stage = op.Stage
	}
	start, by := s.laneFree[op.Lane], s.laneLast[op.Lane]
	cause, waited := CauseDependency, -1
	for _, d := range deps {
		if e := s.Spans[d].End(); e > start {
			start, cause, waited, by = e, CauseDependency, d, d
		}
	}
	if s.barrier > start {
		start, cause, waited, by = s.barrier, CauseBarrier, s.barrierBy, s.barrierBy
	}
	if gap := start - s.laneFree[op.Lane]; gap > 0 {
		if cause == CauseDependency && s.Lanes[s.Spans[waited].Lane].Transfer {
			cause = CauseTransfer
		}
		s.idle(op.Lane, s.laneFree[op.Lane], gap, cause, waited)
	}
	if start == 0 {
		by = -1
	}
	idx := len(s.Spans)
	s.place(idx, op, start, by)
	end := start + op.Dur
	s.laneFree[op.Lane] = end
	s.laneLast[op.Lane] = idx
	s.laneBusy[op.Lane] += op.Dur
	if end > s.makespan || s.critical < 0 {
		s.makespan, s.critical = end, idx
	}
	return idx
}

// place appends op's span, at index idx. It writes field by field: a whole Op arrives in
// registers and is spilled word by word, and copying it on as one block reads those words
// back wider than they were written, which stalls the processor on every span placed.
// Reslicing the spans in place, rather than assigning them anew, writes only their length,
// and the name is written only when the reused slot holds another: planners lay out the
// same ops iteration after iteration, and writing a pointer while the collector runs
// costs a write barrier.
func (s *Schedule) place(idx int, op *Op, start Time, by int) {
	if idx == cap(s.Spans) {
		s.Spans = slices.Grow(s.Spans, 1)
	}
	s.Spans = s.Spans[:idx+1]
	sp := &s.Spans[idx]
	if !sameString(sp.Name, op.Name) {
		sp.Name = op.Name
	}
	sp.Dur, sp.FLOPs, sp.Bytes = op.Dur, op.FLOPs, op.Bytes
	sp.Lane, sp.Stage, sp.Layer, sp.SubBatch = op.Lane, op.Stage, op.Layer, op.SubBatch
	sp.Start, sp.By = start, by
}

// sameString reports whether a and b are one string in memory, as the name of an op is
// from one iteration to the next: comparing their bytes as well costs a call per span.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// idle records a bubble inside the iteration and adds it to its lane's idle time. Like
// place, it writes the bubble field by field, and only the bubbles' length.
func (s *Schedule) idle(lane int, start, dur Time, cause BubbleCause, waited int) {
	n := len(s.Bubbles)
	if n == cap(s.Bubbles) {
		s.Bubbles = slices.Grow(s.Bubbles, 1)
	}
	s.Bubbles = s.Bubbles[:n+1]
	b := &s.Bubbles[n]
	b.Lane, b.Start, b.Dur, b.Cause, b.Waited = lane, start, dur, cause, waited
	s.laneIdle[lane][cause] += dur
}

// Finish closes the schedule: every lane's idle time up to the makespan becomes a bubble
// (imbalance, tail, or for a lane that ran nothing no-work or capacity; see BubbleCause),
// the critical path is traced back from the span that ends last, and the makespan is
// returned.
func (s *Schedule) Finish() Time {
	group := ""
	if s.critical >= 0 {
		group = s.Lanes[s.Spans[s.critical].Lane].Group
	}
	for l := range s.Lanes {
		free := s.laneFree[l]
		if free >= s.makespan {
			continue
		}
		cause := CauseTail
		switch {
		case s.laneLast[l] < 0 && s.kvStall:
			cause = CauseCapacity
		case s.laneLast[l] < 0:
			cause = CauseNoWork
		case s.Lanes[l].Group == group:
			cause = CauseImbalance
		}
		s.idle(l, free, s.makespan-free, cause, s.critical)
	}
	s.Critical = s.Critical[:0]
	for i := s.critical; i >= 0; i = s.Spans[i].By {
		s.Critical = append(s.Critical, i)
	}
	slices.Reverse(s.Critical)
	return s.makespan
}

// Busy returns each lane's busy time, summed as the spans were placed: observers read it
// several times an iteration, and a pass over every span each time cost more than placing
// them.
func (s *Schedule) Busy() []Time { return slices.Clone(s.laneBusy) }

// AddAt places op on its lane at a fixed start (or when the lane is next free, if later),
// outside the dependency and barrier order: for work that runs on its own clock beside the
// iteration, such as a disaggregated prefill instance. It neither moves the stage barrier
// nor lengthens the iteration; an idle gap before it is a no-work bubble (admission does
// not hold such work back, so it is never a capacity stall).
func (s *Schedule) AddAt(op Op, start Time) int {
	by := -1
	if s.laneFree[op.Lane] > start {
		start, by = s.laneFree[op.Lane], s.laneLast[op.Lane]
	}
	if gap := start - s.laneFree[op.Lane]; gap > 0 {
		s.ownClock = append(s.ownClock, len(s.Bubbles))
		s.Bubbles = append(s.Bubbles, Bubble{Lane: op.Lane, Start: s.laneFree[op.Lane], Dur: gap, Cause: CauseNoWork, Waited: -1})
	}
	idx := len(s.Spans)
	s.place(idx, &op, start, by)
	s.laneFree[op.Lane] = start + op.Dur
	s.laneLast[op.Lane] = idx
	s.laneBusy[op.Lane] += op.Dur
	return idx
}

// Mark is the state of a schedule between two ops: where a period of a repeating layout
// starts (Repeat).
type Mark struct {
	spans, bubbles, ownClock int
	stage                    int
	barrier, end             Time
	barrierBy, last          int // last: the span that ends last (critical)
}

// Mark returns the schedule's state now.
func (s *Schedule) Mark() Mark {
	return Mark{spans: len(s.Spans), bubbles: len(s.Bubbles), ownClock: len(s.ownClock), stage: s.stage,
		barrier: s.barrier, end: s.makespan, barrierBy: s.barrierBy, last: s.critical}
}

// Repeat lays out n more periods of a repeating layout, the ops added since b, as copies
// of them, when the last period (the ops added since b) is the one before it (those added
// from a to b) moved on in time, and reports whether it did; otherwise it adds nothing.
//
// A planner that lays out layer after layer the same ops, each layer's (or group of
// stages') ops depending only on its own and the previous period's spans, may call it
// once it has added two periods: the caller promises that every further period would add
// the same ops as the last, their layers and stages moved on by as much as the last moved
// on from the one before, and their dependencies by a period's spans. Add places an op
// from the state it leaves (each lane's free time and last span, the stage barrier, the
// end so far) and the ends of the op's dependencies, and it places it the same whatever
// the origin of time: when the last period laid out as the one before it moved on by Δ
// and P spans, and the state it left is the state the one before left moved on by Δ and
// P, the next period would lay out as the last moved on again, and so on. Repeat checks
// exactly that, then writes what Add would have written, at the cost of a copy.
func (s *Schedule) Repeat(a, b Mark, n int) bool {
	now := s.Mark()
	p, q := b.spans-a.spans, b.bubbles-a.bubbles
	if n <= 0 || p <= 0 || now.spans-b.spans != p || now.bubbles-b.bubbles != q ||
		now.ownClock != a.ownClock || now.stage-b.stage != b.stage-a.stage {
		return false
	}
	first, next := &s.Spans[a.spans], &s.Spans[b.spans]
	dt, dStage, dLayer := next.Start-first.Start, next.Stage-first.Stage, next.Layer-first.Layer
	// A period without a stage boundary leaves the barrier where it was, and no op of it
	// waited there (each started later than its copy in the period before); with one, the
	// barrier moves on with the period.
	if !moved(b.end, b.last, now.end, now.last, dt, p) ||
		dStage != 0 && !moved(b.barrier, b.barrierBy, now.barrier, now.barrierBy, dt, p) {
		return false
	}
	for i := b.spans; i < now.spans; i++ {
		// Field by field, the times first: a period that did not lay out as the one before
		// it shows it there, and the op need not be copied to be compared.
		x, y := &s.Spans[i-p], &s.Spans[i]
		if y.Start != x.Start+dt || y.By != shiftIndex(x.By, p) || y.Lane != x.Lane || y.Dur != x.Dur ||
			y.Stage != x.Stage+dStage || y.Layer != x.Layer+dLayer || y.SubBatch != x.SubBatch ||
			y.FLOPs != x.FLOPs || y.Bytes != x.Bytes || y.Name != x.Name {
			return false
		}
	}
	for i := b.bubbles; i < now.bubbles; i++ {
		x := s.Bubbles[i-q]
		x.Start, x.Waited = x.Start+dt, shiftIndex(x.Waited, p)
		if s.Bubbles[i] != x {
			return false
		}
	}
	// Each copy is the one before it with its times, span indices, stages and layers
	// moved on: the spans written field by field (as place writes them), the bubbles
	// copied whole, then moved on. The lanes' busy and idle times grow by n times the
	// last period's.
	for i := b.spans; i < now.spans; i++ {
		s.laneBusy[s.Spans[i].Lane] += Time(n) * s.Spans[i].Dur
	}
	for _, x := range s.Bubbles[b.bubbles:now.bubbles] {
		s.laneIdle[x.Lane][x.Cause] += Time(n) * x.Dur
	}
	spans := slices.Grow(s.Spans, n*p)[:now.spans+n*p]
	to := spans[now.spans:]
	from := spans[b.spans:][:len(to)]
	for i := range to {
		// Field by field, the name only where the slot holds another, as place writes.
		x, y := &from[i], &to[i]
		if !sameString(y.Name, x.Name) {
			y.Name = x.Name
		}
		y.Dur, y.FLOPs, y.Bytes = x.Dur, x.FLOPs, x.Bytes
		y.Lane, y.Stage, y.Layer, y.SubBatch = x.Lane, x.Stage+dStage, x.Layer+dLayer, x.SubBatch
		y.Start, y.By = x.Start+dt, shiftIndex(x.By, p)
	}
	s.Spans = spans
	bubbles := slices.Grow(s.Bubbles, n*q)[:now.bubbles+n*q]
	for r := now.bubbles; r < len(bubbles); r += q {
		period := bubbles[r : r+q]
		copy(period, bubbles[r-q:r])
		for i := range period {
			y := &period[i]
			y.Start, y.Waited = y.Start+dt, shiftIndex(y.Waited, p)
		}
	}
	s.Bubbles = bubbles
	for l, last := range s.laneLast {
		if last >= b.spans {
			s.laneFree[l] += Time(n) * dt
			s.laneLast[l] += n * p
		}
	}
	s.stage += n * dStage
	if dStage != 0 {
		s.barrier, s.barrierBy = s.barrier+Time(n)*dt, s.barrierBy+n*p
	}
	s.makespan, s.critical = s.makespan+Time(n)*dt, s.critical+n*p
	return true
}

// Periods lays out count periods of a repeating layout, period(i) adding the ops of
// period i: a decoder layer, say, or a group of stages. Every period runs the same ops,
// one period on (their layers and stages), each depending only on its own and the
// previous period's spans; period keeps the span indices the next one depends on. Once a
// period lays out as the one before it moved on in time, the rest are copies (Repeat),
// and shift(d) moves those indices on by the d spans copied.
func (s *Schedule) Periods(count int, period func(i int), shift func(d int)) {
	var prev, last Mark
	for i := range count {
		m := s.Mark()
		if i >= 2 && s.Repeat(prev, last, count-i) {
			shift(len(s.Spans) - m.spans)
			return
		}
		period(i)
		prev, last = last, m
	}
}

// moved reports whether the time and span index (t1, i1) are (t0, i0) moved on by dt and
// p spans.
func moved(t0 Time, i0 int, t1 Time, i1 int, dt Time, p int) bool {
	return t1 == t0+dt && i1 == i0+p
}

// shiftIndex moves a span index on by p spans; -1 (none) stays.
func shiftIndex(i, p int) int {
	if i < 0 {
		return i
	}
	return i + p
}

// Makespan is the end of the last op placed so far (AddAt ops excluded).
func (s *Schedule) Makespan() Time { return s.makespan }
