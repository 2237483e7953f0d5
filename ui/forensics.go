package ui

import (
	"errors"
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// Bubble forensics: jumping to the largest bubble of the iteration, and to the previous or
// next iteration whose bubble share exceeds a threshold. The bubble share is the engine's
// (sim.Metrics.BubbleShare): idle lane-time other than no-work time over the lane-time the
// lanes could have used, so a lane with nothing at all to do neither hides nor inflates a
// bubble.

// bubbleThresholds are the bubble shares { and } look for; % cycles through them.
var bubbleThresholds = []float64{0.10, 0.25, 0.50, 0.75}

const defaultThreshold = 1 // 25%

// seekLimit bounds how many iterations } simulates looking for one above the threshold.
const seekLimit = 2000

// seekChunk bounds one seek command: a few dozen iterations or a moment, whichever comes
// first, so the screen follows the search and a key can stop it.
const (
	seekChunk     = 64
	seekChunkTime = 80 * time.Millisecond
)

// forensics is the explorer's bubble-hunting state.
type forensics struct {
	threshold int // index into bubbleThresholds
	want      int // a seek asked for while a step was in flight: -1 back, +1 forward
	// The seek in progress: its chunks run one at a time as the run loop's step in flight,
	// tagged with its sequence number seq.
	seq     int
	back    bool
	steps   int // iterations looked at so far
	from    int // the step the seek started from
	seeking bool
	// B cycles through the causes of one iteration's idle time: the next rank to show,
	// and the step it belongs to.
	cause, causeStep int
}

func (f *forensics) level() float64 { return bubbleThresholds[f.threshold] }

// seekMsg is the result of one chunk of a seek.
type seekMsg struct {
	seq   int
	back  bool
	snap  *sim.Snapshot // the last iteration looked at (nil: none)
	steps int           // iterations looked at in this chunk
	found bool          // snap's bubble share exceeds the threshold
	err   error         // forward: sim.ErrDone or the failure that stopped the run
}

// seekCmd looks for an iteration whose bubble share exceeds level, off the UI goroutine.
// Forward, it steps the engine at most limit times (replaying any history first); back,
// it walks the kept history and, when nothing there qualifies, steps forward again to
// where it started, so a fruitless search leaves the run where it was.
func seekCmd(e *sim.Engine, seq int, back bool, level float64, limit int) tea.Cmd {
	return func() tea.Msg {
		msg := seekMsg{seq: seq, back: back}
		// look takes s as the latest iteration looked at and says whether it qualifies.
		look := func(s *sim.Snapshot) bool {
			msg.snap, msg.steps = s, msg.steps+1
			msg.found = s.Metrics.BubbleShare > level
			return msg.found
		}
		if back {
			for {
				s := e.Back()
				if s == nil {
					for range msg.steps {
						e.Step()
					}
					msg.snap = nil
					return msg
				}
				if look(s) {
					return msg
				}
			}
		}
		start := time.Now()
		for msg.steps < min(limit, seekChunk) && time.Since(start) < seekChunkTime {
			s, err := e.Step()
			if err != nil {
				msg.err = err
				return msg
			}
			if look(s) {
				return msg
			}
		}
		return msg
	}
}

// forensicsKey handles B, {, } and %.
func (m *Model) forensicsKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.c.Keys
	f := &m.fz
	switch {
	case key.Matches(msg, k.Threshold):
		f.threshold = (f.threshold + 1) % len(bubbleThresholds)
		return m.setStatus(fmt.Sprintf("bubble threshold %s: { and } step to the previous and next iteration whose bubble share is above it",
			pctInt(f.level())), false)
	case key.Matches(msg, k.Largest):
		return m.showLargest()
	}
	back := key.Matches(msg, k.PrevBubbly)
	m.playing = false
	if m.seeking() {
		// { or } again stops the search where it is.
		f.seeking = false
		return nil
	}
	if m.snap == nil {
		return nil
	}
	if m.busy {
		f.want = 1
		if back {
			f.want = -1
		}
		return nil
	}
	return m.startSeek(back)
}

// seeking reports whether a chunk of a seek is the step in flight.
func (m *Model) seeking() bool { return m.fz.seeking && m.busy && m.fz.seq == m.seq }

func (m *Model) startSeek(back bool) tea.Cmd {
	f := &m.fz
	f.back, f.steps, f.from, f.seeking, f.want = back, 0, m.snap.Step, true, 0
	m.busy = true
	m.seq++
	f.seq = m.seq
	what := "next"
	if back {
		what = "previous"
	}
	return tea.Batch(m.setStatus(fmt.Sprintf("looking for the %s iteration with a bubble share above %s…", what, pctInt(f.level())), false),
		seekCmd(m.eng, m.seq, back, f.level(), seekLimit))
}

// wantedSeek starts a seek asked for while a step was in flight.
func (m *Model) wantedSeek() tea.Cmd {
	if m.fz.want == 0 || m.busy || m.snap == nil || m.err != nil {
		return nil
	}
	return m.startSeek(m.fz.want < 0)
}

