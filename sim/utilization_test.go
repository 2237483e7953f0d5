package sim

import (
	"math"
	"testing"
)

// UtilMeasure names what each planner's utilisation figures divide: the engines whose
// work is counted in FLOPs, the memories' bandwidth, and the time of everything else.
func TestUtilMeasure(t *testing.T) {
	for _, c := range []struct {
		system, key string
		want        Measure
	}{
		{SystemNeuPIMs, "npu", MeasureFLOPs}, {SystemNeuPIMs, "pim", MeasureBusy}, {SystemNeuPIMs, "bandwidth", MeasureBandwidth},
		{SystemL3, "gpu", MeasureFLOPs}, {SystemL3, "pim", MeasureBusy}, {SystemL3, "pcie", MeasureBusy},
		{SystemLoLPIM, "pim", MeasureFLOPs}, {SystemLoLPIM, "io", MeasureBusy},
		{SystemHeLioS, "pe", MeasureFLOPs}, {SystemHeLioS, "noc", MeasureBusy},
		{SystemHermes, "gpu", MeasureBusy}, {SystemHermes, "ndp_bandwidth", MeasureBandwidth},
		{SystemOffload, "gpu", MeasureBusy}, {SystemGPU, "gpu", MeasureFLOPs},
	} {
		if got := UtilMeasure(c.system, c.key); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.system, c.key, got, c.want)
		}
	}
}

// A figure UtilMeasure calls busy is a busy share of the group's lanes: their mean (what
// 1 − Bubble gives) or one of them (HeLioS's noc is its inter-PE NoC).
func TestBusyFiguresAreTime(t *testing.T) {
	for _, c := range []Config{testNeuPIMs(), l3Small(testL3()), testHeLioS(), testHermes()} {
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		var s *Snapshot
		for range 3 {
			if s, err = e.Step(); err != nil {
				t.Fatal(err)
			}
		}
		busy := make([]Time, len(s.Timeline.Lanes))
		for _, sp := range s.Timeline.Spans {
			busy[sp.Lane] += sp.Dur
		}
		for k, v := range s.Metrics.Util {
			if UtilMeasure(c.System, k) != MeasureBusy {
				continue
			}
			idle, group := s.Metrics.Bubble[k]
			if !group {
				continue
			}
			ok := math.Abs(v-(1-idle)) < 1e-9
			for i, l := range s.Timeline.Lanes {
				ok = ok || l.Group == k && math.Abs(v-float64(busy[i])/float64(s.IterTime)) < 1e-9
			}
			if !ok {
				t.Errorf("%s %s: %.4f is not a busy share of its lanes (mean %.4f)", c.System, k, v, 1-idle)
			}
		}
	}
}
