package sim

import (
	"fmt"
	"math"
	"strconv"
)

// neupims plans one device of the NeuPIMs family (NeuPIMs, ASPLOS '24, §4–§6): the NPU's systolic
// arrays run the batched GEMMs, its vector units run softmax and the element-wise ops,
// and attention runs either in the HBM-PIM channels (NeuPIMs, naive NPU+PIM) or on the
// NPU itself (NPU-only). Dual row buffers, sub-batch interleaving and the channel
// allocation policy are the switches that turn NeuPIMs into its baselines.
type neupims struct {
	cfg    *Config
	sh     Shard
	npu    Device
	pim    PIMParams
	attn   pimAttention // one request's attention on a channel, for this device's heads
	gemv   npuGEMVs     // one request's attention on the NPU (NPU-only)
	ch     int
	tile   float64 // bytes of one KV block
	kv     *kvPool
	lane   []Lane
	prefLn int // prefill lane, -1 when prefill is skipped
	rrNext int

	// per-iteration scratch, reused
	load   []int64
	stages []string // the names of the A–F stages, for the layers of an iteration

	kvUnit, kvKind string   // what the KV map calls a block and a location
	kvLabels       []string // each location's label
}

const (
	laneNPUS = 0
	laneNPUV = 1
	lanePIM0 = 2
)

func init() {
	register(SystemNeuPIMs, func(c *Config) (system, error) { return newNeuPIMs(c) })
}

func newNeuPIMs(c *Config) (*neupims, error) {
	sh := c.shard()
	m := c.Memory
	n := &neupims{cfg: c, sh: sh, ch: m.Channels, prefLn: -1}
	if w, half := max(1, c.NPU.SACols), c.NPU.SRAMKiB*1024/2; half < 3*w*w*sh.Precision {
		need := (3*w*w*sh.Precision*2 + 1023) / 1024
		return nil, fmt.Errorf("npu.sram_kib = %d cannot hold one tile of the arrays: half the scratchpad must hold three %d × %d tiles of %d-byte values; set npu.sram_kib to at least %d",
			c.NPU.SRAMKiB, w, w, sh.Precision, need)
	}
	// The NPU's GEMMs follow the arrays' instruction schedule (npu_gemm.go), not a
	// compute roofline: the device carries the peak (for utilisation) and the weight stream.
	n.npu = Device{
		Name:         "NPU",
		PeakFLOPS:    c.NPU.PeakFLOPS(),
		MemBandwidth: m.Bandwidth(),
		MemoryEff:    c.NPU.MemoryEfficiency,
	}
	n.pim = PIMParams{TileCycles: c.PIM.TileCycles, GWriteCycles: c.PIM.GWriteCycles, PageElems: m.PageBytes / sh.Precision, Banks: m.BanksPerChannel,
		Multipliers: c.PIM.MultipliersPerBank, CompCycles: c.PIM.CompCycles, MinComps: c.PIM.MinComps}
	n.attn = n.pim.attention(sh.KVHeadsDev(), sh.HeadDim)
	n.gemv = n.npuGEMVs()
	n.lane = []Lane{{Name: "NPU-S", Group: "npu"}, {Name: "NPU-V", Group: "npu_vector"}}
	if c.PIM.Enabled {
		for i := range m.Channels {
			n.lane = append(n.lane, Lane{Name: "PIM ch" + strconv.Itoa(i), Group: "pim"})
		}
	}
	if c.Workload.Prefill == PrefillRun {
		n.prefLn = len(n.lane)
		n.lane = append(n.lane, Lane{Name: "Prefill NPU", Group: "prefill"})
	}

	free := m.Capacity() - sh.WeightBytes()
	if free <= 0 {
		return nil, fmt.Errorf("%s needs %.1f GB of weights per device at tp=%d pp=%d but the device holds %.1f GB; raise tp or pp",
			c.Model.Display, sh.WeightBytes()/1e9, sh.TP, sh.PP, m.Capacity()/1e9)
	}
	layers := sh.LayersDev()
	e := sh.KVEmbedDev()
	if c.PIM.Enabled {
		// A PIM tile is the same row in every bank of a channel (NeuPIMs §5.1 and the authors' simulator): K takes
		// ceil(E/P) tiles per 32 tokens, V takes ceil(E/32) tiles per P tokens.
		n.tile = float64(m.PageBytes * m.BanksPerChannel)
		p, b := n.pim.PageElems, m.BanksPerChannel
		kRows, vRows := ceilDiv(e, p), ceilDiv(e, b)
		n.kv = newKVPool(m.Channels, int(free/n.tile)/m.Channels, func(l int) (int, int) {
			return layers * ceilDiv(l, b) * kRows, layers * ceilDiv(l, p) * vRows
		})
		n.kvUnit, n.kvKind = fmt.Sprintf("PIM tile (one %d B row in each of %d banks)", m.PageBytes, m.BanksPerChannel), "channel"
		for i := range m.Channels {
			n.kvLabels = append(n.kvLabels, "ch"+strconv.Itoa(i))
		}
	} else {
		// NPU-only keeps KV in plain HBM, paged in blocks of 32 tokens of one head (the authors' npu-only branch).
		n.tile = float64(32 * sh.HeadDim * sh.Precision)
		kvh := sh.KVHeadsDev()
		n.kv = newKVPool(1, int(free/n.tile), func(l int) (int, int) {
			k := layers * kvh * ceilDiv(l, 32)
			return k, k
		})
		n.kvUnit, n.kvKind = fmt.Sprintf("block (32 tokens of one head, %d B)", int(n.tile)), "HBM"
		n.kvLabels = []string{"HBM"}
	}
	n.kv.full = c.Workload.KVPolicy == KVReserve
	n.load = make([]int64, m.Channels)
	return n, nil
}

