// Package ui is pimtui's explorer: a Bubble Tea program that steps an engine off the UI
// goroutine and renders its snapshots. It never computes simulation results.
package ui

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/sim"
)

// Minimum terminal size the dashboard needs.
const (
	MinWidth  = 60
	MinHeight = 16
)

// Model is the explorer's root model.
type Model struct {
	cfg     sim.Config
	eng     *sim.Engine
	snap    *sim.Snapshot
	seq     int  // sequence number of the last step request
	busy    bool // a step is running off the UI goroutine
	pending int  // steps asked for while busy: positive forward, negative back
	playing bool
	fps     int
	help    bool
	err     error
	width   int
	height  int
	styles  styles
}

// New returns an explorer over a fresh engine built from cfg.
func New(cfg sim.Config, color bool) (Model, error) {
	cfg.HistoryCap = 256
	cfg.Recycle = false
	e, err := sim.New(cfg)
	if err != nil {
		return Model{}, err
	}
	return Model{cfg: cfg, eng: e, fps: 4, width: 80, height: 24, styles: newStyles(color)}, nil
}

// stepMsg carries a snapshot computed off the UI goroutine.
type stepMsg struct {
	seq  int
	snap *sim.Snapshot
	err  error
}

type tickMsg struct{ seq int }

// stepCmd advances the engine in a goroutine of Bubble Tea's, not the UI's.
func stepCmd(e *sim.Engine, seq int, back bool) tea.Cmd {
	return func() tea.Msg {
		if back {
			s := e.Back()
			return stepMsg{seq: seq, snap: s}
		}
		s, err := e.Step()
		return stepMsg{seq: seq, snap: s, err: err}
	}
}

func (m Model) tick() tea.Cmd {
	seq := m.seq
	return tea.Tick(time.Second/time.Duration(m.fps), func(time.Time) tea.Msg { return tickMsg{seq: seq} })
}

// Init takes the first step so the screen opens on iteration 1.
func (m Model) Init() tea.Cmd {
	return stepCmd(m.eng, m.seq, false)
}

func (m Model) request(back bool) (Model, tea.Cmd) {
	if m.busy {
		if back {
			m.pending--
		} else {
			m.pending++
		}
		return m, nil
	}
	m.busy = true
	m.seq++
	return m, stepCmd(m.eng, m.seq, back)
}

// Update routes messages.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case stepMsg:
		if msg.seq != m.seq {
			return m, nil
		}
		m.busy = false
		switch {
		case errors.Is(msg.err, sim.ErrDone):
			m.playing = false
		case msg.err != nil:
			m.err, m.playing = msg.err, false
		case msg.snap != nil:
			m.snap = msg.snap
		}
		if m.pending != 0 && m.err == nil {
			back := m.pending < 0
			if back {
				m.pending++
			} else {
				m.pending--
			}
			return m.request(back)
		}
		if m.playing {
			return m, m.tick()
		}
	case tickMsg:
		if m.playing && msg.seq == m.seq {
			return m.request(false)
		}
	case tea.KeyPressMsg:
		if m.help {
			m.help = false
			if msg.String() != "q" && msg.String() != "ctrl+c" {
				return m, nil
			}
		}
		switch msg.String() {
		case "q", "ctrl+c":
			return m, tea.Quit
		case "?":
			m.help = true
		case "space":
			m.playing = !m.playing
			if m.playing && !m.busy {
				return m.request(false)
			}
		case "n", "right":
			m.playing = false
			return m.request(false)
		case "b", "left":
			m.playing = false
			return m.request(true)
		case "+", "=":
			m.fps = min(60, m.fps*2)
		case "-":
			m.fps = max(1, m.fps/2)
		case "r":
			e, err := sim.New(m.cfg)
			if err != nil {
				m.err = err
				return m, nil
			}
			m.eng, m.snap, m.playing, m.busy, m.err, m.pending = e, nil, false, false, nil, 0
			m.seq++
			return m.request(false)
		}
	}
	return m, nil
}

// View renders the whole screen; it never touches the engine.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "pimtui — " + m.cfg.Preset
	return v
}

func (m Model) render() string {
	w, h := m.width, m.height
	if w < MinWidth || h < MinHeight {
		msg := fmt.Sprintf("terminal too small (have %d×%d, need %d×%d)", w, h, MinWidth, MinHeight)
		return fit(msg+"\nenlarge the window or press q to quit", w, h)
	}
	var b strings.Builder
	b.WriteString(m.header(w))
	b.WriteString("\n")
	body := h - 3
	if m.help {
		b.WriteString(fit(helpText, w, body))
	} else {
		b.WriteString(fit(m.body(w, body), w, body))
	}
	b.WriteString("\n")
	b.WriteString(m.styles.dim.Render(truncate("space play/pause · n/→ step · b/← back · +/- speed · r reset · ? help · q quit", w)))
	return fit(b.String(), w, h)
}

