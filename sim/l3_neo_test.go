package sim

import "testing"

// NEO keeps a request out of the host's memory while the CPU would slow the batch down
// (load-aware scheduling) or while the host has no room. declines tells the engine for how
// many iterations admission goes on placing nothing as the batch grows; stepped, every one
// of them up to the next event must place nothing and report the same refusal. In the
// first run NEO's choice turns within a stretch as the hosted requests grow, in the second
// the host's room runs out within one; both must host requests, and claims must reach past
// one iteration, or jumping gains nothing.
func TestNEODeclinesHold(t *testing.T) {
	for _, hostGiB := range []float64{64, 12} {
		c := testL3()
		c.L3.Attention, c.L3.Scheduler = L3AttnCPU, L3SchedPrefillFirst
		c.L3.GPU.CapacityGB = 45.2 // the weights leave room for about two requests' KV
		c.L3.Host.CapacityGiB = hostGiB
		c.Workload.Requests, c.Workload.MaxBatch = 60, 8
		c.Workload.InputLen, c.Workload.OutputLen = 500, 400
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		p := e.sys.(*l3)
		type claim struct {
			until, events int
			head          *Request
			refused       bool
		}
		var open []claim
		hosted := 0
		long := map[bool]int{} // iterations checked past a claim's first, by refusal
		for !e.Done() {
			step, events := e.step, e.events
			var head *Request
			var admitted Time
			if len(e.queue) > 0 {
				head, admitted = e.queue[0], e.queue[0].Admitted
				if decode := e.plainDecode(); decode != nil && len(e.running) < c.Workload.MaxBatch {
					if h := p.declines(e.running, decode, head, 1<<20); h > 0 {
						open = append(open, claim{step + h, events, head, p.refused})
					}
				}
			}
			if _, err := e.Step(); err != nil {
				t.Fatal(err)
			}
			for _, r := range e.running {
				hosted += b2i(r.Loc >= p.dp)
			}
			kept := open[:0]
			for _, cl := range open {
				if step >= cl.until || events != cl.events {
					continue
				}
				if head != cl.head || head.Admitted != admitted || p.refused != cl.refused {
					t.Fatalf("host %v GiB, step %d: admission placed request %d or changed its refusal (%v, claimed %v) within a claim",
						hostGiB, step+1, cl.head.ID, p.refused, cl.refused)
				}
				if step+1 < cl.until {
					long[cl.refused]++
				}
				kept = append(kept, cl)
			}
			open = kept
		}
		t.Logf("host %v GiB: %d iterations checked past a claim's first (by choice), %d (no room), %d request-iterations hosted", hostGiB, long[false], long[true], hosted)
		if hosted == 0 || long[false] == 0 || hostGiB < 16 && long[true] == 0 {
			t.Errorf("host %v GiB: %d request-iterations hosted, %d iterations checked past a claim's first", hostGiB, hosted, long[false]+long[true])
		}
	}
}
