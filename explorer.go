// The explorer as the commands that open it share it (the root command, lesson, compare,
// serve): building its options, its paper figures, lessons, compare choices and memory bound.

package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/presets/experiment"
	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
)

// figures measures a preset's declared paper experiments for the explorer, as
// `pimtui reproduce` does, on one core so that stepping keeps the others.
func figures(name string) ([]ui.Figure, error) {
	outs, err := experiment.EvaluateOn(name, 1)
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

// presetValidations returns what the explorer's picker shows of a preset's validation:
// its headline checks against the references measured outside pimtui. The first call
// measures every reference, one after another so that stepping keeps the other core;
// every preset's checks then come from that one measurement.
func presetValidations() func(name string) ([]ui.Validation, error) {
	all := sync.OnceValues(func() ([]experiment.Check, error) {
		var out []experiment.Check
		for _, ref := range referenceNames() {
			cs, err := validate(ref)
			if err != nil {
				return nil, err
			}
			out = append(out, cs...)
		}
		return out, nil
	})
	return func(name string) ([]ui.Validation, error) {
		cs, err := all()
		if err != nil {
			return nil, err
		}
		var out []ui.Validation
		for _, c := range cs {
			if c.Preset == name && !c.Detail {
				out = append(out, ui.Validation{Reference: experiment.Describe(c.Reference).Short, Name: c.Name,
					Ref: c.Ref, Pimtui: c.Pimtui, Tol: c.Tol, Within: c.Within()})
			}
		}
		return out, nil
	}
}

// explore runs the explorer on cfg on terminal f. opts gives what the caller offers;
// the colour (off under NO_COLOR), the mouse, the preset picker, the paper figures and
// the validation are set here.
func explore(cmd *cobra.Command, o *options, f *os.File, cfg sim.Config, opts ui.Options) error {
	noColor := os.Getenv("NO_COLOR") != ""
	opts.Color, opts.NoMouse, opts.Load, opts.Figures = !noColor, o.noMouse, o.loader(cmd), figures
	opts.Validations = presetValidations()
	if opts.Catalog == nil {
		opts.Presets = presetList()
	}
	opts.CompareWith, opts.CompareLoad = o.compareChoices(cmd), o.compareLoader(cmd)
	m, err := ui.New(o.explorerSteps(cmd, cfg), opts)
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
			list = append(list, ui.PresetInfo{Name: name, Family: p.Family, Description: p.Description, Experiments: len(p.Expect)})
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
		return o.explorerSteps(cmd, c), err
	}
}

// compareChoices lists what the explorer's compare chooser offers beside a preset: the
// preset (with the command line's overrides) with each of its switches turned over, then
// every other preset.
func (o *options) compareChoices(cmd *cobra.Command) func(string) []ui.CompareChoice {
	return func(name string) []ui.CompareChoice {
		var out []ui.CompareChoice
		if f, err := o.sideFile(name); err == nil {
			sets, _ := o.overrides(cmd)
			for _, kv := range sets {
				f.Set(kv)
			}
			for _, sw := range f.Switches() {
				kv := sw.Key + "=" + strconv.FormatBool(!sw.On)
				out = append(out, ui.CompareChoice{Side: name + "+" + kv, Label: name + " with " + kv, Description: sw.Doc})
			}
		}
		for _, p := range presetList() {
			if p.Name != name {
				out = append(out, ui.CompareChoice{Side: p.Name, Label: p.Name, Description: p.Description})
			}
		}
		return out
	}
}

// compareLoader builds the two sides of a comparison the explorer opens.
func (o *options) compareLoader(cmd *cobra.Command) func(a, b string) (ui.Side, ui.Side, error) {
	return func(a, b string) (ui.Side, ui.Side, error) {
		s, err := o.resolveSides(cmd, []string{a, b}, o.sideFile)
		if err != nil {
			return ui.Side{}, ui.Side{}, err
		}
		return o.explorerSide(cmd, s[0]), o.explorerSide(cmd, s[1]), nil
	}
}

// explorerSteps lifts a preset's step budget for the explorer: the budget keeps a
// headless run short (hermes: 12 of its request's 128 tokens), while the explorer runs a
// workload to its end unless the user stops it. A budget the command line asks for
// (--steps, --set workload.steps=N) stays, and the explorer's header says so.
func (o *options) explorerSteps(cmd *cobra.Command, cfg sim.Config) sim.Config {
	sets, _ := o.overrides(cmd)
	return liftSteps(cfg, sets)
}

// liftSteps is cfg with its step budget lifted, unless sets asks for one.
func liftSteps(cfg sim.Config, sets []string) sim.Config {
	for _, kv := range sets {
		if k, _, _ := strings.Cut(kv, "="); strings.TrimSpace(k) == "workload.steps" {
			return cfg
		}
	}
	cfg.Workload.Steps = 0
	return cfg
}

