package sim

import (
	"math"
	"slices"
)

// This file is the L3 scheduler of §5.2–5.3 (the decode split, the prefill fill-up and
// chunking, the latency predictors of Eq. 5–6) and the baselines' prefill-prioritized
// batching, plus the GPU cost model they plan with.

// l3Chunk is a prefill chunk of one request this iteration: c new tokens after f already
// prefilled, run on replica rep.
type l3Chunk struct {
	r    *Request
	c, f int
	rep  int
}

// l3Rep is one replica's share of a sub-batch.
type l3Rep struct {
	dec      int     // decode tokens (one per request)
	pre      int     // prefill tokens
	done     int     // prefills that finish their prompt (they produce a token)
	pFl, pBy float64 // prefill attention FLOPs and bytes per GPU
	attTok   int64   // Σ sequence length of decodes attended on the GPU
	pimTok   int64   // Σ sequence length of decodes attended in this replica's HBM-PIM
	pimDur   Time    // their HBM-PIM attention time (set by finishDecode)
}

// l3Class is the decode work of the requests whose layer 0 sits on one rankset: at layer
// ℓ they are on rankset (class+ℓ) mod N_rs.
type l3Class struct {
	work int64 // attention work of one head: read steps (bank PIM) or bytes (rank PIM)
	tok  int64 // Σ sequence length
	cnt  int
	pre  int  // prefill tokens (their KV goes to the same ranksets)
	dur  Time // attention time on a rankset (set by finishDecode)
	q, o Time // QKV and output transfer times
}

// l3SB is one sub-batch of an iteration.
type l3SB struct {
	dec     []*Request
	pre     []l3Chunk
	reps    []l3Rep
	cls     []l3Class
	rl      []l3Class // naive mapping: per layer × rankset
	decTok  int64
	preTok  int
	hostTok int64    // Σ sequence length attended by the CPU (CPU offload)
	hostPre int      // prefill tokens whose KV goes to host memory (CPU offload)
	tD      Time     // per-layer decode attention time (max over ranksets or replicas)
	chunked *Request // the prefill cut short this iteration (§5.3 step 4), if any
}

// l3Iter is the plan of one iteration.
type l3Iter struct {
	sb    [2]l3SB
	n     int        // sub-batches in use
	order []*Request // scratch for the split
	keys  []l3Key    // the token-balanced split's decode batch, longest first
	last  []*Request // the batch keys sorted, in its order, and the lengths it had
	lens  []int
	side  []int32 // the token-balanced split: bit j set when the split's decode[j] went to sub-batch 1
}

type l3Key struct{ s, id, i int }

func (it *l3Iter) reset(p *l3) {
	it.n = p.lc.SubBatches
	it.side = it.side[:0]
	if p.single {
		it.n = 1
	}
	for i := range it.sb {
		sb := &it.sb[i]
		sb.dec, sb.pre = sb.dec[:0], sb.pre[:0]
		sb.reps = resize(sb.reps, p.dp)
		sb.cls = resize(sb.cls, p.nrs)
		if !p.lc.CommOverlap && p.lc.hostKV() {
			sb.rl = resize(sb.rl, p.nrs*p.sh.Layers)
		} else {
			sb.rl = sb.rl[:0]
		}
		sb.decTok, sb.preTok, sb.hostTok, sb.hostPre, sb.tD, sb.chunked = 0, 0, 0, 0, 0, nil
	}
}

// resize returns s with n zeroed elements, reusing its storage.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// --- GPU costs: per layer, per replica of tp GPUs; FLOPs and bytes are per GPU ---

type l3Cost struct {
	dur          Time
	flops, bytes float64
}

func (p *l3) roofline(flops, bytes float64, kernels int) l3Cost {
	d := max(p.gpu.ComputeTime(flops), p.gpu.MemoryTime(bytes)) + Time(kernels)*p.gpu.LaunchOverhead
	return l3Cost{d, flops, bytes}
}

