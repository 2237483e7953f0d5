package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/presets"
)

// cli runs the command line in-process and returns stdout, stderr and the exit code.
func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestVersion(t *testing.T) {
	out, _, code := cli(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "pimtui ") {
		t.Fatalf("code %d, out %q", code, out)
	}
}

func TestPresetsTable(t *testing.T) {
	out, _, code := cli(t, "presets")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("no header line: %q", lines[0])
	}
	for _, want := range []string{"neupims", "npu-pim", "npu-only", "gpu-a100", "gpu-h100"} {
		found := false
		for _, l := range lines[1:] {
			if strings.Fields(l)[0] == want && len(strings.Fields(l)) > 2 {
				found = true
			}
		}
		if !found {
			t.Errorf("preset %s missing from:\n%s", want, out)
		}
	}
}

func TestPresetsShowRoundTrips(t *testing.T) {
	out, _, code := cli(t, "presets", "show", "neupims")
	if code != 0 || !strings.Contains(out, `name = "neupims"`) {
		t.Fatalf("exit %d: %s", code, out)
	}
	p := filepath.Join(t.TempDir(), "mine.toml")
	os.WriteFile(p, []byte(strings.Replace(out, "channels = 32 ", "channels = 64 ", 1)), 0o644)
	vout, verr, code := cli(t, "validate", p)
	if code != 0 || !strings.Contains(vout, "ok") {
		t.Fatalf("validate: exit %d %s %s", code, vout, verr)
	}
}

// A baseline's `presets show` is resolved, each value marked with the file that sets it,
// and is a preset file that runs as the baseline does; --source prints the file as written.
func TestPresetsShowResolvesABaseline(t *testing.T) {
	out, _, code := cli(t, "presets", "show", "npu-pim")
	for _, want := range []string{"npu-pim.toml extends neupims.toml", "dual_row_buffer = false  # npu-pim.toml", "tile_cycles = 184  # neupims.toml", "# pim.dual_row_buffer"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d; presets show npu-pim lacks %q", code, want)
		}
	}
	p := filepath.Join(t.TempDir(), "shown.toml")
	os.WriteFile(p, []byte(out), 0o644)
	shown, _, code1 := cli(t, "run", "--config", p, "--format", "json", "--steps", "3")
	direct, _, code2 := cli(t, "run", "--preset", "npu-pim", "--format", "json", "--steps", "3")
	if code1 != 0 || code2 != 0 || shown != direct {
		t.Errorf("the shown file runs differently: exit %d, %d\n%s\n%s", code1, code2, shown, direct)
	}
	src, _, code := cli(t, "presets", "show", "--source", "npu-pim")
	src, keys, _ := strings.Cut(src, "# Keys of this preset")
	if code != 0 || !strings.Contains(src, "extends = \"neupims\"") || strings.Contains(src, "tile_cycles") || !strings.Contains(keys, "# pim.tile_cycles") {
		t.Errorf("presets show --source npu-pim: exit %d\n%s", code, src)
	}
}

func TestRunJSONContract(t *testing.T) {
	out, errs, code := cli(t, "run", "--preset", "neupims", "--requests", "64", "--batch", "32", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"preset", "system", "model", "dataset", "seed", "max_batch", "requests", "iterations", "sim_time_s",
		"requests_completed", "tokens_generated", "throughput_tok_s", "mean_batch", "iteration_ms", "tbt_ms", "ttft_ms",
		"utilization", "bubble_fraction", "bubble_by_cause", "kv", "load_imbalance", "flop_utilization", "energy_j"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	u := m["utilization"].(map[string]any)
	for _, k := range []string{"npu", "pim", "bandwidth"} {
		if _, ok := u[k]; !ok {
			t.Errorf("utilization lacks %q: %v", k, u)
		}
	}
	if m["requests_completed"].(float64) != 64 {
		t.Errorf("completed %v of 64", m["requests_completed"])
	}
}

func TestRunDeterministic(t *testing.T) {
	a, _, _ := cli(t, "run", "--requests", "40", "--batch", "16", "--format", "json", "--seed", "7")
	b, _, _ := cli(t, "run", "--requests", "40", "--batch", "16", "--format", "json", "--seed", "7")
	if a != b {
		t.Fatal("two runs with the same seed differ")
	}
	c, _, _ := cli(t, "run", "--requests", "40", "--batch", "16", "--format", "json", "--seed", "8")
	if a == c {
		t.Fatal("a different seed gave the same run")
	}
}

// Every preset's default run prints the same JSON twice and whatever the number of
// cores.
func TestEveryPresetDeterministic(t *testing.T) {
	if quick() {
		t.Skip("three default runs of every preset")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, p := range presets.Names() {
		t.Run(p, func(t *testing.T) {
			var outs [3]string
			for i, procs := range []int{1, 1, 2} {
				runtime.GOMAXPROCS(procs)
				out, errs, code := cli(t, "run", "--preset", p, "--format", "json")
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errs)
				}
				outs[i] = out
			}
			if outs[0] != outs[1] {
				t.Error("two runs differ")
			}
			if outs[0] != outs[2] {
				t.Error("one core and two cores differ")
			}
		})
	}
}

