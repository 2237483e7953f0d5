package main

import (
	"encoding/csv"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// run --compare explains each side after A: a why section after the table, whose means
// are the table's when both sides ran every step; a why object in the JSON whose parts
// sum to the difference; why.* columns on the CSV rows of the sides after A.
func TestRunCompareWhy(t *testing.T) {
	common := []string{"--requests", "48", "--batch", "16"}
	out, errs, code := cli(t, append([]string{"run", "--compare", "neupims,npu-pim"}, common...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	table, why, ok := strings.Cut(out, "\nwhy B differs from A · steps 1–")
	if !ok {
		t.Fatalf("no why section:\n%s", out)
	}
	field := func(text, label string) []string {
		for l := range strings.Lines(text) {
			if rest, ok := strings.CutPrefix(l, label+" "); ok {
				return strings.Fields(rest)
			}
		}
		t.Fatalf("no %q row in:\n%s", label, text)
		return nil
	}
	mean, iter := field(table, "iteration ms mean"), field(why, "iteration")
	if iter[0] != mean[0] || iter[1] != mean[1] {
		t.Errorf("why's iteration %v, the table's mean %v", iter, mean)
	}
	for _, want := range []string{"B is ", "× slower", "on the critical path", "settings that differ", "critical path", "lane groups, per lane",
		"switches, Shapley value over two orders", "pim.dual_row_buffer true → false", "scheduler.sub_batch_interleaving true → false",
		"scheduler.channel_alloc greedy_min_load → round_robin", "NeuPIMs dual row buffers (false: blocked single-row-buffer PIM)"} {
		if !strings.Contains(why, want) {
			t.Errorf("why section lacks %q:\n%s", want, why)
		}
	}

	v := jsonOf(t, append([]string{"run", "--compare", "neupims,npu-pim,npu-only", "--format", "json"}, common...)...).(map[string]any)
	whys := v["why"].(map[string]any)
	if len(whys) != 2 || whys["B"] == nil || whys["C"] == nil {
		t.Fatalf("why %v", whys)
	}
	b := whys["B"].(map[string]any)
	num := func(m any, k string) float64 { return m.(map[string]any)[k].(float64) }
	sides := v["sides"].([]any)
	if num(b, "from_step") != 1 || num(b, "to_step") != num(sides[0], "iterations") {
		t.Errorf("window %v–%v of %v iterations", b["from_step"], b["to_step"], num(sides[0], "iterations"))
	}
	sum := 0.0
	for _, p := range b["critical_path"].([]any) {
		sum += num(p, "delta_ms")
	}
	if d := num(b, "delta_ms"); math.Abs(sum-d) > 1e-9*num(b, "b_ms") || d <= 0 {
		t.Errorf("critical path sums to %g, the difference is %g", sum, d)
	}
	at := b["attribution"].(map[string]any)
	var keys []string
	for _, s := range at["switches"].([]any) {
		keys = append(keys, s.(map[string]any)["key"].(string))
	}
	if at["method"] != "two_order_shapley" || !slices.Equal(keys, []string{"pim.dual_row_buffer", "scheduler.sub_batch_interleaving", "scheduler.channel_alloc"}) {
		t.Errorf("attribution %v", at)
	}
	if c := whys["C"].(map[string]any); c["attribution"].(map[string]any)["method"] != "single_switch" || c["side"] != "C" || !strings.HasPrefix(c["summary"].(string), "C is ") {
		t.Errorf("C's why %v", c)
	}

	out, errs, code = cli(t, append([]string{"run", "--compare", "neupims,npu-pim", "--format", "csv"}, common...)...)
	if code != 0 {
		t.Fatalf("csv: exit %d: %s", code, errs)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"why.delta_ms", "why.critical_path.pim.attention", "why.idle.npu.dependency", "why.switch.pim.dual_row_buffer"} {
		col := slices.Index(recs[0], k)
		if col < 0 {
			t.Errorf("no column %s in %v", k, recs[0])
			continue
		}
		if recs[1][col] != "" || recs[2][col] == "" {
			t.Errorf("%s: A %q, B %q", k, recs[1][col], recs[2][col])
		}
	}
	d, _ := strconv.ParseFloat(recs[2][slices.Index(recs[0], "why.delta_ms")], 64)
	if want := num(b, "delta_ms"); ff(want) != ff(d) {
		t.Errorf("csv delta %g, json %g", d, want)
	}
}

// Sides of different planners are explained without a switch attribution, which says
// why; a warm-up longer than the shorter run leaves nothing to explain, and says so.
func TestRunCompareWhyWithout(t *testing.T) {
	out, errs, code := cli(t, "run", "--compare", "neupims,gpu-a100", "--requests", "24", "--batch", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"system", "[gpu]", "a section only B's planner (gpu) reads",
		"switches  none: the sides run different planners (neupims, gpu): no path of switches leads from one to the other"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	out, errs, code = cli(t, "run", "--compare", "neupims,npu-pim", "--requests", "24", "--batch", "8", "--set", "workload.warmup=100000")
	if code != 0 || !strings.Contains(out, "why B differs from A\nno measured step both sides ran\n") {
		t.Fatalf("exit %d %s:\n%s", code, errs, out)
	}
}
