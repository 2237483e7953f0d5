package sim

// Integer arithmetic and hashing that the engine and every family's planner share.

// ceilDiv is ⌈a/b⌉ for a ≥ 0; 0 when b ≤ 0 (nothing to divide over).
func ceilDiv(a, b int) int {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// gcd is the greatest common divisor of a and b (Euclid's algorithm).
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// b2i is 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// abs is |x|.
func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// splitmix is SplitMix64's finaliser: a counter-based hash, so any draw can be
// regenerated from (seed, stream, indices).
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
