package sim

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// laneBusy sums the spans on lane l, and lists their names in order.
func laneBusy(s *Snapshot, l int) (Time, []string) {
	var b Time
	var names []string
	for _, sp := range s.Timeline.Spans {
		if sp.Lane == l {
			b += sp.Dur
			names = append(names, sp.Name)
		}
	}
	return b, names
}

// busiestChannel is the PIM lane with the most busy time.
func busiestChannel(s *Snapshot) int {
	best, bt := -1, Time(-1)
	for l := lanePIM0; l < lanePIM0+32; l++ {
		if b, _ := laneBusy(s, l); b > bt {
			best, bt = l, b
		}
	}
	return best
}

// The authors' simulator enables sub-batch interleaving "only when batch size >= 256"
// (NeuPIMs README, main branch), on a batch its traces keep full. The decision follows the
// live batch: two requests left of a 256-request batch run as one batch, streaming the
// weights once, exactly as with interleaving switched off.
func TestSBIFollowsTheLiveBatch(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 300, 8
	c.Workload.Requests, c.Workload.MaxBatch = 2, 256
	s := firstSnap(t, c)
	for _, sp := range s.Timeline.Spans {
		if sp.SubBatch != 0 {
			t.Fatalf("a live batch of 2 was split: span %q in sub-batch %d", sp.Name, sp.SubBatch)
		}
	}
	off := c
	off.Scheduler.SubBatchInterleaving = false
	if got, want := s.IterTime, firstSnap(t, off).IterTime; got != want {
		t.Fatalf("iteration of 2 requests takes %v, %v without interleaving", got, want)
	}
	full := c
	full.Workload.Requests = 256
	if s := firstSnap(t, full); len(s.Timeline.Stages) == 0 {
		t.Fatal("a live batch of 256 does not interleave")
	}
}

// The attend kernel runs what the last value chunk holds (NeuPIMSAttend.cc: the last
// chunk's PIM_GEMV issues ceil((L mod 512)/16) COMPs instead of 32), with COMPs 2 cycles
// apart and a floor of 6 (NewtonSim channel_state.cc), while Algorithm 1's estimate keeps
// charging full tiles.
func TestLastValueChunkRunsWhatItHolds(t *testing.T) {
	p := PIMParams{TileCycles: 184, GWriteCycles: 100, PageElems: 512, Banks: 32, Multipliers: 16, CompCycles: 2, MinComps: 6}
	// logit: 2 GWRITEs + ceil(L/32) key tiles × 2 chunks × 184, as Algorithm 1
	for _, tc := range []struct {
		seq, logit, attend int
	}{
		{300, 200 + 10*368, 8 * (100 + 4*(184-2*(32-19)))},                 // 19 COMPs in the only chunk
		{512, 200 + 16*368, 8 * (100 + 4*184)},                             // a full chunk runs in full
		{513, 200 + 17*368, 8 * (100 + 4*184 + 100 + 4*(184-2*(32-6)))},    // one token: the 6-COMP floor
		{20, 200 + 1*368, 8 * (100 + 4*(184-2*(32-6)))},                    // 2 COMPs, floored at 6
		{1100, 200 + 35*368, 8 * (2*(100+4*184) + 100 + 4*(184-2*(32-6)))}, // 76 tokens left: 5 COMPs, floored at 6
	} {
		l, a := p.MHAExec(tc.seq, 8, 128)
		if l != tc.logit || a != tc.attend {
			t.Errorf("seq %d: executed logit %d, attend %d; want %d, %d", tc.seq, l, a, tc.logit, tc.attend)
		}
		el, ea := p.MHALatency(tc.seq, 8, 128)
		if el != tc.logit || ea < a {
			t.Errorf("seq %d: Algorithm 1 estimates %d + %d, below what runs", tc.seq, el, ea)
		}
	}
	// The logit kernel's last embedding chunk holds only the heads left (GPT3-30B at tp 4:
	// 1,792 = 3 × 512 + 256, two heads, 16 COMPs).
	if l, _ := p.MHAExec(32, 14, 128); l != 4*100+3*184+(184-2*16) {
		t.Errorf("30B logit of one key tile = %d", l)
	}

	// In the engine the channel runs the executed cycles, and Algorithm 2 balances the
	// channels on the estimate.
	c := testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 300, 4
	c.Workload.Requests = 1
	s := firstSnap(t, c)
	ch := busiestChannel(s)
	busy, _ := laneBusy(s, ch)
	if want := Time(c.Model.Layers) * Cycles(3880+5856, 1); busy != want {
		t.Fatalf("channel busy %v over the layers, want %v (executed logit + attend)", busy, want)
	}
	if note := s.Banks.RowNotes[ch-lanePIM0]; !strings.Contains(note, "load 10k cyc/layer") {
		t.Fatalf("channel note %q: Algorithm 2's load should be the estimate, 10,568 cycles", note)
	}
}

