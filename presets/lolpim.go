package presets

import (
	"fmt"

	"github.com/pimtui/pimtui/sim"
)

// LoLPIMSec is a LoL-PIM system's organisation, model split and mechanisms: ① ITPP with
// TP + PP (partitioning), ② DPA lazy allocation (memory) and ③ ping-pong buffers, and the
// heterogeneous node's GPU.
type LoLPIMSec struct {
	Nodes          int    `toml:"nodes" min:"1" max:"64" doc:"nodes (each 8 modules = 64 GB in the paper)"`
	ModulesPerNode int    `toml:"modules_per_node" min:"1" max:"64" doc:"PIM modules per node"`
	TP             int    `toml:"tp" min:"0" max:"4096" doc:"modules per tensor-parallel group (0: derived; PIM-only ITPP keeps it in a node, HFA and the heterogeneous node use every module, beyond the heads sharing a head's requests by batch slot)"`
	PP             int    `toml:"pp" min:"0" max:"4096" doc:"pipeline stages; tp × pp = nodes × modules_per_node (0: derived)"`
	MicroBatch     int    `toml:"micro_batch" min:"0" max:"65536" doc:"requests per micro-batch (0: the host's choice, the size that makes the iteration shortest as the pipeline fills and drains)"`
	Partitioning   string `toml:"partitioning" enum:"itpp,hfa" doc:"① itpp: K by token, V by head dimension over all banks; hfa: a request's per-head KV in one channel"`
	Memory         string `toml:"memory" enum:"dynamic,static" doc:"② dynamic: DPA lazy chunks; static: every request reserves static_max_ctx tokens"`
	StaticMaxCtx   int    `toml:"static_max_ctx" min:"1" max:"1048576" doc:"tokens a request reserves under static memory (the model's context length)"`
	ChunkRows      int    `toml:"chunk_rows" min:"1" max:"65536" doc:"row-indices (one row in every bank of a module) per DPA chunk"`
	PingPong       bool   `toml:"pingpong" doc:"③ I/O-aware buffering: a second global buffer and the output-register pair overlap transfers with MACs"`

	XPU                  string  `toml:"xpu" enum:"none,gpu" doc:"none: PIM runs everything; gpu: a GPU per node runs the FC layers, PIM attention"`
	XPUGPU               string  `toml:"xpu_gpu" doc:"the heterogeneous node's GPU, from the catalogue (used when xpu = gpu)"`
	XPUMemoryShare       float64 `toml:"xpu_memory_share" min:"0.01" max:"1" doc:"share of that GPU's memory capacity and bandwidth the node's GPU has"`
	XPUComputeEfficiency float64 `toml:"xpu_compute_efficiency" min:"0.01" max:"1" doc:"fraction of the GPU's peak FLOP/s a GEMM reaches"`
	XPUMemoryEfficiency  float64 `toml:"xpu_memory_efficiency" min:"0.01" max:"1" doc:"fraction of the GPU's bandwidth a weight stream reaches"`
	XPULaunchOverheadUs  float64 `toml:"xpu_launch_overhead_us" min:"0" max:"10000" doc:"per-kernel launch overhead in µs (0: the catalogue's)"`
}

