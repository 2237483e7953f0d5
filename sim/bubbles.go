package sim

// Bubble forensics: where the idle lane-time of an iteration went, by cause.
//
// Every idle interval the scheduler records has one cause (BubbleCause), so the idle time
// of a lane group splits exactly into causes. Only the part of a bubble inside the
// iteration, [0, makespan), counts; a lane whose work on its own clock (AddAt) runs past
// the end of the iteration is busy there but has no bubble to split.

// Causes is the idle time of each cause as a fraction, indexed by BubbleCause.
type Causes [NumCauses]float64

// Sum is the total over every cause.
func (c Causes) Sum() float64 {
	t := 0.0
	for _, v := range c {
		t += v
	}
	return t
}

// bubbleForensics splits the idle time of the iteration of length t (the finished
// schedule's makespan) by cause. byGroup gives each lane group's idle time per cause as a
// fraction of the group's lane-time (lanes × t); its causes sum to bubbleByGroup's figure
// for the group unless a span of the group runs past t (AddAt work beside the iteration),
// which bubbleByGroup counts as busy time and here has no bubble, so the sum is higher by
// that overhang.
//
// share is the iteration's bubble share: idle lane-time other than no-work time, over the
// lane-time the lanes could have used,
//
//	share = Σ idle(c ≠ no_work) / (lanes × t − idle(no_work)),
//
// so a lane with nothing to do this iteration (a prefill engine between prompts) neither
// dilutes nor inflates it, while a capacity stall counts. byCause splits share by cause
// (its no_work entry is 0) and sums to it.
func bubbleForensics(s *Schedule, t Time) (byGroup map[string]Causes, share float64, byCause Causes) {
	// Lanes of a group are usually adjacent; index them by group once per iteration.
	var groups []string
	var lanes []int
	of := make([]int, len(s.Lanes))
	for i, l := range s.Lanes {
		g := len(groups) - 1
		if g < 0 || groups[g] != l.Group {
			g = 0
			for g < len(groups) && groups[g] != l.Group {
				g++
			}
			if g == len(groups) {
				groups, lanes = append(groups, l.Group), append(lanes, 0)
			}
		}
		of[i] = g
		lanes[g]++
	}
	idle := make([][NumCauses]Time, len(groups))
	var total [NumCauses]Time
	// The schedule summed each lane's bubbles inside the iteration as it recorded them;
	// only those before work on its own clock may need cutting at t.
	for l, c := range s.laneIdle {
		for k, d := range c {
			idle[of[l]][k] += d
			total[k] += d
		}
	}
	for _, i := range s.ownClock {
		b := s.Bubbles[i]
		if b.Start >= t {
			continue
		}
		d := min(b.Start+b.Dur, t) - b.Start
		idle[of[b.Lane]][b.Cause] += d
		total[b.Cause] += d
	}
	byGroup = make(map[string]Causes, len(groups))
	for g, name := range groups {
		var c Causes
		for k, d := range idle[g] {
			c[k] = float64(d) / (float64(lanes[g]) * float64(t))
		}
		byGroup[name] = c
	}
	room := float64(len(s.Lanes))*float64(t) - float64(total[CauseNoWork])
	if room > 0 {
		for k, d := range total {
			if BubbleCause(k) != CauseNoWork {
				byCause[k] = float64(d) / room
				share += byCause[k]
			}
		}
	}
	return byGroup, share, byCause
}

// ShareCauses are the causes the bubble share splits into: every one but no-work, which
// it leaves out.
func ShareCauses() []BubbleCause {
	out := make([]BubbleCause, 0, NumCauses-1)
	for c := range NumCauses {
		if c != CauseNoWork {
			out = append(out, c)
		}
	}
	return out
}
