package sim

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"unsafe"
)

// The engine keeps past iterations so a viewer can step back (docs/architecture.md). A snapshot is
// mostly its timeline, thousands of spans and bubbles that repeat the same few operations
// layer after layer, and its bank grid, whose rows often repeat (the modules of a pipeline
// stage do the same work). Kept whole, 128 of them take tens to hundreds of megabytes; so
// each kept iteration is packed: spans refer to a table of the distinct operations, their
// integers are varints relative to what came before on the lane, and the grid keeps its
// distinct rows over a table of its distinct values. Unpacking rebuilds the snapshot
// exactly; everything else (KV map, neurons, metrics, requests) is shared with it.

// packedSnap is one kept iteration.
type packedSnap struct {
	rest   Snapshot // the snapshot without its spans, bubbles, critical path and grid cells
	ops    []opKey  // distinct operations of the timeline
	tl     []byte   // spans, bubbles and critical path
	grid   []byte   // bank grid cells, when packed
	vals   []float64
	nilSet uint8 // which packed slices were nil (nilSpans…), so unpacking restores them
	bytes  int   // memory held, for the history's budget
}

const (
	nilSpans = 1 << iota
	nilBubbles
	nilCritical
	nilPIM
	nilMem
	nilOwner
	gridPacked
)

// opKey is what spans of one operation share: everything but where and when it ran.
type opKey struct {
	Name         string
	Dur          Time
	FLOPs, Bytes float64
	SubBatch     int
}

// packer holds the scratch tables packing reuses from one iteration to the next.
type packer struct {
	ops  map[uint64]int32 // opHash → index into the op table
	more map[opKey]int32  // ops whose hash an earlier op took
	vals map[uint64]int32
	rows map[uint64][]int32
	ends []Time
	ids  []int32 // each span's operation, this iteration
	used []int32 // each operation's latest span, this iteration
	seed maphash.Seed
	// The packed iteration is written here, then copied out at its exact size: sizes
	// guessed ahead either grew (each growth a copy and the old array garbage) or were
	// kept in the history with room to spare.
	buf  []byte
	opsB []opKey
	valB []float64
}

// opHash hashes what a span shares with the other spans of its operation. It takes the
// name's address rather than its bytes: names are shared strings, so this is as good and
// far cheaper (hashing the strings was most of the packing), and two copies of one name
// only cost the table an entry.
func opHash(sp *Span) uint64 {
	h := splitmix(uint64(uintptr(unsafe.Pointer(unsafe.StringData(sp.Name)))) ^ uint64(len(sp.Name))<<48)
	h = splitmix(h ^ uint64(sp.Dur))
	h = splitmix(h ^ math.Float64bits(sp.FLOPs))
	h = splitmix(h ^ math.Float64bits(sp.Bytes))
	return splitmix(h ^ uint64(sp.SubBatch))
}

// op returns the index of sp's operation in ps's table, adding it if it is new.
func (p *packer) op(ps *packedSnap, sp *Span) int32 {
	k := opKey{sp.Name, sp.Dur, sp.FLOPs, sp.Bytes, sp.SubBatch}
	h := opHash(sp)
	id, ok := p.ops[h]
	if ok && ps.ops[id] == k {
		return id
	}
	if ok {
		if id, ok := p.more[k]; ok {
			return id
		}
	}
	id = int32(len(ps.ops))
	ps.ops = append(ps.ops, k)
	if ok {
		p.more[k] = id
	} else {
		p.ops[h] = id
	}
	return id
}

// sameOp reports whether sp is an instance of k, bit for bit.
func sameOp(k *opKey, sp *Span) bool {
	return k.Name == sp.Name && k.Dur == sp.Dur && k.SubBatch == sp.SubBatch &&
		math.Float64bits(k.FLOPs) == math.Float64bits(sp.FLOPs) && math.Float64bits(k.Bytes) == math.Float64bits(sp.Bytes)
}

func (p *packer) pack(s *Snapshot) *packedSnap {
	if p.ops == nil {
		p.ops, p.more, p.vals, p.rows = map[uint64]int32{}, map[opKey]int32{}, map[uint64]int32{}, map[uint64][]int32{}
		p.seed = maphash.MakeSeed()
	}
	ps := &packedSnap{rest: *s}
	tl := &ps.rest.Timeline
	tl.Spans, tl.Bubbles, tl.Critical = nil, nil, nil
	for bit, isNil := range []bool{s.Timeline.Spans == nil, s.Timeline.Bubbles == nil, s.Timeline.Critical == nil} {
		if isNil {
			ps.nilSet |= 1 << bit
		}
	}
	ps.ops = p.opsB[:0]
	ps.tl = p.packTimeline(ps, &s.Timeline)
	p.opsB, ps.ops = ps.ops, slices.Clone(ps.ops)
	g := &s.Banks
	if g.packable() {
		ps.grid, ps.vals = p.packGrid(g)
		ps.nilSet |= gridPacked
		ps.rest.Banks.PIM, ps.rest.Banks.Mem, ps.rest.Banks.Owner = nil, nil, nil
	}
	ps.bytes = int(unsafe.Sizeof(*ps)) + len(ps.tl) + len(ps.grid) + 8*len(ps.vals) +
		len(ps.ops)*int(unsafe.Sizeof(opKey{})) + sharedBytes(&ps.rest)
	return ps
}

