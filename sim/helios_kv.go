package sim

import (
	"fmt"
	"slices"
)

// heliosKV is the HeLioS family's KV-cache manager over locations: the PEs of an
// HB-Device (row-major on a side×side mesh) or the HBM cubes of a GPU.
//
// Block policies (spatial, round_robin, balanced_only) cut each request into blocks of b
// tokens, every block holding those tokens' K and V of every KV head on the device in
// every layer (one placement serves all heads and layers, HeLioS Sec. V-A). Blocks follow
// the sequence: no reservation, a new last block with T = 1 when the last one fills,
// nothing ever migrates, everything returns on completion.
//
// The static policy (static_module) pins each KV head of a request to one module (a group
// of PEs or one cube) and reserves the whole context window there at admission, as the
// NMP baselines do (HeLioS Table I); a module's PEs each hold an equal share. The modules
// are dealt in order, one (request, KV head) pair after another, whatever their load:
// the baselines' heads are "statically assigned to fixed NMP modules" (Sec. II-D: LLaMA3-70B
// with one KV head per GPU needs five concurrent requests to use its five cubes).
type heliosKV struct {
	policy   string
	locs     int
	side     int // mesh side (block policies on a mesh); 0: no geometry
	capacity int // blocks per location
	b        int
	used     []int // blocks taken (block policies) or reserved (static) per location
	reqs     map[int]*kvReq

	// Algorithm 2 state per PE
	tsum  []int64
	nlast []int
	dl1   []int
	clsX  []int    // root class of each PE's row (X-axis spanning tree)
	clsY  []int    // root class of each PE's column (Y-axis spanning tree)
	cntX  [2]int   // last blocks per X-tree class
	cntY  [][2]int // per mesh row, last blocks per Y-tree class
	tol   int64
	rr    int
	heads int // placement units per request: its KV heads (static) or 1 (blocks hold every head)
	kvh   int // KV heads of the device, for head-token loads

	// static
	group    int     // locations per module
	next     int     // the module the next (request, head) pair goes to
	context  int     // tokens a request reserves
	reserve  int     // blocks each location of a module reserves per (request, head)
	modTok   []int64 // tokens per module summed over its (request, head) pairs
	modPairs []int   // (request, head) pairs per module
	modPE    [][]int // locations of each module
	locMod   []int   // module of each location
	watermrk int
}

// kvReq is one request's KV.
type kvReq struct {
	tokens   int
	blocks   []int32 // block policies: blocks per location
	last     int     // location of the last, partly filled block; -1 when none
	lastFill int     // tokens in it
	mods     []int   // static: module of each KV head
}

// newHeliosKV builds the manager. side > 0 lays the locations out as a side×side mesh
// (Algorithm 2's D_L1 and spanning trees); kvh is the KV heads of the device (the static
// policy places each separately);
// group is the locations per module and reserve the context window (static policy).
func newHeliosKV(policy string, locs, side, capacity, b, kvh, group, context, tol int) *heliosKV {
	heads := 1
	if policy == AllocStaticModule {
		heads = kvh
	}
	k := &heliosKV{policy: policy, locs: locs, side: side, capacity: capacity, b: b, heads: max(1, heads), kvh: max(1, kvh),
		used: make([]int, locs), reqs: map[int]*kvReq{}, tol: int64(tol)}
	k.watermrk = locs * capacity / 100
	k.dl1 = make([]int, locs)
	if side > 0 {
		for p := range locs {
			k.dl1[p] = centreDist(p/side, side) + centreDist(p%side, side)
		}
	}
	if policy == AllocStaticModule {
		k.group, k.context = max(1, group), context
		k.reserve = ceilDiv(context, k.group*b)
		k.modTok = make([]int64, locs/k.group)
		k.modPairs = make([]int, locs/k.group)
		k.modPE = modules(locs, side, k.group)
		k.locMod = make([]int, locs)
		for m, ps := range k.modPE {
			for _, p := range ps {
				k.locMod[p] = m
			}
		}
		return k
	}
	k.tsum = make([]int64, locs)
	k.nlast = make([]int, locs)
	k.clsX = make([]int, locs)
	k.clsY = make([]int, locs)
	if side > 0 {
		k.cntY = make([][2]int, side)
		for p := range locs {
			k.clsX[p], k.clsY[p] = rootClass(p/side, side), rootClass(p%side, side)
		}
	} else {
		k.cntY = make([][2]int, 1)
	}
	return k
}

