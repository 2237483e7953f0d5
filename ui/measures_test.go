package ui

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// measureRuns are a preset of every system, stepped past their first prompts.
var measureRuns = append(slices.Clone(familyRuns), struct {
	preset string
	steps  int
}{"gpu-h100", 3}, struct {
	preset string
	steps  int
}{"duplex", 3}, struct {
	preset string
	steps  int
}{"dejavu", 3})

var (
	// a timeline row's label: its name, then its busy share before the lanes' edge
	tlRowRe = regexp.MustCompile(`┃([^┃│]*?\S)\s+(\d+)%│`)
	// a Metrics figure: the word for what it measures (or blank under the first of its
	// kind), the group, a bar and the share
	metricRe = regexp.MustCompile(`^([A-Za-z ]*?) ?(\S+) +[█·]{4,} (\d+\.\d)%`)
	// the bank grid's line of units: busy, then name, bar and share for each
	unitRe = regexp.MustCompile(`^(.*) \S (\d+)%$`)
)

// The same lane's busy share reads the same in every pane, and every share is named for
// what it measures: the timeline's rows, the units beside the banks and the Metrics pane
// agree to within their rounding for every system.
func TestBusySharesAgreeAcrossPanes(t *testing.T) {
	for _, run := range measureRuns {
		t.Run(run.preset, func(t *testing.T) {
			d := newDriver(t, run.preset, 200, 60)
			for range run.steps - 1 {
				d.keys("n")
			}
			d.keys("2")
			screen := d.screen()
			// Every row's label as the timeline draws it, scrolled into view or not.
			tp := d.m.timelinePane()
			g := tp.geom()
			timeline := map[string]float64{}
			byRow := make([]float64, len(tp.rows))
			for r := range tp.rows {
				if mm := tlRowRe.FindStringSubmatch("┃" + ansi.Strip(tp.label(&g, r, false, true))); mm != nil {
					v, _ := strconv.ParseFloat(mm[2], 64)
					timeline[strings.TrimSpace(mm[1])], byRow[r] = v, v
				}
			}
			if len(timeline) == 0 {
				t.Fatalf("no timeline row gives its busy share:\n%s", screen)
			}
			if !strings.Contains(screen, "busy ▏") && !strings.Contains(screen, "busy ") {
				t.Fatalf("the timeline does not say its figures are busy shares:\n%s", screen)
			}
			agree := func(what string, a, b float64, rounding float64) {
				t.Helper()
				if math.Abs(a-b) > rounding+1e-9 {
					t.Errorf("%s: %.1f%% in one pane, %.1f%% in another:\n%s", what, a, b, screen)
				}
			}
			compared := 0
			// Metrics: each group's busy share against the timeline row holding exactly its lanes.
			snap := d.m.snap
			word := ""
			words := 0
			groups := map[string]bool{}
			for _, ln := range snap.Timeline.Lanes {
				groups[ln.Group] = true
			}
			for _, l := range strings.Split(ansi.Strip(d.m.metrics.View()), "\n") {
				mm := metricRe.FindStringSubmatch(l)
				if mm == nil {
					// A lane group's share anywhere else (a wrapped list of idle shares)
					// would read as a second figure of the group.
					for _, f := range regexp.MustCompile(`(\S+) \d+(\.\d)?%`).FindAllStringSubmatch(l, -1) {
						if groups[f[1]] {
							t.Errorf("Metrics gives %s a share outside its figures: %q", f[1], l)
						}
					}
					continue
				}
				if w := strings.TrimSpace(mm[1]); w != "" {
					word = w
					words++
				}
				if word == "" {
					t.Fatalf("a Metrics figure is not named for what it measures: %q", l)
				}
				if word != wordBusy {
					continue
				}
				v, _ := strconv.ParseFloat(mm[3], 64)
				var lanes []int
				for i, ln := range snap.Timeline.Lanes {
					if ln.Group == mm[2] {
						lanes = append(lanes, i)
					}
				}
				// The row holding exactly the group's lanes, or the mean of one row per lane.
				var sum float64
				n := 0
				for r, row := range tp.rows {
					switch {
					case slices.Equal(row.lanes, lanes):
						agree(fmt.Sprintf("group %s (timeline %q)", mm[2], row.name), v, byRow[r], 0.55)
						compared++
					case len(row.lanes) == 1 && slices.Contains(lanes, row.lanes[0]):
						sum += byRow[r]
						n++
					}
				}
				if n == len(lanes) && n > 1 {
					agree(fmt.Sprintf("group %s (mean of its %d timeline rows)", mm[2], n), v, sum/float64(n), 0.55)
					compared++
				}
			}
			if words == 0 {
				t.Fatalf("no Metrics figure:\n%s", screen)
			}
			// The units beside the banks, by the lane they are named for.
			for _, l := range strings.Split(screen, "\n") {
				_, rest, ok := strings.Cut(l, "│"+wordBusy+"  ")
				if !ok {
					continue
				}
				rest, _, _ = strings.Cut(rest, "│")
				for _, part := range strings.Split(strings.TrimRight(strings.TrimSuffix(strings.TrimSpace(rest), "…"), " "), partSep) {
					mm := unitRe.FindStringSubmatch(strings.TrimSpace(part))
					if mm == nil {
						continue
					}
					if tv, ok := timeline[mm[1]]; ok {
						v, _ := strconv.ParseFloat(mm[2], 64)
						agree("unit "+mm[1], v, tv, 1)
						compared++
					}
				}
			}
			if compared == 0 {
				t.Fatalf("no share of one pane could be compared with the timeline's:\n%s", screen)
			}
		})
	}
}
