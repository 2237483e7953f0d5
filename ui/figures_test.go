package ui

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pimtui/pimtui/presets"
)

// figuresDriver opens the explorer on preset with a Figures function that answers from
// a table and counts its calls; Init is left to the test.
func figuresDriver(t *testing.T, preset string, w, h int, fail bool) (*driver, map[string]int) {
	t.Helper()
	var list []PresetInfo
	for _, n := range presets.Names() {
		f, err := presets.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, PresetInfo{Name: n, Description: f.Description, Experiments: len(f.Expect)})
	}
	var mu sync.Mutex
	calls := map[string]int{}
	opts := testOptions(t)
	opts.Presets = list
	opts.Figures = func(name string) ([]Figure, error) {
		mu.Lock()
		calls[name]++
		mu.Unlock()
		if fail {
			return nil, errors.New("grid point failed")
		}
		return []Figure{
			{ID: "vs-" + name + "-a", Paper: 1.6, Measured: 1.23, Versus: "npu-pim", Within: true, Declared: true},
			{ID: "vs-" + name + "-b", Paper: 3, Measured: 1.1, Versus: "gpu-a100"},
			{ID: "tok-s", Paper: 13.75, Measured: 14.66, Unit: "tok/s", Within: true},
		}, nil
	}
	cfg, err := smallConfig(preset)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return drive(t, m, w, h), calls
}

func head(d *driver) string { return strings.SplitN(d.screen(), "\n", 2)[0] }

// The header says "measuring…" until the figures arrive from a command (not the UI
// goroutine), then shows the paper's and pimtui's values; the picker shows each
// experiment of the selected preset, measuring each preset once.
func TestFiguresInHeaderAndPicker(t *testing.T) {
	d, calls := figuresDriver(t, "neupims", 200, 50, false)
	if h := head(d); !strings.Contains(h, "paper vs pimtui measuring…") {
		t.Fatalf("before the measurement: %s", h)
	}
	if calls["neupims"] != 0 {
		t.Fatal("figures measured on the UI goroutine, outside a command")
	}
	d.run(d.m.Init())
	if h := head(d); !strings.Contains(h, "2 of 3 claims match · paper 1.60× pimtui 1.23× ✓") {
		t.Fatalf("header after the measurement: %s", h)
	}
	d.keys("p")
	scr := d.screen()
	for _, want := range []string{"paper vs pimtui: 2 of 3 claims match", "vs-neupims-a  paper 1.60×  pimtui 1.23× vs npu-pim ✓", "vs-neupims-b  paper 3.00×  pimtui 1.10× vs gpu-a100 ✗", "tok-s", "paper 13.8 tok/s  pimtui 14.7 tok/s ✓"} {
		if !strings.Contains(scr, want) {
			t.Errorf("picker lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "gpu-a100 ✓") {
		t.Errorf("a ✓ next to a miss:\n%s", scr)
	}
	// Down to gpu-a100 (declares none), then filter to npu-pim (declares one).
	d.keys("down")
	if !strings.Contains(d.screen(), "gpu-a100 declares no paper experiments") || calls["gpu-a100"] != 0 {
		t.Fatalf("gpu-a100: %d calls\n%s", calls["gpu-a100"], d.screen())
	}
	d.keys("n", "p", "u", "-", "p")
	if calls["npu-pim"] != 1 || !strings.Contains(d.screen(), "vs-npu-pim-a") {
		t.Fatalf("npu-pim measured %d times:\n%s", calls["npu-pim"], d.screen())
	}
	d.keys("enter")
	if d.m.cfg.Preset != "npu-pim" || !strings.Contains(head(d), "paper 1.60× pimtui 1.23×") {
		t.Fatalf("loaded %s, header %s", d.m.cfg.Preset, head(d))
	}
	if calls["neupims"] != 1 || calls["npu-pim"] != 1 {
		t.Errorf("figures measured again: %v", calls)
	}
	// A preset without experiments shows none in the header.
	d.keys("p", "ctrl+u")
	for _, r := range "gpu-h100" {
		d.keys(string(r))
	}
	d.keys("enter")
	if h := head(d); d.m.cfg.Preset != "gpu-h100" || strings.Contains(h, "paper") {
		t.Errorf("gpu-h100 header: %s", h)
	}
}

// One measurement at a time: presets asked for meanwhile wait, the latest first.
func TestFiguresOneAtATime(t *testing.T) {
	d, calls := figuresDriver(t, "neupims", 200, 50, false)
	first := d.m.wantFigures("neupims")
	if first == nil || d.m.wantFigures("npu-pim") != nil || d.m.wantFigures("lolpim") != nil || d.m.wantFigures("npu-only") != nil {
		t.Fatal("a second measurement started while one runs, or a preset without experiments was queued")
	}
	next := d.m.gotFigures(first().(figuresMsg))
	if next == nil {
		t.Fatal("the waiting preset did not start")
	}
	if msg := next().(figuresMsg); msg.name != "lolpim" {
		t.Fatalf("started %s, want the latest asked for (lolpim)", msg.name)
	}
	if calls["npu-pim"] != 0 || calls["npu-only"] != 0 {
		t.Errorf("calls %v", calls)
	}
}

func TestFiguresFailureShown(t *testing.T) {
	d, _ := figuresDriver(t, "neupims", 200, 50, true)
	d.run(d.m.Init())
	if h := head(d); !strings.Contains(h, "paper vs pimtui failed") {
		t.Fatalf("header: %s", h)
	}
	d.keys("p")
	if !strings.Contains(d.screen(), "grid point failed") {
		t.Fatalf("picker:\n%s", d.screen())
	}
}

// With figures, the picker and header still fit every size.
func TestFiguresFit(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {60, 16}, {200, 50}, {120, 18}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			d, _ := figuresDriver(t, "neupims", sz[0], sz[1], false)
			checkFits(t, "measuring", d.m.View().Content, sz[0], sz[1])
			d.run(d.m.Init())
			checkFits(t, "header", d.m.View().Content, sz[0], sz[1])
			d.keys("p")
			checkFits(t, "picker", d.m.View().Content, sz[0], sz[1])
			if sz[1] >= 24 && !strings.Contains(d.screen(), "paper vs pimtui") {
				t.Errorf("no figures in the picker:\n%s", d.screen())
			}
		})
	}
}
