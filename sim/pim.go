package sim

// PIMParams are the parameters of NeuPIMs Algorithm 1 (MHA latency estimation). The tile
// and GWRITE latencies are the artifact's scheduler constants (NeuPIMs' public simulator, Scheduler.cc).
type PIMParams struct {
	TileCycles   int // L_tile: GEMV latency of one PIM tile (one row in every bank)
	GWriteCycles int // L_GWRITE: latency to load the global vector buffer
	PageElems    int // P_DRAM: page size in elements (1 KB of FP16 = 512)
	Banks        int // B_chnl: PIM banks per channel
}

// MHALatency is NeuPIMs Algorithm 1 as the authors' simulator implements it
// (Scheduler::estimate_mha_latency): every division is a ceiling and the
// dimensions are per device (heads = heads/TP, embed = heads·headDim). It returns the PIM
// cycles of one request's attention in one layer, split into the logit GEMV (Kᵀq, lines
// 2–4) and the attend GEMV (logits·V, lines 5–7).
func (p PIMParams) MHALatency(seqLen, heads, headDim int) (logit, attend int) {
	if seqLen < 1 {
		seqLen = 1
	}
	embed := heads * headDim
	chunks := ceilDiv(embed, p.PageElems)
	tiles := ceilDiv(seqLen, p.Banks) * chunks
	logit = p.GWriteCycles*chunks + p.TileCycles*tiles
	chunksV := ceilDiv(seqLen, p.PageElems) * heads
	tilesV := ceilDiv(headDim, p.Banks) * chunksV
	attend = p.GWriteCycles*chunksV + p.TileCycles*tilesV
	return logit, attend
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

func ceilDiv(a, b int) int {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
