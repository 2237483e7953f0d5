package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// SystemLoLPIM plans the LoL-PIM family (Kwon, Koo et al., "LoL-PIM: Long-Context LLM Decoding
// with Scalable DRAM-PIM System", arXiv 2412.20166): nodes of GDDR6-AiM PIM modules that run
// the whole decode step (or only attention, beside a GPU per node), with the three mechanisms
// ① intra-module token-parallel partitioning (ITPP) with tensor + pipeline parallelism,
// ② dynamic memory through Direct PIM Access (lazy KV chunks) and ③ I/O-aware ping-pong
// buffers, each a switch that turns LoL-PIM into its baselines.
const SystemLoLPIM = "lolpim"

// LoL-PIM KV partitionings and memory managements.
const (
	PartitionITPP = "itpp"    // ① K split by token, V by head dimension over all banks
	PartitionHFA  = "hfa"     // head-first allocation: a request's per-head KV in one channel
	MemoryDynamic = "dynamic" // ② DPA: KV chunks allocated lazily, non-contiguous
	MemoryStatic  = "static"  // every request reserves its maximum context at admission
)

// LoLPIMConfig is a LoL-PIM system: its AiM hardware, how the model is split over the
// modules and which of the paper's mechanisms are on.
type LoLPIMConfig struct {
	// Organisation (Table 5): nodes of modules of channels of banks, one PU per bank.
	Nodes           int
	ModulesPerNode  int
	Channels        int // AiM channels per module
	BanksPerChannel int
	RowsPerBank     int
	RowBytes        int     // DRAM page
	ClockGHz        float64 // PU clock
	MACElems        int     // elements a PU multiplies and accumulates per cycle
	GBBytes         int     // global buffer per channel (the input vector of a DOT-PROD)
	OutRegs         int     // output registers per PU
	ChannelGBps     float64 // I/O bandwidth of one channel: a GB fill takes GBBytes at this rate
	RdOutNs         float64 // one RD-OUT: one output register of each of a channel's PUs read to the hub
	// TModNs is the switch of a channel between its MAC commands and its register transfers
	// (GB writes, RD-OUTs), paid on entering and on leaving each run of transfers.
	TModNs float64
	// DRAM timing of the all-bank MAC stream: every DRAM row a PU's MACs use up is opened in
	// all banks at once (activate to MAC tRCD), closed tRTP after its last MAC (precharge
	// tRP) with no other bank to hide them behind; every tREFI the banks close their rows,
	// refresh for tRFC and open the row again.
	TRCDNs, TRTPNs, TRPNs, TRFCNs, TREFINs float64
	EPUElemsPerNs                          float64 // hub EPU throughput (softmax, norms, element-wise ops)
	InterfaceGBps                          float64 // node ↔ host interface: TP reductions and stage hand-offs in a node
	InterNodeGBps                          float64 // node ↔ node link
	HostSyncUs                             float64 // host update of one stage's dispatcher per micro-batch

	// Model split and mechanisms.
	TP, PP       int    // modules per tensor-parallel group and pipeline stages (0: derived)
	MicroBatch   int    // requests per micro-batch (0: the host's choice, microBatch)
	Partitioning string // PartitionITPP or PartitionHFA
	Memory       string // MemoryDynamic or MemoryStatic
	StaticMaxCtx int    // tokens every request reserves under static management (model CTL)
	ChunkRows    int    // row-indices (one row in every bank of a module) per DPA chunk
	PingPong     bool   // ③ I/O-aware buffering: data transfer overlaps the MACs

	// Heterogeneous node: a GPU per node runs the FC layers, the PIM modules attention.
	XPU bool
	GPU GPU // the node's GPU (capacity and bandwidth already the node's share)
}

// lpCost is one PIM command stream: MAC time, data-transfer time of a channel (GB fills,
// RD-OUTs and the mode switches around them), the part of the transfer that ping-pong
// buffers cannot hide (the first fill, the last drain), the time the module's broadcast
// input path is busy with its fills, all in nanoseconds, and the bytes the transfers move
// over the channels' buses.
type lpCost struct{ mac, dt, pro, path, bytes float64 }

func (c lpCost) add(o lpCost) lpCost {
	return lpCost{c.mac + o.mac, c.dt + o.dt, c.pro + o.pro, c.path + o.path, c.bytes + o.bytes}
}

// dur is the stream's latency: transfers in series with the MACs, or with ③ overlapped so
// that it takes max(MAC, transfer) plus one fill and one drain; never less than the
// broadcast path needs for the stream's fills.
func (c lpCost) dur(pingpong bool) float64 {
	if pingpong {
		return max(c.mac, c.dt, c.path-c.pro) + c.pro
	}
	return max(c.mac+c.dt, c.path)
}

// lpPhase accumulates one phase (QKV, QKᵀ, …) of a visit: the sums of its streams' MAC
// and transfer times and its latency, which with ③ is the sum of the streams' overlapped
// latencies, not the overlap of the sums.
type lpPhase struct{ mac, dt, d, bytes, flops float64 }

func (p *lpPhase) put(c lpCost, n float64, pingpong bool) {
	p.mac += n * c.mac
	p.dt += n * c.dt
	p.d += n * c.dur(pingpong)
	p.bytes += n * c.bytes
}

// lpReq is a request's place in the PIM memory.
type lpReq struct {
	slot  int     // batch slot: a static reservation region, and HFA's channel placement
	pages []int32 // Va2Pa: the physical chunk of each virtual chunk (dynamic memory)
}

// lpWork is one micro-batch's work per decoder layer on the critical module of a stage.
type lpWork struct {
	n                    int
	qkv, qkt, sv         lpPhase
	proj, ffn1, ffn2     lpPhase
	softFirst, softTotal float64 // ns: the first head's softmax, all heads' softmax
	epu                  float64 // ns: norms, residual adds and gating on the EPU
	gpuQKV, gpuRest      float64 // ns: hybrid FC on each of the stage's GPUs
	gpuQKVFl, gpuRestFl  float64 // FLOPs per GPU
	gpuIn, gpuOut        float64 // ns: q, k, v to PIM; the attention output back
	gpuAR                float64 // ns: the GPUs' two all-reduces across nodes
}

type lolpim struct {
	cfg  *Config
	c    LoLPIMConfig
	m    Model
	prec int

	tp, pp, mods, P int
	stLayers, first []int // decoder layers of each stage and the first one's index
	hq              int   // query heads per module (HFA with tp > heads: 1)
	grp             int   // HFA with tp > heads: modules that share a head (by batch slot)
	mpn             int
	gbElems         int
	rowElems        int
	tFill, tRd      float64 // ns
	macsPerRow      int     // all-bank MACs that use up one DRAM row (2 KB / 32 B = 64)
	rowNs           float64 // what each row costs beside its MACs: tRCD + tRTP + tRP
	refresh         float64 // MAC time stretch of refresh: tREFI / (tREFI − refresh pause)
	tSync           float64
	fc              [4]lpCost // QKV, Proj, FFN1, FFN2 of one request in one layer
	fcBank          []float64 // MAC cycles of each bank for the four FC GEMVs of one request
	gpu             Device
	gpuShare        int // GPUs of each stage (its modules' nodes)

	kv         *kvPool
	weightRows int // row-indices of every module the weights take
	chunkCap   int
	reqs       map[int]*lpReq
	slots      []bool
	free       []int32   // dynamic: free chunks, a stack
	static     [][]int32 // static: the chunks of each slot's reservation
	staticR    int

	lane         []Lane
	laneGPU0     int
	order        []*Request
	work         []lpWork
	last         []int
	stageEnd     []int
	deps         []int
	joins        []int
	chQKT, chSV  []lpCost  // HFA per pattern×channel, per micro-batch
	chSoft       []float64 // HFA softmax per pattern (module), per micro-batch
	hfaLoad      []float64 // observe: per pattern×channel MAC busy ns per layer, all requests
	hfaDT        []float64 // per pattern×channel transfer ns per layer
	hfaOwner     []int
	hfaOwnerLoad []float64
	bankAttn     []float64 // ITPP: attention MAC cycles of each pattern×bank per layer, all requests
	bankDiff     []float64 // per pattern, P+1 entries
	itQKT, itSV  []lpPhase // ITPP per pattern, per micro-batch
	ioBusy       []float64 // per stage: transfer time this iteration, ns
	itOwner      int
	notes        []string // heat-map row labels
	outName      []string // hand-off op name of each stage

	// Snapshot buffers a recycling engine reuses, or a released snapshot's grid cells
	// (reuseGrid) for the next grid.
	gPIM, gMem []float64
	gOwner     []int
	holders    []KVHolder
}

