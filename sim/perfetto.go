package sim

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// TraceWriter writes snapshots' timelines as Chrome/Perfetto trace-event JSON (opens in
// ui.perfetto.dev and chrome://tracing): one process per run, one thread per lane, a
// complete event ("X") per span (with "critical": true in its args when it lies on the
// iteration's critical path), an instant event ("i") per bubble with its cause, a
// global instant event per iteration, and times in microseconds, written exactly (the
// engine counts picoseconds). Within an iteration the events are written in time order,
// so each lane's events run forward through the file.
//
// A large system emits ten thousand events an iteration, so events are formatted by hand
// into one reused buffer rather than marshalled one by one.
type TraceWriter struct {
	w    *bufio.Writer
	n    int
	tids map[string]int // lane name → thread id, 1-based; 0 is the iteration markers' row
	err  error
	buf  []byte
	evs  []traceEv
	crit []bool // per span of the iteration being written: on the critical path
}

// traceEv is a span (span ≥ 0) or a bubble of an iteration, to be written in time order.
type traceEv struct {
	ts          Time
	tid         int
	span, bubbl int
}

// NewTraceWriter starts a trace on w.
func NewTraceWriter(w io.Writer, title string) *TraceWriter {
	t := &TraceWriter{w: bufio.NewWriterSize(w, 1<<16), tids: map[string]int{}}
	t.write([]byte(`{"displayTimeUnit":"ns","traceEvents":[`))
	t.meta("process_name", 0, "name", title)
	t.meta("thread_name", 0, "name", "iterations")
	return t
}

func (t *TraceWriter) write(b []byte) {
	if t.err == nil {
		_, t.err = t.w.Write(b)
	}
}

// begin starts an event with the fields every event has.
func (t *TraceWriter) begin(ph, name string, tid int) []byte {
	b := t.buf[:0]
	if t.n > 0 {
		b = append(b, ",\n"...)
	}
	t.n++
	b = append(b, `{"ph":"`...)
	b = append(b, ph...)
	b = append(b, `","name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"pid":1,"tid":`...)
	return strconv.AppendInt(b, int64(tid), 10)
}

func (t *TraceWriter) end(b []byte) {
	b = append(b, '}')
	t.buf = b
	t.write(b)
}

// meta writes a metadata event whose args hold one value, a string or an int.
func (t *TraceWriter) meta(name string, tid int, key string, v any) {
	b := t.begin("M", name, tid)
	b = append(b, `,"args":{`...)
	b = appendJSONString(b, key)
	b = append(b, ':')
	switch v := v.(type) {
	case string:
		b = appendJSONString(b, v)
	case int:
		b = strconv.AppendInt(b, int64(v), 10)
	}
	t.end(append(b, '}'))
}

// appendUS appends t in microseconds, exactly: the engine's picoseconds give six decimals.
func appendUS(b []byte, t Time) []byte {
	if t < 0 {
		b = append(b, '-')
		t = -t
	}
	b = strconv.AppendInt(b, int64(t/Microsecond), 10)
	frac := int64(t % Microsecond)
	if frac == 0 {
		return b
	}
	digits := 6
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	b = append(b, '.')
	s := strconv.FormatInt(frac, 10)
	for range digits - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendFloat(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'g', -1, 64) }

// SubBatchColour is the colour name ("cname", one of the trace viewer's reserved colours)
// of a span of sub-batch sb: grey for the whole batch (0), green (thread_state_running)
// for odd sub-batches, orange (thread_state_iowait) for even ones, so neighbouring
// sub-batches and micro-batches always differ. Perfetto colours slices by name instead,
// and a span's name ends with its sub-batch (" SB2").
func SubBatchColour(sb int) string {
	switch {
	case sb <= 0:
		return "grey"
	case sb%2 == 1:
		return "thread_state_running"
	default:
		return "thread_state_iowait"
	}
}

// tid is the thread id of a lane, naming the thread the first time the lane appears.
func (t *TraceWriter) tid(l Lane, order int) int {
	if id, ok := t.tids[l.Name]; ok {
		return id
	}
	id := len(t.tids) + 1
	t.tids[l.Name] = id
	t.meta("thread_name", id, "name", l.Name)
	t.meta("thread_sort_index", id, "sort_index", order)
	return id
}

