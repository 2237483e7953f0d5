package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/presets/experiment"
)

// declaredByFamily is every experiment the embedded presets declare, as "preset/id",
// by family.
func declaredByFamily(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, n := range presets.Names() {
		f, err := presets.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range f.Expect {
			out[f.Family] = append(out[f.Family], n+"/"+e.ID)
		}
	}
	return out
}

type reproduceJSON struct {
	Experiments []reproduceRow `json:"experiments"`
	Trends      []trendJSON    `json:"trends"`
}

func decodeReproduce(t *testing.T, out string) reproduceJSON {
	t.Helper()
	var r reproduceJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return r
}

// `reproduce FAMILY` covers every experiment each landed family declares (listed, not
// run: the full grids take minutes).
func TestReproduceListsEveryDeclaredExperiment(t *testing.T) {
	want := declaredByFamily(t)
	if len(want["neupims"]) == 0 {
		t.Fatal("the neupims family declares no experiments")
	}
	total := 0
	for fam, ids := range want {
		total += len(ids)
		t.Run(fam, func(t *testing.T) {
			out, errs, code := cli(t, "reproduce", fam, "--list", "--format", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var got []string
			for _, x := range decodeReproduce(t, out).Experiments {
				got = append(got, x.Preset+"/"+x.ID)
				if x.Family != fam || x.Paper <= 0 || x.Conditions == "" || x.Claim == "" || x.Pimtui != nil {
					t.Errorf("%s/%s: family %q, paper %v, conditions %q, claim %q, pimtui %v", x.Preset, x.ID, x.Family, x.Paper, x.Conditions, x.Claim, x.Pimtui)
				}
			}
			if strings.Join(got, " ") != strings.Join(ids, " ") {
				t.Errorf("listed %v, declared %v", got, ids)
			}
			table, _, _ := cli(t, "reproduce", fam, "--list")
			for _, id := range ids {
				p, e, _ := strings.Cut(id, "/")
				if !strings.Contains(table, p) || !strings.Contains(table, e) {
					t.Errorf("table lacks %s:\n%s", id, table)
				}
			}
		})
	}
	out, _, code := cli(t, "reproduce", "--list", "--format", "json")
	if n := len(decodeReproduce(t, out).Experiments); code != 0 || n != total {
		t.Errorf("reproduce all lists %d experiments (exit %d), the presets declare %d", n, code, total)
	}
}

// The table and JSON of a run, with the evaluation replaced: paper and pimtui values,
// their ratio, the verdict, the gap's first line where not reproduced, and the chart.
func TestReproduceReport(t *testing.T) {
	defer func(e, m any) {
		evaluate = e.(func(string, []string) ([]experiment.Outcome, error))
		measureTrend = m.(func(experiment.Trend) (experiment.Trend, error))
	}(evaluate, measureTrend)
	var evaluated []string
	var mu sync.Mutex
	evaluate = func(name string, ids []string) ([]experiment.Outcome, error) {
		mu.Lock()
		evaluated = append(evaluated, name)
		mu.Unlock()
		f, _ := presets.Get(name)
		var outs []experiment.Outcome
		for i, e := range f.Expect {
			m := e.Target() * 1.1
			if i == 1 {
				m = e.Target() / 2
			}
			o := experiment.Outcome{Expect: e, Preset: name, Measured: m, Within: i != 1, Points: 40}
			if i == 0 {
				o.FLOPUtilization = map[string]float64{name: 0.42, "unrelated": 0.5}
			}
			outs = append(outs, o)
		}
		return outs, nil
	}
	measureTrend = func(tr experiment.Trend) (experiment.Trend, error) {
		for i := range tr.Series {
			tr.Series[i].Values = make([]float64, len(tr.Batches))
			for j, b := range tr.Batches {
				tr.Series[i].Values[j] = float64(b * (4 - i))
			}
		}
		tr.Series[1].Values[0] = math.NaN()
		return tr, nil
	}
	out, errs, code := cli(t, "reproduce", "neupims")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	slices.Sort(evaluated)
	if strings.Join(evaluated, ",") != "neupims,npu-pim" {
		t.Errorf("evaluated %v, want each preset of the family that declares experiments once", evaluated)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "3 of 4 claims match the paper (a speed-up: ratio within ±25% and its logarithm within ±25%") {
		t.Fatalf("verdict %q", lines[0])
	}
	if h := strings.Fields(lines[2]); strings.Join(h, " ") != "FAMILY PRESET EXPERIMENT CONDITIONS METHOD PAPER PIMTUI PIMTUI/PAPER WITHIN FLOP UTIL GAP" {
		t.Fatalf("header %v", h)
	}
	f, _ := presets.Get("neupims")
	for i, e := range f.Expect {
		var row string
		for _, l := range lines {
			if strings.HasPrefix(l, "neupims  neupims") && strings.Contains(l, " "+e.ID+" ") {
				row = l
			}
		}
		if row == "" {
			t.Fatalf("no row for %s:\n%s", e.ID, out)
		}
		want := []string{"4 models × 2 datasets × batch 64–512 *", "steady 1,024+2,048", fmt.Sprintf("%.2f× %s", e.Ratio, e.Versus), fmt.Sprintf("%.2f×", e.Ratio*1.1), "1.10", "yes"}
		if i == 0 {
			// the system's utilisation, then its baseline's, which reports none
			want = append(want, "yes     42% · —")
		}
		if i == 1 {
			want = []string{fmt.Sprintf("%.2f×", e.Ratio/2), "0.50", "no", gapLine(e.Gap)}
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("%s row lacks %q: %s", e.ID, w, row)
			}
		}
	}
	// The chart: NeuPIMs against the baselines its experiments name, over the grid's batches.
	for _, w := range []string{"neupims: throughput_tok_s against batch size, gpt3-7b (tp 4, pp 1) on sharegpt", "● neupims", "■ npu-pim", "▲ npu-only", "◆ gpu-a100", "256",
		"* neupims vs-npu-pim: Fig. 12 sweeps batch 64, 128, 256, 384 and 512", methodLegend, utilLegend} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}

	js, errs, code := cli(t, "reproduce", "neupims", "--format", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	r := decodeReproduce(t, js)
	if len(r.Experiments) != 4 || r.Experiments[1].Within == nil || *r.Experiments[1].Within || *r.Experiments[0].Ratio < 1.09 {
		t.Fatalf("experiments %+v", r.Experiments)
	}
	if u := r.Experiments[0].FLOPUtilization; u["neupims"] != 0.42 || r.Experiments[1].FLOPUtilization != nil {
		t.Fatalf("flop_utilization %v, then %v", u, r.Experiments[1].FLOPUtilization)
	}
	if x := r.Experiments[0]; !strings.HasPrefix(x.Method, "steady state") || x.Rule != "ratio within ±25% and its logarithm within ±25%" ||
		!strings.HasPrefix(x.Reduced, "Fig. 12 sweeps") || !strings.Contains(x.MethodNote, "§8.1") {
		t.Fatalf("method %q, rule %q, reduced %q, note %q", x.Method, x.Rule, x.Reduced, x.MethodNote)
	}
	if len(r.Trends) != 1 || len(r.Trends[0].Series) != 4 || fmt.Sprint(r.Trends[0].Batches) != fmt.Sprint(f.Expect[0].Grid.Batch) || r.Trends[0].Series[1].Values[0] != nil {
		t.Fatalf("trends %+v", r.Trends)
	}
}

