package presets

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/pimtui/pimtui/sim"
)

// ModelEntry is a catalogue model (catalog/models.toml).
type ModelEntry struct {
	Name         string `toml:"name"`
	Display      string `toml:"display"`
	Layers       int    `toml:"layers"`
	DModel       int    `toml:"d_model"`
	Heads        int    `toml:"heads"`
	KVHeads      int    `toml:"kv_heads"`
	HeadDim      int    `toml:"head_dim"`
	FFNType      string `toml:"ffn_type"`
	DFFN         int    `toml:"d_ffn"`
	Vocab        int    `toml:"vocab"`
	Experts      int    `toml:"experts"`
	TopK         int    `toml:"top_k"`
	SharedDFFN   int    `toml:"shared_d_ffn"`
	ParallelAttn bool   `toml:"parallel_attn"`
	Source       string `toml:"source"`
}

// DatasetEntry is a catalogue length distribution (catalog/datasets.toml).
type DatasetEntry struct {
	Name       string  `toml:"name"`
	Display    string  `toml:"display"`
	InputMean  float64 `toml:"input_mean"`
	InputStd   float64 `toml:"input_std"`
	InputMin   int     `toml:"input_min"`
	InputMax   int     `toml:"input_max"`
	OutputMean float64 `toml:"output_mean"`
	OutputStd  float64 `toml:"output_std"`
	OutputMin  int     `toml:"output_min"`
	OutputMax  int     `toml:"output_max"`
	MaxSeqLen  int     `toml:"max_seq_len"`
	LiveCap    bool    `toml:"live_cap"`
	MatchStd   bool    `toml:"match_std"`
	InputBins  []int   `toml:"input_bins"`
	OutputBins []int   `toml:"output_bins"`
	Source     string  `toml:"source"`
}

// GPUEntry is a catalogue GPU (catalog/gpus.toml).
type GPUEntry struct {
	Name             string  `toml:"name"`
	Display          string  `toml:"display"`
	FP16TFLOPS       float64 `toml:"fp16_tflops"`
	BandwidthGBps    float64 `toml:"bandwidth_gbps"`
	CapacityGB       float64 `toml:"capacity_gb"`
	LaunchOverheadUs float64 `toml:"launch_overhead_us"`
	// Figures measured on the GPU itself, where they are (0: none): its power cap, what it
	// draws idle and the energy of a DRAM bit (the power roof), and decode attention's
	// latency floor and latency beyond the kernel launch.
	PowerCapW          float64 `toml:"power_cap_w"`
	IdlePowerW         float64 `toml:"idle_power_w"`
	MemoryPJPerBit     float64 `toml:"memory_pj_per_bit"`
	AttentionFloorUs   float64 `toml:"attention_floor_us"`
	AttentionLatencyUs float64 `toml:"attention_latency_us"`
	Source             string  `toml:"source"`
}

// gpu is the catalogue GPU name as a sim.GPU with its datasheet figures; key is the preset
// key that names it, for the error. launchUs > 0 replaces the catalogue's kernel launch
// overhead. The caller sets what the preset says of how the GPU is used (efficiencies,
// memory share, KV blocks).
func (c *catalogs) gpu(key, name string, launchUs float64) (sim.GPU, error) {
	e, ok := c.gpus[name]
	if !ok {
		return sim.GPU{}, &Error{Key: key, Msg: fmt.Sprintf("unknown GPU %q; %s", name, DidYouMean(name, c.gpuNames))}
	}
	g := sim.GPU{Name: e.Name, Display: e.Display, PeakTFLOPS: e.FP16TFLOPS, BandwidthGBps: e.BandwidthGBps,
		CapacityGB: e.CapacityGB, LaunchOverheadUs: e.LaunchOverheadUs, SweepEfficiency: c.gpuSweepEfficiency,
		PowerCapW: e.PowerCapW, IdlePowerW: e.IdlePowerW, MemoryPJPerBit: e.MemoryPJPerBit,
		AttnFloorUs: e.AttentionFloorUs, AttnLatencyUs: e.AttentionLatencyUs}
	if launchUs > 0 {
		g.LaunchOverheadUs = launchUs
	}
	return g, nil
}

type catalogs struct {
	gpuMemoryEfficiency                float64 // the one efficiency of every GPU's tiled weight streams
	gpuSweepEfficiency                 float64 // the one efficiency of every GPU's sequential streams
	models                             map[string]ModelEntry
	datasets                           map[string]DatasetEntry
	gpus                               map[string]GPUEntry
	modelNames, datasetNames, gpuNames []string
}

var (
	catOnce sync.Once
	catVal  *catalogs
	catErr  error
)

func catalog() (*catalogs, error) {
	catOnce.Do(func() { catVal, catErr = loadCatalogs() })
	return catVal, catErr
}

