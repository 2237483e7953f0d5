package presets

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pimtui/pimtui/presets/internal/testutil"
	"github.com/pimtui/pimtui/sim"
)

// Caps that keep one invariant run to milliseconds.
const (
	invMaxRequests = 12
	invMaxBatch    = 16
	invMaxSteps    = 40
	invMaxInput    = 2048
	invMaxOutput   = 32
	invMaxEdits    = 6
)

// invLightModels are the models an edit of model.name may pick for the Hermes family,
// whose neuron-level planner grows with the model (the other systems take any model).
var invLightModels = []string{"opt-13b", "llama2-7b", "llama2-13b", "gpt3-7b", "qwen1.5-7b"}

// invApplies reports whether key belongs to a section f uses: model and workload always,
// another section only when the preset has it (keys of absent sections do not apply).
func invApplies(f *File, key string) bool {
	sec, _, ok := strings.Cut(key, ".")
	if !ok {
		return false // top-level names: name, description, family, system, paper
	}
	if sec == "model" || sec == "workload" {
		return true
	}
	v := reflect.ValueOf(f).Elem()
	t := v.Type()
	for i := range t.NumField() {
		if strings.Split(t.Field(i).Tag.Get("toml"), ",")[0] == sec {
			fv := v.Field(i)
			return fv.Kind() == reflect.Pointer && !fv.IsNil()
		}
	}
	return false
}

// invScale maps a byte to [lo, hi]: 0 and 255 give the ends, the rest a log scale from lo
// so that small values near the minimum are as likely as the large ones.
func invScale(lo, hi float64, b byte) float64 {
	switch b {
	case 0:
		return lo
	case 255:
		return hi
	}
	u := float64(b) / 255
	if hi-lo <= 10 {
		return lo + (hi-lo)*u
	}
	return min(hi, lo+math.Expm1(math.Log1p(hi-lo)*u))
}

// invValue draws a value for fd from b, within its declared range or enum; ok is false
// for a key the fuzzer does not set (free-form names).
func invValue(fd field, system string, b byte) (string, bool) {
	switch {
	case len(fd.Enum) > 0:
		return fd.Enum[int(b)%len(fd.Enum)], true
	case fd.Kind == reflect.Bool:
		return strconv.FormatBool(b&1 == 1), true
	case fd.Kind == reflect.String:
		switch fd.Path {
		case "model.name":
			if system == sim.SystemHermes || system == sim.SystemOffload {
				return invLightModels[int(b)%len(invLightModels)], true
			}
			ms := Models()
			return ms[int(b)%len(ms)].Name, true
		case "workload.dataset":
			ds := Datasets()
			return ds[int(b)%len(ds)].Name, true
		}
		if strings.Contains(fd.Doc, "GPU") && strings.Contains(fd.Doc, "catalogue") {
			gs := GPUs() // gpu.name, platform.gpu, cluster.gpu, lolpim.xpu_gpu, …
			return gs[int(b)%len(gs)].Name, true
		}
		return "", false
	case fd.Min == "" || fd.Max == "":
		return "", false
	case fd.Kind == reflect.Float64:
		lo, _ := strconv.ParseFloat(fd.Min, 64)
		hi, _ := strconv.ParseFloat(fd.Max, 64)
		x := min(hi, max(lo, invScale(lo, hi, b)))
		return strconv.FormatFloat(x, 'g', -1, 64), true
	default:
		lo, _ := strconv.ParseInt(fd.Min, 10, 64)
		hi, _ := strconv.ParseInt(fd.Max, 10, 64)
		x := int64(math.Round(invScale(float64(lo), float64(hi), b)))
		return strconv.FormatInt(min(hi, max(lo, x)), 10), true
	}
}

