package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// MaxSnapshotSize bounds a headless frame: wider or taller than any terminal.
const MaxSnapshotSize = 1000

// PaneNames are the names a snapshot's focus takes, in the order of the 1–6 keys.
func PaneNames() []string {
	return []string{"banks", "timeline", "kv", "neurons", "metrics", "requests"}
}

// paneByName finds a pane by its name (PaneNames) or its number, 1–6.
func paneByName(name string) (paneID, bool) {
	if n, err := strconv.Atoi(name); err == nil && n >= 1 && n <= int(numPanes) {
		return paneID(n - 1), true
	}
	for i, p := range PaneNames() {
		if strings.EqualFold(name, p) {
			return paneID(i), true
		}
	}
	return 0, false
}

// PaneError is a focus that names no pane.
type PaneError struct{ Name string }

func (e *PaneError) Error() string {
	return fmt.Sprintf("unknown pane %q; want one of %s (or 1–6)", e.Name, strings.Join(PaneNames(), ", "))
}

// SizeError is a frame smaller than the explorer can draw or larger than any terminal.
type SizeError struct{ W, H int }

func (e *SizeError) Error() string {
	if e.W > MaxSnapshotSize || e.H > MaxSnapshotSize {
		return fmt.Sprintf("%d×%d is too large; at most %d×%d", e.W, e.H, MaxSnapshotSize, MaxSnapshotSize)
	}
	return fmt.Sprintf("%d×%d is too small; the explorer needs at least %d×%d", e.W, e.H, MinWidth, MinHeight)
}

// ConfigError is a configuration the engine cannot be built from.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// StepsError is a step the run never reaches.
type StepsError struct{ Asked, Has int }

func (e *StepsError) Error() string {
	return fmt.Sprintf("step %d is past the end of the run, which has %d iterations", e.Asked, e.Has)
}

// Snapshot renders the explorer's frame after steps iterations of cfg at w×h with the
// focus on a pane (a name of PaneNames or its number; "" keeps the default), headless:
// the model steps through the same messages as in a terminal, synchronously. Without
// opts.Color the frame is plain text.
func Snapshot(cfg sim.Config, opts Options, steps, w, h int, focus string) (string, error) {
	if w < MinWidth || h < MinHeight || w > MaxSnapshotSize || h > MaxSnapshotSize {
		return "", &SizeError{w, h}
	}
	if steps < 1 {
		return "", fmt.Errorf("steps must be at least 1, got %d", steps)
	}
	id := paneTimeline
	if focus != "" {
		var ok bool
		if id, ok = paneByName(focus); !ok {
			return "", &PaneError{focus}
		}
	}
	// The frame is taken at step steps; a budget would only make the header say so.
	cfg.Workload.Steps = 0
	m, err := New(cfg, opts)
	if err != nil {
		return "", &ConfigError{err}
	}
	// Status messages stay up: nothing expires them in a single frame.
	m.after = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.setFocus(id)
	if err := m.startNow(); err != nil {
		return "", &ConfigError{err}
	}
	for m.err == nil && !m.finished && m.snap != nil && m.snap.Step < steps {
		m.Update(m.request(false)())
	}
	switch {
	case m.err != nil:
		return "", m.err
	case m.snap == nil || m.snap.Step < steps:
		has := 0
		if m.snap != nil {
			has = m.snap.Step
		}
		return "", &StepsError{Asked: steps, Has: has}
	}
	if !opts.Color {
		return m.plainScreen(), nil
	}
	return m.render() + "\n", nil
}