// One real run, small enough for a test: NeuPIMs against NPU+PIM on one grid point,
// measured by experiment.EvaluateGrid as the full grids are.
func TestReproduceRealRun(t *testing.T) {
	defer func(e any) { evaluate = e.(func(string, []string) ([]experiment.Outcome, error)) }(evaluate)
	var outs []experiment.Outcome
	evaluate = func(name string, ids []string) ([]experiment.Outcome, error) {
		f, err := presets.Get(name)
		if err != nil {
			return nil, err
		}
		e := f.Expect[0]
		e.Grid = presets.Grid{Model: e.Grid.Model[:1], Dataset: []string{"alpaca"}, Batch: e.Grid.Batch[:1]}
		e.Steps, e.Warmup = 8, 8
		outs, err = experiment.EvaluateGrid(name, []presets.Expect{e})
		return outs, err
	}
	out, errs, code := cli(t, "reproduce", "neupims", "--preset", "neupims", "--experiment", "vs-npu-pim", "--no-chart", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := decodeReproduce(t, out)
	if len(outs) != 1 || outs[0].Points != 1 || !(outs[0].Measured > 0) {
		t.Fatalf("outcomes %+v", outs)
	}
	x := r.Experiments
	if len(x) != 1 || x[0].Pimtui == nil || *x[0].Pimtui != outs[0].Measured || *x[0].Within != outs[0].Within ||
		*x[0].Ratio != outs[0].Measured/x[0].Paper || *x[0].Points != 1 || len(r.Trends) != 0 {
		t.Fatalf("got %+v, measured %+v", r, outs)
	}
}

func TestReproduceBadInput(t *testing.T) {
	cases := []badInput{
		{[]string{"reproduce", "neupim"}, `unknown family "neupim"; did you mean "neupims"?`},
		{[]string{"reproduce", "neupims", "l3"}, "reproduce takes one family, validation or all"},
		{[]string{"reproduce", "--format", "csv"}, "want table or json"},
		{[]string{"reproduce", "gpu", "--list"}, "family gpu declares no paper experiments"},
		{[]string{"reproduce", "--preset", "npu-onl", "--list"}, `did you mean "npu-only"`},
		{[]string{"reproduce", "neupims", "--experiment", "vs-gpus", "--list"}, `--experiment "vs-gpus": no such experiment here; did you mean "vs-gpu"?`},
	}
	checkBadInput(t, cases)
}

// fakeChecker stands in for the references' checkers until the test ends: refs in
// order, each answering with its checks (or failing with err), and records which were
// asked for.
func fakeChecker(t *testing.T, refs []string, checks map[string][]experiment.Check, err error) *[]string {
	t.Helper()
	v, r := validate, referenceNames
	t.Cleanup(func() { validate, referenceNames = v, r })
	var mu sync.Mutex
	var asked []string
	referenceNames = func() []string { return refs }
	validate = func(names ...string) ([]experiment.Check, error) {
		mu.Lock()
		asked = append(asked, names...)
		mu.Unlock()
		if err != nil {
			return nil, err
		}
		var out []experiment.Check
		for _, n := range names {
			out = append(out, checks[n]...)
		}
		return out, nil
	}
	return &asked
}

// Two references' checks, one outside its tolerance, and finer ones for --detail.
var fakeChecks = map[string][]experiment.Check{
	"neupims-sim": {
		{Reference: "neupims-sim", Name: "neupims · iteration", Preset: "neupims", Source: "main f299af3, sub-batch-on, clb-0, batch 512", Unit: "ms",
			Ref: 15.488, Pimtui: 11.182, Tol: 0.10, Gap: "pimtui's NPU ops run 1.39× faster than the authors' under PIM traffic.\nSecond line."},
		{Reference: "neupims-sim", Name: "neupims · stage C", Preset: "neupims", Source: "SA_stage_C.tsv", Unit: "µs", Ref: 238.46, Pimtui: 173.5, Tol: 0.10, Detail: true,
			Gap: "no residual adds"},
		{Reference: "neupims-sim", Name: "npu-only · iteration", Preset: "npu-only", Source: "npu-only 57617ee, rr-0, batch 512", Unit: "ms", Ref: 189.94, Pimtui: 181.5, Tol: 0.10},
	},
	"h100": {
		{Reference: "h100", Name: "B=64 L=2048 · full", Preset: "gpu-h100", Source: "decode_layer_h100_cudnn.csv", Unit: "µs", Ref: 852, Pimtui: 870, Tol: 0.05},
	},
}

func TestReproduceValidation(t *testing.T) {
	asked := fakeChecker(t, []string{"neupims-sim", "h100"}, fakeChecks, nil)
	out, errs, code := cli(t, "reproduce", "validation")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if slices.Sort(*asked); strings.Join(*asked, ",") != "h100,neupims-sim" {
		t.Errorf("references measured: %v, want each once", *asked)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "Validation against references measured outside pimtui: 2 of 3 checks within their tolerance" {
		t.Errorf("verdict %q", lines[0])
	}
	row := func(name string) []string {
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), name+"  ") {
				return strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), name))
			}
		}
		t.Fatalf("no row %q:\n%s", name, out)
		return nil
	}
	for _, c := range []struct {
		name string
		want string
	}{
		{"neupims · iteration", "neupims 15.488 11.182 ms -27.8% ±10% ✗ pimtui's NPU ops run 1.39× faster than the authors' under PIM traffic."},
		{"npu-only · iteration", "npu-only 189.9 181.5 ms -4.4% ±10% ✓"},
		{"B=64 L=2048 · full", "gpu-h100 852.0 870.0 µs +2.1% ±5% ✓"},
	} {
		if got := strings.Join(row(c.name), " "); got != c.want {
			t.Errorf("row %s: %q, want %q", c.name, got, c.want)
		}
	}
	for _, want := range []string{
		"\nneupims-sim: the NeuPIMs authors' cycle-level simulator (casys-kaist/NeuPIMs: main f299af3, npu+pim e51a4af, npu-only 57617ee)",
		"\nh100: a real H100's decode layer",
		"CHECK                 PRESET    REFERENCE  PIMTUI  UNIT  ERROR   TOL   WITHIN  GAP",
		"\nneupims-sim: 1 of 2 within, mean |error| 16.1%\n",
		"\nh100: 1 of 1 within, mean |error| 2.1%\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "neupims-sim:") > strings.Index(out, "h100:") {
		t.Errorf("references out of their order:\n%s", out)
	}
	if strings.Contains(out, "stage C") || strings.Contains(out, "Second line") || strings.Contains(out, "claims match") {
		t.Errorf("a finer check without --detail, a gap's second line, or the claims:\n%s", out)
	}

	out, _, code = cli(t, "reproduce", "validation", "--detail")
	for _, want := range []string{"  neupims · stage C   neupims", "238.5", "173.5", "-27.2%", "✗       no residual adds",
		"neupims-sim: 1 of 2 within, mean |error| 16.1%; finer checks 0 of 1 within, mean |error| 27.2%\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--detail (exit %d) lacks %q:\n%s", code, want, out)
		}
	}

	out, _, code = cli(t, "reproduce", "validation", "--preset", "npu-only")
	if code != 0 || !strings.Contains(out, "1 of 1 checks of preset npu-only within their tolerance") || strings.Contains(out, "neupims · iteration") || strings.Contains(out, "h100") {
		t.Errorf("--preset npu-only (exit %d):\n%s", code, out)
	}
}

