package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The Hermes paper's hardware (§V-A, Table II) and models (public HF configs), as the
// hermes preset has them, so these tests stand alone.
var (
	hmLLaMA70B = Model{Name: "llama2-70b", Display: "LLaMA2-70B", Layers: 80, DModel: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: "swiglu", DFFN: 28672, Vocab: 32000}
	hmLLaMA13B = Model{Name: "llama2-13b", Display: "LLaMA2-13B", Layers: 40, DModel: 5120, Heads: 40, KVHeads: 40, HeadDim: 128, FFN: "swiglu", DFFN: 13824, Vocab: 32000}
	hmDIMM     = NDPDIMM{DIMMs: 8, DIMMsPerChannel: 2, CapacityGB: 32, Ranks: 4, BankGroups: 2, BanksPerGroup: 4, DataRateMTs: 3200, RankBusBytes: 8,
		RowBytes: 8192, TCKns: 0.625, RowMissPenalty: true,
		Timing:   NDPTiming{RC: 76, RCD: 24, CL: 24, RP: 24, BL: 4, CCDS: 4, CCDL: 8, RRDS: 4, RRDL: 6, FAW: 26},
		ClockGHz: 1, Multipliers: 256, FP16PerMultiplier: 8, BitSerialCycles: 11, BufferKB: 256, ActivationUnits: 256, LinkGBps: 25, LinkPJPerBit: 1.17}
)

func testHermes() Config {
	return Config{
		Preset: "hermes", Family: "hermes", System: SystemHermes, Model: hmLLaMA70B, TP: 1, PP: 1, Precision: 2,
		Workload: Workload{
			Dataset:  Dataset{Name: "fixed", InMean: 128, InMin: 1, InMax: 128, OutMean: 128, OutMin: 1, OutMax: 128},
			Requests: 1, MaxBatch: 1, Arrival: ArrivalClosed, Prefill: PrefillRun, KVPolicy: KVReserve, InputLen: 128, OutputLen: 128, Seed: 42,
		},
		Hermes: HermesConfig{
			Platform: HermesPlatform{GPU: "rtx-4090", GPUDisplay: "RTX 4090", GPUTFLOPS: 330, GPUBandwidthGBps: 936, GPUCapacityGB: 24, GPUWeightGB: 20,
				ComputeEfficiency: 0.7, MemoryEfficiency: 1, LaunchOverheadUs: 5, PCIeGBps: 64, PCIeEfficiency: 0.879, PCIeLatencyUs: 10, HostGBps: 67.2, HostGFLOPS: 1382.4},
			NDP: hmDIMM,
			Sparsity: Sparsity{Enabled: true, MLPActive: 0.25, QKVActive: 0.5, HotFrac: 0.2, HotShare: 0.8, Phi: 0.9, Beta: 0.5, Gamma: 0.2,
				Clusters: 64, PhiCluster: 0.97, Kappa: 0.5, Bins: 64},
			Policy: HermesPolicy{Cold: ColdNDP, Mapper: MapperGreedy, Layout: LayoutChunked, Predictor: PredictPaper, Compare: ">=", Lambda: 6, Threshold: 15,
				StateInc: 4, StateDec: 1, HotThreshold: 10, InitBins: "log", Adjust: true, Overflow: OverflowQueue, Remap: true, Window: 5},
		},
	}
}

// The NDP-DIMM's figures from Table II: 25.6 GB/s per DDR4-3200 rank, four ranks into the
// centre buffer; an 8 KB row of 128 bursts of tBL = 4 cycles costs tRP + tRCD = 48 more
// cycles, 512/560 of peak; 256 multipliers × 8 FP16 values at 1 GHz over 11 bit-serial
// cycles (the FP16 significand), two FLOPs per MAC.
func TestNDPDIMMFigures(t *testing.T) {
	d := hmDIMM
	checkNear(t, "rank GB/s", d.RankGBps(), 25.6, 1e-9)
	checkNear(t, "row efficiency", d.RowEfficiency(), 512.0/560, 1e-9)
	checkNear(t, "internal GB/s", d.InternalGBps(), 4*25.6*512/560, 1e-9)
	d.RowMissPenalty = false
	checkNear(t, "internal GB/s without row misses", d.InternalGBps(), 102.4, 1e-9)
	checkNear(t, "NDP GFLOPS", d.GFLOPS(), 2*256*8/11.0, 1e-9)
	if d.Banks() != 32 {
		t.Errorf("banks per DIMM = %d, want 32", d.Banks())
	}
}

// A DIMM's GEMV over its cold neurons is a roofline on the internal bandwidth and the NDP
// core: 1,000 LLaMA2-70B MLP neurons (gate, up and down: 3 × 8192 × 2 B = 48 KB each) are
// 49.152 MB; at batch 1 that is 49.152 MB / 93.62 GB/s = 525.0 µs against 49.152 MFLOP /
// 372.4 GFLOPS = 132 µs, memory-bound; were all four requests of a batch to need every
// row, the 196.6 MFLOP would take 528.0 µs, compute-bound (the ridge is 372.4/93.62 =
// 3.98 FLOP/B).
func TestDIMMGEMVTime(t *testing.T) {
	h, err := newHermes(func() *Config { c := testHermes(); return &c }())
	if err != nil {
		t.Fatal(err)
	}
	if h.bMLP != 49152 || h.bQKV != float64(8192+2*1024)*2 {
		t.Fatalf("neuron bytes MLP %g QKV %g, want 49152 and 20480", h.bMLP, h.bQKV)
	}
	bytes := 1000 * h.bMLP
	bw := 4 * 25.6e9 * 512 / 560
	checkNear(t, "batch-1 cold GEMV", h.homeOp(0, "c", bytes, 1*bytes, 0).Dur.Seconds(), bytes/bw, 1e-6)
	checkNear(t, "batch-1 cold GEMV (µs)", h.homeOp(0, "c", bytes, 1*bytes, 0).Dur.Seconds()*1e6, 525.0, 1e-3)
	checkNear(t, "batch-4 cold GEMV (µs)", h.homeOp(0, "c", bytes, 4*bytes, 0).Dur.Seconds()*1e6, 4*49.152e6/(2*256*8/11.0)/1e3, 1e-6)
	checkNear(t, "NDP ridge", h.home.Ridge(), 2*256*8/11.0*1e9/bw, 1e-9)
}

