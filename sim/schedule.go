package sim

// Lane is one resource that runs one operation at a time: an NPU's systolic arrays, a PIM
// channel, a GPU, a link direction. Group names the lane group utilisation is reported for
// (e.g. "npu", "pim"); lanes of one group are summed.
type Lane struct {
	Name  string
	Group string
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

// Span is an op placed on its lane.
type Span struct {
	Op
	Start Time
}

// End is the time the span finishes.
func (s Span) End() Time { return s.Start + s.Dur }

// BubbleCause says why a lane sat idle.
type BubbleCause uint8

// Causes of idle time on a lane.
const (
	CauseDependency BubbleCause = iota // waited for an op on another lane
	CauseBarrier                       // waited at a stage barrier
	CauseTail                          // lane finished early; the iteration waits for the critical op
	CauseNoWork                        // the lane had nothing to do this iteration
)

func (c BubbleCause) String() string {
	switch c {
	case CauseDependency:
		return "dependency"
	case CauseBarrier:
		return "barrier"
	case CauseTail:
		return "tail"
	default:
		return "no work"
	}
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
// lane's exclusivity and the barrier of its stage (design §2.1). Idle gaps become bubbles
// that name what was waited for.
type Schedule struct {
	Lanes   []Lane
	Spans   []Span
	Bubbles []Bubble

	laneFree  []Time
	laneLast  []int // last span index on the lane, -1 if none
	stage     int   // current stage (ops arrive in non-decreasing stage order)
	barrier   Time  // end of all ops of earlier stages
	barrierBy int   // span that set the barrier
	stageEnd  Time  // end of ops in the current stage so far
	stageBy   int
	makespan  Time
	critical  int // span that ends last
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
	s.Spans, s.Bubbles = s.Spans[:0], s.Bubbles[:0]
	s.laneFree = append(s.laneFree[:0], make([]Time, len(lanes))...)
	s.laneLast = s.laneLast[:0]
	for range lanes {
		s.laneLast = append(s.laneLast, -1)
	}
	s.stage, s.barrier, s.stageEnd, s.makespan = 0, 0, 0, 0
	s.barrierBy, s.stageBy, s.critical = -1, -1, -1
}

// Add places op after the spans deps and returns its span index.
func (s *Schedule) Add(op Op, deps ...int) int {
	if op.Stage > s.stage {
		if s.stageEnd > s.barrier {
			s.barrier, s.barrierBy = s.stageEnd, s.stageBy
		}
		s.stage = op.Stage
	}
	start := s.laneFree[op.Lane]
	cause, waited := CauseDependency, -1
	for _, d := range deps {
		if e := s.Spans[d].End(); e > start {
			start, cause, waited = e, CauseDependency, d
		}
	}
	if s.barrier > start {
		start, cause, waited = s.barrier, CauseBarrier, s.barrierBy
	}
	if gap := start - s.laneFree[op.Lane]; gap > 0 {
		s.Bubbles = append(s.Bubbles, Bubble{Lane: op.Lane, Start: s.laneFree[op.Lane], Dur: gap, Cause: cause, Waited: waited})
	}
	idx := len(s.Spans)
	s.Spans = append(s.Spans, Span{Op: op, Start: start})
	end := start + op.Dur
	s.laneFree[op.Lane] = end
	s.laneLast[op.Lane] = idx
	if end > s.stageEnd || s.stageBy < 0 {
		s.stageEnd, s.stageBy = end, idx
	}
	if end > s.makespan || s.critical < 0 {
		s.makespan, s.critical = end, idx
	}
	return idx
}

// Finish closes the schedule: every lane's idle time up to the makespan becomes a tail
// bubble (or a no-work bubble for a lane that ran nothing), and the makespan is returned.
func (s *Schedule) Finish() Time {
	for l := range s.Lanes {
		free := s.laneFree[l]
		if free >= s.makespan {
			continue
		}
		cause := CauseTail
		if s.laneLast[l] < 0 {
			cause = CauseNoWork
		}
		s.Bubbles = append(s.Bubbles, Bubble{Lane: l, Start: free, Dur: s.makespan - free, Cause: cause, Waited: s.critical})
	}
	return s.makespan
}

// Busy returns each lane's busy time.
func (s *Schedule) Busy() []Time {
	b := make([]Time, len(s.Lanes))
	for _, sp := range s.Spans {
		b[sp.Lane] += sp.Dur
	}
	return b
}

// AddAt places op on its lane at a fixed start (or when the lane is next free, if later),
// outside the dependency and barrier order: for work that runs on its own clock beside the
// iteration, such as a disaggregated prefill instance. It neither moves the stage barrier
// nor lengthens the iteration; an idle gap before it is a no-work bubble.
func (s *Schedule) AddAt(op Op, start Time) int {
	start = max(start, s.laneFree[op.Lane])
	if gap := start - s.laneFree[op.Lane]; gap > 0 {
		s.Bubbles = append(s.Bubbles, Bubble{Lane: op.Lane, Start: s.laneFree[op.Lane], Dur: gap, Cause: CauseNoWork, Waited: -1})
	}
	idx := len(s.Spans)
	s.Spans = append(s.Spans, Span{Op: op, Start: start})
	s.laneFree[op.Lane] = start + op.Dur
	s.laneLast[op.Lane] = idx
	return idx
}

// Makespan is the end of the last op placed so far (AddAt ops excluded).
func (s *Schedule) Makespan() Time { return s.makespan }
