package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
)

func newValidateCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a preset file without running it",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("validate takes one preset file")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			data, err := readPresetFile(args[0])
			if err != nil {
				return err
			}
			f, err := presets.Parse(args[0], data)
			if err != nil {
				return usageError{err}
			}
			cfg, err := presets.Build(f, nil)
			if err != nil {
				return usageError{fmt.Errorf("%s: %w", args[0], err)}
			}
			if _, err := newEngine(cfg); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: ok (preset %q, system %s)\n", args[0], f.Name, f.System)
			return nil
		},
	}
}
