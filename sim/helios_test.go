package sim

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// heliosModel is LLaMA3-70B as HeLioS Table II gives it.
func heliosModel() Model {
	return Model{Name: "llama3-70b", Display: "LLaMA3-70B", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 8, HeadDim: 128,
		FFN: "swiglu", DFFN: 28672, Vocab: 128256}
}

// testHeLioS is the helios preset's configuration (HeLioS Sec. VI) at a small scale.
func testHeLioS() Config {
	a100 := GPU{Name: "a100-80gb", Display: "A100", PeakTFLOPS: 312, BandwidthGBps: 2039, CapacityGB: 80, MemoryUtilization: 0.9}
	return Config{
		System: SystemHeLioS, Model: heliosModel(), TP: 8, PP: 1, Precision: 2,
		Workload: Workload{
			Dataset:  Dataset{Name: "mooncake", InMean: 6132.1, InStd: 3881.2, InMin: 894, InMax: 16384, OutMean: 260.8, OutStd: 112.0, OutMin: 1, OutMax: 512, MaxSeqLen: 16384},
			Requests: 64, MaxBatch: 16, Arrival: ArrivalClosed, Prefill: PrefillSkip, Seed: 1,
		},
		HeLioS: HeLioSConfig{
			HB: HBDevice{Mesh: 4, Dies: 4, BankGrid: 16, BankMB: 80, BankPins: 256, PinGbps: 0.5, Channels: 16, ClockGHz: 1,
				MACsPerPE: 8192, VectorLanes: 512, ComputeBufferMB: 2.5, NoCLinkGBps: 128, NoCHopNs: 3, RowBytes: 1024, RowActivateNs: 7, RowPrechargeNs: 7, Flow: FlowTiled, Dataflow: DataflowMesh},
			NMP: NMPHost{GPU: a100, Kind: NMPCube, Cubes: 5, BankBWScale: 9, BankFLOPPerByte: 1,
				CubeFPUs: 32, FPUMACs: 512, CubeClockGHz: 0.65, CubeBWScale: 4, SoftmaxGFLOPS: 407.8, ExpertOffload: true, KernelOverheadUs: 2},
			Cluster: HeLioSCluster{EP: 8, NVLinkGBps: 600, NVLinkLatencyUs: 5, ComputeEff: 0.9, MemoryEff: 0.85,
				PrefillGPU: a100, PrefillGPUs: 8, PCIeGBps: 64, NICGbps: 200, NICs: 8},
			KV: HeLioSKV{Alloc: AllocSpatial, BlockTokens: 64, ModulePEs: 4, StaticCompute: StaticWindow},
		},
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b)) }

// The HB-Device's derived figures (HeLioS Sec. III-B, VI-B): 64 banks of 80 MB and
// 256 × 0.5 Gb/s pins per PE, 512 FPUs × 16 MACs at 1 GHz.
func TestHBDeviceFigures(t *testing.T) {
	h := testHeLioS().HeLioS.HB
	if h.BanksPerPE() != 64 {
		t.Errorf("banks per PE %d, want 16 per die × 4 dies = 64", h.BanksPerPE())
	}
	if got := h.PEBandwidth(); got != 1024e9 {
		t.Errorf("PE bandwidth %g, want 64 × 256 × 0.5 Gb/s / 8 = 1,024 GB/s", got)
	}
	if got := h.PECapacity(); got != 5.12e9 {
		t.Errorf("PE capacity %g, want 64 × 80 MB = 5.12 GB", got)
	}
	if got := h.PEFLOPS(); got != 16.384e12 {
		t.Errorf("PE FLOP/s %g, want 2 × 8,192 × 1 GHz = 16.384 T", got)
	}
	if got := h.PEFLOPS() * float64(h.MeshPEs()); !near(got, 262.144e12, 1e-12) {
		t.Errorf("device FLOP/s %g, want 262.1 T", got)
	}
	h.Mesh = 8 // total compute and banks fixed
	if h.BanksPerPE() != 16 || h.PEFLOPS() != 16.384e12/4 || h.PEBandwidth() != 256e9 {
		t.Errorf("8×8 mesh: %d banks, %g FLOP/s, %g B/s per PE; want 16, 4.096 T, 256 GB/s", h.BanksPerPE(), h.PEFLOPS(), h.PEBandwidth())
	}
	h.Mesh, h.Channels = 4, 32
	if h.PEBandwidth() != 2048e9 {
		t.Errorf("32 channels: %g B/s per PE, want twice the 16-channel 1,024 GB/s", h.PEBandwidth())
	}
}

// A bank opens one row for every 1 KB it streams, each an activation and a precharge of
// 7 ns (Ramulator 2's HBM3 timing) while its 16 GB/s stand still: a 512-byte KV block
// reaches 32/(32+14) of the rate, and a long stream of weights no more than 64/(64+14), the
// same row model for every layout.
func TestDRAMRowModel(t *testing.T) {
	h := testHeLioS().HeLioS.HB
	if h.BankRate() != 16e9 {
		t.Fatalf("bank rate %g, want 256 pins × 0.5 Gb/s = 16 GB/s", h.BankRate())
	}
	for _, c := range []struct{ s, want float64 }{
		{512, 32.0 / (32 + 14)},
		{1024, 64.0 / (64 + 14)},
		{1025, 1025.0 / 16 / (1025.0/16 + 28)},
		{1 << 20, 64.0 / (64 + 14)},
	} {
		if got := h.RowEff(c.s); !near(got, c.want, 1e-12) {
			t.Errorf("%g contiguous bytes: %.4f of the bank's rate, want %.4f", c.s, got, c.want)
		}
	}
	c := testHeLioS()
	s, err := newHBSystem(&c)
	if err != nil {
		t.Fatal(err)
	}
	// LLaMA3-70B's QKV tile on one PE: 8192 × 1280 / 16 weights, 20 KB on each bank
	got, flops, bytes := s.fc(4, 8192, 1280)
	want := max(FromSeconds(flops/s.peFLOPS), FromSeconds(bytes/(s.peBW*64.0/78)))
	if got != want {
		t.Errorf("QKV tile %v, want %v: twenty rows a bank, each 14 ns", got, want)
	}
	// a 64-token block of one KV head: 64 × 512 B over 64 banks, half a row each
	if !near(s.rowEffKV, 32.0/46, 1e-12) {
		t.Errorf("KV blocks at %.4f of the rate, want %.4f", s.rowEffKV, 32.0/46)
	}
	c.HeLioS.KV.Alloc, c.HeLioS.HB.Flow = AllocStaticModule, FlowNonTiled
	if s, err = newHBSystem(&c); err != nil {
		t.Fatal(err)
	}
	// the reserved 16K window of a head over a 4-PE module: 4096 × 512 B on 64 banks
	if !near(s.rowEffKV, 64.0/78, 1e-12) {
		t.Errorf("a static window at %.4f of the rate, want %.4f", s.rowEffKV, 64.0/78)
	}
}

