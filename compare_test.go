package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
)

func TestParseSide(t *testing.T) {
	cases := []struct {
		in   string
		name string
		sets []string
		err  string
	}{
		{"neupims", "neupims", nil, ""},
		{"  npu-only ", "npu-only", nil, ""},
		{"neupims+pim.dual_row_buffer=false", "neupims", []string{"pim.dual_row_buffer=false"}, ""},
		{"neupims+pim.dual_row_buffer=false+scheduler.sub_batch_interleaving=false", "neupims",
			[]string{"pim.dual_row_buffer=false", "scheduler.sub_batch_interleaving=false"}, ""},
		// a value with "+" in it keeps it
		{"neupims+workload.rate_per_s=1e+06+pim.enabled=true", "neupims", []string{"workload.rate_per_s=1e+06", "pim.enabled=true"}, ""},
		{"neupims+npu.clock_ghz=1e+0+0", "neupims", []string{"npu.clock_ghz=1e+0+0"}, ""},
		{"", "", nil, "an empty side"},
		{"   ", "", nil, "an empty side"},
		{"+pim.enabled=false", "", nil, `side "+pim.enabled=false" has no preset before its settings`},
		{"pim.enabled=false", "", nil, `side "pim.enabled=false" starts with a setting; want NAME+key=value, e.g. neupims+pim.enabled=false`},
		{"neupims+dual", "", nil, `side "neupims+dual": "dual" is not a setting`},
		{"neupims+", "", nil, `side "neupims+": "" is not a setting`},
	}
	for _, c := range cases {
		s, err := parseSide(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseSide(%q): error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseSide(%q): %v", c.in, err)
			continue
		}
		if s.name != c.name || !slices.Equal(s.sets, c.sets) {
			t.Errorf("parseSide(%q) = %q %q, want %q %q", c.in, s.name, s.sets, c.name, c.sets)
		}
	}
}

func FuzzParseSide(f *testing.F) {
	for _, s := range []string{"neupims", "neupims+pim.dual_row_buffer=false", "a+b=1e+06+c=2", "+", "=+=", "x+y", "0\t+="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := parseSide(spec)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if s.name == "" || strings.Contains(s.name, "=") {
			t.Fatalf("side %q parsed to preset %q", spec, s.name)
		}
		// the name is the part before the first +, trimmed as the parser trims it (any
		// white space), and the settings put back together are the rest as given
		head, rest, _ := strings.Cut(s.spec, "+")
		if s.name != strings.TrimSpace(head) || strings.Join(s.sets, "+") != rest {
			t.Fatalf("side %q parsed to %q %q", spec, s.name, s.sets)
		}
		for _, kv := range s.sets {
			if !strings.Contains(kv, "=") {
				t.Fatalf("setting %q of %q has no =", kv, spec)
			}
		}
	})
}

// resolveFor resolves sides as `run` would with the given flags.
func resolveFor(t *testing.T, flags []string, specs ...string) ([]sideResult, error) {
	t.Helper()
	var o options
	c := &cobra.Command{}
	o.register(c)
	if err := c.ParseFlags(flags); err != nil {
		t.Fatal(err)
	}
	sides, err := o.resolveSides(c, specs, presets.Get)
	out := make([]sideResult, len(sides))
	for i, s := range sides {
		w := s.Config.Workload
		out[i] = sideResult{s.Name, s.Config.Model.Name, w.MaxBatch, w.Seed, w.Requests, w.Prefill, w.Rate, w.Dataset.Name}
	}
	return out, err
}

type sideResult struct {
	name, model string
	batch       int
	seed        uint64
	requests    int
	prefill     string
	rate        float64
	dataset     string
}

