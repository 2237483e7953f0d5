package ui

import (
	"errors"
	"fmt"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// compareJumpMsg is the result of taking both sides to one step (g).
type compareJumpMsg struct {
	seq    int
	target int
	snaps  [2]*sim.Snapshot
	errs   [2]error
}

// compareJumpCmd takes both engines to step target, off the UI goroutine: forward, each
// side still running steps there without drawing (a side whose run ends first stays at
// its last step); back, each side that is past target walks back through its history.
func compareJumpCmd(engs [2]*sim.Engine, at [2]int, ended [2]bool, seq, target int) tea.Cmd {
	return func() tea.Msg {
		msg := compareJumpMsg{seq: seq, target: target}
		var wg sync.WaitGroup
		for i, e := range engs {
			switch {
			case target < at[i]:
				for range at[i] - target {
					msg.snaps[i] = e.Back()
				}
			case target > at[i] && !ended[i]:
				wg.Go(func() {
					if msg.errs[i] = e.StepTo(target); msg.errs[i] == nil {
						msg.snaps[i], msg.errs[i] = e.Step()
					}
				})
			}
		}
		wg.Wait()
		return msg
	}
}

// goToKey takes a key while a step number is typed after g.
func (m *Compare) goToKey(msg tea.KeyPressMsg) tea.Cmd {
	n, entered, ok := m.jump.typedKey(msg)
	switch {
	case entered && !ok:
		return m.setStatus(noStepText, true)
	case entered:
		return m.goTo(n)
	}
	return nil
}

// goTo takes both sides to step n: forward or back within both sides' kept history by
// moving the engines, further back by building both runs again and opening them at n.
func (m *Compare) goTo(n int) tea.Cmd {
	m.playing = false
	switch {
	case m.busy:
		return m.setStatus("a step is under way; g again once it lands", false)
	case n == m.step:
		return m.setStatus(fmt.Sprintf("at step %d already", n), false)
	}
	var at [2]int
	var ended [2]bool
	kept := m.step
	for i, s := range m.sides {
		if s.snap != nil {
			at[i] = s.snap.Step
		}
		ended[i] = s.ended
		kept = min(kept, s.eng.History().Len()-1)
	}
	if n < m.step && m.step-n > kept {
		if err := m.build([2]Side{m.sides[0].Side, m.sides[1].Side}); err != nil {
			return m.setStatus(err.Error(), true)
		}
		m.openAt = n
		m.busy = false
		m.relayout()
		return tea.Batch(m.setStatus(fmt.Sprintf("going to step %s: both runs again from their start…", thousands(n)), false), m.request(false))
	}
	m.busy = true
	m.seq++
	return tea.Batch(m.setStatus(fmt.Sprintf("going to step %s…", thousands(n)), false),
		compareJumpCmd([2]*sim.Engine{m.sides[0].eng, m.sides[1].eng}, at, ended, m.seq, n))
}

// jumped shows where a jump took both sides.
func (m *Compare) jumped(msg compareJumpMsg) tea.Cmd {
	if !m.arrived(msg.seq) {
		return nil
	}
	from := m.step
	step := 0
	for i, s := range m.sides {
		switch err := msg.errs[i]; {
		case errors.Is(err, sim.ErrDone):
			s.ended = true
		case err != nil:
			s.ended = true
			m.err, m.pending = fmt.Errorf("side %s (%s): %w", SideLetter(i), s.Name, err), 0
			return m.setStatus("the run stopped: "+m.err.Error(), true)
		case msg.snaps[i] != nil:
			s.show(msg.snaps[i])
			// A side whose run ended before the step asked for stays at its last.
			s.ended = msg.snaps[i].Step < msg.target
		}
		if s.snap != nil {
			step = max(step, s.snap.Step)
		}
	}
	m.step = step
	m.record()
	text := fmt.Sprintf("at step %s (from step %s)", thousands(m.step), thousands(from))
	if m.step != msg.target {
		text = fmt.Sprintf("%s, before step %s; r restarts", m.finishedText(), thousands(msg.target))
	}
	return m.next(m.setStatus(text, false), m.request)
}
