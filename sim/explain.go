package sim

// The difference explainer: why side B's iterations take longer (or shorter) than side
// A's, in three answers.
//
//   - What differs in the configuration: the keys whose values differ after a preset's
//     extends and the overrides are resolved, each with its meaning. Only the caller knows
//     the keys, so it hands them over (Setting, Contrast).
//   - Where the time goes. An iteration is as long as its critical path (Schedule.Finish):
//     a chain of spans, each starting when the one before it ends, the last ending the
//     iteration. Its time therefore splits exactly into the durations of those spans, and
//     the spans group by lane group and operation kind; B − A splits the same way, part by
//     part. Each lane group's lane-time splits exactly too, into busy time and idle time by
//     bubble cause (BubbleCause), so the change of each cause is part of the change of the
//     group's time.
//   - Which switch explains how much. When both sides run one planner, the configurations
//     between them, A with some of the differing keys at B's values, run over the same
//     window; the difference is split among the switches by the Shapley value (Shapley,
//     "A value for n-person games", 1953): each switch's mean marginal effect over the
//     orders of turning them A → B. Two orders, one and its reverse, give every order of
//     two switches and an even-handed estimate for three; beyond three only each switch's
//     effect alone is given, with what it leaves unexplained.
//
// Everything here reads the generic schedule (lanes, groups, span names, the critical
// path, bubbles), never a family's cost model, so it holds however a planner prices its
// operations; an operation whose name the kinds table does not know is "other".

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Operation kinds, in the words the explainer speaks.
const (
	KindQKV        = "QKV GEMM"
	KindAttention  = "attention"
	KindSoftmax    = "softmax"
	KindProjection = "projection"
	KindProjFFN    = "projection + FFN" // one op for both (L3's Proj+FF, LoL-PIM's GPU)
	KindFFN        = "FFN"
	KindNorm       = "norm"
	KindLMHead     = "LM head"
	KindCollective = "collective"
	KindTransfer   = "transfer"
	KindTraffic    = "memory traffic" // another unit's reads through a memory that computes (blocked PIM)
	KindNeuron     = "neuron work"    // predicting, promoting, remapping, gathering sparse neurons
	KindPrefill    = "prefill"
	KindOther      = "other"
	// KindWait is critical-path time no span covers: the path's first span started on its
	// own clock (Schedule.AddAt), after the iteration began.
	KindWait = "wait"
)

// opKinds is the one table from an operation to its kind: the first rule one of whose
// words the operation's name holds (case aside) gives it. A word with a separator in it
// matches anywhere in the name, any other word only as a whole word of it. Rules marked
// compute apply only to a lane that computes; an operation on a lane that moves data
// (Lane.Transfer) is a collective or a transfer, unless an earlier rule took it.
var opKinds = []struct {
	kind    string
	compute bool
	words   []string
}{
	{KindPrefill, false, []string{"prefill"}},
	{KindNeuron, false, []string{"predictor", "promote", "remap", "reload", "gather"}},
	{KindLMHead, false, []string{"lm head"}},
	{KindSoftmax, false, []string{"softmax"}},
	{KindQKV, true, []string{"qkv", "q_proj", "k_proj", "v_proj", "gen"}},
	{KindAttention, true, []string{"mha", "dmha", "pmha", "attention", "attend", "logit", "qkᵀ", "sv", "p·v"}},
	{KindProjFFN, true, []string{"proj+ff"}},
	{KindProjection, true, []string{"proj", "out_proj", "o fc"}},
	{KindFFN, true, []string{"ffn", "ffn1", "ffn2", "fc1", "fc2", "mlp", "gelu", "act"}},
	{KindNorm, true, []string{"norm", "ln1", "ln2", "resid"}},
	{KindCollective, false, []string{"all-reduce", "all-reduces", "all-gather", "merge", "ar", "t1/t2"}},
	{KindTransfer, true, []string{"kv in"}},
	{KindTraffic, true, []string{"traffic"}},
}

