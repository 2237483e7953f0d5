package ui

import (
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// g, a number and enter take the run to that step, as a program sees the keys.
func TestFlowGoToStep(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("g")
	waitScreen(t, p, "the step prompt", shows("go to step: "))
	tm.Type("25")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitScreen(t, p, "step 25", func(s string) bool { return strings.Contains(firstLine(s), "step 25 ") })
	waitScreen(t, p, "the jump's end", shows("at step 25 (from step 1)"))
	tm.Type("g7")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitScreen(t, p, "step 7", func(s string) bool { return strings.Contains(firstLine(s), "step 7 ") })
	tm.Type("q")
	if m := finalModel(t, tm); m.snap.Step != 7 {
		t.Fatalf("final step %d", m.snap.Step)
	}
}

// q closes the help and the message log, which say any key closes them; then q quits.
func TestFlowQClosesOverlays(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("?")
	waitScreen(t, p, "the help", shows("Reading the screen"))
	tm.Type("q")
	waitScreen(t, p, "the help to close", func(s string) bool { return !strings.Contains(s, "Reading the screen") })
	tm.Type("M")
	waitScreen(t, p, "the message log", shows("any key closes"))
	tm.Type("q")
	waitScreen(t, p, "the log to close", func(s string) bool { return !strings.Contains(s, "any key closes") })
	tm.Type("q")
	finalModel(t, tm)
}

// a switches the bank grid to the iteration's range and back.
func TestFlowBankScale(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("1")
	waitScreen(t, p, "the absolute legend", shows("PIM busy ·<20 ░<40 ▒<60 ▓<80 █≥80%"))
	tm.Type("a")
	waitScreen(t, p, "the relative scale", func(s string) bool {
		return strings.Contains(s, "Banks · PIM relative") && regexp.MustCompile(`PIM busy relative \d+\.\d+% 12345 \d+\.\d+%`).MatchString(s)
	})
	tm.Type("a")
	waitScreen(t, p, "the absolute scale again", shows("PIM busy ·<20"))
	tm.Type("q")
	finalModel(t, tm)
}

// /ch3 in the request table finds the requests on ch3 only.
func TestFlowRequestFilterWholeNumber(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("6/ch3")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	s := waitScreen(t, p, "the filter", shows("/ch3: "))
	s = s[strings.Index(s, "6 Requests"):]
	if !regexp.MustCompile(`ch3 `).MatchString(s) || regexp.MustCompile(`ch3\d`).MatchString(s) || regexp.MustCompile(`ch[0-24-9] `).MatchString(s) {
		t.Fatalf("/ch3 shows other channels:\n%s", s)
	}
	tm.Type("q")
	finalModel(t, tm)
}
