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

// matches reports whether any of fields contains the text, ignoring case. A number at
// either end of the text is whole: ch3 finds ch3 but neither ch30 nor ch13, #1 finds #1
// but not #12.
func (t *textEntry) matches(fields ...string) bool {
	f := strings.ToLower(t.text)
	if f == "" {
		return true
	}
	digitAt := func(s string, i int) bool { return i >= 0 && i < len(s) && s[i] >= '0' && s[i] <= '9' }
	headDigit, tailDigit := digitAt(f, 0), digitAt(f, len(f)-1)
	for _, s := range fields {
		s = strings.ToLower(s)
		for at := 0; at <= len(s)-len(f); {
			i := strings.Index(s[at:], f)
			if i < 0 {
				break
			}
			i += at
			if !(headDigit && digitAt(s, i-1)) && !(tailDigit && digitAt(s, i+len(f))) {
				return true
			}
			at = i + 1
		}
	}
	return false
}
