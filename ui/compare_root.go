package ui

import tea "charm.land/bubbletea/v2"

// compareMsg asks the explorer to open the compare view of the running preset (side A)
// with side (side B), as the chooser names it.
type compareMsg struct{ side string }

// openChooser opens the compare chooser: the running preset with one of its switches
// turned over, then the other presets.
func (m *Model) openChooser() tea.Cmd {
	var choices []CompareChoice
	if m.opts.CompareWith != nil && m.opts.CompareLoad != nil {
		choices = m.opts.CompareWith(m.cfg.Preset)
	}
	if len(choices) == 0 {
		return m.setStatus("nothing to compare with", true)
	}
	items := make([]PresetInfo, len(choices))
	sides := make(map[string]string, len(choices))
	for i, c := range choices {
		items[i] = PresetInfo{Name: c.Label, Description: c.Description}
		sides[c.Label] = c.Side
	}
	p := newPicker(m.c, items, "")
	p.title, p.verb = " Compare "+m.cfg.Preset+" with ", "compare"
	p.pick = func(label string) tea.Msg { return compareMsg{sides[label]} }
	m.chooser = p
	return nil
}

// startCompare opens the compare view of the running preset and side. The explorer's
// run pauses underneath and is there as it was when esc comes back.
func (m *Model) startCompare(side string) tea.Cmd {
	m.chooser = nil
	a, b, err := m.opts.CompareLoad(m.cfg.Preset, side)
	if err != nil {
		return m.setStatus(err.Error(), true)
	}
	c, err := newCompare(a, b, m.c, true)
	if err != nil {
		return m.setStatus(err.Error(), true)
	}
	c.after, c.noMouse = m.after, m.noMouse
	m.playing = false
	m.compare = c
	return c.Init()
}

// inCompare routes a message while the compare view is open. Keys and the compare
// view's own results go to it; the explorer's (a step still in flight, figures, an
// export) still reach the explorer, and both see the terminal's size and background.
// handled is false when the explorer should take the message too.
func (m *Model) inCompare(msg tea.Msg) (cmd tea.Cmd, handled bool) {
	switch msg.(type) {
	case closeCompareMsg:
		m.compare = nil
		m.relayout()
		return nil, true
	case stepMsg, tickMsg, clearStatusMsg, exportedMsg, figuresMsg, validationMsg, selectMsg, pickMsg, closePickerMsg,
		loadedMsg, lessonLoadedMsg, seekMsg, jumpMsg:
		return nil, false
	case tea.WindowSizeMsg, tea.BackgroundColorMsg:
		_, cmd = m.compare.Update(msg)
		return cmd, false
	}
	_, cmd = m.compare.Update(msg)
	return cmd, true
}
