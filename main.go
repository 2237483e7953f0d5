// Command pimtui is an interactive terminal explorer for processing-in-memory systems that
// serve large language models. Without a subcommand it opens the explorer; `pimtui run`
// simulates headless and prints results.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/ui"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code: 0 success, 1 runtime failure,
// 2 bad usage or input.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "pimtui: internal error: %v\n", r)
			code = 1
		}
	}()
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "pimtui: %v\n", err)
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var o options
	root := &cobra.Command{
		Use:   "pimtui",
		Short: "An interactive terminal explorer for processing-in-memory LLM serving systems",
		Long: `pimtui steps decode iterations of processing-in-memory systems that serve large
language models (NeuPIMs, L3, LoL-PIM, HeLioS, Hermes and their baselines) and shows what the
hardware does: which banks compute, where each sub-batch waits, where every KV-cache block lives
and which neurons are hot.

Without a subcommand it opens the explorer on a preset (default: neupims).`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", s[0])
			}
			return usagef("%s (pimtui --help lists the commands)", msg)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExplorer(cmd, &o, stdout)
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetVersionTemplate("pimtui {{.Version}}\n")
	o.register(root)
	root.Flags().BoolVar(&o.noMouse, "no-mouse", false, "leave the mouse to the terminal so text can be selected")
	root.AddCommand(newRunCmd(stdout, stderr), newPresetsCmd(stdout), newValidateCmd(stdout))
	root.AddCommand(newSweepCmd(stdout, stderr), newReproduceCmd(stdout, stderr))
	root.AddCommand(newServeCmd(stderr, buildVersion()), newCompareCmd(stdout), newLessonCmd(stdout), newSnapshotCmd(stdout))
	return root
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