// modules groups locations into modules of group: the 2×2 quadrants of an even mesh for
// modules of four (a ring of four PEs, as Stratum's), otherwise runs of consecutive indices.
func modules(locs, side, group int) [][]int {
	var out [][]int
	if group == 4 && side > 0 && side%2 == 0 {
		for bx := 0; bx < side; bx += 2 {
			for by := 0; by < side; by += 2 {
				out = append(out, []int{bx*side + by, bx*side + by + 1, (bx+1)*side + by, (bx+1)*side + by + 1})
			}
		}
		return out
	}
	for m := range locs / group {
		ps := make([]int, group)
		for i := range ps {
			ps[i] = m*group + i
		}
		out = append(out, ps)
	}
	return out
}

// centreDist is the distance of mesh index i to the central band of a side-long line: the
// indices ⌊(side−1)/2⌋ and ⌈(side−1)/2⌉ (two for an even side, one for an odd side).
func centreDist(i, side int) int {
	lo, hi := (side-1)/2, side/2
	switch {
	case i < lo:
		return lo - i
	case i > hi:
		return i - hi
	}
	return 0
}

// rootClass is which of the two minimum-depth spanning-tree roots of a line serves index
// i: 0 for the root at ⌊(side−1)/2⌋ (indices up to it), 1 for the root at side/2. An odd
// side has one root, class 0 for every index.
func rootClass(i, side int) int {
	if side%2 == 1 || i <= (side-1)/2 {
		return 0
	}
	return 1
}

// mesh returns location p's mesh row (0 without geometry).
func (k *heliosKV) row(p int) int {
	if k.side <= 0 {
		return 0
	}
	return p / k.side
}

// free is the blocks location p can still give.
func (k *heliosKV) free(p int) int { return k.capacity - k.used[p] }

func (k *heliosKV) freeTotal() int {
	n := 0
	for p := range k.locs {
		n += k.free(p)
	}
	return n
}

// differ reports whether two T_sum values differ for the comparators: exactly (the
// paper), or by at least the tie tolerance (an extension).
func (k *heliosKV) differ(a, b int64) bool {
	d := a - b
	if d == 0 {
		return false
	}
	if k.tol <= 0 {
		return true
	}
	return d >= k.tol || d <= -k.tol
}

// lx and ly are L^X_mst and L^Y_mst of location p, in last blocks: the last blocks on the
// X-axis tree p's row sends to, and on its row's Y-axis tree p's column belongs to.
func (k *heliosKV) lx(p int) int { return k.cntX[k.clsX[p]] }
func (k *heliosKV) ly(p int) int { return k.cntY[k.row(p)][k.clsY[p]] }

// cmpFull is Algorithm 2's CMPFull: fewer T_sum wins; on a tie the larger D_L1 (the
// periphery); then the lower index.
func (k *heliosKV) cmpFull(a, b int) bool {
	if k.differ(k.tsum[a], k.tsum[b]) {
		return k.tsum[a] < k.tsum[b]
	}
	if k.dl1[a] != k.dl1[b] {
		return k.dl1[a] > k.dl1[b]
	}
	return a < b
}

// cmLast is Algorithm 2's CMLast: fewer T_sum; smaller D_L1 (the centre); fewer N_last;
// smaller L^X_mst; smaller L^Y_mst; then the lower index.
func (k *heliosKV) cmLast(a, b int) bool {
	if k.differ(k.tsum[a], k.tsum[b]) {
		return k.tsum[a] < k.tsum[b]
	}
	if k.dl1[a] != k.dl1[b] {
		return k.dl1[a] < k.dl1[b]
	}
	if k.nlast[a] != k.nlast[b] {
		return k.nlast[a] < k.nlast[b]
	}
	if la, lb := k.lx(a), k.lx(b); la != lb {
		return la < lb
	}
	if la, lb := k.ly(a), k.ly(b); la != lb {
		return la < lb
	}
	return a < b
}

