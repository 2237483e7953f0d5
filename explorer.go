package main

import (
	"io"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
)

// figures measures a preset's declared paper experiments for the explorer, as
// `pimtui reproduce` does, on one core so that stepping keeps the others.
func figures(name string) ([]ui.Figure, error) {
	outs, err := presets.EvaluateOn(name, 1)
	if err != nil {
		return nil, err
	}
	figs := make([]ui.Figure, len(outs))
	for i, o := range outs {
		figs[i] = ui.Figure{ID: o.ID, Paper: o.Target(), Measured: o.Measured, Versus: o.Versus, Within: o.Within, Declared: o.Reproduced}
		if o.Versus == "" {
			figs[i].Unit = shortMetric(o.Metric)
		}
	}
	return figs, nil
}

// runExplorer opens the explorer on a terminal; anywhere else it points to `run`.
func runExplorer(cmd *cobra.Command, o *options, stdout io.Writer) error {
	f, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return usagef("the explorer needs a terminal; for output to a file or pipe use `pimtui run` (e.g. pimtui run --format json)")
	}
	_, cfg, err := o.resolve(cmd)
	if err != nil {
		return err
	}
	sets, err := o.overrides(cmd)
	if err != nil {
		return err
	}
	// The preset and lesson lists take a moment to read; the screen does not wait for them.
	opts := ui.Options{LessonOptions: ui.LessonOptions{LessonStep: lessonStep(sets)}}
	opts.Catalog = func() ui.Catalog {
		c := ui.Catalog{Presets: presetList()}
		if ls, err := presets.Lessons(); err == nil {
			c.Lessons = lessonInfos(ls)
		}
		return c
	}
	return explore(cmd, o, f, cfg, opts)
}

// explore runs the explorer on cfg on terminal f. opts gives what the caller offers;
// the colour (off under NO_COLOR), the mouse, the preset picker and the paper figures
// are set here.
func explore(cmd *cobra.Command, o *options, f *os.File, cfg sim.Config, opts ui.Options) error {
	noColor := os.Getenv("NO_COLOR") != ""
	opts.Color, opts.NoMouse, opts.Load, opts.Figures = !noColor, o.noMouse, o.loader(cmd), figures
	if opts.Catalog == nil {
		opts.Presets = presetList()
	}
	opts.CompareWith, opts.CompareLoad = o.compareChoices(cmd), o.compareLoader(cmd)
	m, err := ui.New(cfg, opts)
	if err != nil {
		return usagef("%s: %v", cfg.Preset, err)
	}
	popts := []tea.ProgramOption{tea.WithInput(cmd.InOrStdin()), tea.WithOutput(f)}
	if noColor {
		popts = append(popts, tea.WithColorProfile(colorprofile.ASCII))
	}
	defer boundMemory()()
	if _, err := tea.NewProgram(m, popts...).Run(); err != nil {
		return err
	}
	if err := m.StartErr(); err != nil {
		return usagef("%s: %v", cfg.Preset, err)
	}
	return nil
}

// presetList is the explorer's preset picker: every embedded preset with its description.
func presetList() []ui.PresetInfo {
	var list []ui.PresetInfo
	for _, name := range presets.Names() {
		if p, err := presets.Get(name); err == nil {
			list = append(list, ui.PresetInfo{Name: name, Description: p.Description, Experiments: len(p.Expect)})
		}
	}
	return list
}

// loader builds the configuration of a preset picked in the explorer with the same
// overrides as the one on the command line, so --requests or --set keep applying after a
// switch.
func (o *options) loader(cmd *cobra.Command) func(string) (sim.Config, error) {
	return func(name string) (sim.Config, error) {
		alt := *o
		alt.preset, alt.config = name, ""
		_, c, err := alt.resolve(cmd)
		return c, err
	}
}
