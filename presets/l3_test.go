package presets

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pimtui/pimtui/presets/internal/testutil"
	"github.com/pimtui/pimtui/sim"
)

var l3Family = []string{"l3", "hbm-pim", "rank-pim", "gpu-dgx", "cpu-offload"}

// The family lists first the preset named after it, and every preset's default run ends
// in well under two seconds.
func TestL3FamilyDefaults(t *testing.T) {
	names := Names()
	i := -1
	for k, n := range names {
		if n == "l3" {
			i = k
			break
		}
	}
	if i < 0 {
		t.Fatal("no l3 preset")
	}
	for _, n := range l3Family {
		cfg := presetConfig(t, n)
		if cfg.Family != "l3" || cfg.System != sim.SystemL3 {
			t.Fatalf("%s: family %q system %q", n, cfg.Family, cfg.System)
		}
		if testutil.Quick() {
			continue
		}
		cfg.Recycle = true
		start := cpuTime()
		e, err := sim.New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for {
			if _, err := e.Step(); err != nil {
				if !errors.Is(err, sim.ErrDone) {
					t.Fatalf("%s: %v", n, err)
				}
				break
			}
		}
		if d := cpuTime() - start; d > 2*time.Second {
			t.Errorf("%s: default run took %v of processor time", n, d)
		}
		if r := e.Result(); r.ThroughputTokS <= 0 {
			t.Errorf("%s: throughput %v", n, r.ThroughputTokS)
		}
	}
}

// GPU-only OPT-66B (tp 2, four replicas of 40 GB of KV each) cannot hold LongBench's longest
// prompts: a clear out-of-memory error, not a crash (the paper reports out-of-memory for
// OPT-66B); L3 holds the same requests in its host DIMMs.
func TestGPUDGXOutOfMemory(t *testing.T) {
	for _, n := range []string{"gpu-dgx", "hbm-pim"} {
		cfg := presetConfig(t, n, "model.name=opt-66b", "workload.dataset=longbench-l3")
		_, err := sim.New(cfg)
		var oom *sim.UnfitError
		if !errors.As(err, &oom) || !strings.Contains(err.Error(), "out of memory") || !strings.Contains(err.Error(), "keep the KV in host memory (l3)") {
			t.Fatalf("%s: got %v", n, err)
		}
	}
	if _, err := sim.New(presetConfig(t, "l3", "model.name=opt-66b", "workload.dataset=longbench-l3")); err != nil {
		t.Fatalf("l3: %v", err)
	}
	if _, err := sim.New(presetConfig(t, "gpu-dgx", "model.name=opt-66b", "workload.dataset=dolphin-r1")); err != nil {
		t.Fatalf("gpu-dgx on Dolphin-r1: %v", err)
	}
}

