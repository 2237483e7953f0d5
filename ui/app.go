// Package ui is pimtui's explorer: a Bubble Tea program that steps an engine off the UI
// goroutine and renders its snapshots. It never computes simulation results.
package ui

import (
	"errors"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/sim"
)

// historyCap is how many past iterations the engine keeps for stepping back, and
// historyBytes the memory they may hold (a large system keeps fewer). Together they bound
// the explorer's memory however long autoplay runs.
const (
	historyCap   = 128
	historyBytes = 16 << 20
)

// interactive readies cfg for an explorer's engine: a bounded history to step back in,
// and fresh buffers every step, since the panes keep the snapshots they are given.
func interactive(cfg sim.Config) sim.Config {
	cfg.HistoryCap, cfg.HistoryBytes, cfg.Recycle = historyCap, historyBytes, false
	return cfg
}

// speeds are the autoplay rates in steps per second that + and - move between.
var speeds = []float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}

const defaultSpeed = 4

// Options configure the explorer.
type Options struct {
	Color   bool // false under NO_COLOR: views keep their glyphs and numbers
	NoMouse bool // leave the mouse to the terminal, for text selection
	// Presets are offered by the picker (p); Load builds the engine configuration of one,
	// with the command line's overrides applied. Without Load the picker is off.
	Presets []PresetInfo
	Load    func(name string) (sim.Config, error)
	// Catalog, when set, lists the presets and lessons in place of Presets and Lessons.
	// Reading every embedded file takes a moment, so the explorer calls it off the UI
	// goroutine after the first frame.
	Catalog func() Catalog
	// ExportDir is where e writes traces and CSVs and s the screen ("" = the current
	// directory).
	ExportDir string
	// NoExport, when set, turns e and s off and is what they say instead (a served
	// session's files would stay on the server, out of the student's reach).
	NoExport string
	// Figures measures the paper experiments a preset declares (PresetInfo.Experiments),
	// for the picker and the header. It may take a while: the explorer calls it off the
	// UI goroutine, one preset at a time, and keeps the answers. Nil: no figures.
	Figures func(name string) ([]Figure, error)
	// Validations measures the checks of a preset against references measured outside
	// pimtui, for the picker, off the UI goroutine as Figures is. Nil: none shown.
	Validations func(name string) ([]Validation, error)
	// LessonOptions offers the lessons (t) and may open the explorer on one.
	LessonOptions
	// CompareWith lists what the compare chooser (c) offers beside the running preset;
	// CompareLoad builds both sides, B serving A's request stream. Nil: no chooser.
	CompareWith func(preset string) []CompareChoice
	CompareLoad func(a, b string) (Side, Side, error)
	// BuildSlots, when set, bounds the engine builds (resets, picked presets, lesson
	// steps) running at once across every explorer that shares it: a served class, where
	// one student's rebuilds must not take every core.
	BuildSlots chan struct{}
}

// Model is the explorer's root model: it owns the engine, the layout, the focus and the
// routing of keys, and the run loop.
type Model struct {
	opts Options
	c    *Common
	cfg  sim.Config
	eng  *sim.Engine
	snap *sim.Snapshot
	runControl
	// finished is set when the engine reports the end of the run; the UI never asks the
	// engine itself, which may be stepping in another goroutine.
	finished bool
	noMouse  bool
	// exportWanted is an export asked for while a step was in flight.
	exportWanted bool

	panes   [numPanes]pane
	metrics *metrics
	focus   paneID
	maxed   bool
	lay     layout
	rects   map[paneID]rect

	helpOverlay
	picker  *picker
	fz      forensics
	chooser *picker  // what to compare the running preset with
	compare *Compare // the compare view, shown instead of the explorer while open

	// startErr is why the first engine could not be built; the program then ends.
	startErr error
	// pickerWanted is the picker (p or t) asked for before the catalogue arrived.
	pickerWanted key.Binding

	lesson  *lessonState // the lesson being followed, nil outside lessons
	lessonH int          // lines its panel takes in the current layout
	builds  builder      // engine loads: a preset, a reset or a lesson step

	// figs are the paper-vs-pimtui figures measured so far, by preset; figBusy is the
	// preset being measured and figNext the one asked for meanwhile.
	figs             map[string]*figState
	figBusy, figNext string
	// vals are the presets' validations measured so far, kept the same way.
	vals             map[string]*valState
	valBusy, valNext string

	footer  help.Model
	keyLine string // the footer's short help, redrawn when the focus or size changes
}