// gemm is one GEMM of n tokens through params weights (per GPU) under the roofline.
func (p *l3) gemm(n int, params float64, in, out int) l3Cost {
	pr := float64(p.sh.Precision)
	return p.roofline(2*float64(n)*params, params*pr+float64(n*(in+out))*pr, 1)
}

func (c l3Cost) plus(d l3Cost) l3Cost {
	return l3Cost{c.dur + d.dur, c.flops + d.flops, c.bytes + d.bytes}
}

// allReduce is a ring all-reduce of bytes over the tp GPUs of a replica (Megatron: after
// the projection and after the FFN).
func (p *l3) allReduce(bytes float64) Time {
	tp := p.sh.TP
	if tp <= 1 || p.nvl.Bandwidth <= 0 {
		return 0
	}
	return p.nvl.Latency + FromSeconds(2*float64(tp-1)/float64(tp)*bytes/p.nvl.Bandwidth)
}

// genCost is "Gen": LayerNorm and the QKV GEMM of n tokens.
func (p *l3) genCost(n int) l3Cost {
	if n <= 0 {
		return l3Cost{}
	}
	sh := p.sh
	c := p.gemm(n, sh.QKVParams(), sh.DModel, (sh.HeadsDev()+2*sh.KVHeadsDev())*sh.HeadDim)
	c.dur += p.gpu.LaunchOverhead // LayerNorm
	return c
}

// ffCost is "Proj, FF": the output projection, its all-reduce, LayerNorm, the FFN and its
// all-reduce, for n tokens.
func (p *l3) ffCost(n int) l3Cost {
	if n <= 0 {
		return l3Cost{}
	}
	sh := p.sh
	dffn := sh.DFFN / sh.TP
	perTok, read := sh.FFNActive(n)
	m := sh.ffnMatrices()
	up, upRead := perTok*(m-1)/m, read*(m-1)/m
	c := p.gemm(n, sh.ProjParams(), sh.HeadsDev()*sh.HeadDim, sh.DModel)
	c = c.plus(p.roofline(2*float64(n)*up, upRead*float64(sh.Precision)+float64(n*(sh.DModel+dffn*int(m-1)))*float64(sh.Precision), 2))
	c = c.plus(p.roofline(2*float64(n)*(perTok-up), (read-upRead)*float64(sh.Precision)+float64(n*(dffn+sh.DModel))*float64(sh.Precision), 1))
	c.dur += p.gpu.LaunchOverhead // LayerNorm
	c.dur += 2 * p.allReduce(float64(n*sh.DModel*sh.Precision))
	return c
}

// pmhaWork is the causal attention of a chunk of c tokens after f prefilled ones, per GPU:
// FLOPs 4·(heads/tp)·D_h·(c·f + c(c+1)/2) and the K/V of f + c tokens read.
func (p *l3) pmhaWork(c, f int) (flops, bytes float64) {
	sh := p.sh
	fc, ff := float64(c), float64(f)
	flops = 4 * float64(sh.HeadsDev()*sh.HeadDim) * (fc*ff + fc*(fc+1)/2)
	bytes = (ff + fc) * 2 * float64(sh.KVEmbedDev()*sh.Precision)
	return
}

// attnCost is decode attention on the GPU over Σ sequence lengths tok (KV in HBM).
func (p *l3) attnCost(tok int64) l3Cost {
	if tok <= 0 {
		return l3Cost{}
	}
	sh := p.sh
	return p.roofline(4*float64(sh.HeadsDev()*sh.HeadDim)*float64(tok), float64(tok)*2*float64(sh.KVEmbedDev()*sh.Precision), 1)
}

// lmCost is the LM head over the tokens that get sampled.
func (p *l3) lmCost(n int) l3Cost {
	if n <= 0 {
		return l3Cost{}
	}
	sh := p.sh
	return p.gemm(n, float64(sh.Vocab)*float64(sh.DModel)/float64(sh.TP), sh.DModel, sh.Vocab/sh.TP)
}

