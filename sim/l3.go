package sim

import (
	"fmt"
	"math"
	"strconv"
)

// SystemL3 is the L3 family's planner: GPUs with DIMM-PIM host memory (L3) and, with its
// mechanisms switched, the paper's baselines (§6.1): GPU-only, GPU + HBM-PIM, GPU +
// rank-level DIMM-PIM and GPU + CPU offload.
const SystemL3 = "l3"

// l3 plans one iteration of an L3-family server. The GPUs hold every weight and run every
// FC layer and the prefill attention; decode attention and the KV cache live where
// Attention says. With the L3 scheduler (§5.2–5.3) the decode batch is split into two
// token-balanced sub-batches whose GPU work and in-memory attention alternate layer by
// layer (Fig. 7), and prefill requests are added, the last one chunked, until the GPU
// time of one sub-batch matches the PIM time of the other.
type l3 struct {
	cfg *Config
	lc  *L3Config
	sh  Shard
	dp  int // data-parallel replicas of tp GPUs each
	gpu Device
	nvl Link
	h2d Link // GPU → host, all GPUs together
	d2h Link // host → GPU
	// host DIMM-PIM
	nrs, nch int
	nh       []int // KV heads per channel
	maxNh    int
	layout   rankLayout
	rankBW   float64 // rank-level PIM: bytes/s per rank
	// lanes
	lane                   []Lane
	laneGPU, laneAtt       int // first GPU lane, first attention lane (-1: none)
	laneH2D, laneD2H       int // -1 without host links
	kv                     *kvPool
	blkBytes               float64
	maxModelLen            int      // GPU-resident KV: the longest sequence a replica holds
	gpuFreeGB              float64  // GPU-resident KV: what a replica's GPUs have left after the weights
	hostBlkBytes           float64  // CPU offload: bytes of a KV block in host memory
	reqs                   []*l3Req // by request ID (the engine numbers its requests densely); nil: not admitted
	nextOff                int
	it                     l3Iter
	built                  bool
	pred                   l3Predictor
	rsBusy, rsRecv, rsWork []Time // per rankset, this iteration (for the views)
	bankUse                []float64
	prefillSkip            bool
	refused                bool         // the last admit left a request waiting for KV space
	fetched                bool         // this iteration's decoding requests are fetched (fetchDecodes)
	starved                bool         // a decoding request waits for room this iteration
	exhausted              bool         // not one decoding request could take its next token this iteration
	single                 bool         // plan this iteration as one batch (HBM-PIM: splitting does not pay)
	scratch                [2]*Schedule // where splitIfItPays lays out the plans it compares
	em                     l3Emit       // emit's emitter, reused
	choice                 []int32      // what holds splitIfItPays' choice over a stretch (decided)
	balTop, balMean        float64      // the host's load imbalance, busiest rank over mean (observeBanks)
	balAt                  int          // the busiest rank: channel × ranksets + rankset
}

// l3Req is what the planner keeps per admitted request.
type l3Req struct {
	off   int   // rankset of its layer 0 (layer ℓ on rankset (off+ℓ) mod N_rs, §5.1)
	done  int   // prompt tokens prefilled so far (chunked prefill)
	rep   int   // data-parallel replica its work runs on
	work  int64 // this iteration: attention work of one head (read steps or bytes)
	waits bool  // a decoding request not fetched this iteration: no room for its next token (§5.3 step 1)
}

func init() {
	register(SystemL3, func(c *Config) (system, error) { return newL3(c) })
}

// hostKV reports whether the KV cache and decode attention are in the host DIMMs.
func (lc *L3Config) hostKV() bool {
	return lc.Attention == L3AttnBankPIM || lc.Attention == L3AttnRankPIM
}

// L3Error is a broken rule of the L3 configuration, with the preset key that breaks it.
type L3Error struct{ Key, Msg string }

func (e *L3Error) Error() string { return e.Msg }

func l3Errorf(key, format string, a ...any) error {
	return &L3Error{Key: key, Msg: fmt.Sprintf(format, a...)}
}