// OpKind is the kind of the operation name on lane l (see opKinds).
func OpKind(l Lane, name string) string {
	low := strings.ToLower(name)
	words := strings.FieldsFunc(low, func(r rune) bool { return strings.ContainsRune(" ·/+,()#", r) })
	has := func(w string) bool {
		if strings.ContainsAny(w, " ·/+,") {
			return strings.Contains(low, w)
		}
		return slices.Contains(words, w)
	}
	for _, r := range opKinds {
		if r.compute && l.Transfer {
			continue
		}
		if slices.ContainsFunc(r.words, has) {
			return r.kind
		}
	}
	if l.Transfer {
		return KindTransfer
	}
	return KindOther
}

// Setting is a configuration key whose value differs between side A and side B.
type Setting struct {
	Key     string `json:"key"`
	A       string `json:"a"`
	B       string `json:"b"`
	Meaning string `json:"meaning"`
}

// Contrast is what the explainer is told of two sides' configurations: the keys that
// differ and, when both run one planner, how to build the configurations between them.
type Contrast struct {
	Settings []Setting
	// Toggle builds side A's configuration with the settings marked in on (indexed as
	// Settings) at side B's values; nil when no path of switches leads from A to B.
	Toggle func(on []bool) (Config, error)
	// Note says why Toggle is nil.
	Note string
}

// Breakdown is one side's iterations over a window of steps: their times, where their
// critical paths spent them, and where each lane group's lane-time went. Add takes the
// steps in order; the zero value is an empty window.
type Breakdown struct {
	From, To int  // the first and the last step added
	Steps    int  // steps added
	Total    Time // their iteration times, summed
	Last     Time // the last step's iteration time

	path   []pathTime           // critical-path time by lane group and kind, in the order first seen
	groups map[string]*laneTime // each lane group's time per lane
	order  []string             // lane groups in the order first seen
	// index finds an operation's entry in path from its name and lane, for the lanes it
	// was built on: the same few names recur on the critical path step after step.
	index map[laneOp]int
	lanes []Lane
	of    []int  // scratch: each lane's group, this step
	lane  []Time // scratch: busy and idle time of each group, this step
}

type pathTime struct {
	group, kind string
	t           Time
}

type laneOp struct {
	name string
	lane int
}

// laneTime is a lane group's time per lane, summed over the steps it had lanes in.
type laneTime struct {
	lanes int
	busy  float64
	idle  [NumCauses]float64
}

// Add adds s, the next step of the window. A span or bubble counts only inside the
// iteration, [0, s.IterTime): work on its own clock may run past its end.
func (b *Breakdown) Add(s *Snapshot) {
	if b.groups == nil {
		b.groups, b.index = map[string]*laneTime{}, map[laneOp]int{}
	}
	if b.Steps == 0 {
		b.From = s.Step
	}
	t := s.IterTime
	b.To, b.Steps, b.Total, b.Last = s.Step, b.Steps+1, b.Total+t, t
	tl := &s.Timeline
	if !slices.Equal(b.lanes, tl.Lanes) {
		clear(b.index)
		b.lanes = slices.Clone(tl.Lanes)
	}

	// The critical path covers [0, t) span after span; what no span covers is waiting.
	at, wait := Time(0), Time(0)
	for _, i := range tl.Critical {
		sp := &tl.Spans[i]
		start := min(max(sp.Start, at), t)
		end := min(max(sp.End(), start), t)
		wait += start - at
		b.path[b.part(sp)].t += end - start
		at = end
	}
	if wait += t - at; wait > 0 {
		b.path[b.entry(pathTime{kind: KindWait})].t += wait
	}

	// Every lane is busy or idle (with a cause) at every instant of the iteration.
	b.of = b.of[:0]
	var groups []string
	for _, l := range tl.Lanes {
		g := slices.Index(groups, l.Group)
		if g < 0 {
			g, groups = len(groups), append(groups, l.Group)
		}
		b.of = append(b.of, g)
	}
	per := int(NumCauses) + 1 // busy, then each cause
	b.lane = append(b.lane[:0], make([]Time, per*len(groups))...)
	clip := func(start, dur Time) Time { return max(0, min(start+dur, t)-min(start, t)) }
	for i := range tl.Spans {
		sp := &tl.Spans[i]
		b.lane[per*b.of[sp.Lane]] += clip(sp.Start, sp.Dur)
	}
	for _, bu := range tl.Bubbles {
		b.lane[per*b.of[bu.Lane]+1+int(bu.Cause)] += clip(bu.Start, bu.Dur)
	}
	for g, name := range groups {
		lt := b.groups[name]
		if lt == nil {
			lt = &laneTime{}
			b.groups[name] = lt
			b.order = append(b.order, name)
		}
		n := 0
		for _, o := range b.of {
			if o == g {
				n++
			}
		}
		lt.lanes = n
		lt.busy += float64(b.lane[per*g]) / float64(n)
		for c := range NumCauses {
			lt.idle[c] += float64(b.lane[per*g+1+int(c)]) / float64(n)
		}
	}
}

