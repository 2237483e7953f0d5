package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// This file emits an L3-family iteration onto the schedule's lanes and fills the views.
//
// Two sub-batches (Fig. 7): per layer ℓ the GPU runs sub-batch 0's Proj+FF(ℓ−1), Gen(ℓ) and
// prefill attention(ℓ), then sub-batch 1's; each sub-batch's decode Q/K/V go to the host
// after its Gen, its decode attention runs in the DIMMs while the GPU works on the other
// sub-batch, and its attention output comes back before its next Proj+FF. With rankset-
// exclusive communication (§5.1) every transfer goes to one rankset at a time, in the order
// the ranksets fall idle, and a rankset cannot compute while it receives; the prefill KV
// is sent asynchronously while the other sub-batch computes. One sub-batch gives Fig. 3-b:
// Gen → [prefill attention on the GPU ∥ decode attention in memory] → Proj+FF.

// l3RepOps are one replica's GPU ops of a sub-batch, the same at every layer but for the
// layer, which each layer writes into them as it lays them out.
type l3RepOps struct{ ff, gen, pmha, att, lm Op }

type l3Pending struct {
	layer int
	gens  []int
	ok    bool
}

type l3Emit struct {
	p       *l3
	s       *Schedule
	cost    [2][]l3RepOps
	gen     [2][]int // per sub-batch and replica: this layer's Gen op (−1: none)
	outs    [2][]int // what the next Proj+FF of the sub-batch waits for
	outRep  [2][]int // HBM-PIM: per replica
	syncP   [2]int   // synchronous prefill-KV transfer the next Proj+FF waits for
	pend    [2]l3Pending
	rsLast  []int // last compute op on each rankset
	rsBlock []int // last transfer into each rankset
	order   []int
	avail   []Time // rankOrder's scratch: when each rankset of order falls idle
	deps    []int
	pname   [2]string
	clsOps  [2][]l3ClassOps // per sub-batch and rankset class (rankset-exclusive transfers)
	marks   []l3Mark        // layers' scratch: the state before each period
}

// l3ClassOps are one rankset class's decode ops of a sub-batch, the same at every layer
// but for the layer and, for the attention, the rankset it sits on, which each layer
// writes into them as it lays them out.
type l3ClassOps struct{ q, m, o Op }

func (e *l3Emit) sbLabel(i int) int {
	if e.p.it.n == 1 {
		return 0
	}
	return i + 1
}

func (e *l3Emit) end(i int) Time {
	if i < 0 {
		return 0
	}
	return e.s.Spans[i].End()
}

// rankOrder lists the ranksets in the order they fall idle (receive first what can be
// received first), ties in rankset order. Each rankset's idle time is read once, not at
// every comparison: the order is asked twice a layer and sub-batch.
func (e *l3Emit) rankOrder() []int {
	e.order, e.avail = e.order[:0], e.avail[:0]
	for r := range e.p.nrs {
		e.order = append(e.order, r)
		e.avail = append(e.avail, max(e.end(e.rsLast[r]), e.end(e.rsBlock[r])))
	}
	for a := 1; a < len(e.order); a++ {
		for b := a; b > 0 && e.avail[b] < e.avail[b-1]; b-- {
			e.order[b], e.order[b-1] = e.order[b-1], e.order[b]
			e.avail[b], e.avail[b-1] = e.avail[b-1], e.avail[b]
		}
	}
	return e.order
}

func (e *l3Emit) add(op *Op, deps ...int) int { return e.s.add(op, deps) }

// appendSpans appends to d the indices that name a span (−1 names none).
func appendSpans(d []int, idx ...int) []int {
	for _, x := range idx {
		if x >= 0 {
			d = append(d, x)
		}
	}
	return d
}

// costOp is an op of cost c at layer 0.
func costOp(name string, lane int, c l3Cost, sb int) Op {
	return Op{Name: name, Lane: lane, Dur: c.dur, FLOPs: c.flops, Bytes: c.bytes, SubBatch: sb}
}

func (p *l3) plan(s *Schedule, decode, prefill []*Request) []StageMark {
	laid := false
	p.choice = p.choice[:0]
	if !p.built {
		p.buildFixed(decode, prefill)
		if p.lc.SplitIfShorter && p.it.n == 2 {
			p.splitIfItPays(s, decode, prefill)
			laid = true
		}
	}
	p.built = false
	if !laid {
		p.emit(s)
	}
	it := &p.it
	for i := range it.n {
		for _, ch := range it.sb[i].pre {
			p.state(ch.r).done = ch.f + ch.c
		}
	}
	if p.pred.on {
		for i := range it.n {
			o := &it.sb[1-i]
			if it.n == 1 {
				o = &it.sb[0]
			}
			p.pred.observe(&it.sb[i], o, p.gpuSlot(&it.sb[i]), p.pimSlot(&it.sb[i], o.preTok))
		}
	}
	return nil
}

// splitIfItPays keeps the HBM-PIM baseline's two decode sub-batches only when they make
// the iteration shorter than one batch (L3Config.SplitIfShorter, off by default: §6.1
// runs the baseline with sub-batches, and §6.2 notes that at small batches this leaves it
// below GPU-only). A NeuPIMs-style system may split only where it pays (the NeuPIMs
// simulator interleaves only from batch 256): at a few requests a replica the FC layers
// are bound by reading the weights, and a second sub-batch reads them twice. Both plans are laid out on scratch schedules and the shorter one is kept:
// its layout is the iteration's, so it trades places with s. The two sub-batches, planned
// when it is called, are laid out only when their GPU work alone does not already take
// longer than the single batch.
//
// A stretch's probes check the kept plan's shape, so its length is affine in the
// iterations between them; the plan not kept is only bounded, and choice records what
// keeps the bound on the same side throughout (decided):
//   - one batch, as the two would keep the GPU busy at least as long: gpuBusy counts the
//     split's requests per sub-batch and replica, fixed by the split's choices (side), so
//     the same choices make it a constant;
//   - one batch, as the two laid out take as long: the two's longest chain of spans
//     (chain), the same at every probe, is affine, a lower bound of their length and equal
//     to it at the probes, so it stays at or above the one batch's line in between;
//   - two sub-batches: the one batch's longest chain likewise stays above the two's line
//     and above gpuBusy in between.
func (p *l3) splitIfItPays(s *Schedule, decode, prefill []*Request) {
	busy := p.gpuBusy()
	p.choice = append(append(p.choice[:0], 0), p.it.side...)
	p.single = true
	p.buildFixed(decode, prefill)
	one := p.trial(1)
	p.single = false
	if one > busy {
		p.buildFixed(decode, prefill)
		if p.trial(0) < one {
			p.choice = chain(append(p.choice[:0], 2), p.scratch[1])
			*s, *p.scratch[0] = *p.scratch[0], *s
			return
		}
		p.choice[0] = 1
		p.choice = chain(p.choice, p.scratch[0])
		p.single = true
		p.buildFixed(decode, prefill)
		p.single = false
	}
	*s, *p.scratch[1] = *p.scratch[1], *s
}