// laneEnd is where the previous span on a lane ended: a span's start is stored as its
// gap after it, mostly zero.
func (p *packer) laneEnd(lanes int) []Time {
	p.ends = append(p.ends[:0], make([]Time, lanes)...)
	return p.ends
}

func endAt(ends []Time, lane int) *Time {
	if lane >= 0 && lane < len(ends) {
		return &ends[lane]
	}
	return new(Time)
}

func (p *packer) packTimeline(ps *packedSnap, tl *Timeline) []byte {
	clear(p.ops)
	clear(p.more)
	b := p.buf[:0]
	b = binary.AppendUvarint(b, uint64(len(tl.Spans)))
	b = binary.AppendUvarint(b, uint64(len(tl.Bubbles)))
	b = binary.AppendUvarint(b, uint64(len(tl.Critical)))
	ends := p.laneEnd(len(tl.Lanes))
	var layer, stage int
	// An iteration repeats its operations layer after layer (or sub-batch after
	// sub-batch): a span is most often the operation of the span one period back, the
	// distance between the last two spans of an operation, which costs a comparison
	// where the table costs a hash and a lookup.
	p.ids, p.used = p.ids[:0], p.used[:0]
	period := 0
	for i := range tl.Spans {
		sp := &tl.Spans[i]
		id := int32(-1)
		if period > 0 && period <= i {
			if c := p.ids[i-period]; sameOp(&ps.ops[c], sp) {
				id = c
			}
		}
		if id < 0 {
			id = p.op(ps, sp)
			if int(id) == len(p.used) {
				p.used = append(p.used, int32(i))
			}
			period = i - int(p.used[id])
		}
		p.used[id] = int32(i)
		p.ids = append(p.ids, id)
		end := endAt(ends, sp.Lane)
		n := len(b)
		b = slices.Grow(b, 6*binary.MaxVarintLen64)[:n+6*binary.MaxVarintLen64]
		n = putUvarint(b, n, uint64(id))
		n = putVarint(b, n, int64(sp.Lane))
		n = putVarint(b, n, int64(sp.Layer-layer))
		n = putVarint(b, n, int64(sp.Stage-stage))
		n = putVarint(b, n, int64(sp.Start-*end))
		n = putVarint(b, n, int64(i-sp.By))
		b = b[:n]
		layer, stage, *end = sp.Layer, sp.Stage, sp.Start+sp.Dur
	}
	ends = p.laneEnd(len(tl.Lanes))
	waited := 0
	for _, bu := range tl.Bubbles {
		end := endAt(ends, bu.Lane)
		n := len(b)
		b = slices.Grow(b, 1+4*binary.MaxVarintLen64)[:n+1+4*binary.MaxVarintLen64]
		n = putVarint(b, n, int64(bu.Lane))
		b[n] = byte(bu.Cause)
		n = putVarint(b, n+1, int64(bu.Start-*end))
		n = putVarint(b, n, int64(bu.Dur))
		n = putVarint(b, n, int64(bu.Waited-waited))
		b = b[:n]
		waited, *end = bu.Waited, bu.Start+bu.Dur
	}
	prev := 0
	for _, c := range tl.Critical {
		b = binary.AppendVarint(b, int64(c-prev))
		prev = c
	}
	p.buf = b
	return slices.Clone(b)
}

// putUvarint writes x as binary.AppendUvarint does at b[n:], which has room for it, and
// returns where it ends. The spans and bubbles are some fifty thousand varints an
// iteration, mostly of one byte, written into room made once a span: an append each
// checked the capacity and moved the slice, which cost more than the varint.
func putUvarint(b []byte, n int, x uint64) int {
	for x >= 0x80 {
		b[n] = byte(x) | 0x80
		x >>= 7
		n++
	}
	b[n] = byte(x)
	return n + 1
}

// putVarint writes x as binary.AppendVarint does (zig-zag, then as an unsigned varint).
func putVarint(b []byte, n int, x int64) int {
	return putUvarint(b, n, uint64(x)<<1^uint64(x>>63))
}

