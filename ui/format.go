package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pimtui/pimtui/sim"
)

// How the panes write numbers: counts with separators, fractions as percentages,
// quantities with SI suffixes, bytes in binary units, times in their own units.

// thousands formats n with thin separators: 12,345.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Thousands is thousands for the headless commands, so that they print counts as the
// panes do.
func Thousands(n int) string { return thousands(n) }

// count writes n things of a kind: 1 request, 2 requests, 1,024 blocks.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return thousands(n) + " " + thing + "s"
}

// pct formats a fraction as a percentage with one decimal.
func pct(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*f)
}

// pctInt formats a fraction as a whole percentage: 25%.
func pctInt(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// si formats a quantity with a k/M/G/T/P suffix and three significant digits: 36.7k;
// below a hundred, with up to three significant digits (56.2, 0.11), so that a small rate
// never reads as 0.
func si(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a < 100:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a < 1e4:
		return fmt.Sprintf("%.0f", v)
	}
	units := []string{"k", "M", "G", "T", "P", "E"}
	i := 0
	for i < len(units)-1 && a >= 1e3*math.Pow(1e3, float64(i+1)) {
		i++
	}
	return fmt.Sprintf("%.3g%s", v/math.Pow(1e3, float64(i+1)), units[i])
}

// bytesText formats a byte count: 32 KiB, 1.5 MiB.
func bytesText(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if b == math.Trunc(b) {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}

// fmtTime writes a time in its own unit (sim.Time's String), and zero as a bare 0.
func fmtTime(t sim.Time) string {
	if t == 0 {
		return "0"
	}
	return t.String()
}