// chain appends the spans of s's longest chain, from the span that ends last back through
// what set each one's start (Span.By): each starts as the one before it ends, so the
// chain's length is the sum of their durations, and wherever the same ops are laid out
// the same chain is a lower bound of the layout's length.
func chain(sig []int32, s *Schedule) []int32 {
	for i := s.critical; i >= 0; i = s.Spans[i].By {
		sig = append(sig, int32(i))
	}
	return sig
}

// gpuBusy is a lower bound of the planned iteration's length: each replica's GPU runs
// every sub-batch's Gen and Proj+FF of every layer and its LM head, one at a time.
func (p *l3) gpuBusy() Time {
	var t Time
	for g := range p.dp {
		var busy Time
		for i := range p.it.n {
			rp := &p.it.sb[i].reps[g]
			if n := rp.dec + rp.pre; n > 0 {
				busy += Time(p.sh.Layers)*(p.genCost(n).dur+p.ffCost(n).dur) + p.lmCost(rp.dec+rp.done).dur
			}
		}
		t = max(t, busy)
	}
	return t
}

// trial lays the planned iteration out on scratch schedule i and returns its length. The
// layout is left open (not finished), as the engine leaves the iteration's schedule.
func (p *l3) trial(i int) Time {
	if p.scratch[i] == nil {
		p.scratch[i] = NewSchedule(p.lane, 0, 0)
	} else {
		p.scratch[i].Reset(p.lane)
	}
	p.emit(p.scratch[i])
	return p.scratch[i].Makespan()
}

// emit lays the planned iteration's operations out on s.
func (p *l3) emit(s *Schedule) {
	e := p.emitter(s)
	e.layers(p.sh.Layers, p.layerPeriod(), l3Cycle)
	e.close()
}

// emitter readies p's emitter, reused from one layout to the next with its storage, to
// lay the planned iteration out on s.
func (p *l3) emitter(s *Schedule) *l3Emit {
	it := &p.it
	e := &p.em
	e.p, e.s = p, s
	e.rsLast, e.rsBlock = resize(e.rsLast, p.nrs), resize(e.rsBlock, p.nrs)
	for r := range p.nrs {
		e.rsLast[r], e.rsBlock[r] = -1, -1
	}
	clear(p.rsBusy)
	clear(p.rsRecv)
	clear(p.rsWork)
	for i := range it.n {
		sb := &it.sb[i]
		e.cost[i] = resize(e.cost[i], p.dp)
		e.gen[i] = resize(e.gen[i], p.dp)
		e.outRep[i] = resize(e.outRep[i], p.dp)
		e.outs[i] = e.outs[i][:0]
		e.pend[i] = l3Pending{gens: e.pend[i].gens[:0]}
		e.syncP[i] = -1
		e.pname[i] = "pMHA"
		for _, ch := range sb.pre {
			if ch.r == sb.chunked {
				e.pname[i] = "pMHA · r" + strconv.Itoa(ch.r.ID) + " chunk " + strconv.Itoa(ch.c)
			}
		}
		lbl := e.sbLabel(i)
		for g := range p.dp {
			rp, lane := &sb.reps[g], p.laneGPU+g
			n := rp.dec + rp.pre
			c := &e.cost[i][g]
			c.gen, c.ff = costOp("Gen", lane, p.genCost(n), lbl), costOp("Proj+FF", lane, p.ffCost(n), lbl)
			if rp.pre > 0 {
				c.pmha = costOp(e.pname[i], lane, p.roofline(rp.pFl, rp.pBy, 1), lbl)
			}
			c.att = costOp("MHA", lane, p.attnCost(rp.attTok), lbl)
			c.lm = costOp("LM head", lane, p.lmCost(rp.dec+rp.done), lbl)
			c.lm.Layer = p.sh.Layers - 1
			e.gen[i][g], e.outRep[i][g] = -1, -1
		}
		if p.lc.hostKV() && p.lc.CommOverlap {
			e.clsOps[i] = resize(e.clsOps[i], p.nrs)
			for c := range sb.cls {
				cl := &sb.cls[c]
				e.clsOps[i][c] = l3ClassOps{
					q: Op{Name: "QKV", Lane: p.laneH2D, Dur: cl.q, Bytes: p.qkvBytes(cl.cnt), SubBatch: lbl},
					m: p.pimOp(cl, 0, lbl, 0),
					o: Op{Name: "attn out", Lane: p.laneD2H, Dur: cl.o, Bytes: p.outBytes(cl.cnt), SubBatch: lbl},
				}
			}
		}
	}
	if !p.cfg.Jump {
		p.bankUsage(it) // only the bank grid reads it, which a headless run leaves out
	}
	return e
}

// close lays out what follows the layers: the last Proj+FF and the LM head, and the
// prefill KV still pending.
func (e *l3Emit) close() {
	p, it := e.p, &e.p.it
	for i := range it.n {
		e.tail(i)
	}
	if p.lc.hostKV() && p.lc.CommOverlap {
		for i := range it.n {
			if e.pend[i].ok {
				e.sendPKV(i, e.rankOrder())
			}
		}
	}
}

// layerPeriod is how many layers on the iteration's ops repeat as one layout moved on in
// time, or 0 when they do not: with the layer-wise round-robin (§5.1) rankset class c
// sits on rankset (c+ℓ) mod N_rs, so every N_rs layers each rankset serves the same
// classes again, and every replica's next Proj+FF waits for the attention outputs of all
// ranksets, which keeps the replicas in step. Off the DIMMs each replica runs its own
// chain of layers at its own pace (their batches differ), so the layout as a whole moves
// on by no one time; the naive mapping puts each layer of a request on a rankset of its
// own. Neither repeats.
func (p *l3) layerPeriod() int {
	if p.lc.hostKV() && p.lc.CommOverlap {
		return p.nrs
	}
	return 0
}