// part is the index in b.path of span sp's lane group and kind.
func (b *Breakdown) part(sp *Span) int {
	k := laneOp{sp.Name, sp.Lane}
	i, ok := b.index[k]
	if !ok {
		l := b.lanes[sp.Lane]
		i = b.entry(pathTime{group: l.Group, kind: OpKind(l, sp.Name)})
		b.index[k] = i
	}
	return i
}

// entry is the index in b.path of p's lane group and kind, added if new.
func (b *Breakdown) entry(p pathTime) int {
	i := slices.IndexFunc(b.path, func(q pathTime) bool { return q.group == p.group && q.kind == p.kind })
	if i < 0 {
		i, b.path = len(b.path), append(b.path, p)
	}
	return i
}

// Mean is the mean iteration time over the window in milliseconds.
func (b *Breakdown) Mean() float64 {
	if b.Steps == 0 {
		return 0
	}
	return b.Total.Milliseconds() / float64(b.Steps)
}

// Why explains side B against side A over a window of steps. Its figures are means per
// iteration in milliseconds; each part's delta is B − A.
type Why struct {
	// Side is the letter of the side explained against A: B unless set (SetSide).
	Side    string  `json:"side"`
	From    int     `json:"from_step"`
	To      int     `json:"to_step"`
	Steps   int     `json:"steps"`
	AMS     float64 `json:"a_ms"`
	BMS     float64 `json:"b_ms"`
	DeltaMS float64 `json:"delta_ms"`
	Ratio   float64 `json:"ratio"` // B / A
	// Summary says it in a sentence: the three largest parts, and the switches.
	Summary  string    `json:"summary"`
	Settings []Setting `json:"settings"`
	// Path is the critical path's time by lane group and operation kind, largest change
	// first; its deltas sum to DeltaMS.
	Path []PathPart `json:"critical_path"`
	// Groups is each lane group's time per lane, busy and idle by cause; for a group both
	// sides have in every step, busy and idle sum to the iteration time on each side, so
	// their deltas sum to DeltaMS.
	Groups      []GroupPart  `json:"lane_groups"`
	Attribution *Attribution `json:"attribution"`
}

// Change is a figure on both sides, in milliseconds per iteration.
type Change struct {
	AMS     float64 `json:"a_ms"`
	BMS     float64 `json:"b_ms"`
	DeltaMS float64 `json:"delta_ms"`
}

func change(a, b float64) Change { return Change{a, b, b - a} }

// PathPart is the critical path's time in one lane group on one kind of operation.
type PathPart struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Change
}

// Label names the part: "attention on pim".
func (p PathPart) Label() string {
	if p.Kind == KindWait {
		return "waiting before the critical path starts"
	}
	return p.Kind + " on " + p.Group
}

// GroupPart is a lane group's time per lane: busy, and idle by cause (the causes either
// side has).
type GroupPart struct {
	Group  string        `json:"group"`
	ALanes int           `json:"a_lanes"`
	BLanes int           `json:"b_lanes"`
	Busy   Change        `json:"busy"`
	Idle   []CauseChange `json:"idle"`
}