// Catalog is the presets and lessons the explorer offers.
type Catalog struct {
	Presets []PresetInfo
	Lessons []LessonInfo
}

// catalogMsg brings the catalogue Options.Catalog read.
type catalogMsg Catalog

// New returns an explorer over cfg. Its engine is built by Init, off the UI goroutine
// (a Hermes engine tracks millions of neurons and takes a while to build), so the screen
// shows at once and fills in as the engine and its first step arrive; a configuration
// the engine refuses ends the program with StartErr set.
func New(cfg sim.Config, opts Options) (*Model, error) {
	if opts.ExportDir == "" {
		opts.ExportDir = "."
	}
	cfg = interactive(cfg)
	c := &Common{Width: 80, Height: 24, Keys: DefaultKeyMap(), Color: opts.Color, Dark: true}
	c.Styles = newStyles(c.Color, c.Dark)
	m := &Model{opts: opts, c: c, cfg: cfg, focus: paneTimeline, builds: builder{slots: opts.BuildSlots}, noMouse: opts.NoMouse, footer: help.New(), fz: forensics{threshold: defaultThreshold},
		runControl: newRunControl(func(seq int) tea.Msg { return tickMsg{seq} }, func(seq int) tea.Msg { return clearStatusMsg{seq} })}
	m.busy = true
	m.stepNow = func() int {
		if m.snap == nil {
			return 0
		}
		return m.snap.Step
	}
	m.footer.Styles = c.Styles.Help
	m.footer.ShortSeparator = " · "
	m.newPanes()
	if err := m.initLesson(); err != nil {
		return nil, err
	}
	m.relayout()
	return m, nil
}

func (m *Model) newPanes() {
	m.metrics = newMetrics(m.c)
	m.panes = [numPanes]pane{newHeatmap(m.c), newTimeline(m.c), newKVMap(m.c), newNeurons(m.c), m.metrics, newRequests(m.c)}
}

// stepMsg carries a snapshot computed off the UI goroutine.
type stepMsg struct {
	seq  int
	back bool
	snap *sim.Snapshot
	err  error
	kept int // after a step back: the iterations the history keeps
}

type tickMsg struct{ seq int }

type clearStatusMsg struct{ seq int }

// stepCmd advances the engine in a goroutine of Bubble Tea's, not the UI's. Only one
// is ever in flight: the engine is not safe for concurrent use.
func stepCmd(e *sim.Engine, seq int, back bool) tea.Cmd {
	return func() tea.Msg {
		if back {
			return stepMsg{seq: seq, back: true, snap: e.Back(), kept: e.History().Len()}
		}
		s, err := e.Step()
		return stepMsg{seq: seq, snap: s, err: err}
	}
}

// Init builds the engine and takes the first step, so the screen opens on iteration 1,
// and asks the terminal for its background so the palette suits it. The paper figures
// are measured once the run is on screen.
func (m *Model) Init() tea.Cmd {
	var catalog tea.Cmd
	if read := m.opts.Catalog; read != nil {
		catalog = func() tea.Msg { return catalogMsg(read()) }
	}
	return tea.Batch(m.build(), tea.RequestBackgroundColor, m.setStatus(m.buildingText(), false), catalog)
}

func (m *Model) buildingText() string { return "building the " + m.cfg.Preset + " engine…" }

// build builds the first engine off the UI goroutine; a loadedMsg marked first brings it
// back.
func (m *Model) build() tea.Cmd {
	cfg := m.cfg
	return m.builds.build(func(seq int) tea.Msg {
		e, err := sim.New(cfg)
		if err == nil {
			err = e.StepTo(cfg.OpenAt)
		}
		return loadedMsg{seq: seq, first: true, cfg: cfg, eng: e, err: err}
	})
}

