package presets

import (
	"errors"

	"github.com/pimtui/pimtui/sim"
)

// L3Sec is the L3 family's system (Liu, Chen et al., "L3: DIMM-PIM Integrated
// Architecture and Coordination for Scalable Long-Context LLM Inference", 2025): GPUs
// whose host memory is DDR4 DIMM-PIM, and the switches that turn L3 into its baselines.
type L3Sec struct {
	Attention      string    `toml:"attention" enum:"bank_pim,rank_pim,hbm_pim,cpu,gpu" doc:"where decode attention and the KV cache are: bank_pim (L3: bank PUs + rank PU in the host DIMMs), rank_pim (rank-level DIMM-PIM, Hermes), hbm_pim (HBM-PIM beside the GPUs, NeuPIMs/AttAcc), cpu (host CPU, NEO-style offload), gpu (GPU-only)"`
	Scheduler      string    `toml:"scheduler" enum:"l3,prefill_first" doc:"l3: decode first, prefill added and chunked until the GPU time matches the PIM time (§5.3); prefill_first: every waiting request that fits joins the batch with its whole prompt"`
	SubBatches     int       `toml:"sub_batches" min:"1" max:"2" doc:"1: one batch, GPU and PIM take turns (Fig. 3-b); 2: two sub-batches whose GPU and PIM work interleave (Fig. 7)"`
	ChunkMultiple  int       `toml:"chunk_multiple" min:"1" max:"65536" doc:"prefill chunks are a multiple of this many tokens (§5.3: 16, for GPU tiling)"`
	CommOverlap    bool      `toml:"comm_overlap" doc:"§5.1: rankset-exclusive transfers, layer-wise round-robin KV placement and asynchronous prefill KV (false: monolithic DIMMs, random layer placement, synchronous transfers)"`
	ChargeRelayout bool      `toml:"charge_relayout" doc:"charge a CPU transposition (2× the transfer time, §4.1) instead of the zero-latency in-flight re-layout"`
	Predictor      string    `toml:"predictor" enum:"oracle,paper" doc:"the L3 scheduler's latency predictors: the cost model itself (oracle), or Eq. 5–6's form fitted online to past iterations (paper)"`
	SplitIfShorter bool      `toml:"split_if_shorter" doc:"HBM-PIM only: keep the two decode sub-batches only in iterations they make shorter than one batch (false: always two, as §6.1 runs the baseline)"`
	GPU            L3GPUSec  `toml:"gpu"`
	Link           L3LinkSec `toml:"link"`
	Host           L3HostSec `toml:"host"`
	PIM            L3PIMSec  `toml:"pim"`
}

// L3GPUSec is the GPU server.
type L3GPUSec struct {
	Name              string  `toml:"name" doc:"GPU from the catalogue"`
	Count             int     `toml:"count" min:"1" max:"64" doc:"GPUs in the server; data parallelism = count / model.tp"`
	CapacityGiB       float64 `toml:"capacity_gib" min:"0" max:"4096" doc:"memory per GPU in GiB (0: the catalogue's capacity in GB)"`
	ComputeEfficiency float64 `toml:"compute_efficiency" min:"0.01" max:"1" doc:"fraction of peak FLOP/s a GEMM or attention kernel reaches (calibration knob)"`
	MemoryEfficiency  float64 `toml:"memory_efficiency" min:"0.01" max:"1" doc:"fraction of peak HBM bandwidth a streaming kernel reaches"`
	LaunchOverheadUs  float64 `toml:"launch_overhead_us" min:"0" max:"10000" doc:"per-kernel launch overhead in µs"`
	KVBlockTokens     int     `toml:"kv_block_tokens" min:"1" max:"4096" doc:"tokens per paged KV block in GPU memory"`
	NVLinkGBps        float64 `toml:"nvlink_gbps" min:"0" max:"100000" doc:"NVLink bandwidth per GPU and direction, GB/s (tensor-parallel all-reduces)"`
	NVLinkLatencyUs   float64 `toml:"nvlink_latency_us" min:"0" max:"10000" doc:"latency of one all-reduce in µs"`
}

