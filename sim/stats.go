package sim

import "math"

// hist is a log-bucketed histogram of durations with 1% relative resolution. It keeps
// percentiles of arbitrarily long runs in constant memory.
type hist struct {
	buckets []uint64
	n       uint64
	sum     float64
	lo, hi  Time // the times bucket at holds (none while hi is 0), so a run of
	at      int  // iterations of about the same time takes no logarithm each
}

const histBase = 1.01

// histMonotone bounds the times whose buckets add caches: below it one picosecond more
// raises the logarithm (by 1/t) well over its rounding error (an ulp of a value near 30),
// so bucketOf never decreases as t grows.
const histMonotone = Time(1) << 44

// bucketOf is the bucket of time t.
func bucketOf(t Time) int { return int(math.Log(float64(max(t, 1))) / math.Log(histBase)) }

func (h *hist) add(t Time, n int) {
	if n <= 0 {
		return
	}
	v := float64(max(t, 1))
	i := h.at
	if t < h.lo || t >= h.hi {
		i = bucketOf(t)
		if t < histMonotone {
			h.lo, h.hi, h.at = bucketEdge(i), bucketEdge(i+1), i
		}
	}
	if i >= len(h.buckets) {
		nb := make([]uint64, i+64)
		copy(nb, h.buckets)
		h.buckets = nb
	}
	h.buckets[i] += uint64(n)
	h.n += uint64(n)
	h.sum += v * float64(n)
}

// bucketEdge is the least time in bucket i or above, for a bucket below histMonotone:
// the edge is found from its estimate histBase^i by stepping while bucketOf says so.
func bucketEdge(i int) Time {
	t := Time(math.Ceil(math.Pow(histBase, float64(i))))
	for t > 1 && bucketOf(t-1) >= i {
		t--
	}
	for bucketOf(t) < i {
		t++
	}
	return t
}

// quantile returns the q-quantile (0..1) as the geometric centre of its bucket.
func (h *hist) quantile(q float64) Time {
	if h.n == 0 {
		return 0
	}
	target := uint64(math.Ceil(q * float64(h.n)))
	target = max(target, 1)
	var acc uint64
	for i, c := range h.buckets {
		acc += c
		if acc >= target {
			return Time(math.Round(math.Pow(histBase, float64(i)+0.5)))
		}
	}
	return Time(math.Round(math.Pow(histBase, float64(len(h.buckets)))))
}

func (h *hist) mean() Time {
	if h.n == 0 {
		return 0
	}
	return Time(math.Round(h.sum / float64(h.n)))
}
