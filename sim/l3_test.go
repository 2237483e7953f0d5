package sim

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The L3 paper's hardware (Table 2, §2.2, §6.1) and models (Table 3), as the l3 preset has
// them, so these tests stand alone.
var (
	l3GPT175B = Model{Name: "gpt3-175b", Display: "GPT3-175B", Layers: 96, DModel: 12288, Heads: 96, KVHeads: 96, HeadDim: 128, FFN: "gelu", DFFN: 49152, Vocab: 50304}
	l3OPT66B  = Model{Name: "opt-66b", Display: "OPT-66B", Layers: 64, DModel: 9216, Heads: 72, KVHeads: 72, HeadDim: 128, FFN: "gelu", DFFN: 36864, Vocab: 50272}
	l3Host    = DIMMHost{Channels: 16, DIMMsPerChannel: 2, RanksPerDIMM: 2, BankGroups: 4, BanksPerGroup: 4, ChipsPerRank: 8, ChipWidthBits: 8,
		ClockMHz: 1600, CapacityGiB: 2048, CPUBandwidthGBps: 406, RowBytesPerChip: 1024,
		Timing: DDR4Timing{BL: 4, CCDS: 4, CCDL: 8, RRDS: 4, RRDL: 8, RCD: 22, RAS: 52, RP: 22, RC: 74, CL: 22, WL: 16, WTRS: 4, WTRL: 12, WR: 24, RTP: 12}}
)

func testL3() Config {
	return Config{
		Preset: "l3", System: SystemL3, Model: l3GPT175B, TP: 8, PP: 1, Precision: 2,
		Workload: Workload{
			Dataset:  Dataset{Name: "openr1", InMean: 96, InStd: 75.1, InMin: 1, InMax: 131072, OutMean: 12684.1, OutStd: 8464.6, OutMin: 1, OutMax: 131072, MaxSeqLen: 131072},
			Requests: 1000, MaxBatch: 1024, Arrival: ArrivalClosed, Prefill: PrefillRun, KVPolicy: KVPaged, Seed: 1,
		},
		L3: L3Config{
			GPU: GPU{Name: "a100-80gb", Display: "NVIDIA A100 80GB SXM", PeakTFLOPS: 312, BandwidthGBps: 2039, CapacityGB: 80 * (1 << 30) / 1e9,
				LaunchOverheadUs: 5, ComputeEfficiency: 0.7, MemoryEfficiency: 1, MemoryUtilization: 1, KVBlockTokens: 16},
			GPUs: 8, NVLinkGBps: 300, NVLinkLatencyUs: 5, PCIeGBps: 25, PCIeLatencyUs: 2, HostLinkGBps: 100,
			Host:      l3Host,
			PIM:       L3PIM{BankPUMultipliers: 4, BankPUAdders: 4, RankPUAdders: 8, SoftmaxChunk: 16, RankBufferKiB: 256, HBMPIMTBps: 260.8},
			Attention: L3AttnBankPIM, Scheduler: L3SchedAdaptive, SubBatches: 2, ChunkMultiple: 16, CommOverlap: true, Predictor: L3PredOracle,
		},
	}
}

// small shrinks a config to a 4-layer model so whole runs take milliseconds.
func l3Small(c Config) Config {
	c.Model.Layers = 4
	c.Workload.Requests = 40
	c.Workload.InputLen, c.Workload.OutputLen = 100, 30
	return c
}

// §2.2/§2.5: bank PIM reads 16 banks × 8 chips × 8 B per tCCD_L = 5 ns: 204.8 GB/s per rank,
// 13.1 TB/s over 64 ranks (Table 2: 13.0 TB/s = 32 × 406 GB/s); rank-level PIM streams each
// rank at the 25.6 GB/s bus rate, 1.64 TB/s, so L3 has 8× its bandwidth ("about 8×").
func TestDIMMBandwidthFromTiming(t *testing.T) {
	h := l3Host
	if h.BytesPerRD() != 8 || h.RanksPerChannel() != 4 || h.Ranks() != 64 || h.BanksPerRank() != 16 {
		t.Fatalf("organisation: %d B/RD, %d ranks/ch, %d ranks, %d banks", h.BytesPerRD(), h.RanksPerChannel(), h.Ranks(), h.BanksPerRank())
	}
	checkNear(t, "tCK ps", h.TCK(), 625, 1e-9)
	checkNear(t, "bank PIM per rank", h.BankPIMRankBandwidth(), 204.8e9, 1e-9)
	checkNear(t, "bank PIM system", h.BankPIMBandwidth(), 13.1072e12, 1e-9)
	checkNear(t, "channel", h.ChannelBandwidth(), 25.6e9, 1e-9)
	checkNear(t, "rank PIM system", h.RankPIMBandwidth(), 1.6384e12, 1e-9)
	checkNear(t, "L3 / R-PIM", h.BankPIMBandwidth()/h.RankPIMBandwidth(), 8, 1e-9)
	checkNear(t, "CPU nominal 16 × 25.6", float64(h.Channels)*h.ChannelBandwidth(), 409.6e9, 1e-9)
	checkNear(t, "rank capacity", h.RankBytes(), 32*(1<<30), 1e-9)
}