// l3Mark is the emitter's state between two periods of layers: the schedule's, the span
// indices the next period depends on (refs), what else it reads, and the ranksets' busy
// and receiving times so far.
type l3Mark struct {
	at         Mark
	refs, aux  []int
	recv, busy []Time
}

// refs visits every span index the next layer's ops may depend on, in a fixed order.
func (e *l3Emit) refs(f func(*int)) {
	for i := range e.p.it.n {
		for g := range e.gen[i] {
			f(&e.gen[i][g])
			f(&e.outRep[i][g])
		}
		f(&e.syncP[i])
		for k := range e.outs[i] {
			f(&e.outs[i][k])
		}
		for k := range e.pend[i].gens {
			f(&e.pend[i].gens[k])
		}
	}
	for r := range e.rsLast {
		f(&e.rsLast[r])
		f(&e.rsBlock[r])
	}
}

// mark records into m the state before layer l.
func (e *l3Emit) mark(m *l3Mark, l int) {
	m.at = e.s.Mark()
	m.refs = m.refs[:0]
	e.refs(func(x *int) { m.refs = append(m.refs, *x) })
	m.aux = m.aux[:0]
	for i := range e.p.it.n {
		pd := &e.pend[i]
		m.aux = append(m.aux, len(e.outs[i]), len(pd.gens), b2i(pd.ok))
		if pd.ok {
			m.aux = append(m.aux, pd.layer-l)
		}
	}
	m.recv = append(m.recv[:0], e.p.rsRecv...)
	m.busy = append(m.busy[:0], e.p.rsBusy...)
}

// layers lays out the gpu work and attention of layers [0, n) and returns how many it
// copied. Where they repeat every per layers (layerPeriod; 0: they do not), a period
// reads only the spans the one before it left in the emitter (refs) and the schedule's
// state: once the last period laid out as the one before it moved on in time
// (Schedule.Repeat checks that) and left those references moved on by its spans, every
// further period would lay out the same moved on again, so they are copies, and the
// references, the pending prefill KV's layer and the ranksets' times move on by as many
// periods.
//
// The layout may settle into a pattern that repeats only every few periods, as the GPUs
// and the ranksets, each at its own pace, take turns holding the other up (in max-plus
// terms, the schedule's cyclicity): so at every period the last one, two, … cycle periods
// are each tried as the repeating unit.
func (e *l3Emit) layers(n, per, cycle int) (copied int) {
	l := 0
	if per > 0 {
		if len(e.marks) <= n/per {
			e.marks = append(e.marks, make([]l3Mark, n/per+1-len(e.marks))...)
		}
		for j := 0; l+per <= n; j, l = j+1, l+per {
			e.mark(&e.marks[j], l)
			if copied = e.repeat(j, l, n, per, cycle); copied > 0 {
				l += copied
				break
			}
			for x := l; x < l+per; x++ {
				e.layer(x)
			}
		}
	}
	for ; l < n; l++ {
		e.layer(l)
	}
	return copied
}

// l3Cycle is the most periods of layers an iteration's layout tries as one repeating unit.
// In whole runs on OPT-66B a unit of three periods copies layers in about half the layouts
// a single period leaves to be laid out; longer units ran no faster.
const l3Cycle = 3

// repeat copies as many units of m periods as fit in the layers from l (period j) to n,
// for the fewest periods m ≤ cycle whose last unit laid out as the unit before it moved
// on, and returns how many layers it copied (0: none).
func (e *l3Emit) repeat(j, l, n, per, cycle int) int {
	now := &e.marks[j]
	for m := 1; m <= cycle && j >= 2*m; m++ {
		prev, last := &e.marks[j-2*m], &e.marks[j-m]
		k := (n - l) / (m * per)
		if k == 0 || !e.moved(last, now) || !e.s.Repeat(prev.at, last.at, k) {
			continue
		}
		d := now.at.spans - last.at.spans
		e.refs(func(x *int) { *x = shiftIndex(*x, k*d) })
		for i := range e.p.it.n {
			e.pend[i].layer += k * m * per
		}
		for r := range e.p.rsRecv {
			e.p.rsRecv[r] += Time(k) * (now.recv[r] - last.recv[r])
			e.p.rsBusy[r] += Time(k) * (now.busy[r] - last.busy[r])
		}
		return k * m * per
	}
	return 0
}

// moved reports whether the state now is the state last moved on by the spans between
// them.
func (e *l3Emit) moved(last, now *l3Mark) bool {
	d := now.at.spans - last.at.spans
	if len(now.refs) != len(last.refs) || !slices.Equal(now.aux, last.aux) {
		return false
	}
	for k, x := range last.refs {
		if now.refs[k] != shiftIndex(x, d) {
			return false
		}
	}
	return true
}

// layer emits every sub-batch's GPU work and decode attention of layer l.
func (e *l3Emit) layer(l int) {
	for i := range e.p.it.n {
		e.gpu(i, l)
		e.attention(i, l)
	}
}

// gpu emits sub-batch i's GPU work of layer l on every replica.
func (e *l3Emit) gpu(i, l int) {
	p := e.p
	sb := &p.it.sb[i]
	for g := range p.dp {
		rp := &sb.reps[g]
		if rp.dec+rp.pre == 0 {
			e.gen[i][g] = -1
			continue
		}
		c := &e.cost[i][g]
		if l > 0 {
			e.ffDeps(i, g)
			c.ff.Layer = l - 1
			e.add(&c.ff, e.deps...)
		}
		c.gen.Layer = l
		e.gen[i][g] = e.add(&c.gen)
		if rp.pre > 0 {
			c.pmha.Layer = l
			e.add(&c.pmha)
		}
		if c.att.Dur > 0 {
			c.att.Layer = l
			e.add(&c.att)
		}
	}
}

// ffDeps collects what sub-batch i's next Proj+FF on replica g waits for: its attention
// outputs, and a synchronous prefill-KV transfer.
func (e *l3Emit) ffDeps(i, g int) {
	e.deps = appendSpans(append(e.deps[:0], e.outs[i]...), e.outRep[i][g], e.syncP[i])
}

