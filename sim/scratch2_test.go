package sim

import (
	"fmt"
	"testing"
)

func TestScratchOne(t *testing.T) {
	m13 := Model{Name: "13b", Display: "13B", Layers: 40, DModel: 5120, Heads: 40, KVHeads: 40, HeadDim: 128, FFN: "gelu", DFFN: 20480, Vocab: 50304}
	for _, v := range []string{"neupims", "npu-pim"} {
		c := testNeuPIMs()
		c.Model = m13
		c.Workload.MaxBatch = 512
		c.Workload.Requests = 512 * 20
		if v == "npu-pim" {
			c.PIM.DualRowBuffer = false
			c.Scheduler.SubBatchInterleaving = false
			c.Scheduler.ChannelAlloc = RoundRobin
		}
		e, _ := New(c)
		var s *Snapshot
		for range 300 {
			s, _ = e.Step()
		}
		busy := map[string]Time{}
		for _, sp := range s.Timeline.Spans {
			busy[s.Timeline.Lanes[sp.Lane].Group] += sp.Dur
		}
		fmt.Printf("%s batch %d iter %v busy npu %v npuv %v pim(sum/32) %v stages %d\n", v, s.Batch, s.IterTime, busy["npu"], busy["npu_vector"], busy["pim"]/32, len(s.Timeline.Stages))
		if len(s.Timeline.Stages) > 4 {
			st := s.Timeline.Stages
			for i := 0; i < 5; i++ {
				fmt.Printf("  stage %s at %v\n", st[i].Name, st[i].Start)
			}
		}
		// per-op durations for layer 1
		for _, sp := range s.Timeline.Spans {
			if sp.Layer == 1 && (sp.Lane <= 2) {
				fmt.Printf("   %s sb%d lane %d stage %d start %v dur %v\n", sp.Name, sp.SubBatch, sp.Lane, sp.Stage, sp.Start, sp.Dur)
			}
		}
	}
}