func TestRunCSVOneRowPerIteration(t *testing.T) {
	out, errs, code := cli(t, "run", "--preset", "gpu-h100", "--requests", "20", "--batch", "8", "--format", "csv", "--input-len", "32", "--output-len", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 20 requests of 10 tokens at batch 8: 3 waves of 10 iterations (prefill gives token 1).
	if len(rows)-1 != 30 || rows[0][0] != "step" {
		t.Fatalf("%d data rows, header %v", len(rows)-1, rows[0])
	}
}

func TestRunTraceIsValidJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.json")
	_, errs, code := cli(t, "run", "--requests", "20", "--batch", "8", "--trace", p, "--trace-steps", "1-3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	spans := 0
	for _, ev := range tr.TraceEvents {
		for _, k := range []string{"ph", "name", "pid", "tid"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("event lacks %s: %v", k, ev)
			}
		}
		if ev["ph"] == "X" {
			spans++
			if ev["dur"].(float64) < 0 {
				t.Fatalf("negative duration: %v", ev)
			}
		}
	}
	if spans == 0 {
		t.Fatal("no spans in the trace")
	}
}

// badInput is a command line that must fail with exit code 2 and a message containing want.
type badInput struct {
	args []string
	want string
}

// checkBadInput runs each case: exit code 2, the message, and no stack trace.
func checkBadInput(t *testing.T, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, errs, code := cli(t, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr %q does not say %q", errs, c.want)
			}
			if strings.Contains(errs, "goroutine") || strings.Contains(errs, "panic") {
				t.Errorf("stack trace in stderr: %s", errs)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("name = \"x\"\n[model\n"), 0o644)
	badTrace := filepath.Join(dir, "bad.csv")
	os.WriteFile(badTrace, []byte("arrival_s,input_len,output_len\n0,10,5\n0.5,ten,5\n"), 0o644)
	cases := []badInput{
		{[]string{"run", "--preset", "neupim"}, `unknown preset "neupim"; did you mean "neupims"`},
		{[]string{"run", "--model", "gpt3-7"}, `unknown model "gpt3-7"; did you mean "gpt3-7b"`},
		{[]string{"run", "--dataset", "sharegp"}, `unknown dataset "sharegp"; did you mean "sharegpt"`},
		{[]string{"run", "--preset", "gpu-h100", "--set", "gpu.name=h100"}, `unknown GPU "h100"; did you mean`},
		{[]string{"run", "--set", "pim.channel=3"}, `pim.channel: unknown key`},
		{[]string{"run", "--set", "memory.channels=x"}, `"x" is not a valid integer; want 1 to 4096`},
		{[]string{"run", "--set", "memory.channels=0"}, `0 is out of range; want 1 to 4096`},
		// A one-lane vector unit's reduction trees never finish reducing.
		{[]string{"run", "--preset", "npu-only", "--set", "npu.vector_width=1"}, `npu.vector_width: 1 is out of range; want 2 to 65536`},
		{[]string{"run", "--batch", "0"}, `--batch 0: 0 is out of range`},
		{[]string{"run", "--batch", "-5"}, `--batch -5: -5 is out of range; want 1 to`},
		{[]string{"run", "--arrival", "poisson:abc"}, `--arrival poisson:abc: "abc" is not a valid number`},
		{[]string{"run", "--arrival", "sometimes"}, `want closed or poisson:RATE`},
		{[]string{"run", "--format", "xml"}, `want table, json or csv`},
		{[]string{"run", "--bogus"}, `unknown flag: --bogus`},
		{[]string{"validate", bad}, "bad.toml:2:"},
		{[]string{"run", "--config", bad}, "bad.toml:2:"},
		{[]string{"run", "--request-trace", badTrace}, "bad.csv:line 3:"},
		{[]string{"run", "--input-len", "2000000", "--output-len", "10"}, "neupims: request 1 (2000000 input + 10 output tokens) can never run: its KV cache needs 8000832 blocks but an empty channel holds 29597 after GPT3-7B's weights at tp 4, pp 1; shorten the sequences or raise model.tp or model.pp"},
		{[]string{"run", "--model", "gpt3-175b", "--set", "model.tp=1"}, "raise tp or pp"},
		{[]string{"run", "--set", "npu.sram_kib=23"}, "set npu.sram_kib to at least 192"},
		{[]string{"run", "--preset", "l3", "--request-trace", badTrace}, "bad.csv:line 3:"},
		{[]string{"run", "--preset", "l3", "--set", "l3.host.capacity_gib=64"}, "raise l3.host.capacity_gib or shorten the sequences"},
		{[]string{"run", "--preset", "l3", "--model", "gpt-89b", "--set", "model.tp=4", "--set", "l3.host.dimms_per_channel=16", "--set", "l3.host.ranks_per_dimm=8"}, "use at most 48 ranks per channel"},
		{[]string{"run", "--preset", "gpu-dgx", "--model", "opt-66b", "--set", "model.tp=2", "--dataset", "longbench-l3"}, "gpu-dgx: request 5 (25797 input + 38 output tokens) can never run: out of memory: each of the 4 replicas (2 GPUs) holds the KV of at most 16944 tokens of OPT-66B"},
		{[]string{"run", "--preset", "aimx", "--set", "lolpim.static_max_ctx=8192"}, "request 1 (15629 input + 256 output tokens) can never run: static memory reserves lolpim.static_max_ctx=8192 tokens per request; raise it to at least 15885"},
		{[]string{"presets", "show", "neupim"}, `did you mean "neupims"`},
		{[]string{"nosuchcommand"}, `unknown command "nosuchcommand"`},
		{[]string{}, "the explorer needs a terminal"},
	}
	checkBadInput(t, cases)
}

func TestFailedTraceLeavesExistingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "keep.json")
	os.WriteFile(p, []byte("precious"), 0o644)
	_, _, code := cli(t, "run", "--input-len", "2000000", "--output-len", "1", "--trace", p)
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	if b, _ := os.ReadFile(p); string(b) != "precious" {
		t.Fatalf("existing file changed to %q", b)
	}
}