// tail is the last layer's Proj+FF and the LM head.
func (e *l3Emit) tail(i int) {
	p := e.p
	sb := &p.it.sb[i]
	for g := range p.dp {
		rp := &sb.reps[g]
		if rp.dec+rp.pre == 0 {
			continue
		}
		c := &e.cost[i][g]
		e.ffDeps(i, g)
		c.ff.Layer = p.sh.Layers - 1
		e.add(&c.ff, e.deps...)
		if c.lm.Dur > 0 {
			e.add(&c.lm)
		}
	}
}

// mod is a modulo n ≥ 1, from 0 to n − 1 whatever a's sign.
func mod(a, n int) int {
	m := a % n
	if m < 0 {
		m += n
	}
	return m
}

// sendPKV sends sub-batch o's pending prefill KV, one rankset at a time.
func (e *l3Emit) sendPKV(o int, order []int) {
	p := e.p
	pd := &e.pend[o]
	sb := &p.it.sb[o]
	for _, r := range order {
		tok := sb.cls[mod(r-pd.layer, p.nrs)].pre
		if tok == 0 {
			continue
		}
		e.deps = appendSpans(appendSpans(e.deps[:0], pd.gens...), e.rsLast[r], e.rsBlock[r])
		by := p.pkvBytes(tok)
		op := Op{Name: "prefill KV", Lane: p.laneH2D, Dur: p.toHost(by), Bytes: by, Layer: pd.layer, SubBatch: e.sbLabel(o)}
		e.rsBlock[r] = e.add(&op, e.deps...)
		p.rsRecv[r] += op.Dur
	}
	pd.ok = false
}

// attention emits sub-batch i's decode attention of layer l and its transfers.
func (e *l3Emit) attention(i, l int) {
	p := e.p
	sb := &p.it.sb[i]
	lbl := e.sbLabel(i)
	sh := p.sh
	switch p.lc.Attention {
	case L3AttnBankPIM, L3AttnRankPIM:
		e.outs[i] = e.outs[i][:0]
		if p.lc.CommOverlap {
			o := 1 - i
			if p.it.n == 1 {
				o = 0
			}
			if e.pend[o].ok {
				e.sendPKV(o, e.rankOrder())
			}
			if len(sb.dec) > 0 {
				// Every rankset's QKV waits for the sub-batch's Gens, then for the rankset.
				e.deps = appendSpans(e.deps[:0], e.gen[i]...)
				gens := len(e.deps)
				for _, r := range e.rankOrder() {
					c := mod(r-l, p.nrs)
					if sb.cls[c].cnt == 0 {
						continue
					}
					e.deps = appendSpans(e.deps[:gens], e.rsLast[r], e.rsBlock[r])
					ops := &e.clsOps[i][c]
					ops.q.Layer, ops.m.Layer, ops.m.Lane, ops.o.Layer = l, l, p.laneAtt+r, l
					qi := e.add(&ops.q, e.deps...)
					mi := e.add(&ops.m, qi)
					oi := e.add(&ops.o, mi)
					e.rsLast[r], e.rsBlock[r] = mi, -1
					p.rsRecv[r] += ops.q.Dur
					p.rsBusy[r] += ops.m.Dur
					e.outs[i] = append(e.outs[i], oi)
				}
			}
			if sb.preTok > 0 {
				e.pend[i] = l3Pending{layer: l, gens: append(e.pend[i].gens[:0], e.gen[i]...), ok: true}
			}
			return
		}
		// A monolithic DIMM pool alternates between communication and computation: every
		// transfer waits for every rankset and stops them all; the prefill KV is sent
		// synchronously, so the GPU's next Proj+FF waits for it.
		e.deps = appendSpans(appendSpans(appendSpans(e.deps[:0], e.gen[i]...), e.rsLast...), e.rsBlock...)
		e.syncP[i] = -1
		if sb.preTok > 0 {
			by := p.pkvBytes(sb.preTok)
			op := Op{Name: "prefill KV", Lane: p.laneH2D, Dur: p.toHost(by), Bytes: by, Layer: l, SubBatch: lbl}
			pk := e.add(&op, e.deps...)
			e.syncP[i] = pk
			for r := range p.nrs {
				e.rsBlock[r] = pk
				p.rsRecv[r] += op.Dur
			}
			e.deps = append(e.deps, pk)
		}
		if len(sb.dec) == 0 {
			return
		}
		by := p.qkvBytes(len(sb.dec))
		q := Op{Name: "QKV", Lane: p.laneH2D, Dur: p.toHost(by), Bytes: by, Layer: l, SubBatch: lbl}
		qi := e.add(&q, e.deps...)
		e.deps = e.deps[:0]
		for r := range p.nrs {
			cl := &sb.rl[l*p.nrs+r]
			p.rsRecv[r] += q.Dur
			e.rsBlock[r] = qi
			if cl.cnt == 0 {
				continue
			}
			m := p.pimOp(cl, l, lbl, r)
			mi := e.add(&m, qi)
			e.rsLast[r] = mi
			p.rsBusy[r] += m.Dur
			e.deps = append(e.deps, mi)
		}
		ob := p.outBytes(len(sb.dec))
		e.outs[i] = append(e.outs[i], e.add(&Op{Name: "attn out", Lane: p.laneD2H, Dur: p.d2h.Time(ob), Bytes: ob, Layer: l, SubBatch: lbl}, e.deps...))
	case L3AttnHBMPIM:
		for g := range p.dp {
			rp := &sb.reps[g]
			e.outRep[i][g] = -1
			if rp.pimTok == 0 || e.gen[i][g] < 0 {
				continue
			}
			by := float64(rp.pimTok) * 2 * float64(sh.KVEmbedDev()*sh.Precision)
			op := Op{Name: "dMHA", Lane: p.laneAtt + g, Dur: rp.pimDur, Bytes: by,
				FLOPs: 4 * float64(rp.pimTok) * float64(sh.HeadsDev()*sh.HeadDim), Layer: l, SubBatch: lbl}
			e.outRep[i][g] = e.add(&op, e.gen[i][g])
		}
	case L3AttnCPU:
		e.outs[i] = e.outs[i][:0]
		if sb.hostTok > 0 {
			e.deps = appendSpans(e.deps[:0], e.gen[i]...)
			n := 0
			for _, r := range sb.dec {
				if r.Loc >= p.dp {
					n++
				}
			}
			by := p.qkvBytes(n)
			qi := e.add(&Op{Name: "QKV", Lane: p.laneH2D, Dur: p.toHost(by), Bytes: by, Layer: l, SubBatch: lbl}, e.deps...)
			kb := float64(sb.hostTok) * 2 * float64(sh.KVHeads*sh.HeadDim*sh.Precision)
			mi := e.add(&Op{Name: "dMHA (CPU)", Lane: p.laneAtt, Dur: p.cpuAttnTime(float64(sb.hostTok)), Bytes: kb,
				FLOPs: 4 * float64(sb.hostTok) * float64(sh.Heads*sh.HeadDim), Layer: l, SubBatch: lbl}, qi)
			ob := p.outBytes(n)
			e.outs[i] = append(e.outs[i], e.add(&Op{Name: "attn out", Lane: p.laneD2H, Dur: p.d2h.Time(ob), Bytes: ob, Layer: l, SubBatch: lbl}, mi))
		}
		if sb.hostPre > 0 {
			// host-resident prompts: their KV goes to host memory asynchronously
			e.deps = appendSpans(e.deps[:0], e.gen[i]...)
			by := p.pkvBytes(sb.hostPre)
			e.add(&Op{Name: "prefill KV", Lane: p.laneH2D, Dur: p.toHost(by), Bytes: by, Layer: l, SubBatch: lbl}, e.deps...)
		}
	}
}

