package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/ui"
)

func newSnapshotCmd(stdout io.Writer) *cobra.Command {
	var o options
	var size, focus string
	var color bool
	c := &cobra.Command{
		Use:   "snapshot",
		Short: "Print one explorer frame as text, without a terminal (for documents and slides)",
		Long: `Step a preset headless and print the explorer's frame after --steps iterations, as
plain text (ANSI colours with --color). --size sets the frame, --focus the focused pane.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, h, err := parseSize(size)
			if err != nil {
				return err
			}
			steps := 1
			if cmd.Flags().Changed("steps") {
				if o.steps < 1 {
					return usagef("--steps %d: want at least 1", o.steps)
				}
				steps = o.steps
			}
			_, cfg, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			cfg.OpenAt = 0 // the frame after --steps iterations from the first
			out, err := ui.Snapshot(cfg, ui.Options{Color: color}, steps, w, h, focus)
			var se *ui.StepsError
			var pe *ui.PaneError
			var ze *ui.SizeError
			var ce *ui.ConfigError
			switch {
			case errors.As(err, &se):
				return usagef("--steps %d: the run ends after %d iterations; ask for at most %d", se.Asked, se.Has, se.Has)
			case errors.As(err, &pe):
				msg := fmt.Sprintf("--focus %q: unknown pane", focus)
				if c := presets.Closest(focus, ui.PaneNames(), 1); len(c) > 0 {
					msg += fmt.Sprintf("; did you mean %q?", c[0])
				}
				return usagef("%s (panes: %s, or 1–6)", msg, strings.Join(ui.PaneNames(), ", "))
			case errors.As(err, &ze):
				return usagef("--size %s: %v", size, ze)
			case errors.As(err, &ce):
				return usagef("%s: %v", cfg.Preset, ce.Err)
			case err != nil:
				return fmt.Errorf("%s: %w", cfg.Preset, err)
			}
			_, err = io.WriteString(stdout, out)
			return err
		},
	}
	o.register(c)
	c.Flags().Lookup("steps").Usage = "iterations to step before the frame (default 1); the run stops there"
	c.Flags().StringVar(&size, "size", "120x40", "frame size WIDTHxHEIGHT in cells")
	c.Flags().StringVar(&focus, "focus", "", "focused pane: "+strings.Join(ui.PaneNames(), ", ")+" or 1–6 (default timeline)")
	c.Flags().BoolVar(&color, "color", false, "keep the ANSI colours and attributes")
	return c
}

// parseSize reads WIDTHxHEIGHT; ui.Snapshot checks that the explorer can draw it.
func parseSize(s string) (int, int, error) {
	a, b, ok := strings.Cut(strings.ToLower(strings.ReplaceAll(s, "×", "x")), "x")
	w, err1 := strconv.Atoi(strings.TrimSpace(a))
	h, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, usagef("--size %q: want WIDTHxHEIGHT in cells, e.g. 120x40", s)
	}
	return w, h, nil
}
