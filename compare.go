// The headless comparison (`pimtui run --compare`) and the sides every comparison names:
// NAME+key=value+…, resolved into engine configurations on side A's request stream.

package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
)

// side is one system of a comparison as the command line names it: a preset, optionally
// with settings switched, NAME+key=value+key=value.
type side struct {
	spec string   // as given, trimmed
	name string   // the preset
	sets []string // its own "key=value" settings, in order
}

// resolvedSide is a side ready to run: its name as given, its engine configuration and,
// for a side after A, how it differs from side A (the why section and overlay).
type resolvedSide struct {
	Name     string
	Config   sim.Config
	Contrast *sim.Contrast
}

// sideExample shows the form of a side in messages.
const sideExample = "e.g. neupims or neupims+pim.dual_row_buffer=false"

// maxSides is the most sides a comparison takes: one letter each.
const maxSides = 26

// parseSide splits "NAME+key=value+…" into the preset name and its settings. A part
// without "=" belongs to the part before it, so a value such as 1e+06 keeps its "+".
func parseSide(spec string) (side, error) {
	s := side{spec: strings.TrimSpace(spec)}
	if s.spec == "" {
		return s, usagef("an empty side; name a preset, %s", sideExample)
	}
	parts := strings.Split(s.spec, "+")
	s.name = strings.TrimSpace(parts[0])
	switch {
	case s.name == "":
		return s, usagef("side %q has no preset before its settings; want NAME+key=value, %s", s.spec, sideExample)
	case strings.Contains(s.name, "="):
		return s, usagef("side %q starts with a setting; want NAME+key=value, e.g. neupims+%s", s.spec, s.name)
	}
	for _, p := range parts[1:] {
		switch {
		case strings.Contains(p, "="):
			s.sets = append(s.sets, p)
		case len(s.sets) > 0:
			s.sets[len(s.sets)-1] += "+" + p
		default:
			return s, usagef("side %q: %q is not a setting; want NAME+key=value, e.g. %s+pim.dual_row_buffer=false", s.spec, p, s.name)
		}
	}
	return s, nil
}

// streamKey reports a key of the request stream, which every side takes from side A:
// every workload key but the batch and the KV policy, which belong to the system.
func streamKey(key string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(key), "workload.")
	return ok && rest != "batch" && rest != "kv_policy"
}

// resolveSides builds each side's engine configuration: its preset (from get), the
// command line's overrides as for run, then its own settings. Every side then serves
// side A's request stream (dataset, requests, arrival, rate, lengths, request trace,
// seed, prefill, steps and warm-up); each keeps its own hardware, model, batch and KV
// policy.
func (o *options) resolveSides(cmd *cobra.Command, specs []string, get func(string) (*presets.File, error)) ([]resolvedSide, error) {
	if len(specs) > maxSides {
		return nil, usagef("%d sides; a comparison takes at most %d", len(specs), maxSides)
	}
	base, err := o.overrides(cmd)
	if err != nil {
		return nil, err
	}
	trace, err := o.trace(cmd)
	if err != nil {
		return nil, err
	}
	files := make([]*presets.File, len(specs))
	sides := make([]side, len(specs))
	for i, spec := range specs {
		s, err := parseSide(spec)
		if err != nil {
			return nil, err
		}
		bad := func(err error) error { return usagef("side %s %q: %v", ui.SideLetter(i), s.spec, err) }
		f, err := get(s.name)
		if err != nil {
			return nil, bad(err)
		}
		for _, kv := range base {
			if err := f.Set(kv); err != nil {
				return nil, usageError{fmt.Errorf("--set %w", err)}
			}
		}
		for _, kv := range s.sets {
			if err := f.Set(kv); err != nil {
				return nil, bad(err)
			}
			if key, _, _ := strings.Cut(kv, "="); i > 0 && streamKey(key) {
				return nil, usagef("side %s %q: %s is part of the request stream, which every side takes from side A; set it on side A or with a flag for every side",
					ui.SideLetter(i), s.spec, strings.TrimSpace(key))
			}
		}
		files[i], sides[i] = f, s
	}
	out := make([]resolvedSide, len(specs))
	for i, f := range files {
		if i > 0 {
			w := files[0].Workload
			w.Batch, w.KVPolicy = f.Workload.Batch, f.Workload.KVPolicy
			f.Workload = w
		}
		cfg, err := presets.Build(f, trace)
		if err != nil {
			return nil, usagef("side %s %q: %v", ui.SideLetter(i), sides[i].spec, err)
		}
		out[i] = resolvedSide{Name: sides[i].spec, Config: cfg}
		if i > 0 {
			out[i].Contrast = presets.Contrast(files[0], f, trace)
		}
	}
	return out, nil
}

