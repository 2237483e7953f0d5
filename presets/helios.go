package presets

import (
	"fmt"

	"github.com/pimtui/pimtui/sim"
)

// HBSec is the HeLioS HB-Device: a logic die with a mesh of PEs under hybrid-bonded DRAM
// dies (HeLioS Sec. III-B, VI-B).
type HBSec struct {
	Mesh            int     `toml:"mesh" min:"1" max:"16" doc:"PEs per side of the PE mesh; must divide bank_grid (1, 2, 4, 8 or 16); the device's compute and banks stay fixed"`
	DRAMDies        int     `toml:"dram_dies" min:"1" max:"16" doc:"DRAM dies stacked on the logic die"`
	BankGrid        int     `toml:"bank_grid" min:"1" max:"64" doc:"banks per side of one die (16: a 16×16 grid)"`
	BankCapacityMB  float64 `toml:"bank_capacity_mb" min:"0.001" max:"1000000" doc:"capacity of one bank, MB (10^6 bytes)"`
	BankIOPins      int     `toml:"bank_io_pins" min:"1" max:"65536" doc:"data pins of one bank"`
	PinRateGbps     float64 `toml:"pin_rate_gbps" min:"0.001" max:"100" doc:"rate of one pin, Gb/s"`
	Channels        int     `toml:"channels" min:"1" max:"64" doc:"DRAM channels (16: the paper's design); bandwidth scales with channels/16"`
	ClockGHz        float64 `toml:"clock_ghz" min:"0.01" max:"10" doc:"logic-die clock in GHz"`
	MACsPerPE       int     `toml:"macs_per_pe" min:"1" max:"16777216" doc:"MACs per cycle of one PE of the 4×4 design; other meshes keep the device total (16×) fixed"`
	VectorLanes     int     `toml:"vector_lanes" min:"1" max:"1048576" doc:"vector-unit lanes of one PE of the 4×4 design (softmax of the non-tiled flow); scaled like the MACs"`
	ComputeBufferMB float64 `toml:"compute_buffer_mb" min:"0" max:"1000000" doc:"compute buffer of one PE of the 4×4 design, MB; the non-tiled flow's score rows spill to DRAM beyond it (other meshes keep the device total)"`
	NoCLinkGBps     float64 `toml:"noc_link_gbps" min:"0.001" max:"100000" doc:"bandwidth of one mesh NoC link per direction, GB/s"`
	NoCHopNs        float64 `toml:"noc_hop_ns" min:"0" max:"100000" doc:"latency of one NoC hop, ns"`
	RowBytes        float64 `toml:"row_bytes" min:"0" max:"1048576" doc:"bytes in one row of a bank: a fetch of s contiguous bytes from a bank opens ⌈s/this⌉ rows (0: no row cost)"`
	RowActivateNs   float64 `toml:"row_activate_ns" min:"0" max:"1000" doc:"activation time of a row (tRCD), ns; the bank moves nothing meanwhile"`
	RowPrechargeNs  float64 `toml:"row_precharge_ns" min:"0" max:"1000" doc:"precharge time closing a row (tRP), ns; the bank moves nothing meanwhile"`
	AttentionFlow   string  `toml:"attention_flow" enum:"tiled,non_tiled" doc:"tiled: Algorithm 1 on every PE and the Eq. 1-2 merge (HeLioS); non_tiled: QKᵀ, full softmax, P·V within a module of PEs (Stratum's flow)"`
	Dataflow        string  `toml:"dataflow" enum:"mesh,ring" doc:"mesh: FCs 2-D tiled over the mesh with 1-D and 2-D collectives along its axes (HeLioS Figs. 11-14); ring: Stratum's dataflow, FCs split over all PEs along one dimension with collectives round a ring through every PE (needs attention_flow = non_tiled)"`
}

