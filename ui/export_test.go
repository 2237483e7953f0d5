package ui

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// exported reads an export's trace and CSV: the iteration markers and span count of the
// trace, and the CSV's rows.
func exported(t *testing.T, base string) (iters []int, spans int, rows [][]string) {
	t.Helper()
	b, err := os.ReadFile(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph, Name string
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("invalid trace: %v", err)
	}
	for _, ev := range doc.TraceEvents {
		if ev.Ph == "X" {
			spans++
		}
		if n, ok := strings.CutPrefix(ev.Name, "iteration "); ok {
			i, _ := strconv.Atoi(n)
			iters = append(iters, i)
		}
	}
	f, err := os.Open(base + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err = csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("invalid CSV: %v", err)
	}
	return iters, spans, rows
}

// checkExport checks that base.json and base.csv hold exactly the snapshots in want.
func checkExport(t *testing.T, base string, hist sim.History, utilKeys []string) {
	t.Helper()
	want := make([]*sim.Snapshot, hist.Len())
	for i := range want {
		want[i] = hist.Snapshot(i)
	}
	iters, spans, rows := exported(t, base)
	wantSpans := 0
	for i, s := range want {
		wantSpans += len(s.Timeline.Spans)
		if i >= len(iters) || iters[i] != s.Step {
			t.Fatalf("trace iterations %v, want %d–%d", iters, want[0].Step, want[len(want)-1].Step)
		}
	}
	if len(iters) != len(want) || spans != wantSpans {
		t.Fatalf("trace has %d iterations and %d spans, want %d and %d", len(iters), spans, len(want), wantSpans)
	}
	head := rows[0]
	if strings.Join(head[:3], ",") != "step,time_s,iteration_ms" {
		t.Fatalf("CSV header %v", head)
	}
	for _, k := range utilKeys {
		if !strings.Contains(strings.Join(head, ","), "util_"+k) {
			t.Fatalf("CSV header %v lacks util_%s", head, k)
		}
	}
	if len(rows)-1 != len(want) {
		t.Fatalf("CSV has %d rows, want %d", len(rows)-1, len(want))
	}
	for i, s := range want {
		step, _ := strconv.Atoi(rows[i+1][0])
		ms, _ := strconv.ParseFloat(rows[i+1][2], 64)
		if step != s.Step || math.Abs(ms-s.IterTime.Milliseconds()) > 1e-5*s.IterTime.Milliseconds() {
			t.Fatalf("CSV row %d: step %d, %g ms; want step %d, %g ms", i+1, step, ms, s.Step, s.IterTime.Milliseconds())
		}
	}
}

// e exports every iteration the explorer keeps, as a trace and a CSV beside it, and
// says which and where; reading the history leaves the position where it was.
func TestExportWritesRange(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("n", "n", "n", "b", "b", "e")
	dir := d.m.opts.ExportDir
	base := filepath.Join(dir, "pimtui-neupims-steps1-4")
	if d.m.statusBad || !strings.Contains(d.m.status, "iterations 1–4 to "+base+".json and .csv") {
		t.Fatalf("status %q does not name the range and both files", d.m.status)
	}
	checkExport(t, base, d.m.eng.History(), d.m.eng.UtilKeys())
	if d.m.snap.Step != 2 {
		t.Fatalf("the export moved the explorer to step %d", d.m.snap.Step)
	}
	d.keys("n")
	if d.m.snap.Step != 3 {
		t.Fatalf("after the export, forward went to step %d, want the kept step 3", d.m.snap.Step)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("the export left %d files, want the trace and the CSV", len(ents))
	}
	for _, e := range ents {
		if info, err := e.Info(); err != nil || info.Mode().Perm() != 0o644 {
			t.Fatalf("%s: mode %v (%v), want 0644", e.Name(), info.Mode(), err)
		}
	}
}

