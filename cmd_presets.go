package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/presets"
)

func newPresetsCmd(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "presets",
		Short: "List the embedded presets",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tFAMILY\tDESCRIPTION")
			for _, n := range presets.Names() {
				f, err := presets.Get(n)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", n, f.Family, f.Description)
			}
			return tw.Flush()
		},
	}
	var source bool
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print an embedded preset's file and every key its sections take, to start a preset of your own from",
		Long: "Print an embedded preset's file and every key its sections take, to start a preset of your own from.\n" +
			"A preset that extends another is printed resolved, each value marked with the file that sets it;\n" +
			"--source prints the file as written.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("presets show takes one preset name; pimtui presets lists them")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			resolved, err := presets.Resolved(args[0])
			if err != nil {
				return usageError{err}
			}
			b := resolved
			if source {
				b, _ = presets.Source(args[0])
			}
			if _, err := stdout.Write(b); err != nil {
				return err
			}
			return writeKeyComments(stdout, resolved)
		},
	}
	show.Flags().BoolVar(&source, "source", false, "print the file as written, without the keys it takes from the preset it extends")
	list := func(use, short string, rows func(w io.Writer)) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: noArgs, RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			rows(tw)
			return tw.Flush()
		}}
	}
	models := list("models", "List the model catalogue", func(w io.Writer) {
		fmt.Fprintln(w, "NAME\tLAYERS\tD_MODEL\tHEADS\tKV_HEADS\tFFN\tD_FFN\tEXPERTS")
		for _, m := range presets.Models() {
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%d/%d\n", m.Name, m.Layers, m.DModel, m.Heads, m.KVHeads, m.FFNType, m.DFFN, m.TopK, m.Experts)
		}
	})
	datasets := list("datasets", "List the dataset catalogue", func(w io.Writer) {
		fmt.Fprintln(w, "NAME\tINPUT_MEAN\tINPUT_STD\tOUTPUT_MEAN\tOUTPUT_STD\tMAX_SEQ")
		for _, d := range presets.Datasets() {
			fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%d\n", d.Name, d.InputMean, d.InputStd, d.OutputMean, d.OutputStd, d.MaxSeqLen)
		}
	})
	gpus := list("gpus", "List the GPU catalogue", func(w io.Writer) {
		fmt.Fprintln(w, "NAME\tFP16_TFLOPS\tBANDWIDTH_GBPS\tCAPACITY_GB")
		for _, g := range presets.GPUs() {
			fmt.Fprintf(w, "%s\t%.1f\t%.0f\t%.0f\n", g.Name, g.FP16TFLOPS, g.BandwidthGBps, g.CapacityGB)
		}
	})
	keys := list("keys", "List every key a preset file has, for --set", func(w io.Writer) {
		fmt.Fprintln(w, "KEY\tTYPE\tRANGE\tMEANING")
		for _, k := range presets.Keys() {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", k.Key, k.Type, k.Range, k.Doc)
		}
	})
	c.AddCommand(show, models, datasets, gpus, keys)
	return c
}

// writeKeyComments lists, as TOML comments after a preset's text, every key of the
// sections the preset has, with its type, range and meaning: what --set and --vary take.
// Comments keep the output a valid preset file.
func writeKeyComments(w io.Writer, src []byte) error {
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err != nil {
		return err
	}
	fmt.Fprintln(w, "\n# Keys of this preset's sections: override any with --set KEY=VALUE, or sweep it with")
	fmt.Fprintln(w, "# pimtui sweep --vary KEY=V1,V2 (pimtui presets keys lists those of every section).")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "# KEY\tTYPE\tRANGE\tMEANING")
	for _, k := range presets.Keys() {
		section, _, nested := strings.Cut(k.Key, ".")
		if _, ok := doc[section]; ok || !nested {
			fmt.Fprintf(tw, "# %s\t%s\t%s\t%s\n", k.Key, k.Type, k.Range, strings.ReplaceAll(k.Doc, "\n", " "))
		}
	}
	return tw.Flush()
}
