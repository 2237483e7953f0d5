package ui

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
)

// validationPresets is a fixed preset list, so the goldens do not follow the preset
// files' descriptions.
var validationPresets = []PresetInfo{
	{Name: "neupims", Description: "NeuPIMs: NPU and dual-row-buffer PIM, sub-batch interleaving", Experiments: 3},
	{Name: "npu-pim", Description: "NPU + single-row-buffer PIM, serial", Experiments: 1},
	{Name: "gpu-a100", Description: "GPU baseline: one A100"},
	{Name: "gpu-h100", Description: "GPU baseline: one H100"},
	{Name: "lolpim", Description: "LoL-PIM: long-context PIM modules", Experiments: 1},
}

// fakeValidations are what a checker would give, by preset.
var fakeValidations = map[string][]Validation{
	"neupims": {
		{Reference: "authors' simulator", Name: "neupims · iteration", Ref: 15.488, Pimtui: 11.182, Tol: 0.10},
		{Reference: "authors' simulator", Name: "neupims w/o interleaving · iteration", Ref: 19.815, Pimtui: 18.9, Tol: 0.10, Within: true},
		{Reference: "authors' simulator", Name: "neupims · NPU utilisation", Ref: 40.6, Pimtui: 42.0, Tol: 0.10, Within: true},
		{Reference: "authors' simulator", Name: "neupims · PIM utilisation", Ref: 48.6, Pimtui: 48.6, Tol: 0.10, Within: true},
	},
	"npu-pim": {{Reference: "authors' simulator", Name: "npu-pim · iteration", Ref: 42.62, Pimtui: 41.0, Tol: 0.10, Within: true}},
	"gpu-h100": {
		{Reference: "real H100", Name: "B=64 L=2048 · full", Ref: 852, Pimtui: 870, Tol: 0.05, Within: true},
		{Reference: "real H100", Name: "B=256 L=2048 · full", Ref: 1477.4, Pimtui: 1290, Tol: 0.10},
	},
	"lolpim": {{Reference: "LoL-PIM Table 8", Name: "Qwen1.5-7B ①②③ · tok/s", Ref: 3668, Pimtui: 3590, Tol: 0.15, Within: true}},
}

// validationDriver opens the explorer on neupims with fixed presets, paper figures and a
// Validations function that answers from fakeValidations (or fails), counts its calls
// and, while hold is open, waits. Init is left to the test.
func validationDriver(t *testing.T, w, h int, fail bool, hold chan struct{}) (*driver, func(string) int) {
	t.Helper()
	var mu sync.Mutex
	calls := map[string]int{}
	opts := testOptions(t)
	opts.Presets = validationPresets
	lessonCalls := 0
	opts.Lessons, opts.LessonStep = tinyLessons, tinyStep(&lessonCalls)
	opts.Figures = func(name string) ([]Figure, error) {
		return []Figure{{ID: "vs-npu-pim", Paper: 1.6, Measured: 1.48, Versus: "npu-pim", Within: true}}, nil
	}
	opts.Validations = func(name string) ([]Validation, error) {
		mu.Lock()
		calls[name]++
		mu.Unlock()
		if hold != nil {
			<-hold
		}
		if fail {
			return nil, errors.New("neupims-sim: reading stages.tsv: no such file")
		}
		return fakeValidations[name], nil
	}
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return drive(t, m, w, h), func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[name]
	}
}

// pickerBox is the picker as drawn, without colour.
func pickerBox(d *driver, w, h int) string {
	return ansi.Strip(strings.Join(d.m.picker.View(w, h), "\n"))
}