// pimOp is one rankset's decode attention of one sub-batch and layer.
func (p *l3) pimOp(cl *l3Class, l, lbl, r int) Op {
	sh := p.sh
	name := "dMHA"
	if p.lc.Attention == L3AttnRankPIM {
		name = "dMHA (rank PU)"
	}
	return Op{Name: name, Lane: p.laneAtt + r, Dur: cl.dur, Layer: l, SubBatch: lbl,
		Bytes: float64(cl.tok) * 2 * float64(sh.KVHeads*sh.HeadDim*sh.Precision),
		FLOPs: 4 * float64(cl.tok) * float64(sh.Heads*sh.HeadDim)}
}

// bankUsage is, per logic bank, the share of the rank's read steps in which that bank
// reads useful data: tails appear where a head's tokens are not a multiple of the bank
// count (K) or of the tokens one V step reads.
func (p *l3) bankUsage(it *l3Iter) {
	clear(p.bankUse)
	if p.lc.Attention != L3AttnBankPIM {
		for b := range p.bankUse {
			p.bankUse[b] = 1
		}
		return
	}
	// Σ over requests of bankUseful(s, b), from histograms of s mod banks and s mod vTokens.
	l := p.layout
	var total, base int64
	kTail := make([]int64, l.banks+1)
	vTail := make([]int64, l.vTokens+1)
	for i := range it.n {
		for _, r := range it.sb[i].dec {
			s := r.SeqLen()
			total += l.steps(s)
			base += int64((s/l.banks)*l.kRDs + s/l.vTokens)
			kTail[s%l.banks]++
			vTail[s%l.vTokens]++
		}
	}
	// requests whose tail passes bank b (K) or quad q (V): s mod banks > b, s mod vTokens > q
	for k := len(kTail) - 2; k >= 0; k-- {
		kTail[k] += kTail[k+1]
	}
	for k := len(vTail) - 2; k >= 0; k-- {
		vTail[k] += vTail[k+1]
	}
	for b := range p.bankUse {
		if total > 0 {
			use := base + kTail[b+1]*int64(l.kRDs) + vTail[min(b/l.vBanks+1, l.vTokens)]
			p.bankUse[b] = float64(use*int64(l.computeMul)) / float64(total)
		}
	}
}

// --- views ---

func (p *l3) observe(snap *Snapshot, s *Schedule, running []*Request) {
	T := float64(snap.IterTime)
	sec := snap.IterTime.Seconds()
	busy := s.Busy()
	u := snap.Metrics.Util
	var gfl, gby float64
	for i := range s.Spans {
		if sp := &s.Spans[i]; sp.Lane < p.laneGPU+p.dp {
			gfl += sp.FLOPs
			gby += sp.Bytes
		}
	}
	u["gpu"] = gfl / (p.gpu.PeakFLOPS * float64(p.dp) * sec)
	sumBusy := func(from, n int) float64 {
		var b Time
		for l := from; l < from+n; l++ {
			b += busy[l]
		}
		return float64(b) / (float64(n) * T)
	}
	switch p.lc.Attention {
	case L3AttnBankPIM, L3AttnRankPIM:
		u["pim"] = sumBusy(p.laneAtt, p.nrs)
	case L3AttnHBMPIM:
		u["pim"] = sumBusy(p.laneAtt, p.dp)
	case L3AttnCPU:
		u["cpu"] = sumBusy(p.laneAtt, 1)
	case L3AttnGPU:
		u["bandwidth"] = min(1, gby/(p.gpu.MemBandwidth*float64(p.dp)*sec))
	}
	if p.laneH2D >= 0 {
		u["pcie"] = sumBusy(p.laneH2D, 2)
	}
	snap.Neurons.Reason = "N/A: the L3 family keeps every FC layer (QKV, projection, FFN) on the GPUs — 100% \"hot\" — and only decode attention in memory, so there is no neuron partition to show"
	p.observeBanks(snap, busy, running)
	p.observeKV(snap, running)
}