// runCompare runs every side that --compare names to the end (or --steps) on side A's
// request stream and prints them side by side.
func runCompare(cmd *cobra.Command, o *options, list, format string, stdout, stderr io.Writer) error {
	specs := strings.Split(list, ",")
	if len(specs) < 2 {
		return usagef("--compare needs at least two sides, comma-separated, e.g. --compare neupims,npu-only or --compare neupims,neupims+pim.dual_row_buffer=false")
	}
	sides, err := o.resolveSides(cmd, specs, presets.Get)
	if err != nil {
		return err
	}
	engines := make([]*sim.Engine, len(sides))
	for i, s := range sides {
		cfg := s.Config
		cfg.Recycle, cfg.Jump = true, true // only each side's result is read
		e, err := sim.New(cfg)
		if err != nil {
			return usagef("side %s %q: %v", ui.SideLetter(i), s.Name, err)
		}
		engines[i] = e
	}
	results, err := runEngines(engines, sides, progressTo(stderr))
	if err != nil {
		return err
	}
	whys, err := explainSides(sides, results, progressTo(stderr))
	if err != nil {
		return err
	}
	switch format {
	case "json":
		return writeCompareJSON(stdout, sides, results, whys)
	case "csv":
		return writeCompareCSV(stdout, sides, results, whys)
	}
	if err := writeCompareTable(stdout, sides, results); err != nil {
		return err
	}
	return writeWhyTable(stdout, whys)
}

// runEngines steps every engine to its end, as many at once as there are cores. Each
// engine is independent and deterministic, so the results do not depend on how many
// run together. A progress bar goes to progress (nil: none) when the runs take more than
// a moment.
func runEngines(es []*sim.Engine, sides []resolvedSide, progress io.Writer) ([]sim.Result, error) {
	results := make([]sim.Result, len(es))
	errs := make([]error, len(es))
	done := make([]atomic.Uint64, len(es)) // per engine, the fraction finished in millionths
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(es), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(es) {
					return
				}
				results[i], errs[i] = stepToEnd(es[i], &done[i])
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	start, shown := time.Now(), false
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-finished:
			waiting = false
		case now := <-tick.C:
			if progress == nil || now.Sub(start) < 500*time.Millisecond {
				continue
			}
			sum := 0.0
			for i := range done {
				sum += float64(done[i].Load()) / 1e6
			}
			shown = true
			fmt.Fprintf(progress, "\r\x1b[K%s %d sides · %.1f s", progressBar(sum/float64(len(es)), 30), len(es), now.Sub(start).Seconds())
		}
	}
	if shown {
		fmt.Fprint(progress, "\r\x1b[K")
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("side %s %q: %w", ui.SideLetter(i), sides[i].Name, err)
		}
	}
	return results, nil
}

// stepToEnd runs e to its end, keeping the share of it done in done.
func stepToEnd(e *sim.Engine, done *atomic.Uint64) (sim.Result, error) {
	steps := e.Config().Workload.Steps
	for calls := 1; ; calls++ {
		s, err := e.Step()
		if errors.Is(err, sim.ErrDone) {
			done.Store(1e6)
			return e.Result(), nil
		}
		if err != nil {
			return sim.Result{}, err
		}
		if calls%64 == 0 { // a jumping Step may pass many iterations
			f := float64(s.Done) / float64(max(1, s.Total))
			if steps > 0 {
				f = max(f, float64(s.Step)/float64(steps))
			}
			done.Store(uint64(min(1, f) * 1e6))
		}
	}
}

// compareSide is one side in the JSON comparison: the side as named, then the fields of
// its `run --format json` result.
type compareSide struct {
	Side string `json:"side"`
	sim.Result
}

