package sim

import (
	"encoding/json"
	"sort"
	"strings"
)

// The metric vocabulary: a Result's numeric fields by dotted path, as sweeps, lessons,
// expectations and the headless compare name them.

// MetricValues flattens a result's JSON into its numeric fields by dotted path, as a sweep's
// --metric names them (throughput_tok_s, iteration_ms.p99, utilization.pim …). A field
// that is null (no energy model, say) is left out.
func (r Result) MetricValues() map[string]float64 {
	b, _ := json.Marshal(r)
	var m map[string]any
	json.Unmarshal(b, &m)
	out := map[string]float64{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case float64:
			out[prefix] = x
		case map[string]any:
			for k, y := range x {
				if prefix != "" {
					k = prefix + "." + k
				}
				walk(k, y)
			}
		}
	}
	walk("", m)
	return out
}

// MetricNames lists every metric a result of a system with these lane groups can have,
// sorted: the numeric fields of the JSON result, with utilization and bubble_fraction
// per lane group.
func MetricNames(lanes []string) []string {
	zero := 0.0
	r := Result{Utilization: map[string]float64{}, BubbleFraction: map[string]float64{}, LoadImbalance: &zero, EnergyJ: &zero}
	for _, k := range lanes {
		r.Utilization[k] = 0
		r.BubbleFraction[k] = 0
	}
	var out []string
	for k := range r.MetricValues() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsCauseMetric reports whether name is bubble_by_cause.GROUP.CAUSE, a lane group's idle
// fraction from one cause, with CAUSE one of the bubble causes' names.
func IsCauseMetric(name string) bool {
	rest, ok := strings.CutPrefix(name, "bubble_by_cause.")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 {
		return false
	}
	for c := range NumCauses {
		if rest[i+1:] == c.String() {
			return true
		}
	}
	return false
}