// Each of L3's mechanisms is a --set switch; impossible values are errors that name the
// key and say what to do.
func TestL3Overrides(t *testing.T) {
	f, err := Get("l3")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"l3.comm_overlap=false", "l3.scheduler=prefill_first", "l3.sub_batches=1", "l3.predictor=paper",
		"l3.charge_relayout=true", "l3.host.dimms_per_channel=1", "l3.host.capacity_gib=512", "l3.link.pcie_gbps_per_gpu=32"} {
		if err := f.Set(kv); err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
	}
	if _, err := Build(f, nil); err != nil {
		t.Fatal(err)
	}
	bad := []struct{ kv, want string }{
		{"l3.attention=npu", "want one of bank_pim, rank_pim, hbm_pim, cpu, gpu"},
		{"l3.sub_batches=3", "3 is out of range; want 1 to 2"},
		{"l3.host.channels=0", "0 is out of range"},
		{"l3.comm_overlap=maybe", "not a valid bool"},
	}
	for _, b := range bad {
		f, _ := Get("l3")
		if err := f.Set(b.kv); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want %q", b.kv, err, b.want)
		}
	}
	// Values the schema allows but the system cannot use.
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"l3.gpu.name=a100"}, `unknown GPU "a100"; did you mean`},
		{[]string{"l3.attention=gpu"}, `l3.scheduler: the L3 scheduler (l3.scheduler = "l3") plans against DIMM-PIM attention`},
		{[]string{"model.tp=3"}, "model.tp: tp = 3 does not divide the 8 GPUs"},
		{[]string{"l3.attention=cpu", "l3.scheduler=prefill_first", "l3.sub_batches=1"}, "l3.sub_batches: CPU offload pipelines a GPU-attention and a CPU-attention sub-batch"},
		{[]string{"model.pp=2"}, "model.pp: the L3 family splits a model by tensor and data parallelism only"},
		{[]string{"l3.split_if_shorter=true"}, `l3.split_if_shorter: l3.split_if_shorter chooses between one and two decode sub-batches of the HBM-PIM baseline; it needs l3.attention = "hbm_pim"`},
	} {
		f, _ := Get("l3")
		for _, kv := range c.sets {
			f.Set(kv)
		}
		if _, err := Build(f, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.sets, err, c.want)
		}
	}
	// A rankset count or capacity the model cannot fit is an error from sim.New (exit 2).
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"l3.host.dimms_per_channel=16", "l3.host.ranks_per_dimm=8", "model.name=gpt-89b", "model.tp=4"}, "128 ranksets (16 DIMMs × 8 ranks per channel) but GPT-89B has 48 layers"},
		{[]string{"l3.host.capacity_gib=64"}, "raise l3.host.capacity_gib"},
		{[]string{"l3.gpu.count=1", "model.tp=1"}, "raise model.tp"},
	} {
		cfg := presetConfig(t, "l3", c.sets...)
		if _, err := sim.New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.sets, err, c.want)
		}
	}
}

// The ablation of Fig. 10-a as --set commands on the l3 preset: naive (single batch,
// monolithic DIMMs, synchronous transfers) < + scheduling (§5.2: two sub-batches, adaptive
// chunking) < full L3 (+ §5.1: rankset-exclusive, asynchronous communication); charging
// the re-layout (§4.1) costs throughput.
func TestL3AblationBySet(t *testing.T) {
	run := func(sets ...string) float64 {
		cfg := presetConfig(t, "l3", append([]string{"workload.steps=700", "workload.warmup=500"}, sets...)...)
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
		return e.Result().ThroughputTokS
	}
	naive := run("l3.scheduler=prefill_first", "l3.sub_batches=1", "l3.comm_overlap=false")
	sched := run("l3.comm_overlap=false")
	full := run()
	if !(naive < sched && sched < full) {
		t.Errorf("throughput naive %.0f, +scheduling %.0f, full L3 %.0f tok/s: want increasing", naive, sched, full)
	}
	if charged := run("l3.charge_relayout=true"); charged >= full {
		t.Errorf("charging the re-layout: %.0f tok/s, full L3 %.0f; want lower", charged, full)
	}
}

// The scalability study of §6.2 (Fig. 9) varies the host's ranksets (2–16 per channel:
// bandwidth) and capacity (512 GB–4 TB) on GPT-175B: base 512 GB with 2 ranksets,
// Bw-only 512 GB with 16, Cap-only 4 TB with 2, Bw-Cap 4 TB with 16. Each is a --set of the
// l3 preset and runs on GPT-175B/OpenR1, its bank-PIM bandwidth scaling with the ranks.
func TestL3ScalabilityConfigurationsRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		gib, dimms  int
		tbps        float64 // 16 channels × ranksets × 204.8 GB/s
		memoryFills bool    // within the 600 iterations run here
	}{
		{"base", 512, 1, 6.5536, true},
		{"Bw-only", 512, 8, 52.4288, true},
		{"Cap-only", 4096, 1, 6.5536, false},
		{"Bw-Cap", 4096, 8, 52.4288, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := presetConfig(t, "l3", "l3.host.ranks_per_dimm=2", fmt.Sprintf("l3.host.dimms_per_channel=%d", tc.dimms),
				fmt.Sprintf("l3.host.capacity_gib=%d", tc.gib), "workload.steps=600")
			if got := cfg.L3.Host.BankPIMBandwidth() / 1e12; math.Abs(got-tc.tbps) > 1e-6 {
				t.Fatalf("bank-PIM bandwidth %.4f TB/s, want %.4f", got, tc.tbps)
			}
			e, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			full := false
			eachStep(t, e, func(s *sim.Snapshot) {
				full = full || s.Queue > 0 && float64(s.KV.Reserved) > 0.95*float64(s.KV.Capacity)
			})
			if r := e.Result(); r.ThroughputTokS <= 0 || r.Iterations != 600 {
				t.Fatalf("%d iterations at %.0f tok/s", r.Iterations, r.ThroughputTokS)
			}
			if full != tc.memoryFills {
				t.Fatalf("host memory full with requests waiting: %v, want %v", full, tc.memoryFills)
			}
		})
	}
}

