package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/presets/experiment"
	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
)

func newLessonCmd(stdout io.Writer) *cobra.Command {
	var o options
	var list, check bool
	c := &cobra.Command{
		Use:   "lesson [NAME]",
		Short: "Step through a lesson for class in the explorer, or list and check the lessons",
		Long: `A lesson walks through one mechanism in a few steps: each step loads a preset with a
few settings, runs it for some iterations and focuses the pane to look at, with a short
explanation, what to notice on screen and what the numbers show. In the explorer ) and (
move between steps, r replays a step, t picks another lesson and esc leaves the lesson.

Without a NAME the explorer opens with the lesson picker. The override flags (--batch,
--set …) apply on top of every step, as they do on a preset. --check runs the lessons
headless and prints each claim with the values measured (exit status 1 if one does not
hold).`,
		Example: `  pimtui lesson --list     (or: pimtui lesson list)
  pimtui lesson dual-row-buffers
  pimtui lesson --check sub-batch-interleaving`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("lesson takes at most one lesson name, got %d (pimtui lesson --list lists them)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range []string{"preset", "config", "request-trace"} {
				if cmd.Flags().Changed(f) {
					return usagef("--%s does not apply to a lesson: each step names its own preset (the override flags such as --batch and --set do apply)", f)
				}
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			// No lesson is named list: "lesson list" means --list.
			if name == "list" && !check {
				list, name = true, ""
			}
			switch {
			case list && check:
				return usagef("--list and --check are exclusive; pick one")
			case list && name != "":
				return usagef("--list takes no lesson name")
			case list:
				return listLessons(stdout)
			}
			var l *presets.Lesson
			if name != "" {
				var err error
				if l, err = presets.GetLesson(name); err != nil {
					return usageError{err}
				}
			}
			sets, err := o.overrides(cmd)
			if err != nil {
				return err
			}
			if check {
				return checkLessons(stdout, l, sets)
			}
			return runLesson(cmd, &o, stdout, l, sets)
		},
	}
	o.register(c)
	f := c.Flags()
	f.BoolVar(&o.noMouse, "no-mouse", false, "leave the mouse to the terminal so text can be selected")
	f.BoolVar(&list, "list", false, "print the lessons, one per line: name, family, title")
	f.BoolVar(&check, "check", false, "run the lesson (every lesson without a NAME) headless and print each claim with its measured values")
	for _, n := range []string{"preset", "config", "request-trace"} {
		f.MarkHidden(n)
	}
	return c
}

// listLessons prints one lesson per line: name, family and title.
func listLessons(w io.Writer) error {
	ls, err := presets.Lessons()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Name, l.Family, l.Title)
	}
	return tw.Flush()
}

// checkLessons runs lesson l (every lesson when l is nil) with the overrides and prints
// each claim, ✓ or ✗, with both sides as measured. A claim that does not hold makes it
// fail with exit status 1.
func checkLessons(w io.Writer, l *presets.Lesson, sets []string) error {
	ls := []*presets.Lesson{l}
	if l == nil {
		var err error
		if ls, err = presets.Lessons(); err != nil {
			return err
		}
	}
	if err := checkOverrides(ls, sets); err != nil {
		return err
	}
	total, failed := 0, 0
	for i, l := range ls {
		rs, err := experiment.EvaluateClaims(l, sets...)
		if err != nil {
			return usageError{err}
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n", l.Name, l.Title)
		for _, r := range rs {
			mark := "✓"
			if !r.Holds {
				mark = "✗"
				failed++
			}
			total++
			fmt.Fprintf(w, "  %s step %d: %s\n", mark, r.Step, r.Text)
			against := fmtMetric(r.Against)
			if r.ThanStep != nil {
				against += " (" + r.AgainstText() + ")"
			}
			fmt.Fprintf(w, "      %s %s %s %s\n", r.Metric, fmtMetric(r.Value), r.Op, against)
		}
	}
	fmt.Fprintf(w, "\n%d of %d claims hold\n", total-failed, total)
	if failed > 0 {
		return fmt.Errorf("%d of %d claims do not hold", failed, total)
	}
	return nil
}

// runLesson opens the explorer on lesson l (with the lesson picker when l is nil).
func runLesson(cmd *cobra.Command, o *options, stdout io.Writer, l *presets.Lesson, sets []string) error {
	f, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return usagef("a lesson runs in the explorer, which needs a terminal; pimtui lesson --list lists the lessons, pimtui lesson --check NAME checks a lesson's claims headless, and pimtui run --preset P runs a step's preset")
	}
	var lo ui.LessonOptions
	var cfg sim.Config
	var err error
	if l != nil {
		lo, cfg, err = startLesson(l.Name, sets, cfg)
	} else {
		ls, lerr := presets.Lessons()
		if lerr != nil {
			return lerr
		}
		if err = checkOverrides(ls, sets); err == nil {
			lo = lessonOptions(sets)
			lo.LessonPicker = true
			_, cfg, err = o.resolve(cmd)
		}
	}
	if err != nil {
		return err
	}
	return explore(cmd, o, f, cfg, ui.Options{LessonOptions: lo})
}