// repSlot is one replica's GPU time in one layer of a sub-batch: Proj+FF, Gen, prefill
// attention and (GPU-resident KV) decode attention.
func (p *l3) repSlot(r *l3Rep) Time {
	n := r.dec + r.pre
	if n == 0 {
		return 0
	}
	t := p.genCost(n).dur + p.ffCost(n).dur + p.attnCost(r.attTok).dur
	if r.pre > 0 {
		t += p.roofline(r.pFl, r.pBy, 1).dur
	}
	return t
}

// gpuSlot is a sub-batch's GPU time per layer: its slowest replica.
func (p *l3) gpuSlot(sb *l3SB) Time {
	var t Time
	for g := range sb.reps {
		t = max(t, p.repSlot(&sb.reps[g]))
	}
	return t
}

// --- in-memory attention and transfers ---

// work is one head's decode attention work at sequence length s: read steps on the bank
// PUs, or bytes the rank PU streams.
func (p *l3) work(s int) int64 {
	if p.lc.Attention == L3AttnRankPIM {
		return int64(s) * 2 * int64(p.sh.HeadDim*p.sh.Precision)
	}
	return p.layout.steps(s)
}

// attTime is a rankset's time for work (one head's worth) on its busiest channel.
func (p *l3) attTime(w int64) Time {
	if w <= 0 {
		return 0
	}
	if p.lc.Attention == L3AttnRankPIM {
		return FromSeconds(float64(p.maxNh) * float64(w) / p.rankBW)
	}
	return p.layout.time(int64(p.maxNh) * w)
}

func (p *l3) hbmPIMTime(tok int64) Time {
	bw := p.lc.PIM.HBMPIMTBps * 1e12 / float64(p.lc.GPUs)
	return FromSeconds(float64(tok) * 2 * float64(p.sh.KVEmbedDev()*p.sh.Precision) / bw)
}

func (p *l3) cpuAttnTime(tok float64) Time {
	return FromSeconds(tok * 2 * float64(p.sh.KVHeads*p.sh.HeadDim*p.sh.Precision) / (p.lc.Host.CPUBandwidthGBps * 1e9))
}

func (p *l3) qkvBytes(n int) float64 {
	sh := p.sh
	return float64(n * (sh.Heads + 2*sh.KVHeads) * sh.HeadDim * sh.Precision)
}

func (p *l3) outBytes(n int) float64 { return float64(n * p.sh.Heads * p.sh.HeadDim * p.sh.Precision) }

func (p *l3) pkvBytes(tok int) float64 {
	return float64(tok * 2 * p.sh.KVHeads * p.sh.HeadDim * p.sh.Precision)
}

// toHost is a GPU→host transfer. The in-flight re-layout of the rank PU costs nothing
// (§4.1); charged instead, the CPU transposition adds twice the transfer (§4.1: "more than
// 2× base transfer time").
func (p *l3) toHost(bytes float64) Time {
	if bytes <= 0 {
		return 0
	}
	t := p.h2d.Time(bytes)
	if p.lc.ChargeRelayout {
		t += 2 * FromSeconds(bytes/p.h2d.Bandwidth)
	}
	return t
}

// transfers is how many separate transfers a flow to the DIMMs takes: one per receiving
// rankset with rankset-exclusive communication (§5.1), one for a monolithic DIMM pool.
func (p *l3) transfers() int {
	if p.lc.CommOverlap && p.lc.hostKV() {
		return p.nrs
	}
	return 1
}

// pimSlot is the predicted PIM side of sub-batch j in one layer (Eq. 2/4): decode
// attention + decode QKV/output transfers + the prefill KV of the other sub-batch
// (overlapTok tokens) that the ranksets receive meanwhile.
func (p *l3) pimSlot(j *l3SB, overlapTok int) Time {
	t := j.tD
	if n := len(j.dec); n > 0 && p.h2d.Bandwidth > 0 {
		k := min(p.transfers(), n)
		t += Time(k)*(p.h2d.Latency+p.d2h.Latency) + p.toHost(p.qkvBytes(n)) - p.h2d.Latency + FromSeconds(p.outBytes(n)/p.d2h.Bandwidth)
	}
	if overlapTok > 0 && p.h2d.Bandwidth > 0 {
		t += Time(min(p.transfers(), overlapTok)-1)*p.h2d.Latency + p.toHost(p.pkvBytes(overlapTok))
	}
	return t
}

