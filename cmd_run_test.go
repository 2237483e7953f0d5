package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

// Each CSV row ends with the iteration's bubble share and its split by cause, which sums
// to it.
func TestRunCSVBubbleShare(t *testing.T) {
	out, errs, code := cli(t, "run", "--preset", "npu-pim", "--requests", "20", "--batch", "8", "--format", "csv", "--input-len", "32", "--output-len", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := rows[0]
	at := slices.Index(head, "bubble_share")
	if at < 0 || len(head)-at != int(sim.NumCauses) || head[at+1] != "bubble_share_dependency" || slices.Contains(head, "bubble_share_no_work") {
		t.Fatalf("header %v", head)
	}
	for _, row := range rows[1:] {
		share, err := strconv.ParseFloat(row[at], 64)
		if err != nil || share <= 0 || share > 1 {
			t.Fatalf("row %v: share %q", row, row[at])
		}
		sum := 0.0
		for _, v := range row[at+1:] {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
		if math.Abs(sum-share) > 1e-5 {
			t.Fatalf("row %v: causes sum to %v, share %v", row, sum, share)
		}
	}
}

// The table lists each group's idle time with its causes, largest first, and the causes
// add up to the idle time.
func TestRunTableIdleByCause(t *testing.T) {
	out, errs, code := cli(t, "run", "--preset", "npu-pim", "--requests", "40", "--batch", "16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	line := regexp.MustCompile(`(?m)^idle pim +([0-9.]+)% \((.*)\)$`).FindStringSubmatch(out)
	if line == nil {
		t.Fatalf("no idle line with causes for pim:\n%s", out)
	}
	total, _ := strconv.ParseFloat(line[1], 64)
	sum, prev := 0.0, math.Inf(1)
	for _, part := range strings.Split(line[2], ", ") {
		name, v, _ := strings.Cut(part, " ")
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || f > prev {
			t.Fatalf("cause %q in %q: not a percentage, or out of order", part, line[0])
		}
		known := false
		for c := range sim.NumCauses {
			known = known || c.String() == name
		}
		if !known {
			t.Fatalf("unknown cause %q in %q", name, line[0])
		}
		sum, prev = sum+f, f
	}
	// Each part is rounded to 0.1% and causes under 0.05% are left out.
	if math.Abs(sum-total) > 0.3 {
		t.Fatalf("causes sum to %.1f%%, idle %.1f%%: %q", sum, total, line[0])
	}
}

// A batch is a cap in every family: runs whose batch the KV memory cannot hold run, say
// on stderr where the memory capped it, and report the split they ran at.
func TestRunBatchIsACap(t *testing.T) {
	cases := []struct {
		args   []string
		note   string // the stderr line; "" when the cap is reached or no memory limit was met
		tp, pp int
	}{
		{[]string{"--preset", "lolpim", "--model", "qwen1.5-72b"}, "batch capped by KV memory at 22 of 120\n", 8, 16},
		{[]string{"--preset", "helios", "--model", "opt-66b"}, "batch capped by KV memory at 42 of 64\n", 8, 1},
		{[]string{"--preset", "neupims", "--model", "gpt3-30b"}, "", 4, 2}, // Table 3's split
		{[]string{"--preset", "l3", "--set", "l3.host.capacity_gib=512", "--set", "l3.host.dimms_per_channel=1"}, "batch capped by KV memory at ", 8, 1},
		{[]string{"--preset", "neupims", "--model", "gpt3-13b", "--batch", "1024", "--requests", "1100", "--steps", "3"}, "batch capped by KV memory at ", 4, 1},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, errs, code := cli(t, append([]string{"run", "--format", "json"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if c.note == "" && errs != "" || !strings.HasPrefix(errs, c.note) {
				t.Errorf("stderr %q, want %q", errs, c.note)
			}
			var r sim.Result
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if r.TP != c.tp || r.PP != c.pp || r.PeakBatch < 1 || r.PeakBatch > r.MaxBatch {
				t.Errorf("tp %d, pp %d, peak batch %d of %d", r.TP, r.PP, r.PeakBatch, r.MaxBatch)
			}
			if c.note != "" && (r.PeakBatch >= r.MaxBatch || r.QueuePeak == 0) {
				t.Errorf("capped, yet peak batch %d of %d and queue peak %d", r.PeakBatch, r.MaxBatch, r.QueuePeak)
			}
		})
	}
}