// CauseChange is a lane group's idle time of one cause, per lane.
type CauseChange struct {
	Cause string `json:"cause"`
	Change
}

// Attribution splits the difference among the switches that lead from A to B.
type Attribution struct {
	// Method: "shapley" (one or two switches: every order), "two_order_shapley" (three:
	// the order of the settings and its reverse), "single_switch" (more than three: each
	// switch turned alone on A), or "none".
	Method   string        `json:"method"`
	Note     string        `json:"note"`
	Switches []SwitchShare `json:"switches"`
	// InteractionMS is what the switches' effects leave of the difference: 0 for a
	// Shapley split, which sums to it.
	InteractionMS float64 `json:"interaction_ms"`
	Runs          int     `json:"runs"` // configurations run besides A and B
}

// SwitchShare is one switch's part of the difference: its mean marginal effect in
// milliseconds per iteration, and that as a share of the difference.
type SwitchShare struct {
	Key     string  `json:"key"`
	A       string  `json:"a"`
	B       string  `json:"b"`
	DeltaMS float64 `json:"delta_ms"`
	Share   float64 `json:"share"`
}

// Attribution methods.
const (
	MethodShapley  = "shapley"
	MethodTwoOrder = "two_order_shapley"
	MethodSingle   = "single_switch"
	MethodNone     = "none"
)

// Explain compares a and b, the breakdowns of sides A and B over one window.
func Explain(a, b *Breakdown, settings []Setting) *Why {
	w := &Why{Side: "B", From: max(a.From, b.From), To: min(a.To, b.To), Steps: min(a.Steps, b.Steps), AMS: a.Mean(), BMS: b.Mean(),
		Settings: slices.Clip(append([]Setting{}, settings...)), Path: []PathPart{}, Groups: []GroupPart{}}
	w.DeltaMS = w.BMS - w.AMS
	if w.AMS > 0 {
		w.Ratio = w.BMS / w.AMS
	}
	mean := func(x *Breakdown, group, kind string) float64 {
		i := slices.IndexFunc(x.path, func(q pathTime) bool { return q.group == group && q.kind == kind })
		if i < 0 || x.Steps == 0 {
			return 0
		}
		return x.path[i].t.Milliseconds() / float64(x.Steps)
	}
	for _, x := range []*Breakdown{a, b} {
		for _, k := range x.path {
			if slices.ContainsFunc(w.Path, func(p PathPart) bool { return p.Group == k.group && p.Kind == k.kind }) {
				continue
			}
			if p := (PathPart{k.group, k.kind, change(mean(a, k.group, k.kind), mean(b, k.group, k.kind))}); p.AMS != 0 || p.BMS != 0 {
				w.Path = append(w.Path, p)
			}
		}
	}
	slices.SortFunc(w.Path, func(p, q PathPart) int {
		if d := math.Abs(q.DeltaMS) - math.Abs(p.DeltaMS); d != 0 {
			return sign(d)
		}
		if d := q.BMS + q.AMS - p.BMS - p.AMS; d != 0 {
			return sign(d)
		}
		return strings.Compare(p.Label(), q.Label())
	})

	order := slices.Clone(a.order)
	for _, g := range b.order {
		if !slices.Contains(order, g) {
			order = append(order, g)
		}
	}
	perStep := func(x *Breakdown, v float64) float64 { return v / float64(Millisecond) / float64(max(1, x.Steps)) }
	for _, g := range order {
		p := GroupPart{Group: g, Idle: []CauseChange{}}
		var la, lb laneTime
		if x := a.groups[g]; x != nil {
			la, p.ALanes = *x, x.lanes
		}
		if x := b.groups[g]; x != nil {
			lb, p.BLanes = *x, x.lanes
		}
		p.Busy = change(perStep(a, la.busy), perStep(b, lb.busy))
		for c := range NumCauses {
			if la.idle[c] != 0 || lb.idle[c] != 0 {
				p.Idle = append(p.Idle, CauseChange{c.String(), change(perStep(a, la.idle[c]), perStep(b, lb.idle[c]))})
			}
		}
		w.Groups = append(w.Groups, p)
	}
	w.summarize()
	return w
}

