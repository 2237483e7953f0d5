package presets

import (
	"fmt"

	"github.com/pimtui/pimtui/sim"
)

func (n *NPUSec) apply(cfg *sim.Config, _ *catalogs) error {
	cfg.NPU = sim.NPU{SystolicArrays: n.SystolicArrays, SARows: n.SARows, SACols: n.SACols, VectorUnits: n.VectorUnits, VectorWidth: n.VectorWidth,
		ClockGHz: n.ClockGHz, MemoryEfficiency: n.MemoryEfficiency, SRAMKiB: n.SRAMKiB, PreloadOverlap: n.PreloadOverlap}
	return nil
}

func (mm *MemSec) apply(cfg *sim.Config, _ *catalogs) error {
	t := mm.Timing
	cfg.Memory = sim.DRAM{Channels: mm.Channels, BankGroups: mm.BankGroups, BanksPerChannel: mm.BanksPerChannel, RowsPerBank: mm.RowsPerBank,
		PageBytes: mm.PageBytes, BusBits: mm.BusBits, ClockGHz: mm.ClockGHz, TransfersPerClk: mm.TransfersPerClock,
		Timing: sim.DRAMTiming{RP: t.RP, RCD: t.RCD, RAS: t.RAS, RRDL: t.RRDL, WR: t.WR, CCDS: t.CCDS, CCDL: t.CCDL, REFI: t.REFI, RFC: t.RFC, FAW: t.FAW}}
	if mm.BanksPerChannel%mm.BankGroups != 0 {
		return &Error{Key: "memory.bank_groups", Msg: fmt.Sprintf("%d bank groups do not divide %d banks per channel", mm.BankGroups, mm.BanksPerChannel)}
	}
	if mm.PageBytes%cfg.Precision != 0 {
		return &Error{Key: "memory.page_bytes", Msg: "the page must hold a whole number of elements"}
	}
	return nil
}

func (p *PIMSec) apply(cfg *sim.Config, _ *catalogs) error {
	cfg.PIM = sim.PIM{Enabled: p.Enabled, DualRowBuffer: p.DualRowBuffer, TileCycles: p.TileCycles, GWriteCycles: p.GWriteCycles, MultipliersPerBank: p.MultipliersPerBank,
		CompCycles: p.CompCycles, MinComps: p.MinComps}
	return nil
}

func (s *SchedSec) apply(cfg *sim.Config, _ *catalogs) error {
	cfg.Scheduler = sim.Scheduler{SubBatchInterleaving: s.SubBatchInterleaving, SBIMinBatch: s.SBIMinBatch, ChannelAlloc: sim.ChannelAlloc(s.ChannelAlloc)}
	return nil
}

func (g *GPUSec) apply(cfg *sim.Config, c *catalogs) error {
	gpu, err := c.gpu("gpu.name", g.Name, g.LaunchOverheadUs)
	if err != nil {
		return err
	}
	gpu.ComputeEfficiency, gpu.MemoryEfficiency, gpu.MemoryUtilization = g.ComputeEfficiency, g.MemoryEfficiency, g.MemoryUtilization
	gpu.KVBlockTokens, gpu.GPUsPerNode, gpu.IntraNodeGBps, gpu.NodeLinkGBps = g.KVBlockTokens, g.GPUsPerNode, g.IntraNodeGBps, g.NodeLinkGBps
	cfg.GPU = gpu
	return nil
}
