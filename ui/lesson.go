package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// LessonInfo is a lesson as the explorer shows it: a guided sequence of steps, each a
// configuration run for a few iterations with an explanation, the pane to look at and
// what to notice there.
type LessonInfo struct {
	Name, Title, Family, Summary string
	Steps                        []LessonStepInfo
}

// LessonStepInfo is one step of a lesson. Focus is a pane name: banks, timeline, kv,
// neurons, metrics or requests.
type LessonStepInfo struct {
	Title, Preset, Focus string
	Set                  []string // key=value settings the step switches from the preset's
	Text, Notice         string
	Steps                int      // iterations run before the student looks
	Claims               []string // what the numbers show, in words
}

// LessonOptions configure the explorer's lessons. LessonStep builds the engine
// configuration of a lesson's step (0-based), with the command line's overrides; without
// it there are no lessons. Lesson opens the explorer on that lesson (the configuration
// given to New is then its first step's); LessonPicker opens it with the lesson picker
// shown.
type LessonOptions struct {
	Lessons      []LessonInfo
	LessonStep   func(lesson string, step int) (sim.Config, error)
	Lesson       string
	LessonPicker bool
}

// lessonPanes maps a step's focus to the explorer's pane.
var lessonPanes = map[string]paneID{
	"banks": paneBanks, "timeline": paneTimeline, "kv": paneKV,
	"neurons": paneNeurons, "metrics": paneMetrics, "requests": paneRequests,
}

// lessonState is the lesson being followed, its current step (0-based) and whether the
// step's whole text is open over the dashboard.
type lessonState struct {
	info    LessonInfo
	step    int
	reading bool
}

// lessonPickMsg asks the root to open lesson name at its first step.
type lessonPickMsg struct{ name string }

// lessonLoadedMsg carries a lesson step's engine, built off the UI goroutine (a Hermes
// step tracks millions of neurons and takes a while to build), tagged with the load's
// sequence number so that only the latest load is shown.
type lessonLoadedMsg struct {
	seq  int
	info LessonInfo
	step int
	cfg  sim.Config
	eng  *sim.Engine
	err  error
}

// findLesson returns the lesson called name.
func (m *Model) findLesson(name string) (LessonInfo, bool) {
	for _, l := range m.opts.Lessons {
		if l.Name == name {
			return l, true
		}
	}
	return LessonInfo{}, false
}

// initLesson opens the lesson or the lesson picker the options ask for. New has built
// the engine from the lesson's first step; Init takes its first iteration and the rest
// are queued.
func (m *Model) initLesson() error {
	if m.opts.Lesson != "" {
		l, ok := m.findLesson(m.opts.Lesson)
		if !ok || len(l.Steps) == 0 {
			return fmt.Errorf("no lesson %q", m.opts.Lesson)
		}
		m.lesson = &lessonState{info: l}
		m.pending = max(0, l.Steps[0].Steps-1)
		if id, ok := lessonPanes[l.Steps[0].Focus]; ok {
			m.focus = id
		}
	}
	if m.opts.LessonPicker {
		m.openLessonPicker()
	}
	return nil
}

// openLessonPicker shows the lesson list; it reports false when there are no lessons.
func (m *Model) openLessonPicker() bool {
	if m.opts.LessonStep == nil || len(m.opts.Lessons) == 0 {
		return false
	}
	items := make([]PresetInfo, len(m.opts.Lessons))
	for i, l := range m.opts.Lessons {
		items[i] = PresetInfo{Name: l.Name, Description: fmt.Sprintf("%s · %s (%d steps)", l.Family, l.Title, len(l.Steps))}
	}
	cur := ""
	if m.lesson != nil {
		cur = m.lesson.info.Name
	}
	m.picker = newPicker(m.c, items, cur)
	m.picker.title, m.picker.verb = " Lessons ", "open"
	m.picker.pick = func(name string) tea.Msg { return lessonPickMsg{name} }
	m.picker.figures = m.lessonSummary
	return true
}

// lessonSummary is the picker's text under the list for the selected lesson.
func (m *Model) lessonSummary(name string, w int) []string {
	l, ok := m.findLesson(name)
	if !ok {
		return nil
	}
	return wrap(oneLine(l.Summary), w)
}

// updateLesson handles the lesson's own messages: a lesson picked, a step loaded.
func (m *Model) updateLesson(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case lessonPickMsg:
		m.picker = nil
		l, found := m.findLesson(msg.name)
		if !found || len(l.Steps) == 0 {
			return m.setStatus("no lesson "+msg.name, true), true
		}
		return m.enterStep(l, 0), true
	case lessonLoadedMsg:
		return m.stepLoaded(msg), true
	}
	return nil, false
}

