package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/presets/experiment"
	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var o options
	var vary []string
	var metric, format string
	var plot bool
	c := &cobra.Command{
		Use:   "sweep --preset A[,B…] --vary KEY=V1,V2,… [--vary KEY2=…]",
		Short: "Run presets over the cross product of parameter values, on every core",
		Long: `Run every preset named by --preset at every combination of the --vary values and
print one row per run: the preset, the varied values and the chosen metric. A varied KEY is
an override flag (batch, model, dataset, input-len, output-len, arrival, requests, steps,
seed, prefill) or any preset key (pimtui presets keys lists them). --metric is a numeric
field of the JSON result (pimtui run --format json), dotted for nested ones:
throughput_tok_s, mean_batch, iteration_ms.p99, tbt_ms.p50, utilization.pim …
The runs are spread over the machine's cores; the results do not depend on how many.

  pimtui sweep --preset neupims,npu-only --vary batch=64,128,256,512 --plot`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "table", "json", "csv":
			default:
				return usagef("--format %q: want table, json or csv", format)
			}
			if plot && format != "table" {
				return usagef("--plot draws a chart after the table; it does not mix with --format %s", format)
			}
			if o.requestTrace != "" {
				return usagef("sweep runs generated workloads; --request-trace is for pimtui run")
			}
			spec, err := sweepSpec(cmd, &o, vary)
			if err != nil {
				return err
			}
			if err := checkMetric(spec, metric); err != nil {
				return err
			}
			if p := progressTo(stderr); p != nil {
				start := time.Now()
				var shown time.Time
				spec.Progress = func(done, total int) {
					if now := time.Now(); now.Sub(shown) > 100*time.Millisecond || done == total {
						shown = now
						fmt.Fprintf(p, "\r\x1b[K%s %d/%d runs · %.1f s", progressBar(float64(done)/float64(total), 30), done, total, now.Sub(start).Seconds())
					}
				}
				defer fmt.Fprint(p, "\r\x1b[K")
			}
			rows, err := experiment.Sweep(spec)
			if err != nil {
				return usageError{err}
			}
			return writeSweep(stdout, spec, rows, metric, format, plot)
		},
	}
	o.register(c)
	f := c.Flags()
	f.Lookup("preset").Usage = "presets to sweep, comma-separated (pimtui presets lists them)"
	f.StringArrayVar(&vary, "vary", nil, "KEY=V1,V2,… : a parameter and its values (repeatable: the cross product runs)")
	f.StringVar(&metric, "metric", "throughput_tok_s", "JSON result field to report and plot, e.g. iteration_ms.p99")
	f.StringVar(&format, "format", "table", "output: table, json or csv")
	f.BoolVar(&plot, "plot", false, "draw the metric against the first varied key, one curve per preset")
	return c
}

// varyNames are the override flags --vary accepts besides preset keys.
func varyNames() []string {
	out := make([]string, 0, len(overrideKeys))
	for _, k := range overrideKeys {
		out = append(out, k.flag)
	}
	return out
}

