package sim

// Blocked mode: HBM-PIM whose banks have a single row buffer (Newton-style PIM, the naive
// NPU+PIM baseline of NeuPIMs §4.2 and §5.1). A bank either serves memory reads and
// writes or computes, never both: "only either NPU or PIM" is active on a channel, and
// results cannot move between the PIM units and the NPU's vector units while the PIM
// computes (§6.1). The authors' npu+pim branch runs it that way: the NPU core keeps one
// request queue per channel for memory and PIM commands alike (src/NeuPIMSCore.cc,
// src/NeuPIMSystolicWS.cc), the interconnect and the simulator hand the channel one queue
// (src/Interconnect.cc and src/Simulator.cc under baseline_exp), and the memory model
// charges a single-row-buffer bank the full row cycle to switch between memory and PIM
// rows (extern/NewtonSim/src/timing.cc without enable_dual_buffer: ACT ↔ G_ACT tRC,
// write → COMP the write-to-read delay, PIM → PRECHARGE the read-to-precharge delay).
//
// With one row buffer each head's attention is a chain on its channel (Fig. 10, upper):
// the logit GEMV, the read-out of its results, softmax on a vector unit while the channel
// waits, the write-back of the normalised logits through the same row buffer (a switch to
// memory mode and back), then the attend GEMV, whose GWRITE loads those logits. With dual
// row buffers the softmax and the write-back overlap the next head's GEMVs and cost the
// channel nothing.

// modeSwitchCycles is what one round trip from PIM mode to memory mode and back costs a
// bank, in memory cycles, from the Table 2 timings: close the PIM row (tRP) and open the
// row to write (tRCD); after the writes, let them recover (tWR), close that row (tRP) and
// open the PIM row again (tRCD).
func (n *neupims) modeSwitchCycles() int {
	t := n.cfg.Memory.Timing
	return t.RP + t.RCD + t.WR + t.RP + t.RCD
}

// blockedHead is what one head's chain adds on its channel beyond the two GEMVs when the
// banks have a single row buffer: the channel waits while a vector unit normalises the
// head's L logits, then writes them back (L elements at the channel's bandwidth) in memory
// mode, switching there and back.
func (n *neupims) blockedHead(L int) Time {
	m, u := n.cfg.Memory, n.cfg.NPU
	soft := Cycles(float64(softmaxCycles(L, u.VectorWidth)), u.ClockGHz)
	wb := FromSeconds(float64(L*n.sh.Precision) / m.ChannelBandwidth())
	return soft + wb + Cycles(float64(n.modeSwitchCycles()), m.ClockGHz)
}

// blockedMHA emits attention on single-row-buffer channels. Each channel runs its heads'
// chains: the logit GEMVs, the softmax waits and write-backs with their row-buffer
// switches, and the attend GEMVs, one after another (in aggregate: the order within the
// channel does not change when it ends). The vector units' softmax work is placed beside
// them. Under sub-batch interleaving the NPU's GEMMs of the same stage stream their
// weights through the same channels (one queue per channel): each channel first serves
// its share of that traffic, and its PIM work waits behind it, so a stage lasts at least
// traffic + PIM work on its busiest channel.
func (em *emitter) blockedMHA(w *sbLoad, soft Op, layer, sb, after int) []int {
	n := em.n
	m := n.cfg.Memory
	var traffic Time
	if em.sbi && em.npuBytes > 0 {
		traffic = FromSeconds(em.npuBytes/float64(n.ch)/m.ChannelBandwidth()) + Cycles(float64(n.modeSwitchCycles()), m.ClockGHz)
	}
	out := make([]int, 0, n.ch+1)
	for c := range n.ch {
		if w.logit[c] == 0 {
			continue
		}
		ln := lanePIM0 + c
		if traffic > 0 {
			em.add(Op{Name: "NPU traffic", Lane: ln, Dur: traffic}, layer, sb)
		}
		em.add(Op{Name: "logit", Lane: ln, Dur: w.logit[c]}, layer, sb, after)
		em.add(Op{Name: "softmax wait + write-back", Lane: ln, Dur: w.chain[c]}, layer, sb)
		out = append(out, em.add(Op{Name: "attend", Lane: ln, Dur: w.attend[c]}, layer, sb))
	}
	return append(out, em.add(soft, layer, sb, after))
}

// softmaxCycles is one SOFTMAX instruction over n logits on a vector unit of the given
// width, as the authors' simulator times it (src/NeuPIMSystolicWS.cc,
// get_vector_compute_cycles): a compare tree and an add tree, each ceil(n/width) levels
// deep and recursing on their partial results, plus an add, an exp and a multiply per
// width-wide slice, one cycle each.
func softmaxCycles(n, width int) int {
	width = max(1, width)
	return 2*addTreeIters(n, width) + 3*ceilDiv(n, width)
}

func addTreeIters(n, width int) int {
	if n <= width {
		return 1
	}
	r := ceilDiv(n, width)
	return r + addTreeIters(r, width)
}
