package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// system is a planner over the shared parts: where KV lives, which operations an
// iteration runs on which lanes, and what the memory looks like afterwards.
type system interface {
	lanes() []Lane
	// admit places as many candidates as fit, in the candidates' order or the order the
	// system's policy prefers; it sets Loc and reserves KV for each request it places and
	// reports which it placed.
	admit(cands []*Request, running []*Request) []bool
	// grow allocates KV blocks for the request's current length; false when its location
	// is full (paged policy).
	grow(r *Request) bool
	release(r *Request)
	plan(s *Schedule, decode, prefill []*Request) []StageMark
	// fit reports why a request of in input and out output tokens can never run, even
	// alone in the empty system, with what to change; "" when it can.
	fit(in, out int) string
	// observe fills the snapshot's bank grid, KV map and utilisations from the schedule.
	observe(snap *Snapshot, s *Schedule, running []*Request)
	utilKeys() []string
	layers() int
	pool() *kvPool
}

// flopPeaker is implemented by a system that reports how much of its peak compute the
// useful FLOPs of its schedule fill (the utilisation LoL-PIM's Table 8 reports): peakFLOPS
// is the FLOP rate of the compute units whose operations the schedule holds.
type flopPeaker interface {
	peakFLOPS() float64
}

// readier is implemented by a system whose prompts run on a separate prefill instance
// (disaggregated serving): a queued request may join the decode batch only once its KV
// cache has arrived. arrive is called once when a request enters the queue and sets its
// ready time; a system that preempts a request sets a new one in release.
type readier interface {
	arrive(r *Request)
	tick(now Time) // the time the iteration about to be planned starts
}

// chunker is implemented by a system that runs prompts in chunks over several iterations
// (L3's adaptive chunking, §5.3): after plan, prefillDone reports whether a request's
// whole prompt has run; one that has not stays Prefilling, heads the next iteration's
// prefill list and produces no token yet.
type chunker interface {
	prefillDone(r *Request) bool
}

// decodeFetcher is implemented by a system that fetches an iteration's decoding requests
// itself (L3 §5.3 step 1: "as long as there is space in the host memory"): fetch returns
// those that decode this iteration, after admission; the others keep their KV cache and
// wait for the next iteration, generating nothing.
type decodeFetcher interface {
	fetch(decode []*Request) []*Request
}

// kvRefuser is implemented by a system whose admission may leave a candidate waiting for a
// reason other than KV capacity: kvRefused reports whether the last admit left one waiting
// because its KV cache did not fit. Every other system refuses a candidate only for that.
type kvRefuser interface {
	kvRefused() bool
}

// systems maps each system name to its planner's constructor; each planner's file
// registers itself.
var systems = map[string]func(*Config) (system, error){}

func register(name string, mk func(*Config) (system, error)) { systems[name] = mk }