// §5.1: heads go to channels in turn; OPT-66B's 72 heads over 16 channels give 5 heads to
// channels 0–7 and 4 to 8–15, GPT-175B's 96 give 6 everywhere.
func TestHeadsPerChannel(t *testing.T) {
	nh := headsPerChannel(72, 16)
	for c, n := range nh {
		want := 4
		if c < 8 {
			want = 5
		}
		if n != want {
			t.Fatalf("OPT-66B channel %d has %d heads, want %d", c, n, want)
		}
	}
	for c, n := range headsPerChannel(96, 16) {
		if n != 6 {
			t.Fatalf("GPT-175B channel %d has %d heads", c, n)
		}
	}
}

// Fig. 5-d/e: a head's K costs 4 reads per slot of 16 tokens (128 elements / 8 chips / 4 per
// read), its V one step per 4 tokens (256 B over 4 banks); partial slots cost full ones,
// and past the 256 KB rank buffer (131,072 FP16 scores) the scores are fetched again.
func TestRankLayoutSteps(t *testing.T) {
	l := newRankLayout(l3Host, L3PIM{BankPUMultipliers: 4, RankBufferKiB: 256}, 128, 2, 1)
	if l.kRDs != 4 || l.vBanks != 4 || l.vTokens != 4 || l.computeMul != 1 || l.bufTokens != 131072 {
		t.Fatalf("layout %+v", l)
	}
	for _, c := range []struct {
		s    int
		want int64
	}{{1, 4 + 1}, {16, 4 + 4}, {17, 8 + 5}, {1000, 63*4 + 250}, {131072, 8192*4 + 32768}, {131073, 2*8193*4 + 32769}} {
		if got := l.steps(c.s); got != c.want {
			t.Errorf("steps(%d) = %d, want %d", c.s, got, c.want)
		}
	}
	// 8 steps of 5 ns move 8 KiB (16 tokens × 2 × 256 B): 204.8 GB/s.
	if got := l.time(8); got != 40*Nanosecond {
		t.Errorf("time(8) = %v, want 40ns", got)
	}
	// At 17 tokens bank 0 holds tokens 0 and 16 of K and its quad the V of 0, 4, …, 16;
	// bank 1 holds token 1 only (K) and the same quad's V.
	if a, b := l.bankUseful(17, 0), l.bankUseful(17, 1); a != 8+5 || b != 4+5 {
		t.Errorf("bankUseful(17, 0/1) = %d/%d, want 13/9", a, b)
	}
	if got := l.bankUseful(17, 4); got != 4+4 {
		t.Errorf("bankUseful(17, 4) = %d, want 8 (quad 1 has 4 V tokens)", got)
	}
	// A row switch (tRP + tRCD = 44 tCK) per 1 KB row of 128 reads × 8 tCK: +4.3%.
	h := l3Host
	h.RowSwitch = true
	lr := newRankLayout(h, L3PIM{BankPUMultipliers: 4, RankBufferKiB: 256}, 128, 2, 1)
	checkNear(t, "row overhead", lr.rowOverhead, 44.0/1024, 1e-9)
}

// §2.3's motivation: "2.28 requests of GPT-175B with 8k token length could consume the
// entire memory of one A100 (80GB)" — 4.5 MiB of KV per token, 80 GiB per GPU.
func TestGPT175BRequestsPerA100(t *testing.T) {
	sh := Shard{Model: l3GPT175B, TP: 1, PP: 1, Precision: 2}
	if got := sh.KVBytesPerToken(); got != 4718592 {
		t.Fatalf("KV per token %v, want 4,718,592 B", got)
	}
	checkNear(t, "requests per A100", 80*(1<<30)/(8000*sh.KVBytesPerToken()), 2.28, 0.005)
}

// §6.2: "only about 310 GB of memory in total after deploying" GPT-175B on 8 A100s; a
// replica (all 8 GPUs at tp 8) holds the KV of that many bytes' worth of tokens.
func TestGPUOnlyKVRoomAfterWeights(t *testing.T) {
	c := testL3()
	c.L3.Attention, c.L3.Scheduler, c.L3.SubBatches = L3AttnGPU, L3SchedPrefillFirst, 1
	c.Workload.InputLen, c.Workload.OutputLen = 100, 100
	p, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	free := float64(p.kv.capacity[0]) * p.blkBytes * 8 // blocks are per GPU
	checkNear(t, "GiB left for KV", free/(1<<30), 313.7, 0.01)
	// 336.8 GB / 4.5 MiB per token ≈ 71.4K tokens, less the 1% watermark
	checkNear(t, "max_model_len", float64(p.maxModelLen), 0.99*336.8e9/4718592, 0.01)
}

