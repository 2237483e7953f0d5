package sim

import (
	"math"
	"slices"
	"testing"
)

// Once the host memory is full, a decode whose next token finds no room waits with its KV
// cache (§5.3 step 1) until a retirement or a preemption frees blocks. A stretch over such
// iterations grows only the fetched requests: fragPeak, told which requests decode,
// foresees the fragmentation the next iterations reach while the fetched set stays the
// same, and the waiting requests' blocks stay as they are.
func TestL3FragPeakWithWaitingDecodes(t *testing.T) {
	const m = 8
	c := l3Small(testL3())
	c.Workload.Requests, c.Workload.MaxBatch = 64, 64
	c.Workload.InputLen, c.Workload.OutputLen = 100, 200
	c.L3.Host.CapacityGiB = 1.5
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	p := e.sys.(*l3)
	type seen struct {
		events, running int
		fetched         []*Request
		waiting         bool
		frag, peak      float64
		ok              bool
	}
	var runs []seen
	for !e.Done() {
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
		if e.sys == nil {
			break
		}
		var decode []*Request
		for _, r := range e.running {
			if r.Status == Running && !p.stateOf(r).waits {
				decode = append(decode, r)
			}
		}
		_, frag, _ := p.kvStats(e.running)
		peak, ok := p.fragPeak(e.running, decode, m)
		runs = append(runs, seen{e.events, len(e.running), decode, len(decode) < len(e.running), frag, peak, ok})
	}
	checked := 0
	for i := 0; i+m < len(runs); i++ {
		a := runs[i]
		if !a.waiting || !a.ok {
			continue
		}
		top, same := 0.0, true
		for _, b := range runs[i+1 : i+1+m] {
			same = same && b.events == a.events && b.running == a.running && slices.Equal(b.fetched, a.fetched)
			top = max(top, b.frag)
		}
		if !same {
			continue
		}
		checked++
		if math.Abs(a.peak-top) > 1e-12 {
			t.Fatalf("iteration %d, %d of %d requests waiting: fragPeak %v, the next %d iterations reach %v", i+1, a.running-len(a.fetched), a.running, a.peak, m, top)
		}
	}
	if checked == 0 {
		t.Fatalf("no %d iterations in %d with the same decodes waiting: the host never filled", m, len(runs))
	}
	t.Logf("%d stretches of %d iterations with decodes waiting checked", checked, m)
}
