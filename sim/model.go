package sim

import "math"

// Model is a decoder-only transformer's public dimensions.
type Model struct {
	Name         string
	Display      string
	Layers       int
	DModel       int
	Heads        int // query heads
	KVHeads      int // key/value heads (fewer under GQA)
	HeadDim      int
	FFN          string // "gelu": up and down matrices; "swiglu": gate, up and down
	DFFN         int    // FFN hidden size (per expert for MoE)
	Vocab        int
	Experts      int // routed experts (0 = dense)
	TopK         int // experts per token
	SharedDFFN   int // hidden size of always-on shared experts
	ParallelAttn bool
}

// Shard is the part of a model one device holds under tensor parallelism TP (Megatron
// column/row split of every matrix and of the heads) and pipeline parallelism PP (layers).
type Shard struct {
	Model
	TP, PP    int
	Precision int // bytes per element
}

// LayersDev is the number of decoder layers on one device.
func (s Shard) LayersDev() int { return ceilDiv(s.Layers, s.PP) }

// HeadsDev is the number of query heads on one device.
func (s Shard) HeadsDev() int { return max(1, s.Heads/s.TP) }

// KVHeadsDev is the number of key/value heads on one device (at least one: MQA/GQA heads
// are replicated when TP exceeds them).
func (s Shard) KVHeadsDev() int { return max(1, s.KVHeads/s.TP) }

// KVEmbedDev is the per-device width of one token's K (or V) in one layer.
func (s Shard) KVEmbedDev() int { return s.KVHeadsDev() * s.HeadDim }

// QKVParams is the per-device parameter count of the fused QKV projection.
func (s Shard) QKVParams() float64 {
	return float64(s.DModel) * float64((s.HeadsDev()+2*s.KVHeadsDev())*s.HeadDim)
}

// ProjParams is the per-device parameter count of the attention output projection.
func (s Shard) ProjParams() float64 {
	return float64(s.HeadsDev()*s.HeadDim) * float64(s.DModel)
}

func (s Shard) ffnMatrices() float64 {
	if s.FFN == "swiglu" {
		return 3
	}
	return 2
}

// FFNExpertParams is the per-device parameter count of one FFN (one expert for MoE).
func (s Shard) FFNExpertParams() float64 {
	return s.ffnMatrices() * float64(s.DModel) * float64(s.DFFN) / float64(s.TP)
}

// FFNParams is the per-device parameter count of all FFN weights of one layer.
func (s Shard) FFNParams() float64 {
	p := s.FFNExpertParams()
	if s.Experts > 0 {
		p *= float64(s.Experts)
	}
	return p + s.ffnMatrices()*float64(s.DModel)*float64(s.SharedDFFN)/float64(s.TP)
}

// FFNActive returns the FLOP-bearing parameters per token and the parameters read from
// memory for a batch of b tokens in one layer. A dense FFN reads all its weights; an MoE
// layer under uniform routing touches E·(1−(1−k/E)^b) distinct experts on average.
func (s Shard) FFNActive(b int) (perToken, read float64) {
	shared := s.ffnMatrices() * float64(s.DModel) * float64(s.SharedDFFN) / float64(s.TP)
	if s.Experts <= 0 {
		p := s.FFNExpertParams()
		return p + shared, p + shared
	}
	e := float64(s.Experts)
	k := float64(min(s.TopK, s.Experts))
	touched := e * (1 - math.Pow(1-k/e, float64(b)))
	return k*s.FFNExpertParams() + shared, touched*s.FFNExpertParams() + shared
}

// LayerParams is the per-device parameter count of one decoder layer.
func (s Shard) LayerParams() float64 {
	return s.QKVParams() + s.ProjParams() + s.FFNParams()
}

// WeightBytes is the bytes of weights one device holds: its layers plus its share of the
// embedding table (first/last pipeline stage, sharded by TP).
func (s Shard) WeightBytes() float64 {
	emb := float64(s.Vocab) * float64(s.DModel) / float64(s.TP)
	return (s.LayerParams()*float64(s.LayersDev()) + emb) * float64(s.Precision)
}

// KVBytesPerToken is the bytes of K and V one token adds on one device over its layers.
func (s Shard) KVBytesPerToken() float64 {
	return 2 * float64(s.KVEmbedDev()) * float64(s.Precision) * float64(s.LayersDev())
}

// Params is the model's total parameter count (all devices).
func (m Model) Params() float64 {
	s := Shard{Model: m, TP: 1, PP: 1, Precision: 1}
	return s.LayerParams()*float64(m.Layers) + float64(m.Vocab)*float64(m.DModel)
}
