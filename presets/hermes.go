package presets

import (
	"fmt"
	"strings"

	"github.com/pimtui/pimtui/sim"
)

// PlatformSec is the Hermes family's consumer GPU, its PCIe link and the host CPU.
type PlatformSec struct {
	GPU               string  `toml:"gpu" doc:"GPU from the catalogue"`
	GPUBandwidthGBps  float64 `toml:"gpu_bandwidth_gbps" min:"0" max:"100000" doc:"GPU memory bandwidth in GB/s (0: the catalogue's figure)"`
	GPUWeightGB       float64 `toml:"gpu_weight_gb" min:"0.1" max:"10000" doc:"GPU memory for weights (offloading: weights and KV cache), GB; the rest is the runtime's"`
	ComputeEfficiency float64 `toml:"compute_efficiency" min:"0.01" max:"1" doc:"fraction of peak FLOP/s a GEMM reaches (calibration knob)"`
	MemoryEfficiency  float64 `toml:"memory_efficiency" min:"0.01" max:"1" doc:"fraction of peak bandwidth a streaming kernel reaches"`
	LaunchOverheadUs  float64 `toml:"launch_overhead_us" min:"0" max:"10000" doc:"per-kernel launch overhead in µs (0: the catalogue's)"`
	PCIeGBps          float64 `toml:"pcie_gbps" min:"0.1" max:"10000" doc:"GPU↔host/DIMM PCIe bandwidth, both directions together, GB/s"`
	PCIeEfficiency    float64 `toml:"pcie_efficiency" min:"0.01" max:"1" doc:"share of one PCIe direction (pcie_gbps / 2) a DMA reaches, for every system on the link"`
	PCIeLatencyUs     float64 `toml:"pcie_latency_us" min:"0" max:"100000" doc:"latency of one PCIe transfer or synchronisation, µs"`
	HostGBps          float64 `toml:"host_gbps" min:"0.1" max:"10000" doc:"host CPU memory bandwidth, GB/s (Hermes-host)"`
	HostGFLOPS        float64 `toml:"host_gflops" min:"1" max:"1000000" doc:"host CPU FP16 GEMV compute, GFLOP/s (Hermes-host)"`
}

// NDPSec is the NDP-DIMM pool: organisation, timing, the GEMV core and the DIMM-links.
type NDPSec struct {
	DIMMs             int          `toml:"dimms" min:"0" max:"254" doc:"NDP-DIMMs; every weight and the KV cache live on them"`
	DIMMsPerChannel   int          `toml:"dimms_per_channel" min:"1" max:"8" doc:"DIMMs per memory channel"`
	CapacityGB        float64      `toml:"capacity_gb" min:"0.1" max:"4096" doc:"capacity of one DIMM, GB"`
	Ranks             int          `toml:"ranks" min:"1" max:"16" doc:"ranks per DIMM (they stream in parallel into the centre buffer)"`
	BankGroups        int          `toml:"bank_groups" min:"1" max:"16" doc:"bank groups per rank"`
	BanksPerGroup     int          `toml:"banks_per_group" min:"1" max:"64" doc:"banks per bank group"`
	RankBusBits       int          `toml:"rank_bus_bits" min:"8" max:"1024" doc:"data bus width of a rank, bits"`
	RowBytes          int          `toml:"row_bytes" min:"64" max:"1048576" doc:"one row across a rank's chips, bytes"`
	TCKns             float64      `toml:"tck_ns" min:"0.05" max:"100" doc:"DRAM clock period, ns (two transfers per clock)"`
	RowMissPenalty    bool         `toml:"row_miss_penalty" doc:"charge tRP+tRCD for every row a stream opens"`
	ClockGHz          float64      `toml:"clock_ghz" min:"0.01" max:"10" doc:"NDP core clock, GHz"`
	Multipliers       int          `toml:"multipliers" min:"1" max:"1000000" doc:"GEMV multipliers per NDP core"`
	FP16PerMultiplier int          `toml:"fp16_per_multiplier" min:"1" max:"64" doc:"FP16 values one multiplier handles at once"`
	BitSerialCycles   int          `toml:"bitserial_cycles" min:"1" max:"1024" doc:"cycles per bit-serial FP16 multiplication"`
	BufferKB          int          `toml:"buffer_kb" min:"0" max:"1048576" doc:"NDP core buffer, KB (informational)"`
	ActivationUnits   int          `toml:"activation_units" min:"0" max:"1000000" doc:"exp/add/mul lanes of the activation unit (softmax)"`
	LinkGBps          float64      `toml:"link_gbps" min:"0.01" max:"10000" doc:"one DIMM-link, GB/s"`
	LinkPJPerBit      float64      `toml:"link_pj_per_bit" min:"0" max:"1000" doc:"DIMM-link energy, pJ/bit (informational)"`
	Timing            NDPTimingSec `toml:"timing"`
}

