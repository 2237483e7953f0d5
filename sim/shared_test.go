package sim

import (
	"runtime"
	"testing"
	"time"
)

// Engines of one model share each block's clusters and parents and each kind's data;
// another seed or size gets its own, equal to what a lone engine builds; and once no
// engine holds a shared value it is collected and its key forgotten.
func TestNeuronDataShared(t *testing.T) {
	pol := testHermes().Hermes.Policy
	sp := testHermes().Hermes.Sparsity
	mk := func(seed uint64, qkv int) *neuronSim {
		ns, err := newNeuronSim(sp, pol, seed, 3, [2]int{qkv, 256}, [2]float64{10, 20}, 2, neuronCosts{budget: 0, homes: 2})
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	a, b, other, wider := mk(7, 64), mk(7, 64), mk(8, 64), mk(7, 96)
	for i, blk := range a.blocks {
		if blk.shape != b.blocks[i].shape {
			t.Fatalf("block %d: two engines of one model hold different shapes", i)
		}
		if blk.shape == other.blocks[i].shape || (blk.kind == kindQKV && blk.shape == wider.blocks[i].shape) {
			t.Fatalf("block %d: engines of another seed or size share a shape", i)
		}
		if blk.aS != b.blocks[i].aS || blk.aP != b.blocks[i].aP {
			t.Fatalf("block %d: calibrated %v/%v against %v/%v", i, blk.aS, blk.aP, b.blocks[i].aS, b.blocks[i].aP)
		}
	}
	if a.kinds != b.kinds || a.kinds[kindQKV] == wider.kinds[kindQKV] || a.kinds[kindMLP] != wider.kinds[kindMLP] {
		t.Fatal("kinds shared wrongly")
	}
	// A second engine's shared data is what a lone engine would build: the same
	// activations token after token.
	a.setBatch([]int{1}, []int{1}, 32)
	b.setBatch([]int{1}, []int{1}, 32)
	for range 3 {
		for i := range a.blocks {
			a.pass(a.blocks[i])
			b.pass(b.blocks[i])
			if a.blocks[i].act != b.blocks[i].act || a.blocks[i].pred != b.blocks[i].pred {
				t.Fatalf("block %d: %d/%d activations against %d/%d", i, a.blocks[i].act, a.blocks[i].pred, b.blocks[i].act, b.blocks[i].pred)
			}
		}
		a.token++
		b.token++
	}
	key := shapeKey{99, 1, 256, 64, max(1, min(sp.Clusters, 255))}
	func() {
		gone := mk(99, 64)
		if sharedShapes.lookup(key) == nil {
			t.Fatal("a live engine's shape is not in the set")
		}
		runtime.KeepAlive(gone)
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		sharedShapes.mu.Lock()
		_, kept := sharedShapes.m[key]
		sharedShapes.mu.Unlock()
		if !kept {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a shape no engine holds is still in the set")
		}
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}
