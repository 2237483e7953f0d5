package sim

// NPU-only attention: decode attention on the NeuPIMs NPU without PIM, as the authors'
// npu-only branch runs it (src/operations/FusedMHA.cc, src/SystolicWS.cc,
// src/tensor/NPUTensorKV.cc).
//
// The KV cache sits in plain HBM in blocks of 32 tokens per head, laid out (head, token,
// d_head), each block striped over every channel, so streaming a head's K or V runs at
// the device's bandwidth. Attention is a per-request GEMV, one head at a time, on the
// weight-stationary systolic arrays: the logit GEMV is one instruction that streams the
// head's L keys through the arrays (L/arrays rows each), and the attend GEMV is one
// instruction per 128-token block of values (d_head/arrays rows each). Every instruction
// fills and drains the arrays (rows + cols − 1 cycles), and with a single query row
// nothing amortises that. Between the two GEMVs a vector unit runs the head's softmax;
// the instruction queue issues in order, so the attend GEMV waits for it. The K and V
// loads run ahead of the compute through the scratchpad's double buffer, so each GEMV
// takes the longer of its instructions and its stream.
//
// Two details of the artifact are not copied: its loop issues ceil((L+127)/128) attend
// instructions (one too many when L is a multiple of 128) where this counts the ceil(L/128)
// blocks, and its FusedMHA tiles only the first heads_per_tile heads of a request when a
// request's heads do not all fit the scratchpad, where this runs every head.

// npuAttention is a (sub-)batch's decode attention on the NPU, per layer.
type npuAttention struct {
	logit, attend  Time    // the systolic arrays' GEMV instructions
	softmax        Time    // the vector units' softmax, in the chain
	kBytes, vBytes float64 // K and V streamed from HBM
	flops          float64
}

// npuGEMVs is what a request's decode attention on the NPU takes besides its length:
// worked out once per planner, since every request of every iteration pays it.
type npuGEMVs struct {
	heads        Time // query heads on the device
	fill, arrays int  // the arrays' fill and drain, and how many share an instruction
	attendBlock  int  // cycles of one attend instruction: fill and drain, then d_head/arrays
	kvToken      int  // bytes of one token's K (or V) on the device
	flopsToken   int  // query heads × d_head
}

func (n *neupims) npuGEMVs() npuGEMVs {
	u, sh := n.cfg.NPU, n.sh
	g := npuGEMVs{heads: Time(sh.HeadsDev()), fill: u.SARows + u.SACols - 1, arrays: max(1, u.SystolicArrays),
		kvToken: sh.KVEmbedDev() * sh.Precision, flopsToken: sh.HeadsDev() * sh.HeadDim}
	g.attendBlock = g.fill + ceilDiv(sh.HeadDim, g.arrays)
	return g
}

// npuAttend adds one request of L tokens to a.
func (n *neupims) npuAttend(a *npuAttention, L int) {
	u, g := &n.cfg.NPU, &n.gemv
	a.logit += g.heads * Cycles(float64(g.fill+ceilDiv(L, g.arrays)), u.ClockGHz)
	a.attend += g.heads * Cycles(float64(ceilDiv(L, u.SARows)*g.attendBlock), u.ClockGHz)
	a.softmax += g.heads * Cycles(float64(softmaxCycles(L, u.VectorWidth)), u.ClockGHz)
	kv := float64(L * g.kvToken)
	a.kBytes += kv
	a.vBytes += kv
	a.flops += 4 * float64(g.flopsToken*L)
}

// npuMHA emits a (sub-)batch's attention on the NPU: the logit GEMVs, the softmax, the
// attend GEMVs.
func (em *emitter) npuMHA(w *sbLoad, layer, sb, after int) []int {
	a, d := &w.npu, em.n.npu
	lg := em.add(Op{Name: "logit GEMV", Lane: laneNPUS, Dur: max(a.logit, d.MemoryTime(a.kBytes)), FLOPs: a.flops / 2, Bytes: a.kBytes}, layer, sb, after)
	sm := em.add(Op{Name: "softmax", Lane: laneNPUV, Dur: a.softmax}, layer, sb, lg)
	return []int{em.add(Op{Name: "attend GEMV", Lane: laneNPUS, Dur: max(a.attend, d.MemoryTime(a.vBytes)), FLOPs: a.flops / 2, Bytes: a.vBytes}, layer, sb, sm)}
}
