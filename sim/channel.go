package sim

// ChannelAlloc names a policy that assigns each new request to a PIM channel.
type ChannelAlloc string

// Channel allocation policies (NeuPIMs §6.3, §8).
const (
	GreedyMinLoad ChannelAlloc = "greedy_min_load" // Algorithm 2
	RoundRobin    ChannelAlloc = "round_robin"     // the naive NPU+PIM baseline
)

// GreedyMinLoadAssign is NeuPIMs Algorithm 2 (greedy min-load bin packing, §6.3). load
// holds each channel's current MHA load (Algorithm 1 summed over its requests) and is
// updated in place. newLoads are the loads of the new requests. The paper sorts new
// requests by decreasing input length first; callers pass them in that order. A request
// goes to the least-loaded channel among those for which fits reports room; ties go to the
// lowest channel index, as Python's min does in the authors' simulator. It returns the
// channel of each new request, or -1 where no channel has room.
func GreedyMinLoadAssign(load []int64, newLoads []int64, fits func(req, ch int) bool) []int {
	out := make([]int, len(newLoads))
	for i, l := range newLoads {
		best := -1
		for c := range load {
			if fits != nil && !fits(i, c) {
				continue
			}
			if best < 0 || load[c] < load[best] {
				best = c
			}
		}
		out[i] = best
		if best >= 0 {
			load[best] += l
		}
	}
	return out
}

// RoundRobinAssign assigns new requests to channels in turn starting at *next, skipping
// channels without room; *next advances past each channel used.
func RoundRobinAssign(channels int, next *int, n int, fits func(req, ch int) bool) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = -1
		for k := 0; k < channels; k++ {
			c := (*next + k) % channels
			if fits == nil || fits(i, c) {
				out[i] = c
				*next = (c + 1) % channels
				break
			}
		}
	}
	return out
}

// PartitionSubBatches is NeuPIMs Algorithm 3 (§6.3): each channel's request list is
// halved, the first half to sub-batch 1 and the rest to sub-batch 2. On channels with an
// odd count a turn flag alternates which sub-batch gets the extra request. It returns, for
// each channel, how many of its requests (taken from the front) go to sub-batch 1.
func PartitionSubBatches(perChannel []int) []int {
	turn := true
	out := make([]int, len(perChannel))
	for c, n := range perChannel {
		half := n / 2
		if n%2 != 0 {
			if turn {
				half = (n + 1) / 2
			}
			turn = !turn
		}
		out[c] = half
	}
	return out
}
