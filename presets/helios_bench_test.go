package presets

import (
	"errors"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

// stepHeLioS times one steady-state iteration of a HeLioS-family preset under edits.
func stepHeLioS(b *testing.B, name string, edit ...string) *sim.Snapshot {
	e := engineFor(b, name, append([]string{"workload.requests=1000000", "workload.arrival=closed"}, edit...)...)
	for range 50 {
		e.Step()
	}
	var s *sim.Snapshot
	for b.Loop() {
		var err error
		if s, err = e.Step(); errors.Is(err, sim.ErrDone) {
			b.Fatal("run ended")
		}
	}
	return s
}

// BenchmarkHeLioSStep16x16 is one iteration on a 16×16 PE mesh (256 PEs, the timeline
// aggregated to 4×4 lanes) at batch 64.
func BenchmarkHeLioSStep16x16(b *testing.B) {
	s := stepHeLioS(b, "helios", "hb.mesh=16")
	b.ReportMetric(float64(len(s.KV.Locations)), "PEs")
}

// BenchmarkHeLioSMillionBlocks is one iteration with about a million KV blocks live:
// blocks of one token, batch 128 of Mooncake-like sequences (mean about 7,400 tokens).
func BenchmarkHeLioSMillionBlocks(b *testing.B) {
	s := stepHeLioS(b, "helios", "kvcache.block_tokens=1", "workload.batch=128")
	b.ReportMetric(float64(s.KV.Used), "blocks")
}
