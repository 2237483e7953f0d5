package main

import (
	"encoding/json"
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
		{[]string{"reproduce", "neupims", "l3"}, "reproduce takes one family or all"},
		{[]string{"reproduce", "--format", "csv"}, "want table or json"},
		{[]string{"reproduce", "gpu", "--list"}, "family gpu declares no paper experiments"},
		{[]string{"reproduce", "--preset", "npu-onl", "--list"}, `did you mean "npu-only"`},
		{[]string{"reproduce", "neupims", "--experiment", "vs-gpus", "--list"}, `--experiment "vs-gpus": no such experiment here; did you mean "vs-gpu"?`},
	}
	checkBadInput(t, cases)
}