// invConfig builds the fuzzed configuration: preset number pi, then edits of three bytes
// each (a key index in two bytes, a value byte), then the caps. ok is false when the
// preset or an edit's combination is rejected by Build (an error is an allowed outcome).
func invConfig(t testing.TB, pi uint8, edits []byte, knobs uint16) (sim.Config, []string, bool) {
	t.Helper()
	names := Names()
	name := names[int(pi)%len(names)]
	f, err := Get(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	applied := []string{"preset=" + name}
	if (f.System == sim.SystemHermes || f.System == sim.SystemOffload) && f.Model.Name != "opt-13b" {
		if err := f.Set("model.name=opt-13b"); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, "model.name=opt-13b")
	}
	var keys []field
	for _, fd := range fields() {
		if invApplies(f, fd.Path) {
			keys = append(keys, fd)
		}
	}
	for i := 0; i+2 < len(edits) && i/3 < invMaxEdits; i += 3 {
		fd := keys[(int(edits[i])<<8|int(edits[i+1]))%len(keys)]
		val, ok := invValue(fd, f.System, edits[i+2])
		if !ok {
			continue
		}
		kv := fd.Path + "=" + val
		if err := f.Set(kv); err != nil {
			t.Fatalf("%s: in-range edit %s rejected: %v", name, kv, err)
		}
		applied = append(applied, kv)
	}
	// Caps: a small closed or Poisson workload of short requests and a step limit.
	w := &f.Workload
	w.Requests = 1 + (w.Requests-1)%invMaxRequests
	w.Batch = 1 + (w.Batch-1)%invMaxBatch
	if w.InputLen > invMaxInput {
		w.InputLen = 1 + w.InputLen%invMaxInput
	}
	if w.OutputLen == 0 || w.OutputLen > invMaxOutput {
		w.OutputLen = 1 + int(knobs%invMaxOutput)
	}
	if w.Steps == 0 || w.Steps > invMaxSteps {
		w.Steps = invMaxSteps
	}
	w.Warmup %= w.Steps + 1
	recycle := knobs&0x100 != 0
	applied = append(applied, fmt.Sprintf("caps: requests=%d batch=%d input_len=%d output_len=%d steps=%d warmup=%d recycle=%v",
		w.Requests, w.Batch, w.InputLen, w.OutputLen, w.Steps, w.Warmup, recycle))
	cfg, err := Build(f, nil)
	if err != nil {
		return cfg, applied, false
	}
	cfg.Recycle = recycle
	return cfg, applied, true
}

// invFinite fails on a NaN or infinite figure (what[i] at step). It stays cheap on the
// passing path: no Helper call and no formatting, as the bank grids have many cells.
func invFinite(t testing.TB, step int, what string, i int, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		t.Helper()
		t.Fatalf("step %d: %s[%d] = %v, not finite", step, what, i, x)
	}
}

// invUnit fails on a figure outside [0, 1] (or not finite).
func invUnit(t testing.TB, step int, what string, i int, x float64) {
	if !(x >= 0 && x <= 1) {
		t.Helper()
		t.Fatalf("step %d: %s[%d] = %v, outside [0, 1]", step, what, i, x)
	}
}