// Every side serves side A's request stream after the command line's overrides, and
// keeps its own model and batch; a side's own settings come after the flags.
func TestResolveSidesSharesAStream(t *testing.T) {
	got, err := resolveFor(t, []string{"--seed", "9", "--requests", "30"},
		"neupims+workload.rate_per_s=1e+01+workload.dataset=alpaca", "gpu-h100+workload.batch=8", "hermes")
	if err != nil {
		t.Fatal(err)
	}
	want := []sideResult{
		{"neupims+workload.rate_per_s=1e+01+workload.dataset=alpaca", "gpt3-7b", 256, 9, 30, "skip", 10, "alpaca"},
		{"gpu-h100+workload.batch=8", "llama2-7b", 8, 9, 30, "skip", 10, "alpaca"},
		{"hermes", "llama2-70b", 1, 9, 30, "skip", 10, "alpaca"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sides\n%+v\nwant\n%+v", got, want)
	}
	// The flags apply to every side, the side's own settings after them.
	got, err = resolveFor(t, []string{"--batch", "64"}, "npu-only+workload.batch=16", "neupims")
	if err != nil || got[0].batch != 16 || got[1].batch != 64 {
		t.Fatalf("batches %+v, %v", got, err)
	}
}

// jsonOf runs the command line and decodes its JSON output.
func jsonOf(t *testing.T, args ...string) any {
	t.Helper()
	out, errs, code := cli(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: not JSON: %v", args, err)
	}
	return v
}

// A compare run's sides are the separate runs of each side on side A's request stream:
// the JSON results are the same field for field, and the table's ratios and the CSV's
// rows are computed from them.
func TestRunCompareMatchesSeparateRuns(t *testing.T) {
	common := []string{"--requests", "48", "--batch", "16"}
	cases := []struct {
		sides    []string
		separate [][]string // the run flags that give each side on its own
	}{
		{[]string{"neupims", "npu-only"}, [][]string{{"--preset", "neupims"}, {"--preset", "npu-only"}}},
		{[]string{"neupims", "neupims+pim.dual_row_buffer=false", "neupims+scheduler.sub_batch_interleaving=false+pim.dual_row_buffer=false"},
			[][]string{{"--preset", "neupims"}, {"--preset", "neupims", "--set", "pim.dual_row_buffer=false"},
				{"--preset", "neupims", "--set", "scheduler.sub_batch_interleaving=false", "--set", "pim.dual_row_buffer=false"}}},
		// gpu-h100 runs its prompts; beside neupims it takes neupims' stream, which skips them
		{[]string{"neupims", "gpu-h100+workload.batch=8"}, [][]string{{"--preset", "neupims"}, {"--preset", "gpu-h100", "--prefill", "skip", "--batch", "8"}}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.sides, ","), func(t *testing.T) {
			list := strings.Join(c.sides, ",")
			cmp := jsonOf(t, append([]string{"run", "--compare", list, "--format", "json"}, common...)...).(map[string]any)
			sides := cmp["sides"].([]any)
			if len(sides) != len(c.sides) {
				t.Fatalf("%d sides, want %d", len(sides), len(c.sides))
			}
			var thr []float64
			for i, s := range sides {
				got := s.(map[string]any)
				if got["side"] != c.sides[i] {
					t.Errorf("side %d is named %v, want %q", i, got["side"], c.sides[i])
				}
				delete(got, "side")
				args := append(append([]string{"run", "--format", "json"}, common...), c.separate[i]...)
				want := jsonOf(t, args...)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("side %s differs from %v:\n%v\n%v", c.sides[i], c.separate[i], got, want)
				}
				thr = append(thr, want.(map[string]any)["throughput_tok_s"].(float64))
			}

			out, errs, code := cli(t, append([]string{"run", "--compare", list}, common...)...)
			if code != 0 {
				t.Fatalf("table: exit %d: %s", code, errs)
			}
			var row []string
			for l := range strings.Lines(out) {
				if f := strings.Fields(l); len(f) > 2 && f[0] == "throughput" {
					row = f[2:]
				}
			}
			if len(row) != 2*len(c.sides)-1 {
				t.Fatalf("throughput row %q in:\n%s", row, out)
			}
			for i, v := range thr {
				if row[i] != fmt.Sprintf("%.1f", v) {
					t.Errorf("table throughput of side %d is %s, the separate run %.1f", i, row[i], v)
				}
				if i > 0 && row[len(thr)+i-1] != fmt.Sprintf("%.3f×", v/thr[0]) {
					t.Errorf("table ratio %s, separate runs give %.3f×", row[len(thr)+i-1], v/thr[0])
				}
			}

			out, errs, code = cli(t, append([]string{"run", "--compare", list, "--format", "csv"}, common...)...)
			if code != 0 {
				t.Fatalf("csv: exit %d: %s", code, errs)
			}
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1+len(c.sides) || recs[0][0] != "side" {
				t.Fatalf("csv has %d rows, header %v", len(recs), recs[0])
			}
			col := slices.Index(recs[0], "throughput_tok_s")
			for i, v := range thr {
				got, _ := strconv.ParseFloat(recs[1+i][col], 64)
				if recs[1+i][0] != c.sides[i] || got != mustFloat(ff(v)) {
					t.Errorf("csv row %d: %s throughput %s, separate run %s", i, recs[1+i][0], recs[1+i][col], ff(v))
				}
			}
		})
	}
}

func mustFloat(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// The sides run on every core, and the output is the same byte for byte on one.
func TestRunCompareSameOnOneOrTwoCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	args := []string{"run", "--compare", "neupims,npu-only,npu-pim", "--requests", "40", "--batch", "16", "--format", "json"}
	var outs []string
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		out, errs, code := cli(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Fatal("one core and two cores print different results")
	}
}

