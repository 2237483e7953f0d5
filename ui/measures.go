package ui

import (
	"strings"

	"github.com/pimtui/pimtui/sim"
)

// The explorer's words for what a share measures, the same in every pane and in help:
//
//   - busy: the share of the iteration's time a lane (a group: the mean of its lanes)
//     was working. The timeline's row figures, the bars of the units beside the banks,
//     the PIM cells of the bank grid and Metrics' busy rows are all busy shares.
//   - FLOP util: the FLOPs done over what the units' peak FLOP/s could do in the
//     iteration's time. A unit busy throughout on memory-bound work scores low.
//   - bandwidth: the bytes moved over what the memory's peak bandwidth could move in the
//     iteration's time: Metrics' bandwidth rows and the bank grid's memory cells.
const (
	wordBusy      = "busy"
	wordFLOPs     = "FLOP util"
	wordBandwidth = "bandwidth"
)

// measureWord is the word a pane shows for what a figure measures.
func measureWord(m sim.Measure) string {
	switch m {
	case sim.MeasureFLOPs:
		return wordFLOPs
	case sim.MeasureBandwidth:
		return wordBandwidth
	}
	return wordBusy
}

// utilRow is one lane group's figure as Metrics and compare name it.
type utilRow struct {
	name    string // the lane group, or the memory a bandwidth is of
	measure sim.Measure
	v       float64
}

// utilName is what Metrics.Util[key] of a system is shown as: the lane group, or for a
// bandwidth the memory it is of (gpu_bandwidth: the GPU's; bandwidth: the system's
// memory), and what it measures.
func utilName(system, key string) (string, sim.Measure) {
	ms := sim.UtilMeasure(system, key)
	if ms != sim.MeasureBandwidth {
		return key, ms
	}
	name := strings.TrimSuffix(strings.TrimSuffix(key, "bandwidth"), "_")
	if name == "" {
		name = "memory"
	}
	return name, ms
}

// utilRows are a snapshot's utilisation figures, busy shares first: each lane group's
// busy share (1 − its idle share, the mean of what the timeline gives its lanes), then the
// FLOP and bandwidth utilisations the system reports. A figure the system reports as a
// group's busy time is that group's busy share and is shown once; one with no lane group
// of its name (a set of units the timeline draws as one lane) keeps its place.
func utilRows(s *sim.Snapshot) []utilRow {
	mt := &s.Metrics
	var rows []utilRow
	for _, g := range sortedKeys(mt.Bubble) {
		rows = append(rows, utilRow{g, sim.MeasureBusy, 1 - mt.Bubble[g]})
	}
	for _, want := range []sim.Measure{sim.MeasureBusy, sim.MeasureFLOPs, sim.MeasureBandwidth} {
		for _, k := range sortedKeys(mt.Util) {
			ms := sim.UtilMeasure(s.System, k)
			if ms != want {
				continue
			}
			if _, group := mt.Bubble[k]; group && ms == sim.MeasureBusy {
				continue
			}
			name, _ := utilName(s.System, k)
			rows = append(rows, utilRow{name, ms, mt.Util[k]})
		}
	}
	return rows
}
