package sim

import "testing"

func TestMetricNames(t *testing.T) {
	names := MetricNames([]string{"pim", "npu"})
	for _, want := range []string{"throughput_tok_s", "mean_batch", "iteration_ms.p99", "tbt_ms.p50", "utilization.pim", "bubble_fraction.npu", "kv.peak_utilization", "energy_j"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("%s missing from %v", want, names)
		}
	}
}

func TestIsCauseMetric(t *testing.T) {
	for name, want := range map[string]bool{
		"bubble_by_cause.pim.dependency": true, "bubble_by_cause.npu_vector.no_work": true,
		"bubble_by_cause.pim.dependancy": false, "bubble_by_cause.pim": false, "bubble_by_cause..tail": false,
		"bubble_fraction.pim": false, "bubble_by_cause.tail": false,
	} {
		if got := IsCauseMetric(name); got != want {
			t.Errorf("IsCauseMetric(%q) = %v", name, got)
		}
	}
}