// sought takes one chunk of a seek: it shows where the search got to and either runs the
// next chunk or says how the search ended. A step, play or reset key pressed meanwhile
// ends the search, and the run loop takes over.
func (m *Model) sought(msg seekMsg) tea.Cmd {
	if msg.seq != m.seq {
		return nil
	}
	f := &m.fz
	f.steps += msg.steps
	level := pctInt(f.level())
	if msg.snap != nil {
		m.setSnapshot(msg.snap)
		m.finished = false
	}
	var status tea.Cmd
	switch {
	case msg.found:
		f.seeking = false
		m.setFocus(paneTimeline)
		m.fz.cause = 0
		m.timelinePane().jumpCause(0)
		status = m.setStatus(fmt.Sprintf("step %d: bubble share %s, above %s (%s); the timeline cursor is on the largest bubble of its biggest cause; B the next cause",
			msg.snap.Step, pctInt(msg.snap.Metrics.BubbleShare), level, moved(f.steps, msg.back)), false)
	case errors.Is(msg.err, sim.ErrDone):
		f.seeking = false
		cmd := m.stepped(stepMsg{seq: msg.seq, err: msg.err})
		return tea.Batch(cmd, m.setStatus(fmt.Sprintf("the run finished at step %d with no iteration above %s after step %d; r restarts",
			m.snap.Step, level, f.from), false))
	case msg.err != nil:
		f.seeking = false
		return m.stepped(stepMsg{seq: msg.seq, err: msg.err})
	case msg.back && msg.steps == 0:
		f.seeking = false
		status = m.setStatus(fmt.Sprintf("no iteration before step %d is kept, so none above %s", m.snap.Step, level), false)
	case msg.back:
		f.seeking = false
		status = m.setStatus(fmt.Sprintf("no iteration above %s in the kept history (steps %d–%d); still at step %d",
			level, m.snap.Step-msg.steps, m.snap.Step-1, m.snap.Step), false)
	case f.steps >= seekLimit:
		f.seeking = false
		status = m.setStatus(fmt.Sprintf("no iteration above %s in the next %s (steps %d–%d); } looks further",
			level, thousands(seekLimit), f.from+1, m.snap.Step), false)
	case f.seeking && m.pending == 0 && !m.playing:
		m.seq++
		f.seq = m.seq
		return tea.Batch(m.setStatus(fmt.Sprintf("looking for an iteration above %s: step %d, %s of %s looked at…",
			level, m.snap.Step, thousands(f.steps), thousands(seekLimit)), false),
			seekCmd(m.eng, m.seq, false, f.level(), seekLimit-f.steps))
	default:
		f.seeking = false
		status = m.setStatus(fmt.Sprintf("stopped looking at step %d (%s)", m.snap.Step, moved(f.steps, false)), false)
	}
	// Steps and play asked for meanwhile run as after any step.
	return tea.Batch(status, m.stepped(stepMsg{seq: msg.seq}))
}

// showLargest focuses the timeline and puts its cursor on the largest bubble of the
// iteration's biggest cause of idle time; pressed again on the same iteration, on the
// largest bubble of the next cause, and so round.
func (m *Model) showLargest() tea.Cmd {
	if m.snap == nil {
		return nil
	}
	if m.focus != paneTimeline {
		m.setFocus(paneTimeline)
	}
	f := &m.fz
	if f.causeStep != m.snap.Step {
		f.causeStep, f.cause = m.snap.Step, 0
	}
	j, ok := m.timelinePane().jumpCause(f.cause)
	if !ok {
		return m.setStatus(fmt.Sprintf("step %d has no bubble: every lane with work was busy throughout", m.snap.Step), false)
	}
	f.cause = j.rank + 1
	mt := &m.snap.Metrics
	which := "the biggest cause"
	if j.rank > 0 {
		which = fmt.Sprintf("cause %d of %d", j.rank+1, j.of)
	}
	text := fmt.Sprintf("step %d: %s of idle time is %s, %s; its largest bubble: %s on %s (%s of the iteration)", m.snap.Step,
		pctInt(mt.ShareByCause[j.cause]/max(mt.BubbleShare, 1e-12)), causeLabel(j.cause), which, j.bubble.Dur,
		m.snap.Timeline.Lanes[j.bubble.Lane].Name, pctInt(float64(j.bubble.Dur)/float64(max(1, m.snap.IterTime))))
	if j.of > 1 {
		text += "; B the next cause"
	}
	return m.setStatus(text, false)
}

func (m *Model) timelinePane() *timeline { return m.panes[paneTimeline].(*timeline) }

// moved says how far a seek went: "3 steps on", "1 step back".
func moved(n int, back bool) string {
	dir := "on"
	if back {
		dir = "back"
	}
	unit := "steps"
	if n == 1 {
		unit = "step"
	}
	return fmt.Sprintf("%s %s %s", thousands(n), unit, dir)
}
