package experiment

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"fmt"
	"strconv"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// h100Layer is one decode layer of a 70B-class model (LLaMA-2-70B: d_model 8192, 64 query
// and 8 KV heads of 128, gated FFN 28672) timed on a real H100 SXM under PyTorch with
// cuDNN attention, every op its own kernel inside one CUDA graph
// (testdata/validation/h100/PROVENANCE.md).
//
//go:embed testdata/validation/h100/decode_layer_h100_cudnn.csv
var h100Layer []byte

// h100Model is the catalogue model whose layer the measurement times.
const h100Model = "llama2-70b"

func init() { registerChecks("h100", h100Checks) }

// h100Row is one measured median: a part ("full", "gemm", "attn") of the layer for B
// requests at context L (L = 0 for the GEMMs alone).
type h100Row struct {
	b, l int
	part string
	us   float64
}

func h100Rows() ([]h100Row, error) {
	recs, err := csv.NewReader(bytes.NewReader(h100Layer)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("decode_layer_h100_cudnn.csv: %w", err)
	}
	var rows []h100Row
	for i, r := range recs[1:] {
		if len(r) < 5 {
			return nil, fmt.Errorf("decode_layer_h100_cudnn.csv: line %d has %d fields, want at least 5", i+2, len(r))
		}
		b, e1 := strconv.Atoi(r[1])
		l, e2 := strconv.Atoi(r[2])
		us, e3 := strconv.ParseFloat(r[4], 64)
		if e1 != nil || e2 != nil || e3 != nil {
			return nil, fmt.Errorf("decode_layer_h100_cudnn.csv: line %d: B, L or median_us is not a number", i+2)
		}
		rows = append(rows, h100Row{b, l, r[3], us})
	}
	return rows, nil
}

// h100Parts is pimtui's decode iteration of the one-layer model on gpu-h100 for b requests
// at context l, cut into the measurement's parts: the whole iteration, its four GEMMs and
// its attention, in µs.
type h100Parts struct{ full, gemm, attn float64 }

// h100Point runs one decode iteration of b requests, each with l tokens in its KV cache
// (input l, one output token, the prompt not run), on the gpu-h100 preset with the model
// cut to the one layer the measurement times.
func h100Point(b, l int) (h100Parts, error) {
	f, err := presets.Get("gpu-h100")
	if err != nil {
		return h100Parts{}, err
	}
	for _, kv := range []string{"model.name=" + h100Model, "model.tp=1", "model.pp=1", "model.precision_bytes=2",
		"workload.arrival=closed", "workload.prefill=skip", "workload.kv_policy=paged",
		fmt.Sprintf("workload.batch=%d", b), fmt.Sprintf("workload.requests=%d", b),
		fmt.Sprintf("workload.input_len=%d", l), "workload.output_len=1", "workload.steps=1", "workload.warmup=0"} {
		if err := f.Set(kv); err != nil {
			return h100Parts{}, err
		}
	}
	cfg, err := presets.Build(f, nil)
	if err != nil {
		return h100Parts{}, err
	}
	cfg.Model.Layers = 1
	e, err := sim.New(cfg)
	if err != nil {
		return h100Parts{}, err
	}
	s, err := e.Step()
	if err != nil {
		return h100Parts{}, err
	}
	if s.Batch != b {
		return h100Parts{}, fmt.Errorf("B=%d L=%d: the iteration decoded %d requests", b, l, s.Batch)
	}
	p := h100Parts{full: s.IterTime.Seconds() * 1e6}
	for _, sp := range s.Timeline.Spans {
		switch sp.Name {
		case "QKV", "Proj", "FC1", "FC2":
			p.gemm += sp.Dur.Seconds() * 1e6
		case "attention":
			p.attn += sp.Dur.Seconds() * 1e6
		}
	}
	return p, nil
}

// h100Checks compares every measured point with pimtui's. The GEMM spans do not depend on
// the context, so each batch's GEMM part is read from its run at the shortest context and
// compared with the GEMMs timed alone (L = 0).
func h100Checks() ([]Check, error) {
	rows, err := h100Rows()
	if err != nil {
		return nil, err
	}
	runs := map[[2]int]h100Parts{}
	shortest := map[int]int{}
	for _, r := range rows {
		if r.part == "full" || r.part == "attn" {
			runs[[2]int{r.b, r.l}] = h100Parts{}
			if s, ok := shortest[r.b]; !ok || r.l < s {
				shortest[r.b] = r.l
			}
		}
	}
	for k := range runs {
		p, err := h100Point(k[0], k[1])
		if err != nil {
			return nil, err
		}
		runs[k] = p
	}
	const src = "decode_layer_h100_cudnn.csv (H100 SXM 80GB, PyTorch 2.11, CUDA 13.0, cuDNN 9.19, fp16, llama_d8192_gqa8): "
	var out []Check
	for _, r := range rows {
		c := Check{Reference: "h100", Preset: "gpu-h100", Unit: "µs", Ref: r.us, Tol: 0.10}
		switch r.part {
		case "full":
			c.Name = fmt.Sprintf("B=%d L=%d · full", r.b, r.l)
			c.Pimtui = runs[[2]int{r.b, r.l}].full
			c.Source = src + fmt.Sprintf("B=%d L=%d, one decode step of the layer in one CUDA graph, median", r.b, r.l)
		case "attn":
			c.Name = fmt.Sprintf("B=%d L=%d · attn", r.b, r.l)
			c.Pimtui = runs[[2]int{r.b, r.l}].attn
			c.Detail = true
			c.Source = src + fmt.Sprintf("B=%d L=%d, SDPA (cuDNN) alone, median", r.b, r.l)
		case "gemm":
			l, ok := shortest[r.b]
			if !ok {
				return nil, fmt.Errorf("decode_layer_h100_cudnn.csv: B=%d has GEMMs but no layer", r.b)
			}
			c.Name = fmt.Sprintf("B=%d · gemm", r.b)
			c.Pimtui = runs[[2]int{r.b, l}].gemm
			c.Detail = true
			c.Source = src + fmt.Sprintf("B=%d, L=0, the four linears alone, median", r.b)
		default:
			return nil, fmt.Errorf("decode_layer_h100_cudnn.csv: unknown part %q", r.part)
		}
		out = append(out, c)
	}
	return out, nil
}