// D_L1 on the 4×4 mesh is the table of HeLioS Sec. V-A (distance to the nearest central PE).
func TestDL1Table(t *testing.T) {
	want := [4][4]int{{2, 1, 1, 2}, {1, 0, 0, 1}, {1, 0, 0, 1}, {2, 1, 1, 2}}
	k := newHeliosKV(AllocSpatial, 16, 4, 100, 64, 1, 1, 0, 0)
	for x := range 4 {
		for y := range 4 {
			if got := k.dl1[x*4+y]; got != want[x][y] {
				t.Errorf("D_L1(%d,%d) = %d, want %d", x, y, got, want[x][y])
			}
		}
	}
	// an odd mesh has one central PE
	k = newHeliosKV(AllocSpatial, 25, 5, 100, 64, 1, 1, 0, 0)
	if k.dl1[2*5+2] != 0 || k.dl1[0] != 4 || k.dl1[2*5+3] != 1 {
		t.Errorf("5×5: D_L1 centre %d corner %d next to centre %d; want 0, 4, 1", k.dl1[12], k.dl1[0], k.dl1[13])
	}
}

func req(id, n int) *Request { return &Request{ID: id, InputLen: n, OutputLen: 100} }

func blocksAt(k *heliosKV, id int) map[int]int {
	out := map[int]int{}
	for p, n := range k.reqs[id].blocks {
		if n > 0 {
			out[p] = int(n)
		}
	}
	return out
}

// Algorithm 2's worked example on an empty 4×4 device with b = 64.
func TestAlgorithm2WorkedExample(t *testing.T) {
	k := newHeliosKV(AllocSpatial, 16, 4, 1000, 64, 1, 1, 0, 0)
	pe := func(x, y int) int { return x*4 + y }
	// R0, 200 tokens: 3 full blocks to the corners (0,0), (0,3), (3,0) in index order,
	// the last block of 8 tokens to the central (1,1).
	if !k.admit(req(0, 200)) {
		t.Fatal("R0 not admitted")
	}
	want := map[int]int{pe(0, 0): 1, pe(0, 3): 1, pe(3, 0): 1, pe(1, 1): 1}
	if got := blocksAt(k, 0); !mapsEqual(got, want) {
		t.Fatalf("R0 blocks %v, want %v", got, want)
	}
	if k.tsum[pe(1, 1)] != 8 || k.reqs[0].last != pe(1, 1) || k.nlast[pe(1, 1)] != 1 {
		t.Fatalf("R0 last block: T_sum(1,1) %d, last %d, N_last %d", k.tsum[pe(1, 1)], k.reqs[0].last, k.nlast[pe(1, 1)])
	}
	// R1, 100 tokens: the full block to the last corner (3,3); the last block of 36 to
	// (2,1): the untouched centrals are (1,2), (2,1), (2,2), and (1,2) shares R0's X tree.
	k.admit(req(1, 100))
	want = map[int]int{pe(3, 3): 1, pe(2, 1): 1}
	if got := blocksAt(k, 1); !mapsEqual(got, want) {
		t.Fatalf("R1 blocks %v, want %v", got, want)
	}
	if k.lx(pe(1, 2)) != 1 || k.lx(pe(2, 2)) != 1 || k.ly(pe(1, 2)) != 0 || k.ly(pe(2, 2)) != 0 {
		t.Fatalf("L_mst: X (1,2) %d (2,2) %d, Y (1,2) %d (2,2) %d; want 1 1 0 0", k.lx(pe(1, 2)), k.lx(pe(2, 2)), k.ly(pe(1, 2)), k.ly(pe(2, 2)))
	}
	// R2's last block: (1,2) and (2,2) tie on every counter; the lower index wins.
	k.admit(req(2, 5))
	if got := k.reqs[2].last; got != pe(1, 2) {
		t.Fatalf("R2 last block at %d, want (1,2) = %d", got, pe(1, 2))
	}
	k.admit(req(3, 5))
	if got := k.reqs[3].last; got != pe(2, 2) {
		t.Fatalf("R3 last block at %d, want (2,2) = %d", got, pe(2, 2))
	}
}

