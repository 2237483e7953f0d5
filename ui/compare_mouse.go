package ui

import tea "charm.land/bubbletea/v2"

// sideAt returns the side whose frame holds screen cell (x, y), and that frame; the
// strip, header, footer and a hidden side hold none.
func (m *Compare) sideAt(x, y int) (int, rect, bool) {
	l := computeCompareLayout(m.c.Width, m.c.Height, m.focus, m.stripWant())
	for i, r := range l.side {
		if r.w > 0 && r.contains(x, y) {
			return i, r, true
		}
	}
	return 0, rect{}, false
}

// timelineOrigin is where side i's timeline starts on the screen inside frame r: an
// error line above it on the focused side pushes it down one row.
func (m *Compare) timelineOrigin(i int, r rect) (x, y int) {
	x, y = r.x+1, r.y+1
	if m.err != nil && i == m.focus {
		y++
	}
	return x, y
}

// mouse takes a click or a wheel turn as the explorer does: a click in a side's frame
// focuses that side, and on its timeline moves the cursor and row there; the wheel over
// a side zooms its timeline without moving the focus. Anywhere else it does nothing.
func (m *Compare) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.help || m.tooSmall() {
		return nil
	}
	ev := msg.Mouse()
	i, r, ok := m.sideAt(ev.X, ev.Y)
	if !ok {
		return nil
	}
	s := m.sides[i]
	switch msg := msg.(type) {
	case tea.MouseClickMsg:
		if i != m.focus {
			m.focus = i
			m.relayout()
		}
		x, y := m.timelineOrigin(i, r)
		if !(rect{x, y, s.tl.w, s.tl.h}).contains(msg.X, msg.Y) {
			return nil
		}
		msg.X, msg.Y = msg.X-x, msg.Y-y
		_, cmd := s.tl.Update(msg)
		return cmd
	case tea.MouseWheelMsg:
		if s.tl.w == 0 || s.tl.h == 0 {
			return nil
		}
		x, y := m.timelineOrigin(i, r)
		msg.X, msg.Y = msg.X-x, msg.Y-y
		_, cmd := s.tl.Update(msg)
		return cmd
	}
	return nil
}
