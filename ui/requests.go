package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// reqColumn is a column of the request table, which it can be sorted by.
type reqColumn int

const (
	colID reqColumn = iota
	colInput
	colGenerated
	colWhere
	colStatus
	numReqColumns
)

var reqColumnNames = [numReqColumns]string{"request", "input", "generated", "where", "status"}

// requests is the request pool table: running requests, the head of the queue and the
// latest completed ones, in as many columns as the width allows, sorted by a column and
// filtered by what the user types after /. The row under the cursor is the selected
// request, highlighted in the KV map and the heatmap too. A location every placed request
// shares is said once, in the title, rather than on every row.
type requests struct {
	c    *Common
	w, h int
	snap *sim.Snapshot
	cur  int   // index into the snapshot's rows, -1 = none
	top  int   // first position of order shown
	rows []int // the rows shown, filtered and sorted: indices into the snapshot's rows

	sortBy reqColumn
	desc   bool
	filter textEntry
	typing bool // keys go to the filter

	whereW    int    // width of the where column; 0 when every placed request is in one place
	sameWhere string // that one place
}

func newRequests(c *Common) *requests { return &requests{c: c, cur: -1} }

const (
	reqFixedW = 35 // an entry's width without its where column: request, input, generated, status
	reqWhereW = 16 // the widest where column
	reqGap    = 3  // between columns of entries
)

func (m *requests) SetSize(w, h int) {
	m.w, m.h = w, h
	m.scroll()
}

func (m *requests) SetSnapshot(s *sim.Snapshot) {
	m.snap = s
	m.measureWhere()
	m.arrange()
	m.follow(m.c.Selected)
}

// where is the KV location of row i as the KV map names it.
func (m *requests) where(i int) string {
	r := m.snap.Requests[i]
	switch {
	case r.Loc < 0:
		return "–"
	case r.Loc < len(m.snap.KV.Locations):
		return m.snap.KV.Locations[r.Loc].Label
	}
	return strconv.Itoa(r.Loc)
}

// measureWhere sizes the where column, or drops it when every placed request is in one
// place.
func (m *requests) measureWhere() {
	m.whereW, m.sameWhere = 0, ""
	places := map[string]bool{}
	for i, r := range m.snap.Requests {
		if r.Loc >= 0 {
			w := m.where(i)
			places[w] = true
			m.sameWhere = w
			m.whereW = max(m.whereW, width(w))
		}
	}
	if len(places) == 1 && len(m.snap.Requests) > 1 {
		m.whereW = 0
		return
	}
	m.sameWhere = ""
	if len(places) > 0 {
		m.whereW = clamp(m.whereW, len("where"), reqWhereW)
	}
}

// arrange filters and sorts the rows.
func (m *requests) arrange() {
	m.rows = m.rows[:0]
	if m.snap == nil {
		return
	}
	for i, r := range m.snap.Requests {
		if m.filter.text == "" || m.filter.matches("#"+strconv.Itoa(r.ID), m.where(i), r.Status.String()) {
			m.rows = append(m.rows, i)
		}
	}
	rs := m.snap.Requests
	slices.SortStableFunc(m.rows, func(a, b int) int {
		x, y := rs[a], rs[b]
		c := 0
		switch m.sortBy {
		case colInput:
			c = cmp.Compare(x.InputLen, y.InputLen)
		case colGenerated:
			c = cmp.Compare(x.Generated, y.Generated)
		case colWhere:
			c = cmp.Compare(m.where(a), m.where(b))
		case colStatus:
			c = cmp.Compare(x.Status, y.Status)
		}
		if c == 0 {
			c = cmp.Compare(x.ID, y.ID)
		}
		if m.desc {
			return -c
		}
		return c
	})
	m.scroll()
}

// pos is the cursor's position among the shown rows, -1 when it has none.
func (m *requests) pos() int { return slices.Index(m.rows, m.cur) }

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

// colW is the width of column c.
func (m *requests) colW(c reqColumn) int {
	return [numReqColumns]int{8, 6, 11, m.whereW, 7}[c]
}

