package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/internal/outfile"
	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
)

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var o options
	var format, tracePath, traceSteps, compare string
	c := &cobra.Command{
		Use:   "run",
		Short: "Simulate headless and print the results",
		Long: `Simulate a preset without the explorer and print a summary (table), the JSON result
(json; field names are a stable contract, see docs/exports-and-json.md) or one row per iteration (csv).

--compare A,B[,C…] runs several sides instead, each a preset or NAME+key=value+…, on
side A's request stream (dataset, requests, arrival, lengths, request trace, seed,
prefill, steps and warm-up, after the override flags, which apply to every side); each
side keeps its own hardware, model, batch and KV policy. It prints one column per side
with ratios to A (table), {"sides": [result, …]} (json) or one row per side (csv), and
why each side after A differs from A: the settings that differ, the critical path's time
by lane group and operation, and each switch's share (a section after the table, a "why"
object, why.* columns).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "table", "json", "csv":
			default:
				return usagef("--format %q: want table, json or csv", format)
			}
			if compare != "" {
				if cmd.Flags().Changed("preset") || o.config != "" {
					return usagef("--compare names every side itself; drop --preset and --config (e.g. pimtui run --compare neupims,npu-only)")
				}
				if tracePath != "" || cmd.Flags().Changed("trace-steps") {
					return usagef("--trace writes one run's timeline; it does not mix with --compare")
				}
				return runCompare(cmd, &o, compare, format, stdout, stderr)
			}
			from, to, err := parseRange(traceSteps)
			if err != nil {
				return err
			}
			_, cfg, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			cfg.Recycle = true
			// Only the result and the progress line read the iterations, unless each
			// one is written out.
			cfg.Jump = format != "csv" && tracePath == ""
			e, err := newEngine(cfg)
			if err != nil {
				return err
			}
			if err := runHeadless(e, stdout, progressTo(stderr), format, tracePath, from, to); err != nil {
				return err
			}
			if note := batchNote(e); note != "" {
				fmt.Fprintln(stderr, note)
			}
			return nil
		},
	}
	o.register(c)
	c.Flags().StringVar(&format, "format", "table", "output: table, json or csv (one row per iteration)")
	c.Flags().StringVar(&tracePath, "trace", "", "write the timeline as Chrome/Perfetto trace-event JSON to this file")
	c.Flags().StringVar(&traceSteps, "trace-steps", "1-50", "iterations FROM-TO to put in the trace")
	c.Flags().StringVar(&compare, "compare", "", "run sides A,B[,C…] (NAME or NAME+key=value+…) on side A's requests and compare them")
	return c
}

// batchNote is the line that says a run's batch stayed below workload.batch because the
// KV memory held no more (admission takes what fits and queues the rest); "" when the
// batch reached its cap (or every request of the workload) or nothing waited for memory.
func batchNote(e *sim.Engine) string {
	peak, byKV := e.BatchCap()
	w := e.Config().Workload
	if !byKV || peak >= min(w.MaxBatch, w.Requests) {
		return ""
	}
	return fmt.Sprintf("batch capped by KV memory at %s of %s", ui.Thousands(peak), ui.Thousands(w.MaxBatch))
}

func parseRange(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "-")
	from, err1 := strconv.Atoi(strings.TrimSpace(a))
	to, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || from < 1 || to < from {
		return 0, 0, usagef("--trace-steps %q: want FROM-TO with 1 ≤ FROM ≤ TO, e.g. 1-50", s)
	}
	return from, to, nil
}

// runHeadless steps e to the end and writes the chosen output. A trace goes to a
// temporary file renamed into place, so a failed run never leaves a half-written file.
func runHeadless(e *sim.Engine, stdout, progress io.Writer, format, tracePath string, from, to int) (err error) {
	var tw *sim.TraceWriter
	var out *outfile.File
	if tracePath != "" {
		if out, err = outfile.Create(tracePath, 0o644); err != nil {
			return usagef("--trace: %v", err)
		}
		defer out.Discard()
		tw = sim.NewTraceWriter(out, "pimtui "+e.Config().Preset)
	}
	var cw *sim.IterationCSV
	if format == "csv" {
		cw = sim.NewIterationCSV(stdout, e.UtilKeys())
	}
	start := time.Now()
	shown := start
	defer func() {
		if progress != nil && shown != start {
			fmt.Fprint(progress, "\r\x1b[K")
		}
	}()
	for calls := 1; ; calls++ {
		s, err := e.Step()
		if errors.Is(err, sim.ErrDone) {
			break
		}
		var unfit *sim.UnfitError
		if errors.As(err, &unfit) {
			return usagef("%s: %v", e.Config().Preset, err)
		}
		if err != nil {
			return err
		}
		if progress != nil && calls%64 == 0 { // a jumping Step may pass many iterations
			if now := time.Now(); now.Sub(shown) > 200*time.Millisecond && now.Sub(start) > 500*time.Millisecond {
				shown = now
				fmt.Fprintf(progress, "\r\x1b[K%s %s", progressBar(float64(s.Done)/float64(max(1, s.Total)), 30),
					fmt.Sprintf("step %d · %d/%d requests", s.Step, s.Done, s.Total))
			}
		}
		if tw != nil && s.Step >= from && s.Step <= to {
			tw.Add(s)
		}
		if cw != nil {
			cw.Add(s)
		}
	}
	if tw != nil {
		if err := tw.Close(); err != nil {
			return fmt.Errorf("writing the trace: %w", err)
		}
		if err := out.Commit(); err != nil {
			var oe *outfile.Error
			if errors.As(err, &oe) {
				return usagef("--trace: %v", err)
			}
			return fmt.Errorf("writing the trace: %w", err)
		}
	}
	r := e.Result()
	switch format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "csv":
		return cw.Flush()
	default:
		return writeTable(stdout, r)
	}
}

func writeTable(w io.Writer, r sim.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	p("preset", "%s (%s)", r.Preset, r.System)
	p("model / dataset", "%s / %s", r.Model, r.Dataset)
	p("requests", "%d of %d completed, batch up to %d of %d (mean %.1f), %d preempted", r.RequestsCompleted, r.Requests, r.PeakBatch, r.MaxBatch, r.MeanBatch, r.Preemptions)
	p("split", "tp %d, pp %d", r.TP, r.PP)
	p("iterations", "%d in %.4g s simulated", r.Iterations, r.SimTimeS)
	p("throughput", "%.1f tokens/s (%d tokens)", r.ThroughputTokS, r.TokensGenerated)
	p("iteration", "mean %.3f ms, p50 %.3f ms, p99 %.3f ms", r.IterationMS.Mean, r.IterationMS.P50, r.IterationMS.P99)
	p("TBT / TTFT", "p50 %.3f / %.3f ms, p99 %.3f / %.3f ms", r.TBTMS.P50, r.TTFTMS.P50, r.TBTMS.P99, r.TTFTMS.P99)
	keys := make([]string, 0, len(r.Utilization))
	for k := range r.Utilization {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p("utilization "+k, "%.1f%%", 100*r.Utilization[k])
	}
	keys = keys[:0]
	for k := range r.BubbleFraction {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p("idle "+k, "%.1f%%%s", 100*r.BubbleFraction[k], causeList(r.BubbleByCause[k]))
	}
	p("KV cache", "peak %d blocks (%.1f%% of capacity), fragmentation %.1f%%", r.KV.PeakBlocksUsed, 100*r.KV.PeakUtilization, 100*r.KV.PeakFragmentation)
	if r.LoadImbalance != nil {
		p("load imbalance", "%.3f (max/mean channel load)", *r.LoadImbalance)
	}
	return tw.Flush()
}

// causeList is " (dependency 42.5%, tail 1.2%)": a group's idle time by cause, largest
// first, leaving out causes below 0.05%.
func causeList(by map[string]float64) string {
	keys := make([]string, 0, len(by))
	for k, v := range by {
		if v >= 0.0005 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Slice(keys, func(i, j int) bool {
		if by[keys[i]] != by[keys[j]] {
			return by[keys[i]] > by[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.1f%%", k, 100*by[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