func decodeCatalog(name string, v any) error {
	b, err := files.ReadFile("catalog/" + name)
	if err != nil {
		return err
	}
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return decodeError("catalog/"+name, err)
	}
	return nil
}

func loadCatalogs() (*catalogs, error) {
	var m struct {
		Model []ModelEntry `toml:"model"`
	}
	var d struct {
		Dataset []DatasetEntry `toml:"dataset"`
	}
	var g struct {
		MemoryEfficiency float64    `toml:"memory_efficiency"`
		SweepEfficiency  float64    `toml:"sweep_efficiency"`
		GPU              []GPUEntry `toml:"gpu"`
	}
	if err := decodeCatalog("models.toml", &m); err != nil {
		return nil, err
	}
	if err := decodeCatalog("datasets.toml", &d); err != nil {
		return nil, err
	}
	if err := decodeCatalog("gpus.toml", &g); err != nil {
		return nil, err
	}
	if g.MemoryEfficiency <= 0 || g.MemoryEfficiency > 1 {
		return nil, fmt.Errorf("catalog/gpus.toml: memory_efficiency %g is not a share of the bandwidth in (0, 1]", g.MemoryEfficiency)
	}
	if g.SweepEfficiency <= 0 || g.SweepEfficiency > 1 {
		return nil, fmt.Errorf("catalog/gpus.toml: sweep_efficiency %g is not a share of the bandwidth in (0, 1]", g.SweepEfficiency)
	}
	c := &catalogs{gpuMemoryEfficiency: g.MemoryEfficiency, gpuSweepEfficiency: g.SweepEfficiency, models: map[string]ModelEntry{}, datasets: map[string]DatasetEntry{}, gpus: map[string]GPUEntry{}}
	for _, x := range m.Model {
		if x.Layers < 1 || x.DModel < 1 || x.Heads < 1 || x.KVHeads < 1 || x.HeadDim < 1 || x.DFFN < 1 {
			return nil, fmt.Errorf("catalog/models.toml: model %q has a non-positive dimension", x.Name)
		}
		if x.FFNType != "gelu" && x.FFNType != "swiglu" {
			return nil, fmt.Errorf("catalog/models.toml: model %q: ffn_type %q is not gelu or swiglu", x.Name, x.FFNType)
		}
		c.models[x.Name] = x
		c.modelNames = append(c.modelNames, x.Name)
	}
	for _, x := range d.Dataset {
		if x.InputMean <= 0 || x.OutputMean <= 0 || x.InputMax < x.InputMin || x.OutputMax < x.OutputMin ||
			slices.ContainsFunc(x.InputBins, nonPositive) || slices.ContainsFunc(x.OutputBins, nonPositive) {
			return nil, fmt.Errorf("catalog/datasets.toml: dataset %q has an impossible length distribution", x.Name)
		}
		if x.LiveCap && x.MaxSeqLen <= 0 {
			return nil, fmt.Errorf("catalog/datasets.toml: dataset %q caps the live context (live_cap) but sets no max_seq_len", x.Name)
		}
		if err := checkMatchStd(x); err != nil {
			return nil, err
		}
		c.datasets[x.Name] = x
		c.datasetNames = append(c.datasetNames, x.Name)
	}
	for _, x := range g.GPU {
		if x.FP16TFLOPS <= 0 || x.BandwidthGBps <= 0 || x.CapacityGB <= 0 {
			return nil, fmt.Errorf("catalog/gpus.toml: GPU %q has a non-positive figure", x.Name)
		}
		if x.PowerCapW < 0 || x.IdlePowerW < 0 || x.MemoryPJPerBit < 0 || x.AttentionFloorUs < 0 || x.AttentionLatencyUs < 0 {
			return nil, fmt.Errorf("catalog/gpus.toml: GPU %q has a negative figure", x.Name)
		}
		if power := x.PowerCapW > 0 || x.IdlePowerW > 0 || x.MemoryPJPerBit > 0; power && (x.PowerCapW <= x.IdlePowerW || x.MemoryPJPerBit <= 0) {
			return nil, fmt.Errorf("catalog/gpus.toml: GPU %q: a power roof needs power_cap_w above idle_power_w and memory_pj_per_bit, or none of them", x.Name)
		}
		c.gpus[x.Name] = x
		c.gpuNames = append(c.gpuNames, x.Name)
	}
	return c, nil
}

func nonPositive(n int) bool { return n < 1 }