// The table says whose requests every side serves, and when the models differ.
func TestRunCompareTableHeader(t *testing.T) {
	out, _, code := cli(t, "run", "--compare", "neupims,gpu-h100", "--requests", "24", "--batch", "8", "--seed", "3")
	if code != 0 || !strings.Contains(out, "every side serves side A's requests: ShareGPT · 24 requests · closed loop · seed 3 · prefill skip") ||
		!strings.Contains(out, "the models differ: A gpt3-7b · B llama2-7b") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	out, _, _ = cli(t, "run", "--compare", "neupims,npu-only", "--requests", "24", "--batch", "8")
	if strings.Contains(out, "models differ") {
		t.Fatalf("same models reported as different:\n%s", out)
	}
	trace := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(trace, []byte("arrival_s,input_len,output_len\n0,100,20\n0.01,50,30\n0.02,300,10\n"), 0o644)
	out, errs, code := cli(t, "run", "--compare", "neupims,npu-only", "--request-trace", trace)
	if code != 0 || !strings.Contains(out, "every side serves side A's requests: request trace · 3 requests · arrivals from the trace") {
		t.Fatalf("exit %d %s:\n%s", code, errs, out)
	}
}

func TestCompareBadInput(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.json")
	checkBadInput(t, []badInput{
		{[]string{"run", "--compare", "neupim,npu-only"}, `side A "neupim": preset: unknown preset "neupim"; did you mean "neupims"`},
		{[]string{"run", "--compare", "neupims,neupims+pim.channel=3"}, `side B "neupims+pim.channel=3": pim.channel: unknown key; did you mean`},
		{[]string{"run", "--compare", "neupims,neupims+pim.dual_row_buffer=maybe"}, `pim.dual_row_buffer: "maybe" is not a valid bool; want true or false`},
		{[]string{"run", "--compare", "neupims,neupims+memory.channels=0"}, `memory.channels: 0 is out of range; want 1 to 4096`},
		{[]string{"run", "--compare", "neupims,npu-only", "--preset", "neupims"}, "--compare names every side itself; drop --preset and --config"},
		{[]string{"run", "--compare", "neupims,npu-only", "--config", "x.toml"}, "--compare names every side itself"},
		{[]string{"run", "--compare", "neupims"}, "--compare needs at least two sides"},
		{[]string{"run", "--compare", "neupims,"}, "an empty side; name a preset"},
		{[]string{"run", "--compare", "neupims,neupims+dual"}, `side "neupims+dual": "dual" is not a setting`},
		{[]string{"run", "--compare", "neupims,npu-only", "--trace", trace}, "--trace writes one run's timeline; it does not mix with --compare"},
		{[]string{"run", "--compare", "neupims,npu-only", "--trace-steps", "1-3"}, "does not mix with --compare"},
		{[]string{"run", "--compare", "neupims,gpu-h100+workload.seed=3"}, `side B "gpu-h100+workload.seed=3": workload.seed is part of the request stream, which every side takes from side A`},
		{[]string{"run", "--compare", "neupims,npu-only", "--batch", "0"}, "--set workload.batch: 0 is out of range"},
		{[]string{"run", "--compare", "neupims,npu-only", "--model", "gpt3-7"}, `side A "neupims": model.name: unknown model "gpt3-7"; did you mean "gpt3-7b"`},
		{[]string{"run", "--compare", "neupims,aimx+lolpim.static_max_ctx=64"}, `side B "aimx+lolpim.static_max_ctx=64": request 2 (30 input + 88 output tokens) can never run: static memory reserves`},
		{[]string{"run", "--compare", "neupims,npu-only", "--format", "xml"}, "want table, json or csv"},
		{[]string{"run", "--compare", strings.Repeat("neupims,", 27) + "neupims"}, "28 sides; a comparison takes at most 26"},
		{[]string{"compare", "neupims"}, "compare takes two sides, got 1; e.g. pimtui compare neupims npu-only"},
		{[]string{"compare", "a", "b", "c"}, "compare takes two sides, got 3"},
		{[]string{"compare", "neupim", "npu-only"}, `unknown preset "neupim"; did you mean "neupims"`},
		{[]string{"compare", "neupims", "npu-only+pim.enabled=yes"}, `side B "npu-only+pim.enabled=yes": pim.enabled: "yes" is not a valid bool`},
		{[]string{"compare", "neupims", "npu-only", "--preset", "l3"}, "compare takes its sides as arguments (pimtui compare A B); --preset and --config do not apply"},
		{[]string{"compare", "neupims", "npu-only", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"compare", "neupims", "npu-only"}, "the compare view needs a terminal; for output to a file or pipe use pimtui run --compare neupims,npu-only"},
	})
}