// NDPTimingSec is the DDR4 timing in DRAM clock cycles.
type NDPTimingSec struct {
	RC   int `toml:"t_rc" min:"0" max:"100000" doc:"row cycle, cycles"`
	RCD  int `toml:"t_rcd" min:"0" max:"100000" doc:"activate to read, cycles"`
	CL   int `toml:"t_cl" min:"0" max:"100000" doc:"CAS latency, cycles"`
	RP   int `toml:"t_rp" min:"0" max:"100000" doc:"row precharge, cycles"`
	BL   int `toml:"t_bl" min:"1" max:"100000" doc:"burst of 8 transfers, cycles"`
	CCDS int `toml:"t_ccd_s" min:"0" max:"100000" doc:"column to column, other bank group, cycles"`
	CCDL int `toml:"t_ccd_l" min:"0" max:"100000" doc:"column to column, same bank group, cycles"`
	RRDS int `toml:"t_rrd_s" min:"0" max:"100000" doc:"activate to activate, other bank group, cycles"`
	RRDL int `toml:"t_rrd_l" min:"0" max:"100000" doc:"activate to activate, same bank group, cycles"`
	FAW  int `toml:"t_faw" min:"0" max:"100000" doc:"four-activate window, cycles"`
}

// SparsitySec is the synthetic activation trace.
type SparsitySec struct {
	Enabled         bool    `toml:"enabled" doc:"activation sparsity (false: every neuron is computed, Hermes-base)"`
	MLPActiveOPT    float64 `toml:"mlp_active_opt" min:"0.001" max:"0.98" doc:"fraction of MLP neurons active per token, OPT models"`
	MLPActiveLLaMA  float64 `toml:"mlp_active_llama" min:"0.001" max:"0.98" doc:"fraction of MLP neurons active per token, ReLU-LLaMA models"`
	MLPActiveFalcon float64 `toml:"mlp_active_falcon" min:"0.001" max:"0.98" doc:"fraction of MLP neurons active per token, ReLU-Falcon models"`
	MLPActiveOther  float64 `toml:"mlp_active_other" min:"0.001" max:"0.98" doc:"fraction of MLP neurons active per token, other models"`
	QKVActive       float64 `toml:"qkv_active" min:"0.001" max:"0.98" doc:"fraction of QKV input neurons active per token (ReLU before QKV)"`
	HotFraction     float64 `toml:"hot_fraction" min:"0.01" max:"0.99" doc:"the hot fraction of neurons …"`
	HotShare        float64 `toml:"hot_share" min:"0.01" max:"0.99" doc:"… carries this share of activations"`
	Phi             float64 `toml:"phi" min:"0" max:"0.999" doc:"token-to-token AR(1) coefficient of a neuron's latent"`
	Beta            float64 `toml:"beta" min:"0" max:"1" doc:"latent variance share persistent per request (context)"`
	Gamma           float64 `toml:"gamma" min:"0" max:"1" doc:"latent variance share of the co-activation clusters"`
	Clusters        int     `toml:"clusters" min:"1" max:"255" doc:"co-activation clusters per block (contiguous native ranges)"`
	PhiCluster      float64 `toml:"phi_cluster" min:"0" max:"0.999" doc:"token-to-token AR(1) coefficient of a cluster"`
	Kappa           float64 `toml:"kappa" min:"0" max:"1" doc:"latent variance share inherited from two parents in the previous block"`
	Bins            int     `toml:"bins" min:"1" max:"1024" doc:"bins per block in the neuron view"`
}