// packGrid writes each row as a reference to an identical earlier row or as its cells:
// indices into the table of distinct values, and each owner relative to the one before.
func (p *packer) packGrid(g *BankGrid) ([]byte, []float64) {
	clear(p.vals)
	clear(p.rows)
	vals := p.valB[:0]
	val := func(v float64) uint64 {
		bits := math.Float64bits(v)
		id, ok := p.vals[bits]
		if !ok {
			id = int32(len(vals))
			p.vals[bits] = id
			vals = append(vals, v)
		}
		return uint64(id)
	}
	b := p.buf[:0]
	owner := 0
	for r := range g.Rows {
		lo, hi := r*g.Cols, (r+1)*g.Cols
		h := p.rowHash(g, lo, hi)
		same := -1
		for _, q := range p.rows[h] {
			if rowsEqual(g, int(q)*g.Cols, lo) {
				same = int(q)
				break
			}
		}
		if same >= 0 {
			b = binary.AppendUvarint(b, uint64(r-same))
			continue
		}
		p.rows[h] = append(p.rows[h], int32(r))
		b = append(b, 0)
		for i := lo; i < hi; i++ {
			b = binary.AppendUvarint(b, val(g.PIM[i]))
			b = binary.AppendUvarint(b, val(g.Mem[i]))
			b = binary.AppendVarint(b, int64(g.Owner[i]-owner))
			owner = g.Owner[i]
		}
	}
	p.buf, p.valB = b, vals
	return slices.Clone(b), slices.Clone(vals)
}

// rowHash hashes a row's cells as the bytes they are (a row is kilobytes; hashing it
// value by value was most of packing a grid).
func (p *packer) rowHash(g *BankGrid, lo, hi int) uint64 {
	return maphash.Bytes(p.seed, words(g.PIM[lo:hi])) ^
		bits.RotateLeft64(maphash.Bytes(p.seed, words(g.Mem[lo:hi])), 21) ^
		bits.RotateLeft64(maphash.Bytes(p.seed, words(g.Owner[lo:hi])), 42)
}

// rowsEqual reports whether the rows starting at cells a and b hold the same bits.
func rowsEqual(g *BankGrid, a, b int) bool {
	n := g.Cols
	return bytes.Equal(words(g.PIM[a:a+n]), words(g.PIM[b:b+n])) &&
		bytes.Equal(words(g.Mem[a:a+n]), words(g.Mem[b:b+n])) &&
		bytes.Equal(words(g.Owner[a:a+n]), words(g.Owner[b:b+n]))
}

// words is the memory of a non-empty slice.
func words[T float64 | int](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), int(unsafe.Sizeof(v[0]))*len(v))
}

// unpack rebuilds the snapshot ps was packed from.
func (ps *packedSnap) unpack() *Snapshot {
	s := ps.rest
	tl := &s.Timeline
	b := ps.tl
	uv := func() int {
		v, n := binary.Uvarint(b)
		b = b[n:]
		return int(v)
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		b = b[n:]
		return v
	}
	nSpans, nBubbles, nCrit := uv(), uv(), uv()
	if ps.nilSet&nilSpans == 0 {
		tl.Spans = make([]Span, nSpans)
	}
	if ps.nilSet&nilBubbles == 0 {
		tl.Bubbles = make([]Bubble, nBubbles)
	}
	if ps.nilSet&nilCritical == 0 {
		tl.Critical = make([]int, nCrit)
	}
	ends := make([]Time, len(tl.Lanes))
	var layer, stage int
	for i := range tl.Spans {
		k := ps.ops[uv()]
		sp := &tl.Spans[i]
		sp.Name, sp.Dur, sp.FLOPs, sp.Bytes, sp.SubBatch = k.Name, k.Dur, k.FLOPs, k.Bytes, k.SubBatch
		sp.Lane = int(sv())
		layer += int(sv())
		stage += int(sv())
		sp.Layer, sp.Stage = layer, stage
		end := endAt(ends, sp.Lane)
		sp.Start = *end + Time(sv())
		sp.By = i - int(sv())
		*end = sp.Start + sp.Dur
	}
	clear(ends)
	waited := 0
	for i := range tl.Bubbles {
		bu := &tl.Bubbles[i]
		bu.Lane = int(sv())
		bu.Cause = BubbleCause(b[0])
		b = b[1:]
		end := endAt(ends, bu.Lane)
		bu.Start = *end + Time(sv())
		bu.Dur = Time(sv())
		waited += int(sv())
		bu.Waited = waited
		*end = bu.Start + bu.Dur
	}
	prev := 0
	for i := range tl.Critical {
		prev += int(sv())
		tl.Critical[i] = prev
	}
	if ps.nilSet&gridPacked != 0 {
		ps.unpackGrid(&s.Banks)
	}
	return &s
}