// Add appends one iteration's timeline. Iterations must be added in order.
func (t *TraceWriter) Add(s *Snapshot) {
	tl := &s.Timeline
	tids := make([]int, len(tl.Lanes))
	for i, l := range tl.Lanes {
		tids[i] = t.tid(l, i+1)
	}
	base := s.Now - s.IterTime
	b := t.begin("i", "iteration "+strconv.Itoa(s.Step), 0)
	b = append(b, `,"s":"g","ts":`...)
	b = appendUS(b, base)
	b = append(b, `,"args":{"batch":`...)
	b = strconv.AppendInt(b, int64(s.Batch), 10)
	b = append(b, `,"iteration_us":`...)
	b = appendUS(b, s.IterTime)
	t.end(append(b, '}'))

	crit := append(t.crit[:0], make([]bool, len(tl.Spans))...)
	for _, i := range tl.Critical {
		if i >= 0 && i < len(crit) {
			crit[i] = true
		}
	}
	t.crit = crit
	evs := t.evs[:0]
	for i, sp := range tl.Spans {
		evs = append(evs, traceEv{ts: sp.Start, tid: tids[sp.Lane], span: i, bubbl: -1})
	}
	for i, bu := range tl.Bubbles {
		evs = append(evs, traceEv{ts: bu.Start, tid: tids[bu.Lane], span: -1, bubbl: i})
	}
	// Spans before bubbles at one instant: a zero-length span and the bubble after it.
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].ts != evs[j].ts {
			return evs[i].ts < evs[j].ts
		}
		return evs[i].tid < evs[j].tid
	})
	for _, e := range evs {
		if e.span >= 0 {
			sp := &tl.Spans[e.span]
			name := sp.Name
			if sp.SubBatch > 0 {
				name += " SB" + strconv.Itoa(sp.SubBatch)
			}
			b := t.begin("X", name, e.tid)
			b = append(b, `,"cat":`...)
			b = appendJSONString(b, tl.Lanes[sp.Lane].Group)
			b = append(b, `,"ts":`...)
			b = appendUS(b, base+sp.Start)
			b = append(b, `,"dur":`...)
			b = appendUS(b, sp.Dur)
			b = append(b, `,"cname":"`...)
			b = append(b, SubBatchColour(sp.SubBatch)...)
			b = append(b, `","args":{"step":`...)
			b = strconv.AppendInt(b, int64(s.Step), 10)
			b = append(b, `,"layer":`...)
			b = strconv.AppendInt(b, int64(sp.Layer), 10)
			b = append(b, `,"sub_batch":`...)
			b = strconv.AppendInt(b, int64(sp.SubBatch), 10)
			b = append(b, `,"flops":`...)
			b = appendFloat(b, sp.FLOPs)
			b = append(b, `,"bytes":`...)
			b = appendFloat(b, sp.Bytes)
			if crit[e.span] {
				b = append(b, `,"critical":true`...)
			}
			t.end(append(b, '}'))
			continue
		}
		bu := tl.Bubbles[e.bubbl]
		b := t.begin("i", "bubble: "+bu.Cause.String(), e.tid)
		b = append(b, `,"s":"t","ts":`...)
		b = appendUS(b, base+bu.Start)
		b = append(b, `,"args":{"step":`...)
		b = strconv.AppendInt(b, int64(s.Step), 10)
		b = append(b, `,"duration_us":`...)
		b = appendUS(b, bu.Dur)
		b = append(b, `,"cause":`...)
		b = appendJSONString(b, BubbleText(tl, bu))
		t.end(append(b, '}'))
	}
	t.evs = evs[:0]
}

// Close ends the JSON document and flushes it.
func (t *TraceWriter) Close() error {
	t.write([]byte("]}\n"))
	if t.err != nil {
		return t.err
	}
	return t.w.Flush()
}

// BubbleText explains a bubble: what the lane waited for.
func BubbleText(tl *Timeline, b Bubble) string {
	what, group := "", ""
	if b.Waited >= 0 && b.Waited < len(tl.Spans) {
		sp := tl.Spans[b.Waited]
		what = sp.Name
		if sp.SubBatch > 0 {
			what += " SB" + strconv.Itoa(sp.SubBatch)
		}
		what += fmt.Sprintf(" (layer %d) on %s", sp.Layer, tl.Lanes[sp.Lane].Name)
		group = tl.Lanes[sp.Lane].Group
	}
	switch b.Cause {
	case CauseDependency:
		return "waiting for " + what
	case CauseTransfer:
		return "waiting for the transfer " + what
	case CauseBarrier:
		return "stage barrier: waiting for " + what
	case CauseImbalance:
		return "load imbalance: a peer " + group + " lane had more work; the iteration ends with " + what
	case CauseTail:
		return "idle until the iteration ends with " + what
	case CauseCapacity:
		return "capacity stall: no work while a request waits for KV cache space"
	default:
		return "no work on this lane this iteration"
	}
}