func init() {
	register(SystemLoLPIM, func(c *Config) (system, error) { return newLoLPIM(c) })
}

// lpValidTP reports whether tp modules can share the heads: each module takes whole heads,
// or, with more modules than heads, tp/heads modules share a head's requests by batch slot.
func lpValidTP(tp, heads int) bool {
	return heads%tp == 0 || tp%heads == 0
}

// lpSplit resolves the TP × PP split of the modules; a zero tp or pp is derived from the
// other. By default PIM-only ITPP keeps a TP group in one node (tensor parallelism inside,
// pipeline parallelism across nodes): its FC layers cost each request a GEMV of its own, so
// micro-batches cost the banks nothing extra. The head-first baseline is tensor-parallel
// only. A heterogeneous system is tensor-parallel over all its modules too (beyond the
// heads, modules share a head's requests by slot): its GPU streams its share of the FC
// weights once per micro-batch it serves, so M micro-batches read them M times, and
// pipeline stages over the nodes' GPUs leave each token's weights to be read one GPU after
// another instead of by all at once.
func lpSplit(c LoLPIMConfig, m Model) (int, int, error) {
	mods := c.Nodes * c.ModulesPerNode
	tp, pp := c.TP, c.PP
	switch {
	case tp > 0 && pp == 0:
		if mods%tp != 0 {
			return 0, 0, fmt.Errorf("lolpim.tp=%d does not divide the %d modules (%d nodes × %d); pick a divisor of %d", tp, mods, c.Nodes, c.ModulesPerNode, mods)
		}
		pp = mods / tp
	case pp > 0 && tp == 0:
		if mods%pp != 0 {
			return 0, 0, fmt.Errorf("lolpim.pp=%d does not divide the %d modules (%d nodes × %d); pick a divisor of %d", pp, mods, c.Nodes, c.ModulesPerNode, mods)
		}
		tp = mods / pp
	case tp == 0 && pp == 0:
		limit := mods
		if c.Partitioning == PartitionITPP && !c.XPU {
			limit = c.ModulesPerNode
		}
		best, any := 0, 0
		for d := 1; d <= mods; d++ {
			if mods%d != 0 || !lpValidTP(d, m.Heads) || mods/d > m.Layers {
				continue
			}
			if any == 0 {
				any = d
			}
			if d <= limit {
				best = d
			}
		}
		if best == 0 {
			best = any
		}
		if best == 0 {
			return 0, 0, fmt.Errorf("no split of %d modules suits %s (%d heads, %d layers); set lolpim.tp and lolpim.pp", mods, m.Display, m.Heads, m.Layers)
		}
		tp, pp = best, mods/best
	}
	if tp*pp != mods {
		t := min(c.ModulesPerNode, mods)
		return 0, 0, fmt.Errorf("lolpim.tp × lolpim.pp = %d × %d = %d, but the system has %d modules (%d nodes × %d per node); make tp × pp = %d (e.g. tp=%d pp=%d), or set either to 0 to derive it from the other",
			tp, pp, tp*pp, mods, c.Nodes, c.ModulesPerNode, mods, t, mods/t)
	}
	if !lpValidTP(tp, m.Heads) {
		return 0, 0, fmt.Errorf("the lolpim.tp=%d modules of a stage share %s's %d attention heads whole: pick a tp that divides %d or is a multiple of it", tp, m.Display, m.Heads, m.Heads)
	}
	if pp > m.Layers {
		return 0, 0, fmt.Errorf("lolpim.pp=%d pipeline stages exceed %s's %d layers; lower pp", pp, m.Display, m.Layers)
	}
	return tp, pp, nil
}

// lpParams is the model's parameter count as the memory holds it: the decoder layers plus
// separate input-embedding and LM-head matrices (Qwen1.5 does not tie them).
func lpParams(m Model) float64 {
	s := Shard{Model: m, TP: 1, PP: 1, Precision: 1}
	return s.LayerParams()*float64(m.Layers) + 2*float64(m.Vocab)*float64(m.DModel)
}

