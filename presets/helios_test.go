package presets

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

func heliosRun(t *testing.T, name string, edit ...string) (*sim.Engine, sim.Result) {
	t.Helper()
	cfg := presetConfig(t, name, edit...)
	cfg.Recycle = true
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := e.Step(); err != nil {
			if errors.Is(err, sim.ErrDone) {
				break
			}
			t.Fatal(err)
		}
	}
	return e, e.Result()
}

// Out-of-range meshes, block sizes and arrival rates are rejected with a message that
// names the key and the allowed values; none panics, whatever the preset's system.
func TestHeLioSBadSettings(t *testing.T) {
	set := []struct{ kv, want string }{
		{"hb.mesh=32", "hb.mesh: 32 is out of range; want 1 to 16"},
		{"hb.mesh=0", "hb.mesh: 0 is out of range; want 1 to 16"},
		{"kvcache.block_tokens=0", "kvcache.block_tokens: 0 is out of range; want 1 to 4096"},
		{"kvcache.block_tokens=8192", "kvcache.block_tokens: 8192 is out of range; want 1 to 4096"},
		{"workload.rate_per_s=-1", "workload.rate_per_s: -1 is out of range"},
		{"kvcache.alloc=greedy", `kvcache.alloc: "greedy" is not allowed; want one of spatial, static_module, round_robin, balanced_only`},
		{"hb.channels=128", "hb.channels: 128 is out of range; want 1 to 64"},
		{"hb.dataflow=torus", `hb.dataflow: "torus" is not allowed; want one of mesh, ring`},
		{"kvcache.static_compute=half", `kvcache.static_compute: "half" is not allowed; want one of window, live`},
		{"hb.row_activate_ns=-1", "hb.row_activate_ns: -1 is out of range"},
	}
	for _, c := range set {
		f, _ := Get("helios")
		if err := f.Set(c.kv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: got %v, want %q", c.kv, err, c.want)
		}
	}
	build := []struct {
		preset string
		kv     []string
		want   string
	}{
		{"helios", []string{"hb.mesh=3"}, "hb.mesh: a 3×3 mesh does not divide the 16×16 bank grid of a die; want a divisor of 16"},
		{"helios", []string{"workload.arrival=poisson", "workload.rate_per_s=0"}, "Poisson arrivals need a rate above 0"},
		{"gpu-sglang", []string{"hb.mesh=4"}, "hb.mesh"}, // a section the system does not have
		{"duplex", []string{"cluster.ep=3", "model.name=mixtral-8x22b"}, "cluster.ep: Mixtral-8x22B has 8 experts, which ep=3 does not divide"},
	}
	for _, c := range build {
		f, _ := Get(c.preset)
		for _, kv := range c.kv {
			if err := f.Set(kv); err != nil {
				t.Fatalf("%s: %v", kv, err)
			}
		}
		_, err := Build(f, nil)
		if c.preset == "gpu-sglang" {
			// the stray section is ignored by the planner or rejected, never a panic
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: got %v, want %q", c.preset, c.kv, err, c.want)
		}
	}
	f, _ := Get("helios")
	f.Set("kvcache.alloc=round_robin")
	f.Set("hb.attention_flow=non_tiled")
	cfg, err := Build(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.New(cfg); err == nil || !strings.Contains(err.Error(), "set kvcache.alloc=static_module") {
		t.Errorf("non-tiled with blocks: %v", err)
	}
	f, _ = Get("helios")
	f.Set("hb.dataflow=ring")
	if cfg, err = Build(f, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.New(cfg); err == nil || !strings.Contains(err.Error(), "set hb.attention_flow=non_tiled") {
		t.Errorf("ring with tiled attention: %v", err)
	}
}

// HeLioS Fig. 4: static reservation leaves 62.5% of the reserved KV empty and a third
// request waits although the memory has room; blocks of L/8 over all four PEs take all three.
func TestHeLioSFig4Preset(t *testing.T) {
	_, r := heliosRun(t, "helios-fig4")
	// 0.375L + 1 generated token live in each of two reservations of L
	if want := 1 - 2*385.0/2048; r.KV.PeakFragmentation < want-1e-9 || r.KV.PeakFragmentation > 0.625 {
		t.Errorf("static: peak fragmentation %.4f, want %.4f (62.5%% before the first token)", r.KV.PeakFragmentation, want)
	}
	if r.QueuePeak != 1 || r.RequestsCompleted != 3 {
		t.Errorf("static: queue peak %d, completed %d; want the third request to wait, then finish", r.QueuePeak, r.RequestsCompleted)
	}
	_, r = heliosRun(t, "helios-fig4", "kvcache.alloc=spatial", "hb.attention_flow=tiled")
	if r.QueuePeak != 0 || r.KV.PeakFragmentation > 0.25 {
		t.Errorf("blocks: queue peak %d, fragmentation %.3f; want all three admitted at once", r.QueuePeak, r.KV.PeakFragmentation)
	}
}

// The JSON carries what the family defines: the PE load imbalance and the peak
// fragmentation (a static reservation's unused tail counts as fragmentation).
func TestHeLioSResultFigures(t *testing.T) {
	_, r := heliosRun(t, "helios", "workload.requests=40")
	if r.LoadImbalance == nil || *r.LoadImbalance < 1 || *r.LoadImbalance > 2 {
		t.Fatalf("helios load imbalance %v", r.LoadImbalance)
	}
	if r.KV.PeakFragmentation <= 0 || r.KV.PeakFragmentation > 0.1 {
		t.Fatalf("helios blocks of 64: peak fragmentation %.3f", r.KV.PeakFragmentation)
	}
	if r.E2EMS.P50 <= 0 || r.TBTMS.P99 <= 0 {
		t.Fatalf("latencies: e2e %v tbt %v", r.E2EMS, r.TBTMS)
	}
	_, r = heliosRun(t, "helios-nontiled", "workload.requests=40")
	if r.KV.PeakFragmentation < 0.3 {
		t.Fatalf("static reservation of the 16K context: peak fragmentation %.3f", r.KV.PeakFragmentation)
	}
}

// The helios preset opens on a busy mesh: the decode benchmark's full batch (Fig. 17) from
// the first step, so every PE holds KV blocks and computes attention at first sight.
func TestHeLioSDefaultOpensBusy(t *testing.T) {
	e, err := sim.New(presetConfig(t, "helios"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Step()
	if err != nil {
		t.Fatal(err)
	}
	if s.Batch != 64 {
		t.Fatalf("the first step decodes %d requests, want the full batch of 64", s.Batch)
	}
	for p, loc := range s.KV.Locations {
		if len(loc.Holders) == 0 {
			t.Fatalf("PE %s holds no KV at the first step", loc.Label)
		}
		if s.Banks.PIM[p*s.Banks.Cols] <= 0 {
			t.Fatalf("PE %s shows no attention at the first step", loc.Label)
		}
	}
}

// HeLioS samples the Mooncake trace "across different length ranges" (Sec. VI-C): a
// request comes from the part of the trace inside the range, not clipped to its cap. The
// fit of the trace filtered to a 4K context keeps its spread (a coefficient of variation
// near 0.33, few prompts near the cap), where clipping it piled 71% of the prompts at the
// cap and left a coefficient of variation of 0.10.
func TestMooncakeLengthsFilteredToTheirRange(t *testing.T) {
	cv := func(v []int) (mean, cv float64) {
		var s, s2 float64
		for _, x := range v {
			s += float64(x)
			s2 += float64(x) * float64(x)
		}
		n := float64(len(v))
		mean = s / n
		return mean, math.Sqrt(s2/n-mean*mean) / mean
	}
	for _, c := range []struct {
		dataset       string
		cap           int
		mean, cv, top float64
	}{
		{"mooncake-4k", 3584, 2296, 0.325, 0.05},
		{"mooncake", 16384, 6132, 0.633, 0.05},
		{"mooncake-e2e", 8192, 4119, 0.480, 0.05},
	} {
		ds := presetConfig(t, "helios", "workload.dataset="+c.dataset).Workload.Dataset
		in, _ := ds.Sample(40000, 5)
		m, v := cv(in)
		near := 0
		for _, x := range in {
			if x > c.cap-c.cap/50 {
				near++
			}
		}
		if math.Abs(m-c.mean) > 0.02*c.mean || math.Abs(v-c.cv) > 0.02 {
			t.Errorf("%s: prompts of mean %.0f, coefficient of variation %.3f; want the filtered fit's %.0f and %.3f", c.dataset, m, v, c.mean, c.cv)
		}
		if share := float64(near) / float64(len(in)); share > c.top {
			t.Errorf("%s: %.1f%% of the prompts within 2%% of the %d cap; a filtered range holds few there", c.dataset, 100*share, c.cap)
		}
	}
}
