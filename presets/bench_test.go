package presets

import (
	"errors"
	"testing"

	"github.com/pimtui/pimtui/sim"
)

func engineFor(b *testing.B, name string, edit ...string) *sim.Engine {
	b.Helper()
	f, err := Get(name)
	if err != nil {
		b.Fatal(err)
	}
	for _, kv := range edit {
		if err := f.Set(kv); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := Build(f, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Recycle = true
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