// §5.3 step 2: requests of 2k, 3k, 4k and 5k tokens split into (5k, 2k) and (4k, 3k).
func TestTokenBalancedSplit(t *testing.T) {
	c := testL3()
	p, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	var dec []*Request
	for i, n := range []int{2000, 3000, 4000, 5000} {
		r := &Request{ID: i + 1, InputLen: n, OutputLen: 10, Status: Running, Loc: 0}
		dec = append(dec, r)
	}
	p.it.reset(p)
	p.split(dec)
	got := [2][]int{}
	for i := range 2 {
		for _, r := range p.it.sb[i].dec {
			got[i] = append(got[i], r.InputLen)
		}
	}
	if len(got[0]) != 2 || got[0][0] != 5000 || got[0][1] != 2000 || got[1][0] != 4000 || got[1][1] != 3000 {
		t.Fatalf("split %v, want [[5000 2000] [4000 3000]]", got)
	}
	if p.it.sb[0].decTok != 7000 || p.it.sb[1].decTok != 7000 {
		t.Fatalf("tokens %d / %d", p.it.sb[0].decTok, p.it.sb[1].decTok)
	}
}

// The split reuses its order for a batch whose lengths all grew alike (ties, broken by ID,
// stay ties) and sorts again when one grew otherwise: each time it splits as a planner
// that never split before.
func TestSplitOfGrownBatch(t *testing.T) {
	c := testL3()
	p, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	var dec []*Request
	for i, n := range []int{3000, 2000, 3000, 5000, 4000, 2000, 4990, 3000} {
		dec = append(dec, &Request{ID: 10 - i, InputLen: n, OutputLen: 100, Status: Running, Loc: 0})
	}
	split := func(p *l3) [2][]int {
		p.it.reset(p)
		p.split(dec)
		var ids [2][]int
		for i := range 2 {
			for _, r := range p.it.sb[i].dec {
				ids[i] = append(ids[i], r.ID)
			}
		}
		return ids
	}
	split(p)
	for step, grow := range []func(){
		func() { // all alike
			for _, r := range dec {
				r.Generated += 7
			}
		},
		func() { dec[3].Generated -= 20 }, // the longest falls behind the 4990
	} {
		grow()
		fresh, err := newL3(&c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range dec { // the same rankset classes as p's
			*fresh.state(r) = *p.state(r)
		}
		if got, want := split(p), split(fresh); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: split %v, a fresh planner's %v", step, got, want)
		}
	}
}

// The L3 scheduler chunks in multiples of 16 and carries a chunked prompt over iterations
// until it has run; every request still completes.
func TestChunkedPrefillCarriesOver(t *testing.T) {
	c := testL3()
	c.Model.Layers = 8
	c.Workload.Requests = 12
	c.Workload.InputLen, c.Workload.OutputLen = 3000, 40
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	sys := e.sys.(*l3)
	chunked, multi := 0, 0
	seen := map[int]int{}
	eachStep(t, e, func(s *Snapshot) {
		for i := range sys.it.n {
			for _, ch := range sys.it.sb[i].pre {
				seen[ch.r.ID]++
				if ch.f+ch.c < ch.r.InputLen {
					chunked++
					if ch.c%16 != 0 {
						t.Fatalf("step %d: chunk of %d tokens is not a multiple of 16", s.Step, ch.c)
					}
				}
			}
		}
	})
	for _, n := range seen {
		if n > 1 {
			multi++
		}
	}
	r := e.Result()
	if r.RequestsCompleted != 12 || chunked == 0 || multi == 0 {
		t.Fatalf("completed %d, chunks %d, prompts over several iterations %d", r.RequestsCompleted, chunked, multi)
	}
	if r.TokensGenerated != 12*40 {
		t.Fatalf("generated %d tokens, want %d", r.TokensGenerated, 12*40)
	}
}

// Fig. 7: with two sub-batches the DIMM-PIM computes one sub-batch's attention while the GPU
// works on the other; the ranksets take transfers one at a time and never while they
// compute (§5.1).
func TestSubBatchesOverlapAndRanksetExclusive(t *testing.T) {
	c := l3Small(testL3())
	c.Workload.InputLen, c.Workload.OutputLen = 4000, 200
	c.Workload.Prefill = PrefillSkip // every request decodes from the first iteration
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var s *Snapshot
	for range 30 {
		if s, err = e.Step(); err != nil {
			t.Fatal(err)
		}
	}
	p := e.sys.(*l3)
	spans := s.Timeline.Spans
	overlap := false
	for _, a := range spans {
		if a.Lane < p.laneAtt || a.Lane >= p.laneAtt+p.nrs {
			continue
		}
		for _, b := range spans {
			if b.Lane == p.laneGPU && b.SubBatch != a.SubBatch && b.Start < a.End() && a.Start < b.End() {
				overlap = true
			}
		}
	}
	if !overlap {
		t.Fatal("no PIM attention of one sub-batch overlaps GPU work of the other")
	}
	// Every transfer into a rankset lies between two of its computations: the QKV a dMHA
	// depends on ends before it starts, and no two transfers overlap on the link.
	var last Time
	for _, sp := range spans {
		if sp.Lane != p.laneH2D {
			continue
		}
		if sp.Start < last {
			t.Fatalf("transfers overlap on the link at %v", sp.Start)
		}
		last = sp.End()
	}
	if s.Metrics.Util["pim"] <= 0 || s.Metrics.Util["gpu"] <= 0 || s.Banks.Rows != 16 || s.Banks.Cols != 64 || s.Banks.ColGroup != 16 {
		t.Fatalf("views: util %v, banks %d×%d/%d", s.Metrics.Util, s.Banks.Rows, s.Banks.Cols, s.Banks.ColGroup)
	}
	if len(s.KV.Locations) != 5 || s.KV.Capacity <= 0 || len(s.KV.Locations[0].Holders) == 0 {
		t.Fatalf("KV map: %d locations, capacity %d", len(s.KV.Locations), s.KV.Capacity)
	}
}