// started adopts the first engine and takes its first step, with any moves asked for
// meanwhile (a lesson's iterations, keys pressed while it built) queued behind it. A
// configuration the engine refuses ends the program: StartErr says why.
func (m *Model) started(msg loadedMsg) tea.Cmd {
	if msg.err != nil {
		m.startErr = msg.err
		return tea.Quit
	}
	m.eng, m.busy = msg.eng, false
	if m.status == m.buildingText() {
		m.status = ""
	}
	return tea.Batch(m.request(false), m.wantFigures(m.cfg.Preset))
}

// startNow builds the engine and takes its first step on the calling goroutine, for a
// headless frame.
func (m *Model) startNow() error {
	built := m.build()().(loadedMsg)
	m.builds.finished(built.seq)
	if built.err != nil {
		return built.err
	}
	m.eng, m.busy = built.eng, false
	m.Update(m.request(false)())
	return nil
}

// StartErr is why the explorer's configuration could not run, nil if it could.
func (m *Model) StartErr() error { return m.startErr }

// request asks for a step, or queues it while one is in flight.
func (m *Model) request(back bool) tea.Cmd {
	if m.queue(back) {
		return nil
	}
	m.busy = true
	m.seq++
	return stepCmd(m.eng, m.seq, back)
}

// restart replaces the engine: a reset, or with fresh panes a new preset. The engine is
// built off the UI goroutine (a Hermes engine tracks millions of neurons and takes a
// while to build) and adopted when loadedMsg arrives; until then the old run stays on
// screen. A step still running on the old engine finishes there and its result is
// dropped by its stale sequence number. If cfg cannot build an engine, nothing changes.
// Repeated restarts coalesce (see builder).
func (m *Model) restart(cfg sim.Config, fresh bool) tea.Cmd {
	return m.builds.build(func(seq int) tea.Msg {
		cfg = interactive(cfg)
		e, err := sim.New(cfg)
		if err == nil {
			err = e.StepTo(cfg.OpenAt)
		}
		return loadedMsg{seq: seq, fresh: fresh, cfg: cfg, eng: e, err: err}
	})
}

// reset restarts the run from its configuration, unless that is under way or done: while
// an engine is being built (a reset, a picked preset, a lesson step) its run will start
// afresh, and a stopped run still at its first step is what a reset would give, the
// engine being deterministic. So a held r builds one engine, not one per key repeat.
func (m *Model) reset() tea.Cmd {
	switch {
	case m.builds.running:
		return nil
	case m.err == nil && !m.playing && (m.snap == nil || m.snap.Step <= 1):
		return m.setStatus("the run is at its start already", false)
	}
	return m.restart(m.cfg, false)
}

// loadedMsg carries an engine built off the UI goroutine (the first, a restart or a new
// preset), tagged with the load's sequence number so that only the latest load (of a
// preset, a reset or a lesson step) is adopted.
type loadedMsg struct {
	seq          int
	first, fresh bool
	cfg          sim.Config
	eng          *sim.Engine
	err          error
}

// loaded adopts a built engine; a new preset also leaves any lesson and fetches the
// preset's figures.
func (m *Model) loaded(msg loadedMsg) tea.Cmd {
	if next, latest := m.builds.finished(msg.seq); !latest {
		return next
	}
	if msg.first {
		return m.started(msg)
	}
	if msg.err != nil {
		return m.setStatus(fmt.Sprintf("%s: %v", msg.cfg.Preset, msg.err), true)
	}
	cmd := m.adopt(msg.eng, msg.cfg, msg.fresh)
	if !msg.fresh {
		return cmd
	}
	m.lesson = nil
	m.relayout()
	return tea.Batch(cmd, m.setStatus("loaded preset "+msg.cfg.Preset, false), m.wantFigures(msg.cfg.Preset))
}

// adopt makes e, built from cfg, the explorer's engine and takes its first step.
func (m *Model) adopt(e *sim.Engine, cfg sim.Config, fresh bool) tea.Cmd {
	m.cfg, m.eng, m.snap, m.playing, m.busy, m.err, m.pending, m.finished = cfg, e, nil, false, false, nil, 0, false
	m.c.Selected = 0
	if fresh {
		m.newPanes()
	}
	m.metrics.reset()
	m.relayout()
	return m.request(false)
}