func newLoLPIM(cfg *Config) (*lolpim, error) {
	c := cfg.LoLPIM
	m := cfg.Model
	for _, v := range []struct {
		name string
		val  float64
	}{{"nodes", float64(c.Nodes)}, {"modules_per_node", float64(c.ModulesPerNode)}, {"channels", float64(c.Channels)}, {"banks_per_channel", float64(c.BanksPerChannel)},
		{"rows_per_bank", float64(c.RowsPerBank)}, {"row_bytes", float64(c.RowBytes)}, {"clock_ghz", c.ClockGHz}, {"mac_elems", float64(c.MACElems)},
		{"gb_bytes", float64(c.GBBytes)}, {"out_regs", float64(c.OutRegs)}, {"channel_io_gbps", c.ChannelGBps}, {"epu_elems_per_ns", c.EPUElemsPerNs},
		{"interface_gbps", c.InterfaceGBps}, {"inter_node_gbps", c.InterNodeGBps}, {"chunk_rows", float64(c.ChunkRows)}} {
		if !(v.val > 0) {
			return nil, fmt.Errorf("LoL-PIM %s must be positive, got %v", v.name, v.val)
		}
	}
	if c.TP < 0 || c.PP < 0 || c.MicroBatch < 0 || c.RdOutNs < 0 || c.HostSyncUs < 0 || c.TModNs < 0 ||
		c.TRCDNs < 0 || c.TRTPNs < 0 || c.TRPNs < 0 || c.TRFCNs < 0 || c.TREFINs < 0 {
		return nil, errors.New("LoL-PIM tp, pp, micro_batch, rdout_ns, t_mod_ns, host_sync_us and the DRAM timings (t_rcd_ns, t_rtp_ns, t_rp_ns, t_rfc_ns, t_refi_ns) must not be negative")
	}
	if pause := c.RefreshPauseNs(); c.TRFCNs > 0 && !(c.TREFINs > pause) {
		return nil, fmt.Errorf("LoL-PIM banks pause %g ns for each refresh (t_rtp_ns + t_rp_ns + t_rfc_ns + t_rcd_ns) every t_refi_ns=%g, which leaves no time for MACs; t_refi_ns must exceed %g", pause, c.TREFINs, pause)
	}
	if c.Partitioning != PartitionITPP && c.Partitioning != PartitionHFA {
		return nil, fmt.Errorf("LoL-PIM partitioning %q: want %q or %q", c.Partitioning, PartitionITPP, PartitionHFA)
	}
	if c.Memory != MemoryDynamic && c.Memory != MemoryStatic {
		return nil, fmt.Errorf("LoL-PIM memory %q: want %q or %q", c.Memory, MemoryDynamic, MemoryStatic)
	}
	if cfg.TP > 1 || cfg.PP > 1 {
		return nil, fmt.Errorf("LoL-PIM splits the model over its PIM modules with lolpim.tp and lolpim.pp; leave model.tp and model.pp at 1 (got %d and %d)", cfg.TP, cfg.PP)
	}
	if cfg.Workload.Prefill == PrefillRun {
		return nil, errors.New("LoL-PIM decodes with each prompt already in the KV cache (the paper does not evaluate prefill); set workload.prefill = \"skip\"")
	}
	prec := max(1, cfg.Precision)
	if c.RowBytes%prec != 0 || c.GBBytes%prec != 0 {
		return nil, fmt.Errorf("LoL-PIM rows (%d B) and global buffers (%d B) must hold whole %d-byte elements", c.RowBytes, c.GBBytes, prec)
	}
	tp, pp, err := lpSplit(c, m)
	if err != nil {
		return nil, err
	}
	mods := c.Nodes * c.ModulesPerNode
	p := &lolpim{cfg: cfg, c: c, m: m, prec: prec, tp: tp, pp: pp, mods: mods, P: c.Channels * c.BanksPerChannel, mpn: c.ModulesPerNode,
		gbElems: c.GBBytes / prec, rowElems: c.RowBytes / prec, reqs: map[int]*lpReq{}}
	p.stLayers, p.first = make([]int, pp), make([]int, pp)
	at := 0
	for s := range pp {
		p.stLayers[s] = m.Layers / pp
		if s < m.Layers%pp {
			p.stLayers[s]++
		}
		p.first[s] = at
		at += p.stLayers[s]
	}
	p.grp = 1
	p.hq = m.Heads / min(tp, m.Heads)
	if tp > m.Heads {
		p.grp = tp / m.Heads
	}
	p.tFill = float64(c.GBBytes) / c.ChannelGBps // bytes / (GB/s) = ns
	p.tRd = c.RdOutNs
	p.macsPerRow = max(1, c.RowBytes/(c.MACElems*prec))
	p.rowNs = c.TRCDNs + c.TRTPNs + c.TRPNs
	p.refresh = 1
	if c.TRFCNs > 0 {
		p.refresh = c.TREFINs / (c.TREFINs - c.RefreshPauseNs())
	}
	p.tSync = c.HostSyncUs * 1e3

	// FC GEMVs per module under Megatron TP: d_out split for QKV and FFN1, d_in for Proj
	// and FFN2.
	mats := 2
	if m.FFN == "swiglu" {
		mats = 3
	}
	shapes := [4][2]int{
		{ceilDiv((m.Heads+2*m.KVHeads)*m.HeadDim, tp), m.DModel},
		{m.DModel, ceilDiv(m.Heads*m.HeadDim, tp)},
		{ceilDiv((mats-1)*m.DFFN, tp), m.DModel},
		{m.DModel, ceilDiv(m.DFFN, tp)},
	}
	p.fcBank = make([]float64, p.P)
	for i, sh := range shapes {
		p.fc[i] = p.gemv(sh[0], sh[1])
		k := float64(ceilDiv(sh[1], c.MACElems))
		for b := range p.P {
			p.fcBank[b] += float64(sh[0]/p.P+b2i(b < sh[0]%p.P)) * k
		}
	}

	// Capacity: weights (every parameter at the model precision) spread evenly over the
	// modules, the KV cache in the remaining row-indices, counted in DPA chunks.
	rowIdx := float64(p.P * c.RowBytes)
	modBytes := rowIdx * float64(c.RowsPerBank)
	wTotal := lpParams(m) * float64(prec)
	if c.XPU {
		g := c.GPU
		if g.PeakTFLOPS <= 0 || g.BandwidthGBps <= 0 || g.CapacityGB <= 0 {
			return nil, errors.New("the heterogeneous LoL-PIM node needs a GPU with a positive FLOP rate, bandwidth and capacity (lolpim.xpu_gpu)")
		}
		if per := wTotal / float64(c.Nodes); per > g.CapacityGB*1e9 {
			need := int(math.Ceil(wTotal / (g.CapacityGB * 1e9)))
			return nil, fmt.Errorf("%s needs %.1f GB of weights on each node's GPU over %d nodes, but each holds %.1f GB; use at least %d nodes (lolpim.nodes)",
				m.Display, per/1e9, c.Nodes, g.CapacityGB, need)
		}
		p.gpu = Device{Name: g.Display, PeakFLOPS: g.PeakTFLOPS * 1e12, MemBandwidth: g.BandwidthGBps * 1e9, ComputeEff: g.ComputeEfficiency, MemoryEff: g.MemoryEfficiency,
			LaunchOverhead: FromSeconds(g.LaunchOverheadUs * 1e-6)}
		if p.gpu.ComputeEff <= 0 || p.gpu.MemoryEff <= 0 {
			return nil, errors.New("the heterogeneous LoL-PIM node's GPU needs compute and memory efficiencies above 0")
		}
		p.gpuShare = max(1, ceilDiv(tp, c.ModulesPerNode))
	} else {
		if wTotal > modBytes*float64(mods) {
			need := int(math.Ceil(wTotal / (modBytes * float64(c.ModulesPerNode))))
			return nil, fmt.Errorf("%s needs %.1f GiB of weights (%.2fB parameters × %d B) but %d nodes × %d modules × %.0f GiB hold %.0f GiB; use at least %d nodes (lolpim.nodes)",
				m.Display, wTotal/(1<<30), lpParams(m)/1e9, prec, c.Nodes, c.ModulesPerNode, modBytes/(1<<30), modBytes*float64(mods)/(1<<30), need)
		}
		p.weightRows = int(math.Ceil(wTotal / float64(mods) / rowIdx))
	}
	p.chunkCap = (c.RowsPerBank - p.weightRows) / c.ChunkRows
	p.kv = newKVPool(1, p.chunkCap, p.chunks)
	if c.Memory == MemoryStatic {
		if c.StaticMaxCtx < 1 {
			return nil, fmt.Errorf("static memory needs lolpim.static_max_ctx ≥ 1, got %d", c.StaticMaxCtx)
		}
		p.kv.full = true
		p.kv.reserveLen = c.StaticMaxCtx
		k, v := p.chunks(c.StaticMaxCtx)
		p.staticR = k + v
	} else {
		p.free = make([]int32, p.chunkCap)
		for i := range p.free {
			p.free[i] = int32(p.chunkCap - 1 - i)
		}
	}

	// Lanes: each pipeline stage has its dot-product units, its data transfers, its hub EPU
	// and its host interface; the heterogeneous node adds one GPU per node.
	for s := range pp {
		pre := "S" + strconv.Itoa(s) + " "
		p.lane = append(p.lane, Lane{Name: pre + "MAC", Group: "pim"}, Lane{Name: pre + "I/O", Group: "io", Transfer: true},
			Lane{Name: pre + "EPU", Group: "epu"}, Lane{Name: pre + "host I/F", Group: "host", Transfer: true})
	}
	p.laneGPU0 = len(p.lane)
	if c.XPU {
		for n := range c.Nodes {
			p.lane = append(p.lane, Lane{Name: "N" + strconv.Itoa(n) + " GPU", Group: "gpu"})
		}
	}
	pats := p.grp * c.Channels
	p.chQKT, p.chSV, p.chSoft = make([]lpCost, pats), make([]lpCost, pats), make([]float64, p.grp)
	p.hfaLoad, p.hfaDT = make([]float64, pats), make([]float64, pats)
	p.hfaOwner, p.hfaOwnerLoad = make([]int, pats), make([]float64, pats)
	p.bankAttn, p.bankDiff = make([]float64, p.grp*p.P), make([]float64, p.grp*(p.P+1))
	p.itQKT, p.itSV = make([]lpPhase, p.grp), make([]lpPhase, p.grp)
	p.ioBusy = make([]float64, pp)
	p.stageEnd = make([]int, pp)
	p.outName = make([]string, pp)
	for s := range pp {
		p.outName[s] = "→S" + strconv.Itoa(s+1)
	}
	p.outName[pp-1] = "→host→S0"
	return p, nil
}

// chunks is the K and V chunks one module holds for a request of n tokens, for the stage with
// the most layers (the host allocates the same chunk on every module). Keys are striped by
// token over the module's P banks, 1024/d_h heads to a row ("row = T_cur/256"); values take
// d_h banks per head and a row's 1024 elements of tokens.
func (p *lolpim) chunks(n int) (int, int) {
	if n <= 0 {
		return 0, 0
	}
	per := float64(p.stLayers[0]*p.m.KVHeads*p.m.HeadDim) / float64(p.tp) // elements per token per module
	kRows := ceilDiv(n, p.P) * int(math.Ceil(per/float64(p.rowElems)))
	vRows := ceilDiv(n, p.rowElems) * int(math.Ceil(per/float64(p.P)))
	return ceilDiv(kRows, p.c.ChunkRows), ceilDiv(vRows, p.c.ChunkRows)
}

