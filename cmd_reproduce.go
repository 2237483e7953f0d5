package main

import (
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
	"github.com/pimtui/pimtui/ui"
)

// evaluate and measureTrend run the expectations, validate and referenceNames the
// references' checks; tests replace them to check the command without the full grids.
var (
	evaluate       = experiment.EvaluateIDs
	measureTrend   = experiment.MeasureTrend
	validate       = experiment.Validations
	referenceNames = experiment.References
)

// validationFamily is the word, in place of a family, for the checks against references
// measured outside pimtui.
const validationFamily = "validation"

func newReproduceCmd(stdout, stderr io.Writer) *cobra.Command {
	var o reproduceOpts
	c := &cobra.Command{
		Use:   "reproduce [FAMILY|validation|all]",
		Short: "Run the papers' headline experiments and the checks against measured references",
		Long: `Run every experiment the presets of a family declare (all families by default),
measured as its paper measured it (steady state or whole runs), and print, for each, the
conditions it averages over, the method, the paper's value, pimtui's value, their ratio and
whether it matches by the one scoring rule (a speed-up: ratio and its logarithm each within
±25% of the paper's; tokens/s within ±15%; a utilisation within ±0.05); where pimtui does
not reproduce the paper, the first line of the declared reason. Grids smaller than the
paper's are marked * and say why. Where an experiment is a curve over batch size, a chart
redraws it for the preset and its baselines. The full set takes about a minute on two
cores; --list prints the experiments without running them.

"validation" in place of a family runs the checks against references measured outside
pimtui (the NeuPIMs authors' simulator, a real H100's decode layer, LoL-PIM's measured
Table 8) and prints, by reference, each check's reference and pimtui figures, the error,
the tolerance it is held to and whether it is within; --detail adds the finer checks
(stages, ops, parts of a layer). "all" prints them after the papers' claims, unless
--experiment picks experiments.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("reproduce takes one family, validation or all; pimtui presets lists the families")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := planReproduce(o, args)
			if err != nil {
				return err
			}
			if o.list {
				return writeReproduce(stdout, r.exps, nil, o.format, false, nil)
			}
			trends, vs, err := r.results(r.measure(progressTo(stderr)))
			if err != nil {
				return err
			}
			return r.write(stdout, trends, vs)
		},
	}
	f := c.Flags()
	f.StringVar(&o.format, "format", "table", "output: table or json")
	f.StringVar(&o.only, "preset", "", "only the experiments this preset declares")
	f.StringSliceVar(&o.ids, "experiment", nil, "only the experiments with these ids (comma-separated)")
	f.BoolVar(&o.list, "list", false, "list the experiments without running them")
	f.BoolVar(&o.noChart, "no-chart", false, "skip the curves (they cost a few extra runs)")
	f.BoolVar(&o.detail, "detail", false, "validation and all: add the finer checks (stages, ops, parts of a layer)")
	return c
}

// reproduceOpts are the reproduce command's flags.
type reproduceOpts struct {
	format, only          string
	ids                   []string
	list, noChart, detail bool
}

// reproduceRun is what one reproduce command measures: the papers' experiments it picked
// and, with checks, the references measured outside pimtui, run beside them.
type reproduceRun struct {
	reproduceOpts
	family     string
	validation bool // the checks alone, in place of a family
	checks     bool // the checks at all
	exps       []reproduction
	refs       []string
}

// planReproduce checks the command's flags and arguments together and picks the
// experiments and references it runs.
func planReproduce(o reproduceOpts, args []string) (*reproduceRun, error) {
	switch o.format {
	case "table", "json":
	default:
		return nil, usagef("--format %q: want table or json", o.format)
	}
	r := &reproduceRun{reproduceOpts: o, family: "all"}
	if len(args) == 1 {
		r.family = args[0]
	}
	r.validation = r.family == validationFamily
	r.checks = r.validation || r.family == "all" && len(o.ids) == 0 && !o.list
	switch {
	case r.validation && o.list:
		return nil, usagef("--list lists the papers' experiments; the validation checks are known only by running them: pimtui reproduce validation")
	case r.validation && len(o.ids) > 0:
		return nil, usagef("--experiment picks papers' experiments, which validation does not run: pimtui reproduce validation [--preset P] checks the figures measured outside pimtui")
	}
	if !r.validation {
		var err error
		if r.exps, err = declared(r.family, o.only, o.ids, r.checks); err != nil {
			return nil, err
		}
	} else if o.only != "" {
		if _, err := presets.Get(o.only); err != nil {
			return nil, usageError{err}
		}
	}
	switch {
	case o.detail && !r.validation && r.family != "all":
		return nil, usagef("--detail adds the finer validation checks (stages, ops, parts of a layer), which family %s does not run: pimtui reproduce validation --detail", r.family)
	case o.detail && !r.checks:
		return nil, usagef("--detail adds the finer validation checks, which --list and --experiment leave out: pimtui reproduce validation --detail")
	}
	if r.checks {
		r.refs = referenceNames()
		if r.validation && len(r.refs) == 0 {
			return nil, fmt.Errorf("this pimtui has no checks against references measured outside it")
		}
	}
	return r, nil
}

// measuredPreset is one preset's outcomes and, where it draws one, its curve.
type measuredPreset struct {
	name  string
	outs  []experiment.Outcome
	trend *experiment.Trend
	err   error
}

// checkedReference is one reference's checks.
type checkedReference struct {
	checks []experiment.Check
	err    error
}

// measure runs every preset of the picked experiments and every reference at once: the
// runs share the machine's cores (the presets package caps how many run together), so
// one family's last long run does not leave the other core idle. progress, when not nil,
// shows what is left.
func (r *reproduceRun) measure(progress io.Writer) ([]measuredPreset, []checkedReference) {
	start := time.Now()
	var res []measuredPreset
	for _, x := range r.exps {
		if !slices.ContainsFunc(res, func(m measuredPreset) bool { return m.name == x.Preset }) {
			res = append(res, measuredPreset{name: x.Preset})
		}
	}
	checked := make([]checkedReference, len(r.refs))
	finished := make(chan int)
	for i := range res {
		go func() {
			m := &res[i]
			defer func() { finished <- i }()
			if m.outs, m.err = evaluate(m.name, r.ids); m.err != nil {
				return
			}
			plan, ok, err := experiment.TrendPlan(m.name)
			if err == nil && ok && !r.noChart && slices.ContainsFunc(r.exps, func(y reproduction) bool { return y.Preset == m.name && y.ID == plan.Expect }) {
				t, err := measureTrend(plan)
				m.trend, m.err = &t, err
			}
		}()
	}
	for i, ref := range r.refs {
		go func() {
			defer func() { finished <- len(res) + i }()
			checked[i].checks, checked[i].err = validate(ref)
		}()
	}
	presetsLeft, refsLeft := len(res), len(r.refs)
	for n := range len(res) + len(r.refs) {
		if progress != nil {
			fmt.Fprintf(progress, "\r\x1b[K%s measuring %s · %.0f s", progressBar(float64(n)/float64(len(res)+len(r.refs)), 30), measuring(presetsLeft, refsLeft), time.Since(start).Seconds())
		}
		if <-finished < len(res) {
			presetsLeft--
		} else {
			refsLeft--
		}
	}
	if progress != nil {
		fmt.Fprint(progress, "\r\x1b[K")
	}
	return res, checked
}

// results gives each experiment its outcome and gathers the curves and, with checks, the
// references' checks; the first error, by preset and then by reference, ends the command.
func (r *reproduceRun) results(res []measuredPreset, checked []checkedReference) ([]experiment.Trend, *validations, error) {
	var trends []experiment.Trend
	for _, m := range res {
		if m.err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.name, m.err)
		}
		for _, o := range m.outs {
			for j := range r.exps {
				if r.exps[j].Preset == o.Preset && r.exps[j].ID == o.ID {
					r.exps[j].Outcome = &o
				}
			}
		}
		if m.trend != nil && !drawn(trends, *m.trend) {
			trends = append(trends, *m.trend)
		}
	}
	if !r.checks {
		return trends, nil, nil
	}
	vs := &validations{detail: r.detail, preset: r.only}
	for _, c := range checked {
		if c.err != nil {
			return nil, nil, fmt.Errorf("validation: %w", c.err)
		}
		vs.checks = append(vs.checks, c.checks...)
	}
	if err := vs.pick(r.validation); err != nil {
		return nil, nil, err
	}
	if len(r.exps) == 0 && len(vs.checks) == 0 {
		return nil, nil, usagef("preset %s declares no paper experiments, and no reference measured outside pimtui checks it", r.only)
	}
	return trends, vs, nil
}

// write prints the experiments' table (or JSON) with the checks after it, or the checks
// alone.
func (r *reproduceRun) write(w io.Writer, trends []experiment.Trend, vs *validations) error {
	if r.validation && r.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Validations *[]validationRow `json:"validations"`
		}{vs.rows()})
	}
	if r.validation {
		return vs.table(w)
	}
	return writeReproduce(w, r.exps, trends, r.format, true, vs)
}

// measuring says what is still being measured: "12 presets and 3 references".
func measuring(presetsLeft, refsLeft int) string {
	var parts []string
	if presetsLeft > 0 {
		parts = append(parts, fmt.Sprintf("%d presets", presetsLeft))
	}
	if refsLeft > 0 {
		parts = append(parts, fmt.Sprintf("%d references", refsLeft))
	}
	return strings.Join(parts, " and ")
}

// conditions summarises an expectation's grid: models, datasets, batch sizes.
func conditions(e presets.Expect) string {
	count := func(xs []string, many string) string {
		if len(xs) == 1 {
			return xs[0]
		}
		return fmt.Sprintf("%d %s", len(xs), many)
	}
	var ds []string
	for _, d := range e.Grid.Dataset {
		if !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	for _, m := range e.Grid.ModelDataset {
		for _, d := range m {
			if !slices.Contains(ds, d) {
				ds = append(ds, d)
			}
		}
	}
	parts := []string{count(e.Grid.Model, "models"), count(ds, "datasets")}
	if b := e.Grid.Batch; len(b) == 1 {
		parts = append(parts, "batch "+strconv.Itoa(b[0]))
	} else if len(b) > 1 {
		parts = append(parts, fmt.Sprintf("batch %d–%d", slices.Min(b), slices.Max(b)))
	}
	return strings.Join(parts, " × ")
}

// paperValue prints the paper's figure: a ratio against the baseline, or a value.
func paperValue(e presets.Expect, v float64) string {
	if e.Versus == "" {
		return fmtMetric(v) + " " + shortMetric(e.Metric)
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "× " + e.Versus
}

// reproduceRow is one experiment of `reproduce --format json`.
type reproduceRow struct {
	Family     string   `json:"family"`
	Preset     string   `json:"preset"`
	ID         string   `json:"id"`
	Claim      string   `json:"claim"`
	Source     string   `json:"source"`
	Metric     string   `json:"metric"`
	Versus     string   `json:"versus,omitempty"`
	BestOf     []string `json:"best_of,omitempty"`
	Conditions string   `json:"conditions"`
	Reduced    string   `json:"reduced,omitempty"`
	Method     string   `json:"method"`
	MethodNote string   `json:"method_note,omitempty"`
	Paper      float64  `json:"paper"`
	Rule       string   `json:"rule"`
	Reproduced bool     `json:"declared_reproduced"`
	Gap        string   `json:"gap,omitempty"`
	Pimtui     *float64 `json:"pimtui,omitempty"`
	Ratio      *float64 `json:"ratio,omitempty"`
	Within     *bool    `json:"within,omitempty"`
	Points     *int     `json:"points,omitempty"`
	Skipped    *int     `json:"skipped,omitempty"`
	// FLOPUtilization is each system's mean flop_utilization over the grid, for the
	// systems of the comparison that report one.
	FLOPUtilization map[string]float64 `json:"flop_utilization,omitempty"`
}

// methodText says how an experiment's runs are measured.
func methodText(e presets.Expect) string {
	if e.Method == "whole" {
		if e.Requests > 0 {
			return fmt.Sprintf("whole runs of %s requests", ui.Thousands(e.Requests))
		}
		return "whole runs of one batch"
	}
	if e.Warmup == 0 {
		return fmt.Sprintf("steady state: closed loop kept full, %s iterations measured from the start", ui.Thousands(e.Steps))
	}
	return fmt.Sprintf("steady state: closed loop kept full, %s warm-up + %s measured iterations", ui.Thousands(e.Warmup), ui.Thousands(e.Steps))
}

// trendJSON is one redrawn curve of `reproduce --format json`.
type trendJSON struct {
	Preset     string         `json:"preset"`
	Experiment string         `json:"experiment"`
	Metric     string         `json:"metric"`
	Model      string         `json:"model"`
	Dataset    string         `json:"dataset"`
	Batches    []int          `json:"batches"`
	Series     []trendSeriesJ `json:"series"`
}

type trendSeriesJ struct {
	Preset string     `json:"preset"`
	Values []*float64 `json:"values"` // null where the system runs out of memory
}

// writeReproduce prints the experiments, run or only listed, their curves and, where v
// is not nil, the validation checks after them.
func writeReproduce(w io.Writer, exps []reproduction, trends []experiment.Trend, format string, ran bool, v *validations) error {
	if format == "json" {
		out := struct {
			Experiments []reproduceRow   `json:"experiments,omitempty"`
			Trends      []trendJSON      `json:"trends,omitempty"`
			Validations *[]validationRow `json:"validations,omitempty"`
		}{Validations: v.rows()}
		for _, x := range exps {
			r := reproduceRow{Family: x.Family, Preset: x.Preset, ID: x.ID, Claim: x.Claim, Source: x.Source, Metric: x.Metric,
				Versus: x.Versus, BestOf: x.BestOf, Conditions: conditions(x.Expect), Reduced: oneLine(x.Reduced),
				Method: methodText(x.Expect), MethodNote: oneLine(x.MethodNote), Paper: x.Target(), Rule: experiment.KindOf(x.Expect).Rule(),
				Reproduced: x.Expect.Reproduced, Gap: oneLine(x.Gap)}
			if o := x.Outcome; o != nil {
				m, ratio := o.Measured, o.Measured/x.Target()
				r.Pimtui, r.Ratio, r.Within, r.Points, r.Skipped = &m, &ratio, &o.Within, &o.Points, &o.Skipped
				r.FLOPUtilization = o.FLOPUtilization
			}
			out.Experiments = append(out.Experiments, r)
		}
		for _, t := range trends {
			tj := trendJSON{Preset: t.Preset, Experiment: t.Expect, Metric: t.Metric, Model: t.Model, Dataset: t.Dataset, Batches: t.Batches}
			for _, s := range t.Series {
				sj := trendSeriesJ{Preset: s.Preset}
				for _, v := range s.Values {
					if math.IsNaN(v) {
						sj.Values = append(sj.Values, nil)
					} else {
						sj.Values = append(sj.Values, &v)
					}
				}
				tj.Series = append(tj.Series, sj)
			}
			out.Trends = append(out.Trends, tj)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(exps) == 0 && v != nil {
		return v.table(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !ran {
		fmt.Fprintln(tw, "FAMILY\tPRESET\tEXPERIMENT\tCONDITIONS\tMETHOD\tPAPER\tCLAIM")
		for _, x := range exps {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.Family, x.Preset, x.ID, conditionsCell(x), methodCell(x.Expect), paperValue(x.Expect, x.Target()), x.Claim)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeReduced(w, exps)
		return nil
	}
	match, total := 0, 0
	for _, x := range exps {
		if x.Outcome != nil {
			total++
			if x.Outcome.Within {
				match++
			}
		}
	}
	fmt.Fprintf(w, "%d of %d claims match the paper (a speed-up: ratio within ±25%% and its logarithm within ±25%%; tokens/s within ±15%%; a utilisation within ±0.05)\n\n", match, total)
	fmt.Fprintln(tw, "FAMILY\tPRESET\tEXPERIMENT\tCONDITIONS\tMETHOD\tPAPER\tPIMTUI\tPIMTUI/PAPER\tWITHIN\tFLOP UTIL\tGAP")
	for _, x := range exps {
		o := x.Outcome
		if o == nil {
			continue
		}
		v := fmtMetric(o.Measured) + " " + shortMetric(x.Metric)
		paper := paperValue(x.Expect, x.Target())
		if x.Versus != "" {
			v = strconv.FormatFloat(o.Measured, 'f', 2, 64) + "×"
		}
		within, gap := "no", ""
		if o.Within {
			within = "yes"
		} else {
			gap = gapLine(x.Gap)
		}
		cond := conditionsCell(x)
		if o.Skipped > 0 {
			cond += fmt.Sprintf(" (%d of %d points fit)", o.Points, o.Points+o.Skipped)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\n", x.Family, x.Preset, x.ID, cond, methodCell(x.Expect), paper, v, o.Measured/x.Target(), within, utilCell(x), gap)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeReduced(w, exps)
	fmt.Fprintln(w, utilLegend)
	width := 80
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		if tw, _, err := term.GetSize(f.Fd()); err == nil && tw > 20 {
			width = min(tw, 120)
		}
	}
	for _, t := range trends {
		fmt.Fprintln(w)
		fmt.Fprintln(w, ui.Plot(trendPlot(t), width, 20, colorOn(w)))
	}
	if v != nil {
		fmt.Fprintln(w)
		return v.table(w)
	}
	return nil
}

// conditionsCell is an experiment's conditions, marked * where its grid is smaller than
// the paper's.
func conditionsCell(x reproduction) string {
	c := conditions(x.Expect)
	if x.Reduced != "" {
		c += " *"
	}
	return c
}

// writeReduced explains the method cells and lists, under the table, why each grid marked
// * is smaller than the paper's.
func writeReduced(w io.Writer, exps []reproduction) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, methodLegend)
	var seen []string
	for _, x := range exps {
		note := oneLine(x.Reduced)
		if note == "" || slices.Contains(seen, note) {
			continue
		}
		seen = append(seen, note)
		fmt.Fprintf(w, "* %s %s: %s\n", x.Preset, x.ID, note)
	}
}

// methodCell is methodText short enough for the table: "steady 2,048+512" (warm-up +
// measured iterations), "whole 1,000" (requests), "whole 1 batch".
func methodCell(e presets.Expect) string {
	if e.Method == "whole" {
		if e.Requests > 0 {
			return "whole " + ui.Thousands(e.Requests)
		}
		return "whole 1 batch"
	}
	return "steady " + ui.Thousands(e.Warmup) + "+" + ui.Thousands(e.Steps)
}

// utilCell is the FLOP utilisation of each system of an experiment, the preset first and
// then its baselines ("49% · 1.7%"), — for a system that reports none; empty when none does.
func utilCell(x reproduction) string {
	u := x.Outcome.FLOPUtilization
	if len(u) == 0 {
		return ""
	}
	var cells []string
	for _, sys := range append([]string{x.Preset, x.Versus}, x.BestOf...) {
		if sys == "" {
			continue
		}
		v, ok := u[sys]
		switch {
		case !ok:
			cells = append(cells, "—")
		case v >= 0.095:
			cells = append(cells, fmt.Sprintf("%.0f%%", 100*v))
		default:
			cells = append(cells, fmt.Sprintf("%.1f%%", 100*v))
		}
	}
	return strings.Join(cells, " · ")
}

// utilLegend explains the table's utilisation cells.
const utilLegend = "FLOP UTIL: useful FLOPs over the peak FLOP rate of the compute units × the time (flop_utilization), the preset first, then what it is compared with; — where a system reports none."

// methodLegend explains the table's method cells.
const methodLegend = "METHOD: steady W+S = a closed loop kept full, W warm-up iterations, then S measured; whole N = N requests served end to end, all output tokens over all the time."

// oneLine joins a multi-line text from a preset file into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// gapLine is the first line of a declared gap, cut at a word near 90 characters.
func gapLine(gap string) string {
	s := firstLine(gap)
	if r := []rune(s); len(r) > 90 {
		cut := strings.LastIndex(string(r[:89]), " ")
		if cut < 40 {
			cut = len(string(r[:89]))
		}
		s = strings.TrimRight(s[:cut], " ,;:") + "…"
	}
	return s
}

// trendPlot is a trend as a chart: one curve per system against batch size.
func trendPlot(t experiment.Trend) ui.PlotData {
	var par []string
	if t.TP > 0 {
		par = append(par, fmt.Sprintf("tp %d", t.TP))
	}
	if t.PP > 0 {
		par = append(par, fmt.Sprintf("pp %d", t.PP))
	}
	split := ""
	if len(par) > 0 {
		split = " (" + strings.Join(par, ", ") + ")"
	}
	d := ui.PlotData{Title: fmt.Sprintf("%s: %s against batch size, %s%s on %s", t.Preset, t.Metric, t.Model, split, t.Dataset),
		XLabel: "batch", YLabel: t.Metric}
	for _, s := range t.Series {
		se := ui.Series{Name: s.Preset, Y: s.Values}
		for _, b := range t.Batches {
			se.X = append(se.X, float64(b))
		}
		d.Series = append(d.Series, se)
	}
	return d
}

// drawn reports whether an earlier curve already shows every system of plan under the
// same conditions (a baseline's own experiment against a system the chart has).
func drawn(trends []experiment.Trend, plan experiment.Trend) bool {
	for _, t := range trends {
		if t.Model != plan.Model || t.Dataset != plan.Dataset || t.Metric != plan.Metric || t.TP != plan.TP || t.PP != plan.PP || !slices.Equal(t.Batches, plan.Batches) {
			continue
		}
		all := true
		for _, s := range plan.Series {
			all = all && slices.ContainsFunc(t.Series, func(u experiment.TrendSeries) bool { return u.Preset == s.Preset })
		}
		if all {
			return true
		}
	}
	return false
}

// reproduction is one declared expectation of a preset and, once run, its outcome.
type reproduction struct {
	Family, Preset string
	presets.Expect
	Outcome *experiment.Outcome
}

// declared lists the experiments of family ("all": every family) in preset order,
// optionally those of one preset or with given ids only. None is an error unless
// orNone is set (the validation checks follow the claims).
func declared(family, only string, ids []string, orNone bool) ([]reproduction, error) {
	var fams, known []string
	var out []reproduction
	for _, n := range presets.Names() {
		f, err := presets.Get(n)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(fams, f.Family) {
			fams = append(fams, f.Family)
		}
		if family != "all" && f.Family != family || only != "" && n != only {
			continue
		}
		for _, e := range f.Expect {
			known = append(known, e.ID)
			if len(ids) == 0 || slices.Contains(ids, e.ID) {
				out = append(out, reproduction{Family: f.Family, Preset: n, Expect: e})
			}
		}
	}
	if family != "all" && !slices.Contains(fams, family) {
		msg := fmt.Sprintf("unknown family %q", family)
		if c := presets.Closest(family, append(fams, validationFamily), 1); len(c) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", c[0])
		}
		return nil, usagef("%s (families: all, %s; or %s)", msg, strings.Join(fams, ", "), validationFamily)
	}
	if only != "" {
		if _, err := presets.Get(only); err != nil {
			return nil, usageError{err}
		}
	}
	for _, id := range ids {
		if !slices.Contains(known, id) {
			msg := fmt.Sprintf("--experiment %q: no such experiment here", id)
			if c := presets.Closest(id, known, 1); len(c) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", c[0])
			}
			return nil, usagef("%s (pimtui reproduce --list lists them)", msg)
		}
	}
	if len(out) == 0 && !orNone {
		what := "family " + family
		if only != "" {
			what = "preset " + only
			if family != "all" {
				what += " in family " + family
			}
		}
		return nil, usagef("%s declares no paper experiments", what)
	}
	return out, nil
}

// validations are the checks against references measured outside pimtui that reproduce
// prints: every reference's, or one preset's with --preset; the finer ones with --detail.
type validations struct {
	checks []experiment.Check
	detail bool
	preset string
}

// pick keeps the checks to print. A preset that no reference checks is an error when the
// checks are all that was asked for; after the claims, the section says so instead.
func (v *validations) pick(alone bool) error {
	var kept []experiment.Check
	var checked []string
	for _, c := range v.checks {
		if !slices.Contains(checked, c.Preset) {
			checked = append(checked, c.Preset)
		}
		if (v.preset == "" || c.Preset == v.preset) && (v.detail || !c.Detail) {
			kept = append(kept, c)
		}
	}
	if alone && v.preset != "" && !slices.Contains(checked, v.preset) {
		return usagef("no reference measured outside pimtui checks preset %s; the presets checked are %s", v.preset, strings.Join(checked, ", "))
	}
	v.checks = kept
	return nil
}

// validationRow is one check of `reproduce validation --format json`.
type validationRow struct {
	Reference float64  `json:"reference"` // the reference's figure
	Against   string   `json:"against"`   // the reference's name
	Name      string   `json:"name"`
	Preset    string   `json:"preset"`
	Source    string   `json:"source"`
	Unit      string   `json:"unit"`
	Pimtui    float64  `json:"pimtui"`
	Error     *float64 `json:"error"` // pimtui / reference − 1; null where the reference is 0
	Tolerance float64  `json:"tolerance"`
	Within    bool     `json:"within"`
	Detail    bool     `json:"detail"`
	Gap       string   `json:"gap"`
}

// rows are the checks as JSON rows; nil when there are no validations to print.
func (v *validations) rows() *[]validationRow {
	if v == nil {
		return nil
	}
	rows := []validationRow{}
	for _, c := range v.checks {
		r := validationRow{Reference: c.Ref, Against: c.Reference, Name: c.Name, Preset: c.Preset, Source: c.Source, Unit: c.Unit,
			Pimtui: c.Pimtui, Tolerance: c.Tol, Within: c.Within(), Detail: c.Detail, Gap: oneLine(c.Gap)}
		if e := c.Error(); !math.IsNaN(e) && !math.IsInf(e, 0) {
			r.Error = &e
		}
		rows = append(rows, r)
	}
	return &rows
}

// table prints the checks by reference: a heading saying what the reference is, a row
// per check (its name, preset, the reference's figure and pimtui's, the error, the
// tolerance, whether it is within and, where not, the first line of the reason) and a
// summary line.
func (v *validations) table(w io.Writer) error {
	var refs []string
	for _, c := range v.checks {
		if !slices.Contains(refs, c.Reference) {
			refs = append(refs, c.Reference)
		}
	}
	of := ""
	if v.preset != "" {
		of = " of preset " + v.preset
	}
	in, n, _ := validationScore(v.checks, false)
	if n == 0 {
		_, err := fmt.Fprintf(w, "Validation against references measured outside pimtui: no checks%s\n", of)
		return err
	}
	fmt.Fprintf(w, "Validation against references measured outside pimtui: %d of %d checks%s within their tolerance\n", in, n, of)
	for _, ref := range refs {
		var cs []experiment.Check
		for _, c := range v.checks {
			if c.Reference == ref {
				cs = append(cs, c)
			}
		}
		fmt.Fprintf(w, "\n%s: %s\n", ref, experiment.Describe(ref).Title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECK\tPRESET\tREFERENCE\tPIMTUI\tUNIT\tERROR\tTOL\tWITHIN\tGAP")
		for _, c := range cs {
			name, within, gap := c.Name, "✓", ""
			if c.Detail {
				name = "  " + name
			}
			if !c.Within() {
				within, gap = "✗", gapLine(c.Gap)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, c.Preset, fmtMetric(c.Ref), fmtMetric(c.Pimtui), c.Unit, percent(c.Error()), "±"+percentOf(c.Tol), within, gap)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		in, n, mean := validationScore(cs, false)
		line := fmt.Sprintf("%s: %d of %d within, mean |error| %s", ref, in, n, percentOf(mean))
		if in, n, mean := validationScore(cs, true); n > 0 {
			line += fmt.Sprintf("; finer checks %d of %d within, mean |error| %s", in, n, percentOf(mean))
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

// validationScore counts the headline checks (the finer ones when detail is set) within
// their tolerance, and their mean absolute error.
func validationScore(cs []experiment.Check, detail bool) (within, n int, meanAbs float64) {
	for _, c := range cs {
		if c.Detail != detail {
			continue
		}
		n++
		if c.Within() {
			within++
		}
		meanAbs += math.Abs(c.Error())
	}
	if n > 0 {
		meanAbs /= float64(n)
	}
	return within, n, meanAbs
}

// percent prints a relative error: +9.0%, -27.8%.
func percent(e float64) string {
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*e)
}

// percentOf prints a fraction as a percentage, to a tenth where it has one: 10%, 2.5%.
func percentOf(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return strconv.FormatFloat(math.Round(1000*f)/10, 'f', -1, 64) + "%"
}