func mapsEqual(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Last blocks on an empty device alternate symmetrically: (1,1), (2,1), (1,2), (2,2).
func TestLastBlocksSpreadOverSpanningTrees(t *testing.T) {
	k := newHeliosKV(AllocSpatial, 16, 4, 1000, 64, 1, 1, 0, 0)
	for i, want := range []int{5, 9, 6, 10} {
		k.admit(req(i, 3))
		if got := k.reqs[i].last; got != want {
			t.Fatalf("request %d: last block at %d, want %d", i, got, want)
		}
	}
}

// Decode growth: the last block fills, then a new one is allocated with T = 1 by CMLast;
// blocks never migrate; release returns everything.
func TestBlockGrowthAndRelease(t *testing.T) {
	k := newHeliosKV(AllocSpatial, 16, 4, 1000, 64, 1, 1, 0, 0)
	r := req(7, 64) // one full block, no last block (T_last = 0)
	k.admit(r)
	q := k.reqs[7]
	if q.last != -1 || k.used[0] != 1 || k.tsum[0] != 64 {
		t.Fatalf("64 tokens: last %d, used(0,0) %d, T_sum %d; want no last block, one full block at (0,0)", q.last, k.used[0], k.tsum[0])
	}
	r.Generated = 1 // token 65 opens a last block of T = 1 at the least-loaded centre
	if !k.grow(r) {
		t.Fatal("grow failed")
	}
	if q.last != 5 || q.lastFill != 1 || k.nlast[5] != 1 || k.tsum[5] != 1 {
		t.Fatalf("after one token: last %d fill %d N_last %d T_sum %d; want (1,1), 1, 1, 1", q.last, q.lastFill, k.nlast[5], k.tsum[5])
	}
	r.Generated = 64 // 128 tokens: the last block is full and stays where it is
	k.grow(r)
	if q.last != -1 || k.nlast[5] != 0 || k.tsum[5] != 64 || q.blocks[5] != 1 {
		t.Fatalf("full: last %d N_last %d T_sum %d blocks %d", q.last, k.nlast[5], k.tsum[5], q.blocks[5])
	}
	r.Generated = 65
	k.grow(r)
	if q.last < 0 || k.nlast[q.last] != 1 || k.dl1[q.last] != 0 {
		t.Fatalf("token 129 opened no last block at a central PE: last %d", q.last)
	}
	k.release(r)
	for p := range 16 {
		if k.used[p] != 0 || k.tsum[p] != 0 || k.nlast[p] != 0 {
			t.Fatalf("after release PE %d: used %d T_sum %d N_last %d", p, k.used[p], k.tsum[p], k.nlast[p])
		}
	}
	if k.cntX != [2]int{} {
		t.Fatalf("L_mst counters not released: %v", k.cntX)
	}
}

// The foils: round robin deals blocks in turn; balanced_only keeps T_sum level but ignores
// geometry; the tie tolerance (an extension) lets geometry decide among near-equal PEs.
func TestBlockPolicyFoils(t *testing.T) {
	k := newHeliosKV(AllocRoundRobin, 16, 4, 1000, 64, 1, 1, 0, 0)
	k.admit(req(1, 64*3+1))
	if got := blocksAt(k, 1); !mapsEqual(got, map[int]int{0: 1, 1: 1, 2: 1, 3: 1}) {
		t.Fatalf("round robin: %v", got)
	}
	k = newHeliosKV(AllocBalancedOnly, 16, 4, 1000, 64, 1, 1, 0, 0)
	k.admit(req(1, 64*2+5))
	if got := blocksAt(k, 1); !mapsEqual(got, map[int]int{0: 1, 1: 1, 2: 1}) {
		t.Fatalf("balanced only: %v", got)
	}
	// exact comparison: a 5-token last block at (1,1) sends the next one elsewhere
	k = newHeliosKV(AllocSpatial, 16, 4, 1000, 64, 1, 1, 0, 0)
	for p := range 16 {
		k.tsum[p] = 100
	}
	k.tsum[0] = 95 // the corner is 5 tokens lighter
	k.admit(req(1, 3))
	if k.reqs[1].last != 0 {
		t.Fatalf("exact T_sum: last block at %d, want the lighter corner 0", k.reqs[1].last)
	}
	k = newHeliosKV(AllocSpatial, 16, 4, 1000, 64, 1, 1, 0, 10)
	for p := range 16 {
		k.tsum[p] = 100
	}
	k.tsum[0] = 95
	k.admit(req(1, 3))
	if k.reqs[1].last != 5 {
		t.Fatalf("tolerance 10: last block at %d, want the central (1,1) = 5", k.reqs[1].last)
	}
}

// HeLioS Fig. 4: four PEs in two modules of two, 1.25L × H per PE (0.625L tokens), blocks of
// L/8. Static reservation of L for requests of 0.25L and 0.5L wastes
// (0.75L + 0.5L)/(L + L) = 62.5% and refuses a request of L although the memory has room;
// blocks over all four PEs hold all three.
func TestFig4StaticReservation(t *testing.T) {
	const L = 1024
	capBlocks := (L * 5 / 8) / (L / 8) // 0.625L tokens of L/8 per PE = 5 blocks
	st := newHeliosKV(AllocStaticModule, 4, 2, capBlocks, L/8, 1, 2, L, 0)
	if st.reserve != 4 {
		t.Fatalf("reservation %d blocks per PE, want L/(2 PEs × L/8) = 4", st.reserve)
	}
	if !st.admit(req(0, L/4)) || !st.admit(req(1, L/2)) {
		t.Fatal("the two short requests must fit")
	}
	if st.reqs[0].mods[0] == st.reqs[1].mods[0] {
		t.Fatal("the second request should take the other, empty module")
	}
	if got := st.fragmentation(); got != 0.625 {
		t.Fatalf("static fragmentation %.4f, want 0.625", got)
	}
	if st.admit(req(2, L)) {
		t.Fatal("static reservation admitted the request of length L")
	}
	if total, used := 4*capBlocks*L/8, L/4+L/2; total-used < L {
		t.Fatalf("the memory must have room for L: total %d tokens, %d live", total, used)
	}
	sp := newHeliosKV(AllocSpatial, 4, 2, capBlocks, L/8, 1, 1, 0, 0)
	for i, n := range []int{L / 4, L / 2, L} {
		if !sp.admit(req(i, n)) {
			t.Fatalf("blocks of L/8: request %d (%d tokens) refused", i, n)
		}
	}
	if got := sp.fragmentation(); got != 0 {
		t.Fatalf("blocks of L/8 hold whole multiples: fragmentation %.3f, want 0", got)
	}
}

// The collectives' closed forms (α-β costs on a line of m PEs and a ring of devices).
func TestCollectiveCosts(t *testing.T) {
	hop := 3 * Nanosecond
	// all-reduce of 1,024 B on 4 PEs at 128 GB/s: 2·3·3 ns + 2·(3/4)·1024/128e9 s = 18 + 12 ns
	if got := lineAllReduce(4, 1024, hop, 128e9); got < 30*Nanosecond || got > 30*Nanosecond+1 {
		t.Errorf("all-reduce %v, want 30 ns", got)
	}
	// all-gather to 1,024 B: 3·3 ns + (3/4)·1024/128e9 s = 9 + 6 ns
	if got := lineAllGather(4, 1024, hop, 128e9); got < 15*Nanosecond || got > 15*Nanosecond+1 {
		t.Errorf("all-gather %v, want 15 ns", got)
	}
	if lineAllReduce(1, 1024, hop, 128e9) != 0 {
		t.Error("a single PE has nothing to reduce")
	}
	// NVLink ring of 8: 5 µs + 2·(7/8)·1 MB / 600 GB/s = 5 + 2.9167 µs
	got := ringAllReduce(8, 1e6, 600e9, 5*Microsecond).Microseconds()
	if math.Abs(got-7.9167) > 1e-3 {
		t.Errorf("NVLink all-reduce %.4f µs, want 7.9167", got)
	}
}

// T2 (Fig. 12-b): last blocks on the central PEs need no scatter; a corner needs one hop
// in each axis. Chunks of 128 B on 128 GB/s links, 3 ns hops.
func TestT2Routing(t *testing.T) {
	hop, bw, c := 3*Nanosecond, 128e9, 128.0
	xr, xs, yg, ys := t2Cost(4, []int{5, 6, 9, 10}, c, hop, bw)
	if xs != 0 || ys != 0 {
		t.Fatalf("central targets: scatters %v %v, want none", xs, ys)
	}
	// X-reduce: the outer links carry all four requests (4c), depth 2: 6 ns + 4 ns
	ns := func(a Time, b float64) bool { return math.Abs(float64(a)/1000-b) < 0.01 }
	if !ns(xr, 10) {
		t.Errorf("X-reduce %v, want 10 ns", xr)
	}
	// Y-gather: in rows 1 and 2, links carry at most two chunks, depth 2: 6 ns + 2 ns
	if !ns(yg, 8) {
		t.Errorf("Y-gather %v, want 8 ns", yg)
	}
	_, xs, _, ys = t2Cost(4, []int{0}, c, hop, bw)
	if !ns(xs, 4) || !ns(ys, 7) {
		t.Errorf("corner (0,0): X-scatter %v (want 3 + 1 ns), Y-scatter %v (want 3 + 4 ns for the whole vector)", xs, ys)
	}
}

// hbSegs is the duration of each named segment of one layer's phases for the decode batch
// of c's first iteration, and the slowest PE's attention.
func hbSegs(t *testing.T, c Config) (map[string]Time, Time, *hbSystem, int) {
	t.Helper()
	e, _ := firstStep(t, c)
	hb := e.sys.(*hbSystem)
	segs := map[string]Time{}
	for _, ph := range hb.phases(e.running) {
		for _, g := range ph.segs {
			segs[g.name] = g.dur
		}
	}
	return segs, hb.attnMax, hb, len(e.running)
}

// Algorithm 1 leaves each PE, for each query head, its partial output and the running max
// m and sum l of its blocks, and Eq. 1-2 merge those exactly whatever the split: so T3
// moves the same bytes whatever the context's length and wherever its blocks lie, while
// the attention before it reads every block.
func TestTiledMergeMovesPartialsOnly(t *testing.T) {
	at := func(in int) (map[string]Time, Time) {
		c := testHeLioS()
		c.Workload.InputLen, c.Workload.OutputLen = in, 64
		segs, attn, _, b := hbSegs(t, c)
		if b != c.Workload.MaxBatch {
			t.Fatalf("%d-token prompts: %d requests decode, want %d", in, b, c.Workload.MaxBatch)
		}
		return segs, attn
	}
	short, aShort := at(1024)
	long, aLong := at(8192)
	if short["T3 O"] <= 0 || short["T3 O"] != long["T3 O"] {
		t.Errorf("T3 %v at 1,024 tokens, %v at 8,192; want the same positive time", short["T3 O"], long["T3 O"])
	}
	if aLong < 4*aShort {
		t.Errorf("attention %v at 8,192 tokens, %v at 1,024; want it to grow with the blocks read", aLong, aShort)
	}
}

// Eq. 3 merges LayerNorm's statistics from their counts, means and variances, three FP32
// values a request; RMSNorm needs only the sum of squares, one. T5 all-reduces them over
// the mesh line.
func TestNormStatisticsT5(t *testing.T) {
	for _, tc := range []struct {
		ffn   string
		bytes float64
	}{{"swiglu", 4}, {"gelu", 12}} {
		c := testHeLioS()
		c.Model.FFN = tc.ffn
		segs, _, hb, b := hbSegs(t, c)
		want := lineAllReduce(hb.m, float64(b)*tc.bytes, hb.hop, hb.link)
		if got := segs["T5 norm"]; got != want {
			t.Errorf("%s: T5 %v, want %v (%g B for each of %d requests)", tc.ffn, got, want, tc.bytes, b)
		}
	}
}

func runHeLioS(t *testing.T, c Config) (*Engine, []*Snapshot) {
	t.Helper()
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var snaps []*Snapshot
	eachStep(t, e, func(s *Snapshot) {
		if len(snaps) < 4 {
			snaps = append(snaps, s)
		}
	})
	return e, snaps
}

// Each layer's phases are barrier-separated; the attention barrier is where per-PE load
// differences show, and load_imbalance is the max over the mean of the PEs' attention.
func TestHeLioSIterationStructure(t *testing.T) {
	c := testHeLioS()
	c.Workload.Steps = 3
	e, s := firstStep(t, c)
	hb := e.sys.(*hbSystem)
	var attn []Time
	var nv int
	for _, sp := range s.Timeline.Spans {
		if sp.Layer == 0 && sp.Name == "attention" {
			attn = append(attn, sp.Dur)
		}
		if sp.Layer == 0 && sp.Lane == hb.lnNV {
			nv++
		}
	}
	if len(attn) != 16 {
		t.Fatalf("%d attention spans in layer 0, want one per PE", len(attn))
	}
	if nv != 2 {
		t.Fatalf("%d NVLink all-reduces in layer 0, want 2 (attention and FFN)", nv)
	}
	var mx Time
	var sum float64
	for _, a := range attn {
		mx = max(mx, a)
		sum += float64(a)
	}
	want := float64(mx) / (sum / 16)
	if !near(s.Metrics.LoadImbalance, want, 1e-9) {
		t.Fatalf("load imbalance %.6f, want max/mean attention %.6f", s.Metrics.LoadImbalance, want)
	}
	barrier := 0
	for _, b := range s.Timeline.Bubbles {
		if b.Cause == CauseBarrier && b.Lane < 16 {
			barrier++
		}
	}
	if barrier == 0 {
		t.Fatal("no barrier bubbles on the PE lanes")
	}
	if s.Banks.Rows != 16 || s.Banks.Cols != 64 || s.Banks.MeshRows != 4 || s.Banks.Dies != 4 || s.Banks.ColGroup != 16 {
		t.Fatalf("bank grid %d×%d mesh %d dies %d group %d", s.Banks.Rows, s.Banks.Cols, s.Banks.MeshRows, s.Banks.Dies, s.Banks.ColGroup)
	}
	if len(s.KV.Locations) != 16 || s.KV.MeshRows != 4 {
		t.Fatalf("KV map: %d locations", len(s.KV.Locations))
	}
	lasts := 0
	for _, l := range s.KV.Locations {
		for _, h := range l.Holders {
			if h.Last > 0 {
				lasts++
			}
		}
	}
	if lasts == 0 {
		t.Fatal("no last blocks marked in the KV map")
	}
}

// The time of an iteration follows the mechanism: a bigger mesh link budget or more
// channels never slow it down, and the non-tiled flow is never faster at equal placement.
func TestHeLioSMechanismDirections(t *testing.T) {
	iter := func(edit func(*Config)) float64 {
		c := testHeLioS()
		c.Workload.Steps = 40
		edit(&c)
		e, _ := runHeLioS(t, c)
		return e.Result().IterationMS.Mean
	}
	base := iter(func(*Config) {})
	if got := iter(func(c *Config) { c.HeLioS.HB.Channels = 32 }); got >= base {
		t.Errorf("32 channels: %.3f ms, not faster than 16 channels' %.3f ms", got, base)
	}
	if got := iter(func(c *Config) { c.HeLioS.HB.Channels = 4 }); got <= base {
		t.Errorf("4 channels: %.3f ms, not slower than %.3f ms", got, base)
	}
	tiledStatic := iter(func(c *Config) { c.HeLioS.KV.Alloc = AllocStaticModule })
	nonTiled := iter(func(c *Config) { c.HeLioS.KV.Alloc = AllocStaticModule; c.HeLioS.HB.Flow = FlowNonTiled })
	if nonTiled <= tiledStatic {
		t.Errorf("non-tiled %.3f ms is not slower than tiled on the same static placement (%.3f ms)", nonTiled, tiledStatic)
	}
}

// The baselines' heads are "statically assigned to fixed NMP modules" (HeLioS Sec. II-D:
// LLaMA3-70B at TP 8 has one KV head per GPU, so five concurrent requests are needed to
// use its five cubes): (request, head) pairs are dealt to the modules in order, whatever
// their load. A long request on module 0 does not send the fifth request elsewhere.
func TestStaticModulesInOrder(t *testing.T) {
	k := newHeliosKV(AllocStaticModule, 16, 4, 1000, 64, 1, 4, 4096, 0)
	for i, n := range []int{4000, 10, 10, 10, 10, 10} {
		if !k.admit(req(i, n)) {
			t.Fatalf("request %d refused", i)
		}
	}
	for i, want := range []int{0, 1, 2, 3, 0, 1} {
		if got := k.reqs[i].mods[0]; got != want {
			t.Fatalf("request %d on module %d, want %d (in order, not the least loaded)", i, got, want)
		}
	}
	// Two KV heads a request: the pairs continue the order across requests; a module
	// whose PEs cannot hold one more reservation loses its turn.
	k = newHeliosKV(AllocStaticModule, 16, 4, 16, 64, 2, 4, 1024, 0) // 4 blocks a reservation: 4 per PE
	for i := range 3 {
		if !k.admit(req(i, 100)) {
			t.Fatalf("request %d refused", i)
		}
	}
	if m := [][]int{k.reqs[0].mods, k.reqs[1].mods, k.reqs[2].mods}; m[0][0] != 0 || m[0][1] != 1 || m[1][0] != 2 || m[1][1] != 3 || m[2][0] != 0 || m[2][1] != 1 {
		t.Fatalf("two heads a request: modules %v", m)
	}
	k.take(2, k.capacity-k.used[k.modPE[2][0]], 0) // module 2 full
	if !k.admit(req(3, 100)) || k.reqs[3].mods[0] != 3 || k.reqs[3].mods[1] != 0 {
		t.Fatalf("a full module's turn passes on: %v", k.reqs[3].mods)
	}
}

// Stratum's non-tiled flow (HeLioS Fig. 3-a, 4-a): QKᵀ over the PE's slice of the context,
// the score slices all-gathered in the module, a full softmax over the whole rows, then
// P·V over the PE's slice of the head dimension. The module's score rows stay in the
// 2.5 MB compute buffer (Sec. III-B) while they fit; beyond it QKᵀ writes its slice, the
// gathered slices are written, the softmax reads the rows twice and writes them once, and
// P·V reads them back, all through DRAM.
func TestNonTiledFlowCosts(t *testing.T) {
	c := testHeLioS()
	c.HeLioS.KV.Alloc, c.HeLioS.HB.Flow = AllocStaticModule, FlowNonTiled
	s, err := newHBSystem(&c)
	if err != nil {
		t.Fatal(err)
	}
	const gqa, P, hd = 8.0, 2.0, 128.0
	buf := 2.5e6
	// 32K head-tokens a PE: the module's rows are 8 × 4 × 32768 × 2 B = 2.1 MB, inside.
	ld := 32768.0
	x := s.nonTiled(ld, 4*gqa*hd*ld, 0, gqa, 4)
	if x.spill != 0 {
		t.Fatalf("rows of %.2f MB spill %v bytes", gqa*4*ld*P/1e6, x.spill)
	}
	vec := FromSeconds(4 * gqa * ld * 4 / c.HeLioS.HB.PEVectorRate())
	if x.sm != vec || x.ag != lineAllGather(4, gqa*ld*4*P, s.hop, s.link) {
		t.Fatalf("in the buffer: softmax %v (vector %v), all-gather %v", x.sm, vec, x.ag)
	}
	// Twice as many: 4.2 MB of rows, beyond the buffer.
	ld *= 2
	y := s.nonTiled(ld, 4*gqa*hd*ld, 0, gqa, 4)
	slice, rows := gqa*ld*P, gqa*ld*P*4
	if rows <= buf || !near(y.spill, slice+3*slice+3*rows+rows, 1e-12) {
		t.Fatalf("spilled %v bytes, want %v", y.spill, slice+3*slice+3*rows+rows)
	}
	se := c.HeLioS.HB.RowEff(rows / 64)
	if want := FromSeconds(hd*P*ld/(s.peBW*s.rowEffKV) + rows/(s.peBW*se)); y.pv != max(want, FromSeconds(2*gqa*hd*ld/s.peFLOPS)) {
		t.Fatalf("P·V %v, want %v with the probabilities read back", y.pv, want)
	}
	if want := FromSeconds((3*slice + 3*rows) / (s.peBW * se)); y.sm != max(want, 2*vec) {
		t.Fatalf("softmax %v, want the larger of DRAM %v and vector %v", y.sm, want, 2*vec)
	}
}

// A static partition fixes the non-tiled GEMMs' shape to the reserved window (HeLioS
// Sec. II-D, Fig. 4-a): every (request, head) pair on a module costs the whole context
// there, so a module's attention does not shrink with its requests' lengths. The same
// holds for the NMP cubes (Table I: "Full-length Static"); static_compute = live is the
// smarter schedule the baselines do not run.
func TestStaticWindowCompute(t *testing.T) {
	k := newHeliosKV(AllocStaticModule, 16, 4, 1000, 64, 1, 4, 4096, 0)
	k.admit(req(0, 100))
	k.admit(req(1, 3000))
	k.admit(req(2, 10))
	win, live := make([]float64, 16), make([]float64, 16)
	k.windowTokens(win)
	k.headTokens(live)
	// modules are the 2×2 quadrants: module 0 holds PEs 0, 1, 4, 5
	if win[0] != 1024 || win[2] != 1024 || win[8] != 1024 || win[10] != 0 {
		t.Fatalf("window head-tokens per PE %v, want 4096/4 for each pair on a module", win)
	}
	if live[0] != 25 || live[2] != 750 {
		t.Fatalf("live head-tokens per PE %v", live)
	}
	k.release(req(1, 3000))
	k.windowTokens(win)
	if win[2] != 0 {
		t.Fatalf("a released pair still counts: %v", win)
	}

	attn := func(sys, compute string, in int) Time {
		c := testHeLioS()
		c.System = sys
		c.HeLioS.KV.Alloc, c.HeLioS.HB.Flow, c.HeLioS.KV.StaticCompute = AllocStaticModule, FlowNonTiled, compute
		c.HeLioS.NMP.Kind = NMPBank
		c.Workload.InputLen, c.Workload.OutputLen = in, 8
		c.HeLioS.KV.ContextTokens = 16384
		e, _ := firstStep(t, c)
		if sys == SystemGPUNMP {
			return e.sys.(*nmpSystem).attnMax
		}
		return e.sys.(*hbSystem).attnMax
	}
	for _, sys := range []string{SystemHeLioS, SystemGPUNMP} {
		if a, b := attn(sys, StaticWindow, 500), attn(sys, StaticWindow, 5000); a != b || a == 0 {
			t.Errorf("%s window: attention %v at 500 tokens, %v at 5,000; want the same, over the reserved context", sys, a, b)
		}
		if a, b := attn(sys, StaticLive, 500), attn(sys, StaticLive, 5000); a >= b {
			t.Errorf("%s live: attention %v at 500 tokens, %v at 5,000; want it to grow with the tokens", sys, a, b)
		}
		if a, b := attn(sys, StaticLive, 5000), attn(sys, StaticWindow, 5000); a >= b {
			t.Errorf("%s: live %v not below the 16K window's %v", sys, a, b)
		}
	}
}

// HB-non-Tiled runs Stratum's ring dataflow (HeLioS Sec. VI-A): each FC split over all 16
// PEs, the QKV slices and the attention outputs all-gathered round a ring through every
// PE, and each FC pair closed by a ring all-reduce of the whole output, where HeLioS moves a
// quarter of each vector along one mesh axis. The PEs compute the same FLOPs; the layer
// spends longer on the NoC.
func TestRingDataflow(t *testing.T) {
	run := func(flow string) (*hbSystem, *Snapshot) {
		c := testHeLioS()
		c.HeLioS.KV.Alloc, c.HeLioS.HB.Flow, c.HeLioS.HB.Dataflow = AllocStaticModule, FlowNonTiled, flow
		c.Workload.InputLen, c.Workload.OutputLen = 2000, 8
		e, s := firstStep(t, c)
		return e.sys.(*hbSystem), s
	}
	hb, s := run(DataflowRing)
	const B, d, P = 16.0, 8192.0, 2.0
	comm := map[string]Time{}
	for _, sp := range s.Timeline.Spans {
		if sp.Layer == 0 && sp.Lane == hb.lnNoC {
			comm[sp.Name] += sp.Dur
		}
	}
	want := map[string]Time{
		"QKV all-gather": lineAllGather(16, B*(8+2)*128*P, hb.hop, hb.link),
		"O all-gather":   lineAllGather(16, B*8*128*P, hb.hop, hb.link),
		"O all-reduce":   lineAllReduce(16, B*d*P, hb.hop, hb.link),
		"FFN all-reduce": lineAllReduce(16, B*d*P, hb.hop, hb.link),
	}
	if len(comm) != len(want) {
		t.Fatalf("ring collectives in layer 0: %v, want %v", comm, want)
	}
	for k, v := range want {
		if comm[k] != v {
			t.Errorf("%s %v, want %v", k, comm[k], v)
		}
	}
	// the whole output round a ring of 16 against a quarter of it along a line of 4
	if ring, mesh := lineAllReduce(16, B*d*P, hb.hop, hb.link), lineAllReduce(4, B*d/4*P, hb.hop, hb.link); ring < 4*mesh {
		t.Errorf("ring all-reduce %v, mesh %v", ring, mesh)
	}
	mesh, ms := run(DataflowMesh)
	if hb.flops != mesh.flops {
		t.Errorf("ring %g FLOPs, mesh %g: the same work split differently", hb.flops, mesh.flops)
	}
	if s.IterTime <= ms.IterTime {
		t.Errorf("ring iteration %v not slower than the mesh's %v", s.IterTime, ms.IterTime)
	}
}

// Impossible configurations are errors that say what to change.
func TestHeLioSBadInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"mesh 3", func(c *Config) { c.HeLioS.HB.Mesh = 3 }, "does not divide a die's 16×16 bank grid"},
		{"mesh 0", func(c *Config) { c.HeLioS.HB.Mesh = 0 }, "pick a mesh side that divides 16"},
		{"block 0", func(c *Config) { c.HeLioS.KV.BlockTokens = 0 }, "KV block size 0 tokens is out of range"},
		{"poisson rate 0", func(c *Config) { c.Workload.Arrival = ArrivalPoisson; c.Workload.Rate = 0 }, "Poisson arrivals need a rate above 0"},
		{"poisson rate NaN", func(c *Config) { c.Workload.Arrival = ArrivalPoisson; c.Workload.Rate = math.NaN() }, "Poisson arrivals need a rate above 0"},
		{"module", func(c *Config) { c.HeLioS.KV.Alloc = AllocStaticModule; c.HeLioS.KV.ModulePEs = 3 }, "modules of 3 PEs do not divide the 16 PEs"},
		{"non-tiled blocks", func(c *Config) { c.HeLioS.HB.Flow = FlowNonTiled }, "set kvcache.alloc=static_module"},
		{"tiled ring", func(c *Config) { c.HeLioS.HB.Dataflow = DataflowRing }, "set hb.attention_flow=non_tiled"},
		{"odd ring", func(c *Config) {
			c.HeLioS.HB.Dataflow, c.HeLioS.HB.Flow, c.HeLioS.KV.Alloc, c.HeLioS.KV.ModulePEs = DataflowRing, FlowNonTiled, AllocStaticModule, 1
			c.HeLioS.HB.Mesh, c.HeLioS.HB.BankGrid = 3, 9
		}, "needs an even side"},
		{"dataflow", func(c *Config) { c.HeLioS.HB.Dataflow = "torus" }, `unknown dataflow "torus"`},
		{"static compute", func(c *Config) { c.HeLioS.KV.StaticCompute = "some" }, `unknown static_compute "some"`},
		{"weights", func(c *Config) { c.TP = 1 }, "raise tp"},
		{"short reservation", func(c *Config) { c.HeLioS.KV.Alloc = AllocStaticModule; c.HeLioS.KV.ContextTokens = 4096 }, "raise kvcache.context_tokens"},
		{"experts", func(c *Config) { c.Model.Experts, c.Model.TopK, c.HeLioS.Cluster.EP = 8, 2, 3 }, "ep=3 does not divide"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testHeLioS()
			tc.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	c := testHeLioS()
	c.System = SystemGPUNMP
	c.HeLioS.KV.Alloc = AllocSpatial
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "pin each KV head to one HBM cube") {
		t.Fatalf("NMP with spatial blocks: %v", err)
	}
}