// The ablation path of Fig. 10-a on a decode batch whose GPU and PIM work are comparable:
// naive (single batch, monolithic DIMMs, synchronous transfers) < + scheduling (two
// sub-batches) < full L3 (+ rankset-exclusive, asynchronous communication).
func TestAblationOrder(t *testing.T) {
	run := func(mut func(*L3Config)) float64 {
		c := testL3()
		c.Model.Layers = 16
		c.Workload.Requests, c.Workload.Steps = 40, 100
		c.Workload.InputLen, c.Workload.OutputLen = 3000, 200
		c.Workload.Prefill = PrefillSkip
		mut(&c.L3)
		_, r := runAll(t, c)
		return r.ThroughputTokS
	}
	naive := run(func(l *L3Config) { l.Scheduler, l.SubBatches, l.CommOverlap = L3SchedPrefillFirst, 1, false })
	sched := run(func(l *L3Config) { l.CommOverlap = false })
	full := run(func(*L3Config) {})
	if !(naive < sched && sched < full) {
		t.Fatalf("throughput naive %.0f, +scheduling %.0f, full %.0f: want increasing", naive, sched, full)
	}
}

// Charging the CPU transposition instead of the in-flight re-layout triples a GPU→host
// transfer (base + 2 × base, §4.1).
func TestRelayoutCharge(t *testing.T) {
	c := testL3()
	p, _ := newL3(&c)
	base := p.toHost(1e6)
	c.L3.ChargeRelayout = true
	q, _ := newL3(&c)
	lat := p.h2d.Latency
	if got, want := q.toHost(1e6)-lat, 3*(base-lat); got < want-1 || got > want+1 {
		t.Fatalf("charged transfer %v, want %v", got, want)
	}
}

// Eq. 5's linear form, fitted by least squares, recovers a linear law exactly.
func TestPredictorFitsLinearLaw(t *testing.T) {
	var xs [][4]float64
	var ys []float64
	for i := range 40 {
		x := [4]float64{1, float64(i % 7), float64(i % 5), float64(i % 3)}
		xs = append(xs, x)
		ys = append(ys, 10+2*x[1]+3*x[2]+0.5*x[3])
	}
	w := leastSquares(xs, ys)
	for i, want := range []float64{10, 2, 3, 0.5} {
		checkNear(t, "coefficient", w[i], want, 1e-3)
	}
}

// The paper's predictor form runs the same workload to completion (mis-predictions change
// chunk sizes, not correctness).
func TestPaperPredictorRuns(t *testing.T) {
	c := l3Small(testL3())
	c.L3.Predictor = L3PredPaper
	c.Workload.Requests = 60
	_, r := runAll(t, c)
	if r.RequestsCompleted != 60 {
		t.Fatalf("completed %d", r.RequestsCompleted)
	}
}

// Capacity-driven admission: the host's 2 TiB hold far more GPT-175B requests than the GPUs'
// HBM left after the weights.
func TestCapacityDrivenBatch(t *testing.T) {
	batch := func(mut func(*L3Config)) float64 {
		c := testL3()
		c.Model.Layers = 8
		c.Workload.Requests, c.Workload.Steps = 1000, 3
		c.Workload.InputLen, c.Workload.OutputLen = 20000, 100
		c.Workload.Prefill = PrefillSkip // admission is by capacity alone
		mut(&c.L3)
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		peak := 0
		for {
			s, err := e.Step()
			if err != nil {
				break
			}
			peak = max(peak, s.Batch+s.Prefills)
		}
		return float64(peak)
	}
	l3 := batch(func(*L3Config) {})
	gpu := batch(func(l *L3Config) { l.Attention, l.Scheduler, l.SubBatches = L3AttnGPU, L3SchedPrefillFirst, 1 })
	// 8 layers: host 2 TiB / (20K × 16 × 12288 × 2 B) ≈ 279 requests; GPUs ≈ 336.8 GB less the
	// 8-layer model... both are capacity-bound, the host several times more.
	if !(l3 > 3*gpu) || gpu < 1 {
		t.Fatalf("peak batch L3 %v, GPU-only %v", l3, gpu)
	}
}