// HermesSec holds the mechanisms of the paper's ablation path.
type HermesSec struct {
	Cold         string `toml:"cold" enum:"ndp,host" doc:"who computes cold neurons: ndp (the DIMM that holds them) or host (the CPU, Hermes-host)"`
	Mapper       string `toml:"mapper" enum:"greedy,random,capacity" doc:"offline mapping: greedy (ILP-equivalent, Eq. 1–7), random (Hermes-random) or capacity (PowerInfer's: the GPU memory filled with the most activated neurons)"`
	Layout       string `toml:"layout" enum:"lpt,chunked,random" doc:"initial home DIMMs of the neurons"`
	Predictor    string `toml:"predictor" enum:"paper,oracle" doc:"paper: 4-bit state + top-2 correlation; oracle: the exact activated set"`
	Compare      string `toml:"compare" enum:"ge,gt" doc:"predict active when s1 + λ·s2 ≥ T (ge) or > T (gt, as printed)"`
	Lambda       int    `toml:"lambda" min:"0" max:"15" doc:"weight λ of the correlated parents"`
	Threshold    int    `toml:"threshold" min:"0" max:"45" doc:"prediction threshold T"`
	StateInc     int    `toml:"state_inc" min:"0" max:"15" doc:"state increment when a neuron fires"`
	StateDec     int    `toml:"state_dec" min:"0" max:"15" doc:"state decrement when it does not"`
	HotThreshold int    `toml:"hot_threshold" min:"0" max:"15" doc:"T_h: a neuron whose state exceeds it is hot"`
	InitBins     string `toml:"init_bins" enum:"log,linear" doc:"how prefill frequencies map onto the 16 states between 2% and 90%"`
	Adjust       bool   `toml:"adjust" doc:"online promotion of hot neurons to the GPU during the projection"`
	Overflow     string `toml:"overflow" enum:"queue,stall" doc:"promotions beyond the projection window's PCIe budget: wait (queue) or stall the MLP"`
	Remap        bool   `toml:"remap" doc:"window-based remapping of cold neurons across DIMMs (Algorithm 1)"`
	Window       int    `toml:"window" min:"1" max:"100000" doc:"tokens per remapping window"`
}

// OffloadSec is an offloading baseline.
type OffloadSec struct {
	Framework      string  `toml:"framework" enum:"accelerate,flexgen,dejavu" doc:"offloading framework"`
	PredictorShare float64 `toml:"predictor_share" min:"0" max:"0.99" doc:"Deja Vu: the MLP predictor's share of GPU compute time"`
}

func (p *PlatformSec) apply(cfg *sim.Config, c *catalogs) error {
	g, err := c.gpu("platform.gpu", p.GPU, p.LaunchOverheadUs)
	if err != nil {
		return err
	}
	if p.GPUBandwidthGBps > 0 {
		g.BandwidthGBps = p.GPUBandwidthGBps
	}
	if p.GPUWeightGB > g.CapacityGB {
		return &Error{Key: "platform.gpu_weight_gb", Msg: fmt.Sprintf("%g GB is more than the %s's %g GB", p.GPUWeightGB, g.Display, g.CapacityGB)}
	}
	cfg.Hermes.Platform = sim.HermesPlatform{GPU: g.Name, GPUDisplay: g.Display, GPUTFLOPS: g.PeakTFLOPS, GPUBandwidthGBps: g.BandwidthGBps, GPUCapacityGB: g.CapacityGB,
		GPUWeightGB: p.GPUWeightGB, ComputeEfficiency: p.ComputeEfficiency, MemoryEfficiency: p.MemoryEfficiency, LaunchOverheadUs: g.LaunchOverheadUs,
		PCIeGBps: p.PCIeGBps, PCIeEfficiency: p.PCIeEfficiency, PCIeLatencyUs: p.PCIeLatencyUs, HostGBps: p.HostGBps, HostGFLOPS: p.HostGFLOPS}
	return nil
}

