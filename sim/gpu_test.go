package sim

import (
	"math"
	"testing"
)

// gpuGDDR is LoL-PIM's GPU-GDDR baseline (§8.1, Table 7): 16 GPUs of 64 GB at 4096 GB/s,
// Qwen1.5-7B split over them by tensor parallelism, one GPU a node on 10 GB/s links.
func gpuGDDR() Config {
	return Config{
		System: SystemGPU, Model: lpQwen7B, TP: 16, PP: 1, Precision: 2,
		Workload: Workload{Dataset: lpMusique, Requests: 200, MaxBatch: 100, Arrival: ArrivalClosed, Prefill: PrefillSkip, KVPolicy: KVPaged, Seed: 1},
		GPU: GPU{Display: "GPU-GDDR6", PeakTFLOPS: 312, BandwidthGBps: 4096, CapacityGB: 64, ComputeEfficiency: 1, MemoryEfficiency: 1,
			MemoryUtilization: 1, KVBlockTokens: 16, LaunchOverheadUs: 5, GPUsPerNode: 1, NodeLinkGBps: 10},
	}
}

// Megatron's tensor parallelism ends each layer's attention and FFN with an all-reduce of
// the batch's activations. LoL-PIM §8.1 models multi-node communication at 10 GB/s,
// "matched across systems": a ring over the 16 nodes moves 2·15/16 of the 100 × 4096 × 2 B
// vector over each node's link; the PIM systems pay the same ring (nodeRing).
func TestGPUTensorParallelAllReduces(t *testing.T) {
	c := gpuGDDR()
	e := lpEngine(t, c)
	s := lpStep(t, e, 1)
	v := 100.0 * 4096 * 2
	want := FromSeconds(2 * 15.0 / 16 * v / 10 * 1e-9) // bytes / (GB/s) = ns
	var n int
	for _, sp := range s.Timeline.Spans {
		if sp.Name != "all-reduce" {
			continue
		}
		n++
		if sp.Lane != gpuLaneLink || sp.Dur != want {
			t.Fatalf("all-reduce on lane %d for %v, want lane %d for %v", sp.Lane, sp.Dur, gpuLaneLink, want)
		}
	}
	if n != 2*32 {
		t.Fatalf("%d all-reduces, want two for each of the 32 layers", n)
	}
	// The GPU waits for them: the iteration is the links' time longer than without them.
	c.GPU.NodeLinkGBps = 0
	free := lpStep(t, lpEngine(t, c), 1)
	if d := s.IterTime - free.IterTime; d != 64*want {
		t.Fatalf("the all-reduces add %v to the iteration, want %v", d, 64*want)
	}
	if u := s.Metrics.Util["link"]; math.Abs(u-float64(64*want)/float64(s.IterTime)) > 1e-9 {
		t.Fatalf("link utilisation %v", u)
	}
	// Two DGX nodes of 8 GPUs: a ring on NVLink inside each, then one over the two nodes.
	c = gpuGDDR()
	c.GPU.GPUsPerNode, c.GPU.IntraNodeGBps = 8, 300
	g, err := newGPUSystem(&c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.allReduce(v), FromSeconds((2*7.0/8*v/300+2*1.0/2*v/10)*1e-9); got != want {
		t.Fatalf("hierarchical all-reduce %v, want %v", got, want)
	}
	c.GPU.GPUsPerNode = 0
	if _, err := newGPUSystem(&c); err == nil {
		t.Fatal("a split over links without gpus_per_node is accepted")
	}
}