// --- building an iteration ---

// addDecode puts r, of state st, in sub-batch i and accumulates its work.
func (p *l3) addDecode(sb *l3SB, r *Request, st *l3Req, rep int) {
	s := r.SeqLen()
	sb.dec = append(sb.dec, r)
	sb.decTok += int64(s)
	switch p.lc.Attention {
	case L3AttnBankPIM, L3AttnRankPIM:
		st.work = p.work(s)
		if sb.rl != nil && len(sb.rl) > 0 {
			for l := range p.sh.Layers {
				c := &sb.rl[l*p.nrs+p.naiveRankset(r, l)]
				c.work += st.work
				c.tok += int64(s)
				c.cnt++
			}
		} else {
			c := &sb.cls[st.off]
			c.work += st.work
			c.tok += int64(s)
			c.cnt++
		}
		sb.reps[rep].dec++
	case L3AttnHBMPIM:
		sb.reps[rep].dec++
		sb.reps[rep].pimTok += int64(s)
	case L3AttnGPU:
		sb.reps[rep].dec++
		sb.reps[rep].attTok += int64(s)
	case L3AttnCPU:
		sb.reps[rep].dec++
		if r.Loc < p.dp {
			sb.reps[rep].attTok += int64(s)
		} else {
			sb.hostTok += int64(s)
		}
	}
}

// naiveRankset is the naive baseline's layer placement: each layer of each request on a
// pseudo-random rankset (no layer-wise round-robin).
func (p *l3) naiveRankset(r *Request, l int) int {
	x := uint64(r.ID)*0x9e3779b97f4a7c15 + uint64(l+1)*0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return int(x % uint64(p.nrs))
}

// finishDecode computes a sub-batch's per-layer attention time once its decodes are in.
func (p *l3) finishDecode(sb *l3SB) {
	switch p.lc.Attention {
	case L3AttnBankPIM, L3AttnRankPIM:
		if len(sb.rl) > 0 {
			var sum Time
			for l := range p.sh.Layers {
				var m Time
				for r := range p.nrs {
					c := &sb.rl[l*p.nrs+r]
					c.dur = p.attTime(c.work)
					m = max(m, c.dur)
				}
				sum += m
			}
			sb.tD = sum / Time(p.sh.Layers)
		} else {
			for k := range sb.cls {
				c := &sb.cls[k]
				c.dur = p.attTime(c.work)
				c.q, c.o = p.toHost(p.qkvBytes(c.cnt)), p.d2h.Time(p.outBytes(c.cnt))
				sb.tD = max(sb.tD, c.dur)
			}
		}
	case L3AttnHBMPIM:
		for g := range sb.reps {
			sb.reps[g].pimDur = p.hbmPIMTime(sb.reps[g].pimTok)
			sb.tD = max(sb.tD, sb.reps[g].pimDur)
		}
	case L3AttnCPU:
		sb.tD = p.cpuAttnTime(float64(sb.hostTok))
	}
}

