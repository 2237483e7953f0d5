package main

import (
	"strings"
	"testing"
)

// TestE2ETmux builds the binary and drives the explorer in a private tmux server as a
// user would: it starts, steps, shows help, survives a resize to a tiny terminal and
// back, and quits with status 0.
func TestE2ETmux(t *testing.T) {
	s := startTmux(t, tmuxBinary(t), "--preset neupims --requests 200 --batch 64")
	s.wait("step 1 ")
	s.keys("n", "n")
	s.wait("step 3 ")
	s.keys("b")
	s.wait("step 2 ")
	s.keys("?")
	s.wait("Keys")
	s.keys("Escape")
	s.tmux("resize-window", "-t", "t", "-x", "30", "-y", "8")
	s.wait("terminal too small")
	s.tmux("resize-window", "-t", "t", "-x", "100", "-y", "30")
	s.wait("NPU-S")
	s.keys("q")
	if st := s.status(); st != "0" {
		t.Fatalf("exit status %s", st)
	}
}

// TestE2EPickerLoadsTypedName opens the preset picker in tmux, moves its cursor, types
// hermes and presses enter: the explorer loads hermes, not a preset whose name starts
// with it (hermes-base) or whose description mentions it (rank-pim).
func TestE2EPickerLoadsTypedName(t *testing.T) {
	s := startTmux(t, tmuxBinary(t), "--preset neupims --requests 100 --batch 32")
	s.wait("step 1 ")
	s.keys("p")
	s.wait("filter:")
	s.keys("Down", "Down", "Down")
	s.keys("h", "e", "r", "m", "e", "s")
	s.wait("filter: hermes")
	s.keys("Enter")
	scr := s.wait("loaded preset hermes")
	if h := strings.SplitN(scr, "\n", 2)[0]; !strings.HasPrefix(h, "pimtui hermes ") {
		t.Fatalf("header %q after picking hermes", h)
	}
	s.keys("q")
	if st := s.status(); st != "0" {
		t.Fatalf("explorer exited with %s", st)
	}
}
