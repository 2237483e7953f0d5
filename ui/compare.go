package ui

import (
	"errors"
	"fmt"
	"sync"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// Side is one system of a comparison: its name as the user gave it ("neupims",
// "neupims+pim.dual_row_buffer=false") and its engine configuration. Contrast, on side
// B, is how it differs from side A, for the why overlay (nil: the settings are not known
// and no switch is attributed).
type Side struct {
	Name     string
	Config   sim.Config
	Contrast *sim.Contrast
}

// CompareChoice is a system the compare chooser offers to set beside the running preset:
// the preset with one switch turned over, or another preset.
type CompareChoice struct {
	Side        string // as `pimtui compare` takes it
	Label       string // as the chooser lists it
	Description string
}

// SideLetter names side i as every comparison does, on screen and on the command line:
// A, B, C…
func SideLetter(i int) string { return string(rune('A' + i)) }

// cmpSide is one side of the compare view: its engine, the snapshot shown and its own
// timeline pane.
type cmpSide struct {
	Side
	eng  *sim.Engine
	snap *sim.Snapshot
	tl   *timeline
	// ended is set when the engine reports the end of its run; the other side goes on.
	ended bool
}

// show puts snap on the side's timeline and hands the snapshot shown before back to the
// engine, which nothing reads once the timeline has snap.
func (s *cmpSide) show(snap *sim.Snapshot) {
	old := s.snap
	s.snap = snap
	s.tl.SetSnapshot(snap)
	if old != nil && old != snap {
		s.eng.Release(old)
	}
}

// Compare is the compare view: two engines on the same request stream, stepped in
// lockstep (one command advances both, off the UI goroutine, one in flight), side by
// side with a strip of their differences per step.
type Compare struct {
	c     *Common
	sides [2]*cmpSide
	focus int // the side whose timeline gets the pane keys
	// step is the lockstep count: the step both sides show, or the step of the side still
	// running when the other has ended.
	step int
	runControl
	embedded bool // opened from the explorer: esc goes back to it
	noMouse  bool // leave the mouse to the terminal, as the explorer's option says

	groups []string // utilisation figures both sides report and measure alike, for the strip
	jump   goTo     // g: the step number typed
	// openAt is the step both sides open at: the later of the steps their presets open
	// at (Config.OpenAt), where each one's regime of interest begins.
	openAt int
	hist   [histCap]compareSample // the strip's ratios of the recent steps

	helpOverlay
	why     whyState // the why overlay (w)
	footer  help.Model
	keyLine string
}

// closeCompareMsg returns from the compare view to the explorer.
type closeCompareMsg struct{}

// compareStepMsg is the result of one lockstep move: each side that moved and what it
// returned.
type compareStepMsg struct {
	seq   int
	back  bool
	moved [2]bool
	snaps [2]*sim.Snapshot
	errs  [2]error
	// start is set when stepping back reached the start of a side's kept history; then
	// neither side moved, and kept is the shorter side's kept history.
	start bool
	kept  int
}

type compareTickMsg struct{ seq int }

type compareStatusMsg struct{ seq int }

// NewCompare returns a compare view of two sides over fresh engines. The caller gives
// both the same request stream; the first step of both is taken by Init.
func NewCompare(a, b Side, opts Options) (*Compare, error) {
	c := &Common{Width: 80, Height: 24, Keys: DefaultKeyMap(), Color: opts.Color, Dark: true}
	c.Styles = newStyles(c.Color, c.Dark)
	m, err := newCompare(a, b, c, false)
	if err != nil {
		return nil, err
	}
	m.noMouse = opts.NoMouse
	return m, nil
}

// newCompare builds the view on a Common of its own, or the explorer's when embedded.
func newCompare(a, b Side, c *Common, embedded bool) (*Compare, error) {
	m := &Compare{c: c, embedded: embedded, footer: help.New(),
		runControl: newRunControl(func(seq int) tea.Msg { return compareTickMsg{seq} }, func(seq int) tea.Msg { return compareStatusMsg{seq} })}
	m.footer.ShortSeparator = " · "
	if err := m.build([2]Side{a, b}); err != nil {
		return nil, err
	}
	m.relayout()
	return m, nil
}

// build makes fresh engines and panes for both sides.
func (m *Compare) build(sides [2]Side) error {
	var next [2]*cmpSide
	for i, s := range sides {
		cfg := interactive(s.Config)
		e, err := sim.New(cfg)
		if err != nil {
			return fmt.Errorf("side %s (%s): %w", SideLetter(i), s.Name, err)
		}
		next[i] = &cmpSide{Side: s, eng: e, tl: newTimeline(m.c)}
	}
	m.sides = next
	m.groups = m.groups[:0]
	// A figure both sides report and measure alike: L3's gpu is FLOP utilisation, Hermes'
	// the GPU's busy time, and the two are not compared.
	for _, g := range next[0].eng.UtilKeys() {
		for _, h := range next[1].eng.UtilKeys() {
			if g == h && sim.UtilMeasure(sides[0].Config.System, g) == sim.UtilMeasure(sides[1].Config.System, g) {
				m.groups = append(m.groups, g)
			}
		}
	}
	m.hist = [histCap]compareSample{}
	m.step, m.playing, m.pending, m.err = 0, false, 0, nil
	m.openAt = max(1, sides[0].Config.OpenAt, sides[1].Config.OpenAt)
	return nil
}

// Init takes the first step of both sides.
func (m *Compare) Init() tea.Cmd {
	cmd := m.request(false)
	if m.openAt > 1 {
		cmd = tea.Batch(cmd, m.setStatus(m.openingText(), false))
	}
	if m.embedded {
		return cmd
	}
	return tea.Batch(cmd, tea.RequestBackgroundColor)
}

// openingText says where both sides open and why: the later of their presets' opening
// steps, so that neither is compared before its regime of interest begins.
func (m *Compare) openingText() string {
	for _, s := range m.sides {
		if s.Config.OpenAt == m.openAt {
			return fmt.Sprintf("both sides open at step %s, where %s opens (its regime of interest); b steps back", thousands(m.openAt), s.Name)
		}
	}
	return fmt.Sprintf("both sides open at step %s", thousands(m.openAt))
}

// movers says which sides a move touches. Forward: every side still running that shows
// the lockstep step. Back: every side that shows it, so a side that ended early waits
// until the other comes back to its last step.
func (m *Compare) movers(back bool) [2]bool {
	var mv [2]bool
	for i, s := range m.sides {
		if back {
			mv[i] = m.step > 1 && s.snap != nil && s.snap.Step == m.step
		} else {
			mv[i] = !s.ended && (s.snap == nil || s.snap.Step == m.step)
		}
	}
	return mv
}

// request asks for a lockstep move, or queues it while one is in flight.
func (m *Compare) request(back bool) tea.Cmd {
	if m.queue(back) {
		return nil
	}
	mv := m.movers(back)
	if !mv[0] && !mv[1] {
		m.pending, m.playing = 0, false
		if back {
			return m.setStatus("this is the first step", false)
		}
		return m.setStatus(m.finishedText()+"; r restarts", false)
	}
	m.busy = true
	m.seq++
	open := 0
	if m.step == 0 {
		open = m.openAt
	}
	return compareStepCmd([2]*sim.Engine{m.sides[0].eng, m.sides[1].eng}, mv, m.seq, back, open)
}

// compareStepCmd moves the engines that mv names, in goroutines of Bubble Tea's, not the
// UI's. Forward, the two engines step at once: they share nothing; the first move, with
// open above 1, takes both to step open. Back, if one side's kept history ends, the
// other's step back is replayed forward, so the two stay in lockstep.
func compareStepCmd(engs [2]*sim.Engine, mv [2]bool, seq int, back bool, open int) tea.Cmd {
	return func() tea.Msg {
		msg := compareStepMsg{seq: seq, back: back, moved: mv}
		if back {
			short := false
			for i, e := range engs {
				if mv[i] {
					msg.snaps[i] = e.Back()
					short = short || msg.snaps[i] == nil
				}
			}
			if short {
				for i, e := range engs {
					if mv[i] && msg.snaps[i] != nil {
						e.Step()
					}
				}
				msg.snaps, msg.start = [2]*sim.Snapshot{}, true
				msg.kept = min(engs[0].History().Len(), engs[1].History().Len())
			}
			return msg
		}
		var wg sync.WaitGroup
		for i, e := range engs {
			if mv[i] {
				wg.Go(func() {
					if msg.errs[i] = e.StepTo(open); msg.errs[i] == nil {
						msg.snaps[i], msg.errs[i] = e.Step()
					}
				})
			}
		}
		wg.Wait()
		return msg
	}
}

// restart rebuilds both engines from the same configurations. A move still running on
// the old engines finishes there and is dropped by its stale sequence number.
func (m *Compare) restart() tea.Cmd {
	if err := m.build([2]Side{m.sides[0].Side, m.sides[1].Side}); err != nil {
		return m.setStatus(err.Error(), true)
	}
	m.busy = false
	m.relayout()
	return m.request(false)
}

// stepped takes a move's result: it shows the snapshots, says when a side has ended,
// runs queued moves and keeps autoplay going.
func (m *Compare) stepped(msg compareStepMsg) tea.Cmd {
	if !m.arrived(msg.seq) {
		return nil
	}
	var status tea.Cmd
	switch {
	case msg.start:
		m.pending = 0
		status = m.setStatus(fmt.Sprintf("start of the kept history: the compare view keeps the last %d steps", msg.kept), false)
	case msg.back:
		for i, s := range m.sides {
			if msg.moved[i] && msg.snaps[i] != nil {
				s.show(msg.snaps[i])
				s.ended = false
			}
		}
		m.step--
	default:
		advanced, ended := false, false
		for i, s := range m.sides {
			if !msg.moved[i] {
				continue
			}
			switch err := msg.errs[i]; {
			case errors.Is(err, sim.ErrDone):
				s.ended, ended = true, true
			case err != nil:
				s.ended = true
				m.err, m.playing, m.pending = fmt.Errorf("side %s (%s): %w", SideLetter(i), s.Name, err), false, 0
				status = m.setStatus("the run stopped: "+m.err.Error(), true)
			default:
				s.show(msg.snaps[i])
				advanced = true
			}
		}
		if advanced {
			// Lockstep: every side that moved shows the same step (the first move may
			// open past step 1).
			for i, s := range m.sides {
				if msg.moved[i] && msg.errs[i] == nil {
					m.step = s.snap.Step
				}
			}
			m.record()
		}
		if m.sides[0].ended && m.sides[1].ended {
			m.playing, m.pending = false, 0
		}
		if ended && m.err == nil {
			status = m.setStatus(m.finishedText(), false)
		}
	}
	return m.next(status, m.request)
}

// finishedText says which sides have ended and after how many steps.
func (m *Compare) finishedText() string {
	a, b := m.sides[0], m.sides[1]
	last := func(s *cmpSide) int {
		if s.snap == nil {
			return 0
		}
		return s.snap.Step
	}
	switch {
	case a.ended && b.ended:
		return fmt.Sprintf("both runs finished: A after %d steps, B after %d", last(a), last(b))
	case a.ended:
		return fmt.Sprintf("A finished after %d steps; B goes on", last(a))
	case b.ended:
		return fmt.Sprintf("B finished after %d steps; A goes on", last(b))
	}
	return "the run stopped"
}

// Update routes messages: results and ticks to the lockstep loop, keys to the help
// overlay, the global bindings or the focused side's timeline, the mouse to the side
// under the pointer.
func (m *Compare) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, tick := msg.(compareTickMsg)
	m.frame.seen(!tick)
	if m.c.terminal(msg) {
		m.relayout()
		return m, nil
	}
	if cmd, ok := m.whyUpdate(msg); ok {
		return m, cmd
	}
	switch msg := msg.(type) {
	case compareStepMsg:
		return m, tea.Batch(m.stepped(msg), m.whyStepped())
	case compareJumpMsg:
		return m, tea.Batch(m.jumped(msg), m.whyStepped())
	case compareTickMsg:
		if m.ticked(msg.seq) {
			return m, m.request(false)
		}
	case compareStatusMsg:
		m.expire(msg.seq)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.MouseClickMsg, tea.MouseWheelMsg:
		return m, m.mouse(msg.(tea.MouseMsg))
	}
	return m, nil
}

