package presets

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/pimtui/pimtui/presets/internal/testutil"
	"github.com/pimtui/pimtui/sim"
)

// jumpTol is how far a jumped run's figures may stray from the stepped run's: 1e-9
// relative, and 1e-9 absolute for the fractions of the run's time (utilisation, bubble
// fractions), whose error is a picosecond per span of an iteration over its whole time.
const jumpTol = 1e-9

// denseHermes are the Hermes family's presets that track no neurons, so they step fast
// and jump.
var denseHermes = map[string]bool{"hermes-base": true, "accelerate": true, "flexgen": true}

// jumpConfigs draws n random configurations of preset name: its own workload or fixed
// lengths, a few requests, a batch, a seed, a warm-up and a step limit small enough to
// step every iteration in milliseconds.
func jumpConfigs(t *testing.T, name string, n int, rng *rand.Rand) []sim.Config {
	t.Helper()
	var out []sim.Config
	for range n {
		f, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		steps := 100 + rng.IntN(400)
		edits := []string{
			fmt.Sprintf("workload.requests=%d", 4+rng.IntN(20)),
			fmt.Sprintf("workload.batch=%d", 1+rng.IntN(16)),
			fmt.Sprintf("workload.seed=%d", rng.IntN(1000)),
			fmt.Sprintf("workload.warmup=%d", rng.IntN(20)),
		}
		if rng.IntN(2) == 0 {
			edits = append(edits, fmt.Sprintf("workload.input_len=%d", 16+rng.IntN(1000)),
				fmt.Sprintf("workload.output_len=%d", 8+rng.IntN(300)))
		}
		if f.Family == "hermes" {
			edits = append(edits, "model.name="+invLightModels[rng.IntN(len(invLightModels))])
			if !denseHermes[name] {
				steps = 10 + rng.IntN(20) // every token draws every neuron
			} else {
				// The dataset's lengths, so requests retire at different iterations, and
				// Poisson arrivals, which admit within a stretch.
				if rng.IntN(2) == 0 {
					edits = append(edits, "workload.input_len=0", "workload.output_len=0")
				}
				if rng.IntN(2) == 0 {
					edits = append(edits, "workload.arrival=poisson", fmt.Sprintf("workload.rate_per_s=%.2f", 0.5+4*rng.Float64()))
				}
			}
		}
		if f.Family == "l3" {
			// OPT-66B as the paper runs it; OPT-66B in host DIMMs of a few tens of GiB,
			// where, as in the paper's whole runs once the 2 TiB fill, the decodes that
			// wait for room line up on K-slot boundaries and each stretch is one slot
			// long; or GPT3-175B in GPUs just large enough for its weights and host DIMMs
			// of a few tens of GiB, where the KV cache fills, admission stalls, decodes
			// wait for room and requests are preempted within a stretch.
			switch rng.IntN(3) {
			case 0:
				edits = append(edits, "model.name=opt-66b")
			case 1:
				edits = append(edits, "model.name=opt-66b", fmt.Sprintf("l3.host.capacity_gib=%d", 12+rng.IntN(28)),
					fmt.Sprintf("workload.input_len=%d", 64+rng.IntN(512)), fmt.Sprintf("workload.output_len=%d", 256+rng.IntN(512)),
					fmt.Sprintf("workload.batch=%d", 16+rng.IntN(48)), fmt.Sprintf("workload.requests=%d", 32+rng.IntN(64)))
				steps = 400 + rng.IntN(800)
			default:
				edits = append(edits, fmt.Sprintf("l3.gpu.capacity_gib=%.1f", 45+5*rng.Float64()),
					fmt.Sprintf("l3.host.capacity_gib=%d", 16+rng.IntN(48)),
					fmt.Sprintf("workload.input_len=%d", 64+rng.IntN(512)), fmt.Sprintf("workload.output_len=%d", 64+rng.IntN(512)),
					fmt.Sprintf("workload.batch=%d", 16+rng.IntN(48)), fmt.Sprintf("workload.requests=%d", 32+rng.IntN(64)))
				steps = 400 + rng.IntN(800)
			}
		}
		edits = append(edits, fmt.Sprintf("workload.steps=%d", steps))
		for _, kv := range edits {
			if err := f.Set(kv); err != nil {
				t.Fatalf("%s: %s: %v", name, kv, err)
			}
		}
		cfg, err := Build(f, nil)
		if err != nil {
			t.Fatalf("%s %v: %v", name, edits, err)
		}
		cfg.Recycle = true
		out = append(out, cfg)
	}
	return out
}

// runTo steps cfg to its end and returns its result as JSON fields, with how many
// iterations it jumped.
func runTo(t *testing.T, cfg sim.Config) (map[string]any, int, error) {
	t.Helper()
	e, err := sim.New(cfg)
	if err != nil {
		return nil, 0, err
	}
	for {
		if _, err := e.Step(); errors.Is(err, sim.ErrDone) {
			break
		} else if err != nil {
			return nil, 0, err
		}
	}
	b, err := json.Marshal(e.Result())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, e.Jumped(), nil
}