// lessonKey handles the keys of lesson mode: t opens the lesson picker anywhere; in a
// lesson, ( and ) move between steps, i shows the step's whole text (any key closes
// it), r replays the step and esc leaves the lesson unless the focused pane has
// something to go back from (a drilled bank block, a selected request), which it takes
// first.
func (m *Model) lessonKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	k := m.c.Keys
	if m.lesson != nil && m.lesson.reading {
		m.lesson.reading = false
		return nil, true
	}
	if key.Matches(msg, k.Lessons) {
		if m.opts.Catalog != nil {
			m.pickerWanted = k.Lessons
			return nil, true
		}
		if !m.openLessonPicker() {
			return m.setStatus("no lessons to pick from", true), true
		}
		return nil, true
	}
	if m.lesson == nil {
		return nil, false
	}
	l := m.lesson
	switch {
	case key.Matches(msg, k.LessonRead):
		l.reading = true
	case key.Matches(msg, k.LessonNext):
		if l.step+1 >= len(l.info.Steps) {
			return m.setStatus("that was the last step; t picks another lesson, esc leaves this one", false), true
		}
		return m.enterStep(l.info, l.step+1), true
	case key.Matches(msg, k.LessonPrev):
		if l.step == 0 {
			return m.setStatus("this is the lesson's first step", false), true
		}
		return m.enterStep(l.info, l.step-1), true
	case key.Matches(msg, k.Reset):
		return m.enterStep(l.info, l.step), true
	case key.Matches(msg, k.Close) && !m.escTaken():
		m.lesson = nil
		m.relayout()
		return m.setStatus("left the lesson; the run goes on (t picks a lesson)", false), true
	}
	return nil, false
}

// enterStep loads step i of lesson l: its configuration and a fresh engine are built
// off the UI goroutine, and stepLoaded shows them.
func (m *Model) enterStep(l LessonInfo, i int) tea.Cmd {
	if m.opts.LessonStep == nil {
		return m.setStatus("lessons are not available here", true)
	}
	load := m.opts.LessonStep
	return tea.Batch(m.setStatus(fmt.Sprintf("loading %s step %d/%d…", l.Name, i+1, len(l.Steps)), false), m.builds.build(func(seq int) tea.Msg {
		cfg, err := load(l.Name, i)
		if err != nil {
			return lessonLoadedMsg{seq: seq, info: l, step: i, err: err}
		}
		cfg = interactive(cfg)
		e, err := sim.New(cfg)
		return lessonLoadedMsg{seq: seq, info: l, step: i, cfg: cfg, eng: e, err: err}
	}))
}

// stepLoaded shows a loaded step: its engine stepped its iterations off the UI
// goroutine, and its pane in focus. A step that could not load leaves the lesson where
// it was, with the reason.
func (m *Model) stepLoaded(msg lessonLoadedMsg) tea.Cmd {
	if next, latest := m.builds.finished(msg.seq); !latest {
		return next
	}
	if msg.err != nil {
		return m.setStatus(fmt.Sprintf("%s step %d: %v", msg.info.Name, msg.step+1, msg.err), true)
	}
	s := msg.info.Steps[msg.step]
	m.lesson = &lessonState{info: msg.info, step: msg.step}
	cmd := m.adopt(msg.eng, msg.cfg, true)
	m.pending = max(0, s.Steps-1)
	if id, ok := lessonPanes[s.Focus]; ok {
		m.focus = id
	}
	m.relayout()
	m.status = ""
	return tea.Batch(cmd, m.wantFigures(msg.cfg.Preset))
}

// stepSettings names the settings a lesson step switches from its preset's, shortly:
// "+mapper=random +remap=false" for hermes.mapper=random and hermes.remap=false; "" outside
// a lesson or for a step that switches none.
func (m *Model) stepSettings() string {
	if m.lesson == nil {
		return ""
	}
	var parts []string
	for _, kv := range m.lesson.info.Steps[m.lesson.step].Set {
		k, v, _ := strings.Cut(kv, "=")
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			k = k[i+1:]
		}
		parts = append(parts, "+"+strings.TrimSpace(k)+"="+strings.TrimSpace(v))
	}
	return strings.Join(parts, " ")
}

// escTaken reports whether the focused pane uses esc to go back from something.
func (m *Model) escTaken() bool {
	switch p := m.panes[m.focus].(type) {
	case *heatmap:
		return p.drill
	case *kvmap:
		return p.hold >= 0 || m.c.Selected != 0
	case *requests:
		return p.cur >= 0 || m.c.Selected != 0
	}
	return false
}