// Arrivals above what the system serves build a queue; every step still finishes.
func TestHeLioSOverloadGrowsQueue(t *testing.T) {
	c := testHeLioS()
	c.Workload.Arrival, c.Workload.Rate = ArrivalPoisson, 5000
	c.Workload.Requests = 1000
	c.Workload.Steps = 120
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var q20, q200 int
	for i := 1; ; i++ {
		s, err := e.Step()
		if err != nil {
			break
		}
		switch i {
		case 20:
			q20 = s.Queue
		case 120:
			q200 = s.Queue
		}
	}
	if q200 <= q20 || q20 == 0 {
		t.Fatalf("queue %d after 20 steps, %d after 120: want it growing", q20, q200)
	}
	if e.Result().QueuePeak < q200 {
		t.Fatalf("queue_peak %d below the queue seen (%d)", e.Result().QueuePeak, q200)
	}
}

// Disaggregated prefill: a request joins decode only after the prefill instance has run
// its prompt and the KV stream has arrived, so its first token comes no sooner.
func TestHeLioSDisaggregatedPrefill(t *testing.T) {
	c := testHeLioS()
	c.Workload.Prefill = PrefillRun
	c.Workload.Arrival, c.Workload.Rate = ArrivalPoisson, 20
	c.Workload.Requests = 6
	c.Workload.InputLen, c.Workload.OutputLen = 4096, 16
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	hb := e.sys.(*hbSystem)
	pre := hb.pre.time(4096)
	sawPrefill := false
	for {
		s, err := e.Step()
		if err != nil {
			break
		}
		for _, sp := range s.Timeline.Spans {
			if sp.Lane == hb.lnPre {
				sawPrefill = true
			}
		}
		for _, r := range e.running {
			if r.Generated == 1 && r.FirstToken-r.Arrival < pre {
				t.Fatalf("request %d produced its first token %v after arrival, sooner than its %v prefill", r.ID, r.FirstToken-r.Arrival, pre)
			}
		}
	}
	if !sawPrefill {
		t.Fatal("the prefill lane never showed work")
	}
	if r := e.Result(); r.RequestsCompleted != 6 || r.TTFTMS.P50 < pre.Milliseconds() {
		t.Fatalf("completed %d, TTFT p50 %.1f ms; prefill alone takes %.1f ms", r.RequestsCompleted, r.TTFTMS.P50, pre.Milliseconds())
	}
	// a 4K-token prompt of LLaMA3-70B on eight A100s: 2 × 8.6 G params × 4096 tokens per GPU
	// at 0.9 × 312 TFLOPS is about 0.25 s, plus attention and all-reduces
	if pre < 200*Millisecond || pre > 600*Millisecond {
		t.Fatalf("prefill of 4,096 tokens takes %v; want a few hundred ms", pre)
	}
}

