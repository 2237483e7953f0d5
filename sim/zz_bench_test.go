package sim

import "testing"

func BenchmarkNeuPIMs1000(b *testing.B) {
	for b.Loop() {
		c := testNeuPIMs()
		c.Recycle = true
		runAll(b, c)
	}
}