// L3LinkSec is the GPU↔host interconnect.
type L3LinkSec struct {
	PCIeGBpsPerGPU float64 `toml:"pcie_gbps_per_gpu" min:"0" max:"10000" doc:"PCIe bandwidth per GPU and direction, GB/s"`
	PCIeLatencyUs  float64 `toml:"pcie_latency_us" min:"0" max:"10000" doc:"latency of one transfer in µs"`
	HostGBps       float64 `toml:"host_gbps" min:"0" max:"100000" doc:"cap on all GPUs' traffic to or from the host per direction (shared PCIe uplinks), GB/s"`
}

// L3HostSec is the host memory: DDR4 DIMMs, with or without processing units.
type L3HostSec struct {
	Channels          int         `toml:"channels" min:"1" max:"256" doc:"memory channels"`
	DIMMsPerChannel   int         `toml:"dimms_per_channel" min:"1" max:"16" doc:"DIMMs per channel"`
	RanksPerDIMM      int         `toml:"ranks_per_dimm" min:"1" max:"16" doc:"ranks per DIMM; ranks per channel = ranksets (§6.2 studies 2–16)"`
	BankGroups        int         `toml:"bank_groups" min:"1" max:"64" doc:"bank groups per chip"`
	BanksPerGroup     int         `toml:"banks_per_group" min:"1" max:"64" doc:"banks per bank group"`
	ChipsPerRank      int         `toml:"chips_per_rank" min:"1" max:"64" doc:"data chips per rank (bus width / chip width)"`
	ChipWidthBits     int         `toml:"chip_width_bits" min:"1" max:"64" doc:"data pins per chip (×8 = 8)"`
	ClockMHz          float64     `toml:"clock_mhz" min:"100" max:"10000" doc:"I/O clock in MHz (DDR4-3200: 1600, tCK = 0.625 ns)"`
	CapacityGiB       float64     `toml:"capacity_gib" min:"0.001" max:"1048576" doc:"host memory in GiB (§6.2 studies 512 GB–4 TB)"`
	CPUBandwidthGBps  float64     `toml:"cpu_bandwidth_gbps" min:"0" max:"100000" doc:"bandwidth the host CPU streams from all channels, GB/s"`
	RowBytesPerChip   int         `toml:"row_bytes_per_chip" min:"8" max:"65536" doc:"one DRAM row (page) per chip in bytes"`
	RowSwitchOverhead bool        `toml:"row_switch_overhead" doc:"charge tRP + tRCD for every row the PIM stream opens (false: hidden, as the L3 mapping reads rows contiguously)"`
	Timing            L3TimingSec `toml:"timing"`
}

// L3TimingSec is DDR4 timing in clock cycles (L3 Table 2).
type L3TimingSec struct {
	BL   int `toml:"t_bl" min:"1" max:"1000" doc:"burst duration, cycles"`
	CCDS int `toml:"t_ccd_s" min:"1" max:"1000" doc:"column to column, other bank group, cycles"`
	CCDL int `toml:"t_ccd_l" min:"1" max:"1000" doc:"column to column, same bank group, cycles (paces the bank PUs)"`
	RRDS int `toml:"t_rrd_s" min:"0" max:"1000" doc:"activate to activate, other bank group, cycles"`
	RRDL int `toml:"t_rrd_l" min:"0" max:"1000" doc:"activate to activate, same bank group, cycles"`
	RCD  int `toml:"t_rcd" min:"0" max:"1000" doc:"activate to read/write, cycles"`
	RAS  int `toml:"t_ras" min:"0" max:"1000" doc:"activate to precharge, cycles"`
	RP   int `toml:"t_rp" min:"0" max:"1000" doc:"precharge, cycles"`
	RC   int `toml:"t_rc" min:"0" max:"1000" doc:"activate to activate, same bank, cycles"`
	CL   int `toml:"t_cl" min:"0" max:"1000" doc:"CAS latency, cycles"`
	WL   int `toml:"t_wl" min:"0" max:"1000" doc:"write latency, cycles"`
	WTRS int `toml:"t_wtr_s" min:"0" max:"1000" doc:"write to read, other bank group, cycles"`
	WTRL int `toml:"t_wtr_l" min:"0" max:"1000" doc:"write to read, same bank group, cycles"`
	WR   int `toml:"t_wr" min:"0" max:"1000" doc:"write recovery, cycles"`
	RTP  int `toml:"t_rtp" min:"0" max:"1000" doc:"read to precharge, cycles"`
}