// writeCompareJSON prints {"sides": [ … ], "why": {"B": …}}: each side's result, and
// for each side after A why it differs from A.
func writeCompareJSON(w io.Writer, sides []resolvedSide, rs []sim.Result, whys []*sim.Why) error {
	out := struct {
		Sides []compareSide       `json:"sides"`
		Why   map[string]*sim.Why `json:"why"`
	}{Why: map[string]*sim.Why{}}
	for i, r := range rs {
		out.Sides = append(out.Sides, compareSide{Side: sides[i].Name, Result: r})
		if i > 0 {
			out.Why[ui.SideLetter(i)] = whys[i]
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeCompareCSV prints one row per side: its name, preset, system, model, dataset and
// seed, then every numeric field of its JSON result by dotted name and, on a side after
// A, why it differs from A (whyValues), empty where the side has no such field.
func writeCompareCSV(w io.Writer, sides []resolvedSide, rs []sim.Result, whys []*sim.Why) error {
	ms := make([]map[string]float64, len(rs))
	var names []string
	for i, r := range rs {
		ms[i] = r.MetricValues()
		delete(ms[i], "seed")
		maps.Copy(ms[i], whyValues(whys[i]))
		for k := range ms[i] {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	slices.Sort(names)
	cw := csv.NewWriter(w)
	cw.Write(append([]string{"side", "preset", "system", "model", "dataset", "seed"}, names...))
	for i, r := range rs {
		row := []string{sides[i].Name, r.Preset, r.System, r.Model, r.Dataset, fmt.Sprint(r.Seed)}
		for _, k := range names {
			v, ok := ms[i][k]
			if ok {
				row = append(row, ff(v))
			} else {
				row = append(row, "")
			}
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// streamDesc describes the request stream every side serves.
func streamDesc(c sim.Config) string {
	w := c.Workload
	ds, n, arr := w.Stream()
	if arr == "" {
		arr = "closed loop"
	}
	s := fmt.Sprintf("%s · %d requests · %s · seed %d · prefill %s", ds, n, arr, w.Seed, w.Prefill)
	if w.Steps > 0 {
		s += fmt.Sprintf(" · %d steps", w.Steps)
	}
	if w.Warmup > 0 {
		s += fmt.Sprintf(" · warm-up %d", w.Warmup)
	}
	return s
}

// compareRow is one numeric row of the comparison table.
type compareRow struct {
	label  string
	format string // for fmt, of the value
	scale  float64
	value  func(sim.Result) (float64, bool)
}

func field(f func(sim.Result) float64) func(sim.Result) (float64, bool) {
	return func(r sim.Result) (float64, bool) { return f(r), true }
}

func optional(f func(sim.Result) *float64) func(sim.Result) (float64, bool) {
	return func(r sim.Result) (float64, bool) {
		if p := f(r); p != nil {
			return *p, true
		}
		return 0, false
	}
}

// unionKeys lists the keys any side's map has, sorted.
func unionKeys(rs []sim.Result, m func(sim.Result) map[string]float64) []string {
	var out []string
	for _, r := range rs {
		for k := range m(r) {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// writeCompareTable prints one column per side and a ratio column per side after the
// first (B/A, C/A…) for every figure.
func writeCompareTable(w io.Writer, sides []resolvedSide, rs []sim.Result) error {
	a := sides[0].Config
	fmt.Fprintf(w, "every side serves side A's requests: %s\n", streamDesc(a))
	var models []string
	differ := false
	for i, s := range sides {
		models = append(models, ui.SideLetter(i)+" "+s.Config.Model.Name)
		differ = differ || s.Config.Model.Name != a.Model.Name
	}
	if differ {
		fmt.Fprintf(w, "the models differ: %s\n", strings.Join(models, " · "))
	}
	fmt.Fprintln(w)
	rows := []compareRow{
		{"max batch", "%.0f", 1, field(func(r sim.Result) float64 { return float64(r.MaxBatch) })},
		{"requests completed", "%.0f", 1, field(func(r sim.Result) float64 { return float64(r.RequestsCompleted) })},
		{"iterations", "%.0f", 1, field(func(r sim.Result) float64 { return float64(r.Iterations) })},
		{"simulated s", "%.4g", 1, field(func(r sim.Result) float64 { return r.SimTimeS })},
		{"throughput tok/s", "%.1f", 1, field(func(r sim.Result) float64 { return r.ThroughputTokS })},
		{"iteration ms mean", "%.3f", 1, field(func(r sim.Result) float64 { return r.IterationMS.Mean })},
		{"iteration ms p50", "%.3f", 1, field(func(r sim.Result) float64 { return r.IterationMS.P50 })},
		{"iteration ms p99", "%.3f", 1, field(func(r sim.Result) float64 { return r.IterationMS.P99 })},
		{"TBT ms p50", "%.3f", 1, field(func(r sim.Result) float64 { return r.TBTMS.P50 })},
		{"TBT ms p99", "%.3f", 1, field(func(r sim.Result) float64 { return r.TBTMS.P99 })},
		{"TTFT ms p50", "%.3f", 1, field(func(r sim.Result) float64 { return r.TTFTMS.P50 })},
		{"TTFT ms p99", "%.3f", 1, field(func(r sim.Result) float64 { return r.TTFTMS.P99 })},
		{"mean batch", "%.1f", 1, field(func(r sim.Result) float64 { return r.MeanBatch })},
		{"preemptions", "%.0f", 1, field(func(r sim.Result) float64 { return float64(r.Preemptions) })},
	}
	for _, k := range unionKeys(rs, func(r sim.Result) map[string]float64 { return r.Utilization }) {
		rows = append(rows, compareRow{"utilization " + k, "%.1f%%", 100, func(r sim.Result) (float64, bool) { v, ok := r.Utilization[k]; return v, ok }})
	}
	for _, k := range unionKeys(rs, func(r sim.Result) map[string]float64 { return r.BubbleFraction }) {
		rows = append(rows, compareRow{"idle " + k, "%.1f%%", 100, func(r sim.Result) (float64, bool) { v, ok := r.BubbleFraction[k]; return v, ok }})
	}
	rows = append(rows,
		compareRow{"KV peak blocks", "%.0f", 1, field(func(r sim.Result) float64 { return float64(r.KV.PeakBlocksUsed) })},
		compareRow{"KV peak utilization", "%.1f%%", 100, field(func(r sim.Result) float64 { return r.KV.PeakUtilization })},
		compareRow{"KV peak fragmentation", "%.1f%%", 100, field(func(r sim.Result) float64 { return r.KV.PeakFragmentation })},
	)
	for _, o := range []compareRow{
		{"load imbalance", "%.3f", 1, optional(func(r sim.Result) *float64 { return r.LoadImbalance })},
		{"energy J", "%.4g", 1, optional(func(r sim.Result) *float64 { return r.EnergyJ })},
	} {
		for _, r := range rs {
			if _, ok := o.value(r); ok {
				rows = append(rows, o)
				break
			}
		}
	}

	// Every line has a cell for every column, so the columns align through the text
	// rows; the padding this leaves at the ends of lines is trimmed.
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
	head := []string{""}
	for i := range sides {
		head = append(head, ui.SideLetter(i))
	}
	for i := 1; i < len(sides); i++ {
		head = append(head, ui.SideLetter(i)+"/A")
	}
	line(head...)
	text := func(label string, f func(i int) string) {
		cells := []string{label}
		for i := range sides {
			cells = append(cells, f(i))
		}
		line(append(cells, make([]string, len(sides)-1)...)...)
	}
	text("side", func(i int) string { return sides[i].Name })
	text("system", func(i int) string { return rs[i].System })
	text("model", func(i int) string { return rs[i].Model })
	for _, row := range rows {
		cells := []string{row.label}
		var vals []float64
		var has []bool
		for _, r := range rs {
			v, ok := row.value(r)
			vals, has = append(vals, v), append(has, ok)
			if ok {
				cells = append(cells, fmt.Sprintf(row.format, v*row.scale))
			} else {
				cells = append(cells, "–")
			}
		}
		for i := 1; i < len(rs); i++ {
			cells = append(cells, ratioText(vals[0], vals[i], has[0] && has[i]))
		}
		line(cells...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for l := range strings.Lines(buf.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(l, " \n")); err != nil {
			return err
		}
	}
	return nil
}

// ratioText is b/a, or – where it means nothing (a side lacks the figure, or a is 0).
func ratioText(a, b float64, ok bool) string {
	if !ok || a == 0 || math.IsNaN(b/a) {
		return "–"
	}
	return fmt.Sprintf("%.3f×", b/a)
}