// sweepSpec builds the sweep the command line asks for: the presets, the overrides
// applied to every run and one axis per --vary.
func sweepSpec(cmd *cobra.Command, o *options, vary []string) (experiment.SweepSpec, error) {
	var spec experiment.SweepSpec
	if o.config != "" {
		if cmd.Flags().Changed("preset") {
			return spec, usagef("--preset and --config are exclusive; pick one")
		}
		data, err := readPresetFile(o.config)
		if err != nil {
			return spec, err
		}
		if _, err := presets.Parse(o.config, data); err != nil {
			return spec, usageError{err}
		}
		spec.Presets = []string{o.config}
		spec.Load = func(name string) (*presets.File, error) { return presets.Parse(name, data) }
	} else {
		for _, p := range strings.Split(o.preset, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if _, err := presets.Get(p); err != nil {
				return spec, usageError{err}
			}
			if slices.Contains(spec.Presets, p) {
				return spec, usagef("--preset names %q twice", p)
			}
			spec.Presets = append(spec.Presets, p)
		}
		if len(spec.Presets) == 0 {
			return spec, usagef("--preset: name at least one preset, e.g. --preset neupims,npu-only")
		}
	}
	base, err := o.overrides(cmd)
	if err != nil {
		return spec, err
	}
	spec.Base = base
	if len(vary) == 0 {
		return spec, usagef("sweep needs at least one --vary KEY=V1,V2,…, e.g. --vary batch=64,128,256")
	}
	keys := presets.Keys()
	paths := make([]string, len(keys))
	for i, k := range keys {
		paths[i] = k.Key
	}
	for _, v := range vary {
		name, vals, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.TrimSpace(vals) == "" {
			return spec, usagef("--vary %q: want KEY=V1,V2,…, e.g. --vary batch=64,128,256", v)
		}
		if slices.ContainsFunc(spec.Axes, func(a experiment.Axis) bool { return a.Name == name }) {
			return spec, usagef("--vary %s given twice; list all its values in one --vary", name)
		}
		if !slices.Contains(varyNames(), name) && !slices.Contains(paths, name) {
			msg := fmt.Sprintf("--vary %s: unknown key", name)
			if c := presets.Closest(name, append(varyNames(), paths...), 3); len(c) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", c[0])
			}
			return spec, usagef("%s (an override flag such as batch, or a key from pimtui presets keys)", msg)
		}
		ax := experiment.Axis{Name: name}
		for _, val := range strings.Split(vals, ",") {
			val = strings.TrimSpace(val)
			if val == "" {
				return spec, usagef("--vary %q: an empty value", v)
			}
			sets, isFlag, err := flagSets(name, val)
			if err != nil {
				return spec, err
			}
			if !isFlag {
				sets = []string{name + "=" + val}
			}
			ax.Levels = append(ax.Levels, experiment.Level{Label: val, Sets: sets})
		}
		spec.Axes = append(spec.Axes, ax)
	}
	// Every point's overrides are checked before anything runs.
	for _, p := range spec.Presets {
		if _, err := spec.Config(p, nil); err != nil {
			return spec, usageError{err}
		}
		for _, lv := range spec.Points() {
			if _, err := spec.Config(p, lv); err != nil {
				return spec, usageError{fmt.Errorf("--vary: %w", err)}
			}
		}
	}
	return spec, nil
}

// checkMetric checks name against the numeric fields of the JSON result of the swept
// systems (bubble_fraction lanes are known only after a run and are checked then).
func checkMetric(spec experiment.SweepSpec, name string) error {
	var lanes []string
	for _, p := range spec.Presets {
		cfg, err := spec.Config(p, make([]int, len(spec.Axes)))
		if err != nil {
			continue
		}
		if e, err := sim.New(cfg); err == nil {
			for _, k := range e.UtilKeys() {
				if !slices.Contains(lanes, k) {
					lanes = append(lanes, k)
				}
			}
		}
	}
	names := sim.MetricNames(lanes)
	if slices.Contains(names, name) || strings.HasPrefix(name, "bubble_fraction.") && len(name) > len("bubble_fraction.") ||
		sim.IsCauseMetric(name) {
		return nil
	}
	msg := fmt.Sprintf("--metric %q: not a numeric field of the result", name)
	if c := presets.Closest(name, names, 3); len(c) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", c[0])
	}
	return usagef("%s (fields: %s)", msg, strings.Join(names, ", "))
}

// sweepValue is a row's metric, NaN when the run failed or the result lacks it.
func sweepValue(r experiment.SweepRow, metric string) float64 {
	if r.Err != nil {
		return math.NaN()
	}
	if v, ok := r.Result.MetricValues()[metric]; ok {
		return v
	}
	return math.NaN()
}

// sweepJSONRow is one row of `sweep --format json`.
type sweepJSONRow struct {
	Preset string            `json:"preset"`
	Values map[string]string `json:"values"`
	Value  *float64          `json:"value"`
	Error  string            `json:"error,omitempty"`
	Result *sim.Result       `json:"result,omitempty"`
}

