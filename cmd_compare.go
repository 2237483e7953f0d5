package main

import (
	"io"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/ui"
)

func newCompareCmd(stdout io.Writer) *cobra.Command {
	var o options
	c := &cobra.Command{
		Use:   "compare A B [overrides]",
		Short: "Step two presets side by side on the same requests",
		Long: `Open the compare view: two sides stepped in lockstep, each with its timeline and
figures, and a strip of their differences per step (iteration time, throughput,
utilisation per lane group, batch, queue) with sparklines of B/A; w says why B
differs from A.

A side is a preset, or a preset with settings switched: NAME+key=value+key=value.
Both sides serve side A's request stream (dataset, requests, arrival, lengths, request
trace, seed, prefill, steps and warm-up) after the override flags, which apply to both
sides as in run; each side keeps its own hardware, model, batch and KV policy.

  pimtui compare neupims npu-only
  pimtui compare neupims neupims+pim.dual_row_buffer=false --batch 128

For output to a file or pipe, or more than two sides: pimtui run --compare A,B[,C…].`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("compare takes two sides, got %d; e.g. pimtui compare neupims npu-only (pimtui run --compare A,B,C compares more)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("preset") || o.config != "" {
				return usagef("compare takes its sides as arguments (pimtui compare A B); --preset and --config do not apply")
			}
			sides, err := o.resolveSides(cmd, args, presets.Get)
			if err != nil {
				return err
			}
			f, ok := stdout.(*os.File)
			if !ok || !term.IsTerminal(f.Fd()) {
				return usagef("the compare view needs a terminal; for output to a file or pipe use pimtui run --compare %s,%s", args[0], args[1])
			}
			noColor := os.Getenv("NO_COLOR") != ""
			m, err := ui.NewCompare(o.explorerSide(cmd, sides[0]), o.explorerSide(cmd, sides[1]), ui.Options{Color: !noColor, NoMouse: o.noMouse})
			if err != nil {
				return usageError{err}
			}
			opts := []tea.ProgramOption{tea.WithInput(cmd.InOrStdin()), tea.WithOutput(f)}
			if noColor {
				opts = append(opts, tea.WithColorProfile(colorprofile.ASCII))
			}
			_, err = tea.NewProgram(m, opts...).Run()
			return err
		},
	}
	o.register(c)
	c.Flags().BoolVar(&o.noMouse, "no-mouse", false, "leave the mouse to the terminal so text can be selected")
	c.Flags().MarkHidden("preset")
	c.Flags().MarkHidden("config")
	return c
}
