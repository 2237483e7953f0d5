package sim

import "testing"

// The NPU's GEMMs follow the authors' instruction schedule (MatMul.cc, NeuPIMSystolicWS.cc):
// GPT3-7B's QKV at TP 4 (4096 × 3072 weights) for 256 rows is one L2 tile of two 128-row
// chunks; a chunk is 32 K chunks of one preload (128 cycles) and 23 instructions of 16
// cycles = 15,872 cycles; the first chunk waits for the weights and the first chunk's
// activations (25,165,824 + 1,048,576 B at 1,024 B per cycle = 25,600 cycles), the second
// computes from the scratchpad (15,872), the last instruction drains (128 + 128 − 2 + 16 =
// 270) and the chunk's 128 × 3072 outputs are stored (768): 42,510 cycles at 1 GHz. With
// the npu-only branch's preload (after the previous instruction drains: 271 cycles) a chunk
// is 32 × (271 + 23 × 16) = 20,448 cycles: 47,086.
func TestGEMMFollowsTheArraysSchedule(t *testing.T) {
	c := testNeuPIMs()
	n, err := newNeuPIMs(&c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.gemmTime(256, 4096, 3072), Time(42_510_000); got != want {
		t.Errorf("QKV of 256 rows takes %v, want %v", got, want)
	}
	c.NPU.PreloadOverlap = false
	n, _ = newNeuPIMs(&c)
	if got, want := n.gemmTime(256, 4096, 3072), Time(47_086_000); got != want {
		t.Errorf("npu-only preloads: QKV of 256 rows takes %v, want %v", got, want)
	}
}

// A chunk of the batch holds 128 rows whether they are there or not. Below one chunk the
// weight stream sets the time: 1 row takes 25,174,016 B / 1,024 = 24,584 cycles of loads,
// 270 of drain and 6 of stores (24,860); 128 rows take 25,600 + 270 + 768 = 26,638. The
// 129th row costs a second chunk: the first now waits for 25,694,208 B (25,092 cycles),
// the second computes 15,872: 25,092 + 15,872 + 270 + 768 = 42,002.
func TestGEMMCostsWholeRowChunks(t *testing.T) {
	c := testNeuPIMs()
	n, _ := newNeuPIMs(&c)
	for _, tc := range []struct {
		rows   int
		cycles float64
	}{{1, 24_860}, {128, 26_638}, {129, 42_002}} {
		got := n.gemmTime(tc.rows, 4096, 3072)
		if want := Cycles(tc.cycles, 1); got < want-10 || got > want+10 {
			t.Errorf("QKV of %d rows takes %v, want %v", tc.rows, got, want)
		}
	}
}

// A GEMM larger than half the scratchpad is cut into L2 tiles by halving its largest
// dimension (MatMul::calculate_loops): GPT3-175B's FC2 at TP 8 (6144 × 12288) for 512 rows
// needs (512·6144 + 6144·12288 + 12288·512)·2 B = 170 MB against 68.7 MB, so N halves to
// 6144 (88 MB) and K to 3072 (47 MB): four tiles of 512 × 3072 × 6144.
func TestGEMMTilesFitHalfTheScratchpad(t *testing.T) {
	u := testNeuPIMs().NPU
	if got, want := u.l2Tiles(512, 6144, 12288, 2), (gemmTile{rows: 512, k: 3072, n: 6144, tiles: 4}); got != want {
		t.Errorf("tiles %+v, want %+v", got, want)
	}
	if got, want := u.l2Tiles(256, 4096, 3072, 2), (gemmTile{rows: 256, k: 4096, n: 3072, tiles: 1}); got != want {
		t.Errorf("tiles %+v, want %+v", got, want)
	}
}

// A small scratchpad cuts a large GEMM into many tiles; the time is the tile recurrence
// run over every tile, which gemmTime shortens once each tile adds the same amount. The
// result equals the recurrence run tile by tile.
func TestGEMMManyTilesEqualsTileByTile(t *testing.T) {
	c := testNeuPIMs()
	for _, sram := range []int{192, 1024, 4096} {
		c.NPU.SRAMKiB = sram
		n, err := newNeuPIMs(&c)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range [][3]int{{512, 6144, 12288}, {100_000, 4096, 16384}, {3, 128, 128}, {300, 5000, 70}} {
			u, p := n.cfg.NPU, n.sh.Precision
			tl := u.l2Tiles(g[0], g[1], g[2], p)
			w := max(1, u.SACols)
			size := max(1, w/max(1, u.SystolicArrays))
			chunks, kChunks, cols := ceilDiv(tl.rows, w), ceilDiv(tl.k, w), ceilDiv(tl.n, w)
			pass := Cycles(float64(kChunks*(u.SARows+(cols-1)*size)), u.ClockGHz)
			load := n.npu.MemoryTime(float64(tl.k*tl.n*p) + float64(tl.rows*tl.k*p)/float64(chunks))
			var loadEnd, prev, prev2 Time
			for range tl.tiles {
				loadEnd = max(loadEnd, prev2) + load
				prev, prev2 = max(loadEnd, prev+pass)+Time(chunks-1)*pass, prev
			}
			drain := Cycles(float64(u.SARows+u.SACols-2+max(size, 4)), u.ClockGHz)
			store := n.npu.MemoryTime(float64(min(tl.rows, w) * tl.n * p))
			if got, want := n.gemmTime(g[0], g[1], g[2]), prev+drain+store; got != want {
				t.Errorf("sram %d KiB, GEMM %v in %d tiles: %v, tile by tile %v", sram, g, tl.tiles, got, want)
			}
		}
	}
}

// A scratchpad that cannot hold one tile of the arrays is refused with the size that can.
func TestNPUScratchpadTooSmall(t *testing.T) {
	c := testNeuPIMs()
	c.NPU.SRAMKiB = 23
	_, err := New(c)
	want := "npu.sram_kib = 23 cannot hold one tile of the arrays: half the scratchpad must hold three 128 × 128 tiles of 2-byte values; set npu.sram_kib to at least 192"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}
