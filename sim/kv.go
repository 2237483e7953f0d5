package sim

import "fmt"

// kvPool is a paged KV-cache allocator over one or more locations (PIM channels, an HBM
// pool). Under the paged policy (vLLM) a request takes blocks lazily as its sequence
// grows and admission only needs room for its current length; when a location runs out,
// the engine preempts a request there. Under the reserve policy a request reserves blocks
// for its full length when it is admitted, so it never needs preempting; the reserved but
// unused blocks are the price, and the KV map shows them.
type kvPool struct {
	capacity []int
	used     []int
	reserved []int
	full     bool // reserve policy
	// reserveLen, under the reserve policy, is the length every request reserves (a static
	// maximum context, as fixed-function PIM pre-allocates it); 0: each request's own full
	// length.
	reserveLen int
	// blocks returns the K and V blocks a sequence of n tokens occupies.
	blocks func(n int) (k, v int)
	// bare: snapshot fills the counts and the fragmentation but lists no holders, for a
	// headless run that reads only its result (Config.Jump).
	bare bool
}

func newKVPool(locations, perLocation int, blocks func(int) (int, int)) *kvPool {
	p := &kvPool{capacity: make([]int, locations), used: make([]int, locations), reserved: make([]int, locations), blocks: blocks}
	for i := range p.capacity {
		p.capacity[i] = perLocation
	}
	return p
}

// need is the blocks admission must find for r: its full length under the reserve policy,
// its current length under the paged policy.
func (p *kvPool) need(r *Request) int {
	n := r.SeqLen()
	if p.full {
		n = r.FinalLen()
		if p.reserveLen > 0 {
			n = p.reserveLen
		}
	}
	k, v := p.blocks(n)
	return k + v
}

// longest is the blocks a request of n tokens ends up holding (at least its reservation).
func (p *kvPool) longest(n int) int {
	if p.full && p.reserveLen > 0 {
		n = max(n, p.reserveLen)
	}
	k, v := p.blocks(n)
	return k + v
}

// admitInOrder admits candidates to the pool's one location in order, stopping at the
// first that does not fit, as continuous batching does on a single device.
func (p *kvPool) admitInOrder(cands []*Request) []bool {
	placed := make([]bool, len(cands))
	for i, r := range cands {
		if !p.admits(0, p.need(r)) {
			break
		}
		p.reserve(r, 0)
		placed[i] = true
	}
	return placed
}

// admits reports whether admission may take n more blocks at loc.
func (p *kvPool) admits(loc, n int) bool { return n <= p.room(loc) }

// limit is the blocks admission may fill at loc. The paged policy keeps 1% of each
// location free (vLLM's watermark) so a new request is not preempted at once.
func (p *kvPool) limit(loc int) int {
	if p.full {
		return p.capacity[loc]
	}
	return p.capacity[loc] - p.capacity[loc]/100
}

// room is the most blocks admission may take at loc.
func (p *kvPool) room(loc int) int { return p.limit(loc) - p.reserved[loc] }

// maxRoom is the most blocks admission may take at any one location.
func (p *kvPool) maxRoom() int {
	m := p.room(0)
	for loc := 1; loc < len(p.capacity); loc++ {
		m = max(m, p.room(loc))
	}
	return m
}

// admitsAt is admits once every request of running is i tokens longer (reservedAt).
func (p *kvPool) admitsAt(running []*Request, i, loc, n int) bool {
	at := make([]int, len(p.capacity))
	p.reservedAt(running, i, at)
	return at[loc]+n <= p.limit(loc)
}

// reserve places r at loc and takes the blocks admission checked for.
func (p *kvPool) reserve(r *Request, loc int) {
	n := p.need(r)
	r.Loc, r.reserved = loc, n
	p.reserved[loc] += n
	p.grow(r)
}

// reserveFor reserves, ahead of growth, the blocks r will hold at n tokens, if the location
// has room for them; it reports whether r now has them. grow then takes them without
// asking again.
func (p *kvPool) reserveFor(r *Request, n int) bool {
	k, v := p.blocks(n)
	extra := k + v - r.reserved
	if extra <= 0 {
		return true
	}
	if p.reserved[r.Loc]+extra > p.capacity[r.Loc] {
		return false
	}
	p.reserved[r.Loc] += extra
	r.reserved += extra
	return true
}

