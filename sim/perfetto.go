package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// TraceWriter writes snapshots' timelines as Chrome/Perfetto trace-event JSON (opens in
// ui.perfetto.dev and chrome://tracing): one process per run, one thread per lane, a
// complete event ("X") per span, with "critical": true in its args when it lies on the
// iteration's critical path, an instant event ("i") per bubble with its cause, and times
// in microseconds.
type TraceWriter struct {
	w     *bufio.Writer
	n     int
	lanes bool
	err   error
}

// NewTraceWriter starts a trace on w.
func NewTraceWriter(w io.Writer, title string) *TraceWriter {
	t := &TraceWriter{w: bufio.NewWriterSize(w, 1<<16)}
	t.printf(`{"displayTimeUnit":"ns","traceEvents":[`)
	t.event(map[string]any{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": map[string]any{"name": title}})
	return t
}

func (t *TraceWriter) printf(format string, a ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, a...)
	}
}

func (t *TraceWriter) event(ev map[string]any) {
	b, err := json.Marshal(ev)
	if err != nil {
		t.err = err
		return
	}
	if t.n > 0 {
		t.printf(",\n")
	}
	t.n++
	if t.err == nil {
		_, t.err = t.w.Write(b)
	}
}

func us(t Time) float64 { return float64(t) / float64(Microsecond) }

// Add appends one iteration's timeline.
func (t *TraceWriter) Add(s *Snapshot) {
	tl := &s.Timeline
	if !t.lanes {
		for i, l := range tl.Lanes {
			t.event(map[string]any{"ph": "M", "name": "thread_name", "pid": 1, "tid": i + 1, "args": map[string]any{"name": l.Name}})
			t.event(map[string]any{"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": i + 1, "args": map[string]any{"sort_index": i}})
		}
		t.lanes = true
	}
	base := s.Now - s.IterTime
	t.event(map[string]any{"ph": "i", "s": "g", "name": "iteration " + strconv.Itoa(s.Step), "pid": 1, "tid": 0, "ts": us(base),
		"args": map[string]any{"batch": s.Batch, "iteration_us": us(s.IterTime)}})
	crit := make([]bool, len(tl.Spans))
	for _, i := range tl.Critical {
		if i >= 0 && i < len(crit) {
			crit[i] = true
		}
	}
	for i, sp := range tl.Spans {
		name := sp.Name
		if sp.SubBatch > 0 {
			name += " SB" + strconv.Itoa(sp.SubBatch)
		}
		cname := []string{"grey", "thread_state_running", "thread_state_iowait"}[min(sp.SubBatch, 2)]
		args := map[string]any{"step": s.Step, "layer": sp.Layer, "sub_batch": sp.SubBatch, "flops": sp.FLOPs, "bytes": sp.Bytes}
		if crit[i] {
			args["critical"] = true
		}
		t.event(map[string]any{"ph": "X", "name": name, "cat": tl.Lanes[sp.Lane].Group, "pid": 1, "tid": sp.Lane + 1,
			"ts": us(base + sp.Start), "dur": us(sp.Dur), "cname": cname, "args": args})
	}
	for _, b := range tl.Bubbles {
		t.event(map[string]any{"ph": "i", "s": "t", "name": "bubble: " + b.Cause.String(), "pid": 1, "tid": b.Lane + 1,
			"ts": us(base + b.Start), "args": map[string]any{"duration_us": us(b.Dur), "cause": BubbleText(tl, b)}})
	}
}

// Close ends the JSON document and flushes it.
func (t *TraceWriter) Close() error {
	t.printf("]}\n")
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