// checkMatchStd refuses a dataset whose lengths are to keep their standard deviation
// (match_std) where no log-normal truncated to their bounds has it.
func checkMatchStd(x DatasetEntry) error {
	if !x.MatchStd {
		return nil
	}
	for _, d := range []struct {
		side      string
		mean, std float64
		lo, hi    int
	}{{"input", x.InputMean, x.InputStd, x.InputMin, x.InputMax}, {"output", x.OutputMean, x.OutputStd, x.OutputMin, x.OutputMax}} {
		if ok, widest := sim.FitLengths(d.mean, d.std, d.lo, d.hi); !ok {
			return fmt.Errorf("catalog/datasets.toml: dataset %q (match_std): no log-normal truncated to [%d, %d] has the %s mean %g and standard deviation %g, the widest reaches %.1f; raise %s_max or drop match_std",
				x.Name, d.lo, d.hi, d.side, d.mean, d.std, widest, d.side)
		}
	}
	return nil
}

// Models lists the catalogue's models in file order.
func Models() []ModelEntry {
	c, err := catalog()
	if err != nil {
		return nil
	}
	out := make([]ModelEntry, 0, len(c.modelNames))
	for _, n := range c.modelNames {
		out = append(out, c.models[n])
	}
	return out
}

// Datasets lists the catalogue's datasets in file order.
func Datasets() []DatasetEntry {
	c, err := catalog()
	if err != nil {
		return nil
	}
	out := make([]DatasetEntry, 0, len(c.datasetNames))
	for _, n := range c.datasetNames {
		out = append(out, c.datasets[n])
	}
	return out
}

// GPUs lists the catalogue's GPUs in file order.
func GPUs() []GPUEntry {
	c, err := catalog()
	if err != nil {
		return nil
	}
	out := make([]GPUEntry, 0, len(c.gpuNames))
	for _, n := range c.gpuNames {
		out = append(out, c.gpus[n])
	}
	return out
}

// applier is a system-specific section that fills its part of the engine config.
type applier interface {
	apply(cfg *sim.Config, c *catalogs) error
}

// Build turns a checked preset into an engine configuration, resolving catalogue names.
// trace, if not nil, replaces the dataset's generated requests.
func Build(f *File, trace []sim.TraceRequest) (sim.Config, error) {
	if err := checkNames(f); err != nil {
		return sim.Config{}, err
	}
	c, _ := catalog()
	m := c.models[f.Model.Name]
	ds := c.datasets[f.Workload.Dataset]
	cfg := sim.Config{
		Preset: f.Name, Description: f.Description, Family: f.Family, System: f.System,
		Model: sim.Model{Name: m.Name, Display: m.Display, Layers: m.Layers, DModel: m.DModel, Heads: m.Heads, KVHeads: m.KVHeads,
			HeadDim: m.HeadDim, FFN: m.FFNType, DFFN: m.DFFN, Vocab: m.Vocab, Experts: m.Experts, TopK: m.TopK, SharedDFFN: m.SharedDFFN, ParallelAttn: m.ParallelAttn},
		TP: f.Model.TP, PP: f.Model.PP, Precision: f.Model.PrecisionBytes, OpenAt: f.Workload.OpenAt,
		Workload: sim.Workload{
			Dataset: sim.Dataset{Name: ds.Name, Display: ds.Display, InMean: ds.InputMean, InStd: ds.InputStd, InMin: ds.InputMin, InMax: ds.InputMax,
				OutMean: ds.OutputMean, OutStd: ds.OutputStd, OutMin: ds.OutputMin, OutMax: ds.OutputMax, MaxSeqLen: ds.MaxSeqLen,
				InBins: ds.InputBins, OutBins: ds.OutputBins, LiveCap: ds.LiveCap, MatchStd: ds.MatchStd},
			Requests: f.Workload.Requests, MaxBatch: f.Workload.Batch, Arrival: f.Workload.Arrival, Rate: f.Workload.RatePerS,
			Prefill: f.Workload.Prefill, KVPolicy: f.Workload.KVPolicy, InputLen: f.Workload.InputLen, OutputLen: f.Workload.OutputLen, Trace: trace,
			Seed: uint64(f.Workload.Seed), Steps: f.Workload.Steps, Warmup: f.Workload.Warmup,
		},
	}
	if f.Workload.Arrival == sim.ArrivalPoisson && f.Workload.RatePerS <= 0 && trace == nil {
		return cfg, &Error{Key: "workload.rate_per_s", Msg: "Poisson arrivals need a rate above 0 requests/s (e.g. --arrival poisson:10)"}
	}
	if cfg.Model.Heads%max(1, cfg.TP) != 0 {
		return cfg, &Error{Key: "model.tp", Msg: fmt.Sprintf("%s has %d heads, which tp=%d does not divide; pick a divisor of %d", m.Display, m.Heads, cfg.TP, m.Heads)}
	}
	v := reflect.ValueOf(f).Elem()
	for i := range v.NumField() {
		if fv := v.Field(i); fv.Kind() == reflect.Pointer && !fv.IsNil() {
			if a, ok := fv.Interface().(applier); ok {
				if err := a.apply(&cfg, c); err != nil {
					return cfg, err
				}
			}
		}
	}
	return cfg, nil
}