// Check applies the rules that tie L3's settings together, at tensor- and
// pipeline-parallel degrees tp and pp: the adaptive scheduler plans against DIMM-PIM
// attention (§5), CPU offload pipelines two sub-batches (NEO, §6.1), and the GPUs form
// data-parallel replicas of tp GPUs each (Table 3). Presets check them when a preset is
// built; the planner again for a configuration built in code.
func (lc *L3Config) Check(tp, pp int) error {
	switch lc.Attention {
	case L3AttnBankPIM, L3AttnRankPIM, L3AttnHBMPIM, L3AttnCPU, L3AttnGPU:
	default:
		return l3Errorf("l3.attention", "l3.attention %q: want bank_pim, rank_pim, hbm_pim, cpu or gpu", lc.Attention)
	}
	switch lc.Scheduler {
	case L3SchedAdaptive:
		if !lc.hostKV() {
			return l3Errorf("l3.scheduler", "the L3 scheduler (l3.scheduler = \"l3\") plans against DIMM-PIM attention; with l3.attention = %q use l3.scheduler = \"prefill_first\"", lc.Attention)
		}
	case L3SchedPrefillFirst:
	default:
		return l3Errorf("l3.scheduler", "l3.scheduler %q: want l3 or prefill_first", lc.Scheduler)
	}
	if lc.SubBatches != 1 && lc.SubBatches != 2 {
		return l3Errorf("l3.sub_batches", "l3.sub_batches = %d: want 1 (single batch) or 2 (interleaved sub-batches)", lc.SubBatches)
	}
	if lc.Attention == L3AttnCPU && lc.SubBatches != 2 {
		return l3Errorf("l3.sub_batches", "CPU offload pipelines a GPU-attention and a CPU-attention sub-batch (NEO); set l3.sub_batches = 2")
	}
	if lc.SplitIfShorter && (lc.Attention != L3AttnHBMPIM || lc.SubBatches != 2) {
		return l3Errorf("l3.split_if_shorter", "l3.split_if_shorter chooses between one and two decode sub-batches of the HBM-PIM baseline; it needs l3.attention = \"hbm_pim\" and l3.sub_batches = 2")
	}
	if lc.Predictor != L3PredOracle && lc.Predictor != L3PredPaper {
		return l3Errorf("l3.predictor", "l3.predictor %q: want oracle or paper", lc.Predictor)
	}
	if pp != 1 {
		return l3Errorf("model.pp", "the L3 family splits a model by tensor and data parallelism only (Table 3); set model.pp = 1, got %d", pp)
	}
	if lc.GPUs < 1 || lc.GPUs%tp != 0 {
		return l3Errorf("model.tp", "tp = %d does not divide the %d GPUs; the GPUs form data-parallel replicas of tp GPUs each (Table 3: OPT-66B tp 2, GPT-89B tp 4, GPT-175B tp 8)", tp, lc.GPUs)
	}
	return nil
}

// newL3 builds the L3 planner: the configuration checked, the GPUs, links and host DIMMs
// derived from it, the lanes, then the KV cache sized in what the weights leave.
func newL3(c *Config) (*l3, error) {
	if err := checkL3(c); err != nil {
		return nil, err
	}
	p := deriveL3(c)
	p.addLanes()
	_, free := l3GPUMemory(c)
	if err := p.newPools(free); err != nil {
		return nil, err
	}
	p.kv.full = c.Workload.KVPolicy == KVReserve
	p.pred.init(c.L3.Predictor == L3PredPaper)
	return p, nil
}

// l3GPUMemory is what a GPU offers the model (its capacity at its memory utilisation) and
// what its share of the weights leaves of it, below zero when they do not fit.
func l3GPUMemory(c *Config) (usable, free float64) {
	g := c.L3.GPU
	usable = g.CapacityGB * 1e9 * g.MemoryUtilization
	return usable, usable - c.shard().WeightBytes()
}

// checkL3 refuses a configuration the planner cannot run, saying what to change.
func checkL3(c *Config) error {
	lc := &c.L3
	sh := c.shard()
	if err := lc.Check(sh.TP, sh.PP); err != nil {
		return err
	}
	g := lc.GPU
	if g.PeakTFLOPS <= 0 || g.BandwidthGBps <= 0 || g.CapacityGB <= 0 || g.ComputeEfficiency <= 0 || g.MemoryEfficiency <= 0 {
		return fmt.Errorf("the GPU needs positive peak FLOP/s, bandwidth, capacity and efficiencies")
	}
	if usable, free := l3GPUMemory(c); free <= 0 {
		return fmt.Errorf("%s needs %.1f GB of weights per GPU at tp=%d but a %s offers %.1f GB; raise model.tp",
			c.Model.Display, sh.WeightBytes()/1e9, sh.TP, g.Display, usable/1e9)
	}
	h := lc.Host
	if h.Channels < 1 || h.RanksPerChannel() < 1 || h.BanksPerRank() < 1 || h.ChipsPerRank < 1 || h.ChipWidthBits < 1 || h.ClockMHz <= 0 || h.Timing.BL < 1 || h.Timing.CCDL < 1 {
		return fmt.Errorf("the host DIMMs need at least one channel, rank, bank and chip, a clock and a burst length")
	}
	if h.CapacityGiB <= 0 {
		return fmt.Errorf("l3.host.capacity_gib must be above 0")
	}
	if (lc.hostKV() || lc.Attention == L3AttnCPU) && (lc.PCIeGBps <= 0 || lc.HostLinkGBps <= 0) {
		return fmt.Errorf("the GPU↔host link needs a bandwidth above 0 (l3.link)")
	}
	if lc.Attention == L3AttnBankPIM && lc.PIM.SoftmaxChunk > 0 && lc.PIM.SoftmaxChunk < h.BanksPerRank() {
		return fmt.Errorf("the rank PU's softmax chunk (%d) is smaller than the %d logic banks whose scores arrive each step; set l3.pim.softmax_chunk to at least %d", lc.PIM.SoftmaxChunk, h.BanksPerRank(), h.BanksPerRank())
	}
	if nrs := h.RanksPerChannel(); lc.hostKV() && nrs > sh.Layers {
		return fmt.Errorf("%d ranksets (%d DIMMs × %d ranks per channel) but %s has %d layers: the layer-wise round-robin (§5.1) needs a layer for every rankset; use at most %d ranks per channel",
			nrs, h.DIMMsPerChannel, h.RanksPerDIMM, c.Model.Display, sh.Layers, sh.Layers)
	}
	if lc.hostKV() && sh.KVHeads < h.Channels {
		return fmt.Errorf("%s has %d KV heads for %d channels: heads are spread over the channels of a rankset (§5.1), so channels would sit idle; use at most %d channels", c.Model.Display, sh.KVHeads, h.Channels, sh.KVHeads)
	}
	if lc.Attention == L3AttnHBMPIM && lc.PIM.HBMPIMTBps <= 0 {
		return fmt.Errorf("HBM-PIM attention needs l3.pim.hbm_pim_tbps above 0")
	}
	if lc.Attention == L3AttnCPU && h.CPUBandwidthGBps <= 0 {
		return fmt.Errorf("CPU attention needs l3.host.cpu_bandwidth_gbps above 0")
	}
	return nil
}

