package sim

// Collectives that cross the links between nodes.

// nodeRing is the part of an all-reduce of v bytes per node that crosses the node links: a
// ring over n nodes, each sending and receiving 2·(n−1)/n·v over its one link of gbps, in
// ns. Every system of a family pays its multi-node collectives through it (LoL-PIM §8.1:
// the links are "matched across systems").
func nodeRing(n int, v, gbps float64) float64 {
	if n <= 1 || v <= 0 || !(gbps > 0) {
		return 0
	}
	return 2 * float64(n-1) / float64(n) * v / gbps
}
