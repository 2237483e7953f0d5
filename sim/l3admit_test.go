package sim

import (
	"strings"
	"testing"
)

// L3 admits by §5.3: decoding requests are fetched "as long as there is space in the host
// memory", oldest first with their next token's blocks reserved, and the others wait with
// their KV cache in place; prefills are admitted with room for their first token. The
// host here fills (it holds about a hundred requests at these lengths): decodes wait, and
// a request is preempted only in an iteration where not one decoding request could take
// its next token (then, as vLLM does, the newest make room for the others).
func TestL3AdmitsByHostSpace(t *testing.T) {
	c := testL3()
	c.Model.Layers = 8
	c.L3.Host.CapacityGiB = 8
	c.Workload.Requests = 200
	d := &c.Workload.Dataset
	d.OutMean, d.OutStd, d.OutMax, d.InMax, d.MaxSeqLen = 1500, 1000, 6000, 1000, 8000
	c.Workload.Steps = 3000
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	waited, prev := 0, 0
	eachStep(t, e, func(s *Snapshot) {
		note := s.KV.Locations[0].Note
		if strings.Contains(note, "wait for room") {
			waited++
		}
		if s.KV.Reserved > s.KV.Capacity {
			t.Fatalf("step %d: %d blocks reserved of %d", s.Step, s.KV.Reserved, s.KV.Capacity)
		}
		if e.preempted > prev {
			if !strings.HasPrefix(note, "full: not one decoding request") {
				t.Fatalf("step %d: a preemption while decoding requests had room (%q)", s.Step, note)
			}
			prev = e.preempted
		}
	})
	if waited == 0 {
		t.Fatal("the host memory never filled: the test does not exercise admission")
	}
	if e.Result().RequestsCompleted == 0 {
		t.Fatal("no request completed")
	}
}
