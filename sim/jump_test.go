package sim

import "testing"

func TestJumpRefusesHistory(t *testing.T) {
	c := testNeuPIMs()
	c.Jump, c.HistoryCap = true, 8
	_, err := New(c)
	if err == nil || err.Error() != "a jumping engine cannot keep history: jumped iterations have no timeline" {
		t.Fatalf("got %v, want the history refusal", err)
	}
}

// TestAffineRejectsKinks checks the stretch test: a sample off the line between the ends,
// or a schedule of another shape, refuses the stretch; one on it within a picosecond per
// span passes.
func TestAffineRejectsKinks(t *testing.T) {
	mk := func(tt Time, busy float64, sig ...int32) sample {
		return sample{t: tt, flops: 2 * busy, util: map[string]float64{"gpu": busy}, bubble: map[string]float64{"gpu": float64(tt) - busy},
			cause: map[string]Causes{"gpu": {CauseTail: float64(tt) - busy}}, sig: sig, spans: 3}
	}
	a, b := mk(1_000_000, 500_000, 1, 2), mk(2_000_000, 900_000, 1, 2)
	if !onPlane(a, b, a, mk(1_500_002, 700_001, 1, 2), 0.5, 0) {
		t.Error("a midpoint within a picosecond per span was refused")
	}
	if onPlane(a, b, a, mk(1_500_100, 700_000, 1, 2), 0.5, 0) {
		t.Error("a midpoint 100 ps off the line was accepted")
	}
	if onPlane(a, b, a, mk(1_500_000, 700_000, 1, 3), 0.5, 0) {
		t.Error("a midpoint with another schedule shape was accepted")
	}
	if onPlane(a, mk(2_000_000, 900_000, 2, 2), a, mk(1_500_000, 700_000, 1, 2), 0.5, 0) {
		t.Error("ends with different schedule shapes were accepted")
	}
}

// TestJumpingSnapshotsAreBare checks that a headless engine builds no request table, no
// KV holders and (NeuPIMs) no bank grid, which only the explorer shows, and keeps the
// counters the result reads.
func TestJumpingSnapshotsAreBare(t *testing.T) {
	for _, jump := range []bool{false, true} {
		c := testNeuPIMs()
		c.Jump = jump
		_, s := firstStep(t, c)
		holders := 0
		for _, l := range s.KV.Locations {
			holders += len(l.Holders)
		}
		if got := len(s.Requests) > 0 && holders > 0 && len(s.Banks.PIM) > 0; got == jump {
			t.Errorf("jump %v: %d request rows, %d KV holders, %d bank cells", jump, len(s.Requests), holders, len(s.Banks.PIM))
		}
		if s.KV.Used == 0 || s.Metrics.LoadImbalance <= 0 || s.Metrics.Util["pim"] <= 0 {
			t.Errorf("jump %v: counters empty: KV %d blocks, load imbalance %v, PIM %v", jump, s.KV.Used, s.Metrics.LoadImbalance, s.Metrics.Util["pim"])
		}
	}
}