// deriveL3 is the planner's fixed parameters: the GPU as a roofline device, NVLink, the
// GPU↔host links where the host holds KV or runs attention, the KV heads over the
// channels, the bank layout of a rank and a rank's bandwidth.
func deriveL3(c *Config) *l3 {
	lc := &c.L3
	sh := c.shard()
	g, h := lc.GPU, lc.Host
	p := &l3{cfg: c, lc: lc, sh: sh, dp: lc.GPUs / sh.TP, laneAtt: -1, laneH2D: -1, laneD2H: -1}
	p.prefillSkip = c.Workload.Prefill == PrefillSkip
	p.gpu = Device{Name: g.Display, PeakFLOPS: g.PeakTFLOPS * 1e12, MemBandwidth: g.BandwidthGBps * 1e9,
		ComputeEff: g.ComputeEfficiency, MemoryEff: g.MemoryEfficiency, LaunchOverhead: FromSeconds(g.LaunchOverheadUs * 1e-6)}
	p.nvl = Link{Name: "NVLink", Bandwidth: lc.NVLinkGBps * 1e9, Latency: FromSeconds(lc.NVLinkLatencyUs * 1e-6)}
	if lc.hostKV() || lc.Attention == L3AttnCPU {
		bw := min(float64(lc.GPUs)*lc.PCIeGBps*1e9, lc.HostLinkGBps*1e9)
		lat := FromSeconds(lc.PCIeLatencyUs * 1e-6)
		p.h2d = Link{Name: "PCIe GPU→host", Bandwidth: bw, Latency: lat}
		p.d2h = Link{Name: "PCIe host→GPU", Bandwidth: bw, Latency: lat}
	}
	p.nch = h.Channels
	p.nrs = h.RanksPerChannel()
	p.nh = headsPerChannel(sh.KVHeads, p.nch)
	for _, n := range p.nh {
		p.maxNh = max(p.maxNh, n)
	}
	group := max(1, sh.Heads/max(1, sh.KVHeads))
	p.layout = newRankLayout(h, lc.PIM, sh.HeadDim, sh.Precision, group)
	p.rankBW = h.ChannelBandwidth()
	if lc.RowSwitchFactor() > 0 {
		p.rankBW /= 1 + lc.RowSwitchFactor()
	}
	if lc.ChunkMultiple < 1 {
		lc.ChunkMultiple = 1
	}
	return p
}

// addLanes lays out the lanes (the GPUs of each replica, the attention units, the two
// PCIe directions) and the per-rankset and per-bank state the views read.
func (p *l3) addLanes() {
	sh, lc := p.sh, p.lc
	for r := range p.dp {
		name := fmt.Sprintf("GPU ×%d", sh.TP)
		if p.dp > 1 {
			name = fmt.Sprintf("GPU g%d ×%d", r, sh.TP)
		}
		p.lane = append(p.lane, Lane{Name: name, Group: "gpu"})
	}
	switch lc.Attention {
	case L3AttnBankPIM, L3AttnRankPIM:
		p.laneAtt = len(p.lane)
		for r := range p.nrs {
			p.lane = append(p.lane, Lane{Name: "PIM rs" + strconv.Itoa(r), Group: "pim"})
		}
	case L3AttnHBMPIM:
		p.laneAtt = len(p.lane)
		for r := range p.dp {
			name := "HBM-PIM"
			if p.dp > 1 {
				name = "HBM-PIM g" + strconv.Itoa(r)
			}
			p.lane = append(p.lane, Lane{Name: name, Group: "pim"})
		}
	case L3AttnCPU:
		p.laneAtt = len(p.lane)
		p.lane = append(p.lane, Lane{Name: "CPU attention", Group: "cpu"})
	}
	if p.h2d.Bandwidth > 0 {
		p.laneH2D = len(p.lane)
		p.lane = append(p.lane, Lane{Name: p.h2d.Name, Group: "pcie", Transfer: true}, Lane{Name: p.d2h.Name, Group: "pcie", Transfer: true})
		p.laneD2H = p.laneH2D + 1
	}
	p.rsBusy, p.rsRecv, p.rsWork = make([]Time, p.nrs), make([]Time, p.nrs), make([]Time, p.nrs)
	p.bankUse = make([]float64, lc.Host.BanksPerRank())
}

// RowSwitchFactor is the bandwidth lost to opening DRAM rows when the host charges it:
// (tRP + tRCD) per row over the reads one row serves.
func (lc *L3Config) RowSwitchFactor() float64 {
	h := lc.Host
	if !h.RowSwitch || h.RowBytesPerChip <= 0 || h.BytesPerRD() <= 0 {
		return 0
	}
	reads := float64(h.RowBytesPerChip / h.BytesPerRD())
	return float64(h.Timing.RP+h.Timing.RCD) / (reads * float64(max(h.Timing.CCDS, h.Timing.BL)))
}

