package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// A snapshot is one frame of exactly the asked size, plain unless --color, naming the
// preset and the step, and the same every time.
func TestSnapshotFrame(t *testing.T) {
	cases := []struct {
		args  []string
		w, h  int
		step  int
		focus string // the focused pane's title, drawn with a heavy border
	}{
		{[]string{"--preset", "neupims", "--steps", "3"}, 120, 40, 3, "┏━2 Timeline"},
		{[]string{"--preset", "helios", "--steps", "2", "--size", "80x24", "--focus", "kv"}, 80, 24, 2, "┏━3 KV blocks"},
		{[]string{"--preset", "gpu-h100", "--size", "200x60", "--focus", "5"}, 200, 60, 1, "┏━5 Metrics"},
		{[]string{"--preset", "l3", "--steps", "4", "--size", "60x16", "--focus", "Requests"}, 60, 16, 4, "6 Requests"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := append([]string{"snapshot"}, c.args...)
			out, errs, code := cli(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if strings.Contains(out, "\x1b") {
				t.Fatal("escape sequences in a plain snapshot")
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != c.h {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), c.h, out)
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > c.w {
					t.Fatalf("line %d is %d cells wide, more than %d: %q", i+1, w, c.w, l)
				}
			}
			preset := c.args[1]
			if !strings.Contains(lines[0], "pimtui "+preset) || !strings.Contains(lines[0], fmt.Sprintf("step %d ", c.step)) {
				t.Fatalf("header %q does not name %s and step %d", lines[0], preset, c.step)
			}
			if !strings.Contains(out, c.focus) {
				t.Fatalf("no %q in:\n%s", c.focus, out)
			}
			again, _, _ := cli(t, args...)
			if again != out {
				t.Fatal("two snapshots of the same run differ")
			}
		})
	}
	out, errs, code := cli(t, "snapshot", "--color", "--size", "100x30")
	if code != 0 || !strings.Contains(out, "\x1b[") {
		t.Fatalf("--color: exit %d (%s), escapes %v", code, errs, strings.Contains(out, "\x1b["))
	}
	if n := strings.Count(strings.TrimSuffix(out, "\n"), "\n") + 1; n != 30 {
		t.Fatalf("--color: %d lines, want 30", n)
	}
}

func TestSnapshotBadInput(t *testing.T) {
	short := []string{"--requests", "4", "--batch", "4", "--input-len", "8", "--output-len", "5"}
	checkBadInput(t, []badInput{
		{[]string{"snapshot", "--size", "10x5"}, "--size 10x5: 10×5 is too small; the explorer needs at least 60×16"},
		{[]string{"snapshot", "--size", "59x40"}, "too small; the explorer needs at least 60×16"},
		{[]string{"snapshot", "--size", "5000x40"}, "too large; at most 1000×1000"},
		{[]string{"snapshot", "--size", "big"}, `--size "big": want WIDTHxHEIGHT in cells, e.g. 120x40`},
		{[]string{"snapshot", "--focus", "timelin"}, `--focus "timelin": unknown pane; did you mean "timeline"?`},
		{[]string{"snapshot", "--focus", "7"}, "(panes: banks, timeline, kv, neurons, metrics, requests, or 1–6)"},
		{[]string{"snapshot", "--steps", "0"}, "--steps 0: want at least 1"},
		{append([]string{"snapshot", "--steps", "50"}, short...), "--steps 50: the run ends after 5 iterations; ask for at most 5"},
		{[]string{"snapshot", "--preset", "neupim"}, `did you mean "neupims"`},
		{[]string{"snapshot", "--input-len", "2000000", "--output-len", "10"}, "neupims: request 1 (2000000 input + 10 output tokens) can never run"},
		{[]string{"snapshot", "--preset", "neupims", "--config", "x.toml"}, "--preset and --config are exclusive"},
		{[]string{"snapshot", "frame"}, `unknown command "frame" for "pimtui snapshot"`},
		{[]string{"run", "extra"}, `unknown command "extra" for "pimtui run"`},
		{[]string{"presets", "keys", "extra"}, `unknown command "extra" for "pimtui presets keys"`},
	})
}
