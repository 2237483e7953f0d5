package sim

import "math"

// hist is a log-bucketed histogram of durations with 1% relative resolution. It keeps
// percentiles of arbitrarily long runs in constant memory.
type hist struct {
	buckets []uint64
	n       uint64
	sum     float64
}

const histBase = 1.01

func (h *hist) add(t Time, n int) {
	if n <= 0 {
		return
	}
	v := float64(max(t, 1))
	i := int(math.Log(v) / math.Log(histBase))
	if i >= len(h.buckets) {
		nb := make([]uint64, i+64)
		copy(nb, h.buckets)
		h.buckets = nb
	}
	h.buckets[i] += uint64(n)
	h.n += uint64(n)
	h.sum += v * float64(n)
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