// balanced is the balanced_only ablation: fewer T_sum, then the lower index.
func (k *heliosKV) balanced(a, b int) bool {
	if k.differ(k.tsum[a], k.tsum[b]) {
		return k.tsum[a] < k.tsum[b]
	}
	return a < b
}

// pick returns the location the policy gives the next block (last says whether it is a
// last block), among those with a free block, or -1 when every location is full. It
// changes nothing but the round-robin cursor when commit is set.
func (k *heliosKV) pick(last, commit bool) int {
	if k.policy == AllocRoundRobin {
		for i := range k.locs {
			p := (k.rr + i) % k.locs
			if k.free(p) > 0 {
				if commit {
					k.rr = (p + 1) % k.locs
				}
				return p
			}
		}
		return -1
	}
	better := k.cmpFull
	switch {
	case k.policy == AllocBalancedOnly:
		better = k.balanced
	case last:
		better = k.cmLast
	}
	best := -1
	for p := range k.locs {
		if k.free(p) > 0 && (best < 0 || better(p, best)) {
			best = p
		}
	}
	return best
}

// give puts one block of t tokens of request q at p (Algorithm 2's UpdateLoad).
func (k *heliosKV) give(q *kvReq, p, t int, last bool) {
	k.used[p]++
	q.blocks[p]++
	k.tsum[p] += int64(t)
	if last {
		q.last, q.lastFill = p, t
		k.setLast(p, +1)
	}
}

func (k *heliosKV) setLast(p, d int) {
	k.nlast[p] += d
	k.cntX[k.clsX[p]] += d
	k.cntY[k.row(p)][k.clsY[p]] += d
}

// fit says why a request of in input and out output tokens can never run alone in the
// empty locations (each a loc, e.g. a PE), or "". A static reservation must cover the
// request and the heads spread over the modules must fit a location; blocks must fit the
// free locations together, the prompt within admission's watermark.
func (k *heliosKV) fit(in, out int, loc, model string, tp int) string {
	if k.policy == AllocStaticModule {
		if in+out > k.context {
			return fmt.Sprintf("the static reservation of %d tokens is shorter; raise kvcache.context_tokens or set it to 0 (the workload's longest sequence)", k.context)
		}
		mods := len(k.modPE)
		if per := ceilDiv(k.heads, mods) * k.reserve; per > k.capacity {
			return fmt.Sprintf("its reservation of %d tokens per KV head needs %d KV blocks on each %s of a module but a %s holds %d after %s's weights at tp %d; shorten the context or raise model.tp",
				k.context, per, loc, loc, k.capacity, model, tp)
		}
		return ""
	}
	all := k.locs * k.capacity
	if need := ceilDiv(in+out, k.b); need > all || ceilDiv(in, k.b) > all-k.watermrk {
		return fmt.Sprintf("it needs %d KV blocks of %d tokens but the empty %ss hold %d after %s's weights at tp %d; shorten the sequences or raise model.tp",
			need, k.b, loc, all, model, tp)
	}
	return ""
}

// admit places r's current sequence, or reports false and takes nothing. Block policies
// run Algorithm 2's Allocate(Req) with Req.T = the sequence (N_full = ⌊T/b⌋ full blocks,
// then a last block of T − N_full·b tokens if that is not zero) and keep 1% of the blocks
// free, as vLLM's watermark does, so a new request is not preempted at once.
func (k *heliosKV) admit(r *Request) bool {
	if k.policy == AllocStaticModule {
		return k.admitStatic(r)
	}
	n := r.SeqLen()
	if ceilDiv(n, k.b) > k.freeTotal()-k.watermrk {
		return false
	}
	q := &kvReq{blocks: make([]int32, k.locs), last: -1}
	k.reqs[r.ID] = q
	k.allocate(q, n)
	return true
}

