package presets

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

func TestEveryEmbeddedPresetParsesAndBuilds(t *testing.T) {
	names := Names()
	if len(names) < 5 {
		t.Fatalf("only %d presets: %v", len(names), names)
	}
	for _, n := range names {
		f, err := Get(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if f.Name != n {
			t.Errorf("%s.toml declares name %q", n, f.Name)
		}
		if _, err := Build(f, nil); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestUnknownPresetSuggestsClosest(t *testing.T) {
	_, err := Get("neupim")
	if err == nil || !strings.Contains(err.Error(), `did you mean "neupims"`) {
		t.Fatalf("got %v", err)
	}
}

// lineOf returns the 1-based line of the first occurrence of sub in src.
func lineOf(src, sub string) int {
	i := strings.Index(src, sub)
	if i < 0 {
		return 0
	}
	return strings.Count(src[:i], "\n") + 1
}

func TestParseErrorsCarryPositions(t *testing.T) {
	b, _ := Source("neupims")
	base := string(b)
	tp := lineOf(base, "tp = 4")
	name := lineOf(base, `name = "gpt3-7b"`)
	cases := []struct {
		name, edit, want string
	}{
		{"syntax", strings.Replace(base, "tp = 4", "tp = = 4", 1), fmt.Sprintf("x.toml:%d:6: unexpected character", tp)},
		{"unknown key", strings.Replace(base, "tp = 4", "tpp = 4", 1), fmt.Sprintf(`x.toml:%d:1: model.tpp: unknown key; did you mean "model.tp"`, tp)},
		{"wrong type", strings.Replace(base, "tp = 4", `tp = "four"`, 1), fmt.Sprintf("x.toml:%d:6: model.tp: wrong type: want integer (1 to 64)", tp)},
		{"out of range", strings.Replace(base, "channels = 32 ", "channels = 0 ", 1), fmt.Sprintf("x.toml:%d:1: memory.channels: 0 is out of range; want 1 to 4096", lineOf(base, "channels = 32 "))},
		{"bad enum", strings.Replace(base, `channel_alloc = "greedy_min_load"`, `channel_alloc = "greedy"`, 1), `scheduler.channel_alloc: "greedy" is not allowed; want one of greedy_min_load, round_robin`},
		{"unknown model", strings.Replace(base, `name = "gpt3-7b"`, `name = "gpt3-7"`, 1), fmt.Sprintf(`x.toml:%d:1: model.name: unknown model "gpt3-7"; did you mean "gpt3-7b"`, name)},
		{"missing key", strings.Replace(base, "tile_cycles = 184", "", 1), `pim.tile_cycles: missing required key`},
		{"split model", strings.Replace(base, `{ model = "gpt3-13b",`, `{ model = "gpt3-13",`, 1), fmt.Sprintf(`x.toml:%d:1: model.split: unknown model "gpt3-13"; did you mean "gpt3-13b"`, lineOf(base, "split = ["))},
		{"split twice", strings.Replace(base, `{ model = "gpt3-13b",`, `{ model = "gpt3-7b",`, 1), `model.split: model "gpt3-7b" is listed twice`},
		{"split range", strings.Replace(base, `tp = 8, pp = 4 }`, `tp = 0, pp = 4 }`, 1), `model.split: gpt3-175b: tp 0, pp 4 out of range; want 1 to 64`},
		{"split disagrees", strings.Replace(base, `{ model = "gpt3-7b",   tp = 4, pp = 1 }`, `{ model = "gpt3-7b",   tp = 2, pp = 1 }`, 1), `model.split: the split gives gpt3-7b tp 2, pp 1 but model.tp and model.pp are 4 and 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant it to contain %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "x.toml:") {
				t.Fatalf("error %q does not start with file:line:col", err)
			}
		})
	}
}

func TestSet(t *testing.T) {
	f, err := Get("neupims")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"pim.dual_row_buffer=false", "memory.channels=16", "npu.memory_efficiency=0.5", "scheduler.channel_alloc=round_robin", "workload.batch=64"} {
		if err := f.Set(kv); err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
	}
	if f.PIM.DualRowBuffer || f.Memory.Channels != 16 || f.NPU.MemoryEfficiency != 0.5 || f.Scheduler.ChannelAlloc != "round_robin" || f.Workload.Batch != 64 {
		t.Fatalf("overrides not applied: %+v %+v", *f.PIM, *f.Memory)
	}
	bad := []struct{ kv, want string }{
		{"pim.dual_row_bufer=false", `unknown key; did you mean "pim.dual_row_buffer"`},
		{"pim.dual_row_buffer=maybe", `"maybe" is not a valid bool; want true or false`},
		{"memory.channels=lots", `"lots" is not a valid integer; want 1 to 4096`},
		{"memory.channels=100000", "100000 is out of range; want 1 to 4096"},
		{"npu.memory_efficiency=NaN", "not a finite number"},
		{"workload.arrival=sometimes", `want one of closed, poisson`},
		{"novalue", "want key=value"},
	}
	for _, b := range bad {
		err := f.Set(b.kv)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want %q", b.kv, err, b.want)
		}
	}
}

// Another model runs at the split its paper gives it unless model.tp or model.pp is set,
// in either order; a model the paper does not list keeps the preset's split.
func TestModelTakesThePapersSplit(t *testing.T) {
	split := func(sets ...string) (int, int) {
		t.Helper()
		f, err := Get("neupims")
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range sets {
			if err := f.Set(kv); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Build(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.TP, cfg.PP
	}
	for _, c := range []struct {
		sets   []string
		tp, pp int
	}{
		{nil, 4, 1},
		{[]string{"model.name=gpt3-30b"}, 4, 2}, // Table 3
		{[]string{"model.name=gpt3-175b"}, 8, 4},
		{[]string{"model.name=gpt3-175b", "model.tp=4"}, 4, 4},
		{[]string{"model.pp=1", "model.name=gpt3-175b"}, 8, 1},
		{[]string{"model.tp=2", "model.pp=2", "model.name=gpt3-30b"}, 2, 2},
		{[]string{"model.name=gpt3-30b", "model.name=gpt3-7b"}, 4, 1},
		{[]string{"model.name=llama2-7b"}, 4, 1}, // not in Table 3: the preset's own split
	} {
		if tp, pp := split(c.sets...); tp != c.tp || pp != c.pp {
			t.Errorf("%v: tp %d, pp %d; want %d, %d", c.sets, tp, pp, c.tp, c.pp)
		}
	}
	// Every preset whose paper names splits lists its own model at its own split, and the
	// presets of a family agree on them.
	byFamily := map[string][]Split{}
	for _, n := range Names() {
		f, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Model.Split) == 0 {
			continue
		}
		if prev, ok := byFamily[f.Family]; ok && fmt.Sprint(prev) != fmt.Sprint(f.Model.Split) {
			t.Errorf("%s: split %v differs from its family's %v", n, f.Model.Split, prev)
		}
		byFamily[f.Family] = f.Model.Split
	}
	for _, fam := range []string{"neupims", "l3", "helios", "hermes"} {
		if len(byFamily[fam]) == 0 {
			t.Errorf("family %s names no split per model", fam)
		}
	}
}

func TestBuildRejectsImpossibleValues(t *testing.T) {
	f, _ := Get("neupims")
	f.Set("model.tp=3")
	if _, err := Build(f, nil); err == nil || !strings.Contains(err.Error(), "tp=3 does not divide") {
		t.Fatalf("got %v", err)
	}
	f, _ = Get("neupims")
	f.Set("workload.arrival=poisson")
	if _, err := Build(f, nil); err == nil || !strings.Contains(err.Error(), "rate above 0") {
		t.Fatalf("got %v", err)
	}
}

func TestCatalogues(t *testing.T) {
	if len(Models()) < 18 || len(Datasets()) < 10 || len(GPUs()) < 6 {
		t.Fatalf("catalogues too small: %d models, %d datasets, %d GPUs", len(Models()), len(Datasets()), len(GPUs()))
	}
	for _, want := range []string{"gpt3-7b", "gpt3-13b", "gpt3-30b", "gpt3-175b", "llama2-70b", "mixtral-8x22b", "qwen3-30b-a3b"} {
		found := false
		for _, m := range Models() {
			found = found || m.Name == want
		}
		if !found {
			t.Errorf("model %s missing", want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		b, _ := Source(n)
		f.Add(b)
	}
	f.Add([]byte("name = \n"))
	f.Add([]byte("[model]\ntp = -1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.toml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.toml") && !strings.Contains(err.Error(), "catalog") {
				t.Fatalf("error without file name: %v", err)
			}
			return
		}
		Build(file, nil)
	})
}

func FuzzSet(f *testing.F) {
	f.Add("pim.dual_row_buffer=false")
	f.Add("memory.channels=16")
	f.Add("npu.memory_efficiency=1e309")
	f.Add("=")
	f.Fuzz(func(t *testing.T, kv string) {
		file, err := Get("neupims")
		if err != nil {
			t.Fatal(err)
		}
		if err := file.Set(kv); err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
	})
}

// Every catalogue dataset's generator reproduces the dataset's mean lengths.
func TestDatasetGeneratorsMatchMeans(t *testing.T) {
	for _, d := range Datasets() {
		f, _ := Get("neupims")
		f.Set("workload.dataset=" + d.Name)
		cfg, err := Build(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		in, out := cfg.Workload.Dataset.Sample(40000, 3)
		mean := func(v []int) float64 {
			s := 0
			for _, x := range v {
				s += x
			}
			return float64(s) / float64(len(v))
		}
		if m := mean(in); m < 0.95*d.InputMean || m > 1.05*d.InputMean {
			t.Errorf("%s: input mean %.1f, catalogue %.1f", d.Name, m, d.InputMean)
		}
		// Outputs are also cut where input + output would pass max_seq_len.
		if m := mean(out); m < 0.85*d.OutputMean || m > 1.05*d.OutputMean {
			t.Errorf("%s: output mean %.1f, catalogue %.1f", d.Name, m, d.OutputMean)
		}
	}
}

// eachStep steps e to the end of its run, calling fn with every snapshot.
func eachStep(t testing.TB, e *sim.Engine, fn func(*sim.Snapshot)) {
	t.Helper()
	for {
		s, err := e.Step()
		if errors.Is(err, sim.ErrDone) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(s)
	}
}

// presetConfig builds the configuration of preset name with sets applied, as --set does.
func presetConfig(t testing.TB, name string, sets ...string) sim.Config {
	t.Helper()
	f, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range sets {
		if err := f.Set(kv); err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
	}
	cfg, err := Build(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Every GPU of every family streams at the one efficiency catalog/gpus.toml states, so no
// GPU baseline is faster or slower than another for want of a shared rule.
func TestEveryGPUStreamsAtTheCatalogueRule(t *testing.T) {
	c, err := catalog()
	if err != nil {
		t.Fatal(err)
	}
	rule := c.gpuMemoryEfficiency
	seen := 0
	for _, name := range Names() {
		f, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		var got []float64
		if f.GPU != nil {
			got = append(got, f.GPU.MemoryEfficiency)
		}
		if f.L3 != nil {
			got = append(got, f.L3.GPU.MemoryEfficiency)
		}
		if f.Platform != nil {
			got = append(got, f.Platform.MemoryEfficiency)
		}
		if f.LoLPIM != nil {
			got = append(got, f.LoLPIM.XPUMemoryEfficiency)
		}
		if f.Cluster != nil {
			got = append(got, f.Cluster.MemoryEfficiency)
		}
		for _, e := range got {
			seen++
			if e != rule {
				t.Errorf("%s: a GPU streams at %g of its bandwidth, the catalogue's rule is %g", name, e, rule)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("only %d GPUs found in the presets", seen)
	}
}

// Every key `presets keys` and `presets show` list has a name: the File's bookkeeping
// fields are not keys.
func TestKeysAreNamed(t *testing.T) {
	for _, k := range Keys() {
		if k.Key == "" || strings.HasPrefix(k.Key, ".") {
			t.Errorf("unnamed key %+v", k)
		}
	}
}

// Every GPU-only preset streams its attention and small kernels at the catalogue's sweep
// rule, and only the H100, measured, carries power figures and attention latencies.
func TestGPUPresetsTakeTheCatalogueFigures(t *testing.T) {
	c, err := catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gpu-h100", "gpu-a100", "gpu-gddr", "gpu-hbm"} {
		f, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Build(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := cfg.GPU
		if g.SweepEfficiency != c.gpuSweepEfficiency || g.SweepEfficiency <= g.MemoryEfficiency {
			t.Errorf("%s: sequential streams at %g, the catalogue's rule is %g (above the GEMMs' %g)", name, g.SweepEfficiency, c.gpuSweepEfficiency, g.MemoryEfficiency)
		}
		measured := name == "gpu-h100"
		if got := g.PowerCapW > 0 && g.IdlePowerW > 0 && g.MemoryPJPerBit > 0 && g.AttnFloorUs > 0 && g.AttnLatencyUs > 0; got != measured {
			t.Errorf("%s: power %g W cap, %g W idle, %g pJ/bit; attention %g µs floor, %g µs latency", name, g.PowerCapW, g.IdlePowerW, g.MemoryPJPerBit, g.AttnFloorUs, g.AttnLatencyUs)
		}
	}
}
