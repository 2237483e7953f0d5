package ui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// textEntry is a line of text typed into a filter: printable keys add to it, backspace
// takes the last character back and ctrl+u clears it.
type textEntry struct{ text string }

// key applies an editing key and reports whether it was one.
func (t *textEntry) key(km tea.KeyPressMsg) bool {
	switch km.String() {
	case "backspace":
		if r := []rune(t.text); len(r) > 0 {
			t.text = string(r[:len(r)-1])
		}
		return true
	case "ctrl+u":
		t.text = ""
		return true
	}
	if s := km.Text; s != "" && km.Mod&^tea.ModShift == 0 && len([]rune(s)) == 1 && s >= " " {
		t.text += s
		return true
	}
	return false
}

// matches reports whether any of fields contains the text, ignoring case.
func (t *textEntry) matches(fields ...string) bool {
	f := strings.ToLower(t.text)
	for _, s := range fields {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}
