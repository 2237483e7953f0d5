package ui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// requests is the request pool table: running requests, the head of the queue and the
// latest completed ones, in as many columns as the width allows. The row under the
// cursor is the selected request, highlighted in the KV map and the heatmap too.
type requests struct {
	c    *Common
	w, h int
	snap *sim.Snapshot
	cur  int // index into the snapshot's rows, -1 = none
	top  int // first row shown
}

func newRequests(c *Common) *requests { return &requests{c: c, cur: -1} }

const reqEntryW = 45

func (m *requests) SetSize(w, h int) {
	m.w, m.h = w, h
	m.scroll()
}

func (m *requests) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	m.follow(m.c.Selected)
}

// follow puts the cursor on request id.
func (m *requests) follow(id int) {
	m.cur = -1
	if m.snap == nil || id == 0 {
		return
	}
	for i, r := range m.snap.Requests {
		if r.ID == id {
			m.cur = i
			break
		}
	}
	m.scroll()
}

func (m *requests) flows() int { return max(1, (m.w+3)/(reqEntryW+3)) }
func (m *requests) perFlow() int {
	return max(1, m.h-1)
}

func (m *requests) scroll() {
	if m.snap == nil || m.cur < 0 {
		return
	}
	n := m.flows() * m.perFlow()
	m.top = clamp(m.top, max(0, m.cur-n+1), m.cur)
	// Scroll in whole columns' worth of rows so the table does not jump row by row
	// between columns.
	m.top = clamp(m.top, 0, max(0, len(m.snap.Requests)-n))
}

func (m *requests) Title() string {
	t := "6 Requests"
	if m.snap != nil {
		t += fmt.Sprintf(" · %d decoding · %d waiting · %s done", m.snap.Batch, m.snap.Queue, thousands(m.snap.Done))
	}
	return t
}

func (m *requests) ShortHelp() []key.Binding {
	return []key.Binding{helpOnly("j/k", "select"), helpOnly("pgup/pgdn", "page")}
}

func (m *requests) FullHelp() [][]key.Binding {
	return [][]key.Binding{{helpOnly("j/k ↑/↓", "select a request"), helpOnly("h/l", "previous/next column"),
		helpOnly("pgup/pgdn", "page"), helpOnly("g/G", "first/last"), helpOnly("esc", "clear the selection")}}
}

func (m *requests) Update(msg tea.Msg) (pane, tea.Cmd) {
	if m.snap == nil || len(m.snap.Requests) == 0 {
		return m, nil
	}
	k := m.c.Keys
	n := len(m.snap.Requests)
	page := m.perFlow()
	move := func(to int) (pane, tea.Cmd) {
		m.cur = clamp(to, 0, n-1)
		m.scroll()
		return m, selectCmd(m.snap.Requests[m.cur].ID)
	}
	switch msg := msg.(type) {
	case selectMsg:
		m.follow(msg.id)
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Up):
			return move(m.cur - 1)
		case key.Matches(msg, k.Down):
			return move(m.cur + 1)
		case key.Matches(msg, k.Left):
			return move(m.cur - page)
		case key.Matches(msg, k.Right):
			return move(max(0, m.cur) + page)
		case key.Matches(msg, k.PageUp):
			return move(m.cur - page*m.flows())
		case key.Matches(msg, k.PageDown):
			return move(max(0, m.cur) + page*m.flows())
		case key.Matches(msg, k.Top):
			return move(0)
		case key.Matches(msg, k.Bottom):
			return move(n - 1)
		case key.Matches(msg, k.Close):
			m.cur = -1
			return m, selectCmd(0)
		}
	case tea.MouseClickMsg:
		f := msg.X / (reqEntryW + 3)
		row := msg.Y - 1
		if row < 0 || row >= m.perFlow() || f >= m.flows() {
			return m, nil
		}
		if i := m.top + f*m.perFlow() + row; i < n {
			return move(i)
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			m.top = max(0, m.top-3)
		case tea.MouseWheelDown:
			m.top = clamp(m.top+3, 0, max(0, n-m.flows()*m.perFlow()))
		}
	}
	return m, nil
}

func (m *requests) View() string {
	st := m.c.Styles
	if s, ok := placeholder(m.w, m.h, m.snap); ok {
		return s
	}
	rows := m.snap.Requests
	if len(rows) == 0 {
		return strings.Join(fitLines([]string{st.Faint.render("no requests yet")}, m.w, m.h), "\n")
	}
	flows, per := m.flows(), m.perFlow()
	entryW := min(reqEntryW, m.w)
	lines := make([]rowBuf, per+1)
	for f := range flows {
		for i := range lines {
			if f > 0 {
				lines[i].spaces(3)
			}
		}
		lines[0].str(st.Faint, fitLine(fmt.Sprintf("%7s %6s %11s %-10s %-7s", "request", "input", "generated", "where", "status"), entryW))
		for r := range per {
			i := m.top + f*per + r
			rb := &lines[r+1]
			if i >= len(rows) {
				rb.spaces(entryW)
				continue
			}
			m.entry(rb, i, entryW)
		}
	}
	out := make([]string, len(lines))
	for i := range lines {
		out[i] = lines[i].line(m.w)
	}
	return strings.Join(fitLines(out, m.w, m.h), "\n")
}

func (m *requests) entry(rb *rowBuf, i, w int) {
	st := m.c.Styles
	r := m.snap.Requests[i]
	where := "–"
	if r.Loc >= 0 {
		where = strconv.Itoa(r.Loc)
		if r.Loc < len(m.snap.KV.Locations) {
			where = m.snap.KV.Locations[r.Loc].Label
		}
	}
	sp := map[sim.Status]paint{sim.Waiting: st.Warn, sim.Prefilling: st.Accent, sim.Running: st.Good, sim.Done: st.Faint}[r.Status]
	sel := paint("")
	if r.ID == m.c.Selected && r.ID != 0 {
		sel = st.Rev
	}
	gen := strconv.Itoa(r.Generated) + "/" + strconv.Itoa(r.OutputLen)
	start := rb.w
	rb.str(sel, truncate(fmt.Sprintf("%7s %6d %11s %-10s ", "#"+strconv.Itoa(r.ID), r.InputLen, gen, truncate(where, 10)), w))
	if rest := w - (rb.w - start); rest > 0 {
		rb.str(sp+sel, fitLine(r.Status.String(), min(rest, 7)))
	}
	rb.spaces(w - (rb.w - start))
}