// setSnapshot shows s in every pane. The snapshot shown before is read by nothing once
// the panes have s, so the engine may lay a later iteration into its memory.
func (m *Model) setSnapshot(s *sim.Snapshot) {
	noBanks, neurons := m.snap != nil && m.snap.Banks.Rows == 0, m.neuronsShown()
	old := m.snap
	m.snap = s
	for _, p := range m.panes {
		p.SetSnapshot(s)
	}
	if old != nil && old != s {
		m.eng.Release(old)
	}
	if noBanks != (s.Banks.Rows == 0) || neurons != m.neuronsShown() {
		m.relayout()
	}
}

// neuronsShown reports whether the system splits neurons between the GPU and memory, so
// the neuron map gets room: from the snapshot, or before the first one from the family.
func (m *Model) neuronsShown() bool {
	if m.snap == nil {
		return m.cfg.System == sim.SystemHermes
	}
	return len(m.snap.Neurons.Blocks) > 0
}

// relayout recomputes the layout and gives each visible pane its size.
func (m *Model) relayout() {
	m.lessonH = m.lessonHeight(m.c.Width, m.c.Height)
	m.lay = computeLayout(m.c.Width, m.c.Height-m.lessonH, m.focus, m.maxed, m.snap != nil && m.snap.Banks.Rows == 0, m.neuronsShown())
	m.rects = m.lay.rects()
	for id, r := range m.rects {
		m.panes[id].SetSize(max(0, r.w-2), max(0, r.h-2))
	}
	m.footer.SetWidth(m.c.Width)
	m.keyLine = m.footer.ShortHelpView(append(m.c.Keys.ShortHelp(), m.panes[m.focus].ShortHelp()...))
}

func (m *Model) tooSmall() bool { return m.c.Width < MinWidth || m.c.Height < MinHeight }

// Update routes messages: results and ticks to the run loop, keys to the overlays, the
// global bindings or the focused pane, clicks to the pane under the pointer.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, tick := msg.(tickMsg)
	m.frame.seen(!tick)
	if m.compare != nil {
		if cmd, handled := m.inCompare(msg); handled {
			return m, cmd
		}
	}
	if m.c.terminal(msg) {
		if _, restyled := msg.(tea.BackgroundColorMsg); restyled {
			m.footer.Styles = m.c.Styles.Help
			for _, p := range m.panes {
				if m.snap != nil {
					p.SetSnapshot(m.snap)
				}
			}
		}
		m.relayout()
		return m, nil
	}
	switch msg := msg.(type) {
	case stepMsg:
		exp := m.exportOnLanding(msg)
		return m, tea.Batch(m.stepped(msg), exp)
	case seekMsg:
		return m, m.sought(msg)
	case tickMsg:
		if m.ticked(msg.seq) {
			return m, m.request(false)
		}
	case exportedMsg:
		return m, m.setStatus(msg.status())
	case clearStatusMsg:
		m.expire(msg.seq)
	case selectMsg:
		m.c.Selected = msg.id
		var cmds []tea.Cmd
		for i, p := range m.panes {
			var cmd tea.Cmd
			m.panes[i], cmd = p.Update(msg)
			cmds = append(cmds, cmd)
		}
		return m, tea.Batch(cmds...)
	case pickMsg:
		m.picker = nil
		if m.opts.Load == nil {
			return m, nil
		}
		cfg, err := m.opts.Load(msg.name)
		if err != nil {
			return m, m.setStatus(msg.name+": "+err.Error(), true)
		}
		return m, m.restart(cfg, true)
	case loadedMsg:
		return m, m.loaded(msg)
	case catalogMsg:
		return m, m.gotCatalog(msg)
	case figuresMsg:
		return m, m.gotFigures(msg)
	case validationMsg:
		return m, m.gotValidation(msg)
	case closePickerMsg:
		m.picker, m.chooser = nil, nil
	case compareMsg:
		return m, m.startCompare(msg.side)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.MouseClickMsg:
		return m, m.click(msg)
	case tea.MouseWheelMsg:
		if id, r, ok := m.paneAt(msg.X, msg.Y); ok && m.picker == nil && m.chooser == nil && !m.help && !m.showLog {
			var cmd tea.Cmd
			mm := msg
			mm.X, mm.Y = msg.X-r.x-1, msg.Y-r.y-1
			m.panes[id], cmd = m.panes[id].Update(mm)
			return m, cmd
		}
	default:
		if cmd, ok := m.updateLesson(msg); ok {
			return m, cmd
		}
	}
	return m, nil
}