// columns are the columns shown: all that fit the pane's width, the where column and then
// the input, generated and status columns giving way in that order, so that no figure is
// ever cut.
func (m *requests) columns() []reqColumn {
	cols := []reqColumn{colID, colInput, colGenerated, colWhere, colStatus}
	if m.whereW == 0 {
		cols = slices.Delete(cols, 3, 4)
	}
	for _, drop := range []reqColumn{colWhere, colInput, colGenerated, colStatus} {
		if m.widthOf(cols) <= m.w {
			break
		}
		if i := slices.Index(cols, drop); i >= 0 {
			cols = slices.Delete(cols, i, i+1)
		}
	}
	return cols
}

func (m *requests) widthOf(cols []reqColumn) int {
	w := len(cols) - 1
	for _, c := range cols {
		w += m.colW(c)
	}
	return w
}

func (m *requests) entryW() int { return m.widthOf(m.columns()) }

func (m *requests) flows() int { return max(1, (m.w+reqGap)/(m.entryW()+reqGap)) }
func (m *requests) perFlow() int {
	return max(1, m.h-1)
}

func (m *requests) scroll() {
	p := m.pos()
	n := m.flows() * m.perFlow()
	if p >= 0 {
		m.top = clamp(m.top, max(0, p-n+1), p)
	}
	m.top = clamp(m.top, 0, max(0, len(m.rows)-n))
}

// capturing reports whether the pane takes every key, as while typing a filter.
func (m *requests) capturing() bool { return m.typing }

func (m *requests) Title() string {
	t := "6 Requests"
	if m.snap == nil {
		return t
	}
	t += fmt.Sprintf(" · %d decoding · %d waiting · %s done", m.snap.Batch, m.snap.Queue, thousands(m.snap.Done))
	if m.sameWhere != "" {
		t += " · KV in " + m.sameWhere
	}
	if m.filter.text != "" {
		t += fmt.Sprintf(" · /%s: %d of %d", m.filter.text, len(m.rows), len(m.snap.Requests))
	}
	return t
}

func (m *requests) ShortHelp() []key.Binding {
	k := m.c.Keys
	return []key.Binding{helpOnly("j/k", "select"), k.Filter, k.Sort}
}

func (m *requests) FullHelp() [][]key.Binding {
	k := m.c.Keys
	return [][]key.Binding{{helpOnly("j/k ↑/↓", "select a request"), helpOnly("h/l", "previous/next column"),
		helpOnly("pgup/pgdn", "page"), helpOnly("g/G", "first/last"), helpOnly("esc", "clear the filter, then the selection")},
		{k.Filter, k.Sort, k.SortReverse}}
}

func (m *requests) Update(msg tea.Msg) (pane, tea.Cmd) {
	if m.snap == nil {
		return m, nil
	}
	k := m.c.Keys
	if km, ok := msg.(tea.KeyPressMsg); ok && m.typing {
		switch km.String() {
		case "enter":
			m.typing = false
		case "esc":
			m.typing, m.filter.text = false, ""
			m.arrange()
		default:
			if m.filter.key(km) {
				m.arrange()
			}
		}
		return m, nil
	}
	page := m.perFlow()
	move := func(to int) (pane, tea.Cmd) {
		if len(m.rows) == 0 {
			return m, nil
		}
		m.cur = m.rows[clamp(to, 0, len(m.rows)-1)]
		m.scroll()
		return m, selectCmd(m.snap.Requests[m.cur].ID)
	}
	p := m.pos()
	switch msg := msg.(type) {
	case selectMsg:
		m.follow(msg.id)
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.Filter):
			m.typing = true
		case key.Matches(msg, k.Sort):
			m.sortBy = (m.sortBy + 1) % numReqColumns
			if m.sortBy == colWhere && m.whereW == 0 {
				m.sortBy++
			}
			m.arrange()
		case key.Matches(msg, k.SortReverse):
			m.desc = !m.desc
			m.arrange()
		case key.Matches(msg, k.Up):
			return move(p - 1)
		case key.Matches(msg, k.Down):
			return move(p + 1)
		case key.Matches(msg, k.Left):
			return move(p - page)
		case key.Matches(msg, k.Right):
			return move(max(0, p) + page)
		case key.Matches(msg, k.PageUp):
			return move(p - page*m.flows())
		case key.Matches(msg, k.PageDown):
			return move(max(0, p) + page*m.flows())
		case key.Matches(msg, k.Top):
			return move(0)
		case key.Matches(msg, k.Bottom):
			return move(len(m.rows) - 1)
		case key.Matches(msg, k.Close):
			if m.filter.text != "" {
				m.filter.text = ""
				m.arrange()
				return m, nil
			}
			m.cur = -1
			return m, selectCmd(0)
		}
	case tea.MouseClickMsg:
		f := msg.X / (m.entryW() + reqGap)
		row := msg.Y - 1
		if row < 0 || row >= m.perFlow() || f >= m.flows() {
			return m, nil
		}
		if i := m.top + f*m.perFlow() + row; i < len(m.rows) {
			return move(i)
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			m.top = max(0, m.top-3)
		case tea.MouseWheelDown:
			m.top = clamp(m.top+3, 0, max(0, len(m.rows)-m.flows()*m.perFlow()))
		}
	}
	return m, nil
}