// allocate is Algorithm 2's Allocate for T tokens.
func (k *heliosKV) allocate(q *kvReq, t int) {
	full, rest := t/k.b, t%k.b
	for range full {
		k.give(q, k.pick(false, true), k.b, false)
	}
	if rest > 0 {
		k.give(q, k.pick(true, true), rest, true)
	}
	q.tokens += t
}

// admitStatic pins each KV head of r, in order, to the next module in turn that can
// reserve the context window on every one of its locations (a full module is passed
// over, its turn lost); the modules' loads play no part. If one head finds no module, r
// waits and nothing is taken.
func (k *heliosKV) admitStatic(r *Request) bool {
	mods := make([]int, k.heads)
	next := k.next
	for h := range mods {
		best := -1
		for i := range k.modTok {
			m := (next + i) % len(k.modTok)
			fits := true
			for _, p := range k.modPE[m] {
				if k.free(p) < k.reserve {
					fits = false
					break
				}
			}
			if fits {
				best = m
				break
			}
		}
		if best < 0 {
			for _, m := range mods[:h] {
				k.take(m, -k.reserve, 0)
			}
			return false
		}
		mods[h] = best
		next = (best + 1) % len(k.modTok)
		k.take(best, k.reserve, 0)
	}
	for _, m := range mods {
		k.modPairs[m]++
	}
	k.next = next
	q := &kvReq{mods: mods, last: -1}
	k.reqs[r.ID] = q
	k.growStatic(q, r.SeqLen())
	return true
}

// take reserves (or returns) blocks in every location of module m and adds tokens to it.
func (k *heliosKV) take(m, blocks int, tokens int64) {
	k.modTok[m] += tokens
	for _, p := range k.modPE[m] {
		k.used[p] += blocks
	}
}

func (k *heliosKV) growStatic(q *kvReq, n int) {
	d := int64(n - q.tokens)
	for _, m := range q.mods {
		k.modTok[m] += d
	}
	q.tokens = n
}

// grow appends r's new tokens. Each goes to the last block; when it is full (or there is
// none) a new last block is allocated with T = 1 by CMLast. It reports false when every
// location is full.
func (k *heliosKV) grow(r *Request) bool {
	q := k.reqs[r.ID]
	if q == nil {
		return true
	}
	if k.policy == AllocStaticModule {
		k.growStatic(q, r.SeqLen())
		return true
	}
	for q.tokens < r.SeqLen() {
		if q.last < 0 {
			p := k.pick(true, true)
			if p < 0 {
				return false
			}
			k.give(q, p, 1, true)
		} else {
			q.lastFill++
			k.tsum[q.last]++
		}
		q.tokens++
		if q.lastFill == k.b {
			k.setLast(q.last, -1)
			q.last, q.lastFill = -1, 0
		}
	}
	return true
}

// release returns every block r holds or reserved.
func (k *heliosKV) release(r *Request) {
	q := k.reqs[r.ID]
	if q == nil {
		return
	}
	delete(k.reqs, r.ID)
	if k.policy == AllocStaticModule {
		for _, m := range q.mods {
			k.take(m, -k.reserve, -int64(q.tokens))
			k.modPairs[m]--
		}
		return
	}
	for p, n := range q.blocks {
		if n == 0 {
			continue
		}
		k.used[p] -= int(n)
		k.tsum[p] -= int64(n) * int64(k.b)
	}
	if q.last >= 0 {
		// the loop above took a whole block from the last block's PE
		k.tsum[q.last] += int64(k.b - q.lastFill)
		k.setLast(q.last, -1)
	}
}

// tokensAt is the tokens of request q stored at location p.
func (k *heliosKV) tokensAt(q *kvReq, p int) int {
	if k.policy == AllocStaticModule {
		n := 0
		for _, m := range q.mods {
			if k.locMod[p] == m {
				n += q.tokens
			}
		}
		return n / k.group // head-tokens per location of the module
	}
	t := int(q.blocks[p]) * k.b
	if q.last == p {
		t -= k.b - q.lastFill
	}
	return t
}

