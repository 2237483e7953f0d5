package sim

import (
	"math"
	"strings"
	"testing"
)

// lpQwen7B is Qwen1.5-7B as LoL-PIM's Table 1 and the public config give it.
var lpQwen7B = Model{Name: "qwen1.5-7b", Display: "Qwen1.5-7B", Layers: 32, DModel: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, FFN: "swiglu", DFFN: 11008, Vocab: 151936}

var lpQwen72B = Model{Name: "qwen1.5-72b", Display: "Qwen1.5-72B", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 64, HeadDim: 128, FFN: "swiglu", DFFN: 24576, Vocab: 152064}

// lpMusique is LongBench Musique (LoL-PIM Table 2) with 256 output tokens.
var lpMusique = Dataset{Name: "musique", InMean: 16362, InStd: 1651, InMin: 6820, InMax: 17917, OutMean: 256, OutMin: 256, OutMax: 256, MaxSeqLen: 32768}

// lpConfig is the lolpim preset: 16 nodes of 8 AiM modules (Table 5), ITPP, DPA, ping-pong.
func lpConfig() Config {
	return Config{
		System: SystemLoLPIM, Model: lpQwen7B, TP: 1, PP: 1, Precision: 2,
		Workload: Workload{Dataset: lpMusique, Requests: 240, MaxBatch: 120, Arrival: ArrivalClosed, Prefill: PrefillSkip, KVPolicy: KVPaged, Seed: 1},
		LoLPIM: LoLPIMConfig{
			Nodes: 16, ModulesPerNode: 8, Channels: 16, BanksPerChannel: 16, RowsPerBank: 16384, RowBytes: 2048,
			ClockGHz: 1, MACElems: 16, GBBytes: 2048, OutRegs: 2, ChannelGBps: 32, RdOutNs: 1, TModNs: 16, EPUElemsPerNs: 32,
			TRCDNs: 28, TRTPNs: 6, TRPNs: 16, TRFCNs: 105, TREFINs: 1666.5,
			InterfaceGBps: 64, InterNodeGBps: 10, HostSyncUs: 5,
			Partitioning: PartitionITPP, Memory: MemoryDynamic, StaticMaxCtx: 32768, ChunkRows: 2, PingPong: true,
		},
	}
}

