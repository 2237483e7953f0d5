package ui

import (
	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// Common is the state every pane shares, passed by pointer: the terminal, the palette,
// the bindings and the request selected anywhere (the KV map, the heatmap's owner mode
// and the request table all highlight it).
type Common struct {
	Width, Height int
	Styles        *Styles
	Keys          *KeyMap
	Color         bool
	Dark          bool
	Selected      int // request id, 0 = none
}

// terminal applies a terminal's size or background report to the shared state; it
// reports whether msg was one of them, for the caller to lay out again.
func (c *Common) terminal(msg tea.Msg) bool {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		c.Width, c.Height = max(0, msg.Width), max(0, msg.Height)
	case tea.BackgroundColorMsg:
		c.Dark = msg.IsDark()
		c.Styles = newStyles(c.Color, c.Dark)
	default:
		return false
	}
	return true
}

// pane is one area of the dashboard. SetSize gives the size inside the pane's frame;
// View returns exactly that many lines of exactly that width. Mouse messages arrive in
// the pane's own coordinates, (0,0) being the top-left cell inside the frame.
type pane interface {
	help.KeyMap
	SetSize(w, h int)
	SetSnapshot(s *sim.Snapshot)
	Update(msg tea.Msg) (pane, tea.Cmd)
	View() string
	Title() string
}

// capturer is a pane that can take every key for a while, as while typing a filter.
type capturer interface{ capturing() bool }

// paneID numbers the panes as the 1–6 keys do.
type paneID int

const (
	paneBanks paneID = iota
	paneTimeline
	paneKV
	paneNeurons
	paneMetrics
	paneRequests
	numPanes
)

var paneNames = [numPanes]string{"Banks", "Timeline", "KV blocks", "Neurons", "Metrics", "Requests"}