// RefreshPauseNs is how long the banks stop their MACs for each all-bank refresh: the
// open row closes tRTP after the last MAC (precharge tRP), the banks refresh for tRFC and
// the row opens again (tRCD) before the next MAC. The public AiM simulator (Ramulator 2.0
// based, github.com/arkhadem/aim_simulator, src/dram_controller/impl/refresh/
// all_bank_refresh.cpp and the REFab prerequisites of src/dram/impl/GDDR6.cpp) issues
// the refresh every nREFI ahead of the AiM commands and requires every bank closed.
func (c LoLPIMConfig) RefreshPauseNs() float64 {
	if c.TRFCNs <= 0 {
		return 0
	}
	return c.TRTPNs + c.TRPNs + c.TRFCNs + c.TRCDNs
}

// macNs is the time of an all-bank stream of MAC commands, each a 16-element dot product
// over 32 B of a DRAM row: one command a cycle, plus, for each row the stream opens (every
// 64 MACs of a 2 KB row: in all-bank mode every bank opens the same row, so no other bank
// hides it), the activate to the first MAC (tRCD), the wait from the last MAC to the
// precharge (tRTP) and the precharge (tRP); all stretched by the refresh pauses. The
// paper's numbers come from a Ramulator-based AiM simulator validated against AiM-SDK
// (§8.1); the public AiM simulator times MAC16 against ACT16 (nRCDRDMAC), PREA (nRTP) and
// the next ACT16 (nRP) so (src/dram/impl/GDDR6.cpp).
func (p *lolpim) macNs(cycles float64) float64 {
	return p.macRowsNs(cycles, math.Ceil(cycles/float64(p.macsPerRow)))
}

// macRowsNs is macNs for a stream that opens rows rows, for a layout that uses a row for
// fewer MACs than it holds.
func (p *lolpim) macRowsNs(cycles, rows float64) float64 {
	if cycles <= 0 {
		return 0
	}
	return (cycles/p.c.ClockGHz + rows*p.rowNs) * p.refresh
}

// macBusy is macNs spread evenly over cycles, for per-bank shares of the heat map.
func (p *lolpim) macBusy(cycles float64) float64 {
	return cycles * (1/p.c.ClockGHz + p.rowNs/float64(p.macsPerRow)) * p.refresh
}

// cost converts MAC cycles and the transfers of a channel's command stream into its times:
// fills GB fills (each filling the GBs of chans channels), reads RD-OUTs (each reading one
// output register of pus PUs), windows runs of transfers between MAC runs, each entered
// and left by a mode switch (the AiM controller issues a TMOD, nMODCH, whenever it turns
// from MAC commands to the register commands WRGB and RDMAC16 or back:
// src/dram_controller/impl/AiM_dram_controller.cpp of the public AiM simulator), and
// pathFills the fills the module's one broadcast input path carries for the stream (the
// paper's AiM: all channels share a broadcast input data path): a fill of the same data
// for every channel is one, different data for different channels one each.
func (p *lolpim) cost(macCycles float64, fills, chans, reads, pus, windows, pathFills int) lpCost {
	return lpCost{
		mac:   p.macNs(macCycles),
		dt:    float64(fills)*p.tFill + float64(reads)*p.tRd + float64(2*windows)*p.c.TModNs,
		pro:   p.tFill + p.tRd + 2*p.c.TModNs,
		path:  float64(pathFills) * p.tFill,
		bytes: float64(fills*chans*p.c.GBBytes + reads*pus*p.prec),
	}
}

// gemv is one request's M×K weight GEMV on a module: the output rows spread over its P PUs;
// each PU keeps OutRegs partial sums, so an input vector longer than the GB streams
// through it in GBBytes pieces once per OutRegs rows (each group's read-out joining the
// next group's first fill), while one that fits stays in the GB for every group; every
// output is read out once. Every channel takes the same input: one broadcast fill.
func (p *lolpim) gemv(M, K int) lpCost {
	rows := ceilDiv(M, p.P)
	mac := float64(rows * ceilDiv(K, p.c.MACElems))
	groups, pieces := ceilDiv(rows, p.c.OutRegs), ceilDiv(K, p.gbElems)
	fills, windows := 1, 1+groups
	if pieces > 1 {
		fills = groups * pieces
		windows = fills + 1
	}
	return p.cost(mac, fills, p.c.Channels, rows, p.P, windows, fills)
}

// qktITPP is QKᵀ of one request with heads heads of t tokens under ITPP: keys striped by
// token over all P banks, so each PU scores ⌈t/P⌉ tokens per head, d_h/MACElems MACs each,
// and its OutRegs output registers are read out after every OutRegs scores; the query
// vectors of 1024/d_h heads share one broadcast GB fill. The row of a key is T_cur/256
// (DPA's operand rule, Fig. 6): each of a bank's tokens opens its own row, which holds the
// layer's heads of that token, so a row serves heads · d_h/16 MACs (32 for 4 heads of
// 128), not 64.
func (p *lolpim) qktITPP(t, heads int) lpCost {
	per := ceilDiv(t, p.P)
	mac := float64(heads * per * ceilDiv(p.m.HeadDim, p.c.MACElems))
	fills, reads := ceilDiv(heads*p.m.HeadDim, p.gbElems), heads*per
	c := p.cost(mac, fills, p.c.Channels, reads, p.P, fills+ceilDiv(reads, p.c.OutRegs), fills)
	c.mac = p.macRowsNs(mac, float64(per*ceilDiv(heads*p.m.HeadDim, p.rowElems)))
	return c
}

// svITPP is SV of one request under ITPP: each output element of a head on its own bank,
// so P/d_h heads run per pass, each PU a dot product over all t tokens whose scores stream
// through the GB; one read-out per pass. The heads of a pass take different scores on
// different channels, so the broadcast path carries one fill per head: the channels of one
// head compute while the next head's fill goes out.
func (p *lolpim) svITPP(t, heads int) lpCost {
	hpp := max(1, p.P/p.m.HeadDim)
	dims := ceilDiv(p.m.HeadDim, p.P)
	sub := ceilDiv(dims, p.c.OutRegs)
	passes := ceilDiv(heads, hpp)
	pieces := ceilDiv(t, p.gbElems)
	mac := float64(passes * dims * ceilDiv(t, p.c.MACElems))
	fills := passes * sub * pieces
	return p.cost(mac, fills, p.c.Channels, passes*dims, p.P, fills+1, heads*sub*pieces)
}

// qktHFA and svHFA are one (request, head) pair in one channel under head-first allocation:
// the channel's banks share the tokens for QKᵀ and the head dimension for SV. Each
// channel's fills carry its own pair's query or scores, one at a time on the broadcast
// path (mbWork sums them over the channels).
func (p *lolpim) qktHFA(t int) lpCost {
	b := p.c.BanksPerChannel
	per := ceilDiv(t, b)
	mac := float64(per * ceilDiv(p.m.HeadDim, p.c.MACElems))
	fills := ceilDiv(p.m.HeadDim, p.gbElems)
	return p.cost(mac, fills, 1, per, b, fills+ceilDiv(per, p.c.OutRegs), fills)
}

func (p *lolpim) svHFA(t int) lpCost {
	b := p.c.BanksPerChannel
	dims := ceilDiv(p.m.HeadDim, b)
	sub := ceilDiv(dims, p.c.OutRegs)
	mac := float64(dims * ceilDiv(t, p.c.MACElems))
	fills := sub * ceilDiv(t, p.gbElems)
	return p.cost(mac, fills, 1, dims, b, fills+1, fills)
}

// allReduce is the TP reduction of v bytes of partial sums per module in stage's group: the
// modules of each node send theirs to the host over the node interface, the group's nodes
// reduce over their links (a ring), and the sum is multicast back to the modules.
func (p *lolpim) allReduce(v float64, stage int) float64 {
	if p.tp <= 1 || v <= 0 {
		return 0
	}
	lo := stage * p.tp
	n := (lo+p.tp-1)/p.mpn - lo/p.mpn + 1
	k := min(p.tp, p.mpn)
	return float64(k+1)*v/p.c.InterfaceGBps + nodeRing(n, v, p.c.InterNodeGBps)
}