// Once the history is full the export covers the last historyCap iterations.
func TestExportAfterHistoryFills(t *testing.T) {
	f, err := presets.Get("gpu-h100")
	if err != nil {
		t.Fatal(err)
	}
	f.Workload.Requests = 100000
	cfg, err := presets.Build(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	m.after = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	if err := m.startNow(); err != nil {
		t.Fatal(err)
	}
	for range historyCap + 9 {
		m.benchStep()
	}
	last := historyCap + 10
	_, cmd := m.Update(keyPress("e"))
	msg := findMsg[exportedMsg](t, cmd)
	if msg.err != nil {
		t.Fatal(msg.err)
	}
	base := filepath.Join(m.opts.ExportDir, fmt.Sprintf("pimtui-gpu-h100-steps%d-%d", last-historyCap+1, last))
	if msg.paths[0] != base+".json" {
		t.Fatalf("exported to %v, want %s.json", msg.paths, base)
	}
	checkExport(t, base, m.eng.History(), m.eng.UtilKeys())
}

// findMsg runs cmd (and any batch in it) and returns the first message of type T.
func findMsg[T any](t *testing.T, cmd tea.Cmd) T {
	t.Helper()
	var zero T
	if cmd == nil {
		t.Fatalf("no command, want a %T", zero)
	}
	switch msg := cmd().(type) {
	case T:
		return msg
	case tea.BatchMsg:
		for _, c := range msg {
			if c == nil {
				continue
			}
			if got, ok := tryMsg[T](c); ok {
				return got
			}
		}
	}
	t.Fatalf("no %T from the command", zero)
	return zero
}

func tryMsg[T any](c tea.Cmd) (T, bool) {
	switch msg := c().(type) {
	case T:
		return msg, true
	case tea.BatchMsg:
		for _, c := range msg {
			if c != nil {
				if got, ok := tryMsg[T](c); ok {
					return got, true
				}
			}
		}
	}
	var zero T
	return zero, false
}

// An export asked for while a step runs waits for it: the engine is never read while it
// steps, and the export includes the step that was running.
func TestExportWaitsForStepInFlight(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	step := d.m.request(false) // in flight: not run yet
	d.keys("e")
	if !strings.Contains(d.m.status, "after this step") {
		t.Fatalf("status %q", d.m.status)
	}
	if ents, _ := os.ReadDir(d.m.opts.ExportDir); len(ents) != 0 {
		t.Fatal("exported while a step was in flight")
	}
	d.send(step())
	base := filepath.Join(d.m.opts.ExportDir, "pimtui-neupims-steps1-2")
	if !strings.Contains(d.m.status, base+".json") {
		t.Fatalf("status %q after the step landed", d.m.status)
	}
	checkExport(t, base, d.m.eng.History(), d.m.eng.UtilKeys())
}

// A failed export reports itself and leaves earlier exports as they were.
func TestExportFailureKeepsEarlierFile(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("e")
	path := filepath.Join(d.m.opts.ExportDir, "pimtui-neupims-steps1-1.json")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d.m.opts.ExportDir = filepath.Join(d.m.opts.ExportDir, "missing")
	d.keys("e")
	if !d.m.statusBad || !strings.Contains(d.m.status, "export failed") {
		t.Fatalf("status %q", d.m.status)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a failed export changed the earlier file")
	}
}

// An export or a saved screen never replaces what is not a regular file: a symbolic
// link at the path is left as it was, with its target, and the status says why.
func TestExportLeavesLinks(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	dir := d.m.opts.ExportDir
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	for _, name := range []string{"pimtui-neupims-steps1-1.json", "pimtui-neupims-step1.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"e", "s"} {
		d.keys(k)
		if !d.m.statusBad || !strings.Contains(d.m.status, "is a symbolic link; pimtui writes only to a regular file or a new path") {
			t.Fatalf("%s: status %q", k, d.m.status)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("the target holds %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d files in the export directory, want the two links", len(ents))
	}
}

// s saves the screen as plain text: the frame as shown, without escape sequences.
func TestSaveScreen(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.keys("n")
	want := screenText(d.m.render())
	d.keys("s")
	path := filepath.Join(d.m.opts.ExportDir, "pimtui-neupims-step2.txt")
	if d.m.statusBad || !strings.Contains(d.m.status, path) {
		t.Fatalf("status %q does not name %s", d.m.status, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if got != want {
		t.Fatalf("saved text differs from the screen:\n%s", got)
	}
	if strings.Contains(got, "\x1b") || !strings.Contains(got, "pimtui neupims") || !strings.Contains(got, "step 2 ") {
		t.Fatalf("saved text has escapes or lacks the header:\n%s", got)
	}
	checkFits(t, "saved screen", strings.TrimSuffix(got, "\n"), 120, 40)
}

// In colour, s saves what the screen shows in glyphs, as `pimtui snapshot` writes it: a
// span drawn as a coloured blank on screen is its fill glyph in the file.
func TestSaveScreenInColourKeepsGlyphs(t *testing.T) {
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	opts.Color = true
	d := startDriver(t, cfg, opts, 120, 40)
	plain := newDriver(t, "neupims", 120, 40)
	d.keys("n")
	plain.keys("n")
	want := screenText(plain.m.render())
	if screenText(d.m.render()) == want {
		t.Fatal("the colour screen reads the same as plain text: the test shows nothing")
	}
	d.keys("s")
	b, err := os.ReadFile(filepath.Join(d.m.opts.ExportDir, "pimtui-neupims-step2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("saved text differs from the plain rendering:\n%s\nwant:\n%s", b, want)
	}
	if !d.m.c.Color || d.m.c.Styles.SB[1] == "" {
		t.Fatal("saving left the screen without colour")
	}
}

// With exports turned off (a served session), e and s say why and write nothing.
func TestNoExportWritesNothing(t *testing.T) {
	d := newDriver(t, "neupims", 120, 40)
	d.m.opts.NoExport = "exports are off here"
	d.keys("n")
	for _, k := range []string{"e", "s"} {
		d.keys(k)
		if d.m.status != "exports are off here" || !d.m.statusBad {
			t.Fatalf("%s: status %q (bad %v)", k, d.m.status, d.m.statusBad)
		}
	}
	if files, _ := os.ReadDir(d.m.opts.ExportDir); len(files) != 0 {
		t.Fatalf("files written: %v", files)
	}
}
