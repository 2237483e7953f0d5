package sim

import (
	"errors"
	"testing"
)

// gpt3_7b and testNeuPIMs mirror the embedded neupims preset so sim tests stand alone.
var gpt3_7b = Model{Name: "gpt3-7b", Display: "GPT3-7B", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, FFN: "gelu", DFFN: 16384, Vocab: 50304}

func testNeuPIMs() Config {
	return Config{
		Preset: "neupims", System: SystemNeuPIMs, Model: gpt3_7b, TP: 4, PP: 1, Precision: 2,
		Workload: Workload{
			Dataset:  Dataset{Name: "sharegpt", InMean: 80.3, InStd: 227, InMin: 1, InMax: 2047, OutMean: 295, OutStd: 150, OutMin: 1, OutMax: 2047, MaxSeqLen: 2048},
			Requests: 1000, MaxBatch: 256, Arrival: ArrivalClosed, Prefill: PrefillSkip, Seed: 1,
		},
		NPU:       NPU{SystolicArrays: 8, SARows: 128, SACols: 128, VectorUnits: 8, VectorWidth: 128, ClockGHz: 1, GEMMEfficiency: 0.7, MemoryEfficiency: 1},
		Memory:    DRAM{Channels: 32, BankGroups: 8, BanksPerChannel: 32, RowsPerBank: 32768, PageBytes: 1024, BusBits: 128, ClockGHz: 1, TransfersPerClk: 2},
		PIM:       PIM{Enabled: true, DualRowBuffer: true, TileCycles: 184, GWriteCycles: 100, MultipliersPerBank: 16},
		Scheduler: Scheduler{SubBatchInterleaving: true, SBIMinBatch: 256, ChannelAlloc: GreedyMinLoad},
	}
}

func runAll(t testing.TB, c Config) (*Engine, Result) {
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := e.Step()
		if errors.Is(err, ErrDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return e, e.Result()
}

func TestEngineCompletesEveryRequest(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Requests = 300
	_, r := runAll(t, c)
	if r.RequestsCompleted != 300 {
		t.Fatalf("completed %d of 300", r.RequestsCompleted)
	}
	if r.ThroughputTokS <= 0 || r.SimTimeS <= 0 {
		t.Fatalf("throughput %v over %v s", r.ThroughputTokS, r.SimTimeS)
	}
	for k, v := range r.Utilization {
		if v < 0 || v > 1 {
			t.Errorf("utilization %s = %v outside [0,1]", k, v)
		}
	}
}