// stepped takes a step's result: it shows the snapshot, runs queued steps and keeps
// autoplay going.
func (m *Model) stepped(msg stepMsg) tea.Cmd {
	if !m.arrived(msg.seq) {
		return nil
	}
	var status tea.Cmd
	switch {
	case errors.Is(msg.err, sim.ErrDone):
		m.playing, m.pending, m.finished = false, 0, true
		text := "run finished; r restarts"
		if s := m.snap; s != nil {
			text = fmt.Sprintf("run finished after %d steps: %s of %s requests done; r restarts", s.Step, thousands(s.Done), thousands(s.Total))
		}
		status = m.setStatus(text, false)
	case msg.err != nil:
		m.err, m.playing, m.pending = msg.err, false, 0
		status = m.setStatus("the run stopped: "+msg.err.Error(), true)
	case msg.snap != nil:
		m.setSnapshot(msg.snap)
		if msg.back {
			m.finished = false
		}
	case msg.back:
		m.pending = 0
		status = m.setStatus(fmt.Sprintf("start of the kept history: the explorer keeps the last %d iterations", msg.kept), false)
	}
	if cmd := m.wantedSeek(); cmd != nil {
		return tea.Batch(status, cmd)
	}
	return m.next(status, m.request)
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.c.Keys
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	if m.picker != nil {
		var cmd tea.Cmd
		m.picker, cmd = m.picker.Update(msg)
		return tea.Batch(cmd, m.wantFigures(m.picker.selected()), m.wantValidation(m.picker.selected()))
	}
	if m.chooser != nil {
		var cmd tea.Cmd
		m.chooser, cmd = m.chooser.Update(msg)
		return cmd
	}
	if m.help {
		return m.helpKey(msg, k)
	}
	if m.showLog {
		m.showLog = false
		if key.Matches(msg, k.Quit) {
			return tea.Quit
		}
		return nil
	}
	if p, ok := m.panes[m.focus].(capturer); ok && p.capturing() {
		var cmd tea.Cmd
		m.panes[m.focus], cmd = m.panes[m.focus].Update(msg)
		return cmd
	}
	if cmd, ok := m.lessonKey(msg); ok {
		return cmd
	}
	if cmd, ok := m.transportKey(msg, k, m.request); ok {
		return cmd
	}
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.help, m.helpTop = true, 0
	case key.Matches(msg, k.Messages):
		m.showLog = true
	case key.Matches(msg, k.Reset):
		return m.reset()
	case key.Matches(msg, k.Presets):
		return m.openPresetPicker()
	case key.Matches(msg, k.Compare):
		return m.openChooser()
	case key.Matches(msg, k.Focus):
		m.setFocus((m.focus + 1) % numPanes)
	case key.Matches(msg, k.FocusBack):
		m.setFocus((m.focus + numPanes - 1) % numPanes)
	case key.Matches(msg, k.Jump):
		m.setFocus(paneID(msg.String()[0] - '1'))
	case key.Matches(msg, k.Maximise):
		m.maxed = !m.maxed
		m.relayout()
	case key.Matches(msg, k.Largest, k.PrevBubbly, k.NextBubbly, k.Threshold):
		return m.forensicsKey(msg)
	case key.Matches(msg, k.Export):
		return m.wantExport()
	case key.Matches(msg, k.Screen):
		return m.saveScreen()
	default:
		var cmd tea.Cmd
		m.panes[m.focus], cmd = m.panes[m.focus].Update(msg)
		return cmd
	}
	return nil
}

// openPresetPicker opens the preset picker, or asks for it once the catalogue arrives.
func (m *Model) openPresetPicker() tea.Cmd {
	if m.opts.Catalog != nil {
		m.pickerWanted = m.c.Keys.Presets
		return nil
	}
	if m.opts.Load == nil || len(m.opts.Presets) == 0 {
		return m.setStatus("no presets to pick from", true)
	}
	m.picker = newPicker(m.c, m.opts.Presets, m.cfg.Preset)
	if m.opts.Figures != nil || m.opts.Validations != nil {
		m.picker.figures = m.presetLines
	}
	return tea.Batch(m.wantFigures(m.picker.selected()), m.wantValidation(m.picker.selected()))
}