// With single row buffers each head's chain is serialised on its channel (NeuPIMs §5.1,
// §6.1, Fig. 10; the authors' npu+pim branch: one queue per channel for memory and PIM
// commands): logit GEMV, read-out, softmax on a vector unit, write-back of the logits
// through the row buffer with a switch to memory mode and back (tRP + tRCD + tWR + tRP +
// tRCD, Table 2), attend GEMV. Dual row buffers hide all but the GEMVs.
func TestBlockedChannelSerialisesEachHeadChain(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 300, 4
	c.Workload.Requests = 1
	c.Scheduler.SubBatchInterleaving, c.Scheduler.ChannelAlloc = false, RoundRobin
	dual := firstSnap(t, c)
	c.PIM.DualRowBuffer = false
	blocked := firstSnap(t, c)
	db, _ := laneBusy(dual, lanePIM0)
	bb, names := laneBusy(blocked, lanePIM0)
	// per head: softmax 2·(3+1) + 3·3 = 17 cycles, 600 B at 32 GB/s, 72 cycles of switches
	head := Cycles(17, 1) + FromSeconds(600/32e9) + Cycles(72, 1)
	if want := db + Time(8*c.Model.Layers)*head; bb != want {
		t.Fatalf("blocked channel busy %v, want the dual one's %v + 8 heads × 32 layers × %v", bb, db, head)
	}
	if got := strings.Join(names[:3], " → "); got != "logit → softmax wait + write-back → attend" {
		t.Fatalf("blocked channel runs %s", got)
	}
	if blocked.IterTime <= dual.IterTime {
		t.Fatalf("blocked iteration %v is not longer than the dual one %v", blocked.IterTime, dual.IterTime)
	}
}

// Interleaving sub-batches on single-row-buffer PIM: the NPU's GEMMs of a stage stream
// their weights through the channels the other sub-batch computes in (one queue per
// channel, the npu+pim branch), so a channel serves that traffic before its PIM work and
// the stage lasts at least both.
func TestBlockedChannelsCarryTheNPUTraffic(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.InputLen, c.Workload.OutputLen = 300, 4
	c.Workload.Requests = 256
	c.PIM.DualRowBuffer = false
	s := firstSnap(t, c)
	ch := busiestChannel(s)
	stageEnd := map[int]Time{}
	traffic, pim := map[int]Time{}, map[int]Time{}
	for _, sp := range s.Timeline.Spans {
		stageEnd[sp.Stage] = max(stageEnd[sp.Stage], sp.End())
		if sp.Lane != ch {
			continue
		}
		if sp.Name == "NPU traffic" {
			if pim[sp.Stage] > 0 {
				t.Fatalf("stage %d: NPU traffic after the channel's PIM work", sp.Stage)
			}
			traffic[sp.Stage] += sp.Dur
		} else {
			pim[sp.Stage] += sp.Dur
		}
	}
	if len(traffic) == 0 {
		t.Fatal("no NPU traffic on a blocked channel under interleaving")
	}
	for st, tr := range traffic {
		start := Time(0)
		if st > 0 {
			start = stageEnd[st-1]
		}
		if stageEnd[st]-start < tr+pim[st] {
			t.Fatalf("stage %d lasts %v, shorter than the channel's traffic %v + PIM work %v", st, stageEnd[st]-start, tr, pim[st])
		}
	}
}

// NPU-only attention runs as the authors' npu-only branch runs it (FusedMHA.cc,
// SystolicWS.cc): per request and head, a logit GEMV instruction streaming L/8 key rows
// through the arrays after filling and draining them (128 + 128 − 1 cycles), a softmax on
// a vector unit, and one attend GEMV instruction per 128-token value block (d_head/8
// rows), the K and V streams overlapping the instructions.
func TestNPUOnlyAttentionRunsGEMVsOnTheArrays(t *testing.T) {
	c := testNeuPIMs()
	c.PIM.Enabled, c.Scheduler.SubBatchInterleaving = false, false
	c.Workload.InputLen, c.Workload.OutputLen = 300, 4
	c.Workload.Requests = 1
	s := firstSnap(t, c)
	want := map[string]Time{
		"logit GEMV":  8 * Cycles(255+38, 1),
		"softmax":     8 * Cycles(17, 1),
		"attend GEMV": 8 * Cycles(3*(255+16), 1),
	}
	seen := map[string]int{}
	for _, sp := range s.Timeline.Spans {
		if w, ok := want[sp.Name]; ok {
			seen[sp.Name]++
			if sp.Dur != w {
				t.Fatalf("%s takes %v, want %v", sp.Name, sp.Dur, w)
			}
		}
	}
	for name := range want {
		if seen[name] != c.Model.Layers {
			t.Fatalf("%s runs %d times, want once per layer", name, seen[name])
		}
	}
	// Even long contexts over a large batch stay bound by the instructions, not the KV
	// stream: a key costs 0.5 bus cycles and about 2.25 instruction cycles.
	c.Workload.InputLen, c.Workload.Requests, c.Workload.MaxBatch = 2000, 64, 64
	s = firstSnap(t, c)
	for _, sp := range s.Timeline.Spans {
		if sp.Name == "logit GEMV" {
			if bus := FromSeconds(sp.Bytes / c.Memory.Bandwidth()); sp.Dur <= bus {
				t.Fatalf("logit GEMV %v no longer than its KV stream %v", sp.Dur, bus)
			}
			break
		}
	}
}