// split divides the decode requests into the sub-batches. With two sub-batches the total
// tokens are balanced (§5.3 step 2: longest first, each to the lighter sub-batch, which
// splits 2k, 3k, 4k, 5k into (5k, 2k) and (4k, 3k)); CPU offload puts GPU-resident
// requests in sub-batch 0 and host-resident ones in sub-batch 1.
func (p *l3) split(decode []*Request) {
	it := &p.it
	hostModes := p.lc.hostKV()
	switch {
	case p.lc.Attention == L3AttnCPU:
		// NEO: GPU-resident requests (attention on the GPU) in sub-batch 0, host-resident
		// ones (attention on the CPU) in sub-batch 1, pipelined; when nothing is on the CPU,
		// or running the two one after the other is faster (a small CPU batch costs the
		// GPU a second pass over the weights), one batch.
		host := 0
		for _, r := range decode {
			i, rep := 0, r.Loc
			if r.Loc >= p.dp {
				i, rep = 1, host%p.dp
				host++
			}
			p.addDecode(&it.sb[i], r, p.state(r), rep)
		}
		p.finishDecode(&it.sb[0])
		p.finishDecode(&it.sb[1])
		piped := max(p.gpuSlot(&it.sb[0]), p.pimSlot(&it.sb[1], 0)) + p.gpuSlot(&it.sb[1])
		var one l3SB
		one.reps = make([]l3Rep, p.dp)
		for i := range 2 {
			for g, rp := range it.sb[i].reps {
				one.reps[g].dec += rp.dec
				one.reps[g].attTok += rp.attTok
			}
			one.hostTok += it.sb[i].hostTok
			one.dec = append(one.dec, it.sb[i].dec...)
		}
		p.finishDecode(&one)
		if host == 0 || p.gpuSlot(&one)+p.pimSlot(&one, 0) <= piped {
			it.reset(p)
			it.n = 1
			host = 0
			for _, r := range decode {
				rep := r.Loc
				if r.Loc >= p.dp {
					rep = host % p.dp
					host++
				}
				p.addDecode(&it.sb[0], r, p.state(r), rep)
			}
		}
	case it.n == 1:
		for k, r := range decode {
			rep := k % p.dp
			if !hostModes {
				rep = r.Loc
			}
			p.addDecode(&it.sb[0], r, p.state(r), rep)
		}
	default:
		it.sortByLength(decode)
		it.order = it.order[:0]
		for _, k := range it.keys {
			it.order = append(it.order, decode[k.i])
		}
		// Each request goes to the sub-batch with fewer tokens among the requests it shares
		// memory with (its rankset class in the DIMMs, its replica's HBM otherwise), ties to
		// the one with fewer tokens overall: the totals stay as even as §5.3 asks, and each
		// rankset gets an even share of both sub-batches' attention.
		groups := p.nrs
		if !hostModes {
			groups = p.dp
		}
		var load [2][]int64
		var total [2]int64
		for i := range load {
			load[i] = make([]int64, groups)
		}
		var cnt [2]int
		it.side = resize(it.side, (len(decode)+31)/32)
		for k, r := range it.order {
			st := p.state(r)
			g := r.Loc
			if hostModes {
				g = st.off
			}
			i := 0
			if load[1][g] < load[0][g] || load[1][g] == load[0][g] && total[1] < total[0] {
				i = 1
				j := it.keys[k].i
				it.side[j/32] |= 1 << (j % 32)
			}
			load[i][g] += int64(r.SeqLen())
			total[i] += int64(r.SeqLen())
			rep := r.Loc
			if hostModes {
				rep = cnt[i] % p.dp
			}
			cnt[i]++
			p.addDecode(&it.sb[i], r, st, rep)
		}
	}
	for i := range it.n {
		p.finishDecode(&it.sb[i])
	}
}

// sortByLength sorts decode into keys (a pointer-free copy, quick to sort) by length,
// longest first, ties by ID. The batch
// last sorted, each request as many tokens longer (a probe of it, its next iteration),
// keeps its order, which only the differences of the lengths decide.
func (it *l3Iter) sortByLength(decode []*Request) {
	if len(decode) == len(it.last) && len(decode) > 0 {
		d := decode[0].SeqLen() - it.lens[0]
		same := true
		for k, r := range decode {
			if r != it.last[k] || r.SeqLen()-it.lens[k] != d {
				same = false
				break
			}
		}
		if same {
			for k := range it.keys {
				it.keys[k].s += d
				it.lens[k] += d
			}
			return
		}
	}
	it.keys, it.last, it.lens = it.keys[:0], append(it.last[:0], decode...), it.lens[:0]
	for k, r := range decode {
		it.keys = append(it.keys, l3Key{r.SeqLen(), r.ID, k})
		it.lens = append(it.lens, r.SeqLen())
	}
	slices.SortFunc(it.keys, func(a, b l3Key) int {
		if a.s != b.s {
			return b.s - a.s
		}
		return a.id - b.id
	})
}

