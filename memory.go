package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// memoryFloor is the memory the explorer may use before the garbage collector works
// harder than usual: with the kept history packed and a finished run's planner let go,
// every preset's live data fits well within it, and a process at the floor stays under
// 150 MB resident. Go's default would let the heap grow to twice the live data, which for
// a Hermes run (every neuron of LLaMA2-70B, while the paper figures build another) is
// over 250 MB.
const memoryFloor = 120 << 20

// memoryLimit is the soft memory limit for live bytes of live heap: memoryFloor, or a
// quarter more than the live heap where that is larger, so that a configuration whose
// data exceeds the floor is collected at a steady pace rather than without pause.
func memoryLimit(live uint64) int64 {
	return max(memoryFloor, int64(live+live/4))
}

// boundMemory keeps the process's soft memory limit at memoryLimit of its live heap,
// checked four times a second, until stop is called. A limit the user sets with
// GOMEMLIMIT is left alone.
func boundMemory() (stop func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	old := debug.SetMemoryLimit(memoryFloor)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				metrics.Read(sample)
				debug.SetMemoryLimit(memoryLimit(sample[0].Value.Uint64()))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		debug.SetMemoryLimit(old)
	}
}
