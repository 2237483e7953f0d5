package sim

import (
	"fmt"
	"testing"
	"time"
)

func TestScratchGrid(t *testing.T) {
	models := []struct {
		m      Model
		tp, pp int
	}{
		{gpt3_7b, 4, 1},
		{Model{Name: "13b", Display: "13B", Layers: 40, DModel: 5120, Heads: 40, KVHeads: 40, HeadDim: 128, FFN: "gelu", DFFN: 20480, Vocab: 50304}, 4, 1},
		{Model{Name: "30b", Display: "30B", Layers: 48, DModel: 7168, Heads: 56, KVHeads: 56, HeadDim: 128, FFN: "gelu", DFFN: 28672, Vocab: 50304}, 4, 2},
		{Model{Name: "175b", Display: "175B", Layers: 96, DModel: 12288, Heads: 96, KVHeads: 96, HeadDim: 128, FFN: "gelu", DFFN: 49152, Vocab: 50304}, 8, 4},
	}
	a100 := GPU{Name: "a100-40gb", Display: "A100", PeakTFLOPS: 312, BandwidthGBps: 1555, CapacityGB: 40, LaunchOverheadUs: 5, ComputeEfficiency: 0.7, MemoryEfficiency: 1, MemoryUtilization: 0.9, KVBlockTokens: 16}
	sum := map[string]float64{}
	n := 0
	t0 := time.Now()
	for _, md := range models {
		for _, ds := range []string{"sharegpt", "alpaca"} {
			for _, batch := range []int{64, 128, 256, 384, 512} {
				res := map[string]float64{}
				for _, v := range []string{"neupims", "npu-pim", "npu-only", "gpu"} {
					c := testNeuPIMs()
					c.Model, c.TP, c.PP = md.m, md.tp, md.pp
					c.Recycle = true
					c.Workload.MaxBatch = batch
					c.Workload.Requests = batch * 20
					c.Workload.Steps = 320
					c.Workload.Warmup = 256
					if ds == "alpaca" {
						c.Workload.Dataset = Dataset{Name: "alpaca", InMean: 12.1, InStd: 5, InMin: 1, InMax: 2047, OutMean: 55.8, OutStd: 50, OutMin: 1, OutMax: 2047, MaxSeqLen: 2048}
					}
					switch v {
					case "npu-pim":
						c.PIM.DualRowBuffer = false
						c.Scheduler.SubBatchInterleaving = false
						c.Scheduler.ChannelAlloc = RoundRobin
					case "npu-only":
						c.PIM.Enabled = false
						c.Scheduler.SubBatchInterleaving = false
					case "gpu":
						c.System = SystemGPU
						c.GPU = a100
					}
					_, r := runAll(t, c)
					res[v] = r.ThroughputTokS
				}
				fmt.Printf("%s %s b%d  neu/naive %.2f neu/npu %.2f neu/gpu %.2f naive/npu %.2f\n", md.m.Name, ds, batch, res["neupims"]/res["npu-pim"], res["neupims"]/res["npu-only"], res["neupims"]/res["gpu"], res["npu-pim"]/res["npu-only"])
				sum["a"] += res["neupims"] / res["npu-pim"]
				sum["b"] += res["neupims"] / res["npu-only"]
				sum["c"] += res["neupims"] / res["gpu"]
				sum["d"] += res["npu-pim"] / res["npu-only"]
				n++
			}
		}
	}
	fmt.Printf("AVG neu/naive %.2f neu/npu %.2f neu/gpu %.2f naive/npu %.2f  (%v)\n", sum["a"]/float64(n), sum["b"]/float64(n), sum["c"]/float64(n), sum["d"]/float64(n), time.Since(t0))
}
