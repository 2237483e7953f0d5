package ui

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/internal/outfile"
	"github.com/pimtui/pimtui/sim"
)

// exportedMsg reports a finished export: what was written, or why nothing was.
type exportedMsg struct {
	what  string // "iterations 3–130", "the screen"
	paths []string
	err   error
}

// exportStatus is the status line after an export.
func (msg exportedMsg) status() (string, bool) {
	if msg.err != nil {
		return "export failed: " + msg.err.Error(), true
	}
	if len(msg.paths) == 2 {
		return fmt.Sprintf("exported %s to %s and %s (ui.perfetto.dev opens the trace)", msg.what, msg.paths[0], filepath.Ext(msg.paths[1])), false
	}
	return fmt.Sprintf("%s saved to %s", msg.what, strings.Join(msg.paths, ", ")), false
}

// export starts writing every iteration the engine keeps, as a Perfetto trace and a
// per-iteration CSV. It reads the engine, so it must run on the UI goroutine while no
// step is in flight; the writing happens off it.
func (m *Model) export() tea.Cmd {
	hist := m.eng.History()
	if hist.Len() == 0 {
		return m.setStatus("nothing to export before the first step", true)
	}
	from, to := hist.Step(0), hist.Step(hist.Len()-1)
	what := fmt.Sprintf("iterations %d–%d", from, to)
	if from == to {
		what = fmt.Sprintf("iteration %d", from)
	}
	base := filepath.Join(m.opts.ExportDir, fmt.Sprintf("pimtui-%s-steps%d-%d", fileSafe(m.cfg.Preset), from, to))
	return tea.Batch(m.setStatus("exporting "+what+"…", false),
		exportCmd(hist, m.eng.UtilKeys(), m.cfg.Preset, what, base))
}

// exportCmd writes the trace and the CSV of hist beside each other, base.json and
// base.csv. Both are written in full before either is renamed into place. The kept
// iterations are rebuilt one at a time, so an export holds one more in memory at most.
func exportCmd(hist sim.History, utilKeys []string, preset, what, base string) tea.Cmd {
	return func() tea.Msg {
		paths := []string{base + ".json", base + ".csv"}
		trace := func(w io.Writer) error {
			tw := sim.NewTraceWriter(w, "pimtui "+preset)
			for i := range hist.Len() {
				tw.Add(hist.Snapshot(i))
			}
			return tw.Close()
		}
		table := func(w io.Writer) error {
			cw := sim.NewIterationCSV(w, utilKeys)
			for i := range hist.Len() {
				cw.Add(hist.Snapshot(i))
			}
			return cw.Flush()
		}
		return exportedMsg{what: what, paths: paths, err: outfile.Write(paths, 0o644, trace, table)}
	}
}

// screenText is the screen as plain text: no escape sequences, no trailing blanks.
func screenText(view string) string {
	lines := strings.Split(ansi.Strip(view), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// saveScreenCmd writes the screen's text to dir.
func saveScreenCmd(text, preset string, step int, dir string) tea.Cmd {
	return func() tea.Msg {
		path := filepath.Join(dir, fmt.Sprintf("pimtui-%s-step%d.txt", fileSafe(preset), step))
		err := outfile.Write([]string{path}, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, text)
			return err
		})
		return exportedMsg{what: "the screen", paths: []string{path}, err: err}
	}
}

// fileSafe keeps a preset name (which a user's file may set to anything) usable as part
// of a file name.
func fileSafe(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "preset" + string(b)
	}
	return string(b)
}

// wantExport exports now or, while a step is in flight, as soon as it lands: the engine
// is not safe for concurrent use.
func (m *Model) wantExport() tea.Cmd {
	if m.opts.NoExport != "" {
		return m.setStatus(m.opts.NoExport, true)
	}
	if m.snap == nil {
		return m.setStatus("nothing to export before the first step", true)
	}
	if m.busy {
		m.exportWanted = true
		return m.setStatus("exporting after this step…", false)
	}
	return m.export()
}

// exportOnLanding runs an export deferred by wantExport when the step it waited for
// lands; until the next step starts the engine is idle.
func (m *Model) exportOnLanding(msg stepMsg) tea.Cmd {
	if !m.exportWanted || msg.seq != m.seq {
		return nil
	}
	m.exportWanted = false
	return m.export()
}

// saveScreen writes what the screen shows as plain text.
func (m *Model) saveScreen() tea.Cmd {
	if m.opts.NoExport != "" {
		return m.setStatus(m.opts.NoExport, true)
	}
	step := 0
	if m.snap != nil {
		step = m.snap.Step
	}
	return saveScreenCmd(m.plainScreen(), m.cfg.Preset, step, m.opts.ExportDir)
}

// plainScreen is the screen as `pimtui snapshot` writes it without --color: drawn in
// glyphs, not colours (a span in colour is a coloured blank, which plain text would lose).
func (m *Model) plainScreen() string {
	if !m.c.Color {
		return screenText(m.render())
	}
	styles, footer := m.c.Styles, m.footer.Styles
	m.c.Color, m.c.Styles = false, newStyles(false, m.c.Dark)
	m.footer.Styles = m.c.Styles.Help
	m.keyLine = m.footer.ShortHelpView(append(m.c.Keys.ShortHelp(), m.panes[m.focus].ShortHelp()...))
	text := screenText(m.render())
	m.c.Color, m.c.Styles, m.footer.Styles = true, styles, footer
	m.relayout()
	return text
}