// The explorer opens L3 and its rank-level baseline where the host's 2 TiB have filled,
// the regime the paper talks about (capacity sets the batch), not at iteration 1.
func TestL3OpensWhereTheHostIsFull(t *testing.T) {
	for _, n := range []string{"l3", "rank-pim"} {
		cfg := presetConfig(t, n)
		cfg.Recycle = true
		if cfg.OpenAt < 2 {
			t.Fatalf("%s opens at iteration %d", n, cfg.OpenAt)
		}
		e, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.StepTo(cfg.OpenAt); err != nil {
			t.Fatal(err)
		}
		s, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		if s.Step != cfg.OpenAt || s.Metrics.KVUtil < 0.98 {
			t.Errorf("%s opens at iteration %d with the KV memory %.0f%% full", n, s.Step, 100*s.Metrics.KVUtil)
		}
	}
}

// L3's reasoning traces stop where their generators stopped each generation (OpenR1-Math:
// two of 16,384 tokens; OpenThoughts: a 32,768-token chain of thought and an 8,000-token
// answer; Dolphin-r1, assumed: DeepSeek-R1's 32,768) and still have Table 4's mean and
// standard deviation.
func TestL3TraceLengthsBoundedWithTable4Statistics(t *testing.T) {
	for _, tc := range []struct {
		dataset   string
		mean, std float64
		max       int
	}{{"openr1", 12684.1, 8464.6, 32768}, {"dolphin-r1", 3926.2, 4216.0, 32768}, {"openthoughts", 6366.7, 4662.9, 40768}} {
		ds := presetConfig(t, "l3", "workload.dataset="+tc.dataset).Workload.Dataset
		_, out := ds.Sample(400000, 3)
		var sum, sq float64
		top := 0
		for _, v := range out {
			sum += float64(v)
			sq += float64(v) * float64(v)
			top = max(top, v)
		}
		mean := sum / float64(len(out))
		std := math.Sqrt(sq/float64(len(out)) - mean*mean)
		if top > tc.max || math.Abs(mean-tc.mean)/tc.mean > 0.01 || math.Abs(std-tc.std)/tc.std > 0.015 {
			t.Errorf("%s: outputs %.1f ± %.1f, longest %d; want %.1f ± %.1f within %d", tc.dataset, mean, std, top, tc.mean, tc.std, tc.max)
		}
	}
}

// A dataset whose lengths are to keep their standard deviation within a bound that no
// truncated log-normal with that mean reaches is refused, saying which and what to do.
func TestMatchStdInfeasibleBound(t *testing.T) {
	err := checkMatchStd(DatasetEntry{Name: "openr1", InputMean: 96, InputStd: 75.1, InputMin: 1, InputMax: 131072,
		OutputMean: 12684.1, OutputStd: 8464.6, OutputMin: 1, OutputMax: 16384, MatchStd: true})
	want := `dataset "openr1" (match_std): no log-normal truncated to [1, 16384] has the output mean 12684.1 and standard deviation 8464.6, the widest reaches 2926.4; raise output_max or drop match_std`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %q", err, want)
	}
}