// invCheckSnapshot checks one iteration's snapshot.
func invCheckSnapshot(t testing.TB, s *sim.Snapshot) {
	t.Helper()
	tl := s.Timeline
	if tl.Makespan != s.IterTime || s.IterTime <= 0 {
		t.Fatalf("step %d: makespan %d, iteration time %d", s.Step, tl.Makespan, s.IterTime)
	}
	// Spans: on each lane, in order of start, none overlaps the one before (no tolerance),
	// and all lie inside the iteration.
	byLane := make([][]sim.Span, len(tl.Lanes))
	for i, sp := range tl.Spans {
		if sp.Lane < 0 || sp.Lane >= len(tl.Lanes) {
			t.Fatalf("step %d: span %d (%s) on lane %d of %d", s.Step, i, sp.Name, sp.Lane, len(tl.Lanes))
		}
		if sp.Start < 0 || sp.Dur < 0 || sp.End() > tl.Makespan {
			t.Fatalf("step %d: span %d (%s) at %d for %d outside the iteration [0, %d]", s.Step, i, sp.Name, sp.Start, sp.Dur, tl.Makespan)
		}
		invFinite(t, s.Step, "span FLOPs", i, sp.FLOPs)
		invFinite(t, s.Step, "span bytes", i, sp.Bytes)
		if sp.FLOPs < 0 || sp.Bytes < 0 {
			t.Fatalf("step %d: span %d (%s) has %v FLOPs, %v bytes", s.Step, i, sp.Name, sp.FLOPs, sp.Bytes)
		}
		byLane[sp.Lane] = append(byLane[sp.Lane], sp)
	}
	for l, spans := range byLane {
		sort.SliceStable(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
		for i := 1; i < len(spans); i++ {
			if spans[i].Start < spans[i-1].End() {
				t.Fatalf("step %d: lane %d (%s): %s at [%d, %d) overlaps %s at [%d, %d)", s.Step, l, tl.Lanes[l].Name,
					spans[i].Name, spans[i].Start, spans[i].End(), spans[i-1].Name, spans[i-1].Start, spans[i-1].End())
			}
		}
	}
	// Bubbles lie inside the iteration, in the gaps between their lane's spans.
	for i, b := range tl.Bubbles {
		if b.Lane < 0 || b.Lane >= len(tl.Lanes) || b.Start < 0 || b.Dur < 0 || b.Start+b.Dur > tl.Makespan {
			t.Fatalf("step %d: bubble %d on lane %d at %d for %d outside the iteration [0, %d]", s.Step, i, b.Lane, b.Start, b.Dur, tl.Makespan)
		}
		spans := byLane[b.Lane]
		j := sort.Search(len(spans), func(j int) bool { return spans[j].End() > b.Start })
		if b.Dur > 0 && j < len(spans) && spans[j].Start < b.Start+b.Dur && spans[j].Dur > 0 {
			t.Fatalf("step %d: lane %d (%s): bubble at [%d, %d) overlaps %s at [%d, %d)", s.Step, b.Lane, tl.Lanes[b.Lane].Name,
				b.Start, b.Start+b.Dur, spans[j].Name, spans[j].Start, spans[j].End())
		}
	}
	// Metrics.
	m := s.Metrics
	invFinite(t, s.Step, "throughput", 0, m.Throughput)
	invFinite(t, s.Step, "step tokens/s", 0, m.StepTokPerSec)
	invFinite(t, s.Step, "load imbalance", 0, m.LoadImbalance)
	invUnit(t, s.Step, "KV utilisation", 0, m.KVUtil)
	for k, v := range m.Util {
		invUnit(t, s.Step, "utilisation "+k, 0, v)
	}
	for k, v := range m.Bubble {
		invUnit(t, s.Step, "bubble fraction "+k, 0, v)
	}
	// Bank grid.
	g := s.Banks
	for i, v := range g.PIM {
		invUnit(t, s.Step, "bank grid PIM", i, v)
	}
	for i, v := range g.Mem {
		invUnit(t, s.Step, "bank grid Mem", i, v)
	}
	if n := g.Rows * g.Cols; (len(g.PIM) != 0 && len(g.PIM) != n) || (len(g.Mem) != 0 && len(g.Mem) != n) {
		t.Fatalf("step %d: bank grid %d×%d with %d PIM and %d Mem cells", s.Step, g.Rows, g.Cols, len(g.PIM), len(g.Mem))
	}
	// KV map.
	kv := s.KV
	invFinite(t, s.Step, "KV block bytes", 0, kv.BlockBytes)
	invUnit(t, s.Step, "KV fragmentation", 0, kv.Fragmentation)
	used, capacity := 0, 0
	for i, loc := range kv.Locations {
		if loc.Used < 0 || loc.Used > loc.Capacity {
			t.Fatalf("step %d: KV location %d (%s) uses %d of %d blocks", s.Step, i, loc.Label, loc.Used, loc.Capacity)
		}
		used += loc.Used
		capacity += loc.Capacity
		seen := map[int]bool{}
		for _, h := range loc.Holders {
			if seen[h.Request] {
				t.Fatalf("step %d: request %d holds blocks twice at KV location %d (%s)", s.Step, h.Request, i, loc.Label)
			}
			seen[h.Request] = true
			if h.KBlocks < 0 || h.VBlocks < 0 {
				t.Fatalf("step %d: request %d holds %d K and %d V blocks", s.Step, h.Request, h.KBlocks, h.VBlocks)
			}
			invUnit(t, s.Step, "KV fill of request", h.Request, h.Fill)
		}
	}
	// The totals may count an aggregate location (L3's host bar over its ranksets) rather
	// than the sum, so they are only bounded by it.
	if kv.Used < 0 || kv.Used > kv.Capacity || kv.Used > used || kv.Capacity > capacity {
		t.Fatalf("step %d: KV totals %d/%d, locations sum to %d/%d", s.Step, kv.Used, kv.Capacity, used, capacity)
	}
	// Neurons (Hermes family).
	n := s.Neurons
	for bi, b := range n.Blocks {
		for _, bin := range b.Bins {
			invFinite(t, s.Step, "neuron bin state of block", bi, float64(bin.State))
			invFinite(t, s.Step, "neuron bin frequency of block", bi, float64(bin.Freq))
		}
	}
	st := n.Stats
	for _, x := range []struct {
		what string
		v    float64
	}{
		{"GPU coverage", st.GPUCoverage}, {"accuracy", st.Accuracy}, {"recall", st.Recall}, {"precision", st.Precision},
		{"promoted MB", st.PromotedMB}, {"remapped MB", st.RemappedMB}, {"churn", st.Churn}, {"hot MB", st.HotMB}, {"budget MB", st.BudgetMB},
		{"QKV active", st.QKVActive}, {"MLP active", st.MLPActive}, {"layer correlation", st.LayerCorr}, {"one parent", st.OneParent},
		{"hot share", st.HotShare}, {"alpha QKV", st.Alpha[0]}, {"alpha MLP", st.Alpha[1]},
		{"similarity 1", st.Similarity[0]}, {"similarity 10", st.Similarity[1]}, {"similarity 25", st.Similarity[2]},
	} {
		invFinite(t, s.Step, "neuron "+x.what, 0, x.v)
	}
	for i, v := range st.HomeLoadMB {
		invFinite(t, s.Step, "home load MB", i, v)
	}
	done := 0
	for _, r := range s.Requests {
		if r.Status == sim.Done {
			done++
		}
	}
	if done != s.Done {
		t.Fatalf("step %d: %d requests done, %d rows done", s.Step, s.Done, done)
	}
	// Requests: nobody generates more than its output length; a completed request exactly
	// its output length.
	for _, r := range s.Requests {
		switch {
		case r.Generated < 0 || r.Generated > r.OutputLen:
			t.Fatalf("step %d: request %d generated %d of %d tokens", s.Step, r.ID, r.Generated, r.OutputLen)
		case r.Status == sim.Done && r.Generated != r.OutputLen:
			t.Fatalf("step %d: request %d completed after %d of %d tokens", s.Step, r.ID, r.Generated, r.OutputLen)
		}
	}
}

// invRun steps cfg to the end, checking the invariants on every step and at the end.
// Rejected configurations (an error from New or Step) are allowed outcomes.
func invRun(t testing.TB, cfg sim.Config) {
	t.Helper()
	if !cfg.Recycle {
		cfg.HistoryCap = invMaxSteps
	}
	e, err := sim.New(cfg)
	if err != nil {
		return
	}
	w := cfg.Workload
	var prev sim.Time
	var last *sim.Snapshot
	var snaps []*sim.Snapshot
	tokens, steps := 0, 0
	for {
		s, err := e.Step()
		if errors.Is(err, sim.ErrDone) {
			break
		}
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("step %d: %v", steps+1, err)
			}
			return
		}
		steps++
		if steps > invMaxSteps {
			t.Fatalf("%d steps with a limit of %d", steps, invMaxSteps)
		}
		if s.Step != steps {
			t.Fatalf("snapshot step %d, want %d", s.Step, steps)
		}
		if s.Now <= prev || s.Now-s.IterTime < prev {
			t.Fatalf("step %d: time %d after %d (iteration %d)", steps, s.Now, prev, s.IterTime)
		}
		prev = s.Now
		invCheckSnapshot(t, s)
		tokens += s.Tokens
		if s.Done < 0 || s.Done > w.Requests || (last != nil && s.Done < last.Done) {
			t.Fatalf("step %d: %d requests done of %d", steps, s.Done, w.Requests)
		}
		// Every request shows in the rows (≤ 12 requests), so their generated tokens add up
		// to the tokens the iterations produced.
		gen := 0
		for _, r := range s.Requests {
			gen += r.Generated
		}
		if gen != tokens {
			t.Fatalf("step %d: requests hold %d generated tokens, iterations produced %d", steps, gen, tokens)
		}
		last = s
		if !cfg.Recycle {
			snaps = append(snaps, s)
		}
	}
	invHistory(t, e, snaps)
	r := e.Result()
	if last != nil {
		t.Logf("%d steps, %d of %d requests done, %d tokens", steps, last.Done, w.Requests, tokens)
	}
	if r.Iterations != steps {
		t.Fatalf("result has %d iterations, stepped %d", r.Iterations, steps)
	}
	if last == nil {
		return
	}
	if r.RequestsCompleted != last.Done || r.SimTimeS != last.Now.Seconds() {
		t.Fatalf("result: %d completed at %gs, last snapshot %d at %gs", r.RequestsCompleted, r.SimTimeS, last.Done, last.Now.Seconds())
	}
	if (w.Warmup == 0 && r.TokensGenerated != tokens) || r.TokensGenerated > tokens {
		t.Fatalf("result has %d tokens, iterations produced %d (warm-up %d)", r.TokensGenerated, tokens, w.Warmup)
	}
	for k, v := range r.Utilization {
		invUnit(t, steps, "result utilisation "+k, 0, v)
	}
	for _, v := range []float64{r.ThroughputTokS, r.MeanBatch, r.IterationMS.Mean, r.TBTMS.P99, r.TTFTMS.P99, r.E2EMS.P99, r.KV.PeakFragmentation, r.KV.PeakUtilization} {
		invFinite(t, steps, "result figure", 0, v)
	}
	if last.Done == w.Requests {
		if last.KV.Used != 0 {
			t.Fatalf("every request completed but %d KV blocks are still used", last.KV.Used)
		}
		for _, loc := range last.KV.Locations {
			if loc.Used != 0 || len(loc.Holders) != 0 {
				t.Fatalf("every request completed but KV location %s has %d blocks used by %d holders", loc.Label, loc.Used, len(loc.Holders))
			}
		}
		want := 0
		for _, row := range last.Requests {
			if row.Status != sim.Done {
				t.Fatalf("every request completed but request %d is %v", row.ID, row.Status)
			}
			want += row.OutputLen
		}
		if tokens != want {
			t.Fatalf("every request completed: %d tokens generated, output lengths sum to %d", tokens, want)
		}
	}
}