func TestReproduceValidationJSON(t *testing.T) {
	fakeChecker(t, []string{"neupims-sim", "h100"}, fakeChecks, nil)
	out, errs, code := cli(t, "reproduce", "validation", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 1 || raw["validations"] == nil {
		t.Fatalf("want only validations (%v):\n%s", err, out)
	}
	var rows []map[string]any
	if err := json.Unmarshal(raw["validations"], &rows); err != nil || len(rows) != 3 {
		t.Fatalf("rows (%v):\n%s", err, out)
	}
	want := map[string]any{"reference": 15.488, "against": "neupims-sim", "name": "neupims · iteration", "preset": "neupims",
		"source": "main f299af3, sub-batch-on, clb-0, batch 512", "unit": "ms", "pimtui": 11.182, "tolerance": 0.1, "within": false, "detail": false,
		"gap": "pimtui's NPU ops run 1.39× faster than the authors' under PIM traffic. Second line."}
	for k, v := range want {
		if rows[0][k] != v {
			t.Errorf("%s = %v, want %v", k, rows[0][k], v)
		}
	}
	if e := rows[0]["error"].(float64); math.Abs(e-(11.182/15.488-1)) > 1e-12 || len(rows[0]) != 12 {
		t.Errorf("error %v, fields %v", e, rows[0])
	}
	if rows[1]["name"] != "npu-only · iteration" || rows[1]["within"] != true || rows[1]["gap"] != "" || rows[2]["against"] != "h100" {
		t.Errorf("rows %v", rows)
	}
	out, _, _ = cli(t, "reproduce", "validation", "--format", "json", "--detail")
	var d struct{ Validations []validationRow }
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Validations) != 4 || !d.Validations[1].Detail || d.Validations[1].Name != "neupims · stage C" {
		t.Errorf("--detail (%v): %+v", err, d.Validations)
	}
}

