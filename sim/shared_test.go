package sim

import (
	"runtime"
	"slices"
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

// A set that keeps values holds its most recently asked-for ones after every engine has
// let them go, and no more than keep of them: the oldest one asked for is dropped.
func TestSharedSetKeepsRecent(t *testing.T) {
	s := sharedSet[int, [64]byte]{keep: 2}
	made := 0
	mk := func() *[64]byte { made++; return new([64]byte) }
	s.get(1, mk)
	s.get(2, mk)
	s.get(1, mk) // 1 is now the newest, 2 the oldest
	s.get(3, mk) // drops 2
	if made != 3 {
		t.Fatalf("made %d values, want 3 (1 asked for twice)", made)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		if s.lookup(2) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a value beyond keep is still held")
		}
	}
	for _, k := range []int{1, 3} {
		if s.lookup(k) == nil {
			t.Fatalf("recent value %d was collected", k)
		}
	}
	if len(s.held) != 2 {
		t.Fatalf("holds %d values, keep is 2", len(s.held))
	}
}

// An engine built after another of its model has gone reuses the kinds, fits and
// calibration the sets kept, and they are what the first engine built.
func TestNeuronCalibrationKept(t *testing.T) {
	pol := testHermes().Hermes.Policy
	sp := testHermes().Hermes.Sparsity
	mk := func() *neuronSim {
		ns, err := newNeuronSim(sp, pol, 1234, 3, [2]int{80, 300}, [2]float64{10, 20}, 2, neuronCosts{budget: 0, homes: 2})
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	first := mk()
	var aS, aP []float32
	for _, b := range first.blocks {
		aS, aP = append(aS, b.aS), append(aP, b.aP)
	}
	k0, k1 := first.kinds[0].p, first.kinds[1].thr
	first = nil
	runtime.GC()
	runtime.GC()
	key := calibKey{1234, 3, 80, 300, max(1, min(sp.Clusters, 255)), sp.Kappa, sp.Beta, sp.Gamma}
	cal := sharedCalibrations.lookup(key)
	if cal == nil {
		t.Fatal("the calibration of an engine that has gone was not kept")
	}
	second := mk()
	for i, b := range second.blocks {
		if b.aS != aS[i] || b.aP != aP[i] || cal.aS[i] != aS[i] {
			t.Fatalf("block %d: calibrated %v/%v, first engine %v/%v", i, b.aS, b.aP, aS[i], aP[i])
		}
	}
	if !slices.Equal(second.kinds[0].p, k0) || !slices.Equal(second.kinds[1].thr, k1) {
		t.Fatal("the kept kinds differ from the first engine's")
	}
	if &second.kinds[0].p[0] != &k0[0] {
		t.Fatal("the second engine rebuilt a kind the set kept")
	}
	// An engine with one home location has kinds of its own (another layout) on the
	// same power-law fit.
	one, err := newNeuronSim(sp, pol, 1234, 3, [2]int{80, 300}, [2]float64{10, 20}, 1, neuronCosts{budget: 0, homes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if one.kinds[0] == second.kinds[0] || &one.kinds[0].p[0] != &k0[0] {
		t.Fatal("an engine of one home location does not have its own kind on the shared fit")
	}
}