// handoff is the time to pass v bytes of activations from stage s to the next stage, or
// from the last stage through the host back to the first (the next token).
func (p *lolpim) handoff(v float64, s int) float64 {
	if s == p.pp-1 {
		return 2 * v / p.c.InterfaceGBps
	}
	if (s*p.tp)/p.mpn == ((s+1)*p.tp)/p.mpn {
		return v / p.c.InterfaceGBps
	}
	return v / p.c.InterNodeGBps
}

func (p *lolpim) lanes() []Lane { return p.lane }

// split: TP over modules, PP over stages (lolpim.tp, lolpim.pp), not model.tp/pp.
func (p *lolpim) split() (tp, pp int) { return p.tp, p.pp }
func (p *lolpim) layers() int         { return p.m.Layers }
func (p *lolpim) pool() *kvPool       { return p.kv }

func (p *lolpim) utilKeys() []string {
	if p.c.XPU {
		return []string{"pim", "io", "gpu"}
	}
	return []string{"pim", "io"}
}

// fit: under static memory every request reserves the model's context, which must cover
// it; under either memory its chunks must fit every module (each holds its share).
func (p *lolpim) fit(in, out int) string {
	c := p.c
	if c.Memory == MemoryStatic && in+out > c.StaticMaxCtx {
		return fmt.Sprintf("static memory reserves lolpim.static_max_ctx=%d tokens per request; raise it to at least %d or shorten the requests", c.StaticMaxCtx, in+out)
	}
	need, _, ok := p.kv.alone(in, out)
	if ok {
		return ""
	}
	what := "its KV cache"
	if c.Memory == MemoryStatic {
		what = fmt.Sprintf("its static reservation of %d tokens", c.StaticMaxCtx)
	}
	return fmt.Sprintf("%s needs %d KV chunks on every module but only %d are free after the weights (%d of %d row-indices); use more nodes (lolpim.nodes) or shorter requests",
		what, need, p.chunkCap, p.weightRows, c.RowsPerBank)
}

func (p *lolpim) admit(cands, _ []*Request) []bool {
	placed := make([]bool, len(cands))
	for i, r := range cands {
		if !p.kv.admits(0, p.kv.need(r)) {
			break
		}
		slot := slices.Index(p.slots, false)
		if slot < 0 {
			slot = len(p.slots)
			p.slots = append(p.slots, false)
		}
		p.slots[slot] = true
		st := &lpReq{slot: slot}
		p.reqs[r.ID] = st
		p.kv.reserve(r, 0)
		p.take(r, st)
		placed[i] = true
	}
	return placed
}

// take gives a dynamic request the physical chunks its blocks grew by: the host pops free
// chunks, wherever they are, and appends them to the request's Va2Pa table.
func (p *lolpim) take(r *Request, st *lpReq) {
	if p.c.Memory == MemoryStatic {
		return
	}
	for len(st.pages) < r.kBlocks+r.vBlocks {
		n := len(p.free) - 1
		st.pages = append(st.pages, p.free[n])
		p.free = p.free[:n]
	}
}

func (p *lolpim) grow(r *Request) bool {
	if !p.kv.grow(r) {
		return false
	}
	if st := p.reqs[r.ID]; st != nil {
		p.take(r, st)
	}
	return true
}

// release frees a request's chunks by dropping its Va2Pa entries (they go back on the free
// list) and its batch slot.
func (p *lolpim) release(r *Request) {
	p.kv.release(r)
	st := p.reqs[r.ID]
	if st == nil {
		return
	}
	for i := len(st.pages) - 1; i >= 0; i-- {
		p.free = append(p.free, st.pages[i])
	}
	p.slots[st.slot] = false
	delete(p.reqs, r.ID)
}

// microBatch is the requests per micro-batch for the batch reqs: the configured size, or
// the host's choice. Each iteration fills and drains the pipeline (plan), so M
// micro-batches over S stages take M + S − 1 visit times: the host takes the size b that
// makes (⌈B/b⌉ + S − 1) · t(b) least, a visit's time t(b) = t0 + b·t1 being its fixed
// part (the host sync, a GPU's weight stream) and b times the batch's mean work per
// request. Fewer, larger micro-batches pay fewer fixed parts and more fill and drain: the
// B_μ trade-off of Fig. 5(b). Of equal times it takes the larger size.
func (p *lolpim) microBatch(reqs []*Request) int {
	B := len(reqs)
	if p.c.MicroBatch > 0 {
		return min(p.c.MicroBatch, B)
	}
	w0 := p.mbWork(nil, false)
	t0 := p.visitNs(0, &w0)
	wB := p.mbWork(reqs, false)
	t1 := (p.visitNs(0, &wB) - t0) / float64(B)
	best, bt := B, math.Inf(1)
	for b := B; b >= 1; b-- {
		if t := float64(ceilDiv(B, b)+p.pp-1) * (t0 + float64(b)*t1); t < bt*(1-1e-9) {
			best, bt = b, t
		}
	}
	return best
}

// visitNs is how long visit's chain of ops takes for the micro-batch work w on stage st.
func (p *lolpim) visitNs(st int, w *lpWork) float64 {
	L := float64(p.stLayers[st])
	v := float64(w.n * p.m.DModel * p.prec)
	attn := w.qkt.d + w.softFirst + max(w.sv.d, w.softTotal-w.softFirst)
	t := p.tSync + p.handoff(v, st)
	if p.c.XPU {
		return t + L*(w.gpuQKV+w.gpuIn+attn+w.gpuOut+w.gpuRest+w.gpuAR)
	}
	return t + L*(w.epu+w.qkv.d+attn+w.proj.d+w.ffn1.d+w.ffn2.d+2*p.allReduce(v, st))
}

// slot is a request's batch slot (0 before admission): HFA's channel placement, and with
// more modules than heads the modules that hold it.
func (p *lolpim) slot(r *Request) int {
	if st := p.reqs[r.ID]; st != nil {
		return st.slot
	}
	return 0
}

func (p *lolpim) slotOf(r *Request) int {
	if st := p.reqs[r.ID]; st != nil {
		return st.slot
	}
	return math.MaxInt32
}

func (p *lolpim) plan(s *Schedule, decode, _ []*Request) []StageMark {
	B := len(decode)
	clear(p.bankAttn)
	clear(p.bankDiff)
	clear(p.hfaLoad)
	clear(p.hfaDT)
	clear(p.hfaOwnerLoad)
	for i := range p.hfaOwner {
		p.hfaOwner[i] = -1
	}
	clear(p.ioBusy)
	p.itOwner = -1
	if B == 0 {
		return nil
	}
	p.order = append(p.order[:0], decode...)
	slices.SortFunc(p.order, func(a, b *Request) int { return p.slotOf(a) - p.slotOf(b) })
	bm := p.microBatch(p.order)
	M := ceilDiv(B, bm)
	if cap(p.work) < M {
		p.work = make([]lpWork, M)
		p.last = make([]int, M)
	}
	p.work, p.last = p.work[:M], p.last[:M]
	longest := 0
	for i := range M {
		reqs := p.order[i*bm : min(B, (i+1)*bm)]
		p.work[i] = p.mbWork(reqs, true)
		p.last[i] = -1
		for _, r := range reqs {
			if r.SeqLen() > longest {
				longest, p.itOwner = r.SeqLen(), r.ID
			}
		}
	}
	if p.c.Partitioning == PartitionITPP {
		for pat := range p.grp {
			acc := 0.0
			for b := range p.P {
				acc += p.bankDiff[pat*(p.P+1)+b]
				p.bankAttn[pat*p.P+b] = acc
			}
		}
	}
	for i := range p.stageEnd {
		p.stageEnd[i] = -1
	}
	// One iteration fills the pipeline and drains it, as the synchronous schedule of
	// GPipe, which the paper's PP follows, does: the host takes every micro-batch's token
	// and updates the dispatchers (T_cur, new DPA chunks, the batch it picks each
	// iteration) between iterations. The paper's pipeline bubbles come from this host–PIM
	// synchronisation, grow with the micro-batch and shrink as DPA's larger batches give
	// more micro-batches (Fig. 5b). Micro-batch i visits the stages in order, each stage
	// serves the micro-batches in order, so M micro-batches over S stages leave each stage
	// idle for S − 1 visits an iteration.
	for i := range M {
		for st := range p.pp {
			p.deps = p.deps[:0]
			if st > 0 {
				p.deps = append(p.deps, p.last[i])
			}
			if p.stageEnd[st] >= 0 {
				p.deps = append(p.deps, p.stageEnd[st])
			}
			end, out := p.visit(s, st, i, M, &p.work[i])
			p.stageEnd[st] = end
			p.last[i] = out
		}
	}
	return nil
}