// `reproduce all` prints the claims, then the validation section; a family alone runs
// no checks and its JSON has no validations.
func TestReproduceAllWithValidation(t *testing.T) {
	defer func(e any) { evaluate = e.(func(string, []string) ([]experiment.Outcome, error)) }(evaluate)
	evaluate = func(name string, ids []string) ([]experiment.Outcome, error) {
		f, _ := presets.Get(name)
		var outs []experiment.Outcome
		for _, e := range f.Expect {
			outs = append(outs, experiment.Outcome{Expect: e, Preset: name, Measured: e.Target(), Within: true, Points: 1})
		}
		return outs, nil
	}
	asked := fakeChecker(t, []string{"neupims-sim", "h100"}, fakeChecks, nil)
	out, errs, code := cli(t, "reproduce", "--no-chart")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	claims, section := strings.Index(out, "claims match the paper"), strings.Index(out, "\nValidation against references measured outside pimtui: 2 of 3 checks within")
	if claims < 0 || claims > 20 || section < 0 || section < strings.Index(out, utilLegend) || !strings.Contains(out[section:], "neupims · iteration") {
		t.Fatalf("claims at %d, validation at %d:\n%s", claims, section, out)
	}
	js, _, code := cli(t, "reproduce", "--no-chart", "--format", "json", "--detail")
	r := decodeReproduce(t, js)
	var v struct{ Validations []validationRow }
	json.Unmarshal([]byte(js), &v)
	if code != 0 || len(r.Experiments) == 0 || len(v.Validations) != 4 {
		t.Fatalf("exit %d, %d experiments, %d validations", code, len(r.Experiments), len(v.Validations))
	}

	// --preset gpu-h100 declares no experiments, but a reference checks it.
	out, errs, code = cli(t, "reproduce", "--preset", "gpu-h100")
	if code != 0 || !strings.HasPrefix(out, "Validation against references measured outside pimtui: 1 of 1 checks of preset gpu-h100") || strings.Contains(out, "claims") {
		t.Fatalf("--preset gpu-h100 (exit %d, %s):\n%s", code, errs, out)
	}
	// --preset neupims: its claims, and its checks only.
	out, _, _ = cli(t, "reproduce", "--preset", "neupims", "--no-chart")
	if !strings.Contains(out, "claims match") || !strings.Contains(out, "1 checks of preset neupims") || strings.Contains(out, "npu-only · iteration") {
		t.Fatalf("--preset neupims:\n%s", out)
	}

	*asked = nil
	for _, args := range [][]string{{"reproduce", "neupims", "--no-chart", "--format", "json"}, {"reproduce", "--experiment", "vs-gpu", "--format", "json"}} {
		js, _, code = cli(t, args...)
		var raw map[string]json.RawMessage
		json.Unmarshal([]byte(js), &raw)
		if _, ok := raw["validations"]; code != 0 || ok || raw["experiments"] == nil {
			t.Errorf("%v (exit %d): %s", args, code, js)
		}
	}
	if len(*asked) != 0 {
		t.Errorf("a family or --experiment measured the references %v", *asked)
	}
	// No reference built in: the section says so.
	fakeChecker(t, nil, nil, nil)
	if out, _, code := cli(t, "reproduce", "--preset", "neupims", "--no-chart"); code != 0 || !strings.Contains(out, "Validation against references measured outside pimtui: no checks of preset neupims") {
		t.Errorf("without references (exit %d):\n%s", code, out)
	}
}