// NMPSec is the A100 host of HeLioS's baselines and the near-memory processing in its HBM
// cubes (HeLioS Sec. VI-A).
type NMPSec struct {
	GPU               string  `toml:"gpu" doc:"GPU from the catalogue"`
	MemoryUtilization float64 `toml:"memory_utilization" min:"0.01" max:"1" doc:"fraction of GPU memory the serving engine may use"`
	KernelOverheadUs  float64 `toml:"kernel_overhead_us" min:"0" max:"10000" doc:"time between GPU kernels, µs"`
	Kind              string  `toml:"kind" enum:"none,bank,cube" doc:"none: GPU serving; bank: an FPU per bank (In-die NMP); cube: FPUs on each cube's logic die (Duplex)"`
	Cubes             int     `toml:"cubes" min:"1" max:"64" doc:"HBM cubes per GPU; each has an equal share of the GPU's bandwidth"`
	BankBWScale       float64 `toml:"bank_bw_scale" min:"0.01" max:"1000" doc:"bank NMP: bandwidth the banks deliver to their processing units, over the cube's share of the GPU's bandwidth"`
	BankFLOPPerByte   float64 `toml:"bank_flop_per_byte" min:"0.01" max:"1000" doc:"bank NMP: FLOPs the processing units do per byte a bank reads"`
	CubeFPUs          int     `toml:"cube_fpus" min:"1" max:"65536" doc:"cube NMP: FPUs on a cube's logic die"`
	FPUMACs           int     `toml:"fpu_macs" min:"1" max:"65536" doc:"cube NMP: MACs per FPU per cycle"`
	CubeClockGHz      float64 `toml:"cube_clock_ghz" min:"0.01" max:"10" doc:"cube NMP: FPU clock, GHz"`
	CubeBWScale       float64 `toml:"cube_bw_scale" min:"0.01" max:"100" doc:"cube NMP: its bandwidth over the cube's share of the GPU's bandwidth"`
	SoftmaxGFLOPS     float64 `toml:"softmax_gflops" min:"0.001" max:"1000000" doc:"NMP: a cube's softmax unit, GFLOP/s; the non-tiled flow's full softmax takes 5 FLOPs a score between its two GEMMs"`
	ExpertOffload     bool    `toml:"expert_offload" doc:"MoE experts split between the GPU and the NMP so both finish together (Duplex's flow)"`
}

// ClusterSec is what the HeLioS family shares: NVLink, the disaggregated prefill
// instance and the calibration knobs every device uses.
type ClusterSec struct {
	EP                int     `toml:"ep" min:"1" max:"64" doc:"expert parallelism of MoE models: each device holds experts/ep whole experts"`
	NVLinkGBps        float64 `toml:"nvlink_gbps" min:"0.001" max:"100000" doc:"NVLink bandwidth per device, GB/s"`
	NVLinkLatencyUs   float64 `toml:"nvlink_latency_us" min:"0" max:"10000" doc:"latency of one NVLink collective, µs"`
	ComputeEfficiency float64 `toml:"compute_efficiency" min:"0.01" max:"1" doc:"fraction of peak FLOP/s a GEMM reaches, on every device (calibration knob)"`
	MemoryEfficiency  float64 `toml:"memory_efficiency" min:"0.01" max:"1" doc:"fraction of peak bandwidth a stream reaches, on every device (calibration knob)"`
	PrefillGPU        string  `toml:"prefill_gpu" doc:"GPU of the prefill instance, from the catalogue"`
	PrefillGPUs       int     `toml:"prefill_gpus" min:"1" max:"64" doc:"GPUs of the prefill instance (tensor parallel)"`
	PCIeGBps          float64 `toml:"pcie_gbps" min:"0" max:"100000" doc:"host to decode device bandwidth, GB/s (0: no limit)"`
	NICGbps           float64 `toml:"nic_gbps" min:"0" max:"100000" doc:"bandwidth of one NIC, Gb/s (0: no limit)"`
	NICs              int     `toml:"nics" min:"1" max:"64" doc:"NICs per decode node, shared by its devices"`
}

// KVCacheSec is the HeLioS family's KV-cache policy.
type KVCacheSec struct {
	Alloc               string `toml:"alloc" enum:"spatial,static_module,round_robin,balanced_only" doc:"spatial: Algorithm 2; static_module: each KV head pinned to a module with the context reserved (the baselines); round_robin, balanced_only: foils not in the paper"`
	BlockTokens         int    `toml:"block_tokens" min:"1" max:"4096" doc:"tokens per KV block (the paper sweeps 4, 16, 64, 256, 1024)"`
	ModulePEs           int    `toml:"module_pes" min:"1" max:"256" doc:"static_module on the HB-Device: PEs per module (must divide the mesh's PEs)"`
	ContextTokens       int    `toml:"context_tokens" min:"0" max:"16777216" doc:"context window a static reservation covers (0: the workload's longest sequence)"`
	StaticCompute       string `toml:"static_compute" enum:"window,live" doc:"what the non-tiled flow (HB-non-Tiled, the NMP cubes) computes over under static_module: window, the whole reserved context (the GEMM shape the static partition fixes, HeLioS Fig. 4-a); live, only the request's tokens (a smarter schedule the paper's baselines do not run)"`
	TieTolerance        int    `toml:"tie_tolerance_tokens" min:"0" max:"16777216" doc:"extension, not in the paper: Algorithm 2 treats T_sum differences below this as ties (0: exact, the paper)"`
	CapacityTokensPerPE int    `toml:"capacity_tokens_per_pe" min:"0" max:"1073741824" doc:"> 0: each PE (or cube) holds this many tokens of KV instead of what its DRAM holds after the weights (teaching examples)"`
}

