package sim

// PIMParams are the parameters of NeuPIMs Algorithm 1 (MHA latency estimation) and of the
// attention kernels the PIM executes. The tile and GWRITE latencies are the artifact's
// scheduler constants (NeuPIMs' public simulator, Scheduler.cc); the COMP figures come from
// its memory model (extern/NewtonSim/src/channel_state.cc).
type PIMParams struct {
	TileCycles   int // L_tile: GEMV latency of one full PIM tile (one row in every bank)
	GWriteCycles int // L_GWRITE: latency to load the global vector buffer
	PageElems    int // P_DRAM: page size in elements (1 KB of FP16 = 512)
	Banks        int // B_chnl: PIM banks per channel
	Multipliers  int // per bank: elements one COMP (dot-product step) takes from the row
	CompCycles   int // cycles between two COMPs of a PIM_GEMV; 0: every tile costs L_tile
	MinComps     int // the adder tree's pipeline fill: a PIM_GEMV takes at least this many COMP slots
}

// MHALatency is NeuPIMs Algorithm 1 as the authors' simulator implements it
// (Scheduler::estimate_mha_latency): every division is a ceiling and the
// dimensions are per device (heads = heads/TP, embed = heads·headDim). It returns the PIM
// cycles of one request's attention in one layer, split into the logit GEMV (Kᵀq, lines
// 2–4) and the attend GEMV (logits·V, lines 5–7).
func (p PIMParams) MHALatency(seqLen, heads, headDim int) (logit, attend int) {
	a := p.attention(heads, headDim)
	return a.latency(seqLen)
}

// MHAExec is the PIM cycles one request's attention takes in one layer when the kernels
// run what the tiles hold, where Algorithm 1 charges every tile in full.
//
// The attend kernel (NeuPIMSAttend.cc) issues, for each head and each P-token chunk of the
// sequence, one GWRITE of the logits and one PIM_GEMV per ceil(headDim/B) tiles; a full
// chunk's GEMV has P/Multipliers COMPs, but the last chunk's has only
// ceil(tokens left/Multipliers). The logit kernel (NeuPIMSLogitSoftmax.cc) fills a tile with
// P/headDim heads, so when the device's embedding is not a multiple of P the last chunk's
// tiles carry fewer heads and fewer COMPs. The memory model (channel_state.cc) spaces the
// COMPs CompCycles apart with a floor of MinComps, so a tile of c COMPs takes
// L_tile − CompCycles·(full − max(c, MinComps)) cycles. Algorithm 1's estimate (MHALatency)
// is still what the scheduler balances channels with (Algorithm 2).
func (p PIMParams) MHAExec(seqLen, heads, headDim int) (logit, attend int) {
	a := p.attention(heads, headDim)
	return a.exec(seqLen)
}

// pimAttention is one request's attention in one layer on a PIM channel for a device's
// heads, with what does not depend on the request's length worked out once: a planner
// times every request of every iteration with it.
type pimAttention struct {
	p                 PIMParams
	heads             int
	chunks            int // P-element chunks of the embedding: the K tiles per Banks tokens
	tilesV            int // tiles of one head's V chunk: ceil(headDim/B)
	keyTile, fullTile int // MHAExec: the cycles of a row of K tiles, of a full chunk's V tile
}

func (p PIMParams) attention(heads, headDim int) pimAttention {
	a := pimAttention{p: p, heads: heads, chunks: ceilDiv(heads*headDim, p.PageElems), tilesV: ceilDiv(headDim, p.Banks)}
	lastHeads := ceilDiv(heads*headDim-(a.chunks-1)*p.PageElems, headDim)
	perHead := ceilDiv(headDim, max(1, p.Multipliers))
	a.keyTile = (a.chunks-1)*p.tile(ceilDiv(p.PageElems, headDim)*perHead) + p.tile(lastHeads*perHead)
	a.fullTile = p.tile(ceilDiv(p.PageElems, max(1, p.Multipliers)))
	return a
}

// latency is Algorithm 1 (MHALatency) for a sequence of seqLen tokens.
func (a *pimAttention) latency(seqLen int) (logit, attend int) {
	p := &a.p
	seqLen = max(seqLen, 1)
	tiles := ceilDiv(seqLen, p.Banks) * a.chunks
	logit = p.GWriteCycles*a.chunks + p.TileCycles*tiles
	chunksV := ceilDiv(seqLen, p.PageElems) * a.heads
	attend = p.GWriteCycles*chunksV + p.TileCycles*(a.tilesV*chunksV)
	return logit, attend
}

// exec is the kernels as they execute (MHAExec) for a sequence of seqLen tokens.
func (a *pimAttention) exec(seqLen int) (logit, attend int) {
	p := &a.p
	seqLen = max(seqLen, 1)
	logit = p.GWriteCycles*a.chunks + ceilDiv(seqLen, p.Banks)*a.keyTile
	full, rest := seqLen/p.PageElems, seqLen%p.PageElems
	v := full * (p.GWriteCycles + a.tilesV*a.fullTile)
	if rest > 0 {
		v += p.GWriteCycles + a.tilesV*p.tile(ceilDiv(rest, max(1, p.Multipliers)))
	}
	return logit, a.heads * v
}

// tile is the cycles of one PIM tile whose GEMV issues comps COMPs.
func (p PIMParams) tile(comps int) int {
	if p.CompCycles <= 0 {
		return p.TileCycles
	}
	full := ceilDiv(p.PageElems, max(1, p.Multipliers))
	return p.TileCycles - p.CompCycles*(full-min(full, max(comps, p.MinComps)))
}

// MHALatencyLiteral is Algorithm 1 exactly as printed in the paper, with real division and
// the closed form L = L_GWRITE·(E + N_head·L)/P + L_tile·2·L·E/(B·P) (NeuPIMs §6.3). It is
// kept to show how far the printed form is from what the hardware does.
func (p PIMParams) MHALatencyLiteral(seqLen, heads, headDim int) float64 {
	e := float64(heads * headDim)
	l := float64(seqLen)
	pp := float64(p.PageElems)
	b := float64(p.Banks)
	return float64(p.GWriteCycles)*(e+float64(heads)*l)/pp + float64(p.TileCycles)*2*l*e/(b*pp)
}
