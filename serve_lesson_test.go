package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeLesson: with --lesson every session opens on the lesson's first step, and )
// moves it on; the other sessions are not affected.
func TestServeLesson(t *testing.T) {
	_, addr, logs := startServe(t, "--open", "--lesson", "channel-load-balancing")
	tm := openTerm(t, mustDial(t, addr), 120, 40)
	tm.waitFor(t, "Lesson: Channel load balancing", 0, 15*time.Second)
	tm.waitFor(t, "step 1/3: Round robin", 0, 15*time.Second)
	other := openTerm(t, mustDial(t, addr), 120, 40)
	other.waitFor(t, "step 1/3: Round robin", 0, 15*time.Second)
	tm.in.Write([]byte(")"))
	if err := repaintUntil(tm.out, tm.s, 120, 40, "step 2/3: Greedy min-load", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	at := other.out.Len()
	if err := repaintUntil(other.out, other.s, 120, 40, "step 1/3: Round robin", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(other.out.String()[at:], "step 2/3") {
		t.Fatal("one student's step moved another's")
	}
	for _, s := range []*sshTerm{tm, other} {
		s.in.Write([]byte("q"))
		if code := s.wait(t, 10*time.Second); code != 0 {
			t.Fatalf("exit status %d", code)
		}
	}
	waitLog(t, logs, "reason=quit")
}

// TestServeLessonBadInput: an unknown lesson, or a preset beside a lesson, stops serve
// before it listens.
func TestServeLessonBadInput(t *testing.T) {
	hk := filepath.Join(t.TempDir(), "hk")
	checkBadInput(t, []badInput{
		{[]string{"serve", "--open", "--lesson", "dual-row-buffer", "--host-key", hk}, `unknown lesson "dual-row-buffer"; did you mean "dual-row-buffers"`},
		{[]string{"serve", "--open", "--lesson", "dual-row-buffers", "--preset", "npu-pim", "--host-key", hk}, "--lesson opens every session on the lesson's own presets; drop --preset"},
		{[]string{"serve", "--open", "--lesson", "dual-row-buffers", "--set", "pim.dual_row_bufer=true", "--host-key", hk}, `--set pim.dual_row_bufer: unknown key; did you mean "pim.dual_row_buffer"`},
	})
}

// TestServeNoExport: in a served session e says exports are off instead of writing a file
// on the server.
func TestServeNoExport(t *testing.T) {
	_, addr, _ := startServe(t, "--open")
	tm := openTerm(t, mustDial(t, addr), 120, 40)
	tm.waitFor(t, "step 1 ", 0, 15*time.Second)
	tm.in.Write([]byte("e"))
	if err := repaintUntil(tm.out, tm.s, 120, 40, "exports are off over SSH", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tm.in.Write([]byte("q"))
	if code := tm.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}