func sign(x float64) int {
	if x < 0 {
		return -1
	}
	return 1
}

// SetSide names the side explained against A ("C" of a third side) and says it in the
// summary.
func (w *Why) SetSide(letter string) {
	w.Side = letter
	w.summarize()
}

// SetAttribution attaches the switch attribution and says it in the summary.
func (w *Why) SetAttribution(a *Attribution) {
	w.Attribution = a
	w.summarize()
}

// summarize writes the summary: how much slower or faster B is, the three largest parts
// of the critical path's change, and what the switches account for.
func (w *Why) summarize() {
	var s strings.Builder
	switch {
	case w.Steps == 0:
		w.Summary = "no step both sides ran"
		return
	case w.DeltaMS == 0:
		fmt.Fprintf(&s, "%s takes as long as A per iteration", w.Side)
	case w.DeltaMS > 0:
		fmt.Fprintf(&s, "%s is %.2f× slower, %s per iteration", w.Side, w.Ratio, SignedMS(w.DeltaMS))
	default:
		fmt.Fprintf(&s, "%s is %.2f× faster, %s per iteration", w.Side, 1/w.Ratio, SignedMS(w.DeltaMS))
	}
	var top []string
	for _, p := range w.largest() {
		if len(top) == 3 || p.DeltaMS == 0 {
			break
		}
		top = append(top, SignedMS(p.DeltaMS)+" "+p.Label())
	}
	if len(top) > 0 {
		s.WriteString(": on the critical path " + strings.Join(top, ", "))
	}
	s.WriteString(".")
	moves := func(sw SwitchShare) bool { return sw.DeltaMS != 0 }
	if a := w.Attribution; a != nil && slices.ContainsFunc(a.Switches, moves) {
		sws := slices.Clone(a.Switches)
		slices.SortStableFunc(sws, func(x, y SwitchShare) int { return cmp.Compare(math.Abs(y.DeltaMS), math.Abs(x.DeltaMS)) })
		var parts []string
		for k, sw := range sws {
			f := "%s %s → %s for %s"
			if k == 0 {
				f = "%s %s → %s accounts for %s"
			}
			parts = append(parts, fmt.Sprintf(f, sw.Key, sw.A, sw.B, SignedMS(sw.DeltaMS)))
		}
		if a.Method == MethodSingle {
			fmt.Fprintf(&s, " Turned alone on A, %s; %s is the switches' interplay.", strings.Join(parts, ", "), SignedMS(a.InteractionMS))
		} else {
			fmt.Fprintf(&s, " Of the %s, %s.", SignedMS(w.DeltaMS), strings.Join(parts, ", "))
		}
	}
	w.Summary = s.String()
}

// largest are the parts the summary names, largest change first: the critical path's
// parts, or, when the two paths share no lane group (different hardware), its parts by
// operation kind, each saying where it ran on A and on B ("attention on pim → gpu").
func (w *Why) largest() []PathPart {
	on := [2][]string{}
	for _, p := range w.Path {
		for i, v := range []float64{p.AMS, p.BMS} {
			if v != 0 && p.Kind != KindWait && !slices.Contains(on[i], p.Group) {
				on[i] = append(on[i], p.Group)
			}
		}
	}
	if slices.ContainsFunc(on[0], func(g string) bool { return slices.Contains(on[1], g) }) {
		return w.Path
	}
	var kinds []PathPart
	where := map[string][2][]string{}
	for _, p := range w.Path {
		i := slices.IndexFunc(kinds, func(k PathPart) bool { return k.Kind == p.Kind })
		if i < 0 {
			i, kinds = len(kinds), append(kinds, PathPart{Kind: p.Kind})
		}
		k := &kinds[i]
		k.AMS, k.BMS, k.DeltaMS = k.AMS+p.AMS, k.BMS+p.BMS, k.DeltaMS+p.DeltaMS
		g := where[p.Kind]
		for j, v := range []float64{p.AMS, p.BMS} {
			if v != 0 && !slices.Contains(g[j], p.Group) {
				g[j] = append(g[j], p.Group)
			}
		}
		where[p.Kind] = g
	}
	for i := range kinds {
		g := where[kinds[i].Kind]
		if kinds[i].Kind != KindWait {
			kinds[i].Group = cmp.Or(strings.Join(g[0], "+"), "–") + " → " + cmp.Or(strings.Join(g[1], "+"), "–")
		}
	}
	slices.SortStableFunc(kinds, func(p, q PathPart) int { return cmp.Compare(math.Abs(q.DeltaMS), math.Abs(p.DeltaMS)) })
	return kinds
}