// gotCatalog takes the presets and lessons in, and opens a picker asked for meanwhile.
func (m *Model) gotCatalog(msg catalogMsg) tea.Cmd {
	m.opts.Presets, m.opts.Lessons, m.opts.Catalog = msg.Presets, msg.Lessons, nil
	want := m.pickerWanted
	m.pickerWanted = key.Binding{}
	switch {
	case m.picker != nil || m.chooser != nil || m.compare != nil || len(want.Keys()) == 0:
		return nil
	case want.Keys()[0] == m.c.Keys.Presets.Keys()[0]:
		return m.openPresetPicker()
	}
	if !m.openLessonPicker() {
		return m.setStatus("no lessons to pick from", true)
	}
	return nil
}

func (m *Model) setFocus(id paneID) {
	if id < 0 || id >= numPanes {
		return
	}
	m.focus = id
	m.relayout()
}

// paneAt finds the pane whose frame holds the screen cell (x, y).
func (m *Model) paneAt(x, y int) (paneID, rect, bool) {
	if m.tooSmall() {
		return 0, rect{}, false
	}
	for id, r := range m.rects {
		if r.contains(x, y) {
			return id, r, true
		}
	}
	return 0, rect{}, false
}

func (m *Model) click(msg tea.MouseClickMsg) tea.Cmd {
	if m.picker != nil || m.chooser != nil || m.help || m.showLog || m.tooSmall() {
		return nil
	}
	if m.lay.tabs && msg.Y == 1 {
		for i, x := range tabX(m.c.Width) {
			if msg.X >= x[0] && msg.X < x[1] {
				m.setFocus(paneID(i))
			}
		}
		return nil
	}
	id, r, ok := m.paneAt(msg.X, msg.Y)
	if !ok {
		return nil
	}
	if id != m.focus {
		m.focus = id
		m.relayout()
		r = m.rects[id]
	}
	mm := msg
	mm.X, mm.Y = msg.X-r.x-1, msg.Y-r.y-1
	var cmd tea.Cmd
	m.panes[id], cmd = m.panes[id].Update(mm)
	return cmd
}

// View renders the whole screen from the model; it never touches the engine.
func (m *Model) View() tea.View {
	if m.compare != nil {
		return m.compare.View()
	}
	return m.frame.view(func() tea.View {
		v := tea.NewView(m.render())
		v.AltScreen = true
		v.WindowTitle = "pimtui — " + m.cfg.Preset
		if !m.noMouse {
			v.MouseMode = tea.MouseModeCellMotion
		}
		return v
	})
}

func (m *Model) render() string {
	w, h := m.c.Width, m.c.Height
	if w <= 0 || h <= 0 {
		return ""
	}
	if m.tooSmall() {
		return tooSmallScreen(w, h)
	}
	lines := make([]string, 0, h)
	lines = append(lines, fitLine(m.header(w), w))
	if m.lay.tabs {
		lines = append(lines, fitLine(m.tabs(w), w))
	}
	for _, b := range m.lay.bands {
		cols := make([][]string, len(b.cells))
		bw := 0
		for i, c := range b.cells {
			p := m.panes[c.id]
			body := strings.Split(p.View(), "\n")
			// relayout gave each pane the inside of its frame, and a pane's view fills
			// exactly that, so its lines go in as they are, but for an error put above.
			fitted := true
			if m.err != nil && c.id == m.focus {
				body = append([]string{m.c.Styles.Bad.render("error: " + m.err.Error())}, body...)
				fitted = false
			}
			cols[i] = framed(m.c.Styles, p.Title(), body, c.w, b.h, c.id == m.focus, fitted)
			bw += c.w
		}
		for y := range b.h {
			n := 0
			for _, col := range cols {
				n += len(col[y])
			}
			var sb strings.Builder
			sb.Grow(n)
			for _, col := range cols {
				sb.WriteString(col[y])
			}
			l := sb.String()
			if bw != w {
				l = fitLine(l, w)
			}
			lines = append(lines, l)
		}
	}
	if m.lesson != nil && m.lessonH > 0 {
		for _, l := range m.lessonPanel(w, m.lessonH) {
			lines = append(lines, fitLine(l, w))
		}
	}
	lines = append(lines, fitLine(m.footerLine(m.c.Styles, m.keyLine, w), w))
	// Every line is now exactly w cells: the bands' are their frames side by side.
	lines = padLines(lines, w, h)
	switch {
	case m.picker != nil:
		box := m.picker.View(w, h)
		lines = overlay(lines, box, (w-ansi.StringWidth(box[0]))/2, max(0, (h-len(box))/2))
	case m.chooser != nil:
		box := m.chooser.View(w, h)
		lines = overlay(lines, box, (w-ansi.StringWidth(box[0]))/2, max(0, (h-len(box))/2))
	case m.help:
		box := m.helpBox(w, h)
		lines = overlay(lines, box, (w-ansi.StringWidth(box[0]))/2, max(0, (h-len(box))/2))
	case m.showLog:
		box := m.logBox(m.c.Styles, w, h)
		lines = overlay(lines, box, (w-ansi.StringWidth(box[0]))/2, max(0, (h-len(box))/2))
	case m.lesson != nil && m.lesson.reading:
		box := m.lessonBox(w, h)
		lines = overlay(lines, box, (w-ansi.StringWidth(box[0]))/2, max(0, (h-len(box))/2))
	}
	return strings.Join(lines, "\n")
}

