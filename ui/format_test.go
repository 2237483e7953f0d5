package ui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/sim"
)

// Figures read as figures: a small rate is not 0, a ratio has no bare point, a count of
// one is singular, an iteration of seconds is in seconds.
func TestFigureFormats(t *testing.T) {
	cases := []struct{ got, want string }{
		{si(0.11), "0.11"}, {si(0), "0"}, {si(56.23), "56.2"}, {si(2185), "2185"}, {si(36700), "36.7k"},
		{fmtRatio(156.4), "156×"}, {fmtRatio(1), "1.00×"}, {fmtRatio(0.68912), "0.689×"}, {fmtRatio(1234), "1234×"},
		{count(1, "request"), "1 request"}, {count(1024, "block"), "1,024 blocks"},
		{Thousands(100), "100"}, {Thousands(-1234567), "-1,234,567"}, {thousands(-100), "-100"},
		{allSeries[0].format(2110), "2.11s"}, {allSeries[0].format(55.6), "55.6ms"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	lo, hi := pctApart(0.3401, 0.3404)
	if lo != "34.01%" || hi != "34.04%" {
		t.Errorf("pctApart: %s %s", lo, hi)
	}
}

// Shortened lines drop whole parts and cut long text at a space, never inside a number.
func TestShortenKeepsNumbersWhole(t *testing.T) {
	line := "325,696 of 947,104 blocks used · 325,696 reserved · 256 requests"
	for w := 4; w <= len(line)+2; w++ {
		for _, got := range append([]string{shorten(line, w)}, flow(line, w)...) {
			if width(got) > w {
				t.Fatalf("width %d: %q is wider", w, got)
			}
			if cutNumber.MatchString(got) {
				t.Fatalf("width %d: %q cuts a number", w, got)
			}
		}
	}
	if got := flowN(line, 40, 2); len(got) != 2 || got[1] != "325,696 reserved · 256 requests" {
		t.Fatalf("flowN over two lines: %q", got)
	}
	if got := flowN(line, 40, 1); len(got) != 1 || got[0] != "325,696 of 947,104 blocks used …" {
		t.Fatalf("flowN on one line: %q", got)
	}
}

// The time cursor may take a tick's mark but never a character of its label.
func TestCursorNeverOverwritesATick(t *testing.T) {
	m := newTimeline(testCommon(false))
	m.SetSnapshot(fixture(1))
	m.SetSize(72, 18)
	g := m.geom()
	inside := regexp.MustCompile(`[0-9.]▲[0-9.µmns]`)
	for c := range g.cw {
		line := ansi.Strip(m.axis(&g, c))
		if inside.MatchString(line) {
			t.Fatalf("cursor at column %d cuts a tick label: %q", c, line)
		}
		if !strings.Contains(line, "▲") {
			t.Fatalf("cursor at column %d not drawn: %q", c, line)
		}
	}
}

// A lane idle throughout a cell is hatched only where it waited, and a cell of spans
// narrower than itself shows its busy share.
func TestBusyLevel(t *testing.T) {
	cases := []struct {
		busy, width sim.Time
		levels      int
		want        int
	}{
		{0, 100, 8, 0}, {1, 100, 8, 1}, {33, 100, 8, 3}, {94, 100, 8, 8}, {100, 100, 16, 16}, {95, 100, 16, 15},
	}
	for _, c := range cases {
		if got := busyLevel(c.busy, c.width, c.levels); got != c.want {
			t.Errorf("busyLevel(%d, %d, %d) = %d, want %d", c.busy, c.width, c.levels, got, c.want)
		}
	}
}