func (h *HBSec) apply(cfg *sim.Config, _ *catalogs) error {
	if h.Mesh < 1 || h.BankGrid < 1 {
		return &Error{Key: "hb.mesh", Msg: "the HB-Device needs hb.mesh and hb.bank_grid of at least 1 (is this preset's system helios?)"}
	}
	if h.BankGrid%h.Mesh != 0 {
		return &Error{Key: "hb.mesh", Msg: fmt.Sprintf("a %d×%d mesh does not divide the %d×%d bank grid of a die; want a divisor of %d (1, 2, 4, 8 or 16)", h.Mesh, h.Mesh, h.BankGrid, h.BankGrid, h.BankGrid)}
	}
	cfg.HeLioS.HB = sim.HBDevice{Mesh: h.Mesh, Dies: h.DRAMDies, BankGrid: h.BankGrid, BankMB: h.BankCapacityMB, BankPins: h.BankIOPins,
		PinGbps: h.PinRateGbps, Channels: h.Channels, ClockGHz: h.ClockGHz, MACsPerPE: h.MACsPerPE, VectorLanes: h.VectorLanes, ComputeBufferMB: h.ComputeBufferMB,
		NoCLinkGBps: h.NoCLinkGBps, NoCHopNs: h.NoCHopNs, RowBytes: h.RowBytes,
		RowActivateNs: h.RowActivateNs, RowPrechargeNs: h.RowPrechargeNs, Flow: h.AttentionFlow, Dataflow: h.Dataflow}
	return nil
}

func (n *NMPSec) apply(cfg *sim.Config, c *catalogs) error {
	g, err := c.gpu("nmp.gpu", n.GPU, 0)
	if err != nil {
		return err
	}
	g.MemoryUtilization = n.MemoryUtilization
	cfg.HeLioS.NMP = sim.NMPHost{GPU: g, Kind: n.Kind, Cubes: n.Cubes, BankBWScale: n.BankBWScale, BankFLOPPerByte: n.BankFLOPPerByte,
		CubeFPUs: n.CubeFPUs, FPUMACs: n.FPUMACs, CubeClockGHz: n.CubeClockGHz, CubeBWScale: n.CubeBWScale, SoftmaxGFLOPS: n.SoftmaxGFLOPS,
		ExpertOffload: n.ExpertOffload, KernelOverheadUs: n.KernelOverheadUs}
	return nil
}

func (cl *ClusterSec) apply(cfg *sim.Config, c *catalogs) error {
	g, err := c.gpu("cluster.prefill_gpu", cl.PrefillGPU, 0)
	if err != nil {
		return err
	}
	cfg.HeLioS.Cluster = sim.HeLioSCluster{EP: cl.EP, NVLinkGBps: cl.NVLinkGBps, NVLinkLatencyUs: cl.NVLinkLatencyUs,
		ComputeEff: cl.ComputeEfficiency, MemoryEff: cl.MemoryEfficiency, PrefillGPU: g, PrefillGPUs: cl.PrefillGPUs,
		PCIeGBps: cl.PCIeGBps, NICGbps: cl.NICGbps, NICs: cl.NICs}
	if cfg.Model.Experts > 0 && (cl.EP < 1 || cfg.Model.Experts%cl.EP != 0) {
		return &Error{Key: "cluster.ep", Msg: fmt.Sprintf("%s has %d experts, which ep=%d does not divide; pick a divisor of %d", cfg.Model.Display, cfg.Model.Experts, cl.EP, cfg.Model.Experts)}
	}
	return nil
}

func (k *KVCacheSec) apply(cfg *sim.Config, _ *catalogs) error {
	cfg.HeLioS.KV = sim.HeLioSKV{Alloc: k.Alloc, BlockTokens: k.BlockTokens, ModulePEs: k.ModulePEs, ContextTokens: k.ContextTokens,
		StaticCompute: k.StaticCompute,
		TieTolerance:  k.TieTolerance, CapacityTokensPerPE: k.CapacityTokensPerPE}
	return nil
}
