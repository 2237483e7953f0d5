package presets

import "testing"

// A preset's switches are the boolean keys of its own system, with the preset's values and
// any override applied.
func TestSwitches(t *testing.T) {
	cases := []struct {
		preset string
		sets   []string
		want   map[string]bool
	}{
		{"neupims", nil, map[string]bool{"npu.preload_overlap": true, "pim.enabled": true, "pim.dual_row_buffer": true, "scheduler.sub_batch_interleaving": true}},
		{"npu-pim", nil, map[string]bool{"npu.preload_overlap": true, "pim.enabled": true, "pim.dual_row_buffer": false, "scheduler.sub_batch_interleaving": false}},
		{"neupims", []string{"pim.dual_row_buffer=false"}, map[string]bool{"npu.preload_overlap": true, "pim.enabled": true, "pim.dual_row_buffer": false, "scheduler.sub_batch_interleaving": true}},
		{"hermes", nil, map[string]bool{"ndp.row_miss_penalty": true, "sparsity.enabled": true, "hermes.adjust": true, "hermes.remap": true}},
		{"gpu-h100", nil, map[string]bool{}},
	}
	for _, c := range cases {
		f, err := Get(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.sets {
			if err := f.Set(s); err != nil {
				t.Fatal(err)
			}
		}
		got := map[string]bool{}
		for _, s := range f.Switches() {
			if s.Doc == "" {
				t.Errorf("%s: %s has no meaning", c.preset, s.Key)
			}
			got[s.Key] = s.On
		}
		if len(got) != len(c.want) {
			t.Errorf("%s %v: switches %v, want %v", c.preset, c.sets, got, c.want)
			continue
		}
		for k, v := range c.want {
			if on, ok := got[k]; !ok || on != v {
				t.Errorf("%s %v: %s = %v (listed %v), want %v", c.preset, c.sets, k, on, ok, v)
			}
		}
	}
}