// Same configuration and seed: the same result, byte for byte.
func TestHeLioSDeterministic(t *testing.T) {
	for _, sys := range []string{SystemHeLioS, SystemGPUNMP} {
		c := testHeLioS()
		c.System = sys
		if sys == SystemGPUNMP {
			c.HeLioS.KV.Alloc = AllocStaticModule
		}
		c.Workload.Arrival, c.Workload.Rate = ArrivalPoisson, 50
		c.Workload.Steps = 100
		e1, _ := runHeLioS(t, c)
		e2, _ := runHeLioS(t, c)
		a, _ := json.Marshal(e1.Result())
		b, _ := json.Marshal(e2.Result())
		if string(a) != string(b) {
			t.Fatalf("%s: two runs differ:\n%s\n%s", sys, a, b)
		}
	}
}

// A 16×16 mesh keeps the timeline at 4×4 lanes (each the slowest of its 4×4 PEs) while
// the bank grid and the KV map keep every PE.
func TestHeLioSLargeMeshAggregates(t *testing.T) {
	c := testHeLioS()
	c.HeLioS.HB.Mesh = 16
	c.Workload.Steps = 5
	e, snaps := runHeLioS(t, c)
	s := snaps[len(snaps)-1]
	pe := 0
	for _, l := range s.Timeline.Lanes {
		if l.Group == "pe" {
			pe++
		}
	}
	if pe != 16 || s.Banks.Rows != 256 || s.Banks.Cols != 4 || len(s.KV.Locations) != 256 {
		t.Fatalf("16×16: %d PE lanes, bank grid %d×%d, %d KV locations", pe, s.Banks.Rows, s.Banks.Cols, len(s.KV.Locations))
	}
	if e.Result().LoadImbalance == nil || *e.Result().LoadImbalance < 1 {
		t.Fatal("no load imbalance over 256 PEs")
	}
}

