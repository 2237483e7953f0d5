package sim

import (
	"math"
	"testing"
)

var hmOPT13B = Model{Name: "opt-13b", Display: "OPT-13B", Layers: 40, DModel: 5120, Heads: 40, KVHeads: 40, HeadDim: 128, FFN: "relu", DFFN: 20480, Vocab: 50272}

// testOffload is an offloading baseline on the Hermes platform (§V-A): OPT-13B at batch 1,
// 128 tokens in and out.
func testOffload(fw string) Config {
	c := testHermes()
	c.System, c.Model = SystemOffload, hmOPT13B
	c.Hermes.Sparsity.MLPActive = 0.10
	c.Hermes.Sparsity.Enabled = fw == OffloadDejaVu
	c.Hermes.Offload = OffloadPolicy{Framework: fw}
	if fw == OffloadDejaVu {
		c.Hermes.Offload.PredictorShare = 0.181
	}
	return c
}

func newOffloadT(t *testing.T, c Config) *offload {
	t.Helper()
	o, err := newOffload(&c)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Copies: the paper's 64 GB/s PCIe counts both directions, so a host-to-GPU copy has 32;
// a pinned DMA reaches 0.879 of it (FlexGen's fitted 12.89 GiB/s of PCIe 3.0's 15.75 GB/s,
// experimental/cost_model.py), the platform's one rate for the link; a pageable copy is
// first staged through a pinned buffer by the CPU, reading and writing host memory at
// 67.2 GB/s.
func TestOffloadCopyRates(t *testing.T) {
	o := newOffloadT(t, testOffload(OffloadFlexGen))
	gb := 1e9
	if got, want := o.pinned("x", gb, 1).Dur, 10*Microsecond+FromSeconds(gb/(32e9*0.879)); got != want {
		t.Fatalf("pinned 1 GB: %v, want %v", got, want)
	}
	if got, want := o.pageable("x", gb, 2).Dur, 20*Microsecond+FromSeconds(2*gb/67.2e9+gb/(32e9*0.879)); got != want {
		t.Fatalf("pageable 1 GB: %v, want %v", got, want)
	}
}

// FlexGen (flex_opt.py init_weight_list): a tensor is on the GPU when the middle of its bytes
// lies past the host's share of its layer. OPT-13B's attention layer is four 52.4 MB
// matrices (mid-points at 12.5, 37.5, 62.5, 87.5 %) and its MLP two of 209.7 MB (25, 75 %).
// At 77 % on the GPU the resident tensors (k, v, out, fc1, fc2) need 23.1 GB, over the
// 19.3 GB left; the policy search steps down to 75 %, where q's bias and fc1 (their
// middles just short of 25 %) go to the host too: 14.7 GB resident, 262 MB copied per
// layer, not the 25 % (158 MB) of an even split.
func TestFlexGenPolicyAndPlacement(t *testing.T) {
	o := newOffloadT(t, testOffload(OffloadFlexGen))
	mat := 5120.0 * 5120 * 2
	res, host, n := fgPlace(fgTensors(o.sh)[0], 77)
	if n != 1 || !near(host, mat, 1e-12) || !near(res, 3*mat+6*5120*2, 1e-12) {
		t.Fatalf("attention at 77%%: %v resident, %v on the host in %d tensors", res, host, n)
	}
	if o.percent != 75 {
		t.Fatalf("policy %d%%, want 75%%", o.percent)
	}
	if got := o.fgFetch[0] + o.fgFetch[1]; !near(got, 5*mat+5120*2, 1e-12) || o.fgCopies != [2]int{2, 1} {
		t.Fatalf("copied per layer %.0f B in %v tensors, want %.0f in q, its bias and fc1", got, o.fgCopies, 5*mat+5120*2)
	}
	// Each layer step is max(compute, load of the next layer) behind a synchronisation:
	// at batch 1 the loads set the pace, one after another on the link.
	e := lpEngine(t, testOffload(OffloadFlexGen))
	s := lpStep(t, e, 2)
	var load Time
	for _, sp := range s.Timeline.Spans {
		if sp.Lane == offLanePCIe {
			load += sp.Dur
		}
	}
	if s.IterTime < load || float64(s.IterTime) > 1.1*float64(load) {
		t.Fatalf("decode step %v, loads %v: the loads set the pace", s.IterTime, load)
	}
}

// Accelerate (utils/modeling.py infer_auto_device_map; hooks.py AlignDevicesHook): whole
// layers stay on the GPU while they fit, less the largest layer's room; every module of
// the others copies its weight and bias, blocking, before it runs, so the GPU and the link
// take turns and the step is the sum of the two.
func TestAccelerateModuleByModule(t *testing.T) {
	c := testOffload(OffloadAccelerate)
	o := newOffloadT(t, c)
	if want := int((o.budget - o.layerB) / o.layerB); o.resident != want || o.resident >= 40 {
		t.Fatalf("%d resident layers, want %d", o.resident, want)
	}
	s := lpStep(t, lpEngine(t, c), 2)
	var sum Time
	copies := 0
	for _, sp := range s.Timeline.Spans {
		sum += sp.Dur
		if sp.Lane == offLanePCIe {
			copies++
		}
	}
	if s.IterTime != sum {
		t.Fatalf("step %v, its ops add up to %v: copies and compute must not overlap", s.IterTime, sum)
	}
	// q, k, v, out_proj, fc1, fc2 and the two LayerNorms of each offloaded layer
	if want := 8 * (40 - o.resident); copies != want {
		t.Fatalf("%d copies, want %d (one per module of each offloaded layer)", copies, want)
	}
}

// Deja Vu (DejaVu hf_opt_sparse_mlp_attention.py): a predictor Linear(d, 1000) →
// Linear(1000, neurons) per block stays on the GPU (2 × 40 × (5120·1000 + 1000·5120 or
// 20480) × 2 B = 2.46 GB for OPT-13B, out of the resident budget); both predictors read
// the layer's input, so the MLP's rows are gathered before the QKV block has run. A gather
// reads and writes the rows in host memory.
func TestDejaVuLookaheadAndGather(t *testing.T) {
	c := testOffload(OffloadDejaVu)
	o := newOffloadT(t, c)
	if want := 40 * (5120*1000 + 1000*5120 + 5120*1000 + 1000*20480) * 2.0; !near(o.predB, want, 1e-12) {
		t.Fatalf("predictor bytes %v, want %v", o.predB, want)
	}
	s := lpStep(t, lpEngine(t, c), 3)
	var qkvEnd, mlpGather Time = -1, -1
	var gather, gatherB float64
	n := 0
	for _, sp := range s.Timeline.Spans {
		if sp.Layer != 5 {
			continue
		}
		switch sp.Name {
		case "QKV sparse":
			qkvEnd = sp.Start + sp.Dur
		case "gather":
			if n++; n == 2 {
				mlpGather = sp.Start
			}
			gather += sp.Dur.Seconds()
			gatherB += sp.Bytes
		}
	}
	if mlpGather < 0 || qkvEnd < 0 || mlpGather >= qkvEnd {
		t.Fatalf("the MLP rows' gather starts at %v, the QKV block ends at %v: the lookahead starts it with the layer", mlpGather, qkvEnd)
	}
	if math.Abs(gather-2*gatherB/67.2e9) > 1e-9 {
		t.Fatalf("gathers take %v s for %v bytes; want a read and a write at 67.2 GB/s", gather, gatherB)
	}
}

// Deja Vu's neuron view counts the batch's decode tokens as Hermes' does: none after the
// prompt, one more each token.
func TestDejaVuCountsTokens(t *testing.T) {
	dv, hm := testOffload(OffloadDejaVu), testHermes()
	ed, eh := lpEngine(t, dv), lpEngine(t, hm)
	for step := 1; step <= 4; step++ {
		d, h := lpStep(t, ed, 1), lpStep(t, eh, 1)
		if d.Neurons.Stats.Token != h.Neurons.Stats.Token || d.Neurons.Stats.Token != step-1 {
			t.Fatalf("step %d: Deja Vu's view counts %d tokens, Hermes' %d; want %d", step, d.Neurons.Stats.Token, h.Neurons.Stats.Token, step-1)
		}
	}
}