// Systems lists the system names a Config may use.
func Systems() []string {
	out := make([]string, 0, len(systems))
	for n := range systems {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Engine steps a system one decode iteration at a time.
type Engine struct {
	cfg      Config
	sys      system // nil once the run has ended: its state is no longer needed
	utilKeys []string
	tp, pp   int     // the model's split, which the system may choose (splitter)
	peak     float64 // dense FLOP peak for flop_utilization, 0 for a system without one
	gen      *generator
	ppMul    Time // iteration time × pipeline stages = time between a request's tokens

	now        Time
	step       int
	created    int
	nextReq    *Request // the next request not yet arrived
	queue      []*Request
	running    []*Request
	done       int
	recent     []RequestRow // last completed requests, newest last
	err        error
	history    []*packedSnap
	histBytes  int // memory the history holds
	pk         packer
	freed      *Snapshot // released by the caller, its memory for the next iteration (Release)
	back       int
	last       *Snapshot // the newest iteration
	cur        *Snapshot // after Back, the iteration at the position replayed from
	stats      runStats
	spanHint   int
	bubbleHint int
	spare      *Schedule // reused when cfg.Recycle is set
	preempted  int
	checked    int  // requests New checked ahead for one that never fits
	peakBatch  int  // most requests admitted at once
	kvCapped   bool // admission once left a request waiting for KV space while the batch had room
	events     int  // admissions, retirements and preemptions so far: what ends a stretch
	jump       *stretch
	jumpRetry  int       // the step before which no stretch is sought again
	probeS     *Schedule // the schedule stretches are probed on
	sigs       [][]int32 // the probes' signatures, reused from one search for a stretch to the next
	nsig       int       // how many of sigs this search has used
	jumped     int       // iterations advanced by a stretch
}

// runStats accumulates the run's metrics after warm-up.
type runStats struct {
	iters, tokens, batchSum int
	time                    Time
	iter, tbt, ttft, e2e    hist
	queuePeak               int
	util, bubble            map[string]float64 // time-weighted sums
	cause                   map[string]Causes  // time-weighted sums of the idle fractions by cause
	imbalance               float64
	imbalanceN              int
	flops                   float64 // FLOPs of every op of the measured iterations
	kvPeakUsed              int
	kvPeakFrag, kvPeakUtil  float64
}

// ErrDone is returned by Step once every request has completed or the step limit is hit.
var ErrDone = errors.New("simulation finished")

// New builds an engine from cfg. It checks that the system can hold the model and that
// no request of the workload is too long to run alone in its empty memory (see
// UnfitError), so a run can never wait forever.
func New(cfg Config) (*Engine, error) {
	mk, ok := systems[cfg.System]
	if !ok {
		return nil, fmt.Errorf("unknown system %q (want one of %v)", cfg.System, Systems())
	}
	sys, err := mk(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Recycle && cfg.HistoryCap > 0 {
		return nil, errors.New("a recycling engine cannot keep history")
	}
	if cfg.Jump && cfg.HistoryCap > 0 {
		return nil, errors.New("a jumping engine cannot keep history: jumped iterations have no timeline")
	}
	if p := sys.pool(); p != nil {
		p.bare = cfg.Jump
	}
	w := &cfg.Workload
	if w.MaxBatch < 1 {
		return nil, fmt.Errorf("batch must be at least 1, got %d", w.MaxBatch)
	}
	if w.Trace != nil && (w.Requests <= 0 || w.Requests > len(w.Trace)) {
		w.Requests = len(w.Trace)
	}
	if w.Requests < 1 {
		return nil, fmt.Errorf("requests must be at least 1, got %d", w.Requests)
	}
	checked, err := checkRequests(sys, *w)
	if err != nil {
		return nil, err
	}
	seed := w.Seed
	e := &Engine{
		cfg:      cfg,
		sys:      sys,
		utilKeys: sys.utilKeys(),
		gen:      newGenerator(*w, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))),
		ppMul:    Time(max(1, cfg.PP)),
		checked:  checked,
	}
	e.tp, e.pp = max(1, cfg.TP), max(1, cfg.PP)
	if sp, ok := sys.(splitter); ok {
		e.tp, e.pp = sp.split()
	}
	if fp, ok := sys.(flopPeaker); ok {
		e.peak = fp.peakFLOPS()
	}
	e.stats.util = map[string]float64{}
	e.stats.bubble = map[string]float64{}
	e.stats.cause = map[string]Causes{}
	if err := e.refill(); err != nil {
		return nil, err
	}
	return e, nil
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// UtilKeys names the utilisation figures the system reports.
func (e *Engine) UtilKeys() []string { return e.utilKeys }

// Done reports whether the run has ended.
func (e *Engine) Done() bool {
	if e.back > 0 {
		return false
	}
	if e.err != nil {
		return true
	}
	if e.cfg.Workload.Steps > 0 && e.step >= e.cfg.Workload.Steps {
		return true
	}
	return e.done >= e.cfg.Workload.Requests
}

// Err is the error that stopped the run, if any.
func (e *Engine) Err() error { return e.err }

// Last is the most recent snapshot the caller has seen (nil before the first step).
func (e *Engine) Last() *Snapshot {
	if e.back > 0 {
		return e.cur
	}
	return e.last
}

// History returns the kept iterations without moving the position Back and Step replay
// from: the current one and, after Back, those ahead of it.
func (e *Engine) History() History { return History{slices.Clone(e.history)} }

// Back steps back one iteration in the history and returns that snapshot, or nil if the
// history holds nothing earlier.
func (e *Engine) Back() *Snapshot {
	if e.back+1 >= len(e.history) {
		return nil
	}
	e.back++
	e.cur = e.history[len(e.history)-1-e.back].unpack()
	return e.cur
}

// Step advances one decode iteration (with Config.Jump, possibly a stretch of them) and
// returns its snapshot. After Back it replays the history forward first. It returns
// ErrDone when the run has ended.
func (e *Engine) Step() (*Snapshot, error) {
	if e.back > 0 {
		e.back--
		e.cur = nil
		if e.back == 0 {
			return e.last, nil
		}
		e.cur = e.history[len(e.history)-1-e.back].unpack()
		return e.cur, nil
	}
	if e.Done() {
		if e.err != nil {
			return nil, e.err
		}
		return nil, ErrDone
	}
	snap, err := e.iterate()
	if err != nil {
		e.err = err
		e.sys = nil
		return nil, err
	}
	e.last = snap
	if e.cfg.HistoryCap > 0 {
		e.keep(snap)
	}
	if e.Done() {
		// The planner's state (a Hermes model's every neuron: tens of megabytes) goes
		// with the run; the snapshots, the history and the result stay.
		e.sys = nil
	}
	return snap, nil
}

// keep adds snap to the history, packed, and drops the oldest iterations beyond the
// history's cap or, all but the newest two, beyond its memory budget.
func (e *Engine) keep(snap *Snapshot) {
	p := e.pk.pack(snap)
	e.history = append(e.history, p)
	e.histBytes += p.bytes
	drop := 0
	for len(e.history)-drop > e.cfg.HistoryCap ||
		(e.cfg.HistoryBytes > 0 && e.histBytes > e.cfg.HistoryBytes && len(e.history)-drop > 2) {
		e.histBytes -= e.history[drop].bytes
		drop++
	}
	if drop > 0 {
		n := copy(e.history, e.history[drop:])
		clear(e.history[n:])
		e.history = e.history[:n]
	}
}

// refill creates requests until the next one has not arrived yet or the workload is
// exhausted. Closed-loop requests all arrive at time 0, so the queue only ever needs as
// many as the batch can take; they are created lazily to keep memory flat. A request
// New did not check ahead is refused here if it can never fit.
func (e *Engine) refill() error {
	w := e.cfg.Workload
	for {
		if e.nextReq == nil && e.created < w.Requests {
			arr, in, out := e.gen.request()
			if w.Arrival != ArrivalPoisson && w.Trace == nil {
				arr = 0
			}
			if e.created >= e.checked {
				if err := unfit(e.sys, e.created+1, in, out, e.gen.window); err != nil {
					return err
				}
			}
			e.nextReq = &Request{ID: e.created + 1, InputLen: in, OutputLen: out, Arrival: arr, Loc: -1, window: e.gen.window}
			e.created++
		}
		if e.nextReq == nil || e.nextReq.Arrival > e.now {
			return nil
		}
		if w.Arrival == ArrivalClosed && w.Trace == nil && len(e.queue) >= w.MaxBatch {
			return nil
		}
		if rd, ok := e.sys.(readier); ok {
			rd.arrive(e.nextReq)
		}
		e.queue = append(e.queue, e.nextReq)
		e.nextReq = nil
	}
}

// waiting is how many arrived requests wait for a place in the batch. A closed loop's
// requests all arrive at time 0 but are created only as the batch can take them (refill),
// so those not created yet wait too.
func (e *Engine) waiting() int {
	n := len(e.queue)
	if w := e.cfg.Workload; w.Arrival == ArrivalClosed && w.Trace == nil {
		n += w.Requests - e.created
		if e.nextReq != nil {
			n++
		}
	}
	return n
}

// readyCands picks up to free queued requests whose KV cache has arrived, in queue order,
// and returns them with their queue positions. New requests become ready in arrival order
// (the prefill instance serves them first come, first served), so the scan stops at the
// first new request that is not ready; preempted requests at the head are skipped over.
func (e *Engine) readyCands(free int) ([]*Request, []int) {
	var cands []*Request
	var at []int
	for i, r := range e.queue {
		if len(cands) == free {
			break
		}
		if r.ready > e.now {
			if r.Generated == 0 {
				break
			}
			continue
		}
		cands = append(cands, r)
		at = append(at, i)
	}
	return cands, at
}

// iteration is what one decode iteration carries from admission to its snapshot.
type iteration struct {
	prefill, decode []*Request // prompts run and requests decoded this iteration
	kvStall         bool       // admission left an arrived request waiting for KV space
	s               *Schedule
	marks           []StageMark
	t               Time // the iteration's time
	tokens          int  // tokens generated
	measured        bool // past the warm-up, so it counts towards the run's metrics
}

// iterate runs one decode iteration: requests are admitted at its boundary, the planner
// schedules its work and time advances, finished requests retire, and the snapshot
// records what happened.
func (e *Engine) iterate() (*Snapshot, error) {
	it := &iteration{}
	if err := e.admit(it); err != nil {
		return nil, err
	}
	if snap, ok := e.leap(it); ok {
		return snap, nil
	}
	if err := e.advance(it); err != nil {
		return nil, err
	}
	e.retire(it)
	snap := e.observe(it)
	e.startStretch(it.kvStall)
	return snap, nil
}

// admit brings in the requests that have arrived and admits, at the iteration boundary
// (Orca iteration-level scheduling), as many as the batch and the KV memory take. Prompts
// a chunking system has not finished come first. It returns ErrDone when nothing is left
// to run.
func (e *Engine) admit(it *iteration) error {
	w := e.cfg.Workload
	if err := e.refill(); err != nil {
		return err
	}
	if len(e.running) == 0 && len(e.queue) == 0 && e.nextReq != nil {
		e.now = e.nextReq.Arrival
		if err := e.refill(); err != nil {
			return err
		}
	}
	_, disagg := e.sys.(readier)
	if disagg && len(e.running) == 0 && len(e.queue) > 0 {
		// Nothing decodes: wait for the first prompt's KV cache to arrive.
		first := e.queue[0].ready
		for _, r := range e.queue {
			first = min(first, r.ready)
		}
		if first > e.now {
			e.now = first
			if err := e.refill(); err != nil {
				return err
			}
		}
	}
	for _, r := range e.running {
		if r.Status == Prefilling {
			it.prefill = append(it.prefill, r)
		}
	}
	// kvStall: admission left an arrived request waiting for KV space while the batch had
	// room, so lanes that run nothing this iteration are capacity stalls.
	if free := w.MaxBatch - len(e.running); free > 0 && len(e.queue) > 0 {
		var cands []*Request
		var at []int // queue position of each candidate; nil: the first len(cands)
		if disagg {
			cands, at = e.readyCands(free)
		} else {
			cands = e.queue[:min(free, len(e.queue))]
		}
		placed := e.sys.admit(cands, e.running)
		if kr, ok := e.sys.(kvRefuser); ok {
			it.kvStall = kr.kvRefused()
		} else {
			it.kvStall = slices.Contains(placed, false)
		}
		// A batch kept full at its KV capacity admits nothing most iterations: the queue
		// then stays as it is.
		if slices.Contains(placed, true) {
			admitted := func(i int) bool { return i < len(cands) && placed[i] }
			if at != nil {
				pos := make(map[int]bool, len(at))
				for j, i := range at {
					pos[i] = placed[j]
				}
				admitted = func(i int) bool { return pos[i] }
			}
			// Queue positions: the first request admitted, and just past the last
			// candidate. The requests before the first keep their places, and those from
			// the end on move up together.
			first, end := slices.Index(placed, true), len(cands)
			if at != nil {
				first, end = at[first], at[len(at)-1]+1
			}
			kept := e.queue[:first]
			for i := first; i < end; i++ {
				r := e.queue[i]
				if admitted(i) {
					r.Admitted = e.now
					if w.Prefill == PrefillRun {
						r.Status = Prefilling
						it.prefill = append(it.prefill, r)
					} else {
						r.Status = Running
						r.prefilled = true
					}
					e.running = append(e.running, r)
					e.events++
					continue
				}
				kept = append(kept, r)
			}
			kept = append(kept, e.queue[end:]...)
			clear(e.queue[len(kept):])
			e.queue = kept
		}
	}
	e.kvCapped = e.kvCapped || it.kvStall
	e.peakBatch = max(e.peakBatch, len(e.running))
	e.stats.queuePeak = max(e.stats.queuePeak, e.waiting())
	if len(e.running) == 0 {
		if len(e.queue) > 0 {
			r := e.queue[0]
			return fmt.Errorf("request %d (input %d, output %d tokens) does not fit in the empty KV cache; lower the lengths or use more memory", r.ID, r.InputLen, r.OutputLen)
		}
		return ErrDone
	}
	return nil
}

// advance has the planner schedule the iteration's prompts and decodes on its lanes and
// moves the clock on by the schedule's makespan.
func (e *Engine) advance(it *iteration) error {
	it.decode = make([]*Request, 0, len(e.running))
	for _, r := range e.running {
		if r.Status == Running {
			it.decode = append(it.decode, r)
		}
	}
	if f, ok := e.sys.(decodeFetcher); ok {
		it.decode = f.fetch(it.decode)
	}
	if e.cfg.Recycle && e.spare != nil {
		it.s = e.spare
		it.s.Reset(e.sys.lanes())
	} else if s := e.reclaim(e.sys.lanes()); s != nil {
		it.s = s
	} else {
		it.s = NewSchedule(e.sys.lanes(), e.spanHint, e.bubbleHint)
		if e.cfg.Recycle {
			e.spare = it.s
		}
	}
	if rd, ok := e.sys.(readier); ok {
		rd.tick(e.now)
	}
	it.marks = e.sys.plan(it.s, it.decode, it.prefill)
	it.s.kvStall = it.kvStall
	it.t = it.s.Finish()
	e.spanHint, e.bubbleHint = len(it.s.Spans), len(it.s.Bubbles)
	if it.t <= 0 {
		return errors.New("internal error: an iteration with work took no time")
	}
	e.now += it.t
	e.step++
	it.measured = e.step > e.cfg.Workload.Warmup
	return nil
}

// retire gives each request its token (a prompt a chunking system has not finished gives
// none yet), completes the requests that have all their tokens, releasing their KV
// cache, and grows the others' KV cache for their next token.
func (e *Engine) retire(it *iteration) {
	token := func(r *Request) {
		r.Generated++
		it.tokens++
		if r.Generated == 1 {
			r.FirstToken = e.now
			if it.measured {
				e.stats.ttft.add(r.FirstToken-r.Arrival, 1)
			}
		}
		r.LastToken = e.now
	}
	ch, chunked := e.sys.(chunker)
	for _, r := range it.prefill {
		if chunked && !ch.prefillDone(r) {
			continue
		}
		r.prefilled = true
		r.Status = Running
		token(r)
	}
	for _, r := range it.decode {
		token(r)
	}
	if it.measured && len(it.decode) > 0 {
		e.stats.tbt.add(it.t*e.ppMul, len(it.decode))
	}
	still := e.running[:0]
	for _, r := range e.running {
		if r.Generated >= r.OutputLen {
			r.Status = Done
			r.Finished = e.now
			if it.measured {
				e.stats.e2e.add(r.Finished-r.Arrival, 1)
			}
			e.sys.release(r)
			e.done++
			e.events++
			e.recent = append(e.recent, r.row())
			if len(e.recent) > 16 {
				e.recent = slices.Delete(e.recent, 0, len(e.recent)-16)
			}
			continue
		}
		still = append(still, r)
	}
	clear(e.running[len(still):])
	e.running = still
	e.growAll()
}

// observe builds the iteration's snapshot, with the planner filling in what its hardware
// looked like, and adds a measured iteration to the run's metrics.
func (e *Engine) observe(it *iteration) *Snapshot {
	w, s, iterT := e.cfg.Workload, it.s, it.t
	snap := &Snapshot{
		System: e.cfg.System, Step: e.step, Now: e.now, IterTime: iterT, Batch: len(it.decode), Prefills: len(it.prefill),
		Queue: e.waiting(), Tokens: it.tokens, Done: e.done, Total: w.Requests,
		Timeline: Timeline{Lanes: s.Lanes, Spans: s.Spans, Bubbles: s.Bubbles, Critical: s.Critical, Makespan: iterT, Layers: e.sys.layers(), Stages: it.marks},
		Neurons:  Neurons{Reason: "This system keeps every FFN neuron on one device: it has no activation sparsity and no hot/cold neuron placement, so there is no neuron partition to show."},
	}
	snap.Metrics.IterTime = iterT
	snap.Metrics.StepTokPerSec = float64(it.tokens) / iterT.Seconds()
	snap.Metrics.Util = map[string]float64{}
	snap.Metrics.Bubble = bubbleByGroup(s, iterT)
	snap.Metrics.BubbleCause, snap.Metrics.BubbleShare, snap.Metrics.ShareByCause = bubbleForensics(s, iterT)
	e.sys.observe(snap, s, e.running)
	if !e.cfg.Jump {
		snap.Requests = e.requestRows()
	}

	if it.measured {
		st := &e.stats
		st.iters++
		st.tokens += it.tokens
		st.batchSum += len(it.decode) + len(it.prefill)
		st.time += iterT
		st.iter.add(iterT, 1)
		// Summed in a local, in the spans' order as before: the run's sum, written back at
		// every span, made each addition wait for the last one's store.
		flops := st.flops
		for i := range s.Spans {
			// Most spans (transfers, PIM reads) do no FLOPs; adding 0 would leave the sum as it is.
			if f := s.Spans[i].FLOPs; f != 0 {
				flops += f
			}
		}
		st.flops = flops
		for k, v := range snap.Metrics.Util {
			st.util[k] += v * float64(iterT)
		}
		for k, v := range snap.Metrics.Bubble {
			st.bubble[k] += v * float64(iterT)
		}
		for k, v := range snap.Metrics.BubbleCause {
			c := st.cause[k]
			for i := range c {
				c[i] += v[i] * float64(iterT)
			}
			st.cause[k] = c
		}
		if snap.Metrics.LoadImbalance > 0 {
			st.imbalance += snap.Metrics.LoadImbalance
			st.imbalanceN++
		}
		if snap.KV.Used > st.kvPeakUsed {
			st.kvPeakUsed = snap.KV.Used
		}
		st.kvPeakFrag = max(st.kvPeakFrag, snap.KV.Fragmentation)
		st.kvPeakUtil = max(st.kvPeakUtil, snap.Metrics.KVUtil)
	}
	if e.stats.time > 0 {
		snap.Metrics.Throughput = float64(e.stats.tokens) / e.stats.time.Seconds()
	}
	return snap
}

// growAll gives every running request the KV blocks its new token needs. Where a location
// is full (paged policy) the most recently admitted request there is preempted, as vLLM
// does: its blocks are freed and it goes back to the head of the queue, to be admitted
// again with its generated tokens recomputed.
func (e *Engine) growAll() {
	var back []*Request
	for _, r := range e.running {
		for r.Status == Running && !e.sys.grow(r) {
			v := r
			for _, c := range e.running {
				if c != r && c.Status == Running && c.Loc == r.Loc &&
					(c.Admitted > v.Admitted || (c.Admitted == v.Admitted && c.ID > v.ID) || v == r) {
					v = c
				}
			}
			e.sys.release(v)
			v.Status, v.Loc, v.prefilled = Waiting, -1, false
			e.preempted++
			e.events++
			back = append(back, v)
		}
	}
	if len(back) == 0 {
		return
	}
	still := e.running[:0]
	for _, r := range e.running {
		if r.Status != Waiting {
			still = append(still, r)
		}
	}
	clear(e.running[len(still):])
	e.running = still
	slices.SortFunc(back, func(a, b *Request) int { return a.ID - b.ID })
	e.queue = append(back, e.queue...)
}

// bubbleByGroup is the idle fraction of each lane group over the iteration.
func bubbleByGroup(s *Schedule, t Time) map[string]float64 {
	busy := s.Busy()
	sum := map[string]Time{}
	n := map[string]int{}
	for i, l := range s.Lanes {
		sum[l.Group] += busy[i]
		n[l.Group]++
	}
	out := make(map[string]float64, len(sum))
	for g, b := range sum {
		out[g] = 1 - float64(b)/(float64(n[g])*float64(t))
	}
	return out
}

// requestRows is the request pool table: running requests, the head of the queue and the
// most recently completed ones.
func (e *Engine) requestRows() []RequestRow {
	rows := make([]RequestRow, 0, len(e.running)+min(len(e.queue), 32)+len(e.recent))
	for _, r := range e.running {
		rows = append(rows, r.row())
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	for _, r := range e.queue[:min(len(e.queue), 32)] {
		rows = append(rows, r.row())
	}
	for i := len(e.recent) - 1; i >= 0; i-- {
		rows = append(rows, e.recent[i])
	}
	return rows
}

// StepTo steps until the next Step returns iteration n: the explorer opens a preset where
// its regime of interest begins (Config.OpenAt). The iterations stepped over stay in the
// history; when the run ends before n, the next Step replays its last iteration from the
// history.
func (e *Engine) StepTo(n int) error {
	for e.step < n-1 {
		if _, err := e.Step(); err != nil {
			return err
		}
		if e.Done() {
			e.Back()
			return nil
		}
	}
	return nil
}