// mbWork is one micro-batch's per-layer work on the critical module of a stage; with heat
// it also adds its requests' bank and channel loads to the heat map.
func (p *lolpim) mbWork(reqs []*Request, heat bool) lpWork {
	pp := p.c.PingPong
	w := lpWork{n: len(reqs)}
	n := float64(len(reqs))
	m := p.m
	d := float64(m.DModel)
	mats := 2.0
	if m.FFN == "swiglu" {
		mats = 3
	}
	hd := float64(m.Heads * m.HeadDim)
	kvd := float64(m.KVHeads * m.HeadDim)
	// Useful FLOPs of the whole stage per layer: 2 per weight per token.
	qkvP, projP := d*(hd+2*kvd), hd*d
	up, down := (mats-1)*d*float64(m.DFFN), d*float64(m.DFFN)
	if !p.c.XPU {
		params := [4]float64{qkvP, projP, up, down}
		for i, ph := range [4]*lpPhase{&w.qkv, &w.proj, &w.ffn1, &w.ffn2} {
			ph.put(p.fc[i], n, pp)
			ph.flops = 2 * n * params[i]
		}
		// Norms and residual adds on d elements, SwiGLU's gating on d_ff/TP (the
		// activation itself is AiM's LUT).
		el := 4 * d
		if m.FFN == "swiglu" {
			el += float64(ceilDiv(m.DFFN, p.tp))
		}
		w.epu = n * el / p.c.EPUElemsPerNs
	} else {
		g := float64(p.gpuShare)
		pr := float64(p.prec)
		gemm := func(params, in, out float64, kernels int) (float64, float64) {
			fl := 2 * n * params / g
			by := params*pr/g + n*(in+out)*pr
			return max(p.gpu.ComputeTime(fl), p.gpu.MemoryTime(by)).nanos() + float64(kernels)*p.gpu.LaunchOverhead.nanos(), fl
		}
		t1, f1 := gemm(qkvP, d, hd+2*kvd, 2) // LN1 + QKV
		t2, f2 := gemm(projP, hd, d, 2)      // Proj + residual
		t3, f3 := gemm(up, d, (mats-1)*float64(m.DFFN), 3)
		t4, f4 := gemm(down, float64(m.DFFN), d, 2) // FFN2 + residual
		w.gpuQKV, w.gpuQKVFl = t1, f1
		w.gpuRest, w.gpuRestFl = t2+t3+t4, f2+f3+f4
		w.gpuIn = n * (hd + 2*kvd) * pr / p.c.InterfaceGBps
		w.gpuOut = n * hd * pr / p.c.InterfaceGBps
		w.gpuAR = 2 * nodeRing(p.gpuShare, n*d*pr, p.c.InterNodeGBps)
	}
	clear(p.chQKT)
	clear(p.chSV)
	clear(p.chSoft)
	clear(p.itQKT)
	clear(p.itSV)
	var attn float64
	for i, r := range reqs {
		t := r.SeqLen()
		attn += 2 * hd * float64(t)
		if p.c.Partitioning == PartitionITPP {
			h, pat := p.hq, p.slot(r)%p.grp
			p.itQKT[pat].put(p.qktITPP(t, h), 1, pp)
			p.itSV[pat].put(p.svITPP(t, h), 1, pp)
			p.chSoft[pat] += float64(h*t) / p.c.EPUElemsPerNs
			if i == 0 {
				w.softFirst = float64(t) / p.c.EPUElemsPerNs
			}
			if heat {
				p.itppBanks(pat, t, h)
			}
		} else {
			p.hfaPairs(r, t, &w, i == 0, heat)
		}
	}
	if p.c.Partitioning == PartitionITPP {
		// With more modules than heads, the stage waits for the module whose share of the
		// batch is the most attention work.
		k := 0
		for pat := range p.grp {
			if p.itQKT[pat].d+p.itSV[pat].d > p.itQKT[k].d+p.itSV[k].d {
				k = pat
			}
		}
		w.qkt, w.sv, w.softTotal = p.itQKT[k], p.itSV[k], p.chSoft[k]
	} else {
		// The stage waits for its slowest channel in each attention phase, and for the
		// module's broadcast path, which carries every channel's own fills in turn.
		var bq, bs lpCost
		var dq, ds float64
		C := p.c.Channels
		for pat := range p.grp {
			var pq, ps float64
			for i := pat * C; i < (pat+1)*C; i++ {
				pq, ps = pq+p.chQKT[i].path, ps+p.chSV[i].path
			}
			for i := pat * C; i < (pat+1)*C; i++ {
				if x := max(p.chQKT[i].dur(pp), pq); x > dq {
					dq, bq = x, p.chQKT[i]
				}
				if x := max(p.chSV[i].dur(pp), ps); x > ds {
					ds, bs = x, p.chSV[i]
				}
			}
		}
		w.qkt = lpPhase{mac: bq.mac, dt: bq.dt, d: dq, bytes: bq.bytes}
		w.sv = lpPhase{mac: bs.mac, dt: bs.dt, d: ds, bytes: bs.bytes}
		w.softTotal = slices.Max(p.chSoft)
	}
	w.qkt.flops, w.sv.flops = attn, attn
	return w
}

// itppBanks adds one request's QKᵀ and SV MAC cycles per layer to each bank of the modules
// of pattern pat: bank b scores the tokens ≡ b (mod P), so the last row leaves a tail of
// (t mod P) busy banks; SV gives each head d_h banks, P/d_h heads a pass.
func (p *lolpim) itppBanks(pat, t, heads int) {
	diff := p.bankDiff[pat*(p.P+1) : (pat+1)*(p.P+1)]
	k := float64(heads * ceilDiv(p.m.HeadDim, p.c.MACElems))
	diff[0] += k * float64(t/p.P)
	if r := t % p.P; r > 0 {
		diff[0] += k
		diff[r] -= k
	}
	per := float64(ceilDiv(t, p.c.MACElems) * ceilDiv(p.m.HeadDim, p.P))
	span := min(p.P, p.m.HeadDim)
	hpp := max(1, p.P/p.m.HeadDim)
	for g := range hpp {
		hs := float64(ceilDiv(heads-g, hpp))
		if hs <= 0 {
			break
		}
		diff[g*span] += hs * per
		diff[min(p.P, (g+1)*span)] -= hs * per
	}
}

// hfaPairs places one request's (request, head) pairs: with TP ≤ heads every module of the
// stage holds hq of its heads, on channels (slot·hq + h) mod C; with TP > heads the
// modules of a head share its requests by slot (pattern slot mod grp, channel slot/grp).
func (p *lolpim) hfaPairs(r *Request, t int, w *lpWork, first, heat bool) {
	slot := p.slot(r)
	C := p.c.Channels
	q, v := p.qktHFA(t), p.svHFA(t)
	soft := float64(t) / p.c.EPUElemsPerNs
	place := func(pat, ch int) {
		i := pat*C + ch
		p.chQKT[i] = p.chQKT[i].add(q)
		p.chSV[i] = p.chSV[i].add(v)
		p.chSoft[pat] += soft
		if !heat {
			return
		}
		load := q.mac + v.mac
		p.hfaLoad[i] += load
		p.hfaDT[i] += q.dt + v.dt
		if load > p.hfaOwnerLoad[i] {
			p.hfaOwnerLoad[i], p.hfaOwner[i] = load, r.ID
		}
	}
	if p.grp == 1 {
		for h := range p.hq {
			place(0, (slot*p.hq+h)%C)
		}
	} else {
		place(slot%p.grp, (slot/p.grp)%C)
	}
	if first {
		w.softFirst = soft
	}
}

