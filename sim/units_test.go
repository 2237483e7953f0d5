package sim

import (
	"math"
	"testing"
)

// A unit the bank grid draws beside the banks under a lane's name is that lane: its busy
// share is the lane's busy time over the iteration, as the timeline gives it. L3's two
// PCIe directions were once drawn under each other's names.
func TestSystemUnitsAreTheirLanes(t *testing.T) {
	c := l3Small(testL3())
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	matched := 0
	for range 6 {
		s, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		busy := make([]Time, len(s.Timeline.Lanes))
		for _, sp := range s.Timeline.Spans {
			busy[sp.Lane] += sp.Dur
		}
		for _, u := range s.Banks.Units {
			if u.Level != UnitSystem {
				continue
			}
			for i, l := range s.Timeline.Lanes {
				if l.Name != u.Name {
					continue
				}
				want := min(1, float64(busy[i])/float64(s.IterTime))
				if math.Abs(u.Busy[0]-want) > 1e-9 {
					t.Fatalf("step %d: the bank grid's %q is %.4f busy, its lane %.4f", s.Step, u.Name, u.Busy[0], want)
				}
				matched++
			}
		}
	}
	if matched == 0 {
		t.Fatal("no unit of the bank grid is named as a lane")
	}
}
