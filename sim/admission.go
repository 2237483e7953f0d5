package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Admission. Every serving system of the papers admits requests while its memory holds
// them and queues the rest: vLLM's paged cache (NeuPIMs §3.1), the host choosing the batch
// each iteration (LoL-PIM §4.8.4), HeLioS' block manager (Sec. V-A), L3's "as long as there
// is space in the host memory" (§5.3). So workload.batch is only the most requests decoding
// at once: admission takes what the KV memory holds and the others wait, however large
// the batch asked for. The one workload a system refuses is a request that could never
// run, one that does not fit even alone in the empty memory: its KV cache would be
// preempted again and again, or never admitted.

// UnfitError is a request of the workload (drawn from its dataset or read from its trace)
// that can never run: alone in the empty system its KV cache does not fit.
type UnfitError struct {
	ID, Input, Output int
	// Reason says what the request needs against what the empty memory holds, and what
	// to change.
	Reason string
}

func (e *UnfitError) Error() string {
	return fmt.Sprintf("request %d (%d input + %d output tokens) can never run: %s", e.ID, e.Input, e.Output, e.Reason)
}

// prescan is how many of a workload's requests New draws ahead to refuse one that never
// fits before the run starts (about 15 ms); the requests of a longer workload are checked
// as they are drawn.
var prescan = 100_000

// checkRequests draws the first requests of the workload, as the engine will draw them,
// and refuses the first that can never fit. It returns how many it checked.
func checkRequests(sys system, w Workload) (int, error) {
	n := min(w.Requests, prescan)
	g := newGenerator(w, rand.New(rand.NewPCG(w.Seed, w.Seed^0x9e3779b97f4a7c15)))
	for id := 1; id <= n; id++ {
		_, in, out := g.request()
		if err := unfit(sys, id, in, out, g.window); err != nil {
			return n, err
		}
	}
	return n, nil
}

// unfit is the refusal of request id if it can never fit sys, or nil. A request whose
// context is capped at window tokens (Dataset.LiveCap) never holds more than that.
func unfit(sys system, id, in, out, window int) error {
	fin, fout := in, out
	if window > 0 && in+out > window {
		fin = min(in, window)
		fout = window - fin
	}
	if why := sys.fit(fin, fout); why != "" {
		return &UnfitError{ID: id, Input: in, Output: out, Reason: why}
	}
	return nil
}

// alone reports whether a request of in input and out output tokens can run by itself in
// the pool's largest location when it is empty: admitted with its prompt (its whole
// length, or the static maximum, under the reserve policy) within admission's limit, and
// grown to its full length. need is the blocks it ends up holding, have the location's.
func (p *kvPool) alone(in, out int) (need, have int, ok bool) {
	have = slices.Max(p.capacity)
	need = p.longest(in + out)
	admit, limit := need, have
	if !p.full {
		k, v := p.blocks(in)
		admit, limit = k+v, have-have/100
	}
	return need, have, need <= have && admit <= limit
}