// newPools sets up the KV cache: in the host DIMMs (L3, rank-level PIM), in each
// replica's HBM (GPU-only, HBM-PIM), or both (CPU offload: GPU first, then host).
func (p *l3) newPools(gpuFree float64) error {
	c, lc, sh := p.cfg, p.lc, p.sh
	L := sh.Layers
	bt := max(1, lc.GPU.KVBlockTokens)
	switch {
	case lc.hostKV():
		// A block is one head's K (or V) of one layer for one slot of `banks` tokens, in one
		// rank (Fig. 5-d: token t in logic bank t mod banks). Admission is checked on the
		// busiest rank: a request puts ⌈L/N_rs⌉ layers on a rankset and max-heads on a channel.
		banks := lc.Host.BanksPerRank()
		p.blkBytes = float64(banks * sh.HeadDim * sh.Precision)
		per := ceilDiv(L, p.nrs) * p.maxNh
		capBlocks := int(lc.Host.RankBytes() / p.blkBytes)
		p.kv = newKVPool(1, capBlocks, func(n int) (int, int) {
			k := per * ceilDiv(n, banks)
			return k, k
		})
	default:
		// A block is bt tokens of one layer, K or V, of the heads one GPU holds.
		p.blkBytes = float64(bt * sh.KVEmbedDev() * sh.Precision)
		locs := p.dp
		if lc.Attention == L3AttnCPU {
			locs++
		}
		capBlocks := int(gpuFree / p.blkBytes)
		p.kv = newKVPool(locs, capBlocks, func(n int) (int, int) {
			k := L * ceilDiv(n, bt)
			return k, k
		})
		p.gpuFreeGB = gpuFree * float64(sh.TP) / 1e9
		limit := capBlocks
		if c.Workload.KVPolicy != KVReserve {
			limit -= capBlocks / 100
		}
		p.maxModelLen = limit / (2 * L) * bt
		if lc.Attention == L3AttnCPU {
			p.hostBlkBytes = float64(bt * sh.KVHeads * sh.HeadDim * sh.Precision)
			p.kv.capacity[p.dp] = int(lc.Host.CapacityBytes() / p.hostBlkBytes)
		}
	}
	return nil
}

// fit: host KV must hold the request on its busiest rank; the CPU-offload baseline holds
// it in GPU memory or the host; the GPU-resident baselines end a sequence where a
// replica's KV memory ends, as vLLM ends it at max_model_len (truncate), so only a prompt
// longer than that can never run.
func (p *l3) fit(in, out int) string {
	lc, sh := p.lc, p.sh
	switch {
	case lc.hostKV():
		need, have, ok := p.kv.alone(in, out)
		if ok {
			return ""
		}
		return fmt.Sprintf("its KV cache needs %.2f GB on its busiest rank but a rank holds %.2f GB (%.0f GiB over %d ranks); raise l3.host.capacity_gib or shorten the sequences",
			float64(need)*p.blkBytes/1e9, float64(have)*p.blkBytes/1e9, lc.Host.CapacityGiB, lc.Host.Ranks())
	case lc.Attention == L3AttnCPU:
		need, _, ok := p.kv.alone(in, out)
		if ok {
			return ""
		}
		return fmt.Sprintf("its KV cache needs %.1f GB but the host holds %.1f GB; raise l3.host.capacity_gib or shorten the sequences",
			float64(need)*p.hostBlkBytes/1e9, lc.Host.CapacityBytes()/1e9)
	case in > p.maxModelLen:
		return fmt.Sprintf("out of memory: each of the %d replicas (%d GPUs) holds the KV of at most %d tokens of %s in the %.1f GB its GPUs have left after the weights; keep the KV in host memory (l3), raise model.tp or shorten the prompts",
			p.dp, sh.TP, p.maxModelLen, p.cfg.Model.Display, p.gpuFreeGB)
	}
	return ""
}

func (p *l3) lanes() []Lane        { return p.lane }
func (p *l3) layers() int          { return p.sh.Layers }
func (p *l3) pool() *kvPool        { return p.kv }
func (p *l3) grow(r *Request) bool { return p.kv.grow(r) }

func (p *l3) release(r *Request) {
	p.kv.release(r)
	if r.ID < len(p.reqs) {
		p.reqs[r.ID] = nil
	}
}

func (p *l3) utilKeys() []string {
	switch p.lc.Attention {
	case L3AttnBankPIM, L3AttnRankPIM:
		return []string{"gpu", "pim", "pcie"}
	case L3AttnHBMPIM:
		return []string{"gpu", "pim"}
	case L3AttnCPU:
		return []string{"gpu", "cpu", "pcie"}
	}
	return []string{"gpu", "bandwidth"}
}

// prefillDone reports whether r's whole prompt has run (chunked prefill, §5.3).
func (p *l3) prefillDone(r *Request) bool {
	st := p.stateOf(r)
	return st == nil || st.done >= r.SeqLen()
}

