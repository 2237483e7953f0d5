package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// traceEvent is one Chrome/Perfetto trace event as the trace-event format defines it.
// Pointers tell a missing field from a zero one.
type traceEvent struct {
	Ph    *string         `json:"ph"`
	Name  *string         `json:"name"`
	Pid   *int            `json:"pid"`
	Tid   *int            `json:"tid"`
	Ts    *float64        `json:"ts"`
	Dur   *float64        `json:"dur"`
	S     *string         `json:"s"`
	Cname string          `json:"cname"`
	Args  json.RawMessage `json:"args"`
}

// overlapSlack is what converting integer picoseconds to float microseconds may lose
// between one span's end and the next one's start: far below the engine's 1 ps tick.
const overlapSlack = 1e-7

// checkTrace checks a trace structurally and returns the iteration numbers its markers
// carry, in file order.
func checkTrace(t *testing.T, doc []byte) []int {
	t.Helper()
	var tr struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("not a trace-event JSON document: %v", err)
	}
	named := map[int]bool{}
	used := map[int]bool{}
	lastTs := map[int]float64{}
	lastEnd := map[int]float64{}
	var iters []int
	for i, ev := range tr.TraceEvents {
		where := fmt.Sprintf("event %d", i)
		if ev.Ph == nil || ev.Name == nil || ev.Pid == nil || ev.Tid == nil {
			t.Fatalf("%s lacks one of ph, name, pid, tid: %+v", where, ev)
		}
		ph, name, tid := *ev.Ph, *ev.Name, *ev.Tid
		if ph == "M" {
			if name == "thread_name" {
				var a struct{ Name string }
				if err := json.Unmarshal(ev.Args, &a); err != nil || a.Name == "" {
					t.Fatalf("%s: thread_name without a name: %s", where, ev.Args)
				}
				named[tid] = true
			}
			continue
		}
		if ev.Ts == nil {
			t.Fatalf("%s (%s %q) has no ts", where, ph, name)
		}
		ts := *ev.Ts
		used[tid] = true
		if ts < lastTs[tid] {
			t.Fatalf("%s (%q) at %gµs goes back in time on tid %d (last %gµs)", where, name, ts, tid, lastTs[tid])
		}
		lastTs[tid] = ts
		switch ph {
		case "X":
			if ev.Dur == nil || *ev.Dur < 0 {
				t.Fatalf("%s (%q): complete event without a duration ≥ 0", where, name)
			}
			if ts < lastEnd[tid]-overlapSlack {
				t.Fatalf("%s (%q) starts at %gµs on tid %d before the previous span ends (%gµs)", where, name, ts, tid, lastEnd[tid])
			}
			lastEnd[tid] = ts + *ev.Dur
			var a struct {
				SubBatch *int `json:"sub_batch"`
			}
			if err := json.Unmarshal(ev.Args, &a); err != nil || a.SubBatch == nil {
				t.Fatalf("%s (%q): no sub_batch in args %s", where, name, ev.Args)
			}
			if want := sim.SubBatchColour(*a.SubBatch); ev.Cname != want {
				t.Fatalf("%s (%q, sub-batch %d): cname %q, want %q", where, name, *a.SubBatch, ev.Cname, want)
			}
			if sb := *a.SubBatch; sb > 0 && !strings.HasSuffix(name, " SB"+strconv.Itoa(sb)) {
				t.Fatalf("%s: name %q does not say sub-batch %d", where, name, sb)
			}
		case "i":
			if ev.S == nil || !strings.Contains("gpt", *ev.S) || *ev.S == "" {
				t.Fatalf("%s (%q): instant event without a scope s", where, name)
			}
			if n, ok := strings.CutPrefix(name, "iteration "); ok {
				step, err := strconv.Atoi(n)
				if err != nil || *ev.S != "g" {
					t.Fatalf("%s: bad iteration marker %q scope %q", where, name, *ev.S)
				}
				iters = append(iters, step)
				continue
			}
			if !strings.HasPrefix(name, "bubble: ") {
				t.Fatalf("%s: unexpected instant event %q", where, name)
			}
			var a struct {
				Cause      string   `json:"cause"`
				DurationUS *float64 `json:"duration_us"`
			}
			if err := json.Unmarshal(ev.Args, &a); err != nil || a.Cause == "" || a.DurationUS == nil || *a.DurationUS < 0 {
				t.Fatalf("%s (%q): bubble without a cause or duration: %s", where, name, ev.Args)
			}
		default:
			t.Fatalf("%s: unexpected phase %q", where, ph)
		}
	}
	for tid := range used {
		if !named[tid] {
			t.Fatalf("tid %d carries events but has no thread_name", tid)
		}
	}
	if !sort.IntsAreSorted(iters) {
		t.Fatalf("iteration markers out of order: %v", iters)
	}
	for i := 1; i < len(iters); i++ {
		if iters[i] == iters[i-1] {
			t.Fatalf("iteration %d marked twice", iters[i])
		}
	}
	return iters
}

// A trace of a range of iterations, for one preset of each family, is well-formed: every
// event has its required fields, a lane's spans never overlap, time never runs backwards
// on a lane, the iterations come in order, spans carry their sub-batch's documented
// colour and bubbles their cause.
func TestTraceStructure(t *testing.T) {
	cases := []struct {
		preset   string
		from, to int
		edit     []string
	}{
		{"neupims", 5, 15, nil},
		{"npu-pim", 1, 10, nil},
		{"l3", 3, 20, []string{"workload.requests=64"}},
		{"lolpim", 1, 6, nil},
		{"helios", 10, 16, nil},
		{"hermes", 1, 6, nil},
		{"gpu-h100", 1, 12, nil},
	}
	for _, c := range cases {
		if testing.Short() {
			c.from = min(c.from, 2)
			c.to = c.from + 2
		}
		t.Run(c.preset, func(t *testing.T) {
			f, err := presets.Get(c.preset)
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range c.edit {
				if err := f.Set(kv); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := presets.Build(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			tw := sim.NewTraceWriter(&buf, "pimtui "+c.preset)
			spans, bubbles := 0, 0
			for step := 1; step <= c.to; step++ {
				s, err := e.Step()
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if step >= c.from {
					tw.Add(s)
					spans += len(s.Timeline.Spans)
					bubbles += len(s.Timeline.Bubbles)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			iters := checkTrace(t, buf.Bytes())
			if len(iters) != c.to-c.from+1 || iters[0] != c.from || iters[len(iters)-1] != c.to {
				t.Fatalf("iteration markers %v, want %d–%d", iters, c.from, c.to)
			}
			n := strings.Count(buf.String(), `"ph":"X"`)
			b := strings.Count(buf.String(), `"name":"bubble: `)
			if n != spans || b != bubbles || spans == 0 {
				t.Fatalf("%d spans and %d bubbles in the trace, the snapshots have %d and %d", n, b, spans, bubbles)
			}
		})
	}
}