// header names the run and its state: preset, system, model, dataset on the left; step,
// simulated time, throughput and play state on the right. Narrow screens drop the
// left-hand details first.
func (m *Model) header(w int) string {
	st := m.c.Styles
	c := m.cfg
	state := m.playState(m.finished)
	step, now, thr := 0, sim.Time(0), 0.0
	if m.snap != nil {
		step, now, thr = m.snap.Step, m.snap.Now, m.snap.Metrics.Throughput
	}
	rights := []string{
		fmt.Sprintf("step %d · sim %s · %s tok/s · %s", step, fmtTime(now), si(thr), state),
		fmt.Sprintf("step %d · %s tok/s · %s", step, si(thr), state),
		fmt.Sprintf("step %d · %s", step, state),
	}
	ds := c.Workload.Dataset.Display
	if ds == "" {
		ds = c.Workload.Dataset.Name
	}
	mdl := c.Model.Display
	if c.TP > 1 || c.PP > 1 {
		mdl += fmt.Sprintf(" tp%d", max(1, c.TP))
		if c.PP > 1 {
			mdl += fmt.Sprintf(" pp%d", c.PP)
		}
	}
	lefts := [][]string{
		{systemName(c), mdl, ds, m.headerFigures()},
		{systemName(c), mdl, ds},
		{mdl, ds},
		{mdl, ds},
		{mdl},
		nil,
	}
	name := c.Preset
	if set := m.stepSettings(); set != "" {
		name += " " + set
	}
	for _, r := range rights {
		for _, l := range lefts {
			left := st.Title.render("pimtui") + " " + st.Bold.render(name)
			for _, x := range l {
				if x != "" {
					left += " · " + x
				}
			}
			gap := w - ansi.StringWidth(left) - ansi.StringWidth(r)
			if gap >= 2 {
				return left + strings.Repeat(" ", gap) + r
			}
		}
	}
	return truncate(rights[len(rights)-1]+" · "+c.Preset, w)
}

// systemName says what hardware the preset models, or "" when the preset's name says
// as much.
func systemName(c sim.Config) string {
	switch {
	case c.System == sim.SystemGPU:
		return "GPU-only " + c.GPU.Display
	case c.System == sim.SystemNeuPIMs && c.PIM.Enabled:
		return "NPU + HBM-PIM"
	case c.System == sim.SystemNeuPIMs:
		return "NPU only"
	case c.Family != "" && c.Family != c.Preset:
		return c.Family
	}
	return ""
}

func (m *Model) tabs(w int) string {
	st := m.c.Styles
	var rb rowBuf
	for i, l := range tabLabels(w) {
		if i > 0 {
			rb.spaces(1)
		}
		p := st.Faint
		if paneID(i) == m.focus {
			p = st.Rev + st.Bold
		}
		rb.str(p, l)
	}
	if m.maxed {
		rb.str(st.Faint, "  z restores the layout")
	}
	return rb.line(w)
}