// leastRep is the replica of sub-batch sb with the fewest tokens.
func leastRep(sb *l3SB) int {
	best := 0
	for g := range sb.reps {
		if sb.reps[g].dec+sb.reps[g].pre < sb.reps[best].dec+sb.reps[best].pre {
			best = g
		}
	}
	return best
}

// setChunk adds (sign +1) or removes (−1) chunk k's contribution to its sub-batch.
func (p *l3) setChunk(sb *l3SB, k int, sign int) {
	ch := &sb.pre[k]
	rp := &sb.reps[ch.rep]
	fl, by := p.pmhaWork(ch.c, ch.f)
	s := float64(sign)
	rp.pre += sign * ch.c
	rp.pFl += s * fl
	rp.pBy += s * by
	sb.preTok += sign * ch.c
	if ch.f+ch.c >= ch.r.SeqLen() {
		rp.done += sign
	}
	if p.lc.hostKV() {
		sb.cls[p.state(ch.r).off].pre += sign * ch.c
	}
	if p.lc.Attention == L3AttnCPU && ch.r.Loc >= p.dp {
		sb.hostPre += sign * ch.c
	}
}

// addPrefill appends r's remaining prompt to sub-batch sb as one chunk.
func (p *l3) addPrefill(sb *l3SB, r *Request, rep int) {
	st := p.state(r)
	if rep < 0 {
		rep = leastRep(sb)
	}
	st.rep = rep
	sb.pre = append(sb.pre, l3Chunk{r: r, c: r.SeqLen() - st.done, f: st.done, rep: rep})
	p.setChunk(sb, len(sb.pre)-1, +1)
}

// predGPU and predPIM are the scheduler's latency predictors: the cost model itself
// (oracle) or Eq. 5–6's linear form fitted to what the iterations took.
func (p *l3) predGPU(sb *l3SB) Time {
	if p.pred.ready() {
		return p.pred.gpu(sb)
	}
	if p.it.n == 1 {
		// single batch (Fig. 3-b): prefill attention runs beside the decode attention
		var t Time
		for g := range sb.reps {
			if sb.reps[g].pre > 0 {
				t = max(t, p.roofline(sb.reps[g].pFl, sb.reps[g].pBy, 1).dur)
			}
		}
		return t
	}
	return p.gpuSlot(sb)
}

func (p *l3) predPIM(sb *l3SB, overlapTok int) Time {
	if p.pred.ready() {
		return p.pred.pim(sb, overlapTok)
	}
	return p.pimSlot(sb, overlapTok)
}

// build plans an iteration. With the L3 scheduler it admits prefill requests from cands
// (marking placed) as §5.3 prescribes:
//  1. the decode requests are those in host memory;
//  2. they are split into two token-balanced sub-batches;
//  3. prefill requests (the chunked one first, from the head of the queue) are added to
//     sub-batch 1 until T_GPU_1 > T_PIM_0, then to sub-batch 0 until T_GPU_0 > T_PIM_1;
//  4. the last prefill of each sub-batch is chunked, in multiples of 16 tokens, so that
//     T_GPU comes closest to the other sub-batch's T_PIM; the chunked request stays at the
//     head of the queue for the next iteration.
func (p *l3) build(decode, carried, cands []*Request, placed []bool) {
	it := &p.it
	it.reset(p)
	p.pred.refit()
	p.split(decode)
	pairs := [][2]int{{1, 0}, {0, 1}}
	if it.n == 1 {
		pairs = [][2]int{{0, 0}}
	}
	q, ci := 0, 0 // next carried request, next candidate
	blocked := false
	next := func() *Request {
		if q < len(carried) {
			return carried[q]
		}
		if ci < len(cands) && !blocked {
			return cands[ci]
		}
		return nil
	}
	for _, pr := range pairs {
		i, j := pr[0], pr[1]
		sbi, sbj := &it.sb[i], &it.sb[j]
		added := false
		for {
			// "add prefilling requests until T_GPU > T_PIM": the test follows each addition,
			// so every sub-batch takes at least the head of the queue, sized by step 4.
			r := next()
			if r == nil || added && p.predGPU(sbi) > p.predPIM(sbj, sbi.preTok) {
				break
			}
			if q < len(carried) {
				q++
			} else {
				if !p.hostAdmits(r) {
					blocked = true // first come, first served: the head waits for room
					p.refused = true
					break
				}
				p.kv.reserve(r, 0)
				p.kv.reserveFor(r, r.nextLen())
				placed[ci] = true
				ci++
			}
			p.addPrefill(sbi, r, -1)
			added = true
		}
		if added {
			p.chunkLast(sbi, sbj)
		}
	}
	p.built = true
}