func (ps *packedSnap) unpackGrid(g *BankGrid) {
	n := g.Rows * g.Cols
	g.PIM, g.Mem, g.Owner = make([]float64, n), make([]float64, n), make([]int, n)
	b := ps.grid
	owner := 0
	for r := range g.Rows {
		lo := r * g.Cols
		back, k := binary.Uvarint(b)
		b = b[k:]
		if back > 0 {
			src := (r - int(back)) * g.Cols
			copy(g.PIM[lo:lo+g.Cols], g.PIM[src:])
			copy(g.Mem[lo:lo+g.Cols], g.Mem[src:])
			copy(g.Owner[lo:lo+g.Cols], g.Owner[src:])
			continue
		}
		for i := lo; i < lo+g.Cols; i++ {
			v, k := binary.Uvarint(b)
			g.PIM[i] = ps.vals[v]
			b = b[k:]
			v, k = binary.Uvarint(b)
			g.Mem[i] = ps.vals[v]
			b = b[k:]
			d, k := binary.Varint(b)
			owner += int(d)
			g.Owner[i] = owner
			b = b[k:]
		}
	}
}

// sharedBytes estimates the memory of what a packed snapshot shares with the snapshot it
// was made from: the KV map, the neuron bins, the request table, the metrics and whatever
// of the grid was not packed.
func sharedBytes(s *Snapshot) int {
	n := int(unsafe.Sizeof(*s))
	g := &s.Banks
	n += 8*(len(g.PIM)+len(g.Mem)+len(g.Owner)) + 16*len(g.RowNotes)
	for _, l := range s.KV.Locations {
		n += int(unsafe.Sizeof(l)) + len(l.Holders)*int(unsafe.Sizeof(KVHolder{}))
		for _, h := range l.Holders {
			n += 4 * len(h.Pages)
		}
	}
	for _, b := range s.Neurons.Blocks {
		n += int(unsafe.Sizeof(b)) + len(b.Bins)*int(unsafe.Sizeof(NeuronBin{})) +
			4*(len(b.Computed)+len(b.Placed)) + 2*len(b.BinPlaced)
	}
	st := &s.Neurons.Stats
	n += 4*(len(st.RemapBefore)+len(st.RemapAfter)) + 8*len(st.HomeLoadMB)
	n += len(s.Requests) * int(unsafe.Sizeof(RequestRow{}))
	// A map entry costs about its key and value and a word of overhead.
	m := &s.Metrics
	n += 40*(len(m.Util)+len(m.Bubble)) + (32+int(unsafe.Sizeof(Causes{})))*len(m.BubbleCause)
	return n
}

// Release hands back a snapshot Step or Back returned that the caller, and everything it
// gave the snapshot to, will not read again. The history keeps its own packed copy of
// every iteration, so the explorer, which shows one snapshot at a time, hands back the
// one it stops showing, and the next iteration lays its timeline (and a planner that
// can, its bank grid) into that snapshot's memory instead of allocating it anew, some
// 1.5 MB an iteration for LoL-PIM. The newest iteration and the one Back stands on are
// the engine's own and are not taken; nor is anything when the engine keeps no history,
// or recycles its own buffers (Config.Recycle).
func (e *Engine) Release(s *Snapshot) {
	if s == nil || s == e.last || s == e.cur || e.cfg.HistoryCap == 0 || e.cfg.Recycle {
		return
	}
	e.freed = s
}

// reclaim returns the memory of the snapshot last released, if any: its timeline as an
// empty schedule over lanes, and its bank grid's cells to a planner that fills them in
// (gridReuser) when the history packed them rather than sharing them.
func (e *Engine) reclaim(lanes []Lane) *Schedule {
	f := e.freed
	if f == nil {
		return nil
	}
	e.freed = nil
	if r, ok := e.sys.(gridReuser); ok && f.Banks.packable() {
		r.reuseGrid(f.Banks.PIM, f.Banks.Mem, f.Banks.Owner)
	}
	tl := &f.Timeline
	s := &Schedule{Spans: tl.Spans[:0], Bubbles: tl.Bubbles[:0], Critical: tl.Critical[:0]}
	s.Reset(lanes)
	return s
}

// gridReuser is a planner that can fill its next bank grid into cells handed back.
type gridReuser interface {
	reuseGrid(pim, mem []float64, owner []int)
}

// packable reports whether the history packs the grid's cells (and so shares none of
// them with the snapshot).
func (g *BankGrid) packable() bool {
	n := g.Rows * g.Cols
	return n > 0 && len(g.PIM) == n && len(g.Mem) == n && len(g.Owner) == n
}

// History is the iterations an engine keeps, oldest first. It does not change when the
// engine steps on, so it may be read from another goroutine.
type History struct{ kept []*packedSnap }

// Len is the number of iterations kept.
func (h History) Len() int { return len(h.kept) }

// Step is the iteration number of the i-th kept iteration.
func (h History) Step(i int) int { return h.kept[i].rest.Step }

// Snapshot rebuilds the i-th kept iteration.
func (h History) Snapshot(i int) *Snapshot { return h.kept[i].unpack() }