// The NMP baselines: one cube per KV head with the context reserved, cubes at a barrier.
func TestNMPBaselines(t *testing.T) {
	for _, kind := range []string{NMPNone, NMPBank, NMPCube} {
		c := testHeLioS()
		c.System = SystemGPUNMP
		c.HeLioS.NMP.Kind = kind
		c.HeLioS.KV.Alloc = AllocStaticModule
		if kind == NMPNone {
			c.HeLioS.KV.Alloc = AllocRoundRobin
		}
		c.Workload.Steps = 30
		e, snaps := runHeLioS(t, c)
		r := e.Result()
		if r.ThroughputTokS <= 0 {
			t.Fatalf("%s: no throughput", kind)
		}
		s := snaps[len(snaps)-1]
		if kind == NMPNone {
			if r.LoadImbalance != nil || s.Banks.Reason == "" {
				t.Fatalf("GPU: imbalance %v, bank reason %q", r.LoadImbalance, s.Banks.Reason)
			}
			continue
		}
		if len(s.KV.Locations) != 5 || r.LoadImbalance == nil || r.KV.PeakFragmentation <= 0.3 {
			t.Fatalf("%s: %d KV locations, imbalance %v, fragmentation %.2f (context reserved)", kind, len(s.KV.Locations), r.LoadImbalance, r.KV.PeakFragmentation)
		}
	}
	// Duplex's cube: 32 × 512 MACs at 650 MHz = 21.3 TFLOPS, 4 × 2,039/5 GB/s
	n := testHeLioS().HeLioS.NMP
	if !near(n.CubeFLOPS(), 21.2992e12, 1e-9) || !near(n.CubeBandwidth(), 1631.2e9, 1e-9) {
		t.Fatalf("Duplex cube %g FLOP/s %g B/s", n.CubeFLOPS(), n.CubeBandwidth())
	}
	n.Kind = NMPBank // In-die (AttAcc's bank PIM): 9 × 2,039/5 GB/s, one FLOP a byte
	if !near(n.CubeBandwidth(), 9*407.8e9, 1e-12) || !near(n.CubeFLOPS(), 9*407.8e9, 1e-12) {
		t.Fatalf("In-die cube %g FLOP/s %g B/s", n.CubeFLOPS(), n.CubeBandwidth())
	}
}