// Bad configurations are errors that say what is wrong and how to fix it.
func TestL3BadConfigs(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"ranksets beyond layers", func(c *Config) { c.Model.Layers = 3 }, "4 ranksets (2 DIMMs × 2 ranks per channel) but GPT3-175B has 3 layers"},
		{"host too small", func(c *Config) { c.L3.Host.CapacityGiB = 8 }, "its KV cache needs 2.49 GB on its busiest rank but a rank holds 0.13 GB"},
		{"host too small, its advice", func(c *Config) { c.L3.Host.CapacityGiB = 8 }, "raise l3.host.capacity_gib"},
		{"tp does not divide GPUs", func(c *Config) { c.TP = 3; c.Model.Heads, c.Model.KVHeads = 96, 96 }, "tp = 3 does not divide the 8 GPUs"},
		{"pipeline parallel", func(c *Config) { c.PP = 2 }, "set model.pp = 1"},
		{"weights do not fit", func(c *Config) { c.TP = 1; c.L3.GPUs = 1 }, "raise model.tp"},
		{"softmax chunk", func(c *Config) { c.L3.PIM.SoftmaxChunk = 8 }, "set l3.pim.softmax_chunk to at least 16"},
		{"scheduler needs DIMM-PIM", func(c *Config) { c.L3.Attention = L3AttnGPU }, "use l3.scheduler = \"prefill_first\""},
		{"unknown attention", func(c *Config) { c.L3.Attention = "npu" }, "want bank_pim, rank_pim, hbm_pim, cpu or gpu"},
		{"CPU offload single batch", func(c *Config) {
			c.L3.Attention, c.L3.Scheduler, c.L3.SubBatches = L3AttnCPU, L3SchedPrefillFirst, 1
		}, "set l3.sub_batches = 2"},
		{"split if shorter off HBM-PIM", func(c *Config) { c.L3.SplitIfShorter = true }, "it needs l3.attention = \"hbm_pim\" and l3.sub_batches = 2"},
		{"split if shorter, one batch", func(c *Config) {
			c.L3.Attention, c.L3.Scheduler, c.L3.SubBatches, c.L3.SplitIfShorter = L3AttnHBMPIM, L3SchedPrefillFirst, 1, true
		}, "l3.split_if_shorter chooses between one and two decode sub-batches"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testL3()
			tc.mut(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// GPU-only OPT-66B (tp 2, 4 replicas) keeps ≈40 GB per replica for KV, ≈17K tokens: a
// 20,000-token prompt cannot be served, and the error says so rather than failing later.
func TestGPUOnlyOutOfMemory(t *testing.T) {
	c := testL3()
	c.Model, c.TP = l3OPT66B, 2
	c.L3.Attention, c.L3.Scheduler, c.L3.SubBatches = L3AttnGPU, L3SchedPrefillFirst, 1
	c.Workload.InputLen, c.Workload.OutputLen = 20000, 10
	_, err := New(c)
	var oom *UnfitError
	if !errors.As(err, &oom) || !strings.Contains(err.Error(), "request 1 (20000 input + 10 output tokens) can never run: out of memory") ||
		!strings.Contains(err.Error(), "each of the 4 replicas (2 GPUs)") {
		t.Fatalf("got %v", err)
	}
	sys, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	checkNear(t, "replica KV tokens", float64(sys.maxModelLen), 0.99*(2*80*(1<<30)-2*l3OPT66BWeights())/2359296, 0.01)
	// The same prompts fit the host DIMMs of L3.
	c.L3.Attention, c.L3.Scheduler, c.L3.SubBatches = L3AttnBankPIM, L3SchedAdaptive, 2
	if _, err := New(c); err != nil {
		t.Fatalf("L3: %v", err)
	}
	// Outputs longer than a replica holds are cut at max_model_len, as vLLM does.
	c.L3.Attention, c.L3.Scheduler, c.L3.SubBatches = L3AttnGPU, L3SchedPrefillFirst, 1
	c.Workload.InputLen, c.Workload.OutputLen = 1000, 30000
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	p := e.sys.(*l3)
	r := &Request{ID: 1, InputLen: 1000, OutputLen: 30000, Loc: -1}
	if loc := p.place(r, nil); loc < 0 || r.OutputLen != p.maxModelLen-1000 {
		t.Fatalf("placed at %d with output %d, want %d", loc, r.OutputLen, p.maxModelLen-1000)
	}
}

func l3OPT66BWeights() float64 {
	return Shard{Model: l3OPT66B, TP: 2, PP: 1, Precision: 2}.WeightBytes()
}

// Every system of the family runs to completion, and deterministically.
func TestL3FamilyRuns(t *testing.T) {
	for _, mut := range []func(*L3Config){
		func(*L3Config) {},
		func(l *L3Config) { l.Attention, l.Scheduler = L3AttnHBMPIM, L3SchedPrefillFirst },
		func(l *L3Config) { l.Attention, l.Scheduler, l.SubBatches = L3AttnRankPIM, L3SchedPrefillFirst, 1 },
		func(l *L3Config) { l.Attention, l.Scheduler, l.SubBatches = L3AttnGPU, L3SchedPrefillFirst, 1 },
		func(l *L3Config) { l.Attention, l.Scheduler = L3AttnCPU, L3SchedPrefillFirst },
		func(l *L3Config) { l.CommOverlap, l.ChargeRelayout = false, true },
	} {
		c := l3Small(testL3())
		mut(&c.L3)
		_, a := runAll(t, c)
		_, b := runAll(t, c)
		if a.RequestsCompleted != 40 || a.TokensGenerated != 40*30 {
			t.Fatalf("%s/%s: completed %d, tokens %d", c.L3.Attention, c.L3.Scheduler, a.RequestsCompleted, a.TokensGenerated)
		}
		if a.SimTimeS != b.SimTimeS || a.ThroughputTokS != b.ThroughputTokS {
			t.Fatalf("%s: not deterministic", c.L3.Attention)
		}
		for k, v := range a.Utilization {
			if v < 0 || v > 1.0001 {
				t.Errorf("%s: utilization %s = %v", c.L3.Attention, k, v)
			}
		}
	}
}

// A request trace with bad rows is rejected with the row and what is wrong.
func TestTraceBadRows(t *testing.T) {
	for _, c := range []struct{ csv, want string }{
		{"arrival_s,input_len,output_len\n0,96,12000\n0.5,abc,10\n", "line 3:5: input_len \"abc\" is not a whole number of tokens"},
		{"0,96\n", "line 1: want 3 fields"},
		{"1,10,10\n0.5,10,10\n", "earlier than the previous row's 1; sort the trace by arrival"},
		{"0,10,0\n", "output_len \"0\" is not a whole number of tokens between 1 and"},
	} {
		_, _, err := ReadTrace(strings.NewReader(c.csv))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.csv, err, c.want)
		}
	}
}