// fit: a request's KV cache lives in one PIM channel (NeuPIMs §5.1), or in the
// device's HBM without PIM.
func (n *neupims) fit(in, out int) string {
	need, have, ok := n.kv.alone(in, out)
	if ok {
		return ""
	}
	return fmt.Sprintf("its KV cache needs %d blocks but an empty %s holds %d after %s's weights at tp %d, pp %d; shorten the sequences or raise model.tp or model.pp",
		need, n.kvLocKind(), have, n.cfg.Model.Display, n.sh.TP, n.sh.PP)
}

func (n *neupims) kvLocKind() string {
	if n.cfg.PIM.Enabled {
		return "channel"
	}
	return "device"
}

func (n *neupims) lanes() []Lane { return n.lane }
func (n *neupims) layers() int   { return n.sh.LayersDev() }

func (n *neupims) utilKeys() []string {
	if n.cfg.PIM.Enabled {
		return []string{"npu", "pim", "bandwidth"}
	}
	return []string{"npu", "bandwidth"}
}

// mha is Algorithm 1 for one request on one device and layer: the scheduler's estimate,
// which Algorithm 2 balances the channels with.
func (n *neupims) mha(seq int) (logit, attend int) {
	return n.attn.latency(seq)
}

func (n *neupims) admit(cands, running []*Request) []bool {
	if !n.cfg.PIM.Enabled {
		return n.kv.admitInOrder(cands)
	}
	// Room only shrinks as requests are placed, so a candidate that needs more blocks than
	// the roomiest channel has now can never be placed: it is left out before the policy
	// runs, which then places the others exactly as it would have among all of them. A
	// batch that admission keeps full leaves a long queue of such candidates each
	// iteration.
	placed := make([]bool, len(cands))
	need := make([]int, len(cands))
	room := n.kv.maxRoom()
	var order []int
	for i, r := range cands {
		need[i] = n.kv.need(r)
		if need[i] <= room {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return placed
	}
	// place puts candidate i on the channel the policy picks among those with room for it
	// (the roomiest has) and reserves its blocks there, so later ones see the new room.
	place := func(i int, assign func(fits func(_, c int) bool) []int) {
		k := need[i]
		n.kv.reserve(cands[i], assign(func(_, c int) bool { return n.kv.admits(c, k) })[0])
		room = n.kv.maxRoom()
		placed[i] = true
	}
	switch n.cfg.Scheduler.ChannelAlloc {
	case GreedyMinLoad:
		// Algorithm 2: current loads from running requests, new requests longest first
		// (ties in queue order). Walking them in that order places each that still fits
		// when its turn comes; taking each time the longest of those after the last placed
		// that fits places the same requests on the same channels without sorting a queue
		// of which one or two fit.
		clear(n.load)
		for _, r := range running {
			l, a := n.mha(r.SeqLen())
			n.load[r.Loc] += int64(l + a)
		}
		longer := func(a, b int) bool {
			return cands[a].InputLen > cands[b].InputLen || cands[a].InputLen == cands[b].InputLen && a < b
		}
		for last := -1; ; {
			next := -1
			for _, o := range order {
				if need[o] <= room && (last < 0 || longer(last, o)) && (next < 0 || longer(o, next)) {
					next = o
				}
			}
			if next < 0 {
				return placed
			}
			l, a := n.mha(cands[next].SeqLen())
			place(next, func(fits func(_, c int) bool) []int { return GreedyMinLoadAssign(n.load, []int64{int64(l + a)}, fits) })
			last = next
		}
	default:
		for _, o := range order {
			if need[o] <= room {
				place(o, func(fits func(_, c int) bool) []int { return RoundRobinAssign(n.ch, &n.rrNext, 1, fits) })
			}
		}
	}
	return placed
}

func (n *neupims) grow(r *Request) bool { return n.kv.grow(r) }
func (n *neupims) release(r *Request)   { n.kv.release(r) }

// sbiActive reports whether an iteration of b decoding requests uses sub-batch
// interleaving: the switch is on and the live batch is at least sbi_min_batch. The
// authors' simulator enables SBI "only when batch size >= 256" (README), on a batch its
// trace keeps full; deciding on the live batch keeps a batch that has drained (the end of
// a run) from splitting and streaming the weights twice for a handful of requests.
func (n *neupims) sbiActive(b int) bool {
	s := n.cfg.Scheduler
	return s.SubBatchInterleaving && b >= max(2, s.SBIMinBatch)
}

// split partitions the decode batch. With SBI it is Algorithm 3 over each channel's
// requests in their admission order; otherwise one batch.
func (n *neupims) split(decode []*Request) [2][]*Request {
	if !n.sbiActive(len(decode)) {
		return [2][]*Request{decode, nil}
	}
	if !n.cfg.PIM.Enabled {
		h := (len(decode) + 1) / 2
		return [2][]*Request{decode[:h], decode[h:]}
	}
	// Each sub-batch lists its requests channel by channel: a counting sort on the
	// channel, each channel's first requests to the first sub-batch.
	counts := make([]int, n.ch)
	for _, r := range decode {
		counts[r.Loc]++
	}
	first := PartitionSubBatches(counts)
	at := make([][2]int, n.ch) // where each channel's next request goes in either sub-batch
	var size [2]int
	for c := range n.ch {
		at[c] = size
		size[0] += first[c]
		size[1] += counts[c] - first[c]
	}
	var sb [2][]*Request
	for k := range sb {
		if size[k] > 0 {
			sb[k] = make([]*Request, size[k])
		}
	}
	for _, r := range decode {
		c := r.Loc
		k := 1
		if first[c] > 0 {
			first[c]--
			k = 0
		}
		sb[k][at[c][k]] = r
		at[c][k]++
	}
	return sb
}

// gemm is one NPU GEMM of b rows through a k × out weight matrix, timed by the arrays'
// tile schedule (npu_gemm.go). Its FLOPs and its traffic (the weights once, the
// activations in and out) feed the utilisation figures.
func (n *neupims) gemm(name string, b, k, out int) Op {
	p := float64(n.sh.Precision)
	flops := 2 * float64(b) * float64(k) * float64(out)
	bytes := float64(k)*float64(out)*p + float64(b*(k+out))*p
	return Op{Name: name, Lane: laneNPUS, Dur: n.gemmTime(b, k, out), FLOPs: flops, Bytes: bytes}
}

// ffn is the FFN's two GEMMs for b rows: up (and gate) then down. A mixture of experts
// runs each expert its routing touches as a GEMM over its share of the rows (uniform
// routing, Shard.FFNActive), plus the shared experts over all of them.
func (n *neupims) ffn(b int) (up, down Op) {
	sh := n.sh
	d, m := sh.DModel, int(sh.ffnMatrices())
	dffn := sh.DFFN / sh.TP
	if sh.Experts <= 0 {
		return n.gemm("FC1", b, d, (m-1)*dffn), n.gemm("FC2", b, dffn, d)
	}
	k := min(sh.TopK, sh.Experts)
	perTok, read := sh.FFNActive(b)
	e := float64(sh.Experts)
	touched := max(1, min(sh.Experts, int(math.Ceil(e*(1-math.Pow(1-float64(k)/e, float64(b)))-1e-9))))
	rows := ceilDiv(b*k, touched)
	up = Op{Name: "FC1", Lane: laneNPUS, Dur: Time(touched) * n.gemmTime(rows, d, (m-1)*dffn)}
	down = Op{Name: "FC2", Lane: laneNPUS, Dur: Time(touched) * n.gemmTime(rows, dffn, d)}
	if sd := sh.SharedDFFN / sh.TP; sd > 0 {
		up.Dur += n.gemmTime(b, d, (m-1)*sd)
		down.Dur += n.gemmTime(b, sd, d)
	}
	p := float64(sh.Precision)
	upShare := float64(m-1) / float64(m)
	up.FLOPs, down.FLOPs = 2*float64(b)*perTok*upShare, 2*float64(b)*perTok*(1-upShare)
	up.Bytes = read*upShare*p + float64(b*(d+(m-1)*dffn))*p
	down.Bytes = read*(1-upShare)*p + float64(b*(dffn+d))*p
	return up, down
}

// vec is an element-wise op on the vector units: ceil(elements·passes / (units·width))
// cycles at one cycle per element-op (the authors' simulator's vector-op latencies).
func (n *neupims) vec(name string, elements, passes int) Op {
	u := n.cfg.NPU
	cycles := ceilDiv(elements*passes, max(1, u.VectorUnits*u.VectorWidth))
	return Op{Name: name, Lane: laneNPUV, Dur: Cycles(float64(cycles), u.ClockGHz)}
}

type emitter struct {
	n     *neupims
	s     *Schedule
	stage int
	sbi   bool // the iteration interleaves two sub-batches (A–F stages)
	// npuBytes is the external-bus traffic of the NPU ops of the current stage so far: in
	// blocked mode the PIM channels serve it through the row buffer they compute with.
	npuBytes float64
}

func (em *emitter) add(op Op, layer, sb int, deps ...int) int {
	op.Layer, op.SubBatch, op.Stage = layer, sb, em.stage
	if op.Lane == laneNPUS {
		em.npuBytes += op.Bytes
	}
	return em.s.Add(op, deps...)
}

// periods lays out count periods of the iteration, period(i) adding the ops of period i:
// a layer, or under sub-batch interleaving a layer's C and D stages (Schedule.Periods).
// shift(d) moves the span indices the next period depends on by d spans.
func (em *emitter) periods(count int, period func(i int), shift func(d int)) {
	em.s.Periods(count, period, func(d int) {
		em.stage = em.s.stage
		shift(d)
	})
}

// nextStage moves to the next barrier stage of the A–F schedule.
func (em *emitter) nextStage() {
	em.stage++
	em.npuBytes = 0
}

// qkv emits LayerNorm and the QKV GEMM of one (sub-)batch; the new token's K and V are
// written to the KV cache as part of the GEMM's traffic.
func (em *emitter) qkv(reqs []*Request, layer, sb int, deps ...int) int {
	n, sh := em.n, em.n.sh
	b := len(reqs)
	ln := em.add(n.vec("LN1", b*sh.DModel, 2), layer, sb, deps...)
	op := n.gemm("QKV", b, sh.DModel, (sh.HeadsDev()+2*sh.KVHeadsDev())*sh.HeadDim)
	op.Bytes += float64(b * 2 * sh.KVEmbedDev() * sh.Precision)
	return em.add(op, layer, sb, ln)
}

// sbLoad is a (sub-)batch's attention work, the same in every layer of an iteration, so
// it is computed once per iteration rather than once per layer.
type sbLoad struct {
	logit, attend []Time // per channel: PIM time of the kernels as they execute (MHAExec)
	chain         []Time // per channel, blocked mode: what each head's chain adds (blockedHead)
	softElems     int    // logits the vector units normalise
	npu           npuAttention
}

func (n *neupims) sbLoad(reqs []*Request) sbLoad {
	sh := n.sh
	var w sbLoad
	pim := n.cfg.PIM
	if pim.Enabled {
		w.logit, w.attend = make([]Time, n.ch), make([]Time, n.ch)
		if !pim.DualRowBuffer {
			w.chain = make([]Time, n.ch)
		}
	}
	clk := n.cfg.Memory.ClockGHz
	for _, r := range reqs {
		L := r.SeqLen()
		w.softElems += sh.HeadsDev() * L
		if !pim.Enabled {
			n.npuAttend(&w.npu, L)
			continue
		}
		l, a := n.attn.exec(L)
		w.logit[r.Loc] += Cycles(float64(l), clk)
		w.attend[r.Loc] += Cycles(float64(a), clk)
		if w.chain != nil {
			w.chain[r.Loc] += Time(sh.HeadsDev()) * n.blockedHead(L)
		}
	}
	return w
}

// mhaOps emits attention for one (sub-)batch and returns the ops the projection waits for.
func (em *emitter) mhaOps(w *sbLoad, layer, sb, after int) []int {
	n := em.n
	if !n.cfg.PIM.Enabled {
		return em.npuMHA(w, layer, sb, after)
	}
	soft := n.vec("softmax", w.softElems, 3)
	out := make([]int, 0, n.ch+1)
	if n.cfg.PIM.DualRowBuffer {
		// Dual row buffers: softmax on the vector units overlaps the GEMVs head by head
		// (Fig. 10) and the logits travel through the MEM row buffer, so each channel runs
		// logit and attend back to back.
		for c := range n.ch {
			if w.logit[c] == 0 {
				continue
			}
			out = append(out, em.add(Op{Name: "MHA", Lane: lanePIM0 + c, Dur: w.logit[c] + w.attend[c]}, layer, sb, after))
		}
		out = append(out, em.add(soft, layer, sb, after))
		return out
	}
	return em.blockedMHA(w, soft, layer, sb, after)
}

// projFFN emits the output projection and the FFN of one (sub-)batch.
func (em *emitter) projFFN(reqs []*Request, layer, sb int, deps ...int) int {
	n, sh := em.n, em.n.sh
	b := len(reqs)
	pj := em.add(n.gemm("Proj", b, sh.HeadsDev()*sh.HeadDim, sh.DModel), layer, sb, deps...)
	ln := em.add(n.vec("LN2", b*sh.DModel, 3), layer, sb, pj)
	up, down := n.ffn(b)
	f1 := em.add(up, layer, sb, ln)
	act := em.add(n.vec("GELU", b*(sh.DFFN/sh.TP), 1), layer, sb, f1)
	return em.add(down, layer, sb, act)
}

func (n *neupims) plan(s *Schedule, decode, prefill []*Request) []StageMark {
	em := &emitter{n: n, s: s}
	N := n.sh.LayersDev()
	if len(prefill) > 0 {
		n.planPrefill(em, prefill)
	}
	if len(decode) == 0 {
		return nil
	}
	sb := n.split(decode)
	w := [2]sbLoad{n.sbLoad(sb[0]), n.sbLoad(sb[1])}
	if sb[1] == nil {
		// Serial schedule (Fig. 11a): QKV → MHA → Proj/FFN, layer after layer.
		prev := -1
		em.periods(N, func(l int) {
			var q int
			if prev >= 0 {
				q = em.qkv(sb[0], l, 0, prev)
			} else {
				q = em.qkv(sb[0], l, 0)
			}
			m := em.mhaOps(&w[0], l, 0, q)
			prev = em.projFFN(sb[0], l, 0, m...)
		}, func(d int) { prev += d })
		return nil
	}
	// Sub-batch interleaving: the A–F stage schedule of the authors' simulator (StageProgram; Fig. 11b),
	// with C and D repeated once per further layer and a barrier at every stage boundary.
	em.sbi = true
	q1 := em.qkv(sb[0], 0, 1)
	em.nextStage()
	q2 := em.qkv(sb[1], 0, 2)
	m1 := em.mhaOps(&w[0], 0, 1, q1)
	var m2 []int
	em.periods(N-1, func(l int) {
		em.nextStage()
		p := em.projFFN(sb[0], l, 1, m1...)
		q1 = em.qkv(sb[0], l+1, 1, p)
		m2 = em.mhaOps(&w[1], l, 2, q2)
		em.nextStage()
		p = em.projFFN(sb[1], l, 2, m2...)
		q2 = em.qkv(sb[1], l+1, 2, p)
		m1 = em.mhaOps(&w[0], l+1, 1, q1)
	}, func(d int) {
		q2 += d
		for i := range m1 {
			m1[i] += d
		}
	})
	em.nextStage()
	em.projFFN(sb[0], N-1, 1, m1...)
	m2 = em.mhaOps(&w[1], N-1, 2, q2)
	em.nextStage()
	em.projFFN(sb[1], N-1, 2, m2...)
	if len(n.stages) != 2*N+2 {
		n.stages = []string{"A", "B"}
		for l := range N - 1 {
			n.stages = append(n.stages, "C"+strconv.Itoa(l+1), "D"+strconv.Itoa(l+1))
		}
		n.stages = append(n.stages, "E", "F")
	}
	marks := make([]StageMark, len(n.stages))
	for i := range marks {
		marks[i] = StageMark{Name: n.stages[i], Start: -1}
	}
	// Each stage starts with its earliest span. The spans come stage by stage, so the
	// earliest of each run of one stage is taken first, then set on its mark.
	st, first := -1, Time(0)
	mark := func() {
		if st >= 0 && st < len(marks) && (marks[st].Start < 0 || first < marks[st].Start) {
			marks[st].Start = first
		}
	}
	for i := range s.Spans {
		if sp := &s.Spans[i]; sp.Stage != st {
			mark()
			st, first = sp.Stage, sp.Start
		} else if sp.Start < first {
			first = sp.Start
		}
	}
	mark()
	return marks
}

// planPrefill runs the prompts (and, for a preempted request, the tokens it had generated)
// of newly admitted requests on a standalone NPU (NeuPIMs devices only run generation,
// §2.6), the same NPU, one op per layer: the GEMMs over all prompt tokens and, per request
// and head, the causal attention as two GEMMs (its L queries through its L keys, then its L
// rows of scores through its values).
func (n *neupims) planPrefill(em *emitter, reqs []*Request) {
	sh := n.sh
	tokens := 0
	var attn Time
	var attnFlops float64
	for _, r := range reqs {
		L := r.SeqLen()
		tokens += L
		attn += Time(sh.HeadsDev()) * (n.gemmTime(L, sh.HeadDim, L) + n.gemmTime(L, L, sh.HeadDim))
		attnFlops += 4 * float64(sh.HeadsDev()*sh.HeadDim) * float64(L) * float64(L)
	}
	qkv := n.gemm("QKV", tokens, sh.DModel, (sh.HeadsDev()+2*sh.KVHeadsDev())*sh.HeadDim)
	pj := n.gemm("Proj", tokens, sh.HeadsDev()*sh.HeadDim, sh.DModel)
	up, down := n.ffn(tokens)
	op := Op{Name: "prefill", Lane: n.prefLn, Dur: qkv.Dur + pj.Dur + up.Dur + down.Dur + attn,
		FLOPs: qkv.FLOPs + pj.FLOPs + up.FLOPs + down.FLOPs + attnFlops, Bytes: qkv.Bytes + pj.Bytes + up.Bytes + down.Bytes}
	prev := -1
	for l := range sh.LayersDev() {
		if prev >= 0 {
			prev = em.add(op, l, 0, prev)
		} else {
			prev = em.add(op, l, 0)
		}
	}
}

func (n *neupims) observe(snap *Snapshot, s *Schedule, running []*Request) {
	m := n.cfg.Memory
	T := float64(snap.IterTime)
	busy := s.Busy()
	var npuFlops, extBytes float64
	for i := range s.Spans {
		if sp := &s.Spans[i]; sp.Lane == laneNPUS {
			npuFlops += sp.FLOPs
			extBytes += sp.Bytes
		}
	}
	sec := snap.IterTime.Seconds()
	u := snap.Metrics.Util
	u["npu"] = npuFlops / (n.npu.PeakFLOPS * sec)
	u["bandwidth"] = min(1, extBytes/(m.Bandwidth()*sec))

	// Bank grid: channels × banks. PIM commands are broadcast to every bank of a channel,
	// so PIM busy is uniform along a row; weight traffic is interleaved over all channels.
	// A headless run (Config.Jump) reads only the metrics and gets no grid.
	views := !n.cfg.Jump
	g := &snap.Banks
	if views {
		g.RowKind, g.ColKind = "channel", "bank"
		g.Rows, g.Cols, g.ColGroup = m.Channels, m.BanksPerChannel, m.BanksPerGroup()
		cells := g.Rows * g.Cols
		g.PIM, g.Mem, g.Owner = make([]float64, cells), make([]float64, cells), make([]int, cells)
		g.RowNotes = make([]string, g.Rows)
		g.RowLevels = []BankLevel{{"channel", "ch", m.Channels}}
		if m.BankGroups > 0 {
			g.ColLevels = []BankLevel{{"bank group", "BG", m.BankGroups}, {"bank", "bank", m.BanksPerGroup()}}
		}
		// Named as the timeline names the lanes, so a unit reads the same in every view.
		g.Units = []BankUnit{systemUnit(n.lane[laneNPUS].Name, busy[laneNPUS], T), systemUnit(n.lane[laneNPUV].Name, busy[laneNPUV], T)}
	}
	memFrac := min(1, extBytes/float64(m.Channels)/(m.ChannelBandwidth()*sec))
	owner := make([]int, m.Channels)
	ownerLoad := make([]int64, m.Channels)
	count := make([]int, m.Channels)
	seqSum := make([]int, m.Channels)
	load := make([]int64, m.Channels)
	for i := range owner {
		owner[i] = -1
	}
	if n.cfg.PIM.Enabled {
		for _, r := range running {
			if r.Loc < 0 || r.Status != Running {
				continue
			}
			l, a := n.mha(r.SeqLen())
			ld := int64(l + a)
			load[r.Loc] += ld
			count[r.Loc]++
			seqSum[r.Loc] += r.SeqLen()
			if ld > ownerLoad[r.Loc] {
				owner[r.Loc], ownerLoad[r.Loc] = r.ID, ld
			}
		}
	}
	var pimBusy float64
	for c := range m.Channels {
		pb := 0.0
		if n.cfg.PIM.Enabled {
			pb = float64(busy[lanePIM0+c]) / T
			pimBusy += float64(busy[lanePIM0+c])
		}
		if !views {
			continue
		}
		for b := range g.Cols {
			i := c*g.Cols + b
			g.PIM[i], g.Mem[i], g.Owner[i] = pb, memFrac, owner[c]
		}
		if n.cfg.PIM.Enabled {
			g.RowNotes[c] = fmt.Sprintf("%d req · Σseq %d · load %dk cyc/layer", count[c], seqSum[c], load[c]/1000)
		}
	}
	if n.cfg.PIM.Enabled {
		u["pim"] = pimBusy / (float64(m.Channels) * T)
		var mx, sum int64
		for _, l := range load {
			mx = max(mx, l)
			sum += l
		}
		if sum > 0 {
			snap.Metrics.LoadImbalance = float64(mx) / (float64(sum) / float64(m.Channels))
		}
	} else {
		g.Reason = "NPU-only: no PIM; attention streams the KV cache over the external bus"
	}

	snap.KV.BlockBytes, snap.KV.Unit, snap.KV.LocKind = n.tile, n.kvUnit, n.kvKind
	perTok := n.sh.KVBytesPerToken()
	n.kv.snapshot(&snap.KV, func(i int) string { return n.kvLabels[i] }, running,
		func(r *Request) float64 { return float64(r.SeqLen()) * perTok })
	if snap.KV.Capacity > 0 {
		snap.Metrics.KVUtil = float64(snap.KV.Used) / float64(snap.KV.Capacity)
	}
}

func (n *neupims) pool() *kvPool { return n.kv }