// chunkLast picks the size of sub-batch sbi's last prefill: a multiple of the chunk
// multiple (or the whole remainder) that brings T_GPU(sbi) closest to T_PIM(sbj), the
// larger on a tie.
func (p *l3) chunkLast(sbi, sbj *l3SB) {
	k := len(sbi.pre) - 1
	ch := &sbi.pre[k]
	rem := ch.c
	m := p.lc.ChunkMultiple
	if rem <= m {
		return
	}
	eval := func(c int) Time {
		p.setChunk(sbi, k, -1)
		ch.c = c
		p.setChunk(sbi, k, +1)
		d := p.predGPU(sbi) - p.predPIM(sbj, sbi.preTok)
		if d < 0 {
			d = -d
		}
		return d
	}
	// T_GPU − T_PIM is convex in c (rooflines and causal attention are convex, the
	// transfers linear), so once the GPU side is ahead and the gap grows it only grows.
	best, bestD := rem, Time(math.MaxInt64)
	prev := Time(math.MaxInt64)
	for c := m; c < rem; c += m {
		d := eval(c)
		if d <= bestD {
			best, bestD = c, d
		}
		if d > prev && p.predGPU(sbi) > p.predPIM(sbj, sbi.preTok) {
			break
		}
		prev = d
	}
	if eval(rem) <= bestD {
		best = rem
	}
	eval(best)
	if best < rem {
		sbi.chunked = ch.r
	}
}

// buildFixed plans an iteration whose admissions are already made: every prefill runs
// its whole remaining prompt (prefill-prioritized baselines, or the L3 scheduler in an
// iteration that admitted nothing).
func (p *l3) buildFixed(decode, prefill []*Request) {
	it := &p.it
	if p.lc.Scheduler == L3SchedAdaptive {
		p.build(decode, prefill, nil, nil)
		return
	}
	it.reset(p)
	p.split(decode)
	for _, r := range prefill {
		switch {
		case p.lc.Attention == L3AttnCPU:
			i := 0
			rep := r.Loc
			if r.Loc >= p.dp {
				i, rep = min(1, it.n-1), -1
			}
			p.addPrefill(&it.sb[i], r, rep)
		case it.n == 1:
			rep := -1
			if !p.lc.hostKV() {
				rep = r.Loc
			}
			p.addPrefill(&it.sb[0], r, rep)
		default:
			rep := -1
			if !p.lc.hostKV() {
				rep = r.Loc
			}
			// the sub-batch with fewer GPU tokens on that replica takes it
			i := 0
			g := rep
			if g < 0 {
				g = min(leastRep(&it.sb[0]), leastRep(&it.sb[1]))
			}
			a, b := &it.sb[0].reps[g], &it.sb[1].reps[g]
			if b.dec+b.pre < a.dec+a.pre {
				i = 1
			}
			if rep < 0 {
				rep = leastRep(&it.sb[i])
			}
			p.addPrefill(&it.sb[i], r, rep)
		}
	}
	p.built = true
}

// --- the paper's predictor form (Eq. 5–6), fitted online ---

