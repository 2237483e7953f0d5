package sim

// NPU GEMMs as the NeuPIMs authors' simulator runs them on the NPU's weight-stationary
// systolic arrays (src/operations/MatMul.cc for the tiling, src/NeuPIMSystolicWS.cc and
// src/Core.cc for the timing; the npu-only branch's src/SystolicWS.cc for its baseline).
//
// The operands are swapped (MatMul's _is_transposed): a GEMM_PRELOAD makes a tile of the
// activations stationary in the arrays, `cols` rows of the batch by `cols` of the K
// inputs, and each instruction then streams `cols` columns of the weight matrix through
// it, spread over the arrays (an instruction's size is cols / arrays cycles; 16 for 128 ×
// 128 arrays and 8 of them). Weights reused across the batch are therefore streamed once
// per `cols`-row chunk of the batch from the scratchpad, and a chunk of 1 row costs as much
// as a chunk of 128.
//
// A GEMM too large for half the scratchpad (double buffering) is cut into L2 tiles by
// halving its largest dimension until rows·K + K·N + N·rows elements, each rounded up to
// the array width, fit (MatMul::calculate_loops); the scratchpad is the core config's
// sram_size, since src/Common.cc reads spad_size from it.
//
// Timing within a tile: a GEMM instruction issues its size after the previous one started;
// a preload issues rows cycles after it (NeuPIMSystolicWS::issue_ex_inst, "Preload can be
// hided"), or, in the npu-only branch's SystolicWS, only once the previous instruction has
// drained (rows + cols + size − 1 cycles after it started). The last instruction drains
// rows + cols − 2 + size cycles. A tile's loads are issued together: its first row chunk
// computes as its weights arrive, so that pass takes the longer of its instructions and the
// weight stream; the later chunks find the weights in the scratchpad. Tiles are double
// buffered (Core::can_issue): a tile's loads run while the tile before it computes, once
// the one before that has finished. The last chunk's outputs are stored after it.

// gemmTile is the L2 tiling of one GEMM: the tile's rows, inputs (K) and outputs (N), and
// how many tiles there are.
type gemmTile struct {
	rows, k, n int
	tiles      int
}

// l2Tiles cuts a GEMM of rows × k × n into tiles that fit half the scratchpad.
func (u NPU) l2Tiles(rows, k, n, precision int) gemmTile {
	dims := [3]int{rows, k, n}
	outer := 1
	w := max(1, u.SACols)
	half := int64(u.SRAMKiB) * 1024 / 2
	need := func() int64 {
		var r [3]int64
		for i, d := range dims {
			r[i] = int64(ceilDiv(d, w) * w)
		}
		return (r[0]*r[1] + r[1]*r[2] + r[2]*r[0]) * int64(precision)
	}
	for need() > half && max(dims[0], dims[1], dims[2]) > 1 {
		i := 0
		for j := 1; j < 3; j++ {
			if dims[j] > dims[i] {
				i = j
			}
		}
		dims[i] = ceilDiv(dims[i], 2)
		outer *= 2
	}
	return gemmTile{rows: dims[0], k: dims[1], n: dims[2], tiles: outer}
}

// gemmTime is one GEMM of rows tokens through a k × n weight matrix on the NPU, in NPU
// cycles for the instructions and seconds at the device's bandwidth for the loads, as the
// tile schedule above runs it.
func (n *neupims) gemmTime(rows, k, out int) Time {
	if rows <= 0 || k <= 0 || out <= 0 {
		return 0
	}
	u := n.cfg.NPU
	p := n.sh.Precision
	t := u.l2Tiles(rows, k, out, p)
	w := max(1, u.SACols)
	size := max(1, w/max(1, u.SystolicArrays))
	preload := u.SARows
	if !u.PreloadOverlap {
		preload = u.SARows + u.SACols + size - 1
	}
	chunks, kChunks, cols := ceilDiv(t.rows, w), ceilDiv(t.k, w), ceilDiv(t.n, w)
	// one row chunk: per K chunk a preload then cols−1 instructions
	pass := Cycles(float64(kChunks*(preload+(cols-1)*size)), u.ClockGHz)
	load := n.npu.MemoryTime(float64(t.k*t.n*p) + float64(t.rows*t.k*p)/float64(chunks))
	var loadEnd, prev, prev2 Time
	for i := range t.tiles {
		nl := max(loadEnd, prev2) + load
		np := max(nl, prev+pass) + Time(chunks-1)*pass
		// Once a tile shifts every time in the recurrence by the same amount, so does every
		// tile after it (its inputs are constant), and the rest is that shift times the
		// tiles left.
		if d := np - prev; nl-loadEnd == d && prev-prev2 == d && i >= 2 {
			prev = np + Time(t.tiles-1-i)*d
			break
		}
		loadEnd, prev, prev2 = nl, np, prev
	}
	drain := Cycles(float64(u.SARows+u.SACols-2+max(size, 4)), u.ClockGHz)
	store := n.npu.MemoryTime(float64(min(t.rows, w) * t.n * p))
	return prev + drain + store
}