// AiMSec is the GDDR6-AiM module, its controller hub and the links.
type AiMSec struct {
	Channels        int     `toml:"channels" min:"1" max:"1024" doc:"AiM channels per module"`
	BanksPerChannel int     `toml:"banks_per_channel" min:"1" max:"1024" doc:"banks (one PU each) per channel"`
	RowsPerBank     int     `toml:"rows_per_bank" min:"1" max:"16777216" doc:"rows per bank"`
	RowBytes        int     `toml:"row_bytes" min:"32" max:"65536" doc:"DRAM page (row) size in bytes"`
	ClockGHz        float64 `toml:"clock_ghz" min:"0.01" max:"10" doc:"PU clock in GHz"`
	MACElems        int     `toml:"mac_elems" min:"1" max:"4096" doc:"elements a PU multiplies and accumulates per cycle"`
	GBBytes         int     `toml:"gb_bytes" min:"2" max:"1048576" doc:"global buffer per channel in bytes"`
	OutRegs         int     `toml:"out_regs" min:"1" max:"1024" doc:"output registers per PU"`
	ChannelIOGBps   float64 `toml:"channel_io_gbps" min:"0.001" max:"1000000" doc:"I/O bandwidth of one channel in GB/s (a GB fill moves gb_bytes at this rate)"`
	RdOutNs         float64 `toml:"rdout_ns" min:"0" max:"1000000" doc:"one RD-OUT: one output register of each of a channel's PUs to the hub, in ns"`
	TModNs          float64 `toml:"t_mod_ns" min:"0" max:"1000000" doc:"mode switch between MAC commands and register transfers (GB fills, RD-OUTs): paid entering and leaving each run of transfers, in ns"`
	TRCDNs          float64 `toml:"t_rcd_ns" min:"0" max:"1000000" doc:"activate to MAC: paid once for each DRAM row an all-bank MAC stream opens (every row_bytes / (mac_elems × 2 B) MACs), in ns"`
	TRTPNs          float64 `toml:"t_rtp_ns" min:"0" max:"1000000" doc:"last MAC to precharge: paid once for each DRAM row an all-bank MAC stream closes, in ns"`
	TRPNs           float64 `toml:"t_rp_ns" min:"0" max:"1000000" doc:"precharge: paid once for each DRAM row an all-bank MAC stream closes, in ns"`
	TRFCNs          float64 `toml:"t_rfc_ns" min:"0" max:"1000000" doc:"refresh cycle: every t_refi_ns the banks close their row, refresh this long and reopen it (0: no refresh), in ns"`
	TREFINs         float64 `toml:"t_refi_ns" min:"0" max:"1000000000" doc:"refresh interval in ns; must exceed the pause t_rtp_ns + t_rp_ns + t_rfc_ns + t_rcd_ns"`
	EPUElemsPerNs   float64 `toml:"epu_elems_per_ns" min:"0.001" max:"1000000" doc:"hub EPU throughput in elements per ns (softmax, norms, element-wise ops)"`
	InterfaceGBps   float64 `toml:"interface_gbps" min:"0.001" max:"1000000" doc:"node ↔ host interface in GB/s (TP reductions, stage hand-offs within a node)"`
	InterNodeGBps   float64 `toml:"inter_node_gbps" min:"0.001" max:"1000000" doc:"node ↔ node link in GB/s"`
	HostSyncUs      float64 `toml:"host_sync_us" min:"0" max:"1000000" doc:"host update of a stage's dispatcher per micro-batch, in µs"`
}

func (l *LoLPIMSec) apply(cfg *sim.Config, c *catalogs) error {
	x := &cfg.LoLPIM
	x.Nodes, x.ModulesPerNode, x.TP, x.PP, x.MicroBatch = l.Nodes, l.ModulesPerNode, l.TP, l.PP, l.MicroBatch
	x.Partitioning, x.Memory, x.StaticMaxCtx, x.ChunkRows, x.PingPong = l.Partitioning, l.Memory, l.StaticMaxCtx, l.ChunkRows, l.PingPong
	x.XPU = l.XPU == "gpu"
	if !x.XPU {
		return nil
	}
	g, err := c.gpu("lolpim.xpu_gpu", l.XPUGPU, l.XPULaunchOverheadUs)
	if err != nil {
		return err
	}
	g.BandwidthGBps *= l.XPUMemoryShare
	g.CapacityGB *= l.XPUMemoryShare
	g.ComputeEfficiency, g.MemoryEfficiency, g.MemoryUtilization = l.XPUComputeEfficiency, l.XPUMemoryEfficiency, 1
	x.GPU = g
	return nil
}

func (a *AiMSec) apply(cfg *sim.Config, _ *catalogs) error {
	x := &cfg.LoLPIM
	x.Channels, x.BanksPerChannel, x.RowsPerBank, x.RowBytes = a.Channels, a.BanksPerChannel, a.RowsPerBank, a.RowBytes
	x.ClockGHz, x.MACElems, x.GBBytes, x.OutRegs = a.ClockGHz, a.MACElems, a.GBBytes, a.OutRegs
	x.ChannelGBps, x.RdOutNs, x.TModNs, x.EPUElemsPerNs = a.ChannelIOGBps, a.RdOutNs, a.TModNs, a.EPUElemsPerNs
	x.TRCDNs, x.TRTPNs, x.TRPNs, x.TRFCNs, x.TREFINs = a.TRCDNs, a.TRTPNs, a.TRPNs, a.TRFCNs, a.TREFINs
	if pause := x.RefreshPauseNs(); a.TRFCNs > 0 && !(a.TREFINs > pause) {
		return &Error{Key: "aim.t_refi_ns", Msg: fmt.Sprintf("each refresh pauses the banks for t_rtp_ns + t_rp_ns + t_rfc_ns + t_rcd_ns = %g ns every t_refi_ns=%g, which leaves no time for MACs; make t_refi_ns larger than %g", pause, a.TREFINs, pause)}
	}
	x.InterfaceGBps, x.InterNodeGBps, x.HostSyncUs = a.InterfaceGBps, a.InterNodeGBps, a.HostSyncUs
	if a.RowBytes%max(1, cfg.Precision) != 0 || a.GBBytes%max(1, cfg.Precision) != 0 {
		return &Error{Key: "aim.row_bytes", Msg: "rows and global buffers must hold a whole number of elements"}
	}
	return nil
}
