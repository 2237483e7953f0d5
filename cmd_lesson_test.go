package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/presets"
)

// lesson --list prints every lesson on a line of its own: name, family, title; lesson
// list says the same.
func TestLessonList(t *testing.T) {
	out, errs, code := cli(t, "lesson", "--list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if out2, errs2, code2 := cli(t, "lesson", "list"); code2 != 0 || out2 != out {
		t.Fatalf("lesson list: exit %d, %s\n%s", code2, errs2, out2)
	}
	ls, err := presets.Lessons()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(ls) {
		t.Fatalf("%d lines for %d lessons:\n%s", len(lines), len(ls), out)
	}
	for i, l := range ls {
		f := strings.Fields(lines[i])
		if len(f) < 3 || f[0] != l.Name || f[1] != l.Family || !strings.HasSuffix(lines[i], l.Title) {
			t.Errorf("line %d %q does not give %s, %s and its title", i+1, lines[i], l.Name, l.Family)
		}
	}
}

// lesson --check prints each claim with both sides measured and ✓; an override that
// breaks a claim gives ✗ and exit status 1.
func TestLessonCheck(t *testing.T) {
	out, errs, code := cli(t, "lesson", "--check", "dual-row-buffers")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	l, _ := presets.GetLesson("dual-row-buffers")
	n := 0
	for _, s := range l.Steps {
		n += len(s.Claims)
	}
	for _, want := range []string{"dual-row-buffers: Blocked PIM versus dual row buffers", "✓ step 2: The overlap inside attention shortens the iteration.",
		"iteration_ms.mean ", " < ", "(step 1)", "(0.5 × step 2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%d of %d claims hold", n, n)) || strings.Contains(out, "✗") {
		t.Errorf("not every claim holds:\n%s", out)
	}
	// At batch 64 NeuPIMs does not interleave (its preset enables it from 256), so the
	// lesson's claims about interleaving no longer hold.
	out, errs, code = cli(t, "lesson", "--check", "dual-row-buffers", "--batch", "64")
	if code != 1 || !strings.Contains(out, "✗ step 4") || !strings.Contains(errs, "claims do not hold") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, errs, out)
	}
}

func TestLessonBadInput(t *testing.T) {
	checkBadInput(t, []badInput{
		{[]string{"lesson", "dual-row-buffer"}, `unknown lesson "dual-row-buffer"; did you mean "dual-row-buffers"`},
		{[]string{"lesson", "--check", "sub-batch"}, `unknown lesson "sub-batch"; did you mean "sub-batch-interleaving"`},
		{[]string{"lesson", "dual-row-buffers"}, "a lesson runs in the explorer, which needs a terminal; pimtui lesson --list lists the lessons"},
		{[]string{"lesson"}, "needs a terminal"},
		{[]string{"lesson", "a", "b"}, "lesson takes at most one lesson name, got 2"},
		{[]string{"lesson", "--list", "--check"}, "--list and --check are exclusive"},
		{[]string{"lesson", "--list", "dual-row-buffers"}, "--list takes no lesson name"},
		{[]string{"lesson", "--check", "list"}, `unknown lesson "list"`},
		{[]string{"lesson", "--preset", "neupims", "dual-row-buffers"}, "--preset does not apply to a lesson"},
		{[]string{"lesson", "--config", "x.toml", "dual-row-buffers"}, "--config does not apply to a lesson"},
		{[]string{"lesson", "--check", "dual-row-buffers", "--set", "pim.dual_row_bufer=true"}, `lesson dual-row-buffers step 1: --set pim.dual_row_bufer: unknown key; did you mean "pim.dual_row_buffer"`},
		{[]string{"lesson", "--check", "decode-memory-bound", "--batch", "0"}, "workload.batch: 0 is out of range"},
		{[]string{"lesson", "dual-row-buffers", "--arrival", "often"}, "want closed or poisson:RATE"},
		{[]string{"lesson", "--bogus"}, "unknown flag: --bogus"},
	})
}