func writeSweep(w io.Writer, spec experiment.SweepSpec, rows []experiment.SweepRow, metric, format string, plot bool) error {
	// A lane group that no run has is a mistake, not a column of dashes.
	for _, prefix := range []string{"bubble_fraction.", "bubble_by_cause."} {
		if !strings.HasPrefix(metric, prefix) {
			continue
		}
		found := false
		var have []string
		for _, r := range rows {
			for k := range r.Result.MetricValues() {
				if strings.HasPrefix(k, prefix) {
					have = append(have, k)
					found = found || k == metric
				}
			}
		}
		if !found {
			slices.Sort(have)
			return usagef("--metric %q: no run has it; these did: %s", metric, strings.Join(slices.Compact(have), ", "))
		}
	}
	names := make([]string, len(spec.Axes))
	for i, a := range spec.Axes {
		names[i] = a.Name
	}
	switch format {
	case "json":
		out := struct {
			Metric string         `json:"metric"`
			Vary   []string       `json:"vary"`
			Rows   []sweepJSONRow `json:"rows"`
		}{Metric: metric, Vary: names}
		for _, r := range rows {
			jr := sweepJSONRow{Preset: r.Preset, Values: map[string]string{}}
			for i, n := range names {
				jr.Values[n] = r.Labels[i]
			}
			if v := sweepValue(r, metric); !math.IsNaN(v) {
				jr.Value = &v
			}
			if r.Err != nil {
				jr.Error = r.Err.Error()
			} else {
				res := r.Result
				jr.Result = &res
			}
			out.Rows = append(out.Rows, jr)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(append(append([]string{"preset"}, names...), metric, "error"))
		for _, r := range rows {
			v, e := "", ""
			if x := sweepValue(r, metric); !math.IsNaN(x) {
				v = ff(x)
			}
			if r.Err != nil {
				e = r.Err.Error()
			}
			cw.Write(append(append([]string{r.Preset}, r.Labels...), v, e))
		}
		cw.Flush()
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(append(append([]string{"PRESET"}, names...), metric), "\t"))
	failed := 0
	for _, r := range rows {
		v := fmtMetric(sweepValue(r, metric))
		if r.Err != nil {
			v = "- (" + firstLine(r.Err.Error()) + ")"
			failed++
		}
		fmt.Fprintln(tw, strings.Join(append(append([]string{r.Preset}, r.Labels...), v), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if plot {
		width := 80
		if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
			if tw, _, err := term.GetSize(f.Fd()); err == nil && tw > 20 {
				width = min(tw, 120)
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, ui.Plot(sweepPlot(spec, rows, metric), width, 20, colorOn(w)))
	}
	return nil
}

// sweepPlot turns a sweep into a chart of the metric against the first varied key: one
// curve per preset (and per combination of the other varied keys). A key whose values
// are not all numbers becomes a categorical axis.
func sweepPlot(spec experiment.SweepSpec, rows []experiment.SweepRow, metric string) ui.PlotData {
	ax := spec.Axes[0]
	xs := make([]float64, len(ax.Levels))
	numeric := true
	for i, l := range ax.Levels {
		v, err := strconv.ParseFloat(strings.TrimPrefix(l.Label, "poisson:"), 64)
		if err != nil {
			numeric = false
		}
		xs[i] = v
	}
	d := ui.PlotData{Title: fmt.Sprintf("%s against %s", metric, ax.Name), XLabel: ax.Name, YLabel: metric}
	if !numeric {
		for i, l := range ax.Levels {
			xs[i] = float64(i)
			d.XTicks = append(d.XTicks, l.Label)
		}
	}
	index := map[string]int{}
	for _, r := range rows {
		name := r.Preset
		if len(r.Labels) > 1 {
			var rest []string
			for i, l := range r.Labels[1:] {
				rest = append(rest, spec.Axes[i+1].Name+"="+l)
			}
			name += " " + strings.Join(rest, " ")
		}
		i, ok := index[name]
		if !ok {
			i = len(d.Series)
			index[name] = i
			d.Series = append(d.Series, ui.Series{Name: name})
		}
		j := slices.IndexFunc(ax.Levels, func(l experiment.Level) bool { return l.Label == r.Labels[0] })
		d.Series[i].X = append(d.Series[i].X, xs[j])
		d.Series[i].Y = append(d.Series[i].Y, sweepValue(r, metric))
	}
	return d
}
