package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A histogram that remembers its last bucket's range files every time where the
// logarithm does: times that drift (a stretch's iterations), jump, sit on bucket edges or
// lie beyond the range it caches.
func TestHistBucketsAsLogarithm(t *testing.T) {
	var h hist
	var want []uint64
	rng := rand.New(rand.NewPCG(1, 2))
	at := Time(50_000_000)
	for k := range 400_000 {
		var x Time
		switch k % 5 {
		case 0:
			x = Time(rng.Int64N(int64(histMonotone) * 4))
		case 1:
			x = bucketEdge(rng.IntN(bucketOf(histMonotone))) - Time(rng.IntN(2))
		default:
			at = max(0, at+Time(rng.Int64N(200_000))-90_000)
			x = at
		}
		h.add(x, 1)
		i := bucketOf(x)
		if i >= len(want) {
			want = append(want, make([]uint64, i+1-len(want))...)
		}
		want[i]++
	}
	got := h.buckets[:len(want)]
	if !slices.Equal(got, want) || slices.ContainsFunc(h.buckets[len(want):], func(c uint64) bool { return c > 0 }) {
		t.Fatal("the cached buckets differ from the logarithm's")
	}
	for i := range bucketOf(histMonotone) {
		if e := bucketEdge(i); bucketOf(e) < i || e > 1 && bucketOf(e-1) >= i {
			t.Fatalf("bucket %d: edge %d is not the least time in it or above", i, e)
		}
	}
}