// lpPhaseNames are the op names of each PIM phase: its MACs, its data transfers and, with
// ③, the fills and drains the ping-pong buffers cannot hide.
var lpPhaseNames = [6][3]string{
	{"QKV", "QKV DT", "QKV fill/drain"},
	{"QKᵀ", "QKᵀ DT", "QKᵀ fill/drain"},
	{"SV", "SV DT", "SV fill/drain"},
	{"Proj", "Proj DT", "Proj fill/drain"},
	{"FFN1", "FFN1 DT", "FFN1 fill/drain"},
	{"FFN2", "FFN2 DT", "FFN2 fill/drain"},
}

// visit emits micro-batch mb's pass through stage st: the host's dispatcher update, the
// stage's layers phase by phase (each summed over the stage's layers, which do the same
// work), the TP all-reduces and the hand-off to the next stage. A stage serves one
// micro-batch at a time (the paper does not describe overlapping a heterogeneous node's GPU
// and PIM across micro-batches). It returns the last compute op and the hand-off.
func (p *lolpim) visit(s *Schedule, st, mb, M int, w *lpWork) (int, int) {
	L := float64(p.stLayers[st])
	sb := 0
	if M > 1 {
		sb = mb + 1
	}
	base := 4 * st
	mac, io, epu, hif := base, base+1, base+2, base+3
	layer := p.first[st]
	add := func(name string, lane int, ns, flops, bytes float64, deps ...int) int {
		return s.Add(Op{Name: name, Lane: lane, Dur: FromSeconds(ns * 1e-9), FLOPs: flops, Bytes: bytes, Layer: layer, SubBatch: sb}, deps...)
	}
	pp := p.c.PingPong
	// phase emits a PIM phase: the MACs and the transfers in series (the transfers also
	// waiting for the broadcast path), or with ③ side by side and then the fills and
	// drains the ping-pong buffers cannot hide.
	phase := func(k int, ph lpPhase, deps ...int) int {
		n := &lpPhaseNames[k]
		a := add(n[0], mac, L*ph.mac, L*ph.flops, 0, deps...)
		if !pp {
			return add(n[1], io, L*(ph.d-ph.mac), 0, L*ph.bytes, a)
		}
		b := add(n[1], io, L*ph.dt, 0, L*ph.bytes, deps...)
		return add(n[2], io, L*(ph.d-max(ph.mac, ph.dt)), 0, 0, a, b)
	}
	x := add("sync", hif, p.tSync, 0, 0, p.deps...)
	if p.c.XPU {
		x = p.gpuOps(s, st, "QKV", L*w.gpuQKV, L*w.gpuQKVFl, layer, sb, x)
		x = add("q,k,v→PIM", hif, L*w.gpuIn, 0, 0, x)
	} else {
		x = add("norm/resid", epu, L*w.epu, 0, 0, x)
		x = phase(0, w.qkv, x)
	}
	x = phase(1, w.qkt, x)
	// Softmax runs head by head on the EPU beside SV: only the first head is exposed,
	// unless the EPU is slower than SV.
	s0 := add("softmax", epu, L*w.softFirst, 0, 0, x)
	x = phase(2, w.sv, s0)
	sr := add("softmax", epu, L*max(0, w.softTotal-w.softFirst), 0, 0, s0)
	if p.c.XPU {
		x = add("attn→GPU", hif, L*w.gpuOut, 0, 0, x, sr)
		x = p.gpuOps(s, st, "Proj+FFN", L*w.gpuRest, L*w.gpuRestFl, layer, sb, x)
		if w.gpuAR > 0 {
			x = add("all-reduce", hif, L*w.gpuAR, 0, 0, x)
		}
	} else {
		ar := L * p.allReduce(float64(w.n*p.m.DModel*p.prec), st)
		x = phase(3, w.proj, x, sr)
		if ar > 0 {
			x = add("all-reduce", hif, ar, 0, 0, x)
		}
		x = phase(4, w.ffn1, x)
		x = phase(5, w.ffn2, x)
		if ar > 0 {
			x = add("all-reduce", hif, ar, 0, 0, x)
		}
	}
	end := x
	v := float64(w.n * p.m.DModel * p.prec)
	out := add(p.outName[st], hif, p.handoff(v, st), 0, v, x)
	p.ioBusy[st] += L * (w.qkv.dt + w.qkt.dt + w.sv.dt + w.proj.dt + w.ffn1.dt + w.ffn2.dt)
	return end, out
}

// gpuOps runs a heterogeneous stage's FC kernels on each GPU of its nodes side by side.
func (p *lolpim) gpuOps(s *Schedule, st int, name string, ns, flops float64, layer, sb, dep int) int {
	n0 := (st * p.tp) / p.mpn
	p.joins = p.joins[:0]
	for g := range p.gpuShare {
		lane := p.laneGPU0 + min(p.c.Nodes-1, n0+g)
		p.joins = append(p.joins, s.Add(Op{Name: name, Lane: lane, Dur: FromSeconds(ns * 1e-9), FLOPs: flops, Layer: layer, SubBatch: sb}, dep))
	}
	if len(p.joins) == 1 {
		return p.joins[0]
	}
	// A zero-length join on the first GPU's lane waits for every GPU of the stage.
	return s.Add(Op{Name: name + " join", Lane: p.laneGPU0 + n0, Layer: layer, SubBatch: sb}, p.joins...)
}

func (t Time) nanos() float64 { return float64(t) / float64(Nanosecond) }

func (p *lolpim) observe(snap *Snapshot, s *Schedule, running []*Request) {
	T := snap.IterTime.Seconds()
	var pimFl, gpuFl float64
	for _, sp := range s.Spans {
		if sp.Lane >= p.laneGPU0 {
			gpuFl += sp.FLOPs
		} else {
			pimFl += sp.FLOPs
		}
	}
	u := snap.Metrics.Util
	if T > 0 {
		// The paper's utilisation (Table 8): useful FLOPs over the PIM banks' peak
		// (2 × MACElems per PU per cycle; 65.5 TFLOPS per 8-module node, Table 7).
		u["pim"] = pimFl / (p.pimPeak() * T)
		io := 0.0
		for _, b := range p.ioBusy {
			io += b
		}
		u["io"] = io * 1e-9 / (float64(p.pp) * T)
		if p.c.XPU {
			u["gpu"] = gpuFl / (p.gpu.PeakFLOPS * float64(p.c.Nodes) * T)
		}
	}
	p.observeBanks(snap)
	if p.c.XPU {
		// The heterogeneous node's GPU runs the FC layers beside its modules.
		busy := s.Busy()
		var gb Time
		for n := range p.c.Nodes {
			gb += busy[p.laneGPU0+n]
		}
		snap.Banks.Units = []BankUnit{systemUnit(fmt.Sprintf("GPU ×%d", p.c.Nodes), gb/Time(p.c.Nodes), float64(snap.IterTime))}
	}
	p.observeKV(snap, running)
	snap.Neurons.Reason = "LoL-PIM runs dense FFNs: no activation sparsity and no hot/cold neuron placement. Its only split is the heterogeneous node's FC layers on the GPU and attention in PIM."
}

// pimPeak is the FLOP rate of every PU of the system (65.5 TFLOPS a node, Table 7).
func (p *lolpim) pimPeak() float64 {
	return float64(p.mods*p.P*p.c.MACElems) * 2 * p.c.ClockGHz * 1e9
}

// peakFLOPS is the FLOP rate of every compute unit: the PUs, and the GPUs of a
// heterogeneous system.
func (p *lolpim) peakFLOPS() float64 {
	if p.c.XPU {
		return p.pimPeak() + p.gpu.PeakFLOPS*float64(p.c.Nodes)
	}
	return p.pimPeak()
}

