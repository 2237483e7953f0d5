package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

// A sweep's rows are the separate runs they stand for: each row's result equals what
// `pimtui run` prints for the same preset and overrides.
func TestSweepRowsEqualSeparateRuns(t *testing.T) {
	out, errs, code := cli(t, "sweep", "--preset", "neupims,gpu-a100", "--vary", "batch=8,16", "--vary", "dataset=alpaca,sharegpt",
		"--requests", "24", "--metric", "iteration_ms.p99", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Metric string   `json:"metric"`
		Vary   []string `json:"vary"`
		Rows   []struct {
			Preset string            `json:"preset"`
			Values map[string]string `json:"values"`
			Value  *float64          `json:"value"`
			Result *sim.Result       `json:"result"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.Metric != "iteration_ms.p99" || strings.Join(got.Vary, ",") != "batch,dataset" || len(got.Rows) != 8 {
		t.Fatalf("metric %q, vary %v, %d rows; want 2 presets × 2 × 2", got.Metric, got.Vary, len(got.Rows))
	}
	i := 0
	for _, p := range []string{"neupims", "gpu-a100"} {
		for _, b := range []string{"8", "16"} {
			for _, d := range []string{"alpaca", "sharegpt"} {
				r := got.Rows[i]
				i++
				if r.Preset != p || r.Values["batch"] != b || r.Values["dataset"] != d {
					t.Fatalf("row %d is %s %v, want %s batch=%s dataset=%s (presets, then the last key fastest)", i-1, r.Preset, r.Values, p, b, d)
				}
				sep, errs, code := cli(t, "run", "--preset", p, "--batch", b, "--dataset", d, "--requests", "24", "--format", "json")
				if code != 0 {
					t.Fatalf("run: exit %d: %s", code, errs)
				}
				want, _ := json.Marshal(mustResult(t, sep))
				have, _ := json.Marshal(r.Result)
				if string(want) != string(have) {
					t.Errorf("%s batch %s %s: sweep row\n%s\ndiffers from the separate run\n%s", p, b, d, have, want)
				}
				if r.Value == nil || *r.Value != r.Result.IterationMS.P99 {
					t.Errorf("%s batch %s %s: value %v, want iteration_ms.p99 %v", p, b, d, r.Value, r.Result.IterationMS.P99)
				}
			}
		}
	}
}

func mustResult(t *testing.T, s string) sim.Result {
	t.Helper()
	var r sim.Result
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("not a result: %v\n%s", err, s)
	}
	return r
}

// Override flags that set two keys (--arrival) and dotted preset keys both vary; the
// CSV has one row per point and the metric's column.
func TestSweepCSVKeysAndFlags(t *testing.T) {
	out, errs, code := cli(t, "sweep", "--preset", "neupims", "--vary", "arrival=closed,poisson:50", "--vary", "pim.dual_row_buffer=true,false",
		"--requests", "24", "--batch", "16", "--metric", "utilization.pim", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || strings.Join(rows[0], ",") != "preset,arrival,pim.dual_row_buffer,utilization.pim,error" {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	if rows[1][3] == rows[2][3] {
		t.Errorf("dual row buffers on and off give the same PIM utilisation %s", rows[1][3])
	}
	if rows[1][3] == rows[3][3] {
		t.Errorf("closed and Poisson arrival give the same PIM utilisation %s", rows[1][3])
	}
}

func TestSweepTableAndPlot(t *testing.T) {
	out, errs, code := cli(t, "sweep", "--preset", "neupims,npu-only", "--vary", "batch=8,16,32", "--requests", "32", "--plot")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"PRESET", "batch", "throughput_tok_s", "throughput_tok_s against batch", "batch →", "● neupims", "■ npu-only"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escapes in output that is not a terminal")
	}
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line of %d cells in an 80-column chart: %q", n, l)
		}
	}
}

// A point the system cannot hold (a batch whose KV cache does not fit) is a row with
// its reason, not a failed sweep.
func TestSweepPointThatCannotRun(t *testing.T) {
	out, errs, code := cli(t, "sweep", "--preset", "gpu-a100", "--vary", "input-len=64,2000000", "--output-len", "4", "--requests", "4", "--batch", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "- (") || strings.Contains(lines[1], "- (") {
		t.Fatalf("want one good row and one row with its reason:\n%s", out)
	}
}

// A lane group's idle time from one cause can be swept like any other field, and it is the
// run's own bubble_by_cause figure.
func TestSweepCauseMetric(t *testing.T) {
	out, errs, code := cli(t, "sweep", "--preset", "npu-pim", "--vary", "batch=16", "--requests", "24",
		"--metric", "bubble_by_cause.pim.dependency", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	js, errs, code := cli(t, "run", "--preset", "npu-pim", "--batch", "16", "--requests", "24", "--format", "json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	var r struct {
		BubbleByCause map[string]map[string]float64 `json:"bubble_by_cause"`
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	got, err := strconv.ParseFloat(rows[1][2], 64)
	if want := r.BubbleByCause["pim"]["dependency"]; err != nil || want <= 0 || math.Abs(got-want) > 1e-5*want {
		t.Fatalf("sweep %s, run %g", rows[1][2], want)
	}
}

func TestSweepBadInput(t *testing.T) {
	cases := []badInput{
		{[]string{"sweep", "--preset", "neupims"}, "sweep needs at least one --vary"},
		{[]string{"sweep", "--vary", "bach=1,2"}, `--vary bach: unknown key; did you mean "batch"?`},
		{[]string{"sweep", "--vary", "pim.dual_row_bufer=true"}, `did you mean "pim.dual_row_buffer"?`},
		{[]string{"sweep", "--vary", "batch"}, "want KEY=V1,V2"},
		{[]string{"sweep", "--vary", "batch=8,,16"}, "an empty value"},
		{[]string{"sweep", "--vary", "batch=8", "--vary", "batch=16"}, "given twice"},
		{[]string{"sweep", "--vary", "batch=0,8"}, "workload.batch: 0 is out of range"},
		{[]string{"sweep", "--vary", "arrival=sometimes"}, "want closed or poisson:RATE"},
		{[]string{"sweep", "--vary", "model=gpt3-7,gpt3-13b"}, `did you mean "gpt3-7b"`},
		{[]string{"sweep", "--preset", "neupims,neupim", "--vary", "batch=8"}, `unknown preset "neupim"; did you mean "neupims"`},
		{[]string{"sweep", "--preset", ",", "--vary", "batch=8"}, "name at least one preset"},
		{[]string{"sweep", "--vary", "batch=8", "--metric", "throughput"}, `--metric "throughput": not a numeric field of the result; did you mean "throughput_tok_s"?`},
		{[]string{"sweep", "--vary", "batch=8", "--metric", "utilization.gpu"}, `did you mean "utilization.npu"?`},
		{[]string{"sweep", "--vary", "batch=8", "--metric", "bubble_by_cause.pim.dependancy"}, `--metric "bubble_by_cause.pim.dependancy": not a numeric field`},
		{[]string{"sweep", "--vary", "batch=8", "--requests", "8", "--metric", "bubble_by_cause.gpu.tail"}, `--metric "bubble_by_cause.gpu.tail": no run has it; these did: bubble_by_cause.npu.barrier,`},
		{[]string{"sweep", "--vary", "batch=8", "--format", "xml"}, "want table, json or csv"},
		{[]string{"sweep", "--vary", "batch=8", "--format", "json", "--plot"}, "--plot draws a chart after the table"},
		{[]string{"sweep", "--vary", "batch=8", "--set", "pim.channel=3"}, "pim.channel: unknown key"},
	}
	checkBadInput(t, cases)
}

// `presets show` lists, after the file, every key of the preset's sections with its
// type, range and meaning, as comments (the output stays a valid preset file).
func TestPresetsShowListsKeys(t *testing.T) {
	out, _, code := cli(t, "presets", "show", "neupims")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"# workload.batch", "1 to 65536", "most requests decoding at once", "# pim.dual_row_buffer", "true or false"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q", want)
		}
	}
	if strings.Contains(out, "# l3.") || strings.Contains(out, "# gpu.name ") {
		t.Error("show lists keys of sections neupims does not have")
	}
}