func (p *l3) observeBanks(snap *Snapshot, busy []Time, running []*Request) {
	g := &snap.Banks
	h := p.lc.Host
	switch p.lc.Attention {
	case L3AttnGPU:
		g.Reason = "GPU-only: the KV cache and decode attention are in the GPUs' HBM; there is no processing in memory to show"
		return
	case L3AttnHBMPIM:
		g.Reason = fmt.Sprintf("GPU + HBM-PIM: decode attention runs in each GPU's HBM-PIM (%.1f TB/s in all), modelled per device; see the HBM-PIM lanes of the timeline", p.lc.PIM.HBMPIMTBps)
		return
	case L3AttnCPU:
		g.Reason = fmt.Sprintf("CPU offload: the host CPU streams the KV cache over the %d DDR4 channels at %.0f GB/s; the DIMMs have no processing units", h.Channels, h.CPUBandwidthGBps)
		return
	}
	p.rankBalance(snap)
	if p.cfg.Jump {
		// A headless run reads the load imbalance only.
		return
	}
	T := float64(snap.IterTime)
	banks := h.BanksPerRank()
	g.RowKind, g.ColKind = "channel", "bank"
	g.Rows, g.Cols, g.ColGroup = p.nch, p.nrs*banks, banks
	cells := g.Rows * g.Cols
	g.PIM, g.Mem, g.Owner = make([]float64, cells), make([]float64, cells), make([]int, cells)
	g.RowNotes = make([]string, g.Rows)
	// A channel's ranks are its DIMMs' ranks; rankset r is rank r of every channel (§5.1),
	// DIMM r / ranks-per-DIMM. Each rank has a rank PU in its DIMM's buffer chip and a bank
	// PU beside every bank of its chips (§4.3).
	g.RowLevels = []BankLevel{{"channel", "ch", p.nch}}
	g.ColLevels = []BankLevel{{"DIMM", "DIMM", h.DIMMsPerChannel}, {"rank", "rank", h.RanksPerDIMM},
		{"bank group", "BG", h.BankGroups}, {"bank", "bank", h.BanksPerGroup}}
	rankPU := BankUnit{Name: "rank PU", Level: 1, Busy: make([]float64, p.nch*p.nrs)}
	bankPUs := p.lc.Attention == L3AttnBankPIM
	var gpuBusy Time
	for r := range p.dp {
		gpuBusy += busy[p.laneGPU+r]
	}
	g.Units = []BankUnit{rankPU, systemUnit(fmt.Sprintf("GPU ×%d", p.dp*p.sh.TP), gpuBusy/Time(p.dp), T)}
	if p.laneH2D >= 0 {
		// Named as the timeline names the lanes: laneH2D carries the GPU's queries and
		// prompts' KV to the host (GPU→host), laneD2H the attention outputs back.
		g.Units = append(g.Units, systemUnit(p.lane[p.laneH2D].Name, busy[p.laneH2D], T), systemUnit(p.lane[p.laneD2H].Name, busy[p.laneD2H], T))
	}
	if !bankPUs {
		g.Reason = "rank-level PIM: no bank PUs; each rank PU streams its rank's banks at the bus rate"
	}
	owner := make([]int, p.nrs)
	longest := make([]int, p.nrs)
	for r := range owner {
		owner[r] = -1
	}
	for _, rq := range running {
		if rq.Status != Running {
			continue
		}
		if st := p.stateOf(rq); st != nil && rq.SeqLen() > longest[st.off] {
			owner[st.off], longest[st.off] = rq.ID, rq.SeqLen()
		}
	}
	for c := range p.nch {
		share := float64(p.nh[c]) / float64(p.maxNh)
		var rowBusy float64
		for r := range p.nrs {
			b := float64(busy[p.laneAtt+r]) / T * share
			recv := float64(p.rsRecv[r]) / T
			rowBusy += b
			rankPU.Busy[c*p.nrs+r] = min(1, b)
			for k := range banks {
				i := c*g.Cols + r*banks + k
				if bankPUs {
					g.PIM[i] = min(1, b*p.bankUse[k])
				}
				g.Mem[i] = min(1, recv)
				g.Owner[i] = owner[r]
			}
		}
		g.RowNotes[c] = fmt.Sprintf("%d heads/layer · PIM %.0f%%", p.nh[c], 100*rowBusy/float64(p.nrs))
	}
}

// rankBalance reports the host's load imbalance: the busiest rank's attention load (its
// rankset's busy time × its channel's heads) over the mean rank's.
func (p *l3) rankBalance(snap *Snapshot) {
	var mx, sum float64
	at := -1
	for c := range p.nch {
		for r := range p.nrs {
			w := float64(p.rsBusy[r]) * float64(p.nh[c])
			if w > mx {
				mx, at = w, c*p.nrs+r
			}
			sum += w
		}
	}
	p.balTop, p.balMean, p.balAt = mx, sum/float64(p.nch*p.nrs), at
	if sum > 0 {
		snap.Metrics.LoadImbalance = p.balTop / p.balMean
	}
}

// layersOn counts, into n, how many of a request's layers sit on each rankset.
func (p *l3) layersOn(rq *Request, off int, n []int) {
	L := p.sh.Layers
	clear(n)
	if !p.lc.CommOverlap {
		for l := range L {
			n[p.naiveRankset(rq, l)]++
		}
		return
	}
	for r := range n {
		n[r] = L / p.nrs
		if mod(r-off, p.nrs) < L%p.nrs {
			n[r]++
		}
	}
}

// liveKV is the bytes of live tokens a GPU-resident request holds in its paged blocks.
func (p *l3) liveKV(r *Request) float64 {
	bt := max(1, p.lc.GPU.KVBlockTokens)
	s := r.SeqLen()
	return float64(r.kBlocks+r.vBlocks) * p.blkBytes * float64(s) / float64(bt*ceilDiv(s, bt))
}

// The L3 planner jumps and may decline an admission by choice (jump.go), checked here so
// that a change to either interface cannot silently make it step every iteration.
var (
	_ jumper   = (*l3)(nil)
	_ decliner = (*l3)(nil)
)

// probe plans the decode batch shift iterations on (sim/jump.go). A predictor fitted to
// the iterations as they run (Eq. 5–6) is state a probe cannot stand for, so with it the
// scheduler plans every iteration.
func (p *l3) probe(s *Schedule, decode []*Request, shift int) bool {
	if p.pred.on {
		return false
	}
	for _, r := range decode {
		r.Generated += shift
	}
	p.plan(s, decode, nil)
	for _, r := range decode {
		r.Generated -= shift
	}
	return true
}