// §4.4 transfer sizes for GPT-175B: decode Q/K/V 3 · D_e · 2 B = 72 KiB and the attention
// output D_e · 2 B = 24 KiB per request and layer; a prefill token's K and V 2 · D_e · 2 B =
// 48 KiB per layer, 96 × 48 KiB = 4.5 MiB over the model (its whole KV).
func TestL3TransferSizes(t *testing.T) {
	c := testL3()
	p, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.qkvBytes(1); got != 72*1024 {
		t.Errorf("QKV per request %v, want 73728", got)
	}
	if got := p.outBytes(1); got != 24*1024 {
		t.Errorf("output per request %v, want 24576", got)
	}
	if got := p.pkvBytes(1); got != 48*1024 {
		t.Errorf("prefill KV per token %v, want 49152", got)
	}
	if got := float64(p.sh.Layers) * p.pkvBytes(1); got != 4718592 {
		t.Errorf("prefill KV per token over the model %v, want 4.5 MiB", got)
	}
	// GPT→host link: 8 GPUs × 25 GB/s capped at the 100 GB/s of the host uplinks, 2 µs per
	// transfer: 72 KiB × 10 requests in 2 µs + 7.3728 µs.
	if got, want := p.toHost(p.qkvBytes(10)), 2*Microsecond+FromSeconds(737280/100e9); got != want {
		t.Errorf("toHost(10 requests' QKV) = %v, want %v", got, want)
	}
}

// §4.10: the causal attention of a chunk of c tokens after f prefilled ones is
// 4 · (heads/tp) · D_h · (c·f + c(c+1)/2) FLOPs per GPU, and it reads the K/V of f + c tokens.
func TestL3PrefillAttentionWork(t *testing.T) {
	c := testL3()
	p, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	fl, by := p.pmhaWork(16, 32)
	// GPT-175B at tp 8: 12 heads × 128 per GPU; 16·32 + 16·17/2 = 648
	if want := 4.0 * 12 * 128 * 648; fl != want {
		t.Errorf("FLOPs %v, want %v", fl, want)
	}
	if want := 48.0 * 2 * 12 * 128 * 2; by != want {
		t.Errorf("bytes %v, want %v", by, want)
	}
	// FC per layer per GPU: 24 · n · D_e² / tp FLOPs (QKV 6, projection 2, FFN 16).
	n := 64
	fc := p.genCost(n).flops + p.ffCost(n).flops
	checkNear(t, "FC FLOPs", fc, 24*float64(n)*12288*12288/8, 1e-9)
}

// Eq. 2/4 with rankset-exclusive transfers: the PIM side of a sub-batch is its decode
// attention, its Q/K/V in (one transfer per receiving rankset, each with the link latency)
// and outputs back, and the other sub-batch's prefill KV.
func TestL3PIMSlot(t *testing.T) {
	c := testL3()
	p, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	var sb l3SB
	for i := range 8 {
		sb.dec = append(sb.dec, &Request{ID: i + 1, InputLen: 1000})
	}
	sb.tD = 100 * Microsecond
	lat := 2 * Microsecond
	// 8 requests over 4 ranksets: 4 QKV transfers and 4 outputs, each with 2 µs latency
	want := sb.tD + 8*lat + FromSeconds(8*73728/100e9) + FromSeconds(8*24576/100e9)
	if got := p.pimSlot(&sb, 0); got < want-2 || got > want+2 {
		t.Errorf("pimSlot = %v, want %v", got, want)
	}
	// + 100 prefill tokens of the other sub-batch, sent to 4 ranksets
	want += 4*lat + FromSeconds(100*49152/100e9)
	if got := p.pimSlot(&sb, 100); got < want-3 || got > want+3 {
		t.Errorf("pimSlot with prefill KV = %v, want %v", got, want)
	}
	// A monolithic DIMM pool takes one transfer each way.
	c.L3.CommOverlap = false
	q, _ := newL3(&c)
	want = sb.tD + 2*lat + FromSeconds(8*73728/100e9) + FromSeconds(8*24576/100e9)
	if got := q.pimSlot(&sb, 0); got < want-2 || got > want+2 {
		t.Errorf("monolithic pimSlot = %v, want %v", got, want)
	}
}

