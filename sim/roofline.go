package sim

// Device is a compute device under the roofline model: an operation takes the longest of
// its compute time at the achievable FLOP rate, its memory time at the achievable
// bandwidth and, where the device has a power budget, its time under the power cap; plus a
// fixed launch overhead per kernel (docs/architecture.md).
type Device struct {
	Name           string
	PeakFLOPS      float64 // dense FP16 FLOP/s
	MemBandwidth   float64 // bytes/s
	ComputeEff     float64 // fraction of PeakFLOPS a GEMM achieves (calibration knob; at the power cap where PowerBudget is set)
	MemoryEff      float64 // fraction of MemBandwidth a streaming kernel achieves
	LaunchOverhead Time    // per kernel
	// PowerBudget is the power, W, the card spends on work at its power cap: the cap less
	// what it draws idle. Zero: no power roof.
	PowerBudget float64
	// MemoryJPerByte is the energy, J, of a byte moved from DRAM (with PowerBudget).
	MemoryJPerByte float64
}

// ComputeTime is the time to execute flops at the achievable rate.
func (d Device) ComputeTime(flops float64) Time {
	return FromSeconds(flops / (d.PeakFLOPS * d.ComputeEff))
}

// MemoryTime is the time to move bytes at the achievable bandwidth.
func (d Device) MemoryTime(bytes float64) Time {
	return FromSeconds(bytes / (d.MemBandwidth * d.MemoryEff))
}

// PowerTime is the time of a kernel on a card held at its power cap, where the clock
// falls until the work's power fits the budget. The FLOP rate at the cap, R (ComputeEff
// × PeakFLOPS, measured on a GEMM that moves little data), spends the whole budget P, so
// a FLOP costs P / R; a byte from DRAM costs MemoryJPerByte. A kernel of F FLOPs and B
// bytes then needs F·P/R + B·e joules at P watts: F/R + B·e/P. Apart from a memory-bound
// kernel, whose DRAM power fits the budget, this matters where compute and memory time
// meet (the ridge): the DRAM stream takes power the tensor cores would otherwise run on.
// Zero without a power budget.
func (d Device) PowerTime(flops, bytes float64) Time {
	if d.PowerBudget <= 0 {
		return 0
	}
	return d.ComputeTime(flops) + FromSeconds(bytes*d.MemoryJPerByte/d.PowerBudget)
}

// Time is the roofline time of one kernel: max(compute, memory, power) + launch overhead.
func (d Device) Time(flops, bytes float64) Time {
	return max(d.ComputeTime(flops), d.MemoryTime(bytes), d.PowerTime(flops, bytes)) + d.LaunchOverhead
}

// Ridge is the arithmetic intensity (FLOP/byte) above which a kernel is compute-bound.
func (d Device) Ridge() float64 {
	return d.PeakFLOPS * d.ComputeEff / (d.MemBandwidth * d.MemoryEff)
}

// Link is a point-to-point transfer path: a fixed latency plus bytes over bandwidth.
type Link struct {
	Name      string
	Bandwidth float64 // bytes/s
	Latency   Time
}

// Time is the latency plus serialisation time of a transfer of bytes.
func (l Link) Time(bytes float64) Time {
	if bytes <= 0 {
		return 0
	}
	return l.Latency + FromSeconds(bytes/l.Bandwidth)
}