func TestReproduceValidationBadInput(t *testing.T) {
	fakeChecker(t, []string{"neupims-sim", "h100"}, fakeChecks, nil)
	checkBadInput(t, []badInput{
		{[]string{"reproduce", "neupims", "--detail"}, "--detail adds the finer validation checks (stages, ops, parts of a layer), which family neupims does not run: pimtui reproduce validation --detail"},
		{[]string{"reproduce", "--list", "--detail"}, "--detail adds the finer validation checks, which --list and --experiment leave out"},
		{[]string{"reproduce", "--experiment", "vs-gpu", "--detail"}, "which --list and --experiment leave out"},
		{[]string{"reproduce", "validation", "--list"}, "the validation checks are known only by running them: pimtui reproduce validation"},
		{[]string{"reproduce", "validation", "--experiment", "vs-gpu"}, "--experiment picks papers' experiments, which validation does not run"},
		{[]string{"reproduce", "validation", "--preset", "neupim"}, `unknown preset "neupim"; did you mean "neupims"`},
		{[]string{"reproduce", "validation", "--preset", "l3"}, "no reference measured outside pimtui checks preset l3; the presets checked are neupims, npu-only, gpu-h100"},
		{[]string{"reproduce", "--preset", "gpu-a100"}, "preset gpu-a100 declares no paper experiments, and no reference measured outside pimtui checks it"},
		{[]string{"reproduce", "validaton"}, `unknown family "validaton"; did you mean "validation"?`},
		{[]string{"reproduce", "validation", "--format", "csv"}, "want table or json"},
	})
}

// A checker that fails, or none built in, is a failure of the run (exit 1) that says so.
func TestReproduceValidationFails(t *testing.T) {
	fakeChecker(t, []string{"neupims-sim"}, nil, errors.New("neupims-sim: reading stages.tsv: no such file"))
	_, errs, code := cli(t, "reproduce", "validation")
	if code != 1 || !strings.Contains(errs, "validation: neupims-sim: reading stages.tsv: no such file") {
		t.Errorf("exit %d: %s", code, errs)
	}
	fakeChecker(t, nil, nil, nil)
	_, errs, code = cli(t, "reproduce", "validation")
	if code != 1 || !strings.Contains(errs, "this pimtui has no checks against references measured outside it") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