// state returns r's planner state, creating it at admission with the next rankset offset.
// The states sit in a slice by request ID, which the planner looks up several times per
// request an iteration, where a map cost a hash each time.
func (p *l3) state(r *Request) *l3Req {
	st := p.stateOf(r)
	if st == nil {
		st = &l3Req{off: p.nextOff % max(1, p.nrs), rep: -1}
		p.nextOff++
		if r.ID >= len(p.reqs) {
			p.reqs = append(p.reqs, make([]*l3Req, r.ID+1-len(p.reqs))...)
		}
		p.reqs[r.ID] = st
	}
	return st
}

// stateOf is r's planner state, nil before its admission.
func (p *l3) stateOf(r *Request) *l3Req {
	if r.ID < len(p.reqs) {
		return p.reqs[r.ID]
	}
	return nil
}

// truncate cuts a GPU-resident request's output where its sequence would pass what one
// replica's KV memory holds, as vLLM ends a sequence at max_model_len.
func (p *l3) truncate(r *Request) {
	if p.maxModelLen > 0 && r.InputLen+r.OutputLen > p.maxModelLen {
		r.OutputLen = max(r.Generated+1, p.maxModelLen-r.InputLen, 1)
	}
}

// admit places requests. The L3 scheduler admits only the prefills it adds to fill the
// bubble (§5.3, steps 3–4); the baselines admit every waiting request that fits
// ("prefilling-prioritized", §6.1).
func (p *l3) admit(cands, running []*Request) []bool {
	placed := make([]bool, len(cands))
	p.refused = false
	if p.lc.Scheduler == L3SchedAdaptive {
		var decode, carried []*Request
		for _, r := range running {
			switch r.Status {
			case Running:
				decode = append(decode, r)
			case Prefilling:
				carried = append(carried, r)
			}
		}
		p.fetchDecodes(decode)
		if !p.prefillSkip {
			p.build(p.fetch(decode), carried, cands, placed)
			p.fetched = true
			return placed
		}
	}
	var neo *l3Neo
	if p.lc.Attention == L3AttnCPU {
		neo = p.neoLoads(running)
	}
	for i, r := range cands {
		loc := p.place(r, neo)
		if loc < 0 {
			break
		}
		p.kv.reserve(r, loc)
		if p.lc.Scheduler == L3SchedAdaptive {
			p.kv.reserveFor(r, r.nextLen())
		}
		st := p.state(r)
		st.rep = loc % max(1, p.dp)
		placed[i] = true
		if neo != nil {
			neo.add(p, r, loc)
		}
	}
	return placed
}

// kvRefused reports whether the last admit left a request waiting because its KV cache did
// not fit. The schedulers also leave requests waiting by choice, which is no capacity
// stall: the adaptive one admits only the prefills that fill the bubble (§5.3), and NEO
// keeps a request out of the host's memory when it would lower the throughput.
func (p *l3) kvRefused() bool { return p.refused }

// place picks r's KV location, or -1 if none has room (noting the refusal) or NEO declines
// to host it.
func (p *l3) place(r *Request, neo *l3Neo) int {
	if p.lc.hostKV() {
		if p.hostAdmits(r) {
			return 0
		}
		p.refused = true
		return -1
	}
	out := r.OutputLen
	p.truncate(r)
	best, bestFree := -1, 0
	for g := range p.dp {
		need := p.kv.need(r)
		if !p.kv.admits(g, need) {
			continue
		}
		if f := p.kv.capacity[g] - p.kv.reserved[g]; best < 0 || f > bestFree {
			best, bestFree = g, f
		}
	}
	if best >= 0 || neo == nil {
		p.refused = p.refused || best < 0
		return best
	}
	// NEO: past the GPU memory a request lives in host memory with CPU attention (not cut
	// at the GPU's max_model_len), as long as that does not lower the predicted decode
	// throughput (load-aware scheduling).
	r.OutputLen = out
	if !p.kv.admits(p.dp, p.kv.need(r)) {
		p.refused = true
		return -1
	}
	if p.neoRate(neo.gpu, neo.hostTok+p.neoProjected(r), neo.host+1) < p.neoRate(neo.gpu, neo.hostTok, neo.host) {
		return -1
	}
	return p.dp
}

// declines is how many of the next m admissions, r at the head of the queue, place
// nothing and report the refusal the last one did, while decode (here every running
// request) grows a token an iteration: the first sees the requests as they are, the i-th
// each of decode i−1 tokens longer. Only NEO keeps a request out by choice; the other
// baselines refuse only for want of room, which lasts (stuck).
//
// place refuses r in three steps, each monotone in the shift i:
//   - a replica's HBM takes r only if its reserved blocks leave room, and they only grow
//     with the lengths: refused at shift 0, refused at every shift;
//   - the host memory likewise: refused at shift i, refused at every later one;
//   - NEO declines when rate₁(i) < rate₀(i), the decode rates (neoRate) with r on the CPU
//     and without. Every term of either iteration time is non-decreasing in i (each
//     replica's attention reads its Σ lengths; the CPU reads the host requests' projected
//     lengths, each at least half a token longer an iteration, far above the rounding of
//     its sum; min, max, sums and the picosecond ceilings keep the order) and the
//     numerators are fixed, so both rates are
//     non-increasing, and rate₁(0) < rate₀(h−1) makes NEO decline at every shift below h.
//
// So when the host has no room at shift 0, every admission refuses alike; otherwise the
// answer is the largest h with room at shift h−1 and rate₁(0) < rate₀(h−1), all m when
// they hold at its end, else found by halving.
func (p *l3) declines(running, decode []*Request, r *Request, m int) int {
	if p.lc.Attention != L3AttnCPU || m < 1 {
		return 0
	}
	refused, out := p.refused, r.OutputLen
	p.refused = false
	loc := p.place(r, p.neoLoads(running))
	now := p.refused
	p.refused, r.OutputLen = refused, out
	switch {
	case loc >= 0 || now != refused:
		return 0
	case now:
		return m
	}
	rates := func(i int) (with, without float64) {
		for _, d := range decode {
			d.Generated += i
		}
		neo := p.neoLoads(running)
		with = p.neoRate(neo.gpu, neo.hostTok+p.neoProjected(r), neo.host+1)
		without = p.neoRate(neo.gpu, neo.hostTok, neo.host)
		for _, d := range decode {
			d.Generated -= i
		}
		return with, without
	}
	first, _ := rates(0)
	need := p.kv.need(r)
	holds := func(h int) bool {
		_, without := rates(h - 1)
		return first < without && p.kv.admitsAt(decode, h-1, p.dp, need)
	}
	if holds(m) {
		return m
	}
	return largest(1, m-1, holds)
}

