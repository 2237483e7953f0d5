package presets

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pimtui/pimtui/presets/internal/testutil"
	"github.com/pimtui/pimtui/sim"
)

var hermesFamily = []string{"hermes", "accelerate", "dejavu", "flexgen", "hermes-base", "hermes-host"}

// runAll steps an engine to the end and returns its result.
func runAll(t testing.TB, cfg sim.Config) sim.Result {
	t.Helper()
	cfg.Recycle = true
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := e.Step(); err != nil {
			if !errors.Is(err, sim.ErrDone) {
				t.Fatal(err)
			}
			break
		}
	}
	return e.Result()
}

// The family lists "hermes" first, then the rest alphabetically, and every preset's
// default run ends in under two seconds.
func TestHermesFamilyDefaults(t *testing.T) {
	var got []string
	for _, n := range Names() {
		f, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if f.Family == "hermes" {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, hermesFamily) {
		t.Errorf("hermes family lists %v, want %v", got, hermesFamily)
	}
	for _, n := range hermesFamily {
		cfg := presetConfig(t, n)
		if cfg.Family != "hermes" || (cfg.System != sim.SystemHermes && cfg.System != sim.SystemOffload) {
			t.Fatalf("%s: family %q system %q", n, cfg.Family, cfg.System)
		}
		if testutil.Quick() {
			continue
		}
		start := cpuTime()
		r := runAll(t, cfg)
		if d := cpuTime() - start; d > 2*time.Second {
			t.Errorf("%s: default run took %v of processor time", n, d)
		}
		if r.ThroughputTokS <= 0 {
			t.Errorf("%s: throughput %v", n, r.ThroughputTokS)
		}
	}
}

// The paper's ablation path (Fig. 13) is a set of --set switches on the hermes preset:
// random mapping → partition (offline mapping only) → adjustment (online promotion) →
// full Hermes (window remapping too). Each stage decodes at least as fast as the one
// before, and the first step is strictly faster.
func TestHermesAblationPath(t *testing.T) {
	if testutil.Quick() {
		t.Skip("four 70B runs")
	}
	path := []struct {
		name string
		sets []string
	}{
		{"random", []string{"hermes.mapper=random", "hermes.adjust=false", "hermes.remap=false"}},
		{"partition", []string{"hermes.adjust=false", "hermes.remap=false"}},
		{"adjustment", []string{"hermes.remap=false"}},
		{"full", nil},
	}
	var tbt []float64
	for _, p := range path {
		cfg := presetConfig(t, "hermes", append(p.sets, "workload.steps=21")...)
		cfg.Recycle = true
		e, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var dec sim.Time
		var imb float64
		n := 0
		eachStep(t, e, func(s *sim.Snapshot) {
			if s.Prefills == 0 {
				dec += s.IterTime
				imb += s.Metrics.LoadImbalance
				n++
			}
		})
		ms := dec.Seconds() * 1e3 / float64(n)
		tbt = append(tbt, ms)
		t.Logf("%-10s decode %.3f ms per token, DIMM imbalance %.3f", p.name, ms, imb/float64(n))
	}
	if tbt[0] <= tbt[1] {
		t.Errorf("the offline partition should beat random mapping: %.2f vs %.2f ms", tbt[1], tbt[0])
	}
	for i := 2; i < len(tbt); i++ {
		if tbt[i] > tbt[i-1]*1.001 {
			t.Errorf("%s (%.2f ms) is slower than %s (%.2f ms)", path[i].name, tbt[i], path[i-1].name, tbt[i-1])
		}
	}
}

// Bad input: a model the DIMMs cannot hold even all together, and zero DIMMs, give
// errors that say what is wrong and how to fix it.
func TestHermesBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		sets []string
		want []string
	}{
		{"model larger than every DIMM together", []string{"ndp.capacity_gb=8"},
			[]string{"LLaMA2-70B needs 137.4 GB", "8 NDP-DIMMs of 8 GB hold 64.0 GB", "at least 18", "--set ndp.dimms=18"}},
		{"too few DIMMs", []string{"ndp.dimms=4"}, []string{"at least 5", "--set ndp.dimms=5"}},
		{"zero DIMMs", []string{"ndp.dimms=0"}, []string{"needs at least one", "ndp.dimms = 0", "the paper uses 8"}},
		{"hermes-host: weights beyond host memory", []string{"ndp.capacity_gb=4"}, []string{"host DIMMs"}},
	} {
		name := "hermes"
		if strings.HasPrefix(c.name, "hermes-host") {
			name = "hermes-host"
		}
		cfg := presetConfig(t, name, c.sets...)
		_, err := sim.New(cfg)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
	// Out-of-range values are caught by the preset loader, naming the key.
	f, err := Get("hermes")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Set("ndp.dimms=-1"); err == nil || !strings.Contains(err.Error(), "ndp.dimms") {
		t.Errorf("ndp.dimms=-1: %v", err)
	}
	if err := f.Set("platform.pcie_efficiency=1.5"); err == nil || !strings.Contains(err.Error(), "platform.pcie_efficiency") {
		t.Errorf("platform.pcie_efficiency=1.5: %v", err)
	}
}

// BenchmarkHermesStep70B is one decode step of the hermes preset (LLaMA2-70B, batch 1)
// with every one of its 2.95 M neurons tracked, the snapshot's neuron bins included.
func BenchmarkHermesStep70B(b *testing.B) {
	for _, batch := range []string{"1", "16"} {
		b.Run("batch"+batch, func(b *testing.B) {
			e := engineFor(b, "hermes", "workload.requests=1000000", "workload.steps=0", "workload.batch="+batch, "workload.output_len=100000")
			for range 3 {
				e.Step()
			}
			for b.Loop() {
				s, err := e.Step()
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Neurons.Blocks) != 160 {
					b.Fatalf("%d neuron blocks", len(s.Neurons.Blocks))
				}
			}
		})
	}
}

// Hermes' end-to-end throughput rises with the batch (§V-C, Fig. 11).
func TestHermesBatchScaling(t *testing.T) {
	if testutil.Quick() {
		t.Skip("three end-to-end runs")
	}
	var prev float64
	for _, b := range []string{"1", "4", "16"} {
		sets := []string{"model.name=opt-13b", "workload.batch=" + b, "workload.requests=" + b, "workload.steps=0"}
		h := runAll(t, presetConfig(t, "hermes", sets...)).ThroughputTokS
		t.Logf("batch %s: Hermes %.1f tokens/s", b, h)
		if h <= prev {
			t.Errorf("batch %s: %.1f tokens/s, not above %.1f at the smaller batch", b, h, prev)
		}
		prev = h
	}
}
