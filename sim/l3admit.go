package sim

import (
	"cmp"
	"slices"
)

// L3's admission (§5.3). The decode batch is set by the host memory: "as long as there is
// space in the host memory, fetch decoding requests from the decoding queue. They will be
// processed in this iteration" (step 1), and prefilling requests are then added to fill the
// GPU's bubble (step 3). A decoding request whose next token finds no room is not fetched:
// it keeps its KV cache in the DIMMs and waits in the decoding queue for the next
// iteration. Each iteration's decodes have their next token's KV blocks reserved before
// any prefill is admitted ("decode computation first", §5.2), no new request is admitted
// while a decoding request waits for room, and a prefill is admitted only with room for its
// prompt and its first token, so a request is preempted (its KV cache dropped and
// recomputed, as vLLM does) only when memory truly runs out: when not one decoding request
// can take its next token. Waiting alone would then stall for good (nothing in memory
// finishes), so in such an iteration every decoding request is fetched and, as vLLM does,
// the newest requests are preempted until the others have room.

// nextLen is the length r's KV cache reaches with its next token.
func (r *Request) nextLen() int {
	if n := r.InputLen + r.Generated + 1; r.window <= 0 || n < r.window {
		return n
	}
	return r.window
}

// fetchDecodes is step 1: the decoding requests, oldest admission first, each fetched with
// its next token's blocks reserved while the host memory has room; the rest wait. If none
// fits, memory is exhausted and all are fetched: their growth makes the engine preempt the
// newest requests.
func (p *l3) fetchDecodes(decode []*Request) {
	order := slices.Clone(decode)
	slices.SortStableFunc(order, func(a, b *Request) int {
		return cmp.Or(cmp.Compare(a.Admitted, b.Admitted), a.ID-b.ID)
	})
	fetched := 0
	p.starved = false
	for _, r := range order {
		st := p.state(r)
		st.waits = !p.kv.full && !p.kv.reserveFor(r, r.nextLen())
		if !st.waits {
			fetched++
		}
		p.starved = p.starved || st.waits
	}
	p.exhausted = fetched == 0 && len(order) > 0
	if p.exhausted {
		p.starved = true
		for _, r := range order {
			p.state(r).waits = false
		}
	}
	p.fetched = true
}

// fetch returns the decoding requests step 1 fetched for this iteration (after admission
// made its choice, or now if admission did not run this iteration).
func (p *l3) fetch(decode []*Request) []*Request {
	if p.lc.Scheduler != L3SchedAdaptive {
		return decode
	}
	if !p.fetched {
		p.fetchDecodes(decode)
	}
	p.fetched = false
	out := decode[:0]
	for _, r := range decode {
		if !p.state(r).waits {
			out = append(out, r)
		}
	}
	return out
}

// hostNeed is the blocks admitting r into the host memory must find: with the L3
// scheduler its prompt and its first token (both reserved on admission), otherwise its
// prompt, as the prefilling-prioritized baselines admit.
func (p *l3) hostNeed(r *Request) int {
	if p.lc.Scheduler == L3SchedAdaptive {
		return p.kv.longest(r.nextLen())
	}
	return p.kv.need(r)
}

// hostAdmits reports whether r may join the host memory now: room for hostNeed(r), and,
// with the L3 scheduler, no decoding request waiting for room.
func (p *l3) hostAdmits(r *Request) bool {
	if p.lc.Scheduler == L3SchedAdaptive && p.starved {
		return false
	}
	return p.kv.admits(0, p.hostNeed(r))
}