// headTokens fills load with each location's stored KV in head-tokens (tokens × KV heads
// of the device), the quantity attention reads.
func (k *heliosKV) headTokens(load []float64) {
	if k.policy == AllocStaticModule {
		for m, t := range k.modTok {
			for _, p := range k.modPE[m] {
				load[p] = float64(t) / float64(k.group)
			}
		}
		return
	}
	for p, t := range k.tsum {
		load[p] = float64(t) * float64(k.kvh)
	}
}

// windowTokens fills load with each location's head-tokens over the reserved windows:
// every (request, head) pair pinned to a module counts the whole context it reserved
// there, shared by the module's locations, however long the request is. The non-tiled
// flow's GEMMs have the shape the static partition fixes (HeLioS Sec. II-D, Fig. 4-a: with
// a max context L, each of a module's two PEs runs (Q, H) × (H, 0.5L) and
// (Q, L) × (L, 0.5L)).
func (k *heliosKV) windowTokens(load []float64) {
	for m, n := range k.modPairs {
		for _, p := range k.modPE[m] {
			load[p] = float64(n) * float64(k.context) / float64(k.group)
		}
	}
}

// target is the location that receives r's next token's K and V: the PE of its last
// block, or where CMLast would put a new one (previewed, not allocated); for the static
// policy, the first location of its first head's module.
func (k *heliosKV) target(r *Request) int {
	q := k.reqs[r.ID]
	if q == nil {
		return -1
	}
	if k.policy == AllocStaticModule {
		best := -1
		for _, p := range k.modPE[q.mods[0]] {
			if best < 0 || k.dl1[p] < k.dl1[best] {
				best = p
			}
		}
		return best
	}
	if q.last >= 0 {
		return q.last
	}
	rr := k.rr
	p := k.pick(true, false)
	k.rr = rr
	return p
}

// fragmentation is 1 − live tokens / tokens the allocated (or reserved) blocks hold.
func (k *heliosKV) fragmentation() float64 {
	var live, alloc float64
	for _, q := range k.reqs {
		if k.policy == AllocStaticModule {
			live += float64(q.tokens * len(q.mods))
			alloc += float64(len(q.mods) * k.group * k.reserve * k.b)
			continue
		}
		live += float64(q.tokens)
		for _, n := range q.blocks {
			alloc += float64(n) * float64(k.b)
		}
	}
	if alloc <= 0 {
		return 0
	}
	return max(0, 1-live/alloc)
}

// describe names the policy for the KV map.
func (k *heliosKV) describe() string {
	switch k.policy {
	case AllocStaticModule:
		return fmt.Sprintf("static: each KV head pinned to a module of %d, the context window reserved", k.group)
	case AllocRoundRobin:
		return "round robin: blocks dealt to the locations in turn"
	case AllocBalancedOnly:
		return "balanced only: fewest tokens first (Algorithm 2 without its spatial tie-breaks)"
	}
	return "spatially aware (Algorithm 2): balanced tokens, full blocks to the edge, last blocks to the centre"
}

// held reports whether request q keeps KV blocks at location p.
func (k *heliosKV) held(q *kvReq, p int) bool {
	if k.policy == AllocStaticModule {
		return slices.Contains(q.mods, k.locMod[p])
	}
	return q.blocks[p] > 0
}

// holding is the blocks q fills at location p and the blocks it keeps there: under the
// static policy its tokens' blocks within the context reserved for each of its heads
// there, otherwise the blocks Algorithm 2 gave it.
func (k *heliosKV) holding(q *kvReq, p int) (blocks, resv int) {
	if k.policy != AllocStaticModule {
		return int(q.blocks[p]), int(q.blocks[p])
	}
	for _, md := range q.mods {
		if k.locMod[p] == md {
			resv += k.reserve
		}
	}
	return ceilDiv(k.tokensAt(q, p), k.b), resv
}

// usedBlocks is the blocks the running requests fill, as the KV map counts them.
func (k *heliosKV) usedBlocks(running []*Request) (used int) {
	for _, r := range running {
		q := k.reqs[r.ID]
		if q == nil {
			continue
		}
		for p := range k.locs {
			if k.held(q, p) {
				b, _ := k.holding(q, p)
				used += b
			}
		}
	}
	return used
}
