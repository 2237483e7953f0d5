package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// Figure is one experiment a preset declares from its paper: the paper's value and the
// one pimtui measures under the same conditions.
type Figure struct {
	ID               string
	Paper, Measured  float64
	Versus           string // the baseline of a ratio; "" for an absolute value in Unit
	Unit             string
	Within, Declared bool // within the scoring rule; declared reproduced by the preset
}

// figState is what the explorer knows of a preset's figures.
type figState struct {
	figs []Figure
	err  error
}

// figuresMsg carries a preset's figures, measured off the UI goroutine.
type figuresMsg struct {
	name string
	figs []Figure
	err  error
}

// experiments is how many paper experiments preset name declares (0 when unknown).
func (m *Model) experiments(name string) int {
	for _, p := range m.opts.Presets {
		if p.Name == name {
			return p.Experiments
		}
	}
	return 0
}

// wantFigures starts measuring preset name's figures unless they are known, being
// measured, or the preset declares none. One measurement runs at a time (it already
// uses every core); the latest one asked for meanwhile waits its turn.
func (m *Model) wantFigures(name string) tea.Cmd {
	if m.opts.Figures == nil || name == "" || m.experiments(name) == 0 {
		return nil
	}
	if _, ok := m.figs[name]; ok {
		return nil
	}
	if m.figBusy != "" {
		if m.figBusy != name {
			m.figNext = name
		}
		return nil
	}
	m.figBusy = name
	f := m.opts.Figures
	return func() tea.Msg {
		figs, err := f(name)
		return figuresMsg{name: name, figs: figs, err: err}
	}
}

// gotFigures stores measured figures and starts the one waiting, if any.
func (m *Model) gotFigures(msg figuresMsg) tea.Cmd {
	if m.figs == nil {
		m.figs = map[string]*figState{}
	}
	m.figs[msg.name] = &figState{figs: msg.figs, err: msg.err}
	if m.figBusy == msg.name {
		m.figBusy = ""
	}
	next := m.figNext
	m.figNext = ""
	return m.wantFigures(next)
}

// figValue prints a figure's value: 1.60× for a ratio, 13.8 tok/s for a value.
func figValue(f Figure, v float64) string {
	if f.Versus != "" {
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	}
	var n string
	switch a := math.Abs(v); {
	case a >= 1e4:
		n = si(v)
	case a >= 100:
		n = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		n = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		n = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.TrimSpace(n + " " + f.Unit)
}

func verdict(f Figure) string {
	if f.Within {
		return "✓"
	}
	return "✗"
}

// matchCount is the overall verdict on a preset's figures: "2 of 4 claims match".
func matchCount(figs []Figure) string {
	within := 0
	for _, x := range figs {
		if x.Within {
			within++
		}
	}
	return fmt.Sprintf("%d of %d claims match", within, len(figs))
}

// headerFigures is the header's short form of the loaded preset's figures: the overall
// verdict first, then the first experiment's paper and pimtui values; "" when the preset
// declares none.
func (m *Model) headerFigures() string {
	name := m.cfg.Preset
	if m.opts.Figures == nil || m.experiments(name) == 0 {
		return ""
	}
	s, ok := m.figs[name]
	switch {
	case !ok:
		return "paper vs pimtui measuring…"
	case s.err != nil:
		return "paper vs pimtui failed"
	case len(s.figs) == 0:
		return ""
	}
	f := s.figs[0]
	return fmt.Sprintf("%s · paper %s pimtui %s %s", matchCount(s.figs), figValue(f, f.Paper), figValue(f, f.Measured), verdict(f))
}

// presetLines are the lines the preset picker shows under its list for the selected
// preset: its paper figures, then its validation against references measured outside
// pimtui.
func (m *Model) presetLines(name string, w int) []string {
	var lines []string
	if m.opts.Figures != nil {
		lines = m.pickerFigures(name, w)
	}
	if m.opts.Validations != nil {
		lines = append(lines, m.pickerValidation(name, w)...)
	}
	return lines
}

// pickerFigures are the picker's lines of paper figures for the selected preset: one per
// experiment (a few at most), or where they stand.
func (m *Model) pickerFigures(name string, w int) []string {
	st := m.c.Styles
	n := m.experiments(name)
	if n == 0 {
		return []string{st.Faint.render(truncate("paper vs pimtui: "+name+" declares no paper experiments", w))}
	}
	s, ok := m.figs[name]
	switch {
	case !ok:
		return []string{st.Faint.render(truncate(fmt.Sprintf("paper vs pimtui: measuring %s's %d experiments…", name, n), w))}
	case s.err != nil:
		return []string{st.Bad.render(truncate("paper vs pimtui: "+s.err.Error(), w))}
	}
	idW := 0
	for _, f := range s.figs {
		idW = max(idW, len(f.ID))
	}
	lines := []string{st.Bold.render(truncate("paper vs pimtui: "+matchCount(s.figs), w))}
	const most = 4
	for i, f := range s.figs {
		if i == most && len(s.figs) > most+1 {
			lines = append(lines, st.Faint.render(truncate(fmt.Sprintf("… %d more (pimtui reproduce --preset %s)", len(s.figs)-most, name), w)))
			break
		}
		vs := ""
		if f.Versus != "" {
			vs = " vs " + f.Versus
		}
		p := st.Good
		if !f.Within {
			p = st.Warn
		}
		line := fmt.Sprintf("%s  paper %s  pimtui %s%s", fitLine(f.ID, idW), figValue(f, f.Paper), figValue(f, f.Measured), vs)
		room := w - 2
		lines = append(lines, cutWords(line, room)+" "+p.render(verdict(f)))
	}
	return lines
}
