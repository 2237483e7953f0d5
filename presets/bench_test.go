package presets

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

func engineFor(b *testing.B, name string, edit ...string) *sim.Engine {
	b.Helper()
	return benchEngine(b, name, false, edit)
}

// benchEngine builds preset name's headless engine with edits, jumping from event to
// event or not.
func benchEngine(b testing.TB, name string, jump bool, edits []string) *sim.Engine {
	b.Helper()
	f, err := Get(name)
	if err != nil {
		b.Fatal(err)
	}
	for _, kv := range edits {
		if err := f.Set(kv); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := Build(f, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Recycle, cfg.Jump = true, jump
	e, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkStep times one decode iteration of every preset at its default batch, in
// steady state (after 300 warm-up iterations), with any step limit of the preset lifted so
// that every timed call simulates an iteration.
func BenchmarkStep(b *testing.B) {
	for _, n := range Names() {
		b.Run(n, func(b *testing.B) {
			mk := func() *sim.Engine {
				e := engineFor(b, n, "workload.requests=1000000", "workload.steps=0")
				for range 300 {
					e.Step()
				}
				return e
			}
			e := mk()
			for b.Loop() {
				if _, err := e.Step(); errors.Is(err, sim.ErrDone) {
					b.StopTimer()
					e = mk()
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkRunShareGPT1000 is a whole headless run: 1,000 ShareGPT requests on NeuPIMs
// with GPT3-7B at batch 256.
func BenchmarkRunShareGPT1000(b *testing.B) {
	for b.Loop() {
		e := engineFor(b, "neupims", "workload.requests=1000", "workload.batch=256", "model.name=gpt3-7b", "workload.dataset=sharegpt")
		for {
			if _, err := e.Step(); err != nil {
				break
			}
		}
		if e.Result().RequestsCompleted != 1000 {
			b.Fatal("run did not complete")
		}
	}
}

// BenchmarkScaling times one steady-state iteration as the simulated work grows along one
// axis at a time: batch size, context length, nodes and KV blocks. The cost per unit of
// work should stay flat or fall.
func BenchmarkScaling(b *testing.B) {
	type point struct {
		name, preset string
		edit         []string
	}
	var pts []point
	for _, n := range []int{1, 8, 64, 512} {
		pts = append(pts, point{fmt.Sprintf("batch/neupims/%d", n), "neupims", []string{fmt.Sprintf("workload.batch=%d", n)}})
	}
	for _, n := range []int{1024, 8192, 65536} {
		pts = append(pts, point{fmt.Sprintf("context/gpu-h100/%d", n), "gpu-h100",
			[]string{"workload.batch=1", fmt.Sprintf("workload.input_len=%d", n), "workload.output_len=1000"}})
	}
	for _, n := range []int{1, 4, 16} {
		pts = append(pts, point{fmt.Sprintf("nodes/lolpim/%d", n), "lolpim",
			[]string{fmt.Sprintf("lolpim.nodes=%d", n), "lolpim.tp=0", "lolpim.pp=0", "workload.batch=4"}})
	}
	for _, n := range []int{1024, 64, 4, 1} {
		pts = append(pts, point{fmt.Sprintf("kv-block-tokens/helios/%d", n), "helios",
			[]string{fmt.Sprintf("kvcache.block_tokens=%d", n), "workload.batch=128", "workload.arrival=closed"}})
	}
	for _, p := range pts {
		b.Run(p.name, func(b *testing.B) {
			e := engineFor(b, p.preset, append([]string{"workload.requests=1000000", "workload.steps=0"}, p.edit...)...)
			for range 20 {
				if _, err := e.Step(); err != nil {
					b.Fatal(err)
				}
			}
			// Collect what building the engine (and, for the first point, parsing the
			// catalogues) left behind, so no point pays for the garbage of another.
			runtime.GC()
			for b.Loop() {
				if _, err := e.Step(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSteadyStep times one headless iteration of the NeuPIMs family's steady state as
// `pimtui reproduce neupims` measures it: a closed loop kept full at batch 512 (64 under
// -short) on GPT3-13B and ShareGPT, jumping where it can as a headless run does, after
// 1,024 warm-up iterations (64 under -short). The closed batch retires a request every few
// iterations, so nearly every timed call plans and observes one iteration.
func BenchmarkSteadyStep(b *testing.B) {
	batch, warmup := 512, 1024
	if testing.Short() {
		batch, warmup = 64, 64
	}
	for _, n := range []string{"neupims", "npu-pim", "npu-only", "gpu-a100"} {
		b.Run(n, func(b *testing.B) {
			mk := func() *sim.Engine {
				e := benchEngine(b, n, true, []string{"model.name=gpt3-13b", "workload.dataset=sharegpt",
					"workload.arrival=closed", fmt.Sprintf("workload.batch=%d", batch),
					"workload.requests=10000000", "workload.steps=0", fmt.Sprintf("workload.warmup=%d", warmup)})
				for range warmup {
					if _, err := e.Step(); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				return e
			}
			e := mk()
			for b.Loop() {
				if _, err := e.Step(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