// The predictor's 4-bit state (§IV-C): +4 when activated, −1 when not, saturating at 0
// and 15 (the paper's examples: 7 → 11 activated, 10 → 9 not); predicted active when
// s1 + 6·s2 ≥ 15 (or > 15 as printed, which never fires without a correlated hit); the
// first block, with no previous block, predicts s1 > T_h = 10.
func TestPredictorState(t *testing.T) {
	pol := testHermes().Hermes.Policy
	sp := testHermes().Hermes.Sparsity
	mk := func(cmp string) *neuronSim {
		p := pol
		p.Compare = cmp
		ns, err := newNeuronSim(sp, p, 1, 2, [2]int{64, 256}, [2]float64{10, 20}, 2, neuronCosts{budget: 0, homes: 2})
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	ge, gt := mk(">="), mk(">")
	// The step tables' entry s1·8 + s2·2 + act: the activation in bit 0, predicted in bit
	// 1, next state in bits 2–5.
	for _, c := range []struct{ s, act, want int }{{7, 1, 11}, {10, 0, 9}, {14, 1, 15}, {15, 1, 15}, {0, 0, 0}, {1, 0, 0}, {3, 1, 7}, {11, 0, 10}} {
		for s2 := range 3 {
			for _, tab := range []*[128]uint8{&ge.tabPar, &ge.tabNoPar} {
				v := tab[c.s*8+s2*2+c.act]
				if got := int(v >> 2 & 15); got != c.want || v>>6 != 0 {
					t.Errorf("state %d, activated %d → %d (entry %#x), want %d", c.s, c.act, got, v, c.want)
				}
			}
		}
	}
	pred := func(tab *[128]uint8, s1, s2 int) bool {
		p0, p1 := tab[s1*8+s2*2]>>1&1, tab[s1*8+s2*2+1]>>1&1
		if p0 != p1 {
			t.Errorf("s1=%d s2=%d: the prediction depends on the activation it predicts", s1, s2)
		}
		return p0 == 1
	}
	for _, c := range []struct {
		s1, s2    int
		ge, gt, n bool
	}{
		{15, 0, true, false, true}, {14, 0, false, false, true}, {11, 0, false, false, true}, {10, 0, false, false, false},
		{9, 1, true, false, false}, {10, 1, true, true, false}, {8, 1, false, false, false},
		{3, 2, true, false, false}, {4, 2, true, true, false}, {0, 2, false, false, false},
	} {
		if got := pred(&ge.tabPar, c.s1, c.s2); got != c.ge {
			t.Errorf("s1=%d s2=%d with ≥: predicted %v, want %v", c.s1, c.s2, got, c.ge)
		}
		if got := pred(&gt.tabPar, c.s1, c.s2); got != c.gt {
			t.Errorf("s1=%d s2=%d with >: predicted %v, want %v", c.s1, c.s2, got, c.gt)
		}
		if got := pred(&ge.tabNoPar, c.s1, c.s2); got != c.n {
			t.Errorf("s1=%d in the first block: predicted %v, want %v (s1 > 10)", c.s1, got, c.n)
		}
	}
	// Initialisation from prefill frequencies into 16 stages: > 90% → 15, < 2% → 0; log
	// bins 1 + ⌊14·ln(f/0.02)/ln(45)⌋ clamped to 1–14 (f = 0.1: 1 + ⌊5.92⌋ = 6), linear
	// 1 + ⌊14·(f−0.02)/0.88⌋ (f = 0.1: 2).
	for _, c := range []struct {
		f    float64
		mode string
		want uint8
	}{{0.95, "log", 15}, {0.01, "log", 0}, {0.02, "log", 1}, {0.1, "log", 6}, {0.9, "log", 14}, {0.1, "linear", 2}, {0.5, "linear", 8}, {0.019, "linear", 0}} {
		if got := initState(c.f, c.mode); got != c.want {
			t.Errorf("initState(%g, %s) = %d, want %d", c.f, c.mode, got, c.want)
		}
	}
}

// remapBlock is a block of neurons with given homes, window activities and locations (0:
// a GPU copy), for Algorithm 1 by hand.
func remapBlock(J int, home []uint8, win []uint8, gpu []bool) (*neuronSim, *nblock) {
	n := len(home)
	ns := &neuronSim{locs: 1 + J}
	b := &nblock{n: n, bytes: 1000, home: slices.Clone(home), win: slices.Clone(win), loc: make([]uint8, n)}
	for i := range b.loc {
		b.loc[i] = 1 + home[i]
		if gpu != nil && gpu[i] {
			b.loc[i] = 0
		}
	}
	return ns, b
}

// Algorithm 1, corrected: DIMM0 holds cold neurons active in 4, 3, 3 and 2 of the
// window's tokens (Z = 12), DIMM1 one active once (Z = 1). The gap 11 admits the 4
// (Z 8 / 5); the gap 3 admits neither 3 (not < 3) but the 2 (Z 6 / 7); the gap −1 stops.
// A GPU-resident neuron's activity does not count.
func TestWindowRemapByHand(t *testing.T) {
	ns, b := remapBlock(2, []uint8{0, 0, 0, 0, 1, 0}, []uint8{4, 3, 3, 2, 1, 5}, []bool{false, false, false, false, false, true})
	res := ns.remap(b)
	if res.moved != 2 || !slices.Equal(res.before, []int32{12, 1}) || !slices.Equal(res.after, []int32{6, 7}) {
		t.Fatalf("moved %d, Z %v → %v; want 2, [12 1] → [6 7]", res.moved, res.before, res.after)
	}
	if !slices.Equal(b.home, []uint8{1, 0, 0, 1, 1, 0}) || b.loc[0] != 2 || b.loc[3] != 2 || b.loc[5] != 0 {
		t.Errorf("homes %v locs %v: want the 4 and the 2 on DIMM1, the GPU copy untouched", b.home, b.loc)
	}
	if res.pairBytes[0] != 2000 {
		t.Errorf("pair bytes %v, want 2 neurons of 1000 B", res.pairBytes)
	}
	if slices.Max(b.win) != 0 || b.sinc != 0 {
		t.Errorf("the window counts must be cleared after a remap: %v", b.win)
	}
	// Four DIMMs, Z = 10, 4, 1, 3: sorted 0, 1, 3, 2; DIMM0 pairs with DIMM2 (the 5 moves,
	// 10/1 → 5/6, then the gap is negative), DIMM1 with DIMM3 (gap 1: nothing is < 1). The
	// printed algorithm pairs id with J−id (out of range at id 0) and loops while Z_id ≤
	// Z_{J−id}, which after a descending sort would move nothing.
	ns, b = remapBlock(4, []uint8{0, 0, 0, 1, 2, 3, 3}, []uint8{5, 3, 2, 4, 1, 2, 1}, nil)
	res = ns.remap(b)
	if res.moved != 1 || !slices.Equal(res.after, []int32{5, 4, 6, 3}) || b.home[0] != 2 {
		t.Errorf("moved %d, Z %v → %v, home of the 5: %d; want 1, [5 4 6 3], DIMM2", res.moved, res.before, res.after, b.home[0])
	}
	// Odd J: the middle DIMM has no partner.
	ns, b = remapBlock(3, []uint8{0, 0, 1, 2}, []uint8{3, 3, 2, 0}, nil)
	res = ns.remap(b)
	if !slices.Equal(res.after, []int32{3, 2, 3}) || len(res.pairBytes) != 1 {
		t.Errorf("J=3: Z %v → %v, want [6 2 0] → [3 2 3] over one pair", res.before, res.after)
	}
}

// kindBlocks makes blocks of one kind with the given frequencies in rank order.
func kindBlocks(p []float64, count int) []*nblock {
	kd := &nkind{n: len(p), p: p}
	var out []*nblock
	for i := range count {
		out = append(out, &nblock{id: i, n: len(p), bytes: 1, kind: kindMLP, kind0: kd})
	}
	return out
}

// The ILP-equivalent greedy (Eq. 1–7): with frequencies 0.9, 0.5, 0.3, 0.1, one second
// per activated neuron on the GPU and ten on the only DIMM, τ(k) = max(Σ_{r<k} f,
// 10·Σ_{r≥k} f) is 18, 9, 4, 1.7, 1.8 for k = 0…4: the gains per byte are 9, 5, 2.3, then
// negative. Two identical blocks and 3 bytes of budget: 9 (block 0), 9 (block 1), 5
// (block 0) → k = 2, 1. With an ample budget each stops at k = 3, where τ is least.
func TestGreedyOfflineMapping(t *testing.T) {
	p := []float64{0.9, 0.5, 0.3, 0.1}
	c := neuronCosts{gpu: [2]float64{1, 1}, dimm: [2]float64{10, 10}, budget: 3, homes: 1}
	if k := waterFill(kindBlocks(p, 2), c); !slices.Equal(k, []int{2, 1}) {
		t.Errorf("budget 3: k = %v, want [2 1]", k)
	}
	c.budget = 100
	if k := waterFill(kindBlocks(p, 2), c); !slices.Equal(k, []int{3, 3}) {
		t.Errorf("ample budget: k = %v, want [3 3]", k)
	}
	c.budget = 0
	if k := waterFill(kindBlocks(p, 2), c); !slices.Equal(k, []int{0, 0}) {
		t.Errorf("no budget: k = %v, want [0 0]", k)
	}
	// The syncs: with 2·T_sync = 10 s the first GPU neuron does not pay (τ(1) = max(10.9,
	// 9) > … no: 10.9 < 18), so it still helps; with 2·T_sync = 20 the GPU never helps.
	c.budget, c.sync = 100, 20
	if k := waterFill(kindBlocks(p, 1), c); !slices.Equal(k, []int{0}) {
		t.Errorf("syncs dearer than the DIMM: k = %v, want [0]", k)
	}
	c.sync = 10
	if k := waterFill(kindBlocks(p, 1), c); k[0] == 0 {
		t.Errorf("syncs cheaper than the DIMM: k = %v, want GPU neurons", k)
	}
}

// The offline mapping is solved once, from the profiled per-token frequencies (§IV-B):
// OPT-13B's GPU holds the same hot neurons whether the preset serves batch 1 or 16 (a
// mapping sized by the batch's union held 15.7 GB at batch 16 against 2.0 GB at 1).
func TestOfflineMappingIgnoresTheBatch(t *testing.T) {
	opt13 := Model{Name: "opt-13b", Display: "OPT-13B", Layers: 40, DModel: 5120, Heads: 40, KVHeads: 40, HeadDim: 128, FFN: "relu", DFFN: 20480, Vocab: 50272}
	hot := func(batch int) float64 {
		c := testHermes()
		c.Model = opt13
		c.Hermes.Sparsity.MLPActive = 0.10
		c.Workload.MaxBatch, c.Workload.Requests = batch, batch
		h, err := newHermes(&c)
		if err != nil {
			t.Fatal(err)
		}
		return h.hotBytes
	}
	h1, h16 := hot(1), hot(16)
	t.Logf("hot set %.2f GB at batch 1, %.2f GB at batch 16", h1/1e9, h16/1e9)
	if h1 != h16 || h1 <= 0 {
		t.Fatalf("hot set %.2f GB at batch 1, %.2f GB at batch 16: want the same mapping", h1/1e9, h16/1e9)
	}
}

// LPT spreads the activation mass of a block evenly: no DIMM carries more than the mean
// plus the largest single frequency (Graham's bound for the greedy).
func TestLPTLayout(t *testing.T) {
	sp := testHermes().Hermes.Sparsity
	k := newKind(28672, 0.25, sp, 64, 8)
	loads := make([]float64, 8)
	for r, j := range k.lptHome {
		loads[j] += k.p[r]
	}
	var sum float64
	for _, v := range loads {
		sum += v
	}
	if mx := slices.Max(loads); mx > sum/8+k.p[0] {
		t.Errorf("LPT loads %v: max %g above mean %g + largest %g", loads, mx, sum/8, k.p[0])
	}
}

// The power law of §III-A / the trace generator: p(x) = min(0.99, c·x^−α) with mean ρ
// and the top 20% of neurons carrying 80% of activations; ρ = 0.10 gives α ≈ 1.44 with
// about 4% of neurons above 0.9 and 45% below 0.02; ρ = 0.20 gives α ≈ 2.25.
func TestPowerLaw(t *testing.T) {
	p, a, share := powerLaw(36864, 0.10, 0.2, 0.8)
	var mean float64
	hi, lo := 0, 0
	for _, v := range p {
		mean += v
		if v > 0.9 {
			hi++
		}
		if v < 0.02 {
			lo++
		}
	}
	mean /= float64(len(p))
	checkNear(t, "mean rate", mean, 0.10, 0.01)
	checkNear(t, "top-20% share", share, 0.8, 0.01)
	checkNear(t, "α at ρ = 0.1", a, 1.44, 0.05)
	checkNear(t, "share above 0.9", float64(hi)/float64(len(p)), 0.04, 0.25)
	checkNear(t, "share below 0.02", float64(lo)/float64(len(p)), 0.45, 0.1)
	_, a, _ = powerLaw(28672, 0.20, 0.2, 0.8)
	checkNear(t, "α at ρ = 0.2", a, 2.25, 0.05)
	for i := 1; i < len(p); i++ {
		if p[i] > p[i-1] {
			t.Fatalf("frequencies must fall with rank: p[%d] = %g > p[%d] = %g", i, p[i], i-1, p[i-1])
		}
	}
}

// stepN runs n iterations of c and returns the last snapshot.
func stepN(t testing.TB, c Config, n int) *Snapshot {
	t.Helper()
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var s *Snapshot
	for range n {
		s, err = e.Step()
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// The synthetic activation trace against the paper's figures, on LLaMA2-13B (Fig. 4's
// model) at the OPT rate of 10% MLP activity, averaged over 59 decode tokens: adjacent
// tokens share over 90% of their activated neurons, about 70% at a distance of 10 and
// little less at 25 (Fig. 4; the generator gives 0.91, 0.76, 0.71); a neuron fires more
// often when its two correlated parents
// fired than when only one did (Fig. 5's layer-wise correlation,
// whose > 90% is the paper's hand-picked pair, not an average); the marginal rate and the
// 20/80 hot share hold (§III-A); the predictor reaches about the paper's 98% (§IV-C).
func TestActivationStatistics(t *testing.T) {
	if quick() {
		t.Skip("60 tokens of a 13B model")
	}
	c := testHermes()
	c.Model = hmLLaMA13B
	c.Hermes.Sparsity.MLPActive = 0.10
	s := stepN(t, c, 60)
	st := s.Neurons.Stats
	t.Logf("similarity d=1,10,25: %.3f %.3f %.3f; P(active | both parents) %.3f, one parent %.3f; MLP %.3f QKV %.3f; hot share %.3f; accuracy %.3f recall %.3f precision %.3f; coverage %.3f",
		st.Similarity[0], st.Similarity[1], st.Similarity[2], st.LayerCorr, st.OneParent, st.MLPActive, st.QKVActive, st.HotShare, st.Accuracy, st.Recall, st.Precision, st.GPUCoverage)
	if st.Similarity[0] < 0.9 {
		t.Errorf("adjacent-token similarity %.3f, want over 0.9 (Fig. 4)", st.Similarity[0])
	}
	checkNear(t, "similarity at distance 10", st.Similarity[1], 0.70, 0.12)
	if d := st.Similarity[1] - st.Similarity[2]; d < 0 || d > 0.08 {
		t.Errorf("similarity %.3f at 10 tokens and %.3f at 25: want it levelling off near 0.7 (Fig. 4)", st.Similarity[1], st.Similarity[2])
	}
	if st.LayerCorr < 1.5*st.OneParent {
		t.Errorf("P(active | both parents) = %.3f, one parent %.3f: want a layer-wise correlation (Fig. 5)", st.LayerCorr, st.OneParent)
	}
	checkNear(t, "MLP active rate", st.MLPActive, 0.10, 0.2)
	checkNear(t, "QKV active rate", st.QKVActive, 0.5, 0.1)
	if st.HotShare < 0.5 {
		t.Errorf("the offline-hot 20%% of MLP neurons carry %.3f of this token's activations; want most (§III-A: 80%%)", st.HotShare)
	}
	if st.Accuracy < 0.93 {
		t.Errorf("predictor accuracy %.3f, want near the paper's 98%%", st.Accuracy)
	}
}

// The per-layer phases follow Eq. 1–3 and §IV-A: each sparse block ends when both the
// GPU path (sync in, hot neurons, sync out) and the slowest DIMM are done, the merge
// waits for all of them, attention runs on the DIMMs after the QKV merge, the projection
// on the GPU after attention, and the promotions share the projection's window.
func TestLayerPhases(t *testing.T) {
	c := testHermes()
	c.Model.Layers = 4
	s := stepN(t, c, 3) // prefill, then two decode tokens
	tl := s.Timeline
	type span = Span
	var (
		byName = map[string][]span{}
	)
	for _, sp := range tl.Spans {
		if sp.Layer == 1 {
			byName[sp.Name] = append(byName[sp.Name], sp)
		}
	}
	end := func(x span) Time { return x.Start + x.Dur }
	merges := byName["merge"]
	if len(merges) != 2 {
		t.Fatalf("layer 1 has %d merges, want 2 (QKV, MLP): %v", len(merges), keys(byName))
	}
	var lastCold Time
	for _, x := range byName["QKV cold"] {
		lastCold = max(lastCold, end(x))
	}
	if len(byName["QKV cold"]) != 8 {
		t.Errorf("QKV cold spans %d, want one per DIMM (8)", len(byName["QKV cold"]))
	}
	hot := byName["QKV hot"]
	if len(hot) != 1 {
		t.Fatalf("QKV hot spans %d, want 1", len(hot))
	}
	qkvMerge := merges[0]
	if qkvMerge.Start < lastCold || qkvMerge.Start < end(hot[0]) {
		t.Errorf("the QKV merge starts at %v before the slowest DIMM (%v) or the GPU (%v)", qkvMerge.Start, lastCold, end(hot[0]))
	}
	// Eq. 1–3: the block's time is max(T_GPU + 2·T_sync, max_j T_DIMM_j) — the merge
	// starts exactly when the later of the two ends (the sync out follows the GPU).
	var gpuPath Time
	for _, x := range byName["sync out"] {
		if x.Start >= end(hot[0]) && x.Start <= qkvMerge.Start {
			gpuPath = max(gpuPath, end(x))
		}
	}
	if want := max(gpuPath, lastCold); qkvMerge.Start != want {
		t.Errorf("QKV merge at %v, want max(GPU path %v, slowest DIMM %v)", qkvMerge.Start, gpuPath, lastCold)
	}
	att := byName["attention"]
	proj := byName["Proj"]
	if len(att) == 0 || len(proj) != 1 {
		t.Fatalf("attention spans %d, projection spans %d", len(att), len(proj))
	}
	var lastAtt Time
	for _, x := range att {
		if x.Start < end(qkvMerge) {
			t.Errorf("attention on %d starts before the QKV merge", x.Lane)
		}
		lastAtt = max(lastAtt, end(x))
	}
	if proj[0].Start < lastAtt || proj[0].Lane != 0 {
		t.Errorf("projection must run on the GPU after attention")
	}
	for _, x := range byName["MLP cold"] {
		if x.Start < end(proj[0]) {
			t.Errorf("the MLP's cold neurons start before the projection ends")
		}
	}
	for _, x := range byName["promote"] {
		if x.Start >= end(proj[0]) {
			t.Errorf("a promotion starts after the projection window (%v ≥ %v)", x.Start, end(proj[0]))
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The ablation path (Fig. 13: random mapping → partition → adjustment → full Hermes)
// gets faster at each stage, and the window remapping lowers the per-block DIMM imbalance
// that Eq. 2 charges (the chunked layout keeps whole co-activation clusters on one DIMM).
func TestAblationMechanisms(t *testing.T) {
	if quick() {
		t.Skip("several runs of a 13B model")
	}
	run := func(edit func(*HermesPolicy)) (dec Time, imb float64) {
		c := testHermes()
		c.Model = hmLLaMA13B
		// A GPU budget below the balance point of Eq. 1 (about 3.6 GB of hot neurons for
		// this model), as for the paper's 66–70B models: GPU coverage then sets the time.
		c.Hermes.Platform.GPUWeightGB = 4
		c.Workload.Steps = 41
		edit(&c.Hermes.Policy)
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		eachStep(t, e, func(s *Snapshot) {
			if s.Prefills == 0 && s.Step > 11 {
				dec += s.IterTime
				imb += s.Metrics.LoadImbalance
				n++
			}
		})
		return dec, imb / float64(n)
	}
	random, _ := run(func(p *HermesPolicy) { p.Remap, p.Adjust, p.Mapper = false, false, MapperRandom })
	part, partImb := run(func(p *HermesPolicy) { p.Remap, p.Adjust = false, false })
	adj, adjImb := run(func(p *HermesPolicy) { p.Remap = false })
	full, fullImb := run(func(*HermesPolicy) {})
	t.Logf("decode time of 30 tokens: random %v, partition %v, adjustment %v, full %v; imbalance %.3f, %.3f, %.3f", random, part, adj, full, partImb, adjImb, fullImb)
	if !(random > part && part > adj && adj >= full) {
		t.Errorf("the ablation path should speed up at each stage: random %v, partition %v, adjustment %v, full %v", random, part, adj, full)
	}
	if fullImb >= adjImb {
		t.Errorf("window remapping should lower the DIMM imbalance: %.3f with, %.3f without", fullImb, adjImb)
	}
}

// Bad inputs give errors that say what is wrong and how to fix it.
func TestHermesBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"zero DIMMs", func(c *Config) { c.Hermes.NDP.DIMMs = 0 }, []string{"at least one", "ndp.dimms = 0", "8"}},
		{"model does not fit", func(c *Config) { c.Hermes.NDP.DIMMs = 4 }, []string{"137.4 GB", "4 NDP-DIMMs", "at least 5", "--set ndp.dimms=5"}},
		{"model does not fit all DIMMs", func(c *Config) { c.Hermes.NDP.DIMMs = 254; c.Hermes.NDP.CapacityGB = 0.5 }, []string{"254 NDP-DIMMs", "127.0 GB", "larger DIMMs"}},
		{"too many DIMMs", func(c *Config) { c.Hermes.NDP.DIMMs = 300 }, []string{"at most 254"}},
		{"projection over the GPU budget", func(c *Config) { c.Hermes.Platform.GPUWeightGB = 5 }, []string{"projection", "platform.gpu_weight_gb"}},
		{"tensor parallel", func(c *Config) { c.TP = 2 }, []string{"model.tp = 1"}},
		{"host without bandwidth", func(c *Config) { c.Hermes.Policy.Cold = ColdHost; c.Hermes.Platform.HostGBps = 0 }, []string{"platform.host_gbps"}},
		{"bad rates", func(c *Config) { c.Hermes.Sparsity.MLPActive = 0 }, []string{"activation rates"}},
		{"no PCIe efficiency", func(c *Config) { c.Hermes.Platform.PCIeEfficiency = 0 }, []string{"platform.pcie_efficiency", "(0, 1]"}},
	} {
		cfg := testHermes()
		c.edit(&cfg)
		_, err := New(cfg)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}

// BenchmarkHermesStep70B is one decode step of LLaMA2-70B with every one of its 2.95 M
// neurons (80 × (8,192 QKV + 28,672 MLP)) tracked: trace, predictor, promotion, remap
// and the neuron snapshot.
func BenchmarkHermesStep70B(b *testing.B) {
	c := testHermes()
	c.Workload.Requests = 1 << 20
	c.Workload.OutputLen = 1 << 14
	c.Workload.Dataset.OutMax = 1 << 14
	c.Recycle = true
	e, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	for range 3 {
		e.Step()
	}
	for b.Loop() {
		if _, err := e.Step(); err != nil {
			b.Fatal(err)
		}
	}
}

// The neuron snapshot is consistent: every block's placement adds up to its neurons, the
// GPU holds exactly its fixed slots, the bins add up to the block, each bin's state is the
// mean of its neurons' predictor states, and the window figures show only on the token
// that runs Algorithm 1 over the window just closed.
func TestNeuronSnapshot(t *testing.T) {
	c := testHermes()
	c.Model.Layers = 4
	c.Workload.Steps = 12
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	ns := e.sys.(*hermes).ns
	eachStep(t, e, func(s *Snapshot) {
		nr := s.Neurons
		if nr.Reason != "" || len(nr.Locations) != 9 || len(nr.Blocks) != 8 {
			t.Fatalf("step %d: reason %q, %d locations, %d blocks", s.Step, nr.Reason, len(nr.Locations), len(nr.Blocks))
		}
		for i, b := range nr.Blocks {
			bl := ns.blocks[i]
			for k, bn := range b.Bins {
				lo, hi := int(bl.kind0.binLo[k]), int(bl.kind0.binLo[k+1])
				var sum int
				for _, st := range bl.s1[lo:hi] {
					sum += int(st)
				}
				if want := float32(sum) / float32(hi-lo); bn.State != want {
					t.Fatalf("step %d %s(%d) bin %d: state %g, want %g", s.Step, b.Kind, b.Layer, k, bn.State, want)
				}
			}
		}
		for _, b := range nr.Blocks {
			var sum int32
			for _, v := range b.Placed {
				sum += v
			}
			if int(sum) != b.Neurons || int(b.Placed[0]) != b.GPUSlots {
				t.Errorf("step %d %s(%d): placed %v (sum %d) for %d neurons and %d GPU slots", s.Step, b.Kind, b.Layer, b.Placed, sum, b.Neurons, b.GPUSlots)
			}
			var gpu, n int
			for k, bn := range b.Bins {
				gpu += int(bn.GPU)
				n += int(bn.Neurons)
				var m int
				for j := range nr.Locations {
					m += int(b.BinPlaced[k*len(nr.Locations)+j])
				}
				if m != int(bn.Neurons) || int(b.BinPlaced[k*len(nr.Locations)]) != int(bn.GPU) {
					t.Fatalf("bin %d places %d neurons (%d on the GPU) of %d (%d)", k, m, b.BinPlaced[k*len(nr.Locations)], bn.Neurons, bn.GPU)
				}
			}
			if n != b.Neurons || gpu != b.GPUSlots {
				t.Errorf("bins hold %d neurons, %d on the GPU; block %d, %d", n, gpu, b.Neurons, b.GPUSlots)
			}
		}
		st := nr.Stats
		closed := slices.Max(st.RemapBefore) > 0
		// A window's activity is complete after its last token, so Algorithm 1 runs in
		// the next projection window of each block: for QKV(0) the last layer's window of
		// the window's last token, for the others the first token of the next window.
		edge := st.Token >= st.Window && (st.WindowPos == st.Window || (st.WindowPos == 1 && st.Token > st.Window))
		if s.Batch > 0 && closed != edge {
			t.Errorf("step %d: window %d/%d, remap figures %v", s.Step, st.WindowPos, st.Window, st.RemapBefore)
		}
	})
}

// Every mapper keeps the GPU-resident neurons within the byte budget, and the random and
// fraction mappers fill it to within one neuron per block.
func TestMappersKeepTheBudget(t *testing.T) {
	sp := testHermes().Hermes.Sparsity
	for _, m := range []string{MapperGreedy, MapperRandom, mapperFraction} {
		p := testHermes().Hermes.Policy
		p.Mapper = m
		const layers = 8
		by := [2]float64{10, 20}
		total := float64(layers) * (64*by[0] + 256*by[1])
		budget := 0.37 * total
		ns, err := newNeuronSim(sp, p, 3, layers, [2]int{64, 256}, by, 2, neuronCosts{gpu: [2]float64{1, 1}, dimm: [2]float64{10, 10}, budget: budget, homes: 2})
		if err != nil {
			t.Fatal(err)
		}
		var held, slack float64
		for _, b := range ns.blocks {
			held += float64(b.slot) * b.bytes
			slack += b.bytes
		}
		if held > budget {
			t.Errorf("%s: %g bytes on the GPU, budget %g", m, held, budget)
		}
		if m != MapperGreedy && held < budget-slack {
			t.Errorf("%s: %g bytes on the GPU leave more than a neuron per block of the budget %g unused", m, held, budget)
		}
	}
}

// The word-at-a-time window count and byte sum agree with a neuron-at-a-time loop,
// saturated counts and lengths that are not whole words included.
func TestNeuronWordHelpers(t *testing.T) {
	g := wyrng{s: 7}
	for _, n := range []int{0, 1, 7, 8, 9, 63, 640} {
		win, act := make([]uint8, n), make([]uint8, n)
		st := make([]uint8, n)
		for i := range n {
			r := g.u64()
			win[i] = uint8(r)
			if r>>8&3 == 0 {
				win[i] = 255
			}
			act[i] = uint8(r>>10) % 6 // a predictor input: parents active·2 + active
			st[i] = uint8(r>>11) & 15
		}
		want := slices.Clone(win)
		var sum int32
		for i := range n {
			if act[i]&1 == 1 && want[i] < 255 {
				want[i]++
			}
			sum += int32(st[i])
		}
		countWindow(win, act)
		if !slices.Equal(win, want) {
			t.Errorf("n=%d: window counts %v, want %v", n, win, want)
		}
		if got := byteSum(st); got != sum {
			t.Errorf("n=%d: byte sum %d, want %d", n, got, sum)
		}
	}
}

// BenchmarkNeuronPass is one token's pass over every block of LLaMA2-70B's sizes (8,192
// QKV and 28,672 MLP neurons a layer, eight DIMMs) at 4 layers, whose state fits the
// caches, and at all 80, whose 47 MB does not: the two per-neuron times part what the
// instructions cost from what the memory adds.
func BenchmarkNeuronPass(b *testing.B) {
	for _, c := range []struct{ layers, batch int }{{4, 1}, {80, 1}, {4, 16}} {
		name := fmt.Sprintf("layers%d", c.layers)
		if c.batch > 1 {
			name += fmt.Sprintf("-batch%d", c.batch)
		}
		b.Run(name, func(b *testing.B) {
			ns := neuronSim70B(b, c.layers, c.batch)
			n := 0
			for _, bl := range ns.blocks {
				n += bl.n
			}
			for b.Loop() {
				ns.token++
				for _, bl := range ns.blocks {
					ns.pass(bl)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/neuron")
		})
	}
}

// neuronSim70B is the neuron map of LLaMA2-70B's sizes at the given layers, one request
// admitted.
func neuronSim70B(b *testing.B, layers, batch int) *neuronSim {
	c := testHermes()
	ns, err := newNeuronSim(c.Hermes.Sparsity, c.Hermes.Policy, 42, layers, [2]int{8192, 28672}, [2]float64{10, 20}, 8,
		neuronCosts{budget: 1e5, homes: 8, gpu: [2]float64{1, 1}, dimm: [2]float64{10, 10}})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int, batch)
	for i := range ids {
		ids[i] = i + 1
	}
	ns.setBatch(ids, ids, 128)
	return ns
}

// BenchmarkNeuronPassFloor is not the model: it is the least a token's pass over
// LLaMA2-70B's 2.95 M neurons can cost on this machine, the bound BenchmarkNeuronPass
// /layers80 is measured against, in three steps over the pass's own arrays. memory reads
// what the pass reads (e, gap, clus, p1, p2, s1, loc, win: 16 bytes a neuron) and writes
// back what it changes (e, s1, win: 6 bytes), 65 MB a token to and from memory, each
// byte array eight neurons a word; neurons does one trivial update a neuron instead and
// also writes the block's latents and activations (5 bytes, which stay in the caches);
// parents adds the reads of each neuron's two parents' latents and activations from the
// block before. None draws normals, steps the predictor or counts: what the real pass
// takes beyond parents is its arithmetic.
func BenchmarkNeuronPassFloor(b *testing.B) {
	for _, step := range []string{"memory", "neurons", "parents"} {
		b.Run(step, func(b *testing.B) {
			ns := neuronSim70B(b, 80, 1)
			var bytes int64
			for _, bl := range ns.blocks {
				bytes += int64(bl.n) * (16 + 6)
			}
			b.SetBytes(bytes)
			var sink uint64
			for b.Loop() {
				for _, bl := range ns.blocks {
					prev, cur := ns.lat[(bl.id+1)&1], ns.lat[bl.id&1]
					if step == "memory" {
						sink += streamFloor(bl, ns.zeroPar)
					} else {
						sink += passFloor(bl, prev, cur, ns.zeroPar, step == "parents")
					}
				}
			}
			if sink == 0 {
				b.Fatal("the floor computed nothing")
			}
		})
	}
}

// floorArrays are block bl's arrays a pass reads, the parents a zero row for block 0.
func floorArrays(bl *nblock, zeroPar []uint16) (e, gap []float32, p1, p2 []uint16, clus, s1, loc, win []uint8) {
	n := bl.n
	p1, p2 = bl.p1, bl.p2
	if p1 == nil {
		p1, p2 = zeroPar, zeroPar
	}
	return bl.e[:n], bl.gap[:n], p1[:n], p2[:n], bl.clus[:n], bl.s1[:n], bl.loc[:n], bl.win[:n]
}

// streamFloor reads block bl's arrays once and writes e, s1 and win back, the byte
// arrays eight neurons a word; it returns a checksum of what it read.
func streamFloor(bl *nblock, zeroPar []uint16) uint64 {
	e, gap, p1, p2, clus, s1, loc, win := floorArrays(bl, zeroPar)
	// The parents are read in a loop of their own: beside the stores to e, their
	// addresses (every array starts on a page) share the low 12 bits with stores of
	// half as many neurons back, which the core takes for a dependence and waits on.
	for k := range e {
		e[k] += gap[k]
	}
	var x uint16
	for k, v := range p1 {
		x += v ^ p2[k]
	}
	var w uint64
	for k := 0; k+8 <= len(clus); k += 8 {
		w += binary.LittleEndian.Uint64(clus[k:]) ^ binary.LittleEndian.Uint64(loc[k:])
		binary.LittleEndian.PutUint64(s1[k:], binary.LittleEndian.Uint64(s1[k:])+w)
		binary.LittleEndian.PutUint64(win[k:], binary.LittleEndian.Uint64(win[k:])+w)
	}
	return uint64(x) + w
}

// passFloor streams block bl's arrays once with one update a neuron, writing its latents
// and activations into cur (and, with parents, reading its parents' from prev); it
// returns a checksum of the activations it wrote.
func passFloor(bl *nblock, prev, cur *latents, zeroPar []uint16, parents bool) uint64 {
	e, gap, p1, p2, clus, s1, loc, win := floorArrays(bl, zeroPar)
	curS, curA := cur.s[:len(e)], cur.act[:len(e)]
	var sum uint64
	for k := range e {
		x := e[k] + gap[k]
		a := clus[k] ^ loc[k] ^ uint8(p1[k]^p2[k])
		if parents {
			x += prev.s[p1[k]] + prev.s[p2[k]]
			a += prev.act[p1[k]] + prev.act[p2[k]]
		}
		e[k] = x
		curS[k], curA[k] = x, a
		s1[k] += a
		win[k] += s1[k]
		sum += uint64(a)
	}
	return sum
}

// BenchmarkNeuronSetup builds LLaMA2-70B's neuron map (80 layers, eight DIMMs) and admits
// one request, after the engine before it has gone: as the runs of an experiment's grid
// do, one model after another engine of it.
func BenchmarkNeuronSetup(b *testing.B) {
	c := testHermes()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		ns, err := newNeuronSim(c.Hermes.Sparsity, c.Hermes.Policy, 42, 80, [2]int{8192, 28672}, [2]float64{10, 20}, 8,
			neuronCosts{budget: 1e5, homes: 8, gpu: [2]float64{1, 1}, dimm: [2]float64{10, 10}})
		if err != nil {
			b.Fatal(err)
		}
		ns.setBatch([]int{1}, []int{1}, 128)
	}
}

// The prefill monitor's states are the quantised frequencies of §IV-C for every prompt
// length, short (read from a table over the prompt's token counts) or long (computed per
// neuron): block 0's, which has no parents, recomputed here from the model's definition.
func TestPrefillStatesEveryPromptLength(t *testing.T) {
	c := testHermes()
	sp, pol := c.Hermes.Sparsity, c.Hermes.Policy
	for _, plen := range []float64{1, 37.3, 128, 70000.7} {
		ns, err := newNeuronSim(sp, pol, 5, 2, [2]int{300, 700}, [2]float64{10, 20}, 2, neuronCosts{budget: 0, homes: 2})
		if err != nil {
			t.Fatal(err)
		}
		ns.setBatch([]int{3}, []int{3}, plen)
		b := ns.blocks[0]
		sb := float32(math.Sqrt(sp.Beta))
		sS := float32(math.Sqrt(max(1e-6, 1-sp.Beta)))
		hb := hash3(ns.seed^0x63747874, 3, 0)
		hn := hash3(ns.seed^0x7072656669, 0, 0)
		seen := map[uint8]bool{}
		for i := range b.n {
			v := sb * hashNormal(splitmix(hb+uint64(i)))
			f := float64(1 - (1 - phiApprox((v-b.kind0.thr[i])/sS))) // 1 − Π(1 − Φ) over one request, in float32
			cnt := f*plen + math.Sqrt(plen*f*(1-f))*float64(hashNormal(splitmix(hn+uint64(i))))
			want := initState(math.Round(min(plen, max(0, cnt)))/plen, pol.InitBins)
			if b.s1[i] != want {
				t.Fatalf("prompt of %g tokens, neuron %d: state %d, want %d", plen, i, b.s1[i], want)
			}
			seen[want] = true
		}
		if plen > 1 && len(seen) < 3 {
			t.Fatalf("prompt of %g tokens: only states %v", plen, seen)
		}
	}
}

// promoteBlock is a block of one home location whose neurons have the given states, the
// first gpu of them on the GPU (listed in index order) and the others off it, every one
// above T_h = 10 a candidate in index order.
func promoteBlock(states []uint8, gpu int) (*neuronSim, *nblock) {
	n := len(states)
	ns := &neuronSim{locs: 2, pol: HermesPolicy{HotThreshold: 10}}
	b := &nblock{n: n, bytes: 1000, s1: slices.Clone(states), loc: make([]uint8, n), home: make([]uint8, n),
		hot0: make([]uint64, (n+63)/64), slot: gpu}
	for i := range states {
		if i < gpu {
			b.gpuList = append(b.gpuList, uint16(i))
		} else {
			b.loc[i] = 1
		}
	}
	return ns, b
}

// Promotion (§IV-D) by hand: the budget's m best candidates, highest state first and the
// earlier among equals, each replace the GPU resident of the lowest state while theirs is
// higher.
func TestPromoteByHand(t *testing.T) {
	states := []uint8{3, 0, 5, 15, 12, 15, 11, 15, 15, 13}
	for _, c := range []struct {
		budget float64
		gpu    []int // neurons on the GPU after the promotion
	}{
		{2000, []int{2, 3, 5}}, // m = 2: the first two of state 15 replace the 0 and the 3
		{5000, []int{3, 5, 7}}, // m = 5: four of state 15, then the 13; three residents to replace
		{900, []int{0, 1, 2}},  // a neuron's bytes do not fit
		{1e9, []int{3, 5, 7}},  // unbounded: as many as there are residents
	} {
		ns, b := promoteBlock(states, 3)
		n := ns.promote(b, c.budget)
		var gpu []int
		for i, l := range b.loc {
			if l == 0 {
				gpu = append(gpu, i)
			}
		}
		if !slices.Equal(gpu, c.gpu) || n != len(b.promoted) {
			t.Errorf("budget %g: GPU holds %v after %d promotions (%v), want %v", c.budget, gpu, n, b.promoted, c.gpu)
		}
	}
	// Residents hotter than every candidate stay.
	ns, b := promoteBlock([]uint8{14, 15, 15, 12, 11}, 3)
	if n := ns.promote(b, 1e9); n != 0 || b.loc[0] != 0 || b.loc[3] != 1 {
		t.Errorf("%d promoted past hotter residents: locs %v", n, b.loc)
	}
}

// A promotion reads its candidates from the states and stops scanning once the budget's
// worth of the highest state are in: it copies what a promotion from the full list of
// candidates copies (the m best by state, the earlier among equals, each over the coldest
// resident while hotter), for every threshold, for budgets around what the candidates
// need (a neuron less, exactly, a hair more) and unbounded, with whole and fractional
// bytes a neuron, on blocks whose ends fall inside a word of eight neurons.
func TestPromoteScanMatchesCandidateList(t *testing.T) {
	g := wyrng{s: 11}
	for trial := range 400 {
		n := 1 + int(g.u64()%90)
		th := int(g.u64()%18) - 1
		states := make([]uint8, n)
		for i := range states {
			states[i] = uint8(g.u64() % 16)
		}
		gpu := int(g.u64() % uint64(n))
		var cand []int
		for i := gpu; i < n; i++ {
			if int(states[i]) > th {
				cand = append(cand, i)
			}
		}
		// 0.7 bytes a neuron: 3 × 0.7 rounds below 2.1, and a budget of it divided by 0.7
		// below 3, so the budget holds all three candidates though the quotient says two.
		bytes := []float64{1000, 0.7}[trial%2]
		for _, budget := range []float64{0, bytes * float64(len(cand)-1), bytes * float64(len(cand)), bytes*float64(len(cand)) + 1e-9,
			bytes * float64(g.u64()%4), math.Inf(1)} {
			ns, b := promoteBlock(states, gpu)
			ns.pol.HotThreshold, b.bytes = th, bytes
			got := ns.promote(b, budget)
			want, wantLoc := promoteFromList(states, gpu, cand, budget, bytes)
			if got != want || !slices.Equal(b.loc, wantLoc) {
				t.Fatalf("trial %d (n %d, T_h %d, budget %g): %d promoted, locs %v; want %d, %v", trial, n, th, budget, got, b.loc, want, wantLoc)
			}
		}
	}
}

// promoteFromList is §IV-D's promotion over an explicit list of candidates (promoteBlock's
// placement): the m best by state, the earlier among equals, m the candidates the budget
// holds; each replaces the coldest remaining GPU resident (the earlier among equals) while
// its state is higher. It returns the neurons copied and the placement after.
func promoteFromList(states []uint8, gpu int, cand []int, budget, bytes float64) (int, []uint8) {
	loc := make([]uint8, len(states))
	for i := gpu; i < len(states); i++ {
		loc[i] = 1
	}
	m := len(cand)
	if budget < float64(m)*bytes {
		m = int(budget / bytes)
	}
	if m <= 0 || gpu == 0 {
		return 0, loc
	}
	best := slices.Clone(cand)
	slices.SortStableFunc(best, func(x, y int) int { return int(states[y]) - int(states[x]) })
	res := make([]int, gpu)
	for i := range res {
		res[i] = i
	}
	slices.SortStableFunc(res, func(x, y int) int { return int(states[x]) - int(states[y]) })
	n := 0
	for i := 0; i < min(m, len(best), len(res)); i++ {
		c, v := best[i], res[i]
		if states[c] <= states[v] {
			break
		}
		loc[v], loc[c] = 1, 0
		n++
	}
	return n, loc
}

// BenchmarkPrefillBatch16 is the activation model's side of a batch of 16 requests
// prefilled together on OPT-66B's sizes (64 layers of 9,216 QKV and 36,864 MLP neurons):
// each request's persistent part through every block, and the predictor states from the
// prompts' frequencies.
func BenchmarkPrefillBatch16(b *testing.B) {
	c := testHermes()
	ns, err := newNeuronSim(c.Hermes.Sparsity, c.Hermes.Policy, 42, 64, [2]int{9216, 36864}, [2]float64{10, 20}, 8,
		neuronCosts{budget: 1e5, homes: 8, gpu: [2]float64{1, 1}, dimm: [2]float64{10, 10}})
	if err != nil {
		b.Fatal(err)
	}
	ids := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	for b.Loop() {
		ns.setBatch(nil, nil, 0)
		ns.setBatch(ids, ids, 128)
	}
}

// The remap reads the window counts eight neurons a word: every cold neuron active in
// the window counts towards its DIMM's Z, whatever its count (up to 255) and wherever it
// sits (the words and the block's last, partial one), and only such neurons move.
func TestWindowRemapReadsEveryCount(t *testing.T) {
	const n = 21
	home, win := make([]uint8, n), make([]uint8, n)
	gpu := make([]bool, n)
	var want [2]int32
	for i := range n {
		home[i] = uint8(i % 3 % 2)
		win[i] = [...]uint8{0, 1, 255, 0, 128, 7, 0, 0, 200}[i%9]
		gpu[i] = i%7 == 3
		if !gpu[i] {
			want[home[i]] += int32(win[i])
		}
	}
	ns, b := remapBlock(2, home, win, gpu)
	res := ns.remap(b)
	if !slices.Equal(res.before, want[:]) {
		t.Fatalf("Z before the remap %v, want %v", res.before, want)
	}
	if res.moved == 0 {
		t.Fatal("nothing moved from the heavier DIMM")
	}
	for i := range n {
		if b.home[i] != home[i] && (gpu[i] || win[i] == 0) {
			t.Errorf("neuron %d moved: on the GPU %v, window count %d", i, gpu[i], win[i])
		}
	}
}

// Each request multiplies only its own active neurons (§V-B2: at larger batches "Hermes
// is not constrained by the computation capability of NDP-DIMMs due to the presence of
// activation sparsity"), while a unit reads a computed neuron's row once for the batch.
// With the exact predictor every computed neuron fired for some request, so a block's
// neuron-requests are the requests' own activations added up: the same as running each
// request alone on the same shared trace, up to the 1/16-σ steps the gaps are kept in.
func TestEachRequestComputesItsOwnNeurons(t *testing.T) {
	sp := testHermes().Hermes.Sparsity
	pol := testHermes().Hermes.Policy
	pol.Predictor = PredictOracle
	mk := func() *neuronSim {
		ns, err := newNeuronSim(sp, pol, 42, 2, [2]int{1024, 4096}, [2]float64{1, 1}, 4, neuronCosts{budget: 600, homes: 4, gpu: [2]float64{1, 1}, dimm: [2]float64{1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	// 6, 12 and 20 requests: one word of gaps a neuron, two, and three (the general loop).
	// After three tokens the first request leaves (the table is laid anew), and a token
	// later another joins (it takes the free slot).
	for _, B := range []int{6, 12, 20} {
		batch := mk()
		ids := make([]int, B+1)
		for r := range ids {
			ids[r] = 3 + 7*r
		}
		late := ids[B]
		members := ids[:B]
		batch.setBatch(members, members, 128)
		alone := map[int]*neuronSim{}
		for _, id := range ids {
			alone[id] = mk()
			alone[id].setBatch([]int{id}, []int{id}, 128)
		}
		var work, union, own int64
		for tok := range 6 {
			switch tok {
			case 3:
				members = ids[1:B]
				batch.setBatch(members, nil, 0)
			case 4:
				members = ids[1:]
				batch.setBatch(members, []int{late}, 128)
			}
			batch.token++
			for _, ns := range alone {
				ns.token++
			}
			for bi, b := range batch.blocks {
				batch.pass(b)
				for _, w := range b.work {
					work += int64(w)
				}
				union += int64(b.act)
				for id, ns := range alone {
					a := ns.blocks[bi]
					ns.pass(a)
					if slices.Contains(members, id) {
						own += int64(a.act)
					}
				}
			}
		}
		if d := math.Abs(float64(work-own)) / float64(own); d > 0.01 {
			t.Errorf("batch %d computes %d neuron-requests, the requests alone fire %d (%.2f%% apart)", B, work, own, 100*d)
		}
		if float64(work) > 0.8*float64(B*int(union)) || work <= union {
			t.Errorf("batch %d: %d neuron-requests over %d neurons of the union: want each request's own, between the union and %d× it", B, work, union, B)
		}
	}
}

// A decode step's cold work at batch 8 on LLaMA2-13B: the DIMMs read each computed row
// once and multiply it for the requests that need it, about 2.4 requests a row here, far
// below the 8 multiplications a weight read that B × the union's FLOPs would charge.
func TestDIMMFLOPsPerRequest(t *testing.T) {
	c := testHermes()
	c.Model = hmLLaMA13B
	c.Workload.MaxBatch, c.Workload.Requests = 8, 8
	s := stepN(t, c, 3)
	var flops, bytes float64
	for _, sp := range s.Timeline.Spans {
		if sp.Name == "QKV cold" || sp.Name == "MLP cold" {
			flops += sp.FLOPs
			bytes += sp.Bytes
		}
	}
	if bytes == 0 {
		t.Fatal("no cold work in the step")
	}
	t.Logf("the DIMMs multiply each weight they read %.2f times", flops/bytes)
	// two FLOPs a weight of two bytes: FLOPs per byte is the requests each row serves
	if r := flops / bytes; r < 1 || r > 4 {
		t.Errorf("the DIMMs multiply each weight they read %.2f times at batch 8; want each request's own neurons (1–4)", r)
	}
}

// Fig. 16 (§V-E3): at batch 1 performance "stabilizes once 64 multipliers are reached".
// Batch 1 multiplies each weight a DIMM reads once, 93.6 GFLOP/s at 93.6 GB/s: 64
// multipliers at 11 bit-serial cycles give 93.1 GFLOPS and decode as fast as 256 (within
// the 0.6% they fall short), 32 give 46.5 and do not.
func TestFig16MultipliersAtBatch1(t *testing.T) {
	decode := func(mult int) float64 {
		c := testHermes()
		c.Model = hmLLaMA13B
		c.Hermes.NDP.Multipliers = mult
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		var d Time
		for i := range 8 {
			s, err := e.Step()
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				d += s.IterTime
			}
		}
		return d.Seconds()
	}
	t32, t64, t256 := decode(32), decode(64), decode(256)
	t.Logf("decode of 7 tokens: %.3f / %.3f / %.3f ms with 32 / 64 / 256 multipliers", t32*1e3, t64*1e3, t256*1e3)
	if t64 > t256*1.006 {
		t.Errorf("64 multipliers decode in %.3f ms, %.2f%% slower than 256's %.3f ms: the curve has not flattened", t64*1e3, 100*(t64/t256-1), t256*1e3)
	}
	if t32 < t256*1.05 {
		t.Errorf("32 multipliers decode in %.3f ms, within 5%% of 256's %.3f ms: the curve flattens before 64", t32*1e3, t256*1e3)
	}
}

// One link, one rule: Hermes' transfers over PCIe (its prefill stream, reloads,
// promotions) move at the rate the offloading baselines' pinned copies get, one
// direction of the 64 GB/s link at the shared DMA efficiency.
func TestOnePCIeRate(t *testing.T) {
	h, err := newHermes(func() *Config { c := testHermes(); return &c }())
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOffload(func() *Config { c := testOffload(OffloadFlexGen); return &c }())
	if err != nil {
		t.Fatal(err)
	}
	gb := 1e9
	want := 10*Microsecond + FromSeconds(gb/(32e9*0.879))
	if got := h.pcieOp("stream W", gb).Dur; got != want {
		t.Errorf("Hermes moves 1 GB over PCIe in %v, want %v", got, want)
	}
	if got := o.pinned("fetch W", gb, 1).Dur; got != want {
		t.Errorf("FlexGen copies 1 GB in %v, want %v", got, want)
	}
}

// PowerInfer's offline placement (powerinfer-py solver.py), Hermes-host's: the GPU takes
// the most activated neurons until its memory is full, whatever the units' speeds. Two
// QKV blocks (f = 0.9, 0.6, 0.2; 2 bytes) and two MLP blocks (f = 0.8, 0.5, 0.1; 1 byte)
// and 9 bytes: 0.9 (4 bytes), 0.8 (2), 0.6 (4 more would exceed the 3 left), so the next
// QKV rank goes to the first block alone (2 bytes), and 1 byte is left, less than the
// two MLP blocks' next rank.
func TestCapacityPlacement(t *testing.T) {
	q := &nkind{n: 3, p: []float64{0.9, 0.6, 0.2}}
	m := &nkind{n: 3, p: []float64{0.8, 0.5, 0.1}}
	blocks := []*nblock{
		{id: 0, n: 3, bytes: 2, kind: kindQKV, kind0: q}, {id: 1, n: 3, bytes: 1, kind: kindMLP, kind0: m},
		{id: 2, n: 3, bytes: 2, kind: kindQKV, kind0: q}, {id: 3, n: 3, bytes: 1, kind: kindMLP, kind0: m},
	}
	if k := capacityFill(blocks, 9); !slices.Equal(k, []int{2, 1, 1, 1}) {
		t.Errorf("k = %v, want [2 1 1 1]", k)
	}
	if k := capacityFill(blocks, 100); !slices.Equal(k, []int{3, 3, 3, 3}) {
		t.Errorf("ample memory: k = %v, want every neuron", k)
	}
}

// Hermes-host as PowerInfer runs (§V-A, [53]): its prompt goes through the split graph,
// the GPU's neurons on the GPU and the host's on the CPU, with no weight crossing PCIe;
// its placement is static, so no neuron is promoted while it decodes.
func TestHermesHostPrefillAndPlacement(t *testing.T) {
	c := testHermes()
	c.Model = hmLLaMA13B
	c.Hermes.Policy.Cold, c.Hermes.Policy.Mapper, c.Hermes.Policy.Adjust, c.Hermes.Policy.Remap = ColdHost, MapperCapacity, false, false
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Step()
	if err != nil {
		t.Fatal(err)
	}
	var cold, pcie float64
	for _, sp := range s.Timeline.Spans {
		switch {
		case sp.Name == "stream W" || sp.Name == "reload hot":
			t.Fatalf("the prefill streams weights over PCIe (%s)", sp.Name)
		case sp.Name == "prefill cold":
			cold += sp.Bytes
		case s.Timeline.Lanes[sp.Lane].Group == "pcie":
			pcie += sp.Bytes
		}
	}
	if cold == 0 || pcie > 0.2*cold {
		t.Errorf("prefill: the CPU read %.0f MB of cold rows, PCIe moved %.0f MB; want the rows on the CPU and only vectors on PCIe", cold/1e6, pcie/1e6)
	}
	for range 12 {
		if s, err = e.Step(); err != nil {
			t.Fatal(err)
		}
		if s.Neurons.Stats.Promoted > 0 {
			t.Fatalf("token %d promoted %d neurons; PowerInfer places them offline only", s.Neurons.Stats.Token, s.Neurons.Stats.Promoted)
		}
	}
}