// L3PIMSec is the processing in memory.
type L3PIMSec struct {
	BankPUMultipliers int     `toml:"bank_pu_multipliers" min:"1" max:"1024" doc:"FP16 multipliers per physical bank PU (§4.3: 4, one 64-bit read)"`
	BankPUAdders      int     `toml:"bank_pu_adders" min:"1" max:"1024" doc:"FP16 adders per physical bank PU (informational)"`
	RankPUAdders      int     `toml:"rank_pu_adders" min:"1" max:"1024" doc:"FP16 adders of the rank PU's adder unit (informational)"`
	SoftmaxChunk      int     `toml:"softmax_chunk" min:"1" max:"4096" doc:"FP16 scores the rank PU's softmax unit takes per step (at least the logic banks)"`
	RankBufferKiB     int     `toml:"rank_buffer_kib" min:"1" max:"1048576" doc:"rank PU buffer in KiB; longer contexts fetch their scores again"`
	HBMPIMTBps        float64 `toml:"hbm_pim_tbps" min:"0" max:"100000" doc:"HBM-PIM baseline: PIM bandwidth of all GPUs' HBM, TB/s"`
}

func (s *L3Sec) apply(cfg *sim.Config, c *catalogs) error {
	gpu, err := c.gpu("l3.gpu.name", s.GPU.Name, s.GPU.LaunchOverheadUs)
	if err != nil {
		return err
	}
	if s.GPU.CapacityGiB > 0 {
		gpu.CapacityGB = s.GPU.CapacityGiB * (1 << 30) / 1e9
	}
	gpu.ComputeEfficiency, gpu.MemoryEfficiency, gpu.MemoryUtilization, gpu.KVBlockTokens = s.GPU.ComputeEfficiency, s.GPU.MemoryEfficiency, 1, s.GPU.KVBlockTokens
	h, t, p := s.Host, s.Host.Timing, s.PIM
	cfg.L3 = sim.L3Config{
		GPU:  gpu,
		GPUs: s.GPU.Count, NVLinkGBps: s.GPU.NVLinkGBps, NVLinkLatencyUs: s.GPU.NVLinkLatencyUs,
		PCIeGBps: s.Link.PCIeGBpsPerGPU, PCIeLatencyUs: s.Link.PCIeLatencyUs, HostLinkGBps: s.Link.HostGBps,
		Host: sim.DIMMHost{Channels: h.Channels, DIMMsPerChannel: h.DIMMsPerChannel, RanksPerDIMM: h.RanksPerDIMM, BankGroups: h.BankGroups,
			BanksPerGroup: h.BanksPerGroup, ChipsPerRank: h.ChipsPerRank, ChipWidthBits: h.ChipWidthBits, ClockMHz: h.ClockMHz,
			CapacityGiB: h.CapacityGiB, CPUBandwidthGBps: h.CPUBandwidthGBps, RowBytesPerChip: h.RowBytesPerChip, RowSwitch: h.RowSwitchOverhead,
			Timing: sim.DDR4Timing{BL: t.BL, CCDS: t.CCDS, CCDL: t.CCDL, RRDS: t.RRDS, RRDL: t.RRDL, RCD: t.RCD, RAS: t.RAS, RP: t.RP, RC: t.RC,
				CL: t.CL, WL: t.WL, WTRS: t.WTRS, WTRL: t.WTRL, WR: t.WR, RTP: t.RTP}},
		PIM: sim.L3PIM{BankPUMultipliers: p.BankPUMultipliers, BankPUAdders: p.BankPUAdders, RankPUAdders: p.RankPUAdders,
			SoftmaxChunk: p.SoftmaxChunk, RankBufferKiB: p.RankBufferKiB, HBMPIMTBps: p.HBMPIMTBps},
		Attention: s.Attention, Scheduler: s.Scheduler, SubBatches: s.SubBatches, ChunkMultiple: s.ChunkMultiple,
		CommOverlap: s.CommOverlap, ChargeRelayout: s.ChargeRelayout, Predictor: s.Predictor, SplitIfShorter: s.SplitIfShorter,
	}
	var le *sim.L3Error
	if err := cfg.L3.Check(max(1, cfg.TP), max(1, cfg.PP)); errors.As(err, &le) {
		return &Error{Key: le.Key, Msg: le.Msg}
	}
	return nil
}