// The NMP cubes run attention as every NMP design of HeLioS Sec. II-D does: QKᵀ, a full
// softmax over the score rows on the cube's softmax unit (5 FLOPs a score), then P·V, one
// after another, not one roofline over the whole. In-die NMP does one FLOP a byte (AttAcc),
// so LLaMA3's eight query heads a KV head make its GEMMs compute-bound; Duplex's GEMMs
// stay bound by its bandwidth.
func TestNMPAttentionFlow(t *testing.T) {
	for _, kind := range []string{NMPBank, NMPCube} {
		c := testHeLioS()
		c.System, c.HeLioS.NMP.Kind, c.HeLioS.KV.Alloc = SystemGPUNMP, kind, AllocStaticModule
		e, s := firstStep(t, c)
		ns := e.sys.(*nmpSystem)
		ld := ns.load[0]
		x := ns.cubeAttention(ld, 8)
		n := c.HeLioS.NMP
		eff := c.HeLioS.Cluster
		if want := FromSeconds(5 * 8 * ld / (407.8e9 * eff.ComputeEff)); x.sm != want || x.sm == 0 {
			t.Fatalf("%s softmax %v, want %v", kind, x.sm, want)
		}
		compute := FromSeconds(2 * 8 * 128 * ld / (n.CubeFLOPS() * eff.ComputeEff))
		memory := FromSeconds(128 * 2 * ld / (n.CubeBandwidth() * eff.MemoryEff))
		if x.qk != max(compute, memory) || x.pv != x.qk {
			t.Fatalf("%s QKᵀ %v P·V %v, want %v", kind, x.qk, x.pv, max(compute, memory))
		}
		if (kind == NMPBank) != (compute > memory) {
			t.Errorf("%s: compute %v, memory %v", kind, compute, memory)
		}
		if roofline := max(2*compute, 2*memory); ns.cubeT[0] != x.qk+x.sm+x.pv || ns.cubeT[0] <= roofline {
			t.Errorf("%s: cube attention %v, want QKᵀ + softmax + P·V = %v, above the roofline %v", kind, ns.cubeT[0], x.qk+x.sm+x.pv, roofline)
		}
		var names []string
		for _, sp := range s.Timeline.Spans {
			if sp.Lane == ns.lnCube0 && sp.Layer == 0 {
				names = append(names, sp.Name)
			}
		}
		if strings.Join(names, ",") != "QKᵀ,softmax,P·V" {
			t.Errorf("%s: cube 0 runs %v in layer 0", kind, names)
		}
	}
}

