package ui

import (
	"strings"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

// poissonNeuPIMs is the small NeuPIMs run under Poisson arrivals: its batch grows over the
// first steps, so its bubble share crosses 75% after a few iterations below it.
func poissonNeuPIMs(t *testing.T) sim.Config {
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workload.Arrival, cfg.Workload.Rate = sim.ArrivalPoisson, 200
	return cfg
}

// shares runs cfg on an engine of its own and returns each step's bubble share, from
// step 1.
func shares(t *testing.T, cfg sim.Config, n int) []float64 {
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := []float64{0} // steps are 1-based
	for range n {
		s, err := e.Step()
		if err != nil {
			break
		}
		out = append(out, s.Metrics.BubbleShare)
	}
	return out
}

// setThreshold presses % until the threshold is level.
func setThreshold(d *driver, level float64) {
	for range bubbleThresholds {
		if d.m.fz.level() == level {
			return
		}
		d.keys("%")
	}
	d.t.Fatalf("no threshold %v", level)
}

func clipped(tl *sim.Timeline, b sim.Bubble) sim.Time {
	return min(b.Start+b.Dur, tl.Makespan) - b.Start
}

// B, from any pane, focuses the timeline and puts its cursor on the longest bubble of
// the iteration's biggest cause of idle time, on that bubble's own lane row; B again goes
// to the longest bubble of the next cause.
func TestLargestBubbleKey(t *testing.T) {
	for _, preset := range []string{"neupims", "npu-pim", "l3"} {
		t.Run(preset, func(t *testing.T) {
			d := newDriver(t, preset, 160, 48)
			d.keys("n", "5")
			order := causeOrder(&d.m.snap.Metrics)
			if len(order) == 0 {
				t.Fatal("no cause of idle time at step 2")
			}
			for k := range min(3, len(order)+1) {
				d.keys("B")
				want := order[k%len(order)]
				m := d.m
				if m.focus != paneTimeline {
					t.Fatalf("focus %d after B, want the timeline", m.focus)
				}
				tp := m.timelinePane()
				row := tp.rows[tp.row]
				if row.group || len(row.lanes) != 1 {
					t.Fatalf("cursor row %q is not a single lane", row.name)
				}
				tl := &m.snap.Timeline
				i := tp.bubbleAt(row.lanes[0], tp.cursor)
				if i < 0 {
					t.Fatalf("no bubble under the cursor at %v on %s", tp.cursor, row.name)
				}
				got := tl.Bubbles[i]
				if got.Cause != want {
					t.Fatalf("B number %d chose a %s bubble, want the largest of %s (causes by share: %v)", k+1, causeLabel(got.Cause), causeLabel(want), order)
				}
				for _, b := range tl.Bubbles {
					if b.Cause == want && b.Start < tl.Makespan && clipped(tl, b) > clipped(tl, got) {
						t.Fatalf("bubble %+v on %s is longer than the chosen %+v", b, tl.Lanes[b.Lane].Name, got)
					}
				}
				if !strings.Contains(m.status, "step 2: ") || !strings.Contains(m.status, causeLabel(want)) {
					t.Fatalf("status %q", m.status)
				}
				if !strings.Contains(d.screen(), "bubble on "+tl.Lanes[got.Lane].Name) {
					t.Fatalf("the detail line does not show the bubble:\n%s", d.screen())
				}
			}
		})
	}
}

// } lands on the first later iteration whose bubble share exceeds the threshold, and {
// on the last earlier one; when the kept history has none, { says so and stays put.
func TestSeekAboveThreshold(t *testing.T) {
	cfg := poissonNeuPIMs(t)
	ref := shares(t, cfg, 40)
	d := newDriver(t, "neupims", 160, 48)
	d.run(d.m.restart(cfg, false))
	setThreshold(d, 0.75)
	first := 0
	for s := 2; s < len(ref); s++ {
		if ref[s] > 0.75 {
			first = s
			break
		}
	}
	if ref[1] > 0.75 || first < 3 {
		t.Fatalf("the fixture run no longer starts below 75%% for a few steps: %v", ref[:10])
	}
	d.keys("}")
	if d.m.snap.Step != first || d.m.snap.Metrics.BubbleShare != ref[first] {
		t.Fatalf("} landed on step %d (share %v), want %d (share %v)", d.m.snap.Step, d.m.snap.Metrics.BubbleShare, first, ref[first])
	}
	if !strings.Contains(d.m.status, "above 75%") || d.m.busy {
		t.Fatalf("status %q, busy %v", d.m.status, d.m.busy)
	}
	d.keys("}")
	if d.m.snap.Step != first+1 || !(ref[first+1] > 0.75) {
		t.Fatalf("second } landed on step %d, want %d", d.m.snap.Step, first+1)
	}
	d.keys("{")
	if d.m.snap.Step != first {
		t.Fatalf("{ landed on step %d, want %d", d.m.snap.Step, first)
	}
	d.keys("{")
	if d.m.snap.Step != first || !strings.Contains(d.m.status, "no iteration above 75% in the kept history (steps 1–") {
		t.Fatalf("{ with nothing earlier: step %d, status %q", d.m.snap.Step, d.m.status)
	}
	// The engine is back where the search started: the next step replays first+1.
	d.keys("n")
	if d.m.snap.Step != first+1 || d.m.snap.Metrics.BubbleShare != ref[first+1] {
		t.Fatalf("after a fruitless {, n showed step %d", d.m.snap.Step)
	}
}

// A search that finds nothing stops at the end of the run or after 2,000 iterations, and
// says which.
func TestSeekFindsNothing(t *testing.T) {
	d := newDriver(t, "gpu-h100", 120, 40) // one lane, always busy: a bubble share of 0
	d.keys("}")
	if !d.m.finished || !strings.Contains(d.m.status, "the run finished at step") || !strings.Contains(d.m.status, "no iteration above 25% after step 1") {
		t.Fatalf("finished %v, status %q", d.m.finished, d.m.status)
	}
	cfg := d.m.cfg
	cfg.Workload.Requests = 20000
	d.run(d.m.restart(cfg, false))
	d.keys("}")
	if d.m.snap.Step != 1+seekLimit || !strings.Contains(d.m.status, "no iteration above 25% in the next 2,000 (steps 2–2001)") {
		t.Fatalf("step %d, status %q", d.m.snap.Step, d.m.status)
	}
}

// A step key pressed during a search stops it after the chunk in flight, and the step
// runs; } pressed while a step is in flight starts once that step is shown.
func TestSeekAndTheRunLoop(t *testing.T) {
	d := newDriver(t, "gpu-h100", 120, 40)
	cfg := d.m.cfg
	cfg.Workload.Requests = 20000
	d.run(d.m.restart(cfg, false))
	_, seek := d.m.Update(keyPress("}"))
	if seek == nil || !d.m.seeking() {
		t.Fatal("} started no search")
	}
	if _, cmd := d.m.Update(keyPress("n")); cmd != nil || d.m.pending != 1 {
		t.Fatalf("n during a search: cmd %v, pending %d", cmd != nil, d.m.pending)
	}
	d.run(seek)
	if !strings.Contains(d.m.status, "stopped looking at step") || d.m.pending != 0 || d.m.busy {
		t.Fatalf("status %q, pending %d, busy %v", d.m.status, d.m.pending, d.m.busy)
	}
	looked := d.m.fz.steps
	if d.m.snap.Step != 1+looked+1 || looked < 1 || looked > seekChunk {
		t.Fatalf("step %d after %d looked at and one step", d.m.snap.Step, looked)
	}

	_, step := d.m.Update(keyPress("n"))
	if _, cmd := d.m.Update(keyPress("}")); cmd != nil || d.m.fz.want != 1 {
		t.Fatalf("} during a step: cmd %v, want %d", cmd != nil, d.m.fz.want)
	}
	from := d.m.snap.Step + 1
	d.run(step)
	if d.m.snap.Step != from+seekLimit || d.m.fz.want != 0 {
		t.Fatalf("the queued search ended at step %d, want %d", d.m.snap.Step, from+seekLimit)
	}
}

// % cycles the threshold through 10, 25, 50 and 75% and says it on the status line.
func TestThresholdCycles(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	if d.m.fz.level() != 0.25 {
		t.Fatalf("default threshold %v", d.m.fz.level())
	}
	for _, want := range []string{"50%", "75%", "10%", "25%"} {
		d.keys("%")
		if !strings.HasPrefix(d.m.status, "bubble threshold "+want+":") {
			t.Fatalf("status %q, want threshold %s", d.m.status, want)
		}
	}
}

// The timeline marks exactly the critical spans and finds the one running at any time.
func TestCriticalPathMarks(t *testing.T) {
	d := newDriver(t, "npu-pim", 160, 48)
	tp := d.m.timelinePane()
	tl := &d.m.snap.Timeline
	if len(tl.Critical) == 0 {
		t.Fatal("no critical path")
	}
	n := 0
	for i := range tl.Spans {
		if tp.critical(i) {
			n++
		}
	}
	if n != len(tl.Critical) {
		t.Fatalf("%d spans marked, path of %d", n, len(tl.Critical))
	}
	for _, i := range tl.Critical {
		sp := tl.Spans[i]
		if sp.Dur > 0 && tp.criticalAt(sp.Start+sp.Dur/2) != i {
			t.Fatalf("criticalAt inside %s (span %d) = %d", sp.Name, i, tp.criticalAt(sp.Start+sp.Dur/2))
		}
	}
	if tp.criticalAt(tl.Makespan) != -1 {
		t.Fatal("a critical span after the iteration")
	}
	if !strings.Contains(d.screen(), "━ critical path") {
		t.Fatalf("no legend entry:\n%s", d.screen())
	}
}
