package sim

import (
	"math"
	"slices"
	"strings"
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

// h100Layer is one decode layer of LLaMA-2-70B (GQA, gated FFN) on an H100 SXM with the
// catalogue's figures: b requests with l tokens each in the KV cache, one decode step.
func h100Layer(b, l int) Config {
	m := Model{Name: "llama2-70b", Display: "LLaMA2-70B", Layers: 1, DModel: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: "swiglu", DFFN: 28672, Vocab: 32000}
	return Config{
		System: SystemGPU, Model: m, TP: 1, PP: 1, Precision: 2,
		Workload: Workload{Requests: b, MaxBatch: b, Arrival: ArrivalClosed, Prefill: PrefillSkip, KVPolicy: KVPaged, InputLen: l, OutputLen: 1, Steps: 1, Seed: 1},
		GPU: GPU{Display: "H100", PeakTFLOPS: 989.4, BandwidthGBps: 3350, CapacityGB: 80, ComputeEfficiency: 0.7, MemoryEfficiency: 0.85, SweepEfficiency: 0.92,
			MemoryUtilization: 0.9, KVBlockTokens: 16, LaunchOverheadUs: 5, GPUsPerNode: 8,
			PowerCapW: 700, IdlePowerW: 70, MemoryPJPerBit: 4, AttnFloorUs: 7, AttnLatencyUs: 3.7},
	}
}

// spansByName runs one decode step and returns its spans in order and by name.
func spansByName(t *testing.T, c Config) ([]Span, map[string][]Span) {
	t.Helper()
	s := lpStep(t, lpEngine(t, c), 1)
	by := map[string][]Span{}
	for _, sp := range s.Timeline.Spans {
		by[sp.Name] = append(by[sp.Name], sp)
	}
	return s.Timeline.Spans, by
}

// A decode layer runs every kernel of a pre-norm layer, each its own: the new token's K and
// V are written into the cache before attention, and each block ends with a residual add.
func TestGPUDecodeLayerKernels(t *testing.T) {
	spans, _ := spansByName(t, h100Layer(8, 512))
	var got []string
	for _, sp := range spans {
		got = append(got, sp.Name)
	}
	want := []string{"LN1", "QKV", "KV append", "attention", "Proj", "residual", "LN2", "FC1", "act", "FC2", "residual"}
	if !slices.Equal(got, want) {
		t.Fatalf("the layer runs %v, want %v", got, want)
	}
}

// The GEMMs stream their weights as tiles at memory_efficiency; attention and the small
// kernels stream sequentially at sweep_efficiency. A gated FFN's fused gate/up GEMM writes
// both projections and the activation reads both.
func TestGPUStreamsAndFusedGateUp(t *testing.T) {
	c := h100Layer(64, 2048)
	_, by := spansByName(t, c)
	lat := FromSeconds(5e-6)
	b, d, f, p := 64.0, 8192.0, 28672.0, 2.0
	fc1 := 2*f*d*p + b*(d+2*f)*p
	if sp := by["FC1"][0]; sp.Bytes != fc1 || sp.Dur != FromSeconds(fc1/(3350e9*0.85))+lat {
		t.Fatalf("FC1 moves %g bytes in %v, want the fused gate/up's %g at 85%% of the bandwidth", sp.Bytes, sp.Dur, fc1)
	}
	act := b * 3 * f * p
	if sp := by["act"][0]; sp.Bytes != act || sp.Dur != FromSeconds(act/(3350e9*0.92))+lat {
		t.Fatalf("the activation moves %g bytes in %v, want gate and up read, one written: %g at 92%%", sp.Bytes, sp.Dur, act)
	}
	res := b * 3 * d * p
	if sp := by["residual"][0]; sp.Bytes != res || sp.Dur != FromSeconds(res/(3350e9*0.92))+lat {
		t.Fatalf("a residual add moves %g bytes in %v, want %g at 92%%", sp.Bytes, sp.Dur, res)
	}
	kv := b * 2 * 2 * 1024 * p
	if sp := by["KV append"][0]; sp.Bytes != kv {
		t.Fatalf("the KV append moves %g bytes, want this token's K and V read and written, %g", sp.Bytes, kv)
	}
	// A GPU without a sweep figure streams everything at memory_efficiency.
	c.GPU.SweepEfficiency = 0
	_, by = spansByName(t, c)
	if sp := by["act"][0]; sp.Dur != FromSeconds(act/(3350e9*0.85))+lat {
		t.Fatalf("without a sweep figure the activation takes %v", sp.Dur)
	}
}

// Decode attention never goes under its floor and adds its latency to its KV stream.
func TestGPUAttentionFloorAndLatency(t *testing.T) {
	lat := FromSeconds(5e-6)
	_, by := spansByName(t, h100Layer(1, 512))
	if got, want := by["attention"][0].Dur, lat+FromSeconds(7e-6); got != want {
		t.Fatalf("a short attention takes %v, want its floor %v", got, want)
	}
	_, by = spansByName(t, h100Layer(64, 8192))
	a := by["attention"][0]
	want := lat + FromSeconds(3.7e-6) + FromSeconds(a.Bytes/(3350e9*0.92))
	if a.Dur != want || a.Bytes != 64*8192*4096+2*64*8192*2 {
		t.Fatalf("a long attention takes %v over %g bytes, want latency plus its KV stream: %v", a.Dur, a.Bytes, want)
	}
	c := h100Layer(64, 8192)
	c.GPU.AttnFloorUs, c.GPU.AttnLatencyUs = 0, 0
	_, by = spansByName(t, c)
	if got := by["attention"][0].Dur; got != want-FromSeconds(3.7e-6) {
		t.Fatalf("without measured latencies attention takes %v, want its roofline %v", got, want-FromSeconds(3.7e-6))
	}
}

// At batch 256 LLaMA-2-70B's GEMMs sit at the H100's ridge: under the power cap the fused
// gate/up GEMM runs its FLOPs at the capped rate and pays for its DRAM bytes out of the
// same 630 W, longer than its compute and memory roofs.
func TestGPUGEMMUnderThePowerCap(t *testing.T) {
	c := h100Layer(256, 512)
	_, by := spansByName(t, c)
	fc1 := by["FC1"][0]
	c.GPU.PowerCapW, c.GPU.IdlePowerW, c.GPU.MemoryPJPerBit = 0, 0, 0
	_, by = spansByName(t, c)
	free := by["FC1"][0].Dur
	lat := FromSeconds(5e-6)
	want := lat + FromSeconds(fc1.FLOPs/(989.4e12*0.7)) + FromSeconds(fc1.Bytes*32e-12/630)
	if fc1.Dur != want || free != lat+max(FromSeconds(fc1.FLOPs/(989.4e12*0.7)), FromSeconds(fc1.Bytes/(3350e9*0.85))) || fc1.Dur <= free {
		t.Fatalf("under the cap FC1 takes %v (want %v), without it %v", fc1.Dur, want, free)
	}
}

func TestGPUBadPowerFigures(t *testing.T) {
	for _, tc := range []struct {
		set  func(*GPU)
		want string
	}{
		{func(g *GPU) { g.IdlePowerW = 800 }, "draws 800 W idle, not under its 700 W power cap"},
		{func(g *GPU) { g.MemoryPJPerBit = -1 }, "must not be negative"},
		{func(g *GPU) { g.SweepEfficiency = 1.5 }, "a share in [0, 1]"},
	} {
		c := h100Layer(1, 512)
		tc.set(&c.GPU)
		_, err := New(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want it to say %q", err, tc.want)
		}
	}
}
