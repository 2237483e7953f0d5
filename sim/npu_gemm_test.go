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
