package ui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// PresetInfo is a preset the picker offers: its name, family, one-line description and
// how many paper experiments it declares.
type PresetInfo struct {
	Name, Family, Description string
	Experiments               int
}

// pickMsg asks the root to load preset name.
type pickMsg struct{ name string }

// closePickerMsg closes the picker without a choice.
type closePickerMsg struct{}

// picker is the preset picker: a list filtered by what the user types (matching names,
// then descriptions), drawn over the dashboard. The lesson and compare choosers are
// pickers too.
type picker struct {
	c       *Common
	items   []PresetInfo
	current string
	filter  textEntry
	cur     int
	matches []int
	// figures, when set, are the lines shown under the list for the selected item.
	figures func(name string, w int) []string
	// title names the box, verb what enter does; pick is the message enter sends.
	title, verb string
	pick        func(name string) tea.Msg
}

// selected is the preset under the cursor, "" when nothing matches.
func (p *picker) selected() string {
	if len(p.matches) == 0 {
		return ""
	}
	return p.items[p.matches[p.cur]].Name
}

func newPicker(c *Common, items []PresetInfo, current string) *picker {
	p := &picker{c: c, items: items, current: current, title: " Presets ", verb: "load",
		pick: func(name string) tea.Msg { return pickMsg{name} }}
	p.refilter()
	for i, j := range p.matches {
		if items[j].Name == current {
			p.cur = i
		}
	}
	return p
}

// refilter ranks the items against the filter: an exact name first, then names that
// start with it, then names that hold its letters in order, then the presets of a family
// whose name starts with it (l3 finds gpu-dgx, the baseline of L3's paper), then
// descriptions that contain it; the list order breaks ties. The cursor goes to the best
// match, so enter after typing a name loads that name.
func (p *picker) refilter() {
	p.matches = p.matches[:0]
	f := strings.ToLower(p.filter.text)
	var rank [5][]int
	for i, it := range p.items {
		name := strings.ToLower(it.Name)
		switch {
		case f == "":
			rank[0] = append(rank[0], i)
		case name == f:
			rank[0] = append(rank[0], i)
		case strings.HasPrefix(name, f):
			rank[1] = append(rank[1], i)
		case subsequence(name, f):
			rank[2] = append(rank[2], i)
		case it.Family != "" && strings.HasPrefix(strings.ToLower(it.Family), f):
			rank[3] = append(rank[3], i)
		case strings.Contains(strings.ToLower(it.Description), f):
			rank[4] = append(rank[4], i)
		}
	}
	for _, r := range rank {
		p.matches = append(p.matches, r...)
	}
	p.cur = 0
}

// subsequence reports whether s holds the runes of sub in order.
func subsequence(s, sub string) bool {
	r := []rune(sub)
	i := 0
	for _, c := range s {
		if i < len(r) && c == r[i] {
			i++
		}
	}
	return i == len(r)
}

func (p *picker) Update(msg tea.Msg) (*picker, tea.Cmd) {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return p, nil
	}
	switch km.String() {
	case "esc":
		return p, func() tea.Msg { return closePickerMsg{} }
	case "enter":
		if len(p.matches) == 0 {
			return p, nil
		}
		name := p.items[p.matches[p.cur]].Name
		return p, func() tea.Msg { return p.pick(name) }
	case "up", "ctrl+p", "shift+tab":
		p.cur = max(0, p.cur-1)
	case "down", "ctrl+n", "tab":
		p.cur = min(max(0, len(p.matches)-1), p.cur+1)
	case "/":
		// The filter has the keys already; / starts it as elsewhere.
		if p.filter.text == "" {
			return p, nil
		}
		fallthrough
	default:
		if p.filter.key(km) {
			p.refilter()
		}
	}
	return p, nil
}

// View draws the picker box for a screen of w×h.
func (p *picker) View(w, h int) []string {
	st := p.c.Styles
	bw := min(w-2, 96)
	inner := bw - 4
	var body []string
	body = append(body, st.Bold.render("filter: ")+p.filter.text+st.Rev.render(" "))
	body = append(body, "")
	nameW := 0
	for _, it := range p.items {
		nameW = max(nameW, len(it.Name))
	}
	var figs []string
	if p.figures != nil && p.selected() != "" {
		figs = append([]string{""}, p.figures(p.selected(), inner)...)
		// the list keeps at least three rows; the figures give way first
		figs = figs[:max(0, min(len(figs), h-2-2-4-3))]
	}
	room := max(1, min(h-2-2-4-len(figs), len(p.matches)))
	first := clamp(p.cur-room+1, 0, max(0, len(p.matches)-room))
	if len(p.matches) == 0 {
		body = append(body, st.Faint.render("nothing matches"))
	}
	for i := first; i < min(len(p.matches), first+room); i++ {
		it := p.items[p.matches[i]]
		mark := "  "
		if it.Name == p.current {
			mark = "• "
		}
		line := mark + fitLine(it.Name, nameW) + "  " + it.Description
		if i == p.cur {
			body = append(body, st.Rev.render(fitLine(cutWords(line, inner), inner)))
		} else {
			body = append(body, cutWords(line, inner))
		}
	}
	body = append(body, figs...)
	body = append(body, "", st.Faint.render("type to filter · ↑/↓ choose · enter "+p.verb+" · esc cancel"))
	box := frame(st, p.title, padBox(body, inner), bw, len(body)+2, true)
	return box
}

// padBox indents body lines by one cell inside a box of inner width w.
func padBox(body []string, w int) []string {
	out := make([]string, len(body))
	for i, l := range body {
		out[i] = " " + fitLine(l, w) + " "
	}
	return out
}