func (m *Compare) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.c.Keys
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	if m.why.open != nil {
		return m.whyKey(msg)
	}
	if m.help {
		return m.helpKey(msg, k)
	}
	if m.jump.typing {
		return m.goToKey(msg)
	}
	if cmd, ok := m.transportKey(msg, k, m.request); ok {
		return cmd
	}
	switch {
	case key.Matches(msg, whyBinding):
		return m.openWhy()
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Close):
		if m.embedded {
			m.playing = false
			return func() tea.Msg { return closeCompareMsg{} }
		}
	case key.Matches(msg, k.Help):
		m.help, m.helpTop = true, 0
	case key.Matches(msg, k.GoTo):
		m.jump.typing, m.jump.entry.text = true, ""
	case key.Matches(msg, k.Reset):
		return m.restart()
	case key.Matches(msg, k.Focus), key.Matches(msg, k.FocusBack):
		m.focus = 1 - m.focus
		m.relayout()
	default:
		var cmd tea.Cmd
		s := m.sides[m.focus]
		_, cmd = s.tl.Update(msg)
		return cmd
	}
	return nil
}

// View renders the whole screen from the model; it never touches the engines.
func (m *Compare) View() tea.View {
	return m.frame.view(func() tea.View {
		v := tea.NewView(m.render())
		v.AltScreen = true
		v.WindowTitle = "pimtui compare — " + m.sides[0].Name + " vs " + m.sides[1].Name
		if !m.noMouse {
			v.MouseMode = tea.MouseModeCellMotion
		}
		return v
	})
}

// shortHelp is the footer's bindings: the explorer's keys, described for two sides.
func (m *Compare) shortHelp() []key.Binding {
	k := m.c.Keys
	out := []key.Binding{k.Help, k.Quit, k.Play, k.Step, k.Back, whyBinding,
		key.NewBinding(key.WithKeys(k.Focus.Keys()...), key.WithHelp("tab", "other side's timeline")), k.Reset}
	if m.embedded {
		out = append(out, key.NewBinding(key.WithKeys(k.Close.Keys()...), key.WithHelp("esc", "back to the explorer")))
	}
	return out
}
