package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxSession runs one command line of the built binary in a private tmux server at
// 120×40 under NO_COLOR. keys sends tmux key names; wait waits until the screen holds
// sub; status waits for the exit status.
type tmuxSession struct {
	t        *testing.T
	sock, rc string
}

// tmuxBinary builds the binary for an end-to-end test, or skips the test in -short mode
// or without tmux.
func tmuxBinary(t *testing.T) string {
	t.Helper()
	if quick() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	bin := filepath.Join(t.TempDir(), "pimtui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func startTmux(t *testing.T, bin string, args string) *tmuxSession {
	t.Helper()
	dir := t.TempDir()
	s := &tmuxSession{t: t, sock: "pimtui-e2e-" + filepath.Base(dir), rc: filepath.Join(dir, "rc")}
	t.Cleanup(func() { s.tmux("kill-server") })
	s.tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "env NO_COLOR=1 "+bin+" "+args+"; echo $? > "+s.rc+"; sleep 30")
	return s
}

func (s *tmuxSession) tmux(args ...string) string {
	out, _ := exec.Command("tmux", append([]string{"-L", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out)
}

func (s *tmuxSession) keys(k ...string) { s.tmux(append([]string{"send-keys", "-t", "t"}, k...)...) }

func (s *tmuxSession) wait(sub string) string {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		scr := s.tmux("capture-pane", "-p", "-t", "t")
		if strings.Contains(scr, sub) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %q; screen:\n%s", sub, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *tmuxSession) status() string {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(s.rc)
		if st := strings.TrimSpace(string(b)); st != "" {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("did not quit; screen:\n%s", s.tmux("capture-pane", "-p", "-t", "t"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestE2ECompare drives the compare view in tmux as a user would, from the command line
// and from the explorer's c: both sides step together, go back together, survive a
// resize to a tiny terminal, and the program quits with status 0.
func TestE2ECompare(t *testing.T) {
	bin := tmuxBinary(t)

	s := startTmux(t, bin, "compare neupims neupims+pim.dual_row_buffer=false --requests 100 --batch 32")
	s.wait("A neupims vs B neupims+pim.dual_row_buffer=false")
	s.keys("n", "n")
	scr := s.wait("Difference · B vs A · step 3")
	if !strings.Contains(scr, "step 3 · iteration") || strings.Count(scr, "step 3 · iteration") != 2 {
		t.Fatalf("both sides are not at step 3:\n%s", scr)
	}
	s.keys("b")
	s.wait("Difference · B vs A · step 2")
	s.keys("Tab", "?")
	s.wait("Reading the compare screen")
	s.keys("Escape")
	s.tmux("resize-window", "-t", "t", "-x", "40", "-y", "10")
	s.wait("terminal too small")
	s.tmux("resize-window", "-t", "t", "-x", "90", "-y", "20")
	s.wait("(tab: A)")
	s.keys("q")
	if st := s.status(); st != "0" {
		t.Fatalf("compare exited with %s", st)
	}

	s = startTmux(t, bin, "--preset neupims --requests 100 --batch 32")
	s.wait("step 1 ")
	s.keys("c")
	s.wait("Compare neupims with")
	s.keys("n", "p", "u", "-", "o", "Enter")
	s.wait("A neupims vs B npu-only")
	s.keys("n")
	s.wait("Difference · B vs A · step 2")
	s.keys("Escape")
	s.wait("6 Requests")
	s.keys("q")
	if st := s.status(); st != "0" {
		t.Fatalf("explorer exited with %s", st)
	}
}