// The picker shows the highlighted preset's validation under its paper figures: a line
// per reference with how many checks are within and the one furthest off. It is
// measured by a command, never in the key's handling, and each preset once.
func TestValidationInPicker(t *testing.T) {
	hold := make(chan struct{})
	d, calls := validationDriver(t, 120, 40, false, hold)
	d.run(d.m.Init())
	done := make(chan struct{})
	var cmd tea.Cmd
	go func() {
		_, cmd = d.m.Update(keyPress("p"))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the key waited for the validation")
	}
	if calls("neupims") != 0 || !strings.Contains(d.screen(), "validated: measuring against the references measured outside pimtui…") {
		t.Fatalf("before the measurement (%d calls):\n%s", calls("neupims"), d.screen())
	}
	close(hold)
	d.run(cmd)
	scr := d.screen()
	for _, want := range []string{"paper vs pimtui: 1 of 1 claims match",
		"validated: authors' simulator 3/4 within ±10% · worst −28% iteration ✗"} {
		if !strings.Contains(scr, want) {
			t.Errorf("picker lacks %q:\n%s", want, scr)
		}
	}
	if strings.Index(scr, "validated:") < strings.Index(scr, "paper vs pimtui") {
		t.Errorf("the validation before the paper figures:\n%s", scr)
	}
	d.keys("down")
	if !strings.Contains(d.screen(), "validated: authors' simulator 1/1 within ±10% · worst −3.8% iteration ✓") {
		t.Errorf("npu-pim:\n%s", d.screen())
	}
	d.keys("down")
	if !strings.Contains(d.screen(), "validated: no reference measured outside pimtui checks gpu-a100") {
		t.Errorf("gpu-a100:\n%s", d.screen())
	}
	d.keys("down")
	if !strings.Contains(d.screen(), "validated: real H100 1/2 within ±5–10% · worst −13% B=256 L=2048 · full ✗") {
		t.Errorf("gpu-h100:\n%s", d.screen())
	}
	d.keys("up", "up", "up")
	if calls("neupims") != 1 || calls("npu-pim") != 1 || calls("gpu-h100") != 1 {
		t.Errorf("measured again: neupims %d, npu-pim %d, gpu-h100 %d", calls("neupims"), calls("npu-pim"), calls("gpu-h100"))
	}
	// The lesson picker measures nothing.
	d.keys("esc", "t", "down")
	if d.m.picker == nil || d.m.picker.selected() != "other" || d.m.valBusy != "" || strings.Contains(d.screen(), "validated") {
		t.Fatalf("lesson picker %v, measuring %q:\n%s", d.m.picker != nil, d.m.valBusy, d.screen())
	}
}

// While one preset is measured, the latest highlighted meanwhile waits its turn.
func TestValidationOneAtATime(t *testing.T) {
	d, calls := validationDriver(t, 120, 40, false, nil)
	first := d.m.wantValidation("neupims")
	if first == nil || d.m.wantValidation("npu-pim") != nil || d.m.wantValidation("lolpim") != nil || d.m.wantValidation("no-such") != nil {
		t.Fatal("a second measurement started while one runs, or a name that is no preset was asked for")
	}
	next := d.m.gotValidation(first().(validationMsg))
	if msg := next().(validationMsg); msg.name != "lolpim" || calls("npu-pim") != 0 {
		t.Fatalf("started %s (npu-pim %d calls), want the latest asked for", msg.name, calls("npu-pim"))
	}
}

func TestValidationFailureShown(t *testing.T) {
	d, _ := validationDriver(t, 120, 40, true, nil)
	d.run(d.m.Init())
	d.keys("p")
	if !strings.Contains(d.screen(), "validation: neupims-sim: reading stages.tsv: no such file") {
		t.Fatalf("picker:\n%s", d.screen())
	}
}

// The picker with its paper figures and validation, as drawn at 120×40 and 80×24, and
// the whole screen fits every size.
func TestValidationPickerGolden(t *testing.T) {
	for _, sz := range [][2]int{{120, 40}, {80, 24}, {60, 16}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			d, _ := validationDriver(t, sz[0], sz[1], false, nil)
			d.run(d.m.Init())
			d.keys("p")
			checkFits(t, "picker", d.m.View().Content, sz[0], sz[1])
			if sz[0] > 120 {
				return
			}
			var boxes []string
			for range validationPresets {
				boxes = append(boxes, pickerBox(d, sz[0], sz[1]))
				d.keys("down")
			}
			golden.RequireEqual(t, strings.Join(boxes, "\n\n"))
		})
	}
}
