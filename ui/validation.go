package ui

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// Validation is one figure of a preset checked against a reference measured outside
// pimtui: the NeuPIMs authors' simulator, a real GPU, a paper's measured table.
type Validation struct {
	Reference   string // what the reference is, in a few words: "authors' simulator"
	Name        string // the figure: "neupims · iteration"
	Ref, Pimtui float64
	Tol         float64 // the relative tolerance the check is held to (0.10 = ±10%)
	Within      bool
}

// valState is what the explorer knows of a preset's validation.
type valState struct {
	vals []Validation
	err  error
}

// validationMsg carries a preset's validation, measured off the UI goroutine.
type validationMsg struct {
	name string
	vals []Validation
	err  error
}

// isPreset reports whether name is a preset the picker offers (not a lesson).
func (m *Model) isPreset(name string) bool {
	return slices.ContainsFunc(m.opts.Presets, func(p PresetInfo) bool { return p.Name == name })
}

// wantValidation starts measuring preset name's validation unless it is known or being
// measured. One measurement runs at a time; the latest one asked for meanwhile waits.
func (m *Model) wantValidation(name string) tea.Cmd {
	if m.opts.Validations == nil || !m.isPreset(name) {
		return nil
	}
	if _, ok := m.vals[name]; ok {
		return nil
	}
	if m.valBusy != "" {
		if m.valBusy != name {
			m.valNext = name
		}
		return nil
	}
	m.valBusy = name
	f := m.opts.Validations
	return func() tea.Msg {
		vals, err := f(name)
		return validationMsg{name: name, vals: vals, err: err}
	}
}

// gotValidation stores a measured validation and starts the one waiting, if any.
func (m *Model) gotValidation(msg validationMsg) tea.Cmd {
	if m.vals == nil {
		m.vals = map[string]*valState{}
	}
	m.vals[msg.name] = &valState{vals: msg.vals, err: msg.err}
	if m.valBusy == msg.name {
		m.valBusy = ""
	}
	next := m.valNext
	m.valNext = ""
	return m.wantValidation(next)
}

// pickerValidation is the picker's line per reference for preset name: how many of its
// checks are within their tolerance and the one furthest off, "validated: authors'
// simulator 3/4 within ±10% · worst -28% iteration ✗"; or where they stand.
func (m *Model) pickerValidation(name string, w int) []string {
	st := m.c.Styles
	s, ok := m.vals[name]
	switch {
	case !ok:
		return []string{st.Faint.render(truncate("validated: measuring against the references measured outside pimtui…", w))}
	case s.err != nil:
		return []string{st.Bad.render(truncate("validation: "+s.err.Error(), w))}
	case len(s.vals) == 0:
		return []string{st.Faint.render(truncate("validated: no reference measured outside pimtui checks "+name, w))}
	}
	var refs []string
	for _, v := range s.vals {
		if !slices.Contains(refs, v.Reference) {
			refs = append(refs, v.Reference)
		}
	}
	var lines []string
	for _, ref := range refs {
		within, n := 0, 0
		var worst Validation
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range s.vals {
			if v.Reference != ref {
				continue
			}
			n++
			if v.Within {
				within++
			}
			if n == 1 || math.Abs(relErr(v)) > math.Abs(relErr(worst)) {
				worst = v
			}
			lo, hi = min(lo, v.Tol), max(hi, v.Tol)
		}
		// The picker names the preset already: "neupims · iteration" is its iteration.
		what := strings.TrimPrefix(worst.Name, name+" · ")
		line := fmt.Sprintf("validated: %s %d/%d within %s · worst %s %s", ref, within, n, tolerance(lo, hi), signedPct(relErr(worst)), what)
		mark, p := "✓", st.Good
		if within < n {
			mark, p = "✗", st.Warn
		}
		lines = append(lines, cutWords(line, w-2)+" "+p.render(mark))
	}
	return lines
}

// relErr is pimtui's relative error against the reference: pimtui / reference − 1.
func relErr(v Validation) float64 {
	if v.Ref == 0 {
		return math.NaN()
	}
	return v.Pimtui/v.Ref - 1
}

// tolerance prints the tolerances lo to hi of a reference's checks: ±10%, ±5–15%.
func tolerance(lo, hi float64) string {
	p := func(f float64) string { return strconv.FormatFloat(math.Round(1000*f)/10, 'f', -1, 64) }
	if hi > lo {
		return "±" + p(lo) + "–" + p(hi) + "%"
	}
	return "±" + p(lo) + "%"
}

// signedPct prints a relative error with its sign, to a tenth below 10%: +4.2%, −28%
// (a minus sign, which a line is not cut after as it is after a hyphen).
func signedPct(e float64) string {
	f := "%+.0f%%"
	switch {
	case math.IsNaN(e):
		return "–"
	case math.Abs(e) < 0.095:
		f = "%+.1f%%"
	}
	return strings.Replace(fmt.Sprintf(f, 100*e), "-", "−", 1)
}