// lessonHeight is how many lines the lesson panel takes on a w×h screen: what its text
// needs, up to a third of the screen, or more where the dashboard still fits beside it;
// never so much that the panes get fewer than ten lines.
func (m *Model) lessonHeight(w, h int) int {
	if m.lesson == nil || w < MinWidth || h < MinHeight {
		return 0
	}
	need := len(m.lessonBody(w-4)) + 2
	avail := h - 2
	limit := max(avail/3, avail-(gridHeight-2))
	return max(0, min(need, limit, 16, h-10))
}

// lessonBody is the panel's full text at width w: the explanation, what to notice, the
// claims and the keys.
func (m *Model) lessonBody(w int) (lines []string) {
	text, notice, claims, keys := m.lessonSections(w)
	lines = append(append(append(text, notice...), claims...), keys...)
	return lines
}

// lessonSections wraps each part of the current step's panel at width w.
func (m *Model) lessonSections(w int) (text, notice, claims, keys []string) {
	st := m.c.Styles
	s := m.lesson.info.Steps[m.lesson.step]
	text = wrap(oneLine(s.Text), w)
	notice = wrap("Notice: "+oneLine(s.Notice), w)
	if len(notice) > 0 {
		notice[0] = st.Bold.render("Notice:") + strings.TrimPrefix(notice[0], "Notice:")
	}
	for _, c := range s.Claims {
		for i, l := range wrap(oneLine(c), w-2) {
			if i == 0 {
				claims = append(claims, "• "+l)
			} else {
				claims = append(claims, "  "+l)
			}
		}
	}
	keys = []string{st.Faint.render(truncate("( previous step · ) next step · i the whole step · r replay · t lessons · esc leave the lesson", w))}
	return text, notice, claims, keys
}

// lessonPanel draws the panel h lines high and w wide: the lesson and step in its title,
// then as much of the text as fits. What to notice and the keys are kept longest; the
// claims go first, then the explanation is cut (ending in …).
func (m *Model) lessonPanel(w, h int) []string {
	if h < 2 {
		return nil
	}
	l := m.lesson
	s := l.info.Steps[l.step]
	title := fmt.Sprintf(" Lesson: %s — step %d/%d: %s ", l.info.Title, l.step+1, len(l.info.Steps), s.Title)
	inner := w - 4
	text, notice, claims, keys := m.lessonSections(inner)
	room := h - 2
	if room < 3 {
		keys = nil
	}
	room -= len(keys)
	var body []string
	switch {
	case len(text)+len(notice)+len(claims) <= room:
		body = append(append(text, notice...), claims...)
	case len(text)+len(notice) < room:
		left := room - len(text) - len(notice)
		body = append(append(text, notice...), cut(claims, left)...)
	default:
		nn := min(len(notice), max(1, room-1))
		body = append(cut(text, room-nn), cut(notice, nn)...)
	}
	body = append(body, keys...)
	return frame(m.c.Styles, title, padBox(body, inner), w, h, false)
}

// lessonBox is the step's whole text over a screen of w×h, for terminals too small for
// the panel to show it all: the lesson and step, the explanation, what to notice and
// the claims.
func (m *Model) lessonBox(w, h int) []string {
	st := m.c.Styles
	l := m.lesson
	s := l.info.Steps[l.step]
	bw := min(w, 100)
	inner := bw - 4
	body := []string{st.Title.render(truncate(fmt.Sprintf("Step %d/%d: %s", l.step+1, len(l.info.Steps), s.Title), inner))}
	text, notice, claims, _ := m.lessonSections(inner)
	body = append(body, text...)
	body = append(append(append(body, ""), notice...), "")
	body = append(body, claims...)
	room := max(1, h-2)
	if len(body) > room-1 {
		body = cut(body, room-1)
	}
	body = append(body, st.Faint.render("any key closes"))
	return frame(st, " Lesson: "+l.info.Title+" ", padBox(body, inner), bw, min(h, len(body)+2), true)
}

// cut keeps the first n lines, marking a cut with … at the end of the last one kept.
func cut(lines []string, n int) []string {
	if n <= 0 {
		return nil
	}
	if len(lines) <= n {
		return lines
	}
	out := append([]string(nil), lines[:n]...)
	out[n-1] = strings.TrimRight(out[n-1], " ") + " …"
	return out
}

// oneLine joins a text's lines and runs of spaces into single spaces, so lesson files
// can wrap their text as they like.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
