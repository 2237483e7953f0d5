package presets

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
)

// helios-fig4 is the configuration of one of the paper's figures, not a baseline: it runs
// a model that helios' split table does not list, on its own workload, so it sets every
// key itself and holds none of the family's shared values.
var standalone = []string{"helios-fig4"}

func TestEveryBaselineExtendsItsFamily(t *testing.T) {
	for _, n := range Names() {
		f, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case n == f.Family || f.Family == "gpu":
			if f.Extends != "" {
				t.Errorf("%s is its family's own preset but extends %s", n, f.Extends)
			}
		case slices.Contains(standalone, n):
		case f.Extends != f.Family:
			t.Errorf("%s (family %s) extends %q; a baseline extends its family's preset", n, f.Family, f.Extends)
		}
	}
}

// flat maps every dotted leaf key of a document to its value.
func flat(prefix string, doc map[string]any, out map[string]any) map[string]any {
	for k, v := range doc {
		if sub, ok := v.(map[string]any); ok {
			flat(prefix+k+".", sub, out)
		} else {
			out[prefix+k] = v
		}
	}
	return out
}

// drift lists every value a family's own preset declares shared that another of its
// presets holds at a different value.
func drift(system parsed, others map[string]parsed) []string {
	want := flat("", system.doc, map[string]any{})
	var out []string
	for name, p := range others {
		got := flat("", p.doc, map[string]any{})
		for _, decl := range system.file.Shared {
			for k, v := range want {
				if k != decl && !strings.HasPrefix(k, decl+".") {
					continue
				}
				top, _, _ := strings.Cut(k, ".")
				if sys, isSection := sectionSystems()[top]; isSection && !slices.Contains(sys, p.file.System) {
					continue // a GPU baseline has no NPU
				}
				if g, ok := got[k]; !ok || !reflect.DeepEqual(g, v) {
					out = append(out, fmt.Sprintf("%s: %s = %v, but %s declares it shared at %v", name, k, g, system.file.Name, v))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// family parses every embedded baseline of family, and its own preset apart.
func family(t *testing.T, fam string) (parsed, map[string]parsed) {
	t.Helper()
	var sys parsed
	others := map[string]parsed{}
	for _, n := range Names() {
		p, err := parse(n+".toml", mustSource(t, n), []string{n})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case n == fam:
			sys = p
		case p.file.Family == fam && !slices.Contains(standalone, n):
			others[n] = p
		}
	}
	return sys, others
}

func mustSource(t *testing.T, name string) []byte {
	t.Helper()
	b, err := Source(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFamiliesDoNotDrift(t *testing.T) {
	for _, fam := range families {
		if fam == "gpu" {
			continue
		}
		sys, others := family(t, fam)
		if len(sys.file.Shared) == 0 {
			t.Errorf("%s declares no shared keys", fam)
		}
		for _, d := range drift(sys, others) {
			t.Error(d)
		}
	}
}

// The drift check fails on a baseline that sets a shared knob of its own, and on one that
// sets every key itself with one of them changed.
func TestDriftIsCaught(t *testing.T) {
	sys, _ := family(t, "neupims")
	edited := string(mustSource(t, "npu-pim")) + "\n[npu]\nclock_ghz = 2.0\n"
	p, err := parse("npu-pim.toml", []byte(edited), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := drift(sys, map[string]parsed{"npu-pim": p})
	if len(got) != 1 || got[0] != "npu-pim: npu.clock_ghz = 2, but neupims declares it shared at 1" {
		t.Errorf("drift = %q", got)
	}

	hermes, _ := family(t, "hermes")
	full := strings.Replace(string(mustSource(t, "hermes")), "compute_efficiency = 0.7", "compute_efficiency = 0.6", 1)
	full = strings.Replace(full, `name = "hermes"`, `name = "copy"`, 1)
	p, err = parse("copy.toml", []byte(full), nil)
	if err != nil {
		t.Fatal(err)
	}
	got = drift(hermes, map[string]parsed{"copy": p})
	if len(got) != 1 || !strings.HasPrefix(got[0], "copy: platform.compute_efficiency = 0.6") {
		t.Errorf("drift = %q", got)
	}
}

// A baseline resolves to its family's values but the keys it sets, and to nothing of
// sections its system does not use.
func TestExtendsResolves(t *testing.T) {
	sys, err := Get("neupims")
	if err != nil {
		t.Fatal(err)
	}
	npuPIM, err := Get("npu-pim")
	if err != nil {
		t.Fatal(err)
	}
	if npuPIM.PIM.DualRowBuffer || !sys.PIM.DualRowBuffer || npuPIM.PIM.TileCycles != sys.PIM.TileCycles || npuPIM.Memory.Channels != sys.Memory.Channels {
		t.Errorf("npu-pim resolved to pim %+v, memory channels %d", *npuPIM.PIM, npuPIM.Memory.Channels)
	}
	if npuPIM.Name != "npu-pim" || len(npuPIM.Expect) != 1 || npuPIM.Expect[0].ID != "vs-npu-only" || len(npuPIM.Shared) != 0 {
		t.Errorf("npu-pim took its family's name, expectations or declarations: %q, %d expectations", npuPIM.Name, len(npuPIM.Expect))
	}
	gpu, err := Get("gpu-a100")
	if err != nil {
		t.Fatal(err)
	}
	if gpu.NPU != nil || gpu.Memory != nil || gpu.PIM != nil || gpu.Scheduler != nil || gpu.GPU == nil {
		t.Error("gpu-a100 took sections of the NPU system")
	}
	if !reflect.DeepEqual(gpu.Model, sys.Model) || gpu.Workload != sys.Workload {
		t.Error("gpu-a100 does not share neupims' model and workload")
	}
}

// A preset file of one's own may extend an embedded preset, and it gets that preset's
// values.
func TestUserPresetExtendsEmbedded(t *testing.T) {
	f, err := Parse("mine.toml", []byte("name = \"mine\"\ndescription = \"npu-pim at batch 64\"\nextends = \"npu-pim\"\n[workload]\nbatch = 64\n"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Get("npu-pim")
	want.Name, want.Description, want.Extends, want.Expect = "mine", "npu-pim at batch 64", "npu-pim", nil
	want.Workload.Batch = 64
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v\nwant %+v", f, want)
	}
}

func TestExtendsErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"unknown parent", "name = \"x\"\ndescription = \"d\"\nextends = \"neupim\"\n", `x.toml:3:1: extends: unknown preset "neupim" to extend; did you mean "neupims"`},
		{"bad value in the child", "name = \"x\"\ndescription = \"d\"\nextends = \"neupims\"\n\n[memory]\nchannels = 0\n", "x.toml:6:1: memory.channels: 0 is out of range; want 1 to 4096"},
		{"unknown key in the child", "name = \"x\"\ndescription = \"d\"\nextends = \"neupims\"\n[pim]\ntile_cycle = 3\n", `x.toml:5:1: pim.tile_cycle: unknown key; did you mean "pim.tile_cycles"`},
		{"wrong type", "name = \"x\"\ndescription = \"d\"\nextends = 3\n", "x.toml:3:11: extends: wrong type"},
		{"name not inherited", "description = \"d\"\nextends = \"neupims\"\n", `missing required key "name"`},
		{"unknown shared key", "name = \"x\"\ndescription = \"d\"\nextends = \"neupims\"\nshared = [\"npu.clock\"]\n", `x.toml:4:1: shared: unknown key or table "npu.clock"; did you mean "npu.clock_ghz"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// An error in the preset a file extends is reported where it is, and presets that extend
// one another in a cycle are refused.
func TestExtendsErrorsInTheParent(t *testing.T) {
	neupims := mustSource(t, "neupims")
	bad := strings.Replace(string(neupims), "channels = 32 ", "channels = 0 ", 1)
	t.Cleanup(func() { parents = files })
	parents = fstest.MapFS{
		"base.toml": {Data: []byte(bad)},
		"a.toml":    {Data: []byte("name = \"a\"\ndescription = \"d\"\nextends = \"b\"\n")},
		"b.toml":    {Data: []byte("name = \"b\"\ndescription = \"d\"\n\nextends = \"a\"\n")},
	}
	_, err := Parse("x.toml", []byte("name = \"x\"\ndescription = \"d\"\nextends = \"base\"\n"))
	want := fmt.Sprintf("base.toml:%d:1: memory.channels: 0 is out of range", lineOf(bad, "channels = 0 "))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	_, err = Parse("x.toml", []byte("name = \"x\"\ndescription = \"d\"\nextends = \"a\"\n"))
	want = "b.toml:4:1: extends: presets extend one another in a cycle (a extends b extends a); let one of them set its keys itself"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// `presets show` of a baseline is itself a preset file that resolves to the same preset,
// each value marked with the file that sets it.
func TestResolvedRoundTrips(t *testing.T) {
	for _, n := range Names() {
		b, err := Resolved(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse("shown.toml", b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", n, err, b)
		}
		want, _ := Get(n)
		got.Extends, want.Extends = "", ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: presets show resolves to\n%+v\nwant\n%+v", n, got, want)
		}
	}
	b, _ := Resolved("npu-pim")
	for _, line := range []string{"dual_row_buffer = false  # npu-pim.toml", "tile_cycles = 184  # neupims.toml", "name = 'npu-pim'  # npu-pim.toml"} {
		if !strings.Contains(string(b), line+"\n") {
			t.Errorf("presets show npu-pim lacks %q", line)
		}
	}
}
