package experiment

import (
	"testing"

	"github.com/pimtui/pimtui/presets/internal/testutil"
)

// HeLioS Sec. VI-C (Fig. 17) orders its baselines: In-die NMP beats Duplex on OPT
// (bandwidth-bound MHA), Duplex beats In-die on LLaMA3, Mixtral and Qwen3 (more compute per
// byte), and NMP beats the GPU; HeLioS beats them all, the same HB-Device with non-tiled
// attention included. Checked at each model's largest decode batch. The best NMP baseline
// is checked against the GPU: In-die NMP, at one FLOP a byte where GQA asks for eight and
// over the reserved 16K window, falls below the GPU on LLaMA3-70B and Mixtral-8x22B (the
// helios preset's gap says so).
func TestHeLioSBaselineOrder(t *testing.T) {
	if testutil.Quick() {
		t.Skip("runs twenty-five decode benchmarks")
	}
	type pt struct {
		model, dataset string
		batch          int
	}
	for _, p := range []pt{{"opt-66b", "mooncake-4k", 32}, {"llama3-70b", "mooncake", 64}, {"mixtral-8x22b", "mooncake", 64}, {"qwen3-30b-a3b", "mooncake", 64}} {
		v := map[string]float64{}
		for _, name := range []string{"helios", "helios-nontiled", "duplex", "indie-nmp", "gpu-sglang"} {
			got, err := measure(gridPoint{preset: name, model: p.model, dataset: p.dataset, batch: p.batch, method: "steady", steps: 128, warmup: 512, metric: "throughput_tok_s"})
			if err != nil {
				t.Fatal(err)
			}
			v[name] = got
		}
		t.Logf("%s: helios %.0f, non-tiled %.0f, duplex %.0f, in-die %.0f, GPU %.0f tokens/s", p.model, v["helios"], v["helios-nontiled"], v["duplex"], v["indie-nmp"], v["gpu-sglang"])
		if p.model == "opt-66b" {
			if v["indie-nmp"] <= v["duplex"] {
				t.Errorf("OPT: In-die %.0f not above Duplex %.0f", v["indie-nmp"], v["duplex"])
			}
		} else if v["duplex"] <= v["indie-nmp"] {
			t.Errorf("%s: Duplex %.0f not above In-die %.0f", p.model, v["duplex"], v["indie-nmp"])
		}
		if max(v["duplex"], v["indie-nmp"]) <= v["gpu-sglang"] {
			t.Errorf("%s: no NMP baseline is above the GPU (%v)", p.model, v)
		}
		if v["helios"] <= max(v["duplex"], v["indie-nmp"], v["helios-nontiled"]) {
			t.Errorf("%s: HeLioS %.0f is not the fastest (%v)", p.model, v["helios"], v)
		}
	}
}