const helpText = `Keys
  space      play / pause autoplay
  n, →       step one decode iteration
  b, ←       step back through the history
  + / -      faster / slower autoplay
  r          reset the run
  ?          this help (any key closes it)
  q, ctrl+c  quit

Reading the screen
  The lanes show how busy each resource was in the last iteration; idle time is a
  bubble, and the cause column says what the lane waited for.`

func (m Model) header(w int) string {
	c := m.cfg
	state := "paused"
	if m.playing {
		state = fmt.Sprintf("playing %d/s", m.fps)
	}
	step, now, thr := 0, 0.0, 0.0
	if m.snap != nil {
		step, now, thr = m.snap.Step, m.snap.Now.Seconds(), m.snap.Metrics.Throughput
	}
	left := m.styles.title.Render("pimtui") + " " + m.styles.bold.Render(c.Preset) + " · " + c.Model.Display + " tp" + fmt.Sprint(c.TP) + " · " + c.Workload.Dataset.Name
	right := fmt.Sprintf("step %d · %.4g s · %.0f tok/s · %s", step, now, thr, state)
	gap := w - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return truncate(left+" · "+right, w)
	}
	return left + strings.Repeat(" ", gap) + right
}

func (m Model) body(w, h int) string {
	if m.err != nil {
		return m.styles.bad.Render("error: " + m.err.Error())
	}
	s := m.snap
	if s == nil {
		return "stepping…"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "iteration %d: %s · batch %d · %d prefills · queue %d · done %d/%d · KV %.1f%% used\n\n",
		s.Step, s.IterTime, s.Batch, s.Prefills, s.Queue, s.Done, s.Total, 100*s.Metrics.KVUtil)
	b.WriteString(m.styles.bold.Render("lane busy this iteration") + "\n")
	busy := map[int]sim.Time{}
	for _, sp := range s.Timeline.Spans {
		busy[sp.Lane] += sp.Dur
	}
	worst := map[int]sim.Bubble{}
	for _, bb := range s.Timeline.Bubbles {
		if bb.Dur > worst[bb.Lane].Dur {
			worst[bb.Lane] = bb
		}
	}
	barW := max(10, min(40, w/3))
	lanes := s.Timeline.Lanes
	shown := 0
	for i, l := range lanes {
		if shown >= h-8 {
			fmt.Fprintf(&b, "… %d more lanes\n", len(lanes)-i)
			break
		}
		f := float64(busy[i]) / float64(max(1, s.IterTime))
		line := fmt.Sprintf("%-12s %s %5.1f%%", l.Name, bar(f, barW), 100*f)
		if bb, ok := worst[i]; ok && bb.Dur > 0 {
			line += "  longest bubble " + bb.Dur.String() + ": " + sim.BubbleText(&s.Timeline, bb)
		}
		b.WriteString(truncate(line, w) + "\n")
		shown++
	}
	keys := make([]string, 0, len(s.Metrics.Util))
	for k := range s.Metrics.Util {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString("\n" + m.styles.bold.Render("utilisation") + " ")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %.1f%%", k, 100*s.Metrics.Util[k])
	}
	return b.String()
}

func bar(f float64, w int) string {
	f = max(0, min(1, f))
	n := int(f*float64(w) + 0.5)
	return strings.Repeat("█", n) + strings.Repeat("·", w-n)
}

// truncate cuts s to at most w cells.
func truncate(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// fit cuts every line of s to w cells and s to h lines.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:max(0, h)]
	}
	for i, l := range lines {
		lines[i] = truncate(l, w)
	}
	return strings.Join(lines, "\n")
}

type styles struct {
	title, bold, dim, bad lipgloss.Style
}

func newStyles(color bool) styles {
	s := styles{title: lipgloss.NewStyle().Bold(true), bold: lipgloss.NewStyle().Bold(true), dim: lipgloss.NewStyle().Faint(true), bad: lipgloss.NewStyle().Bold(true)}
	if color {
		s.title = s.title.Foreground(lipgloss.Color("#7D56F4"))
		s.bad = s.bad.Foreground(lipgloss.Color("#E05252"))
	}
	return s
}