func lpNew(t *testing.T, c Config) *lolpim {
	t.Helper()
	p, err := newLoLPIM(&c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func lpNear(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The TP × PP split: ITPP keeps a TP group in a node and pipelines across nodes; the
// head-first baseline is tensor-parallel only; one degree is derived from the other.
func TestLoLPIMSplit(t *testing.T) {
	c := lpConfig()
	p := lpNew(t, c)
	if p.tp != 8 || p.pp != 16 || p.hq != 4 || p.stLayers[0] != 2 || p.first[15] != 30 {
		t.Fatalf("ITPP on 16 nodes: tp %d pp %d heads %d layers %v", p.tp, p.pp, p.hq, p.stLayers)
	}
	c.LoLPIM.Partitioning = PartitionHFA
	p = lpNew(t, c)
	// 128 modules over 32 heads: each head's requests shared by 4 modules (by slot).
	if p.tp != 128 || p.pp != 1 || p.grp != 4 || p.hq != 1 {
		t.Fatalf("HFA: tp %d pp %d grp %d hq %d", p.tp, p.pp, p.grp, p.hq)
	}
	c = lpConfig()
	c.LoLPIM.TP = 32
	p = lpNew(t, c)
	if p.tp != 32 || p.pp != 4 {
		t.Fatalf("tp=32: pp %d", p.pp)
	}
	// 80 layers over 3 stages: 27, 27, 26.
	c = lpConfig()
	c.Model = lpQwen72B
	c.LoLPIM.Nodes, c.LoLPIM.ModulesPerNode, c.LoLPIM.TP = 3, 8, 8
	p = lpNew(t, c)
	if p.pp != 3 || p.stLayers[0] != 27 || p.stLayers[2] != 26 || p.first[2] != 54 {
		t.Fatalf("72B over 3 stages: %v %v", p.stLayers, p.first)
	}
}

// Capacity (Table 5: 8 GiB modules of 16 × 16 banks × 16384 rows × 2 KB). Qwen1.5-7B holds
// 7,720,665,088 parameters (32 × 202,375,168 per layer + 2 × 151,936 × 4,096 for the
// untied embedding and LM head); at 2 B over 128 modules that is 120,635,392 B = 230.1 →
// 231 row-indices of 512 KiB, leaving (16384 − 231) / 2 = 8076 chunks of 1 MiB.
func TestLoLPIMCapacity(t *testing.T) {
	p := lpNew(t, lpConfig())
	if got := lpParams(lpQwen7B); got != 7_720_665_088 {
		t.Fatalf("params %v", got)
	}
	if p.weightRows != 231 || p.chunkCap != 8076 {
		t.Fatalf("weight rows %d, chunks %d", p.weightRows, p.chunkCap)
	}
	// Per module and stage (2 layers × 4 heads × 128 = 1024 elements per token): keys take
	// one row-index per 256 tokens, values 4 per 1024 tokens. T_cur = 300 needs LB = 2 key
	// rows (1 chunk) and 4 value rows (2 chunks), as the paper's DPA example (LB = 2).
	if k, v := p.chunks(300); k != 1 || v != 2 {
		t.Fatalf("chunks(300) = %d, %d", k, v)
	}
	// A 32K static reservation: 128 + 128 rows = 128 chunks, so 8076 / 128 = 63 requests
	// fit, the static batch at 1024 GB.
	if k, v := p.chunks(32768); k != 64 || v != 64 || p.chunkCap/(k+v) != 63 {
		t.Fatalf("chunks(32768) = %d, %d", k, v)
	}
}

// lpUntimed is lpConfig with MACs at one a cycle: no row openings, no refresh.
func lpUntimed() Config {
	c := lpConfig()
	c.LoLPIM.TRCDNs, c.LoLPIM.TRTPNs, c.LoLPIM.TRPNs, c.LoLPIM.TRFCNs, c.LoLPIM.TREFINs = 0, 0, 0, 0, 0
	return c
}

// An all-bank MAC stream pays for its DRAM rows with the public AiM simulator's AiM timing
// (tCK = 0.5 ns: nRCDRDMAC = 56, nRTP = 12, nRP = 32, nRFC = 210, nREFI = 3333): a 2 KB row
// holds 64 MACs of 16 two-byte elements, and each row opened in all banks costs
// tRCD + tRTP + tRP = 28 + 6 + 16 = 50 ns on top of its 64 one-cycle MACs; each refresh
// closes the row, refreshes and reopens it, a 6 + 16 + 105 + 28 = 155 ns pause every
// 1666.5 ns, which stretches the MACs by 1666.5 / 1511.5.
func TestLoLPIMRowAndRefreshTiming(t *testing.T) {
	p := lpNew(t, lpConfig())
	if p.macsPerRow != 64 || p.rowNs != 50 || p.c.RefreshPauseNs() != 155 {
		t.Fatalf("MACs per row %d, row %v ns, refresh pause %v ns", p.macsPerRow, p.rowNs, p.c.RefreshPauseNs())
	}
	stretch := 1666.5 / 1511.5
	for _, c := range []struct{ cycles, rows float64 }{{64, 1}, {65, 2}, {512, 8}, {1536, 24}} {
		want := (c.cycles + c.rows*50) * stretch
		if got := p.macNs(c.cycles); !lpNear(got, want) {
			t.Errorf("%v MAC cycles: %v ns, want %v", c.cycles, got, want)
		}
	}
	// The key of token T_cur is in row T_cur/256 of its bank, which holds that token's
	// keys of the module's heads: QKᵀ of 4 heads of 16K tokens opens 64 rows for its
	// 64 × 4 × 8 = 2048 MAC cycles, 32 MACs a row instead of 64.
	if q := p.qktITPP(16384, 4); !lpNear(q.mac, (2048+64*50)*stretch) {
		t.Fatalf("QKᵀ %+v", q)
	}
	// A full run at 7B on Musique loses to them at most the MACs' 1 − 64 / 114 / 1.103 =
	// 49 % of what it reaches untimed (less where transfers, not MACs, bound a phase), and
	// at least 15 %.
	run := func(c Config) float64 { return lpStep(t, lpEngine(t, c), 3).Metrics.Util["pim"] }
	timed, untimed := run(lpConfig()), run(lpUntimed())
	if r := timed / untimed; r < 64/114.0/stretch || r > 0.85 {
		t.Fatalf("utilisation %.3f timed vs %.3f untimed (ratio %.3f)", timed, untimed, r)
	}
	c := lpConfig()
	c.LoLPIM.TRFCNs, c.LoLPIM.TREFINs = 200, 250
	if _, err := newLoLPIM(&c); err == nil || !strings.Contains(err.Error(), "pause 250 ns for each refresh") || !strings.Contains(err.Error(), "t_refi_ns must exceed 250") {
		t.Fatalf("refresh longer than its interval: %v", err)
	}
}

// The command-stream costs of §4's mapping with the public AiM simulator's register
// transfers: a GB fill of 2 KB takes 64 ns (WRGB, 32 B a ns), an RD-OUT 1 ns (RDMAC16), and
// every run of transfers between MAC runs is entered and left by a 16 ns mode switch (TMOD).
// MACs at one a cycle here (TestLoLPIMRowAndRefreshTiming adds the rows).
func TestLoLPIMCommandCosts(t *testing.T) {
	p := lpNew(t, lpUntimed())
	if p.tFill != 64 || p.tRd != 1 || p.c.TModNs != 16 {
		t.Fatalf("fill %v rd %v mode switch %v", p.tFill, p.tRd, p.c.TModNs)
	}
	// QKV of Qwen1.5-7B at TP 8: M = 3 × 4096 / 8 = 1536 rows over 256 PUs = 6 each, K = 4096:
	// 6 × 256 = 1536 MAC cycles; 3 pairs of rows × 4 GB fills (768 ns), 6 RD-OUTs, and 13 runs
	// of transfers (each fill, the last read-out alone) with 2 switches each (416 ns).
	c := p.fc[0]
	if !lpNear(c.mac, 1536) || !lpNear(c.dt, 768+6+13*32) || !lpNear(c.pro, 64+1+32) || !lpNear(c.path, 768) || !lpNear(c.bytes, 12*16*2048+6*256*2) {
		t.Fatalf("QKV %+v", c)
	}
	// Proj: M = 4096 (16 rows a PU), K = 4096 / 8 = 512 fits the GB: one fill serves all 8
	// pairs of rows, whose read-outs are 8 more runs.
	if c := p.fc[1]; !lpNear(c.mac, 16*32) || !lpNear(c.dt, 64+16+9*32) {
		t.Fatalf("Proj %+v", c)
	}
	// FFN2: M = 4096 (16 rows a PU), K = 11008 / 8 = 1376: 16 × 86 MAC cycles; 8 × 2 fills;
	// 16 reads; 17 runs.
	if c := p.fc[3]; !lpNear(c.mac, 1376) || !lpNear(c.dt, 16*64+16+17*32) {
		t.Fatalf("FFN2 %+v", c)
	}
	// QKᵀ of 4 heads of 16K tokens under ITPP: 64 tokens a PU × 4 heads × 8 MACs = 2048
	// cycles; one fill (the queries), 256 reads in 128 pairs: 64 + 256 + 129 × 32 ns.
	q := p.qktITPP(16384, 4)
	if !lpNear(q.mac, 2048) || !lpNear(q.dt, 64+256+129*32) || !lpNear(q.path, 64) {
		t.Fatalf("QKᵀ %+v", q)
	}
	// SV of a head pair (128 banks each): 16384 / 16 = 1024 MAC cycles, 16 fills of scores
	// on each head's channels and one read; the broadcast path carries each head's 16 fills
	// (2048 ns), more than a channel's 16 fills, one read and 17 runs (1569 ns).
	v := p.svITPP(16384, 2)
	if !lpNear(v.mac, 1024) || !lpNear(v.dt, 16*64+1+17*32) || !lpNear(v.path, 2*16*64) {
		t.Fatalf("SV %+v", v)
	}
	// Three heads need two passes.
	if v3 := p.svITPP(16384, 3); !lpNear(v3.mac, 2048) || !lpNear(v3.path, 3*16*64) {
		t.Fatalf("SV of 3 heads %+v", v3)
	}
	// HFA: one (request, head) pair in one channel of 16 banks: QKᵀ scores 1024 tokens a
	// bank (8192 MAC cycles, 1024 reads in 512 pairs); SV gives each bank 8 of the 128
	// output elements, 2 at a time (4 passes of 16 score fills).
	if h := p.qktHFA(16384); !lpNear(h.mac, 8192) || !lpNear(h.dt, 64+1024+513*32) {
		t.Fatalf("HFA QKᵀ %+v", h)
	}
	if h := p.svHFA(16384); !lpNear(h.mac, 8192) || !lpNear(h.dt, 64*64+8+65*32) || !lpNear(h.path, 64*64) {
		t.Fatalf("HFA SV %+v", h)
	}
}

// Fig. 7(a): I/O-aware buffering cuts QKᵀ by 40 %, SV by 44 %, FFN1 by 29 % and FFN2 by
// 28 %; with the AiM timing and transfers above, Qwen1.5-7B at TP 8 (4 heads a module,
// Musique's 16K tokens) loses 42 %, 42 %, 30 % and 35 %.
func TestLoLPIMPingPongCuts(t *testing.T) {
	p := lpNew(t, lpConfig())
	for _, c := range []struct {
		name     string
		cost     lpCost
		lo, high float64
	}{
		{"QKᵀ", p.qktITPP(16384, 4), 0.38, 0.46},
		{"SV", p.svITPP(16384, 4), 0.38, 0.46},
		{"FFN1", p.fc[2], 0.25, 0.33},
		{"FFN2", p.fc[3], 0.31, 0.39},
	} {
		if cut := 1 - c.cost.dur(true)/c.cost.dur(false); cut < c.lo || cut > c.high {
			t.Errorf("%s: ③ cuts %.1f %%, want %.0f–%.0f %%", c.name, 100*cut, 100*c.lo, 100*c.high)
		}
	}
}

// All channels share one broadcast input path: under head-first allocation each channel
// fills its GB with its own pair's scores, one channel after another, so SV of 8 requests
// on 8 channels takes 8 channels' fills (8 × 64 fills × 64 ns), not one channel's work.
func TestLoLPIMBroadcastPath(t *testing.T) {
	c := lpUntimed()
	c.LoLPIM.Partitioning, c.LoLPIM.Memory, c.LoLPIM.PingPong, c.LoLPIM.TP = PartitionHFA, MemoryStatic, false, 32
	p := lpNew(t, c)
	var reqs []*Request
	for i := range 8 {
		reqs = append(reqs, &Request{ID: i, InputLen: 16384})
		p.reqs[i] = &lpReq{slot: i}
	}
	w := p.mbWork(reqs, false)
	one := p.svHFA(16384)
	if !lpNear(w.sv.d, 8*one.path) || one.dur(false) >= 8*one.path {
		t.Fatalf("SV of 8 channels %v ns, one channel %v ns, its fills %v ns", w.sv.d, one.dur(false), one.path)
	}
	// The queries are one fill a channel: QKᵀ waits for its slowest channel.
	if q := p.qktHFA(16384); !lpNear(w.qkt.d, q.dur(false)) {
		t.Fatalf("QKᵀ %v ns, one channel %v ns", w.qkt.d, q.dur(false))
	}
}

// TP all-reduce: the node's modules send their partial sums to the host over the 64 GB/s
// interface, the host multicasts the sum back; across nodes a ring over the 10 GB/s links.
func TestLoLPIMAllReduce(t *testing.T) {
	p := lpNew(t, lpConfig())
	if got := p.allReduce(65536, 0); !lpNear(got, 9*65536/64.0) {
		t.Fatalf("in a node: %v ns", got)
	}
	c := lpConfig()
	c.LoLPIM.Partitioning = PartitionHFA
	p = lpNew(t, c)
	v := 63 * 4096 * 2.0
	if got := p.allReduce(v, 0); !lpNear(got, 9*v/64+2*15.0/16*v/10) {
		t.Fatalf("over 16 nodes: %v ns", got)
	}
	// Stage hand-offs: in a node over the interface, across nodes over the link, and from
	// the last stage through the host back to the first.
	c = lpConfig()
	c.LoLPIM.TP = 4
	p = lpNew(t, c)
	if !lpNear(p.handoff(8192, 0), 8192/64.0) || !lpNear(p.handoff(8192, 1), 8192/10.0) || !lpNear(p.handoff(8192, p.pp-1), 2*8192/64.0) {
		t.Fatalf("hand-offs %v %v %v", p.handoff(8192, 0), p.handoff(8192, 1), p.handoff(8192, p.pp-1))
	}
}

func lpEngine(t *testing.T, c Config) *Engine {
	t.Helper()
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func lpStep(t *testing.T, e *Engine, n int) *Snapshot {
	t.Helper()
	var s *Snapshot
	for range n {
		x, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		s = x
	}
	return s
}

// Each iteration fills the pipeline and drains it (GPipe's synchronous schedule; the host
// synchronises between iterations): M micro-batches over S stages take M + S − 1 visit
// times, and each stage idles S − 1 of them (Fig. 5b). Here S = 4 stages of 8 layers.
func TestLoLPIMPipelineBubbles(t *testing.T) {
	c := lpConfig()
	c.LoLPIM.Nodes, c.LoLPIM.ModulesPerNode, c.LoLPIM.TP = 1, 8, 2
	c.Workload = Workload{Dataset: lpMusique, Requests: 100, MaxBatch: 4, Arrival: ArrivalClosed, Prefill: PrefillSkip, InputLen: 4096, OutputLen: 64, Seed: 1}
	period := func(mb, batch int) (Time, float64) {
		c := c
		c.LoLPIM.MicroBatch = mb
		c.Workload.MaxBatch = batch
		e := lpEngine(t, c)
		s := lpStep(t, e, 2)
		return s.IterTime, s.Metrics.Bubble["pim"]
	}
	one, idle1 := period(1, 1)  // M = 1: 4 visit times
	four, idle4 := period(1, 4) // M = 4: 4 + 3 = 7 visit times
	whole, _ := period(4, 4)    // M = 1 of four times the work: 16 visit times
	if r := float64(four) / float64(one); r < 1.6 || r > 1.9 {
		t.Errorf("four micro-batches over four stages take 7/4 the time of one: %v vs %v (%.2f)", four, one, r)
	}
	if r := float64(whole) / float64(four); r < 2.1 || r > 2.4 {
		t.Errorf("one micro-batch of four takes 16/7 the time of four of one: %v vs %v (%.2f)", whole, four, r)
	}
	if idle1 < 0.7 || idle4 < 0.35 || idle4 > 0.5 {
		t.Errorf("MAC lanes idle %.2f with M = 1 (want 3/4), %.2f with M = 4 (want 3/7)", idle1, idle4)
	}
}

// The host's micro-batch: no fixed size does better. Over 16 stages the host sync (5 µs)
// is small beside a request's visit, so it takes single requests and the pipeline drains
// 15 visits of 135; an expensive sync makes it take larger ones; without a pipeline it
// takes the whole batch.
func TestLoLPIMHostMicroBatch(t *testing.T) {
	c := lpConfig()
	c.LoLPIM.Nodes, c.Workload.MaxBatch = 4, 24
	iter := func(c Config) (Time, int) {
		e := lpEngine(t, c)
		s := lpStep(t, e, 2)
		p := e.sys.(*lolpim)
		return s.IterTime, p.microBatch(e.running)
	}
	best, b := iter(c)
	if b != 1 {
		t.Errorf("host takes micro-batches of %d with a 5 µs sync", b)
	}
	for _, mb := range []int{2, 3, 6, 24} {
		c := c
		c.LoLPIM.MicroBatch = mb
		if got, _ := iter(c); got < best {
			t.Errorf("micro-batches of %d: %v, faster than the host's %v", mb, got, best)
		}
	}
	c.LoLPIM.HostSyncUs = 2000
	slow, b := iter(c)
	if b <= 1 || b >= 24 {
		t.Errorf("a 2 ms sync: micro-batches of %d", b)
	}
	c.LoLPIM.MicroBatch = 1
	if one, _ := iter(c); one < slow {
		t.Errorf("a 2 ms sync: micro-batches of 1 take %v, the host's %d take %v", one, b, slow)
	}
	c = lpConfig()
	c.LoLPIM.Partitioning, c.LoLPIM.Memory, c.LoLPIM.PingPong = PartitionHFA, MemoryStatic, false
	if _, b := iter(c); b != 63 {
		t.Errorf("tensor-parallel only: micro-batches of %d of 63", b)
	}
}

// With more modules than heads, ITPP gives each head tp/heads modules, which share its
// requests by batch slot: a stage waits for the module whose share is the most work.
func TestLoLPIMITPPSharedHeads(t *testing.T) {
	c := lpConfig()
	c.LoLPIM.TP = 64 // 32 heads: two modules a head
	p := lpNew(t, c)
	if p.tp != 64 || p.pp != 2 || p.grp != 2 || p.hq != 1 {
		t.Fatalf("tp %d pp %d grp %d hq %d", p.tp, p.pp, p.grp, p.hq)
	}
	long, short := &Request{ID: 0, InputLen: 16384}, &Request{ID: 1, InputLen: 4096}
	p.reqs[0], p.reqs[1] = &lpReq{slot: 0}, &lpReq{slot: 1}
	w := p.mbWork([]*Request{long, short}, true)
	q := p.qktITPP(16384, 1)
	if !lpNear(w.qkt.d, q.dur(true)) {
		t.Fatalf("QKᵀ %v ns; the long request's module alone takes %v", w.qkt.d, q.dur(true))
	}
	if p.bankDiff[0] <= p.bankDiff[p.P+1] {
		t.Fatalf("module of slot 0 (%v) not busier than that of slot 1 (%v)", p.bankDiff[0], p.bankDiff[p.P+1])
	}
	if !strings.Contains(p.rowNotes()[1], "slots ≡ 1 mod 2 · ITPP") {
		t.Fatalf("row note %q", p.rowNotes()[1])
	}
}

// Static reservation admits ⌊8076 / 128⌋ = 63 requests, each with a contiguous 128-chunk
// region mostly reserved but empty; DPA admits by current length and hands out chunks from
// the free list, non-contiguously, returning them when a request ends.
func TestLoLPIMMemoryManagement(t *testing.T) {
	c := lpConfig()
	c.LoLPIM.Memory = MemoryStatic
	c.Workload.MaxBatch = 200
	s := lpStep(t, lpEngine(t, c), 1)
	if s.Batch != 63 || s.Queue != c.Workload.Requests-63 {
		t.Fatalf("static memory: batch %d, queue %d; want the reservations to cap the batch at 63 and the rest to wait", s.Batch, s.Queue)
	}
	loc := s.KV.Locations[0]
	if len(loc.Holders) != 63 || loc.Reserved != 63*128 {
		t.Fatalf("static: %d holders, %d reserved", len(loc.Holders), loc.Reserved)
	}
	h := loc.Holders[0]
	if h.Reserved != 128 || len(h.Pages) != 128 || h.KBlocks+h.VBlocks > 70 {
		t.Fatalf("static holder %+v", h)
	}
	for i := 1; i < len(h.Pages); i++ {
		if h.Pages[i] != h.Pages[i-1]+1 {
			t.Fatal("a static reservation is not contiguous")
		}
	}
	// Musique's ~16.4K tokens use 66 of the 128 reserved chunks: about half is waste.
	if waste := 1 - float64(s.KV.Used)/float64(s.KV.Reserved); waste < 0.45 || waste > 0.55 {
		t.Errorf("static reservation waste %.2f", waste)
	}

	c = lpConfig()
	c.Workload.MaxBatch = 120
	e := lpEngine(t, c)
	s = lpStep(t, e, 1)
	loc = s.KV.Locations[0]
	if len(loc.Holders) < 110 || loc.Reserved != loc.Used {
		t.Fatalf("dynamic: %d holders, %d reserved, %d used", len(loc.Holders), loc.Reserved, loc.Used)
	}
	seen := map[int32]bool{}
	for _, h := range loc.Holders {
		if len(h.Pages) != h.KBlocks+h.VBlocks {
			t.Fatalf("Va2Pa of request %d has %d entries for %d chunks", h.Request, len(h.Pages), h.KBlocks+h.VBlocks)
		}
		for _, pg := range h.Pages {
			if seen[pg] {
				t.Fatalf("chunk %d given twice", pg)
			}
			seen[pg] = true
		}
	}
	// Every request ends together after 256 tokens; the next batch reuses the freed
	// chunks, and requests grown one chunk at a time interleave theirs (2 nodes, to be quick).
	c.LoLPIM.Nodes, c.Workload.MaxBatch = 2, 12
	e = lpEngine(t, c)
	p := e.sys.(*lolpim)
	s = lpStep(t, e, 257)
	if s.Done < 12 {
		t.Fatalf("%d done", s.Done)
	}
	if len(p.free)+p.kv.used[0] != p.chunkCap {
		t.Fatalf("free list %d + used %d ≠ %d chunks", len(p.free), p.kv.used[0], p.chunkCap)
	}
	gaps := 0
	for _, h := range s.KV.Locations[0].Holders {
		for i := 1; i < len(h.Pages); i++ {
			if h.Pages[i] != h.Pages[i-1]+1 && h.Pages[i] != h.Pages[i-1]-1 {
				gaps++
			}
		}
	}
	if gaps == 0 {
		t.Error("lazily grown requests hold only contiguous chunks")
	}
}

// ③ hides transfers under MACs; ① with PP beats head-first TP-only; the utilisation is the
// paper's: useful FLOPs (2 per weight per token plus 4·n_h·d_h·T per layer for attention)
// over the banks' peak, 65.536 TFLOPS a node.
func TestLoLPIMMechanismsAndUtilisation(t *testing.T) {
	run := func(c Config) *Snapshot { return lpStep(t, lpEngine(t, c), 3) }
	base := run(lpConfig())
	c := lpConfig()
	c.LoLPIM.PingPong = false
	noPP := run(c)
	if float64(noPP.IterTime) < 1.3*float64(base.IterTime) {
		t.Errorf("ping-pong off: %v vs %v", noPP.IterTime, base.IterTime)
	}
	c = lpConfig()
	c.LoLPIM.Partitioning, c.LoLPIM.Memory, c.LoLPIM.PingPong = PartitionHFA, MemoryStatic, false
	c.Workload.MaxBatch = 63
	aimx := run(c)
	perTok := func(s *Snapshot) float64 { return float64(s.IterTime) / float64(s.Batch) }
	if perTok(aimx) < 3*perTok(base) {
		t.Errorf("HFA TP-only %v per token vs ITPP %v", perTok(aimx), perTok(base))
	}
	if aimx.Metrics.LoadImbalance <= 1 {
		t.Errorf("HFA load imbalance %.2f", aimx.Metrics.LoadImbalance)
	}

	e := lpEngine(t, lpConfig())
	s := lpStep(t, e, 3)
	m := lpQwen7B
	fc := 2 * (float64(m.DModel*(m.Heads+2*m.KVHeads)*m.HeadDim) + float64(m.Heads*m.HeadDim*m.DModel) + 3*float64(m.DModel*m.DFFN)) * float64(m.Layers)
	var fl float64
	for _, r := range e.running {
		fl += fc + 4*float64(m.Layers*m.Heads*m.HeadDim)*float64(r.SeqLen()-1)
	}
	peak := 16 * 65.536e12
	want := fl / (peak * s.IterTime.Seconds())
	if got := s.Metrics.Util["pim"]; math.Abs(got-want) > 1e-6 {
		t.Fatalf("utilisation %.6f, the paper's formula gives %.6f", got, want)
	}
	if want < 0.3 || want > 1 {
		t.Fatalf("utilisation %.2f", want)
	}
}

// flop_utilization is the useful FLOPs over the peak of every compute unit: for the
// standalone system the paper's PIM utilisation (Table 8), for the heterogeneous node the
// PUs and the GPUs together; a system without a peak figure reports none.
func TestLoLPIMFLOPUtilization(t *testing.T) {
	e := lpEngine(t, lpConfig())
	var sum, T float64
	for range 4 {
		s := lpStep(t, e, 1)
		sum += s.Metrics.Util["pim"] * s.IterTime.Seconds()
		T += s.IterTime.Seconds()
	}
	r := e.Result()
	if r.FLOPUtilization == nil || math.Abs(*r.FLOPUtilization-sum/T) > 1e-9 {
		t.Fatalf("flop_utilization %v, the time-weighted PIM utilisation is %v", r.FLOPUtilization, sum/T)
	}
	c := lpConfig()
	c.LoLPIM.XPU = true
	c.LoLPIM.ModulesPerNode = 4
	c.Workload.MaxBatch = 32
	c.LoLPIM.GPU = GPU{Display: "GPU", PeakTFLOPS: 312, BandwidthGBps: 2048, CapacityGB: 32, ComputeEfficiency: 1, MemoryEfficiency: 1, MemoryUtilization: 1}
	e = lpEngine(t, c)
	var fl float64
	T = 0
	for range 3 {
		s := lpStep(t, e, 1)
		for _, sp := range s.Timeline.Spans {
			fl += sp.FLOPs
		}
		T += s.IterTime.Seconds()
	}
	want := fl / ((16*4*256*32e9 + 16*312e12) * T)
	if r := e.Result(); r.FLOPUtilization == nil || math.Abs(*r.FLOPUtilization-want) > 1e-9 {
		t.Fatalf("heterogeneous flop_utilization %v, want %v", r.FLOPUtilization, want)
	}
	c = testNeuPIMs()
	c.Workload.Requests = 8
	if _, r := runAll(t, c); r.FLOPUtilization != nil {
		t.Fatalf("NeuPIMs gives no peak figure yet, flop_utilization %v", *r.FLOPUtilization)
	}
}

// The heat map: rows are modules in stage order, columns 256 banks in 16 channels; under
// ITPP the last row of keys leaves a tail, so bank 0 is at least as busy as bank 255.
func TestLoLPIMHeatMap(t *testing.T) {
	s := lpStep(t, lpEngine(t, lpConfig()), 1)
	g := s.Banks
	if g.Rows != 128 || g.Cols != 256 || g.ColGroup != 16 || len(g.PIM) != 128*256 || len(g.RowNotes) != 128 {
		t.Fatalf("grid %d×%d/%d", g.Rows, g.Cols, g.ColGroup)
	}
	if g.PIM[0] < g.PIM[255] || g.PIM[0] <= 0 || g.PIM[0] > 1 {
		t.Fatalf("bank 0 %.3f, bank 255 %.3f", g.PIM[0], g.PIM[255])
	}
	if !strings.Contains(g.RowNotes[17], "node 2") || !strings.Contains(g.RowNotes[17], "stage 2") {
		t.Fatalf("row note %q", g.RowNotes[17])
	}
	// HFA with a small micro-batch: 2 requests × 4 heads = 8 pairs in 16 channels.
	c := lpConfig()
	c.LoLPIM.Partitioning, c.LoLPIM.Memory, c.LoLPIM.PingPong, c.LoLPIM.TP = PartitionHFA, MemoryStatic, false, 8
	c.Workload.MaxBatch = 2
	s = lpStep(t, lpEngine(t, c), 1)
	idle := 0
	for ch := range 16 {
		if s.Banks.PIM[ch*16] < 0.6*s.Banks.PIM[0] {
			idle++
		}
	}
	if idle < 8 {
		t.Fatalf("%d of 16 channels nearly idle with 8 (request, head) pairs", idle)
	}
}

// The heterogeneous node runs FC on its GPU and attention in 4 PIM modules; the GPU lanes
// carry FLOPs and the PIM holds only KV. Its derived split is tensor-parallel over all 64
// modules (Qwen1.5-7B's 32 heads, two modules each), since a GPU reads its FC weights once
// per micro-batch it serves.
func TestLoLPIMHeterogeneous(t *testing.T) {
	c := lpConfig()
	c.LoLPIM.ModulesPerNode, c.LoLPIM.XPU = 4, true
	c.LoLPIM.GPU = GPU{Display: "GPU-GDDR6 half", PeakTFLOPS: 312, BandwidthGBps: 2048, CapacityGB: 34.36, ComputeEfficiency: 1, MemoryEfficiency: 1, LaunchOverheadUs: 5}
	c.Workload.MaxBatch = 60
	e := lpEngine(t, c)
	p := e.sys.(*lolpim)
	if p.tp != 64 || p.pp != 1 || p.weightRows != 0 || p.chunkCap != 8192 {
		t.Fatalf("hybrid tp %d pp %d weight rows %d chunks %d", p.tp, p.pp, p.weightRows, p.chunkCap)
	}
	s := lpStep(t, e, 2)
	if s.Metrics.Util["gpu"] <= 0 || s.Metrics.Util["pim"] <= 0 {
		t.Fatalf("util %v", s.Metrics.Util)
	}
	gpuLanes := 0
	for _, l := range s.Timeline.Lanes {
		if l.Group == "gpu" {
			gpuLanes++
		}
	}
	if gpuLanes != 16 {
		t.Fatalf("%d GPU lanes", gpuLanes)
	}
	c.Model = lpQwen72B
	c.LoLPIM.Nodes = 2
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "weights on each node's GPU") {
		t.Fatalf("72B on 2 hybrid nodes: %v", err)
	}
}

// Impossible configurations say what is wrong and how to fix it.
func TestLoLPIMBadInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no nodes", func(c *Config) { c.LoLPIM.Nodes = 0 }, "nodes must be positive"},
		{"tp × pp", func(c *Config) { c.LoLPIM.TP, c.LoLPIM.PP = 8, 4 }, "tp × lolpim.pp = 8 × 4 = 32, but the system has 128 modules"},
		{"tp divides", func(c *Config) { c.LoLPIM.TP = 3 }, "lolpim.tp=3 does not divide the 128 modules"},
		{"heads", func(c *Config) { c.LoLPIM.Nodes, c.LoLPIM.TP = 3, 12 }, "the lolpim.tp=12 modules of a stage share Qwen1.5-7B's 32 attention heads whole: pick a tp that divides 32 or is a multiple of it"},
		{"negative timing", func(c *Config) { c.LoLPIM.TRTPNs = -1 }, "t_mod_ns, host_sync_us and the DRAM timings (t_rcd_ns, t_rtp_ns, t_rp_ns, t_rfc_ns, t_refi_ns) must not be negative"},
		{"pp layers", func(c *Config) { c.LoLPIM.PP = 64; c.LoLPIM.Nodes = 8 }, "pp=64 pipeline stages exceed Qwen1.5-7B's 32 layers"},
		{"72B in 128 GB", func(c *Config) { c.Model = lpQwen72B; c.LoLPIM.Nodes = 2 }, "Qwen1.5-72B needs 134.6 GiB of weights (72.28B parameters × 2 B) but 2 nodes × 8 modules × 8 GiB hold 128 GiB; use at least 3 nodes"},
		{"static too short", func(c *Config) { c.LoLPIM.Memory = MemoryStatic; c.LoLPIM.StaticMaxCtx = 8192 }, "static memory reserves lolpim.static_max_ctx=8192 tokens per request; raise it to at least"},
		{"one request too big", func(c *Config) { c.LoLPIM.Nodes = 1; c.Workload.InputLen = 600000; c.Workload.OutputLen = 1 }, "KV chunks on every module but only"},
		{"model split", func(c *Config) { c.TP = 4 }, "leave model.tp and model.pp at 1"},
		{"prefill", func(c *Config) { c.Workload.Prefill = PrefillRun }, `set workload.prefill = "skip"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := lpConfig()
			tc.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

// Same configuration, same snapshots.
func TestLoLPIMDeterministic(t *testing.T) {
	a := lpStep(t, lpEngine(t, lpConfig()), 5)
	b := lpStep(t, lpEngine(t, lpConfig()), 5)
	if a.IterTime != b.IterTime || len(a.Timeline.Spans) != len(b.Timeline.Spans) || a.Metrics.Util["pim"] != b.Metrics.Util["pim"] {
		t.Fatal("two runs of one configuration differ")
	}
}

// A finished run lets go of its planner, yet its result still carries the split the
// system chose and its FLOP utilisation.
func TestLoLPIMResultAfterRunEnds(t *testing.T) {
	c := lpConfig()
	c.Workload.Requests = 8
	e, r := runAll(t, c)
	if !e.Done() {
		t.Fatal("run did not end")
	}
	tp, pp := newTestSplit(t, c)
	if r.TP != tp || r.PP != pp {
		t.Errorf("finished run reports split %d × %d, the system chose %d × %d", r.TP, r.PP, tp, pp)
	}
	if r.FLOPUtilization == nil || *r.FLOPUtilization <= 0 {
		t.Errorf("finished run reports flop_utilization %v", r.FLOPUtilization)
	}
}

// newTestSplit is the split a fresh engine of c reports before it steps.
func newTestSplit(t *testing.T, c Config) (tp, pp int) {
	t.Helper()
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return e.Split()
}
