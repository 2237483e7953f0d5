package sim

// Device is a compute device under the roofline model: an operation takes the longer of
// its compute time at the achievable FLOP rate and its memory time at the achievable
// bandwidth, plus a fixed launch overhead per kernel (docs/architecture.md).
type Device struct {
	Name           string
	PeakFLOPS      float64 // dense FP16 FLOP/s
	MemBandwidth   float64 // bytes/s
	ComputeEff     float64 // fraction of PeakFLOPS a GEMM achieves (calibration knob)
	MemoryEff      float64 // fraction of MemBandwidth a streaming kernel achieves
	LaunchOverhead Time    // per kernel
}

// ComputeTime is the time to execute flops at the achievable rate.
func (d Device) ComputeTime(flops float64) Time {
	return FromSeconds(flops / (d.PeakFLOPS * d.ComputeEff))
}

// MemoryTime is the time to move bytes at the achievable bandwidth.
func (d Device) MemoryTime(bytes float64) Time {
	return FromSeconds(bytes / (d.MemBandwidth * d.MemoryEff))
}

// Time is the roofline time of one kernel: max(compute, memory) + launch overhead.
func (d Device) Time(flops, bytes float64) Time {
	return max(d.ComputeTime(flops), d.MemoryTime(bytes)) + d.LaunchOverhead
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