// l3Neo is the decode load NEO's admission weighs: the GPU-resident requests per replica
// and the host-resident ones.
type l3Neo struct {
	gpu     []l3Rep
	host    int
	hostTok float64 // projected (neoProjected)
}

func (n *l3Neo) add(p *l3, r *Request, loc int) {
	if loc >= p.dp {
		n.host++
		n.hostTok += p.neoProjected(r)
		return
	}
	n.gpu[loc].dec++
	n.gpu[loc].attTok += int64(r.SeqLen())
}

// neoRate is the decode tokens per picosecond of a NEO batch: the GPU-resident requests
// with their attention on the GPU, and host ones with theirs on the CPU, either pipelined
// as two sub-batches or one after the other, whichever is faster.
func (p *l3) neoRate(gpu []l3Rep, hostTok float64, host int) float64 {
	var sb0, sb1, one l3SB
	sb0.reps, sb1.reps, one.reps = gpu, make([]l3Rep, p.dp), make([]l3Rep, p.dp)
	n := host
	for g := range p.dp {
		sb1.reps[g].dec = host/p.dp + b2i(g < host%p.dp)
		one.reps[g] = gpu[g]
		one.reps[g].dec += sb1.reps[g].dec
		n += gpu[g].dec
	}
	if n == 0 {
		return 0
	}
	cpu := p.cpuAttnTime(hostTok)
	if host > 0 {
		cpu += p.h2d.Time(p.qkvBytes(host)) + p.d2h.Time(p.outBytes(host))
	}
	t := p.gpuSlot(&one) + cpu
	if host > 0 {
		t = min(t, max(p.gpuSlot(&sb0), cpu)+p.gpuSlot(&sb1))
	}
	return float64(n) / float64(max(1, t))
}

// neoProjected is the context NEO's load-aware policy plans a host-resident request's CPU
// attention for: its length now plus half the output it is still expected to generate
// (the workload's fixed or mean output length), its average over the rest of its decode.
func (p *l3) neoProjected(r *Request) float64 {
	out := float64(p.cfg.Workload.OutputLen)
	if out <= 0 {
		out = p.cfg.Workload.Dataset.OutMean
	}
	return float64(r.SeqLen()) + max(0, out-float64(r.Generated))/2
}

// neoLoads is the decode load of the running requests.
func (p *l3) neoLoads(running []*Request) *l3Neo {
	n := &l3Neo{gpu: make([]l3Rep, p.dp)}
	for _, r := range running {
		if r.Loc >= 0 {
			n.add(p, r, r.Loc)
		}
	}
	return n
}

// --- the host's DDR4 DIMM-PIM (§2.2, §4, §6.1, Table 2) ---

// L3Config is the L3 family's system: a GPU server whose host memory is DIMM-PIM, and the
// mechanism switches that turn L3 into its baselines (GPU-only, GPU + HBM-PIM, GPU +
// rank-level DIMM-PIM, GPU + CPU offload).
type L3Config struct {
	GPU             GPU     // one GPU (catalogue figures and the family's efficiencies)
	GPUs            int     // GPUs in the server; data parallelism = GPUs / TP
	NVLinkGBps      float64 // per GPU, per direction, for the TP all-reduces
	NVLinkLatencyUs float64 // per all-reduce
	PCIeGBps        float64 // GPU↔host, per GPU and direction
	PCIeLatencyUs   float64 // per transfer
	HostLinkGBps    float64 // cap on all GPUs' host traffic per direction (shared PCIe uplinks)

	Host DIMMHost
	PIM  L3PIM

	Attention      string // where decode attention runs: L3Attn*
	Scheduler      string // L3SchedAdaptive or L3SchedPrefillFirst
	SubBatches     int    // 1 (single batch, Fig. 3-b) or 2 (interleaved, Fig. 7)
	ChunkMultiple  int    // prefill chunks are multiples of this many tokens (§5.3: 16)
	CommOverlap    bool   // §5.1: rankset-exclusive transfers, layer round-robin, async prefill KV
	ChargeRelayout bool   // charge a CPU transposition (2× the transfer) instead of the in-flight re-layout (§4.1)
	Predictor      string // L3PredOracle or L3PredPaper
	// SplitIfShorter lets the HBM-PIM baseline run one batch in iterations its two decode
	// sub-batches would make longer (splitIfItPays); off, it always runs two, as §6.1
	// describes it ("utilizes sub-batches for decoding").
	SplitIfShorter bool
}