// SignedMS writes a difference in milliseconds with its sign and a unit that keeps three
// significant digits: +1.6ms, -240µs, ±0.
func SignedMS(ms float64) string {
	switch t := Time(math.Round(ms * float64(Millisecond))); {
	case t == 0:
		return "±0"
	case t > 0:
		return "+" + t.String()
	default:
		return t.String()
	}
}

// The configurations an attribution runs, and how their times split the difference.
type attributionPlan struct {
	method string
	n      int
	runs   [][]bool // the configurations between A and B, by the settings they switch
}

// plan lists the configurations the attribution of c needs besides A and B.
func (c *Contrast) plan() attributionPlan {
	n := len(c.Settings)
	p := attributionPlan{n: n}
	switch {
	case c.Toggle == nil || n == 0:
		p.method = MethodNone
	case n <= 2:
		p.method = MethodShapley
	case n == 3:
		p.method = MethodTwoOrder
	default:
		p.method = MethodSingle
	}
	on := func(f func(i int) bool) []bool {
		v := make([]bool, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	switch p.method {
	case MethodShapley, MethodTwoOrder:
		// The order of the settings and its reverse: the first k switches, the last k.
		for k := 1; k < n; k++ {
			p.runs = append(p.runs, on(func(i int) bool { return i < k }))
		}
		for k := 1; k < n; k++ {
			run := on(func(i int) bool { return i >= n-k })
			if !slices.ContainsFunc(p.runs, func(r []bool) bool { return slices.Equal(r, run) }) {
				p.runs = append(p.runs, run)
			}
		}
	case MethodSingle:
		for k := range n {
			p.runs = append(p.runs, on(func(i int) bool { return i == k }))
		}
	}
	return p
}

// split divides tb − ta among the switches, given t, each planned run's time.
func (p attributionPlan) split(c *Contrast, ta, tb float64, t []float64) *Attribution {
	a := &Attribution{Method: p.method, Runs: len(p.runs)}
	at := func(in func(i int) bool) float64 {
		on := make([]bool, p.n)
		all, none := true, true
		for i := range on {
			on[i] = in(i)
			all, none = all && on[i], none && !on[i]
		}
		switch {
		case none:
			return ta
		case all:
			return tb
		}
		return t[slices.IndexFunc(p.runs, func(r []bool) bool { return slices.Equal(r, on) })]
	}
	effects := make([]float64, p.n)
	switch p.method {
	case MethodShapley, MethodTwoOrder:
		switch p.n {
		case 1:
			a.Note = "one switch: it makes the whole difference"
		case 2:
			a.Note = "each switch's mean effect over turning the switches from A's values to B's in the order listed and in the reverse order: the Shapley value, every order"
		default:
			a.Note = "each switch's mean effect over turning the switches from A's values to B's in the order listed and in the reverse order: the Shapley value over those two of the six orders"
		}
		for i := range p.n {
			fwd := at(func(j int) bool { return j <= i }) - at(func(j int) bool { return j < i })
			rev := at(func(j int) bool { return j >= i }) - at(func(j int) bool { return j > i })
			effects[i] = (fwd + rev) / 2
		}
	case MethodSingle:
		a.Note = fmt.Sprintf("%d switches: each turned alone from A's value to B's; the effects need not sum to the difference", p.n)
		for i := range p.n {
			effects[i] = t[i] - ta
		}
	}
	d, sum := tb-ta, 0.0
	for i, e := range effects {
		s := SwitchShare{Key: c.Settings[i].Key, A: c.Settings[i].A, B: c.Settings[i].B, DeltaMS: e}
		if d != 0 {
			s.Share = e / d
		}
		a.Switches = append(a.Switches, s)
		sum += e
	}
	if p.method == MethodSingle {
		a.InteractionMS = d - sum
	}
	return a
}

// noAttribution is the attribution there is not, and why.
func noAttribution(note string) *Attribution {
	return &Attribution{Method: MethodNone, Note: note, Switches: []SwitchShare{}}
}

// runWindow runs cfg to step to and returns its breakdown over steps from–to: with
// timeline, every step's schedule is read; without, only the times. Each step run adds
// one to done.
//
// The engine may jump (Config.Jump) either way: a jumping engine lays out the iterations
// it steps as a stepping one does, with less bookkeeping besides, so a timeline run takes
// the schedules of the steps it is given; should it leap over one, the run starts again
// stepping every iteration.
func runWindow(ctx context.Context, cfg Config, from, to int, timeline bool, done *atomic.Int64) (*Breakdown, error) {
	b, err := runWindowOnce(ctx, cfg, from, to, timeline, true, done)
	if errors.Is(err, errLeapt) {
		return runWindowOnce(ctx, cfg, from, to, timeline, false, done)
	}
	return b, err
}

// errLeapt says an engine leapt over steps whose schedules a timeline run reads.
var errLeapt = errors.New("leapt over a step")

func runWindowOnce(ctx context.Context, cfg Config, from, to int, timeline, jump bool, done *atomic.Int64) (*Breakdown, error) {
	cfg.HistoryCap, cfg.HistoryBytes, cfg.Recycle, cfg.Jump = 0, 0, true, jump
	w := &cfg.Workload
	if w.Steps == 0 || w.Steps > to {
		w.Steps = to
	}
	if !timeline {
		w.Warmup = from - 1 // the run's measured iterations are the window
	}
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	b := &Breakdown{}
	var last *Snapshot
	for prev := 0; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := e.Step()
		if errors.Is(err, ErrDone) {
			break
		}
		if err != nil {
			return nil, err
		}
		done.Add(int64(s.Step - prev))
		if timeline && s.Step >= from {
			if s.Step != prev+1 || len(s.Timeline.Lanes) == 0 {
				return nil, errLeapt
			}
			b.Add(s)
		}
		prev, last = s.Step, s
	}
	if !timeline && e.stats.iters > 0 {
		b.From, b.To, b.Steps, b.Total = from, e.step, e.stats.iters, e.stats.time
		if last != nil && last.Step == e.step {
			b.Last = last.IterTime
		}
	}
	return b, nil
}

// windowJob is one run of a window: a configuration, and whether its timelines are read.
type windowJob struct {
	cfg      Config
	timeline bool
}

// runWindows runs the jobs over steps from–to, as many at once as there are cores, and
// returns each one's breakdown or error; each run is independent and deterministic, so
// the breakdowns do not depend on how many run together. progress (nil: none) hears the
// share done every tenth of a second.
func runWindows(ctx context.Context, jobs []windowJob, from, to int, progress func(float64)) ([]*Breakdown, []error) {
	out := make([]*Breakdown, len(jobs))
	errs := make([]error, len(jobs))
	var done atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(jobs), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				out[i], errs[i] = runWindow(ctx, jobs[i].cfg, from, to, jobs[i].timeline, &done)
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	total := float64(len(jobs) * max(1, to))
	for waiting := true; waiting; {
		select {
		case <-finished:
			waiting = false
		case <-tick.C:
			if progress != nil {
				progress(min(1, float64(done.Load())/total))
			}
		}
	}
	return out, errs
}

// runsFor builds the configurations of plan p, or says why it cannot.
func (c *Contrast) runsFor(p attributionPlan) ([]Config, error) {
	var cfgs []Config
	for i, on := range p.runs {
		cfg, err := c.Toggle(on)
		if err != nil {
			return nil, fmt.Errorf("A with %s does not build: %w", p.switched(c, i), err)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs, nil
}

// ExplainRuns explains side B against side A over steps from–to of their runs (a and b
// serve the same requests): both run reading every step's schedule, and the
// configurations between them (c.Toggle) reading only their times, all at once on the
// machine's cores. progress (nil: none) hears the share of the steps run.
func ExplainRuns(ctx context.Context, a, b Config, c *Contrast, from, to int, progress func(float64)) (*Why, error) {
	p := c.plan()
	jobs := []windowJob{{a, true}, {b, true}}
	cfgs, failed := c.runsFor(p)
	for _, cfg := range cfgs {
		jobs = append(jobs, windowJob{cfg, false})
	}
	bds, errs := runWindows(ctx, jobs, from, to, progress)
	if err := errors.Join(errs[:2]...); err != nil {
		return nil, err
	}
	if failed == nil {
		failed = p.failed(c, errs[2:])
	}
	w := Explain(bds[0], bds[1], c.Settings)
	w.SetAttribution(c.attribute(p, failed, bds[0], bds[1], bds[2:], (*Breakdown).Mean))
	return w, nil
}

// Attribute runs the configurations between A and B (c.Toggle) to the end of the window
// of a and b, the breakdowns of sides A and B over one window, and splits their
// difference among the switches: over the window, and for its last step.
func (c *Contrast) Attribute(ctx context.Context, a, b *Breakdown, progress func(float64)) (window, last *Attribution, err error) {
	p := c.plan()
	cfgs, failed := c.runsFor(p)
	var bds []*Breakdown
	if failed == nil && len(cfgs) > 0 {
		jobs := make([]windowJob, len(cfgs))
		for i, cfg := range cfgs {
			jobs[i] = windowJob{cfg, false}
		}
		var errs []error
		bds, errs = runWindows(ctx, jobs, a.From, a.To, progress)
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		failed = p.failed(c, errs)
	}
	lastOf := func(x *Breakdown) float64 {
		if x.To != a.To {
			return math.NaN()
		}
		return x.Last.Milliseconds()
	}
	return c.attribute(p, failed, a, b, bds, (*Breakdown).Mean), c.attribute(p, failed, a, b, bds, lastOf), nil
}

// failed is the first of the planned runs' errors, naming the run.
func (p attributionPlan) failed(c *Contrast, errs []error) error {
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("A with %s does not run: %w", p.switched(c, i), err)
		}
	}
	return nil
}

// attribute splits the difference of timeOf(a) and timeOf(b) among the switches, from
// the breakdowns of the planned runs; failed says why they could not run.
func (c *Contrast) attribute(p attributionPlan, failed error, a, b *Breakdown, runs []*Breakdown, timeOf func(*Breakdown) float64) *Attribution {
	switch {
	case p.method == MethodNone && c.Toggle == nil:
		return noAttribution(c.Note)
	case p.method == MethodNone:
		return noAttribution("the two configurations are the same")
	case failed != nil:
		return noAttribution(failed.Error())
	}
	t := make([]float64, len(runs))
	var short []string
	for i, r := range runs {
		t[i] = timeOf(r)
		if r.Steps == 0 || math.IsNaN(t[i]) {
			return noAttribution(fmt.Sprintf("A with %s runs out of requests before the window ends", p.switched(c, i)))
		}
		if r.Steps != a.Steps {
			short = append(short, fmt.Sprintf("A with %s ran %d of the window's %d steps", p.switched(c, i), r.Steps, a.Steps))
		}
	}
	at := p.split(c, timeOf(a), timeOf(b), t)
	if len(short) > 0 {
		at.Note += "; " + strings.Join(short, "; ")
	}
	return at
}

// switched names the settings planned run i switches.
func (p attributionPlan) switched(c *Contrast, i int) string {
	var names []string
	for k, v := range p.runs[i] {
		if v {
			names = append(names, c.Settings[k].Key+" = "+c.Settings[k].B)
		}
	}
	return strings.Join(names, ", ")
}
