package ui

import "charm.land/bubbles/v2/key"

// KeyMap holds every binding of the explorer. Global bindings act wherever the focus is;
// the pane bindings act on the focused pane only. → and ← step the run, so cursors move
// with h/j/k/l (and ↑/↓) inside a pane.
type KeyMap struct {
	Play, Step, Back, Faster, Slower, Reset   key.Binding
	Presets, Focus, FocusBack, Jump, Maximise key.Binding
	Export, Screen, Help, Quit, Close         key.Binding
	Compare, Messages, GoTo                   key.Binding

	// Lessons: the picker, and in a lesson its steps and the step's whole text.
	Lessons, LessonNext, LessonPrev, LessonRead key.Binding

	Left, Right, Up, Down key.Binding
	Enter                 key.Binding

	// Bank heatmap.
	Mode, Scale key.Binding
	// Timeline.
	ZoomIn, ZoomOut, Fit, PanLeft, PanRight, PrevLayer, NextLayer, Expand key.Binding

	// Bubble forensics: the timeline's cursor to the iteration's largest bubble, and steps
	// to an iteration whose bubble share exceeds a threshold.
	Largest, PrevBubbly, NextBubbly, Threshold key.Binding

	// Request table.
	Top, Bottom, PageUp, PageDown key.Binding
	Filter, Sort, SortReverse     key.Binding
}

// DefaultKeyMap returns the explorer's bindings.
func DefaultKeyMap() *KeyMap {
	b := key.NewBinding
	k, h := key.WithKeys, key.WithHelp
	return &KeyMap{
		Play:      b(k("space"), h("space", "play/pause")),
		Step:      b(k("n", "right"), h("n/→", "step")),
		Back:      b(k("b", "left"), h("b/←", "step back")),
		Faster:    b(k("+", "="), h("+", "faster")),
		Slower:    b(k("-", "_"), h("-", "slower")),
		Reset:     b(k("r"), h("r", "reset")),
		Presets:   b(k("p"), h("p", "presets")),
		Focus:     b(k("tab"), h("tab", "next pane")),
		FocusBack: b(k("shift+tab"), h("shift+tab", "previous pane")),
		Jump:      b(k("1", "2", "3", "4", "5", "6"), h("1–6", "jump to pane")),
		Maximise:  b(k("z"), h("z", "maximise")),
		Export:    b(k("e"), h("e", "export trace")),
		Compare:   b(k("c"), h("c", "compare")),
		Screen:    b(k("s"), h("s", "save screen")),
		Help:      b(k("?"), h("?", "help")),
		Messages:  b(k("M"), h("M", "message log")),
		GoTo:      b(k("g"), h("g", "go to step (type its number, enter)")),
		Quit:      b(k("q", "ctrl+c"), h("q", "quit")),
		Close:     b(k("esc"), h("esc", "back/close")),

		Lessons:    b(k("t"), h("t", "lessons")),
		LessonNext: b(k(")"), h(")", "next lesson step")),
		LessonPrev: b(k("("), h("(", "previous lesson step")),
		LessonRead: b(k("i"), h("i", "the lesson step's whole text")),

		Left:  b(k("h"), h("h", "left")),
		Right: b(k("l"), h("l", "right")),
		Up:    b(k("k", "up"), h("k/↑", "up")),
		Down:  b(k("j", "down"), h("j/↓", "down")),
		Enter: b(k("enter"), h("enter", "drill down")),

		Mode:  b(k("m"), h("m", "mode")),
		Scale: b(k("a"), h("a", "colour scale")),

		ZoomIn:    b(k("]"), h("]", "zoom in")),
		ZoomOut:   b(k("["), h("[", "zoom out")),
		Fit:       b(k("0"), h("0", "whole iteration")),
		PanLeft:   b(k("H", "shift+left"), h("H/⇧←", "pan left")),
		PanRight:  b(k("L", "shift+right"), h("L/⇧→", "pan right")),
		PrevLayer: b(k("<", ","), h("<", "previous layer")),
		NextLayer: b(k(">", "."), h(">", "next layer")),
		Expand:    b(k("x"), h("x", "expand lanes")),
		Largest:   b(k("B"), h("B", "largest bubble, by cause")),

		PrevBubbly: b(k("{"), h("{", "previous iteration above the bubble threshold")),
		NextBubbly: b(k("}"), h("}", "next iteration above it")),
		Threshold:  b(k("%"), h("%", "bubble threshold 10/25/50/75%")),

		Top:      b(k("home"), h("home", "first")),
		Bottom:   b(k("G", "end"), h("G/end", "last")),
		PageUp:   b(k("pgup", "ctrl+u"), h("pgup", "page up")),
		PageDown: b(k("pgdown", "ctrl+d"), h("pgdn", "page down")),

		Filter:      b(k("/"), h("/", "filter")),
		Sort:        b(k("o"), h("o", "sort by the next column")),
		SortReverse: b(k("O"), h("O", "reverse the order")),
	}
}

// ShortHelp is the footer's line: the bindings a newcomer needs first, help and quit
// before the rest so they survive on narrow screens.
func (k *KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Quit, k.Play, k.Step, k.Back, k.Focus, k.Maximise, k.Presets, k.Export}
}

// FullHelp groups the global bindings for the help overlay.
func (k *KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Play, k.Step, k.Back, k.GoTo, k.Faster, k.Slower, k.Reset},
		{k.Focus, k.FocusBack, k.Jump, k.Maximise, k.Close},
		{k.Presets, k.Compare, k.Export, k.Screen, k.Messages, k.Help, k.Quit},
		{k.Lessons, k.LessonPrev, k.LessonNext, k.LessonRead, helpOnly("r", "replay the step"), helpOnly("esc", "leave the lesson")},
		{k.Largest, k.PrevBubbly, k.NextBubbly, k.Threshold},
	}
}

// helpOnly is a binding shown in help under a name of its own ("h/j/k/l", "cursor"); it
// documents keys that other bindings match.
func helpOnly(keys, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys), key.WithHelp(keys, desc))
}