// Where decode attention runs.
const (
	L3AttnBankPIM = "bank_pim" // L3: bank PUs in every DRAM chip + the rank PU (§4)
	L3AttnRankPIM = "rank_pim" // rank-level DIMM-PIM (Hermes): the buffer chip streams its rank
	L3AttnHBMPIM  = "hbm_pim"  // GPU + HBM-PIM (NeuPIMs/AttAcc): KV in HBM, attention in its PIM
	L3AttnCPU     = "cpu"      // GPU + CPU offload (NEO): KV in GPU HBM first, then host DDR4 with CPU attention
	L3AttnGPU     = "gpu"      // GPU-only: KV and attention in the GPUs' HBM
)

// L3 family schedulers.
const (
	L3SchedAdaptive     = "l3"            // §5.2–5.3: decode first, prefill added and chunked to fill the bubble
	L3SchedPrefillFirst = "prefill_first" // every waiting request that fits joins the batch, whole prompt
)

// Latency predictors of the L3 scheduler.
const (
	L3PredOracle = "oracle" // the analytical cost model itself
	L3PredPaper  = "paper"  // Eq. 5–6's form, fitted online to the measured slot times
)

// DIMMHost is the host memory: DDR4 channels of DIMMs of ranks of ×w chips.
type DIMMHost struct {
	Channels         int
	DIMMsPerChannel  int
	RanksPerDIMM     int
	BankGroups       int // per chip
	BanksPerGroup    int
	ChipsPerRank     int // data chips (64-bit bus / chip width)
	ChipWidthBits    int
	ClockMHz         float64 // I/O clock (DDR4-3200: 1600 MHz, tCK 0.625 ns)
	CapacityGiB      float64
	CPUBandwidthGBps float64 // what the host CPU streams from all channels
	RowBytesPerChip  int     // one DRAM row (page) per chip
	RowSwitch        bool    // charge tRP + tRCD per row opened by the PIM stream
	Timing           DDR4Timing
}

// DDR4Timing is the DRAM timing in clock cycles (tCK).
type DDR4Timing struct {
	BL, CCDS, CCDL, RRDS, RRDL, RCD, RAS, RP, RC, CL, WL, WTRS, WTRL, WR, RTP int
}

// L3PIM is the processing in memory of the family's systems.
type L3PIM struct {
	BankPUMultipliers int     // per physical bank (§4.3: 4)
	BankPUAdders      int     // per physical bank (§4.3: 4)
	RankPUAdders      int     // adder unit of the rank PU (§4.3: 8)
	SoftmaxChunk      int     // softmax unit chunk in FP16 elements (§4.3: 16)
	RankBufferKiB     int     // rank PU buffer (§4.3: 256 KB ≈ 128K tokens)
	HBMPIMTBps        float64 // HBM-PIM baseline: aggregate PIM bandwidth of all GPUs (§6.1: 260.8 TB/s)
}

// RanksPerChannel is DIMMs per channel × ranks per DIMM; it is also the number of
// ranksets, since a rankset is one rank of every channel (§5.1).
func (h DIMMHost) RanksPerChannel() int { return h.DIMMsPerChannel * h.RanksPerDIMM }

// Ranks is the number of ranks in the host.
func (h DIMMHost) Ranks() int { return h.Channels * h.RanksPerChannel() }

// BanksPerRank is the logic banks of one rank (bank groups × banks per group).
func (h DIMMHost) BanksPerRank() int { return h.BankGroups * h.BanksPerGroup }

// TCK is the clock period in picoseconds.
func (h DIMMHost) TCK() float64 { return 1e6 / h.ClockMHz }

// BytesPerRD is what one chip delivers for one read command: its width × the burst's
// beats (two per clock, double data rate). DDR4 ×8, BL 4 tCK: 8 B = 4 FP16.
func (h DIMMHost) BytesPerRD() int { return h.ChipWidthBits * 2 * h.Timing.BL / 8 }

// ChannelBandwidth is one channel's bus rate in bytes/s: a rank burst of chips ×
// BytesPerRD every max(BL, tCCD_S) clocks. DDR4-3200: 64 B / 2.5 ns = 25.6 GB/s.
func (h DIMMHost) ChannelBandwidth() float64 {
	return float64(h.ChipsPerRank*h.BytesPerRD()) / (float64(max(h.Timing.BL, h.Timing.CCDS)) * h.TCK() * 1e-12)
}

// BankPIMRankBandwidth is what the bank PUs of one rank read in all-bank mode, bytes/s:
// every bank of every chip reads BytesPerRD each tCCD_L, since consecutive reads within a
// bank group are tCCD_L apart (§2.2, Table 2). DDR4-3200: 16 × 8 × 8 B / 5 ns = 204.8 GB/s.
func (h DIMMHost) BankPIMRankBandwidth() float64 {
	return float64(h.BanksPerRank()*h.ChipsPerRank*h.BytesPerRD()) / (float64(h.Timing.CCDL) * h.TCK() * 1e-12)
}