// cycle: the bank PUs read a request's K in slots of one token per logic bank and its V
// in steps of vTokens tokens (rankLayout.steps), so its read steps grow by a whole slot
// every banks tokens: over the iterations of one residue class modulo both they are affine,
// until a sequence passes the rank PU's buffer and its scores are read twice. Every other
// cost (the rank PU's bytes, HBM-PIM's, the GPU's) is affine in the lengths. A stretch too
// short for three such periods may still lie within every request's current K slot, where
// only the V steps kink: there the period is vTokens. Once the host memory is full, the
// requests that wait for room (§5.3 step 1) line up on slot boundaries and every stretch
// between two of them is one slot long. A batch whose lengths agree modulo the period
// crosses its slots and steps together, and stairs counts them: the stretch then need not
// end at a slot.
func (p *l3) cycle(decode []*Request, n int) (period, limit int) {
	if p.lc.Attention != L3AttnBankPIM {
		return 1, math.MaxInt
	}
	l := p.layout
	limit, slot := math.MaxInt, math.MaxInt
	for _, r := range decode {
		s := r.SeqLen()
		if l.bufTokens > 0 && s <= l.bufTokens {
			limit = min(limit, l.bufTokens-s+1)
		}
		slot = min(slot, ceilDiv(s, l.banks)*l.banks-s+1)
	}
	period = p.slotPeriod()
	if _, _, ok := p.lockstep(decode); !ok && n < 3*period && l.vTokens < period {
		return l.vTokens, min(limit, slot)
	}
	return period, limit
}

// slotPeriod is the iterations after which every request's K slot and V step are where
// they were: the least common multiple of the logic banks and the tokens of a V step.
func (p *l3) slotPeriod() int {
	l := p.layout
	return l.banks / gcd(l.banks, l.vTokens) * l.vTokens
}

// lockstep reports whether the bank PUs read every request of decode in lock step: their
// lengths agree modulo slotPeriod, so all cross a K slot or a V step at the same
// iterations, all are on the same side of the rank PU's buffer (past it a request's
// scores are read twice), and none has a sliding window, where its length stops growing.
// It returns the first request's length and which side.
func (p *l3) lockstep(decode []*Request) (s0 int, past, ok bool) {
	if p.lc.Attention != L3AttnBankPIM || len(decode) == 0 {
		return 0, false, false
	}
	l, per := p.layout, p.slotPeriod()
	s0 = decode[0].SeqLen()
	past = l.bufTokens > 0 && s0 > l.bufTokens
	for _, r := range decode {
		s := r.SeqLen()
		if r.window > 0 || (s-s0)%per != 0 || (l.bufTokens > 0 && s > l.bufTokens) != past {
			return 0, false, false
		}
	}
	return s0, past, true
}

// The L3 planner counts the read steps of a batch in lock step as a staircase
// (jump_stairs.go).
var _ stairer = (*l3)(nil)

// stairs: a batch read in lock step (lockstep) has, at k iterations on, each request's
// read steps (rankLayout.steps) equal to a constant of its own plus the batch's count
// y(k) = kRDs·⌈(s0+k)/banks⌉ + ⌈(s0+k)/vTokens⌉ (the K slots counted twice past the
// buffer) times computeMul, with s0 the first request's length: s − s0 is a multiple of
// both banks and vTokens, so it comes out of both ceilings whole. Each rankset class's
// read steps, so each PIM operation's duration, is then affine in y(k), its bytes and
// FLOPs affine in k, and every other duration constant over the stretch; the split and
// the busiest rank compare functions affine in (k, y), so the engine's check at the
// corners of the hull holds between them. cycle's limit keeps a request below the
// buffer from passing it, so none changes side in the stretch. Nil for a batch not in
// lock step, whose residue classes cycle covers.
func (p *l3) stairs(decode []*Request, n int) []int {
	s0, past, ok := p.lockstep(decode)
	if !ok {
		return nil
	}
	l := p.layout
	kRDs := l.kRDs
	if past {
		kRDs *= 2
	}
	ys := make([]int, n)
	for k := range ys {
		ys[k] = kRDs*ceilDiv(s0+k, l.banks) + ceilDiv(s0+k, l.vTokens)
	}
	return ys
}

// decided: the split's choices (§5.3 step 2, longest first, each to the lighter sub-batch)
// compare sums of lengths, and whether HBM-PIM or CPU offload runs one batch or two. The
// probes of a stretch plan one decoding batch, so the token-balanced split is told by
// which sub-batch each of its requests, in the batch's order, joined (side, a bit a
// request); the other splits, by position or by location, by the sub-batches' requests.
// HBM-PIM's choice of one batch or two is held by what splitIfItPays records (choice).
func (p *l3) decided(sig []int32) []int32 {
	it := &p.it
	sig = append(sig, int32(it.n), int32(len(it.sb[0].dec)))
	sig = append(sig, p.choice...)
	if len(it.side) > 0 {
		return append(sig, it.side...)
	}
	for i := range it.n {
		sig = append(sig, int32(len(it.sb[i].dec)))
		for _, r := range it.sb[i].dec {
			sig = append(sig, int32(r.ID))
		}
	}
	return sig
}

// balance is the host DIMMs' load imbalance observeBanks reported: the busiest rank's
// attention load and the mean rank's, and which rank.
func (p *l3) balance() (top, mean float64, at int) { return p.balTop, p.balMean, p.balAt }

// kvStats is the KV cache as observeKV reports it: the paged blocks in the GPUs' HBM (and
// the host's, CPU offload), or the slots in the host DIMMs.
func (p *l3) kvStats(running []*Request) (used int, frag, util float64) {
	if p.lc.hostKV() {
		used, capacity, live, alloc := p.hostKV(running)
		if alloc > 0 {
			frag = max(0, 1-live/alloc)
		}
		if capacity > 0 {
			util = float64(used) / float64(capacity)
		}
		return used, frag, util
	}
	used, capacity := p.kv.totals()
	if capacity > 0 {
		util = float64(used) / float64(capacity)
	}
	return used, p.kv.fragmentation(running, p.blkBytes, p.liveKV), util
}

// hostKV is the host DIMMs' KV cache as observeKV shows it: the blocks in use (one head's
// K or V of one layer for one slot of banks tokens, in one rank), the capacity, and the
// bytes of live tokens and of the blocks that hold them.
func (p *l3) hostKV(running []*Request) (used, capacity int, live, alloc float64) {
	perRS := int(float64(p.nch) * p.lc.Host.RankBytes() / p.blkBytes)
	for _, rq := range running {
		slots, fill, ok := p.hostSlots(rq)
		if !ok {
			continue
		}
		total := p.sh.Layers * p.sh.KVHeads * slots
		used += 2 * total
		alloc += float64(2*total) * p.blkBytes
		live += float64(2*total) * p.blkBytes * fill
	}
	return used, perRS * p.nrs, live, alloc
}