// explorerSide is a side of an interactive comparison, its step budget lifted as the
// explorer's (explorerSteps).
func (o *options) explorerSide(cmd *cobra.Command, s resolvedSide) ui.Side {
	s.Config = o.explorerSteps(cmd, s.Config)
	return uiSide(s)
}

// sideFile loads a side's preset for the explorer: the --config file when the explorer
// runs it under its name, an embedded preset otherwise.
func (o *options) sideFile(name string) (*presets.File, error) {
	if o.config != "" {
		if data, err := presets.ReadFile(o.config); err == nil {
			if f, err := presets.Parse(o.config, data); err == nil && f.Name == name {
				return f, nil
			}
		}
	}
	return presets.Get(name)
}

// memoryFloor is the memory the explorer may use before the garbage collector works
// harder than usual: with the kept history packed and a finished run's planner let go,
// every preset's live data fits well within it, and a process at the floor stays under
// 150 MB resident. Go's default would let the heap grow to twice the live data, which for
// a Hermes run (every neuron of LLaMA2-70B, while the paper figures build another) is
// over 250 MB.
const memoryFloor = 120 << 20

// memoryLimit is the soft memory limit for live bytes of live heap: memoryFloor, or a
// quarter more than the live heap where that is larger, so that a configuration whose
// data exceeds the floor is collected at a steady pace rather than without pause.
func memoryLimit(live uint64) int64 {
	return max(memoryFloor, int64(live+live/4))
}

// boundMemory keeps the process's soft memory limit at memoryLimit of its live heap,
// checked four times a second, until stop is called. A limit the user sets with
// GOMEMLIMIT is left alone.
func boundMemory() (stop func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(memoryFloor)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				metrics.Read(sample)
				debug.SetMemoryLimit(memoryLimit(sample[0].Value.Uint64()))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		debug.SetMemoryLimit(old)
	}
}

// startLesson returns the explorer's lessons with the overrides applied and, when name
// is not "", opens that lesson: the configuration returned is then its first step's,
// otherwise cfg. A bad name or an override a step cannot take is a usage error.
func startLesson(name string, sets []string, cfg sim.Config) (ui.LessonOptions, sim.Config, error) {
	lo := lessonOptions(sets)
	if name == "" {
		return lo, cfg, nil
	}
	l, err := presets.GetLesson(name)
	if err != nil {
		return lo, cfg, usageError{err}
	}
	if err := checkOverrides([]*presets.Lesson{l}, sets); err != nil {
		return lo, cfg, err
	}
	first, err := l.StepConfig(0, sets...)
	if err != nil {
		return lo, cfg, usageError{err}
	}
	lo.Lesson = name
	return lo, first, nil
}

// checkOverrides builds every step of the lessons with the command line's overrides, so
// that a bad override is reported before anything runs rather than at some later step.
func checkOverrides(ls []*presets.Lesson, sets []string) error {
	for _, l := range ls {
		for s := range l.Steps {
			if _, err := l.StepConfig(s, sets...); err != nil {
				return usageError{fmt.Errorf("lesson %s step %d: %w", l.Name, s+1, err)}
			}
		}
	}
	return nil
}

// lessonOptions offers the embedded lessons to the explorer; each step's configuration
// is built with the command line's overrides on top, as presets are.
func lessonOptions(sets []string) ui.LessonOptions {
	ls, err := presets.Lessons()
	if err != nil {
		return ui.LessonOptions{}
	}
	return ui.LessonOptions{Lessons: lessonInfos(ls), LessonStep: lessonStep(sets)}
}

// lessonStep builds a lesson step's configuration with the command line's overrides.
func lessonStep(sets []string) func(name string, step int) (sim.Config, error) {
	return func(name string, step int) (sim.Config, error) {
		l, err := presets.GetLesson(name)
		if err != nil {
			return sim.Config{}, err
		}
		cfg, err := l.StepConfig(step, sets...)
		return liftSteps(cfg, sets), err
	}
}

// lessonInfos converts lessons into what the explorer shows of them.
func lessonInfos(ls []*presets.Lesson) []ui.LessonInfo {
	out := make([]ui.LessonInfo, len(ls))
	for i, l := range ls {
		info := ui.LessonInfo{Name: l.Name, Title: l.Title, Family: l.Family, Summary: l.Summary}
		for _, s := range l.Steps {
			st := ui.LessonStepInfo{Title: s.Title, Preset: s.Preset, Set: s.Set, Focus: s.Focus, Text: s.Text, Notice: s.Notice, Steps: s.Steps}
			for _, c := range s.Claims {
				st.Claims = append(st.Claims, c.Text)
			}
			info.Steps = append(info.Steps, st)
		}
		out[i] = info
	}
	return out
}

// uiSide is a resolved side as the compare screen takes it.
func uiSide(s resolvedSide) ui.Side {
	return ui.Side{Name: s.Name, Config: s.Config, Contrast: s.Contrast}
}
