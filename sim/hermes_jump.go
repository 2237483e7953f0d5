package sim

import "math"

// Event jumps for the Hermes family (sim/jump.go). Without neuron tracking every cost of a
// decode iteration is fixed by the model and the batch's lengths: Hermes-base runs each FC
// layer whole on the GPU or split evenly over the DIMMs (§V-A), Accelerate and FlexGen
// copy the same tensors every token (§V-A), and only attention reads the growing KV cache,
// in bytes and FLOPs affine in the lengths. The planners keep no state a plan changes but
// Hermes' token count, which only the neuron view shows: a probe restores it, and the
// iterations a headless run jumps, with no view, leave it behind.
//
// With neuron tracking (Hermes, Hermes-host, Deja Vu) every token draws each block's
// activated neurons at random and moves neurons between the GPU and the DIMMs (promotion,
// window remap), so an iteration's costs depend on draws and placements that only
// stepping it makes: those planners plan every iteration.

// Hermes and the offloading baselines jump, and Hermes counts its steps as a staircase
// (jump_stairs.go), checked here so that a change to either interface cannot silently make
// one step every iteration.
var (
	_ jumper  = (*hermes)(nil)
	_ stairer = (*hermes)(nil)
	_ jumper  = (*offload)(nil)
)

// probe plans the decode batch shift iterations on. Hermes' sparse variants decline: see
// above.
func (h *hermes) probe(s *Schedule, decode []*Request, shift int) bool {
	if h.ns != nil {
		return false
	}
	tokens := h.tokens
	shiftLens(decode, shift)
	h.plan(s, decode, nil)
	shiftLens(decode, -shift)
	h.tokens = tokens
	return true
}

// shiftLens makes every request of decode shift tokens longer (or shorter).
func shiftLens(decode []*Request, shift int) {
	for _, r := range decode {
		r.Generated += shift
	}
}

// cycle: each DIMM's activation unit runs the softmax over its heads_j of the kvHeads KV
// heads in ⌈ctx·heads_j·(heads/kvHeads)/u⌉ cycles (§IV-B), with ctx the batch's summed
// length, which grows by the batch every iteration. The count's fraction repeats every
// u·kvHeads / gcd(batch·heads_j·heads, u·kvHeads) iterations, so over the residue classes
// modulo the least common multiple of those periods every duration is affine.
func (h *hermes) cycle(decode []*Request, _ int) (period, limit int) {
	u := h.hc.NDP.ActivationUnits
	if h.host || u <= 0 {
		return 1, math.MaxInt
	}
	period = 1
	sh := h.sh
	den := u * sh.KVHeads
	for _, nh := range h.kvHeadOn {
		if nh == 0 {
			continue
		}
		q := den / gcd(len(decode)*nh*sh.Heads, den)
		period = period / gcd(period, q) * q
	}
	return period, math.MaxInt
}

// stairs: the softmax cycles of a DIMM holding the most KV heads (every DIMM's, when the
// heads split evenly); nil when the DIMMs hold different numbers of heads, whose counts
// step at different iterations, or none run the softmax on an activation unit.
func (h *hermes) stairs(decode []*Request, n int) []int {
	if h.ns != nil || h.host || h.hc.NDP.ActivationUnits <= 0 {
		return nil
	}
	nh := 0
	for _, c := range h.kvHeadOn {
		if c > 0 && nh > 0 && c != nh {
			return nil
		}
		nh = max(nh, c)
	}
	ys := make([]int, n)
	for k := range ys {
		var ctx float64
		for _, r := range decode {
			ctx += float64(r.seqLenAt(k))
		}
		ys[k] = int(h.softmaxCycles(ctx, nh))
	}
	return ys
}

// decided: Hermes-base's placement of every FC layer is fixed when it starts.
func (h *hermes) decided(sig []int32) []int32 { return sig }

// balance: the slowest DIMM's cold bytes summed over the sparse blocks, and the mean's; the
// even split puts the remainder neurons on the first DIMMs, so DIMM 0 is the busiest.
func (h *hermes) balance() (top, mean float64, at int) { return h.blkMax, h.blkMean, 0 }

// probe plans the decode batch shift iterations on. Deja Vu declines: see above.
func (o *offload) probe(s *Schedule, decode []*Request, shift int) bool {
	if o.ns != nil {
		return false
	}
	shiftLens(decode, shift)
	o.plan(s, decode, nil)
	shiftLens(decode, -shift)
	return true
}

// cycle: the copies are the same every token and attention is affine in the lengths.
func (o *offload) cycle([]*Request, int) (period, limit int) { return 1, math.MaxInt }

// decided: Accelerate's resident layers and FlexGen's tensor placement are fixed when they
// start.
func (o *offload) decided(sig []int32) []int32 { return sig }

// balance: the offloading baselines report no load imbalance.
func (o *offload) balance() (top, mean float64, at int) { return 0, 0, 0 }

// hermesKV is the paged KV cache both of the Hermes family's planners keep: kvBlk bytes a
// block, perTok bytes a token.
type hermesKV struct {
	kv            *kvPool
	kvBlk, perTok float64
}

// kvStats is the KV cache as the Hermes family's observe reports it: the blocks in use, the
// share of them no live token fills and the share of the capacity in use.
func (c *hermesKV) kvStats(running []*Request) (used int, frag, util float64) {
	used, capacity := c.kv.totals()
	if capacity > 0 {
		util = float64(used) / float64(capacity)
	}
	return used, c.kv.fragmentation(running, c.kvBlk, func(r *Request) float64 { return float64(r.SeqLen()) * c.perTok }), util
}

// stuck: admission takes candidates in order while their KV fits, and the blocks the
// running requests hold only grow.
func (c *hermesKV) stuck() bool { return true }

// fragPeak: every running request decodes in a stretch (none waits for room here).
func (c *hermesKV) fragPeak(running, decode []*Request, m int) (float64, bool) {
	if len(decode) != len(running) {
		return 0, false
	}
	return c.kv.fragAhead(running, m, c.kvBlk, c.perTok), true
}