// §5.1: with the communication overlap the prefill KV goes to the host asynchronously: it
// runs while the GPUs compute and no GPU work waits for it. Without it (the monolithic
// DIMMs of the naive design) it is synchronous: the decode Q/K/V of its sub-batch and
// layer, and so the sub-batch's attention and next Proj+FF, wait behind it.
func TestL3AsyncPrefillKV(t *testing.T) {
	type key struct{ layer, sb int }
	check := func(overlap bool) (pkv, beside, gpuWaits, behind int) {
		c := testL3()
		c.Model.Layers = 8
		c.Workload.Requests = 20
		c.Workload.InputLen, c.Workload.OutputLen = 2000, 50
		c.L3.CommOverlap = overlap
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		p := e.sys.(*l3)
		gpu := func(l int) bool { return l >= p.laneGPU && l < p.laneGPU+p.dp }
		for range 40 {
			s, err := e.Step()
			if err != nil {
				t.Fatal(err)
			}
			sp := s.Timeline.Spans
			pEnd := map[key]Time{}
			for _, a := range sp {
				if a.Name != "prefill KV" {
					continue
				}
				pkv++
				pEnd[key{a.Layer, a.SubBatch}] = max(pEnd[key{a.Layer, a.SubBatch}], a.End())
				for _, b := range sp {
					if gpu(b.Lane) && b.Start < a.End() && a.Start < b.End() {
						beside++
						break
					}
				}
			}
			for _, a := range sp {
				if end, ok := pEnd[key{a.Layer, a.SubBatch}]; ok && a.Name == "QKV" && a.Start >= end {
					behind++
				}
			}
			for _, b := range s.Timeline.Bubbles {
				if gpu(b.Lane) && b.Cause == CauseDependency && b.Waited >= 0 && sp[b.Waited].Name == "prefill KV" {
					gpuWaits++
				}
			}
		}
		return
	}
	if n, beside, w, _ := check(true); n == 0 || beside == 0 || w != 0 {
		t.Errorf("overlap: %d prefill-KV transfers, %d beside GPU work, %d GPU waits on them; want some, some and none", n, beside, w)
	}
	if n, _, _, behind := check(false); n == 0 || behind == 0 {
		t.Errorf("monolithic: %d prefill-KV transfers, %d decode QKV transfers behind them; want the decode path to wait", n, behind)
	}
}

// A batch whose lengths agree modulo the 16-token slot crosses its K slots and V steps at
// the same iterations: its read steps are a constant per request plus one staircase the
// planner counts, across slot boundaries and past the rank PU's buffer. A batch out of
// step, on both sides of the buffer or with a sliding window has none, and cycle then
// keeps the stretch within the current slot.
func TestL3StairsCountLockstepReads(t *testing.T) {
	c := testL3()
	c.Model = l3OPT66B
	c.TP = 2
	p, err := newL3(&c)
	if err != nil {
		t.Fatal(err)
	}
	batch := func(lens ...int) []*Request {
		var rs []*Request
		for i, s := range lens {
			rs = append(rs, &Request{ID: i + 1, InputLen: s})
		}
		return rs
	}
	const n = 40
	for _, lens := range [][]int{{1000, 1016, 1512}, {7, 23}, {131040, 131056}, {131073, 131089, 140001}} {
		d := batch(lens...)
		per, limit := p.cycle(d, n)
		edge := math.MaxInt
		if last := lens[len(lens)-1]; last <= 131072 {
			edge = 131072 - last + 1
		}
		if per != 16 || limit != edge {
			t.Errorf("%v: cycle = %d, %d, want the 16-token period up to the buffer's edge, %d", lens, per, limit, edge)
		}
		m := min(n, limit)
		ys := p.stairs(d, m)
		if len(ys) != m {
			t.Fatalf("%v: stairs = %v, want %d steps", lens, ys, m)
		}
		for k := range m {
			var got, at0 int64
			for _, r := range d {
				got += p.layout.steps(r.SeqLen() + k)
				at0 += p.layout.steps(r.SeqLen())
			}
			if want := at0 + int64(len(d)*p.layout.computeMul*(ys[k]-ys[0])); got != want {
				t.Errorf("%v at +%d: %d read steps, the staircase says %d", lens, k, got, want)
			}
		}
	}
	windowed := batch(1000, 1016)
	windowed[1].window = 4096
	for name, d := range map[string][]*Request{"out of step": batch(1000, 1004), "both sides of the buffer": batch(131064, 131080), "windowed": windowed} {
		if ys := p.stairs(d, n); ys != nil {
			t.Errorf("%s: stairs = %v, want none", name, ys)
		}
	}
	// Out of step, a short stretch's period is the V step's up to the first K slot, which
	// the request of 1,004 tokens fills at its fifth token.
	if per, limit := p.cycle(batch(1000, 1004), 12); per != 4 || limit != 5 {
		t.Errorf("out of step: cycle = %d, %d, want 4, 5", per, limit)
	}
}

