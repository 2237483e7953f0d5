package presets

import (
	"math"
	"testing"

	"github.com/pimtui/pimtui/presets/internal/testutil"
	"github.com/pimtui/pimtui/sim"
)

// On every preset the causes of each lane group's idle time sum to its bubble_fraction,
// less exactly the time work on its own clock (AddAt) runs past the iterations' ends,
// which bubble_fraction counts as busy and no bubble covers. Where no work runs on its
// own clock the two are equal.
func TestBubbleByCauseSumsToBubbleFraction(t *testing.T) {
	type run struct {
		name string
		sets []string
	}
	steps := "workload.steps=40"
	if testutil.Quick() {
		steps = "workload.steps=12"
	}
	var runs []run
	for _, n := range Names() {
		runs = append(runs, run{n, []string{steps}})
	}
	// The disaggregated prefill instance and its KV stream run on their own clock.
	runs = append(runs, run{"helios", []string{steps, "workload.requests=400", "workload.prefill=run"}},
		run{"gpu-sglang", []string{steps, "workload.prefill=run"}})
	for _, r := range runs {
		t.Run(r.name+" "+r.sets[len(r.sets)-1], func(t *testing.T) {
			cfg := presetConfig(t, r.name, r.sets...)
			cfg.Recycle = true
			e, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			over := map[string]float64{} // Σ over iterations of overhang / lanes
			var total sim.Time
			eachStep(t, e, func(s *sim.Snapshot) {
				tl := &s.Timeline
				lanes := map[string]int{}
				for _, l := range tl.Lanes {
					lanes[l.Group]++
				}
				for _, sp := range tl.Spans {
					in := max(0, min(sp.End(), tl.Makespan)-sp.Start)
					if o := sp.Dur - in; o > 0 {
						g := tl.Lanes[sp.Lane].Group
						over[g] += float64(o) / float64(lanes[g])
					}
				}
				total += s.IterTime
				for g, c := range s.Metrics.BubbleCause {
					if c.Sum() < -1e-12 || c.Sum() > 1+1e-12 {
						t.Fatalf("step %d %s: causes sum to %v", s.Step, g, c.Sum())
					}
				}
				share := 0.0
				for _, v := range s.Metrics.ShareByCause {
					share += v
				}
				if math.Abs(share-s.Metrics.BubbleShare) > 1e-9 || s.Metrics.BubbleShare < 0 || s.Metrics.BubbleShare > 1+1e-12 {
					t.Fatalf("step %d: share %v, by cause %v", s.Step, s.Metrics.BubbleShare, s.Metrics.ShareByCause)
				}
			})
			res := e.Result()
			if len(res.BubbleByCause) != len(res.BubbleFraction) {
				t.Fatalf("groups %v vs %v", res.BubbleByCause, res.BubbleFraction)
			}
			for g, f := range res.BubbleFraction {
				sum := 0.0
				for _, v := range res.BubbleByCause[g] {
					sum += v
				}
				want := f + over[g]/float64(total)
				if math.Abs(sum-want) > 1e-9 {
					t.Errorf("%s: causes sum to %.12f, want bubble_fraction %.12f + overhang %.12f", g, sum, f, over[g]/float64(total))
				}
				if over[g] > 0 {
					t.Logf("%s: overhang %.3g of the lane-time", g, over[g]/float64(total))
				}
			}
		})
	}
}