// observeBanks fills the heat map: one row per module (in pipeline-stage order), one column
// per bank grouped by channel; a cell is the fraction of the iteration its PU spends on
// MACs, beside its channel's data-transfer share. The modules of a stage (or, under HFA
// with more modules than heads, of a placement pattern) do the same work, so each distinct
// row is computed once and copied.
func (p *lolpim) observeBanks(snap *Snapshot) {
	g := &snap.Banks
	C, Bc := p.c.Channels, p.c.BanksPerChannel
	g.RowKind, g.ColKind = "module", "bank"
	g.Rows, g.Cols, g.ColGroup = p.mods, p.P, Bc
	cells := g.Rows * g.Cols
	if len(p.gPIM) == cells && len(p.gMem) == cells && len(p.gOwner) == cells {
		// A recycling engine's caller reads each snapshot before the next step, as it does
		// the timeline, and a released snapshot is not read again, so the grid's buffers
		// are reused (every cell is rewritten below); a released snapshot's serve one grid.
		g.PIM, g.Mem, g.Owner = p.gPIM, p.gMem, p.gOwner
		if !p.cfg.Recycle {
			p.gPIM, p.gMem, p.gOwner = nil, nil, nil
		}
	} else {
		g.PIM, g.Mem, g.Owner = make([]float64, cells), make([]float64, cells), make([]int, cells)
		if p.cfg.Recycle {
			p.gPIM, p.gMem, p.gOwner = g.PIM, g.Mem, g.Owner
		}
	}
	g.RowNotes = p.rowNotes()
	g.RowLevels = []BankLevel{{"node", "node", p.c.Nodes}, {"module", "mod", p.mpn}}
	g.ColLevels = []BankLevel{{"channel", "ch", C}, {"bank", "bank", Bc}}
	T := float64(snap.IterTime) / float64(Nanosecond)
	if T <= 0 {
		clear(g.PIM)
		clear(g.Mem)
		clear(g.Owner)
		return
	}
	fcReqs := float64(snap.Batch) // every stage runs every request's FC once an iteration
	fcDT := 0.0
	if p.c.XPU {
		fcReqs = 0
	} else {
		fcDT = p.fc[0].dt + p.fc[1].dt + p.fc[2].dt + p.fc[3].dt
	}
	for s := range p.pp {
		L := float64(p.stLayers[s])
		for t := range min(p.tp, p.grp) {
			mod := s*p.tp + t
			row := g.PIM[mod*p.P : (mod+1)*p.P]
			mem := g.Mem[mod*p.P : (mod+1)*p.P]
			own := g.Owner[mod*p.P : (mod+1)*p.P]
			for b := range p.P {
				row[b] = L * p.macBusy(p.fcBank[b]) * fcReqs / T
			}
			if p.c.Partitioning == PartitionITPP {
				io := min(1, p.ioBusy[s]/T)
				for b := range p.P {
					row[b] = min(1, row[b]+L*p.macBusy(p.bankAttn[t*p.P+b])/T)
					mem[b] = io
					own[b] = p.itOwner
				}
				continue
			}
			for c := range C {
				i := t*C + c
				v := L * p.hfaLoad[i] / T
				io := min(1, L*(p.hfaDT[i]+fcDT*fcReqs)/T)
				for b := range Bc {
					j := c*Bc + b
					row[j] = min(1, row[j]+v)
					mem[j] = io
					own[j] = p.hfaOwner[i]
				}
			}
		}
		for t := p.grp; t < p.tp; t++ {
			src, dst := (s*p.tp+t%p.grp)*p.P, (s*p.tp+t)*p.P
			copy(g.PIM[dst:dst+p.P], g.PIM[src:src+p.P])
			copy(g.Mem[dst:dst+p.P], g.Mem[src:src+p.P])
			copy(g.Owner[dst:dst+p.P], g.Owner[src:src+p.P])
		}
	}
	// Load imbalance of the attention work: the busiest bank (ITPP) or channel (HFA) over
	// the mean.
	load := p.bankAttn
	if p.c.Partitioning == PartitionHFA {
		load = p.hfaLoad
	}
	var mx, sum float64
	for _, v := range load {
		mx, sum = max(mx, v), sum+v
	}
	if sum > 0 {
		snap.Metrics.LoadImbalance = mx / (sum / float64(len(load)))
	}
}

// reuseGrid takes a released snapshot's grid cells for the next grid.
func (p *lolpim) reuseGrid(pim, mem []float64, owner []int) {
	p.gPIM, p.gMem, p.gOwner = pim, mem, owner
}

// rowNotes labels each module with its node, stage and TP rank; the labels never change,
// so every snapshot shares one slice.
func (p *lolpim) rowNotes() []string {
	if p.notes == nil {
		p.notes = make([]string, p.mods)
		part := "ITPP"
		if p.c.Partitioning == PartitionHFA {
			part = "HFA"
		}
		for mod := range p.notes {
			s, t := mod/p.tp, mod%p.tp
			p.notes[mod] = fmt.Sprintf("node %d · stage %d (layers %d–%d) · TP rank %d · %d heads · %s",
				mod/p.mpn, s, p.first[s], p.first[s]+p.stLayers[s]-1, t, p.hq, part)
			if p.grp > 1 {
				p.notes[mod] = fmt.Sprintf("node %d · stage %d · TP rank %d · head %d, slots ≡ %d mod %d · %s", mod/p.mpn, s, t, t/p.grp, t%p.grp, p.grp, part)
			}
		}
	}
	return p.notes
}

// observeKV fills the KV map. Every module holds the same chunks of every request (the host
// allocates a chunk on all modules at once), so one location stands for each module's KV
// region; a holder's Pages are its Va2Pa table (dynamic) or its reservation (static).
func (p *lolpim) observeKV(snap *Snapshot, running []*Request) {
	kv := &snap.KV
	chunk := float64(p.P * p.c.RowBytes * p.c.ChunkRows)
	kv.Unit = fmt.Sprintf("chunk: %d row-indices × %d banks × %d B = %.3g MiB on each of the %d modules", p.c.ChunkRows, p.P, p.c.RowBytes, chunk/(1<<20), p.mods)
	kv.LocKind = "module"
	kv.BlockBytes = chunk * float64(p.mods)
	what := "lazy DPA chunks"
	if p.c.Memory == MemoryStatic {
		what = fmt.Sprintf("static %d-token reservations", p.c.StaticMaxCtx)
	}
	loc := KVLocation{Label: "each module", Capacity: p.kv.capacity[0], Used: p.kv.used[0], Reserved: p.kv.reserved[0],
		Note: fmt.Sprintf("the same chunks on all %d modules · %s", p.mods, what)}
	kv.Capacity, kv.Used, kv.Reserved = loc.Capacity, loc.Used, loc.Reserved
	perTok := float64(2*p.stLayers[0]*p.m.KVHeads*p.m.HeadDim*p.prec) / float64(p.tp)
	var live, alloc float64
	if p.cfg.Recycle {
		loc.Holders = p.holders[:0]
	} else {
		loc.Holders = make([]KVHolder, 0, len(running))
	}
	for _, r := range running {
		st := p.reqs[r.ID]
		if st == nil || r.Loc < 0 {
			continue
		}
		a := float64(r.kBlocks+r.vBlocks) * chunk
		l := float64(r.SeqLen()) * perTok
		fill := 0.0
		if a > 0 {
			fill = min(1, l/a)
		}
		live += l
		alloc += a
		h := KVHolder{Request: r.ID, KBlocks: r.kBlocks, VBlocks: r.vBlocks, Reserved: r.reserved, Fill: fill}
		if p.c.Memory == MemoryStatic {
			h.Pages = p.staticPages(st.slot)
		} else {
			h.Pages = st.pages[:len(st.pages):len(st.pages)]
		}
		loc.Holders = append(loc.Holders, h)
	}
	if alloc > 0 {
		kv.Fragmentation = max(0, 1-live/alloc)
	}
	if p.cfg.Recycle {
		p.holders = loc.Holders
	}
	kv.Locations = []KVLocation{loc}
	if kv.Capacity > 0 {
		snap.Metrics.KVUtil = float64(kv.Used) / float64(kv.Capacity)
	}
}

// staticPages is the contiguous reservation of a batch slot.
func (p *lolpim) staticPages(slot int) []int32 {
	for len(p.static) <= slot {
		k := len(p.static)
		pg := make([]int32, p.staticR)
		for i := range pg {
			pg[i] = int32(k*p.staticR + i)
		}
		p.static = append(p.static, pg)
	}
	return p.static[slot]
}