// invHistory checks that the kept history gives back every snapshot exactly as Step
// returned it, stepping back to the first and forward again to the last.
func invHistory(t testing.TB, e *sim.Engine, snaps []*sim.Snapshot) {
	if len(snaps) == 0 {
		return
	}
	if h := e.History(); h.Len() != len(snaps) {
		t.Fatalf("history keeps %d iterations of %d", h.Len(), len(snaps))
	}
	for i := len(snaps) - 2; i >= 0; i-- {
		if b := e.Back(); !reflect.DeepEqual(b, snaps[i]) {
			t.Fatalf("stepping back to iteration %d gave a different snapshot", i+1)
		}
	}
	if e.Back() != nil {
		t.Fatal("stepped back past the first iteration")
	}
	for i := 1; i < len(snaps); i++ {
		if s, err := e.Step(); err != nil || !reflect.DeepEqual(s, snaps[i]) {
			t.Fatalf("replaying iteration %d gave a different snapshot (%v)", i+1, err)
		}
	}
}

// invMains is each family's main preset, the seed corpus: the preset named after the
// family, or its first in the listing where none is (Names lists that one first).
func invMains() []int {
	var out []int
	seen := map[string]bool{}
	for i, n := range Names() {
		f, err := Get(n)
		if err == nil && !seen[f.Family] {
			seen[f.Family] = true
			out = append(out, i)
		}
	}
	return out
}