// Every N_rs layers an iteration in the DIMMs runs the same ops; the layers the emitter
// copies once a period repeats are the layers it lays out one by one, span for span and
// bubble for bubble, with the ranksets' busy and receiving times. The naive mapping and
// the baselines off the DIMMs, whose replicas each keep their own pace, copy nothing.
func TestL3LayersCopiedAsLaidOut(t *testing.T) {
	for _, m := range []struct {
		name string
		mut  func(*L3Config)
		per  int
	}{
		{"bank PIM", func(*L3Config) {}, 4},
		{"rank PIM", func(l *L3Config) { l.Attention, l.Scheduler, l.SubBatches = L3AttnRankPIM, L3SchedPrefillFirst, 1 }, 4},
		{"HBM-PIM", func(l *L3Config) { l.Attention, l.Scheduler = L3AttnHBMPIM, L3SchedPrefillFirst }, 0},
		{"GPU", func(l *L3Config) { l.Attention, l.Scheduler, l.SubBatches = L3AttnGPU, L3SchedPrefillFirst, 1 }, 0},
		{"CPU", func(l *L3Config) { l.Attention, l.Scheduler = L3AttnCPU, L3SchedPrefillFirst }, 0},
		{"naive", func(l *L3Config) { l.CommOverlap = false }, 0},
	} {
		c := testL3()
		c.Model, c.TP = l3OPT66B, 2
		c.Workload.Requests, c.Workload.MaxBatch = 200, 120
		m.mut(&c.L3)
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		p := e.sys.(*l3)
		if got := p.layerPeriod(); got != m.per {
			t.Errorf("%s: layerPeriod = %d, want %d", m.name, got, m.per)
		}
		layout := func(per int) (*Schedule, []Time, []Time, int) {
			s := NewSchedule(p.lane, 0, 0)
			em := p.emitter(s)
			copied := em.layers(p.sh.Layers, per, l3Cycle)
			em.close()
			s.Finish()
			return s, slices.Clone(p.rsBusy), slices.Clone(p.rsRecv), copied
		}
		copied := 0
		for step := range 60 {
			if _, err := e.Step(); err != nil {
				t.Fatal(err)
			}
			a, busyA, recvA, n := layout(p.layerPeriod())
			b, busyB, recvB, _ := layout(0)
			copied += n
			if !reflect.DeepEqual(a, b) || !slices.Equal(busyA, busyB) || !slices.Equal(recvA, recvB) {
				t.Fatalf("%s, iteration %d: the copied layers differ from the layers laid out one by one", m.name, step)
			}
		}
		if (copied > 0) != (m.per > 0) {
			t.Errorf("%s: %d layers copied over 60 iterations, want some exactly where the layers repeat", m.name, copied)
		}
	}
}

// A layout may repeat only every few periods of layers, as the GPUs and the ranksets take
// turns holding each other up; copied by units of up to l3Cycle periods, it is still the
// layout laid out layer by layer, and some batches copy more layers so than by single
// periods.
func TestL3LayersCopiedByCycles(t *testing.T) {
	c := testL3()
	c.Model, c.TP = l3OPT66B, 2
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	p := e.sys.(*l3)
	rng := rand.New(rand.NewPCG(1, 2))
	more := 0
	for trial := range 100 {
		var dec []*Request
		for i := range 20 + rng.IntN(80) {
			dec = append(dec, &Request{ID: i + 1, InputLen: 100 + rng.IntN(15000), OutputLen: 1 << 20, Status: Running, Loc: 0})
		}
		layout := func(per, cycle int) (*Schedule, []Time, []Time, int) {
			s := NewSchedule(p.lane, 0, 0)
			p.buildFixed(dec, nil)
			em := p.emitter(s)
			copied := em.layers(p.sh.Layers, per, cycle)
			em.close()
			s.Finish()
			return s, slices.Clone(p.rsBusy), slices.Clone(p.rsRecv), copied
		}
		a, busyA, recvA, n := layout(p.layerPeriod(), l3Cycle)
		b, busyB, recvB, _ := layout(0, 0)
		if !reflect.DeepEqual(a, b) || !slices.Equal(busyA, busyB) || !slices.Equal(recvA, recvB) {
			t.Fatalf("batch %d: the layers copied by cycles differ from the layers laid out one by one", trial)
		}
		if _, _, _, one := layout(p.layerPeriod(), 1); n > one {
			more++
		}
	}
	if more == 0 {
		t.Error("no batch copied more layers by cycles of periods than by single periods")
	}
}
