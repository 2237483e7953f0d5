package sim

import "testing"

// A card held at its power cap pays its DRAM traffic out of the power its tensor cores
// would run on: at the ridge a kernel takes its compute time at the capped rate plus the
// time the budget needs to pay for its bytes, longer than either roof; a memory-bound
// kernel, whose DRAM power fits the budget, is untouched; without a budget nothing changes.
func TestPowerRoof(t *testing.T) {
	d := Device{PeakFLOPS: 1000e12, MemBandwidth: 3000e9, ComputeEff: 0.7, MemoryEff: 0.85, LaunchOverhead: FromSeconds(5e-6),
		PowerBudget: 600, MemoryJPerByte: 32e-12}
	flops, bytes := 700e9, 2.55e9 // 1 ms at the capped rate, 1 ms at the achieved bandwidth
	want := FromSeconds(1e-3 + bytes*32e-12/600 + 5e-6)
	if got := d.Time(flops, bytes); got != want {
		t.Fatalf("a kernel at the ridge under the cap takes %v, want %v", got, want)
	}
	if got := d.PowerTime(flops, bytes); got <= d.ComputeTime(flops) || got <= d.MemoryTime(bytes) {
		t.Fatalf("at the ridge the power roof %v is not above the compute %v and memory %v roofs", got, d.ComputeTime(flops), d.MemoryTime(bytes))
	}
	if got, want := d.Time(flops/10, bytes), d.MemoryTime(bytes)+d.LaunchOverhead; got != want {
		t.Fatalf("a memory-bound kernel under the cap takes %v, want its memory time %v", got, want)
	}
	free := d
	free.PowerBudget = 0
	if got, want := free.Time(flops, bytes), max(free.ComputeTime(flops), free.MemoryTime(bytes))+free.LaunchOverhead; got != want || free.PowerTime(flops, bytes) != 0 {
		t.Fatalf("without a power budget a kernel takes %v, want the plain roofline %v", got, want)
	}
}