// l3Predictor fits T_PIM = Linear(Σf_d, len(f_d), Σc_p_other) (Eq. 5) and, standing in for
// the random-forest regressors of Eq. 6, T_GPU = Linear(Σc_p, len(f_d), prefill attention
// work) by least squares over the most recent iterations. Until it has seen enough
// iterations the scheduler uses the cost model (the profiling phase).
type l3Predictor struct {
	on     bool
	gx, px [][4]float64
	gy, py []float64
	gw, pw [4]float64
	fitted bool
}

const (
	l3PredWindow = 128
	l3PredMin    = 16
)

func (pr *l3Predictor) init(on bool) { pr.on = on }

func (pr *l3Predictor) ready() bool { return pr.on && pr.fitted }

func gpuFeatures(sb *l3SB) [4]float64 {
	var attn float64
	for _, c := range sb.pre {
		attn += float64(c.c) * (float64(c.f) + float64(c.c+1)/2)
	}
	return [4]float64{1, float64(sb.preTok) / 1e3, float64(len(sb.dec)) / 1e3, attn / 1e9}
}

func pimFeatures(sb *l3SB, overlap int) [4]float64 {
	return [4]float64{1, float64(sb.decTok) / 1e6, float64(len(sb.dec)) / 1e3, float64(overlap) / 1e3}
}

func dot(w, x [4]float64) Time {
	v := 0.0
	for i := range w {
		v += w[i] * x[i]
	}
	return FromSeconds(max(0, v) * 1e-6)
}

func (pr *l3Predictor) gpu(sb *l3SB) Time         { return dot(pr.gw, gpuFeatures(sb)) }
func (pr *l3Predictor) pim(sb *l3SB, ov int) Time { return dot(pr.pw, pimFeatures(sb, ov)) }

// observe records one sub-batch's measured per-layer GPU and PIM times (µs).
func (pr *l3Predictor) observe(sb *l3SB, other *l3SB, gpu, pim Time) {
	if !pr.on {
		return
	}
	push := func(xs *[][4]float64, ys *[]float64, x [4]float64, y float64) {
		if len(*xs) >= l3PredWindow {
			copy(*xs, (*xs)[1:])
			copy(*ys, (*ys)[1:])
			*xs, *ys = (*xs)[:len(*xs)-1], (*ys)[:len(*ys)-1]
		}
		*xs = append(*xs, x)
		*ys = append(*ys, y)
	}
	if len(sb.dec)+len(sb.pre) > 0 {
		push(&pr.gx, &pr.gy, gpuFeatures(sb), gpu.Microseconds())
	}
	if len(sb.dec) > 0 || other.preTok > 0 {
		push(&pr.px, &pr.py, pimFeatures(sb, other.preTok), pim.Microseconds())
	}
}

func (pr *l3Predictor) refit() {
	if !pr.on || len(pr.gy) < l3PredMin || len(pr.py) < l3PredMin {
		return
	}
	pr.gw = leastSquares(pr.gx, pr.gy)
	pr.pw = leastSquares(pr.px, pr.py)
	pr.fitted = true
}

// leastSquares solves the ridge-regularised normal equations for 4 features.
func leastSquares(xs [][4]float64, ys []float64) [4]float64 {
	var a [4][5]float64
	for k, x := range xs {
		for i := range 4 {
			for j := range 4 {
				a[i][j] += x[i] * x[j]
			}
			a[i][4] += x[i] * ys[k]
		}
	}
	for i := range 4 {
		a[i][i] += 1e-6 * (1 + a[i][i])
	}
	for c := range 4 {
		piv := c
		for r := c + 1; r < 4; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		a[c], a[piv] = a[piv], a[c]
		if a[c][c] == 0 {
			continue
		}
		for r := range 4 {
			if r == c {
				continue
			}
			f := a[r][c] / a[c][c]
			for k := c; k < 5; k++ {
				a[r][k] -= f * a[c][k]
			}
		}
	}
	var w [4]float64
	for i := range 4 {
		if a[i][i] != 0 {
			w[i] = a[i][4] / a[i][i]
		}
	}
	return w
}