// hostSlots is the slots of banks tokens each of rq's layers and heads holds in the host
// DIMMs and the share of them its tokens fill; false for a request not in them.
func (p *l3) hostSlots(rq *Request) (slots int, fill float64, ok bool) {
	st := p.stateOf(rq)
	if st == nil || rq.Loc < 0 {
		return 0, 0, false
	}
	s := rq.SeqLen()
	if rq.Status == Prefilling {
		s = st.done // only the prefilled part has landed in the DIMMs
	}
	banks := p.lc.Host.BanksPerRank()
	slots = ceilDiv(s, banks)
	if slots > 0 {
		fill = float64(s) / float64(slots*banks)
	}
	return slots, fill, true
}

// stuck: the baselines admit in order while a replica's paged KV has room (the CPU
// offload's NEO weighs the batch's lengths, which grow, so it may admit again).
func (p *l3) stuck() bool { return p.lc.Attention != L3AttnCPU }

// fragPeak: a GPU-resident request of s tokens holds 2L⌈s/bt⌉ blocks of which s/bt are
// live per layer and K or V (in the host DIMMs, 2L·heads slots of bt = banks tokens), so
// over the next iterations the live share grows by one token a decoding request and the
// blocks for each decoding request whose length crosses a block boundary: those with
// s ≡ 0 (mod bt) before the token. A request waiting for room holds what it holds.
func (p *l3) fragPeak(running, decode []*Request, m int) (float64, bool) {
	bt := max(1, p.lc.GPU.KVBlockTokens)
	if p.lc.hostKV() {
		bt = p.lc.Host.BanksPerRank()
	}
	cross := make([]int, bt) // requests crossing a boundary at iterations ≡ i (mod bt)
	var live, slots int      // Σ tokens and Σ block slots (tokens' worth) of every request
	for _, r := range running {
		if r.window > 0 {
			return 0, false
		}
		s := r.SeqLen()
		live += s
		slots += bt * ceilDiv(s, bt)
	}
	for _, r := range decode {
		cross[mod(1-r.SeqLen(), bt)]++
	}
	peak := 0.0
	for i := 1; i <= m; i++ {
		live += len(decode)
		slots += bt * cross[i%bt]
		if slots > 0 {
			peak = max(peak, 1-float64(live)/float64(slots))
		}
	}
	return peak, true
}

func (p *l3) observeKV(snap *Snapshot, running []*Request) {
	kv := &snap.KV
	sh := p.sh
	if !p.lc.hostKV() {
		bt := max(1, p.lc.GPU.KVBlockTokens)
		kv.Unit = fmt.Sprintf("paged block (%d tokens of one layer, K or V, of one GPU's heads)", bt)
		kv.LocKind = "HBM"
		kv.BlockBytes = p.blkBytes
		p.kv.snapshot(kv, func(i int) string {
			switch {
			case i >= p.dp:
				return "host DDR4 (CPU)"
			case p.dp == 1:
				return fmt.Sprintf("HBM (%d GPUs)", sh.TP)
			}
			return fmt.Sprintf("HBM g%d (%d GPUs)", i, sh.TP)
		}, running, p.liveKV)
		if kv.Capacity > 0 {
			snap.Metrics.KVUtil = float64(kv.Used) / float64(kv.Capacity)
		}
		return
	}
	if p.cfg.Jump {
		// A headless run reads the counts and the fragmentation only.
		kv.Used, kv.Fragmentation, snap.Metrics.KVUtil = p.kvStats(running)
		kv.Reserved = kv.Used
		return
	}
	banks := p.lc.Host.BanksPerRank()
	kv.Unit = fmt.Sprintf("%d tokens of one head's K or V in one layer, in one rank (token t in logic bank t mod %d)", banks, banks)
	kv.LocKind = "rankset"
	kv.BlockBytes = p.blkBytes
	perRS := int(float64(p.nch) * p.lc.Host.RankBytes() / p.blkBytes)
	kv.Locations = make([]KVLocation, 1+p.nrs)
	kv.Locations[0] = KVLocation{Label: "all ranksets", Capacity: perRS * p.nrs,
		Note: fmt.Sprintf("the host DIMMs: %d ranksets, rankset r being rank r of every channel", p.nrs)}
	for r := range p.nrs {
		kv.Locations[1+r] = KVLocation{Label: fmt.Sprintf("rankset %d", r), Capacity: perRS, Note: fmt.Sprintf("rank %d of ch0–%d", r, p.nch-1)}
	}
	// Each request's blocks in all ranksets are one holder of the host bar; the rankset
	// bars show what the layer-wise round-robin puts on each.
	hold := make([]KVHolder, 0, len(running))
	on := make([]int, p.nrs)
	for _, rq := range running {
		slots, fill, ok := p.hostSlots(rq)
		if !ok {
			continue
		}
		total := 0
		p.layersOn(rq, p.stateOf(rq).off, on)
		for r := range p.nrs {
			b := on[r] * sh.KVHeads * slots
			total += b
			kv.Locations[1+r].Used += 2 * b
		}
		hold = append(hold, KVHolder{Request: rq.ID, KBlocks: total, VBlocks: total, Reserved: 2 * total, Fill: fill})
	}
	kv.Locations[0].Holders = hold
	waiting := 0
	for _, rq := range running {
		if st := p.stateOf(rq); st != nil && rq.Status == Running && st.waits {
			waiting++
		}
	}
	switch {
	case p.exhausted:
		kv.Locations[0].Note = "full: not one decoding request could take its next token; the newest are preempted"
	case waiting > 0:
		kv.Locations[0].Note = fmt.Sprintf("%d decoding requests wait for room this iteration (§5.3 step 1)", waiting)
	}
	for r := range p.nrs {
		kv.Locations[0].Used += kv.Locations[1+r].Used
	}
	for i := range kv.Locations {
		kv.Locations[i].Reserved = kv.Locations[i].Used
	}
	kv.Capacity, kv.Used, kv.Reserved = kv.Locations[0].Capacity, kv.Locations[0].Used, kv.Locations[0].Used
	if _, _, live, alloc := p.hostKV(running); alloc > 0 {
		kv.Fragmentation = max(0, 1-live/alloc)
	}
	if kv.Capacity > 0 {
		snap.Metrics.KVUtil = float64(kv.Used) / float64(kv.Capacity)
	}
}