// Admission places the requests Algorithm 2 places, on the same channels, whether it walks
// the candidates longest first (ties in queue order) or, as the planner does, picks the
// next that still fits: here against the walk, on channels of little and uneven room, for
// both channel policies.
func TestNeuPIMsAdmissionPlacesAsAlgorithm2Walks(t *testing.T) {
	for _, policy := range []ChannelAlloc{GreedyMinLoad, RoundRobin} {
		for seed := range 200 {
			c := testNeuPIMs()
			c.Scheduler.ChannelAlloc = policy
			mk := func() (*neupims, []*Request, []*Request) {
				n, err := newNeuPIMs(&c)
				if err != nil {
					t.Fatal(err)
				}
				rng := uint64(seed)*0x9e3779b97f4a7c15 + 1
				next := func(m int) int {
					rng ^= rng << 13
					rng ^= rng >> 7
					rng ^= rng << 17
					return int(rng % uint64(m))
				}
				for l := range n.kv.capacity {
					n.kv.capacity[l] = 4000
					n.kv.reserved[l] = next(4000)
				}
				n.rrNext = next(n.ch)
				var running, cands []*Request
				for i := range 40 {
					running = append(running, &Request{ID: i + 1, InputLen: 1 + next(600), Loc: next(n.ch), Status: Running})
				}
				for i := range 60 {
					cands = append(cands, &Request{ID: 100 + i, InputLen: 1 + 50*next(12), Loc: -1})
				}
				return n, running, cands
			}
			n, running, cands := mk()
			got := n.admit(cands, running)
			// The walk: every candidate in the policy's order, placed where it fits.
			w, wRunning, wCands := mk()
			order := make([]int, len(wCands))
			for i := range order {
				order[i] = i
			}
			want := make([]bool, len(wCands))
			clear(w.load)
			if policy == GreedyMinLoad {
				for _, r := range wRunning {
					l, a := w.mha(r.SeqLen())
					w.load[r.Loc] += int64(l + a)
				}
				sort.SliceStable(order, func(a, b int) bool { return wCands[order[a]].InputLen > wCands[order[b]].InputLen })
			}
			for _, o := range order {
				r := wCands[o]
				fits := func(_, ch int) bool { return w.kv.admits(ch, w.kv.need(r)) }
				var ch int
				if policy == GreedyMinLoad {
					l, a := w.mha(r.SeqLen())
					ch = GreedyMinLoadAssign(w.load, []int64{int64(l + a)}, fits)[0]
				} else {
					ch = RoundRobinAssign(w.ch, &w.rrNext, 1, fits)[0]
				}
				if ch >= 0 {
					w.kv.reserve(r, ch)
					want[o] = true
				}
			}
			placed := 0
			for i := range cands {
				if got[i] != want[i] || cands[i].Loc != wCands[i].Loc {
					t.Fatalf("%s, seed %d: candidate %d (input %d) placed %v on channel %d, the walk %v on %d",
						policy, seed, i, cands[i].InputLen, got[i], cands[i].Loc, want[i], wCands[i].Loc)
				}
				if got[i] {
					placed++
				}
			}
			if !slices.Equal(n.kv.reserved, w.kv.reserved) || !slices.Equal(n.load, w.load) || n.rrNext != w.rrNext {
				t.Fatalf("%s, seed %d: channels left differently from the walk", policy, seed)
			}
			if seed == 0 && (placed == 0 || placed == len(cands)) {
				t.Fatalf("%s: %d of %d placed: the test does not leave some out", policy, placed, len(cands))
			}
		}
	}
}

// Each A–F stage mark stands where the stage's earliest span starts.
func TestNeuPIMsStageMarksStartWithTheirStage(t *testing.T) {
	c := testNeuPIMs()
	c.Workload.Requests, c.Workload.MaxBatch = 300, 300
	s := firstSnap(t, c)
	marks := s.Timeline.Stages
	if len(marks) != 2*c.shard().LayersDev()+2 {
		t.Fatalf("%d stage marks for %d layers", len(marks), c.shard().LayersDev())
	}
	want := make([]Time, len(marks))
	for i := range want {
		want[i] = -1
	}
	for _, sp := range s.Timeline.Spans {
		if want[sp.Stage] < 0 || sp.Start < want[sp.Stage] {
			want[sp.Stage] = sp.Start
		}
	}
	for i, m := range marks {
		if m.Start != want[i] || m.Start < 0 {
			t.Errorf("stage %s marked at %v, its first span starts at %v", m.Name, m.Start, want[i])
		}
	}
}