// FuzzInvariants runs a preset with in-range --set edits and checks the engine's
// invariants on every step: time advances, spans on a lane never overlap, utilisations and
// every reachable figure are finite and in range, the KV cache never overflows a location
// or lists a request twice there, and completed requests generated exactly their output
// length with the KV cache empty once all are done.
func FuzzInvariants(f *testing.F) {
	for _, i := range invMains() {
		f.Add(uint8(i), []byte{}, uint16(7))
	}
	f.Fuzz(func(t *testing.T, preset uint8, edits []byte, knobs uint16) {
		cfg, applied, ok := invConfig(t, preset, edits, knobs)
		if !ok {
			return
		}
		t.Log(strings.Join(applied, "\n"))
		invRun(t, cfg)
	})
}

// TestInvariantsEveryPreset runs the invariant checks once per preset, capped as the fuzz
// target caps them.
func TestInvariantsEveryPreset(t *testing.T) {
	start := time.Now()
	for i, n := range Names() {
		t.Run(n, func(t *testing.T) {
			if testutil.Quick() && time.Since(start) > 5*time.Second {
				t.Skip("over 5 s under -short")
			}
			cfg, applied, ok := invConfig(t, uint8(i), nil, 7)
			if !ok {
				t.Fatalf("%v: rejected", applied)
			}
			e := time.Now()
			invRun(t, cfg)
			t.Logf("%s: %v", n, time.Since(e))
		})
	}
}