// sameResult reports the first field where got differs from want beyond jumpTol, or "".
func sameResult(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: %v, want %v", path, got, want)
		}
		for k, v := range w {
			if d := sameResult(path+"."+k, v, g[k]); d != "" {
				return d
			}
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > jumpTol*max(1, math.Abs(w)) {
			return fmt.Sprintf("%s: %v, want %v", path, got, want)
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("%s: %v, want %v", path, got, want)
		}
	}
	return ""
}

// TestJumpEqualsStepping runs every preset, on random configurations, once stepping every
// iteration and once jumping from event to event, and requires the same result field by
// field. The planners that can jump must have jumped in some of them.
func TestJumpEqualsStepping(t *testing.T) {
	per := 4
	if testutil.Quick() {
		per = 1
	}
	rng := rand.New(rand.NewPCG(20, 11))
	mustJump := map[string]bool{"hbm-pim": true, "gpu-dgx": true, "cpu-offload": true}
	for n := range denseHermes {
		mustJump[n] = true
	}
	if !testutil.Quick() {
		// The one configuration of the quick form may be one whose host DIMMs are full
		// throughout, where decodes wait for room every iteration and nothing can jump.
		mustJump["l3"], mustJump["rank-pim"] = true, true
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			jumped := 0
			for i, cfg := range jumpConfigs(t, name, per, rng) {
				want, _, werr := runTo(t, cfg)
				cfg.Jump = true
				got, n, gerr := runTo(t, cfg)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Fatalf("configuration %d: jumped run's error %v, stepped %v", i, gerr, werr)
				}
				if d := sameResult("result", want, got); d != "" {
					t.Errorf("configuration %d (%d iterations jumped): %s", i, n, d)
				}
				jumped += n
			}
			if mustJump[name] && jumped == 0 {
				t.Errorf("%s never jumped in %d configurations", name, per)
			}
		})
	}
}

// largestDiff is the largest relative difference between two results' numbers and the
// field where it is.
func largestDiff(path string, want, got any) (float64, string) {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		top, at := 0.0, ""
		for k, v := range w {
			if d, f := largestDiff(path+"."+k, v, g[k]); d > top {
				top, at = d, f
			}
		}
		return top, at
	case float64:
		if g, ok := got.(float64); ok && g != w {
			return math.Abs(g-w) / max(math.Abs(w), math.Abs(g)), path
		}
	}
	return 0, ""
}

// TestWholeRunJumpEqualsStepping runs the whole runs BenchmarkWholeRun times (1,000
// requests, no step limit) of the presets PIMTUI_WHOLE names (comma-separated), stepping
// and jumping, and requires the same result; it logs the largest relative difference.
// Stepping a whole run takes from half a minute (l3) to five (hbm-pim), so it runs only
// when asked:
//
//	PIMTUI_WHOLE=l3,rank-pim go test ./presets -run TestWholeRunJumpEqualsStepping -v -timeout 0
func TestWholeRunJumpEqualsStepping(t *testing.T) {
	names := os.Getenv("PIMTUI_WHOLE")
	if names == "" {
		t.Skip("PIMTUI_WHOLE names no preset")
	}
	runs := wholeRuns()
	for _, name := range strings.Split(names, ",") {
		t.Run(name, func(t *testing.T) {
			cfg := presetConfig(t, name, append([]string{"workload.requests=1000", "workload.steps=0"}, runs[name]...)...)
			cfg.Recycle = true
			want, _, err := runTo(t, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Jump = true
			got, n, err := runTo(t, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameResult("result", want, got); d != "" {
				t.Errorf("%d iterations jumped: %s", n, d)
			}
			d, at := largestDiff("result", want, got)
			t.Logf("%s: %v of %v iterations jumped; largest relative difference %.2g (%s)", name, n, want["iterations"], d, at)
		})
	}
}

// TestDenseHermesJumpWholeRequests checks that the Hermes family's dense presets, run end
// to end on OPT-13B, jump every request's decode but the iterations around its prompt:
// Hermes-base's softmax cycles there repeat only every 256 tokens, longer than a request,
// so the engine must follow them as a staircase rather than by residue classes.
func TestDenseHermesJumpWholeRequests(t *testing.T) {
	for name := range denseHermes {
		e := benchEngine(t, name, true, []string{"model.name=opt-13b", "workload.requests=4", "workload.steps=0"})
		for {
			if _, err := e.Step(); errors.Is(err, sim.ErrDone) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if n, iters := e.Jumped(), e.Result().Iterations; float64(n) < 0.95*float64(iters) {
			t.Errorf("%s jumped %d of %d iterations, want at least 95%%", name, n, iters)
		}
	}
}