// grow takes the blocks r's current length needs. It reports false, taking nothing, when
// the paged policy finds the location full.
func (p *kvPool) grow(r *Request) bool {
	k, v := p.blocks(r.SeqLen())
	add := k + v - r.kBlocks - r.vBlocks
	if add <= 0 {
		return true
	}
	if p.full {
		if r.kBlocks+r.vBlocks+add > r.reserved {
			panic(fmt.Sprintf("kv: request %d outgrew its reservation", r.ID))
		}
	} else {
		if extra := r.kBlocks + r.vBlocks + add - r.reserved; extra > 0 {
			if p.reserved[r.Loc]+extra > p.capacity[r.Loc] {
				return false
			}
			p.reserved[r.Loc] += extra
			r.reserved += extra
		}
	}
	p.used[r.Loc] += add
	r.kBlocks, r.vBlocks = k, v
	return true
}

// release returns every block r holds or reserved.
func (p *kvPool) release(r *Request) {
	if r.Loc < 0 {
		return
	}
	p.used[r.Loc] -= r.kBlocks + r.vBlocks
	p.reserved[r.Loc] -= r.reserved
	r.kBlocks, r.vBlocks, r.reserved = 0, 0, 0
}

// snapshot builds the KV map. live returns the bytes of live tokens a request holds.
func (p *kvPool) snapshot(m *KVMap, labels func(int) string, running []*Request, live func(*Request) float64) {
	m.Locations = make([]KVLocation, len(p.capacity))
	for i := range p.capacity {
		m.Locations[i] = KVLocation{Label: labels(i), Capacity: p.capacity[i], Used: p.used[i], Reserved: p.reserved[i]}
		m.Capacity += p.capacity[i]
		m.Used += p.used[i]
		m.Reserved += p.reserved[i]
	}
	for _, r := range running {
		if r.Loc < 0 || p.bare {
			continue
		}
		alloc := float64(r.kBlocks+r.vBlocks) * m.BlockBytes
		fill := 0.0
		if alloc > 0 {
			fill = min(1, live(r)/alloc)
		}
		loc := &m.Locations[r.Loc]
		loc.Holders = append(loc.Holders, KVHolder{Request: r.ID, KBlocks: r.kBlocks, VBlocks: r.vBlocks, Reserved: r.reserved, Fill: fill})
	}
	m.Fragmentation = p.fragmentation(running, m.BlockBytes, live)
}

// fragmentation is the share of the running requests' blocks that holds no live token.
func (p *kvPool) fragmentation(running []*Request, blockBytes float64, live func(*Request) float64) float64 {
	var liveSum, allocSum float64
	for _, r := range running {
		if r.Loc < 0 {
			continue
		}
		liveSum += live(r)
		allocSum += float64(r.kBlocks+r.vBlocks) * blockBytes
	}
	if allocSum > 0 {
		return max(0, 1-liveSum/allocSum)
	}
	return 0
}

// totals is the blocks in use and the capacity over every location.
func (p *kvPool) totals() (used, capacity int) {
	for i := range p.capacity {
		used += p.used[i]
		capacity += p.capacity[i]
	}
	return used, capacity
}

// growsFor is how many of the next m iterations every running request can take its next
// token's blocks in: past them its location runs out and the engine preempts. A location's
// demand only grows with the iterations, so the first that does not fit is found by
// halving.
func (p *kvPool) growsFor(running []*Request, m int) int {
	if p.full {
		return m
	}
	at := make([]int, len(p.capacity))
	fits := func(i int) bool {
		p.reservedAt(running, i, at)
		for l, n := range at {
			if n > p.capacity[l] {
				return false
			}
		}
		return true
	}
	return largest(0, m, fits)
}

// largest is the largest x in [lo, hi] for which ok holds, found by halving, given that
// ok(lo) holds and that ok holds up to some x and no further.
func largest(lo, hi int, ok func(int) bool) int {
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// reservedAt fills at with the blocks each location has reserved once every request of
// running is i tokens longer and has taken the blocks its length then needs (the paged
// policy reserves them as it grows; a full reservation already holds them).
func (p *kvPool) reservedAt(running []*Request, i int, at []int) {
	copy(at, p.reserved)
	for _, r := range running {
		k, v := p.blocks(r.seqLenAt(i))
		if add := k + v - r.reserved; add > 0 {
			at[r.Loc] += add
		}
	}
}

// fragAhead is the highest fragmentation over the next m iterations of running, each
// request one token longer per iteration and holding the blocks its length needs, as
// fragmentation computes it with perTok live bytes a token.
func (p *kvPool) fragAhead(running []*Request, m int, blockBytes, perTok float64) float64 {
	peak := 0.0
	for i := 1; i <= m; i++ {
		var liveSum, allocSum float64
		for _, r := range running {
			if r.Loc < 0 {
				continue
			}
			n := r.seqLenAt(i)
			k, v := p.blocks(n)
			liveSum += float64(n) * perTok
			allocSum += float64(k+v) * blockBytes
		}
		if allocSum > 0 {
			peak = max(peak, 1-liveSum/allocSum)
		}
	}
	return peak
}
