// The headless comparison's why: for each side after A, why its iterations take longer
// or shorter than A's (sim/explain.go), as a section after the table, a JSON object and
// CSV columns.

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
)

// explainSides explains each side after A against A over the measured steps both ran:
// from the first after A's warm-up to the last of the shorter run. A progress line goes
// to progress (nil: none) when it takes more than a moment.
func explainSides(sides []resolvedSide, rs []sim.Result, progress io.Writer) ([]*sim.Why, error) {
	whys := make([]*sim.Why, len(sides))
	from := sides[0].Config.Workload.Warmup + 1
	for i := 1; i < len(sides); i++ {
		to := min(rs[0].Iterations, rs[i].Iterations)
		if to < from {
			whys[i] = &sim.Why{Side: ui.SideLetter(i), Summary: "no measured step both sides ran", Settings: sides[i].Contrast.Settings}
			continue
		}
		start, shown := time.Now(), false
		report := func(f float64) {
			if progress == nil || time.Since(start) < 500*time.Millisecond {
				return
			}
			shown = true
			fmt.Fprintf(progress, "\r\x1b[K%s why %s differs from A, steps %d–%d · %.1f s", progressBar(f, 30), ui.SideLetter(i), from, to, time.Since(start).Seconds())
		}
		w, err := sim.ExplainRuns(context.Background(), sides[0].Config, sides[i].Config, sides[i].Contrast, from, to, report)
		if shown {
			fmt.Fprint(progress, "\r\x1b[K")
		}
		if err != nil {
			return nil, fmt.Errorf("why side %s %q differs from A: %w", ui.SideLetter(i), sides[i].Name, err)
		}
		w.SetSide(ui.SideLetter(i))
		whys[i] = w
	}
	return whys, nil
}

// writeWhyTable prints, for each side after A, why it differs from A: the summary, the
// settings that differ, the critical path by lane group and operation, each lane group's
// time per lane, and the switch attribution.
func writeWhyTable(w io.Writer, whys []*sim.Why) error {
	var buf bytes.Buffer
	for i, y := range whys {
		if y == nil {
			continue
		}
		b := ui.SideLetter(i)
		fmt.Fprintf(&buf, "\nwhy %s differs from A", b)
		if y.Steps > 0 {
			fmt.Fprintf(&buf, " · steps %d–%d · ms per iteration, their mean", y.From, y.To)
		}
		fmt.Fprintln(&buf)
		for _, l := range wrapText(y.Summary, 100) {
			fmt.Fprintln(&buf, l)
		}
		tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
		row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }
		fmt.Fprintln(tw)
		if len(y.Settings) == 0 {
			row("settings that differ", "none")
		} else {
			row("settings that differ", "A", b, "meaning")
			for _, s := range y.Settings {
				row(s.Key, s.A, s.B, s.Meaning)
			}
		}
		if y.Steps == 0 {
			tw.Flush()
			continue
		}
		ms := func(v float64) string { return fmt.Sprintf("%.3f", v) }
		delta := func(v float64) string {
			if math.Abs(v) < 0.0005 {
				return "0.000" // a sign on a difference that rounds to nothing says nothing
			}
			return fmt.Sprintf("%+.3f", v)
		}
		row()
		row("critical path", "A", b, b+"−A")
		for _, p := range y.Path {
			row(p.Label(), ms(p.AMS), ms(p.BMS), delta(p.DeltaMS))
		}
		row("iteration", ms(y.AMS), ms(y.BMS), delta(y.DeltaMS))
		row()
		row("lane groups, per lane", "A", b, b+"−A")
		for _, g := range y.Groups {
			row(g.Group+" busy", ms(g.Busy.AMS), ms(g.Busy.BMS), delta(g.Busy.DeltaMS))
			for _, c := range g.Idle {
				row(g.Group+" idle, "+c.Cause, ms(c.AMS), ms(c.BMS), delta(c.DeltaMS))
			}
		}
		if a := y.Attribution; a != nil {
			row()
			if len(a.Switches) == 0 {
				row("switches", "none: "+a.Note)
			} else {
				row("switches, "+attributionText[a.Method], b+"−A", "share")
				for _, s := range a.Switches {
					row(s.Key+" "+s.A+" → "+s.B, delta(s.DeltaMS), fmt.Sprintf("%.1f%%", 100*s.Share))
				}
				if a.Method == sim.MethodSingle {
					row("interplay of the switches", delta(a.InteractionMS))
				}
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if a := y.Attribution; a != nil && len(a.Switches) > 0 {
			for _, l := range wrapText(a.Note, 100) {
				fmt.Fprintln(&buf, l)
			}
		}
	}
	for l := range strings.Lines(buf.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(l, " \n")); err != nil {
			return err
		}
	}
	return nil
}

// attributionText names each attribution method in the table.
var attributionText = map[string]string{
	sim.MethodShapley:  "Shapley value",
	sim.MethodTwoOrder: "Shapley value over two orders",
	sim.MethodSingle:   "each turned alone",
}

// wrapText breaks s into lines of at most width bytes at spaces.
func wrapText(s string, width int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			out, line = append(out, line), ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// whyValues are the CSV columns of why, a side's difference from A (B − A), in
// milliseconds per iteration: why.delta_ms and why.ratio, why.critical_path.GROUP.KIND,
// why.busy.GROUP and why.idle.GROUP.CAUSE (per lane), and why.switch.KEY. Nil for A.
func whyValues(y *sim.Why) map[string]float64 {
	out := map[string]float64{}
	if y == nil || y.Steps == 0 {
		return out
	}
	out["why.delta_ms"], out["why.ratio"] = y.DeltaMS, y.Ratio
	for _, p := range y.Path {
		key := "why.critical_path." + strings.NewReplacer(" + ", "_", " ", "_").Replace(strings.ToLower(p.Kind))
		if p.Group != "" {
			key = "why.critical_path." + p.Group + "." + strings.TrimPrefix(key, "why.critical_path.")
		}
		out[key] = p.DeltaMS
	}
	for _, g := range y.Groups {
		out["why.busy."+g.Group] = g.Busy.DeltaMS
		for _, c := range g.Idle {
			out["why.idle."+g.Group+"."+c.Cause] = c.DeltaMS
		}
	}
	if a := y.Attribution; a != nil {
		for _, s := range a.Switches {
			out["why.switch."+s.Key] = s.DeltaMS
		}
	}
	return out
}
