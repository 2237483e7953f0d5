package ui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// width counts what the full grapheme-aware measure counts, whichever of its paths a
// string takes: decoded in place, by the decoder, or handed over whole. Escape
// sequences are the frame's own, well formed; the fuzzer's text has none.
func FuzzWidth(f *testing.F) {
	for _, s := range []string{"\x1b[1;38;2;1;2;3mbold\x1b[m ─", "\x1b[mα\x1b[0m", "█\x1b[48;5;17m▀\x1b[m"} {
		if got, want := width(s), ansi.StringWidth(s); got != want {
			f.Fatalf("width(%q) = %d, ansi.StringWidth = %d", s, got, want)
		}
	}
	for _, s := range []string{
		"", "plain", "╭─ 1 Banks ─╮", "█▓▒░ ·", "→ ← ↑", "αβγ é ü",
		"\xe2\x94", "\xe2", "\xc3", "\xe2\x28\xa1", "\xcf\xbf", "\xd0\x96", "日本", "e\u0301", "a\u200db",
		"\xe2\x80\x8b", "\xed\xa0\x80", "\xe0\x80\x80", "\xc1\xbf",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.ReplaceAll(s, "\x1b", "")
		if got, want := width(s), ansi.StringWidth(s); got != want {
			t.Fatalf("width(%q) = %d, ansi.StringWidth = %d", s, got, want)
		}
	})
}
