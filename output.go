// What every command prints with: numbers, bars, colour, and usage errors (exit status 2).

package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
)

// progressTo returns w when it is a terminal, for a progress line; nil otherwise.
func progressTo(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		return w
	}
	return nil
}

// progressBar draws the fraction f done as a bar w cells wide.
func progressBar(f float64, w int) string {
	n := int(max(0, min(1, f))*float64(w) + 0.5)
	return "[" + strings.Repeat("█", n) + strings.Repeat("·", w-n) + "]"
}

// ff prints a float in at most six significant digits, as the tables and CSV do.
func ff(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// fmtMetric prints a metric value for the table: about four significant digits.
func fmtMetric(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "-"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// colorOn reports whether output to w may carry colour: a terminal, and NO_COLOR unset.
func colorOn(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd()) && os.Getenv("NO_COLOR") == ""
}

// firstLine is the first line of s, trimmed: the summary a table cell has room for.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// shortMetric names a metric of the JSON result as a column heading has room for.
func shortMetric(m string) string {
	switch m {
	case "throughput_tok_s":
		return "tok/s"
	case "mean_batch":
		return "batch"
	}
	return m
}

// usageError is bad usage or bad input: exit code 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef is a usage error with a formatted message.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// noArgs rejects positional arguments as bad usage.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return usageError{err}
	}
	return nil
}
