package ui

import tea "charm.land/bubbletea/v2"

// builder runs the explorer's engine builds (a reset, a picked preset, a lesson step) off
// the UI goroutine, one at a time. A Hermes engine tracks every neuron of its model and
// takes most of a second and tens of megabytes to build, so a held r must not start a
// build per key repeat: a build asked for while one runs waits, a later ask replaces the
// waiting one (which then never starts), and a build that finishes after a later ask is
// dropped. Options.BuildSlots, shared by every explorer of a served class, also bounds
// the builds running at once across sessions.
type builder struct {
	seq     int     // the latest build asked for
	running bool    // a build is in flight
	waiting tea.Cmd // the build to start when it lands
	slots   chan struct{}
}

// build asks for a build; run builds and returns the message that carries the result,
// tagged with seq for finished.
func (b *builder) build(run func(seq int) tea.Msg) tea.Cmd {
	b.seq++
	seq, slots := b.seq, b.slots
	cmd := func() tea.Msg {
		if slots != nil {
			slots <- struct{}{}
			defer func() { <-slots }()
		}
		return run(seq)
	}
	if b.running {
		b.waiting = cmd
		return nil
	}
	b.running = true
	return cmd
}

// finished takes note that build seq has landed. It returns the waiting build to start,
// if any, and whether seq is the latest build asked for, the only one to adopt.
func (b *builder) finished(seq int) (next tea.Cmd, latest bool) {
	b.running = false
	if b.waiting != nil {
		next, b.waiting, b.running = b.waiting, nil, true
		return next, false
	}
	return nil, seq == b.seq
}
