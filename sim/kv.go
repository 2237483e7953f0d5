package sim

import "fmt"

// kvPool is a paged KV-cache allocator over one or more locations (PIM channels, an HBM
// pool). A request reserves blocks for its full length when it is admitted, so a running
// request never has to be preempted, and takes its blocks lazily as its sequence grows
// (vLLM-style paging). Reserved-but-unused blocks are what admission control pays for
// that guarantee; the KV map shows them.
type kvPool struct {
	capacity []int
	used     []int
	reserved []int
	// blocks returns the K and V blocks a sequence of n tokens occupies.
	blocks func(n int) (k, v int)
}

func newKVPool(locations, perLocation int, blocks func(int) (int, int)) *kvPool {
	p := &kvPool{capacity: make([]int, locations), used: make([]int, locations), reserved: make([]int, locations), blocks: blocks}
	for i := range p.capacity {
		p.capacity[i] = perLocation
	}
	return p
}

// need is the blocks a request needs for its full length.
func (p *kvPool) need(r *Request) int {
	k, v := p.blocks(r.InputLen + r.OutputLen)
	return k + v
}

// fits reports whether loc can reserve n more blocks.
func (p *kvPool) fits(loc, n int) bool { return p.reserved[loc]+n <= p.capacity[loc] }

// reserve places r at loc and reserves its full-length blocks.
func (p *kvPool) reserve(r *Request, loc int) {
	n := p.need(r)
	r.Loc, r.reserved = loc, n
	p.reserved[loc] += n
	p.grow(r)
}

// grow takes the blocks r's current length needs.
func (p *kvPool) grow(r *Request) {
	k, v := p.blocks(r.SeqLen())
	add := k + v - r.kBlocks - r.vBlocks
	if add > 0 && r.kBlocks+r.vBlocks+add > r.reserved {
		panic(fmt.Sprintf("kv: request %d outgrew its reservation", r.ID))
	}
	p.used[r.Loc] += add
	r.kBlocks, r.vBlocks = k, v
}

// release returns every block r holds or reserved.
func (p *kvPool) release(r *Request) {
	p.used[r.Loc] -= r.kBlocks + r.vBlocks
	p.reserved[r.Loc] -= r.reserved
	r.kBlocks, r.vBlocks, r.reserved = 0, 0, 0
}

// snapshot builds the KV map. live returns the bytes of live tokens a request holds.
func (p *kvPool) snapshot(m *KVMap, labels func(int) string, running []*Request, live func(*Request) float64) {
	m.Locations = make([]KVLocation, len(p.capacity))
	var liveSum, allocSum float64
	for i := range p.capacity {
		m.Locations[i] = KVLocation{Label: labels(i), Capacity: p.capacity[i], Used: p.used[i], Reserved: p.reserved[i]}
		m.Capacity += p.capacity[i]
		m.Used += p.used[i]
		m.Reserved += p.reserved[i]
	}
	for _, r := range running {
		if r.Loc < 0 {
			continue
		}
		alloc := float64(r.kBlocks+r.vBlocks) * m.BlockBytes
		l := live(r)
		fill := 0.0
		if alloc > 0 {
			fill = min(1, l/alloc)
		}
		liveSum += l
		allocSum += alloc
		loc := &m.Locations[r.Loc]
		loc.Holders = append(loc.Holders, KVHolder{Request: r.ID, KBlocks: r.kBlocks, VBlocks: r.vBlocks, Reserved: r.reserved, Fill: fill})
	}
	if allocSum > 0 {
		m.Fragmentation = max(0, 1-liveSum/allocSum)
	}
}