func (n *NDPSec) apply(cfg *sim.Config, _ *catalogs) error {
	if n.RankBusBits%8 != 0 {
		return &Error{Key: "ndp.rank_bus_bits", Msg: fmt.Sprintf("%d bits is not a whole number of bytes", n.RankBusBits)}
	}
	t := n.Timing
	cfg.Hermes.NDP = sim.NDPDIMM{DIMMs: n.DIMMs, DIMMsPerChannel: n.DIMMsPerChannel, CapacityGB: n.CapacityGB, Ranks: n.Ranks,
		BankGroups: n.BankGroups, BanksPerGroup: n.BanksPerGroup, DataRateMTs: 2000 / n.TCKns, RankBusBytes: n.RankBusBits / 8,
		RowBytes: n.RowBytes, TCKns: n.TCKns, RowMissPenalty: n.RowMissPenalty,
		Timing:   sim.NDPTiming{RC: t.RC, RCD: t.RCD, CL: t.CL, RP: t.RP, BL: t.BL, CCDS: t.CCDS, CCDL: t.CCDL, RRDS: t.RRDS, RRDL: t.RRDL, FAW: t.FAW},
		ClockGHz: n.ClockGHz, Multipliers: n.Multipliers, FP16PerMultiplier: n.FP16PerMultiplier, BitSerialCycles: n.BitSerialCycles,
		BufferKB: n.BufferKB, ActivationUnits: n.ActivationUnits, LinkGBps: n.LinkGBps, LinkPJPerBit: n.LinkPJPerBit}
	return nil
}

// mlpActive picks the MLP activation rate of the model's family.
func (s *SparsitySec) mlpActive(model string) float64 {
	switch {
	case strings.HasPrefix(model, "opt-"):
		return s.MLPActiveOPT
	case strings.HasPrefix(model, "llama"):
		return s.MLPActiveLLaMA
	case strings.HasPrefix(model, "falcon"):
		return s.MLPActiveFalcon
	}
	return s.MLPActiveOther
}

func (s *SparsitySec) apply(cfg *sim.Config, _ *catalogs) error {
	if s.Enabled && s.HotShare <= s.HotFraction {
		return &Error{Key: "sparsity.hot_share", Msg: fmt.Sprintf("the hot fraction's share (%g) must exceed the fraction itself (%g)", s.HotShare, s.HotFraction)}
	}
	if s.Beta+s.Gamma > 1 {
		return &Error{Key: "sparsity.gamma", Msg: fmt.Sprintf("beta + gamma = %g; the persistent and cluster shares of the latent variance must add to at most 1", s.Beta+s.Gamma)}
	}
	cfg.Hermes.Sparsity = sim.Sparsity{Enabled: s.Enabled, MLPActive: s.mlpActive(cfg.Model.Name), QKVActive: s.QKVActive,
		HotFrac: s.HotFraction, HotShare: s.HotShare, Phi: s.Phi, Beta: s.Beta, Gamma: s.Gamma, Clusters: s.Clusters,
		PhiCluster: s.PhiCluster, Kappa: s.Kappa, Bins: s.Bins}
	return nil
}

func (h *HermesSec) apply(cfg *sim.Config, _ *catalogs) error {
	cmp := ">="
	if h.Compare == "gt" {
		cmp = ">"
	}
	cfg.Hermes.Policy = sim.HermesPolicy{Cold: h.Cold, Mapper: h.Mapper, Layout: h.Layout, Predictor: h.Predictor, Compare: cmp,
		Lambda: h.Lambda, Threshold: h.Threshold, StateInc: h.StateInc, StateDec: h.StateDec, HotThreshold: h.HotThreshold,
		InitBins: h.InitBins, Adjust: h.Adjust, Overflow: h.Overflow, Remap: h.Remap, Window: h.Window}
	return nil
}

func (o *OffloadSec) apply(cfg *sim.Config, _ *catalogs) error {
	cfg.Hermes.Offload = sim.OffloadPolicy{Framework: o.Framework, PredictorShare: o.PredictorShare}
	return nil
}