// TestHBHeadlessSnapshotsCountKV checks that a headless HB-Device run (Config.Jump) skips
// the bank grid and the KV holders, which only the explorer shows, and reports the KV
// counts the result reads exactly as the full KV map does, for the spatial and the static
// policies, over iterations where blocks are added and requests retire.
func TestHBHeadlessSnapshotsCountKV(t *testing.T) {
	for _, alloc := range []string{AllocSpatial, AllocStaticModule} {
		var steps [2][]*Snapshot
		for i, jump := range []bool{false, true} {
			c := testHeLioS()
			c.HeLioS.KV.Alloc = alloc
			c.Workload.Requests, c.Workload.Dataset.OutMax = 24, 40
			c.Jump = jump
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			for range 60 {
				s, err := e.Step()
				if err != nil {
					break
				}
				steps[i] = append(steps[i], s)
			}
		}
		if len(steps[0]) != len(steps[1]) || len(steps[0]) < 40 {
			t.Fatalf("%s: %d stepped and %d headless iterations", alloc, len(steps[0]), len(steps[1]))
		}
		for i, full := range steps[0] {
			bare := steps[1][i]
			if len(bare.Banks.PIM) > 0 || len(bare.KV.Locations) > 0 || len(full.Banks.PIM) == 0 {
				t.Fatalf("%s iteration %d: headless grid %d cells, %d KV locations; full grid %d cells", alloc, i, len(bare.Banks.PIM), len(bare.KV.Locations), len(full.Banks.PIM))
			}
			if bare.KV.Used != full.KV.Used || bare.KV.Capacity != full.KV.Capacity || bare.KV.Fragmentation != full.KV.Fragmentation ||
				bare.Metrics.KVUtil != full.Metrics.KVUtil || bare.Metrics.LoadImbalance != full.Metrics.LoadImbalance {
				t.Fatalf("%s iteration %d: headless KV %d/%d frag %v util %v imbalance %v, full %d/%d frag %v util %v imbalance %v", alloc, i,
					bare.KV.Used, bare.KV.Capacity, bare.KV.Fragmentation, bare.Metrics.KVUtil, bare.Metrics.LoadImbalance,
					full.KV.Used, full.KV.Capacity, full.KV.Fragmentation, full.Metrics.KVUtil, full.Metrics.LoadImbalance)
			}
		}
	}
}
