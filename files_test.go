package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pimtui/pimtui/presets"
)

// --trace to a symbolic link, a FIFO or a directory exits 2 with a message that says what
// the path is, before the run, and leaves it as it was: the link and its target, the FIFO,
// the directory. The host key's path follows the same rule.
func TestTraceOnlyToRegularFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "traces")
	os.Mkdir(sub, 0o755)
	run := []string{"run", "--requests", "20", "--batch", "8", "--trace"}
	checkBadInput(t, []badInput{
		{append(run, link), "--trace: " + link + " is a symbolic link; pimtui writes only to a regular file or a new path"},
		{append(run, fifo), "--trace: " + fifo + " is a FIFO; pimtui writes only to a regular file or a new path"},
		{append(run, sub), "--trace: " + sub + " is a directory; give a file name inside it or elsewhere"},
		{append(run, filepath.Join(dir, "missing", "t.json")), "no such file or directory"},
		{[]string{"serve", "--open", "--host-key", link}, "--host-key: " + link + " is a symbolic link"},
		{[]string{"serve", "--open", "--host-key", fifo}, "--host-key: " + fifo + " is a FIFO"},
	})
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target holds %q", b)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	if ents, _ := os.ReadDir(sub); len(ents) != 0 {
		t.Errorf("the directory now holds %d files", len(ents))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("%d files in the directory, want the 4 made here: nothing left behind", len(ents))
	}
	// An existing regular file is replaced by the trace.
	old := filepath.Join(dir, "old.json")
	os.WriteFile(old, []byte("old"), 0o600)
	if _, errs, code := cli(t, append(run, old)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(old); !json.Valid(b) {
		t.Error("the regular file does not hold the trace")
	}
}

// A request trace in Unix time runs from its first request, and stderr says so; one that
// spans more than the simulated clock holds is refused.
func TestEpochRequestTrace(t *testing.T) {
	dir := t.TempDir()
	epoch := filepath.Join(dir, "epoch.csv")
	os.WriteFile(epoch, []byte("arrival_s,input_len,output_len\n1700000000,64,8\n1700000000.5,64,8\n1700000002,64,8\n"), 0o644)
	out, errs, code := cli(t, "run", "--request-trace", epoch, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "epoch.csv: the arrival times start at 1700000000 s, later than the simulated clock holds (Unix time?); every arrival is taken relative to the first request's") {
		t.Errorf("stderr does not say the arrivals moved: %q", errs)
	}
	var r struct {
		SimTimeS          float64 `json:"sim_time_s"`
		RequestsCompleted int     `json:"requests_completed"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.RequestsCompleted != 3 || r.SimTimeS < 2 || r.SimTimeS > 10 {
		t.Errorf("%d requests completed in %g s simulated; want 3, the last arriving at 2 s", r.RequestsCompleted, r.SimTimeS)
	}
	long := filepath.Join(dir, "long.csv")
	os.WriteFile(long, []byte("0,64,8\n1700000000,64,8\n"), 0o644)
	checkBadInput(t, []badInput{{[]string{"run", "--request-trace", long}, "long.csv:line 2: arrival_s 1.7e+09 is 1.7e+09 s after the first request's 0; the simulated clock holds"}})
}

// A preset file larger than presets.MaxFileBytes is refused before it is decoded, in
// milliseconds however many keys it has; so is one that is not a regular file.
func TestOversizePresetRefused(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	var b strings.Builder
	b.WriteString("name = \"x\"\nsystem = \"neupims\"\n[workload]\n")
	for i := 0; b.Len() < 4<<20; i++ {
		b.WriteString("k")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(" = 1\n")
	}
	os.WriteFile(big, []byte(b.String()), 0o644)
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", big}, {"run", "--config", big}, {"sweep", "--config", big, "--vary", "workload.batch=8,16"}} {
		start := time.Now()
		_, errs, code := cli(t, args...)
		if d := time.Since(start); code != 2 || !strings.Contains(errs, "big.toml: ") || !strings.Contains(errs, "bytes: a preset file may be at most 64 KiB") || d > 200*time.Millisecond {
			t.Errorf("%v: exit %d after %v, stderr %q", args, code, d, errs)
		}
	}
	checkBadInput(t, []badInput{{[]string{"validate", fifo}, "fifo.toml: not a regular file (a FIFO); give a preset file"}})
	if _, err := presets.Parse("x.toml", []byte(b.String())); err == nil || !strings.Contains(err.Error(), "at most 64 KiB") {
		t.Errorf("Parse of an oversize document: %v", err)
	}
}