// BankPIMBandwidth is the whole host's bank-PIM bandwidth (Table 2: 13.0 TB/s).
func (h DIMMHost) BankPIMBandwidth() float64 { return float64(h.Ranks()) * h.BankPIMRankBandwidth() }

// RankPIMBandwidth is the whole host's bandwidth when each rank's buffer chip streams its
// rank at the bus rate (rank-level PIM): ranks × channel rate (≈1.64 TB/s, "about 8×"
// below L3, §6.2).
func (h DIMMHost) RankPIMBandwidth() float64 { return float64(h.Ranks()) * h.ChannelBandwidth() }

// CapacityBytes is the host memory in bytes.
func (h DIMMHost) CapacityBytes() float64 { return h.CapacityGiB * (1 << 30) }

// RankBytes is the capacity of one rank.
func (h DIMMHost) RankBytes() float64 { return h.CapacityBytes() / float64(max(1, h.Ranks())) }

// headsPerChannel places heads on the channels of a rankset: head h on channel h mod
// channels, in every layer of every request. §5.1 says only that "KV cache of different
// heads in the same layer is assigned to different channels within a rankset"; dealing
// them in turn from channel 0 is its literal reading, as the paper describes no rotation
// of the first channel from one request or layer to the next. OPT-66B's 72 heads on 16
// channels give 5 heads to channels 0–7 and 4 to channels 8–15: the busiest channel paces
// each rankset's attention (attTime) and bounds admission (newPools), 11% over an even
// 4.5 heads (the effect is measured in docs/l3.md).
func headsPerChannel(heads, channels int) []int {
	nh := make([]int, channels)
	for h := range heads {
		nh[h%channels]++
	}
	return nh
}

// rankLayout is the KV layout inside one rank and the cost of one head's decode attention
// there, in read steps of tCCD_L (every bank of every chip reads once per step).
type rankLayout struct {
	banks       int // logic banks of the rank
	kRDs        int // reads per chip for one token's K (Fig. 5-d: D_h / chips / elements per read)
	vBanks      int // banks one token's V spreads over, one burst each (Fig. 5-e: 4)
	vTokens     int // tokens whose V one step reads (banks / vBanks)
	computeMul  int // steps per read when the bank PU has fewer multipliers than it needs
	bufTokens   int // scores the rank PU buffer holds (FP16)
	rowOverhead float64
	stepPs      float64
}

func newRankLayout(h DIMMHost, p L3PIM, headDim, precision, group int) rankLayout {
	epr := max(1, h.BytesPerRD()/precision)
	l := rankLayout{banks: h.BanksPerRank(), stepPs: float64(h.Timing.CCDL) * h.TCK()}
	l.kRDs = ceilDiv(headDim, h.ChipsPerRank*epr)
	l.vBanks = max(1, ceilDiv(headDim*precision, h.ChipsPerRank*h.BytesPerRD()))
	l.vTokens = max(1, l.banks/l.vBanks)
	// A grouped-query KV head serves `group` query heads: each element read is multiplied
	// that many times.
	l.computeMul = ceilDiv(epr*max(1, group), max(1, p.BankPUMultipliers))
	l.bufTokens = p.RankBufferKiB * 1024 / precision
	if h.RowSwitch && h.RowBytesPerChip > 0 {
		// Opening a new row costs tRP + tRCD; a row serves RowBytes / BytesPerRD reads.
		reads := float64(h.RowBytesPerChip / h.BytesPerRD())
		l.rowOverhead = float64(h.Timing.RP+h.Timing.RCD) / (reads * float64(h.Timing.CCDL))
	}
	return l
}

// steps is the read steps of one request's decode attention for one head on its rank at
// sequence length s (§4.2–4.3, Fig. 5-d/e):
//   - score: token t's K sits in logic bank t mod banks, so a slot of `banks` tokens costs
//     kRDs steps and a partial last slot costs as much as a full one;
//   - context: one step reads the V of vTokens tokens (one burst from each of vBanks banks
//     per token);
//   - past the rank PU buffer (128K tokens) the scores must be fetched again: one more
//     score pass.
func (l rankLayout) steps(s int) int64 {
	if s <= 0 {
		return 0
	}
	k := int64(ceilDiv(s, l.banks) * l.kRDs)
	v := int64(ceilDiv(s, l.vTokens))
	if l.bufTokens > 0 && s > l.bufTokens {
		k *= 2
	}
	return (k + v) * int64(l.computeMul)
}

// bankUseful is, for bank b of a rank, the steps in which it reads useful data for one
// head at sequence length s: its K tokens (t ≡ b mod banks) and the V tokens of its quad.
func (l rankLayout) bankUseful(s, b int) int64 {
	if s <= 0 {
		return 0
	}
	kTok := s / l.banks
	if b < s%l.banks {
		kTok++
	}
	q := b / l.vBanks
	vTok := s / l.vTokens
	if q < s%l.vTokens {
		vTok++
	}
	return int64(kTok*l.kRDs+vTok) * int64(l.computeMul)
}

// time converts read steps to picoseconds, with the row-switch overhead if charged.
func (l rankLayout) time(steps int64) Time {
	if steps <= 0 {
		return 0
	}
	return Time(math.Ceil(float64(steps) * l.stepPs * (1 + l.rowOverhead)))
}
