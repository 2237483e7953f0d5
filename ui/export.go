package ui

import (
	"fmt"
	"os"
	"path/filepath"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// exportedMsg reports a finished export.
type exportedMsg struct {
	path string
	err  error
}

// exportCmd writes the snapshot's timeline as a Perfetto trace in dir. It writes a
// temporary file and renames it into place, so a failed export leaves neither a
// truncated file nor a damaged earlier export behind.
func exportCmd(s *sim.Snapshot, preset, dir string) tea.Cmd {
	return func() tea.Msg {
		path := filepath.Join(dir, fmt.Sprintf("pimtui-%s-step%d.json", fileSafe(preset), s.Step))
		f, err := os.CreateTemp(dir, ".pimtui-export-*.json")
		if err != nil {
			return exportedMsg{path: path, err: err}
		}
		// CreateTemp makes the file private; a trace is an ordinary document.
		err = f.Chmod(0o644)
		tw := sim.NewTraceWriter(f, "pimtui "+preset)
		tw.Add(s)
		if werr := tw.Close(); err == nil {
			err = werr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
			return exportedMsg{path: path, err: err}
		}
		return exportedMsg{path: path}
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
