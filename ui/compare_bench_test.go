package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// BenchmarkCompareStepRender is one lockstep move as a user pays for it: both engines
// step, both timelines take their snapshots, the strip its ratios, and a frame at 200×60
// drawn to a terminal that discards it.
// The two presets of each pair have the same request stream but for the number of
// requests, which is set here for both.
func BenchmarkCompareStepRender(b *testing.B) {
	for _, p := range [][2]string{{"neupims", "npu-only"}, {"neupims", "neupims+pim.dual_row_buffer=false"}, {"lolpim", "aimx"}} {
		b.Run(p[0]+"-vs-"+p[1], func(b *testing.B) {
			var sides [2]Side
			for i, spec := range p {
				parts := strings.Split(spec, "+")
				sides[i] = Side{Name: spec, Config: benchConfig(b, parts[0], parts[1:]...)}
			}
			m, err := NewCompare(sides[0], sides[1], Options{Color: true})
			if err != nil {
				b.Fatal(err)
			}
			m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
			m.Update(m.request(false)())
			term := newDiscardTerminal(200, 60)
			b.ReportAllocs()
			for b.Loop() {
				m.Update(m.request(false)())
				term.draw(m.View())
			}
		})
	}
}
