package ui

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// jumpChunkTime bounds one command of a jump: the engine runs that long at most before
// the screen shows where it got to, so a long jump can be followed and stopped.
const jumpChunkTime = 100 * time.Millisecond

// goTo is the explorer's "go to step" state: the step number being typed after g, and
// the jump under way.
type goTo struct {
	typing bool
	entry  textEntry
	// The jump in progress: its chunks run one at a time as the run loop's move in flight,
	// tagged with its sequence number seq.
	seq, target, from int
	jumping           bool
}

// jumpMsg is the result of one chunk of a jump.
type jumpMsg struct {
	seq  int
	snap *sim.Snapshot // the last iteration the engine reached
	eng  *sim.Engine   // a rebuilt engine, for a jump back past the kept history
	err  error
}

// jumpCmd moves e towards step target, off the UI goroutine: forward, it steps the
// engine (replaying any history first) for at most jumpChunkTime without drawing; back
// within the kept history, it walks back; further back it builds the run again from cfg
// and steps it to target, the engine being deterministic.
func jumpCmd(e *sim.Engine, cfg sim.Config, seq, at, target int) tea.Cmd {
	return func() tea.Msg {
		msg := jumpMsg{seq: seq}
		if target < at {
			if at-target < e.History().Len() {
				for range at - target {
					msg.snap = e.Back()
				}
				return msg
			}
			cfg.OpenAt = target
			ne, err := sim.New(cfg)
			if err == nil {
				err = ne.StepTo(target)
			}
			if err != nil {
				msg.err = err
				return msg
			}
			msg.eng, e = ne, ne
		}
		start := time.Now()
		for {
			s, err := e.Step()
			if err != nil {
				msg.err = err
				return msg
			}
			msg.snap = s
			if s.Step >= target || time.Since(start) > jumpChunkTime {
				return msg
			}
		}
	}
}

// typedKey takes a key while a step number is typed after g: digits and backspace edit
// it; enter ends it (ok false when no step number was typed); any other key cancels.
func (g *goTo) typedKey(msg tea.KeyPressMsg) (n int, entered, ok bool) {
	switch msg.String() {
	case "enter":
		g.typing = false
		n, err := strconv.Atoi(g.entry.text)
		return n, true, err == nil && n >= 1
	case "backspace":
		g.entry.key(msg)
		return 0, false, false
	}
	if t := msg.Text; len(t) == 1 && t[0] >= '0' && t[0] <= '9' {
		if len(g.entry.text) < 9 {
			g.entry.text += t
		}
		return 0, false, false
	}
	g.typing = false
	return 0, false, false
}

// noStepText is what enter after g without a step number says.
const noStepText = "go to step: type a step number (1 or more), then enter"

// goToKey takes a key while a step number is typed after g.
func (m *Model) goToKey(msg tea.KeyPressMsg) tea.Cmd {
	n, entered, ok := m.jump.typedKey(msg)
	switch {
	case entered && !ok:
		return m.setStatus(noStepText, true)
	case entered:
		return m.startJump(n)
	}
	return nil
}

// startJump starts the engine towards step n.
func (m *Model) startJump(n int) tea.Cmd {
	if m.snap == nil || m.eng == nil {
		return nil
	}
	m.playing = false
	if m.busy {
		return m.setStatus("a step is under way; g again once it lands", false)
	}
	if n == m.snap.Step {
		return m.setStatus(fmt.Sprintf("at step %d already", n), false)
	}
	g := &m.jump
	g.target, g.from, g.jumping = n, m.snap.Step, true
	m.busy = true
	m.seq++
	g.seq = m.seq
	return tea.Batch(m.setStatus(fmt.Sprintf("going to step %s…", thousands(n)), false), jumpCmd(m.eng, m.cfg, m.seq, m.snap.Step, n))
}

// jumped takes one chunk of a jump: it shows where the engine got to and either runs the
// next chunk or says how the jump ended. A step, play or reset key pressed meanwhile
// stops the jump where it is.
func (m *Model) jumped(msg jumpMsg) tea.Cmd {
	if msg.seq != m.seq {
		return nil
	}
	g := &m.jump
	if msg.eng != nil {
		m.eng = msg.eng
		m.metrics.reset()
	}
	if msg.snap != nil {
		m.setSnapshot(msg.snap)
		m.finished = false
	}
	var status tea.Cmd
	switch {
	case errors.Is(msg.err, sim.ErrDone):
		g.jumping = false
		return tea.Batch(m.stepped(stepMsg{seq: msg.seq, err: msg.err}),
			m.setStatus(fmt.Sprintf("the run ends at step %s, before step %s; r restarts", thousands(m.snap.Step), thousands(g.target)), false))
	case msg.err != nil:
		g.jumping = false
		return m.stepped(stepMsg{seq: msg.seq, err: msg.err})
	case m.snap.Step == g.target:
		g.jumping = false
		status = m.setStatus(fmt.Sprintf("at step %s (from step %s)", thousands(g.target), thousands(g.from)), false)
	case g.jumping && m.pending == 0 && !m.playing:
		m.seq++
		g.seq = m.seq
		return tea.Batch(m.setStatus(fmt.Sprintf("going to step %s: at %s…", thousands(g.target), thousands(m.snap.Step)), false),
			jumpCmd(m.eng, m.cfg, m.seq, m.snap.Step, g.target))
	default:
		g.jumping = false
		status = m.setStatus(fmt.Sprintf("stopped going to step %s at step %s", thousands(g.target), thousands(m.snap.Step)), false)
	}
	return tea.Batch(status, m.stepped(stepMsg{seq: msg.seq}))
}

// goToLine is the footer while a step number is typed.
func (g *goTo) line(st *Styles, w int) string {
	var rb rowBuf
	rb.str(st.Bold, "go to step: ")
	rb.str("", g.entry.text)
	rb.str(st.Rev, " ")
	rb.str(st.Faint, "  enter goes · esc cancels")
	return rb.line(w)
}