// header names the columns, marking the one the rows are sorted by.
func (m *requests) header() string {
	var parts []string
	for _, c := range m.columns() {
		n := reqColumnNames[c]
		if c == m.sortBy {
			n += map[bool]string{false: "▲", true: "▼"}[m.desc]
		}
		if c == colWhere || c == colStatus {
			parts = append(parts, fitLine(n, m.colW(c)))
		} else {
			parts = append(parts, padLeft(n, m.colW(c)))
		}
	}
	return strings.Join(parts, " ")
}

func (m *requests) View() string {
	st := m.c.Styles
	if s, ok := placeholder(m.w, m.h, m.snap); ok {
		return s
	}
	if len(m.snap.Requests) == 0 {
		return strings.Join(fitLines([]string{st.Faint.render("no requests yet")}, m.w, m.h), "\n")
	}
	flows, per := m.flows(), m.perFlow()
	entryW := min(m.entryW(), m.w)
	lines := make([]rowBuf, per+1)
	if m.typing {
		lines[0].str(st.Bold, "filter: ")
		lines[0].str("", m.filter.text)
		lines[0].str(st.Rev, " ")
		lines[0].str(st.Faint, fmt.Sprintf("  %d of %d · enter keeps · esc clears", len(m.rows), len(m.snap.Requests)))
	}
	for f := range flows {
		if !m.typing {
			if f > 0 {
				lines[0].spaces(reqGap)
			}
			lines[0].str(st.Faint, fitLine(m.header(), entryW))
		}
		for r := range per {
			rb := &lines[r+1]
			if f > 0 {
				rb.spaces(reqGap)
			}
			i := m.top + f*per + r
			if i >= len(m.rows) {
				rb.spaces(entryW)
				continue
			}
			m.entry(rb, m.rows[i], entryW)
		}
	}
	if len(m.rows) == 0 {
		lines[1].str(st.Faint, "no request matches /"+m.filter.text)
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
	sel := paint("")
	if r.ID == m.c.Selected && r.ID != 0 {
		sel = st.Rev
	}
	start := rb.w
	for j, c := range m.columns() {
		if j > 0 {
			rb.str(sel, " ")
		}
		cw := m.colW(c)
		switch c {
		case colID:
			rb.str(sel, padLeft("#"+strconv.Itoa(r.ID), cw))
		case colInput:
			rb.str(sel, padLeft(strconv.Itoa(r.InputLen), cw))
		case colGenerated:
			rb.str(sel, padLeft(strconv.Itoa(r.Generated)+"/"+strconv.Itoa(r.OutputLen), cw))
		case colWhere:
			rb.str(sel, fitLine(cutWords(m.where(i), cw), cw))
		case colStatus:
			sp := map[sim.Status]paint{sim.Waiting: st.Warn, sim.Prefilling: st.Accent, sim.Running: st.Good, sim.Done: st.Faint}[r.Status]
			rb.str(sp+sel, fitLine(r.Status.String(), cw))
		}
	}
	rb.spaces(w - (rb.w - start))
}
