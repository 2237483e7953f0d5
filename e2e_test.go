package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2ETmux builds the binary and drives the explorer in a private tmux server as a
// user would: it starts, steps, shows help, survives a resize to a tiny terminal and
// back, and quits with status 0.
func TestE2ETmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pimtui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sock := "pimtui-e2e-" + filepath.Base(dir)
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	rc := filepath.Join(dir, "rc")
	tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40",
		"env NO_COLOR=1 "+bin+" --preset neupims --requests 200 --batch 64; echo $? > "+rc+"; sleep 30")
	capture := func() string { return tmux("capture-pane", "-p", "-t", "t") }
	waitFor := func(what string, cond func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := capture()
			if cond(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }
	waitFor("the first step", has("step 1 "))
	tmux("send-keys", "-t", "t", "n", "n")
	waitFor("step 3", has("step 3 "))
	tmux("send-keys", "-t", "t", "b")
	waitFor("step back to 2", has("step 2 "))
	tmux("send-keys", "-t", "t", "?")
	waitFor("the help", has("Keys"))
	tmux("send-keys", "-t", "t", "Escape")
	tmux("resize-window", "-t", "t", "-x", "30", "-y", "8")
	waitFor("the too-small screen", has("terminal too small"))
	tmux("resize-window", "-t", "t", "-x", "100", "-y", "30")
	waitFor("the dashboard again", has("NPU-S"))
	tmux("send-keys", "-t", "t", "q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(rc)
		if s := strings.TrimSpace(string(b)); s != "" {
			if s != "0" {
				t.Fatalf("exit status %s", s)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("did not quit; screen:\n%s", capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestE2EPickerLoadsTypedName opens the preset picker in tmux, moves its cursor, types
// hermes and presses enter: the explorer loads hermes, not a preset whose name starts
// with it (hermes-base) or whose description mentions it (rank-pim).
func TestE2EPickerLoadsTypedName(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	bin := filepath.Join(t.TempDir(), "pimtui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	s := startTmux(t, bin, "--preset neupims --requests 100 --batch 32")
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
