package presets

import (
	"fmt"
	"sort"
	"strings"
)

// Error is a bad value in a preset file or an override, with where it is.
type Error struct {
	File      string
	Line, Col int // 0 when the value came from the command line
	Key       string
	Msg       string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Closest returns up to n candidates nearest to name by edit distance, nearest first,
// keeping only plausible ones (within half the name's length plus two edits, or sharing a
// prefix).
func Closest(name string, candidates []string, n int) []string {
	type c struct {
		s string
		d int
	}
	var cs []c
	low := strings.ToLower(name)
	for _, s := range candidates {
		d := levenshtein(low, strings.ToLower(s))
		if strings.Contains(strings.ToLower(s), low) && low != "" {
			d = min(d, 1)
		}
		if d <= len(name)/2+2 {
			cs = append(cs, c{s, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	out := make([]string, 0, n)
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].s)
	}
	return out
}

// DidYouMean formats suggestions, or lists every valid name when none is close.
func DidYouMean(name string, candidates []string) string {
	if c := Closest(name, candidates, 3); len(c) > 0 {
		return "did you mean " + strings.Join(quoteAll(c), " or ") + "?"
	}
	return "valid names: " + strings.Join(candidates, ", ")
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
