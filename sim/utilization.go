package sim

import "strings"

// Measure is what a utilisation figure of Metrics.Util divides by what, so a view can
// name it: the families report some lane groups by their time, others by their work.
type Measure string

const (
	// MeasureBusy is the share of the iteration's time the group's lanes were busy (their
	// mean): the figure the timeline gives each row, and 1 − Metrics.Bubble.
	MeasureBusy Measure = "busy"
	// MeasureFLOPs is the FLOPs done over what the units' peak FLOP/s could do in the
	// iteration's time: a unit busy throughout on memory-bound GEMVs scores low.
	MeasureFLOPs Measure = "FLOP util"
	// MeasureBandwidth is the bytes moved over what the memory's peak bandwidth could move
	// in the iteration's time.
	MeasureBandwidth Measure = "bandwidth"
)

// flopUtil lists, per system, the Util keys its planner reports as FLOP utilisation
// (achieved FLOPs over peak): the compute engines whose work is counted in FLOPs.
var flopUtil = map[string][]string{
	SystemGPU:     {"gpu"},
	SystemNeuPIMs: {"npu"},
	SystemL3:      {"gpu"},
	SystemLoLPIM:  {"pim", "gpu"}, // Table 8's PIM utilisation: useful FLOPs over the banks' peak
	SystemHeLioS:  {"pe"},
	SystemGPUNMP:  {"gpu"},
}

// UtilMeasure says what Metrics.Util[key] of a system measures: a key ending in
// "bandwidth" is bandwidth, the compute engines flopUtil lists are FLOP utilisation, and
// every other key (PIM channels and ranksets, NDP cores, links, NoCs, PCIe) is the time
// its lanes were busy.
func UtilMeasure(system, key string) Measure {
	switch {
	case strings.HasSuffix(key, "bandwidth"):
		return MeasureBandwidth
	}
	for _, k := range flopUtil[system] {
		if k == key {
			return MeasureFLOPs
		}
	}
	return MeasureBusy
}
