package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// firstFramePresets are one preset of each family, Hermes' being the slowest to build.
var firstFramePresets = []string{"neupims", "l3", "lolpim", "helios", "hermes", "gpu-h100"}

// presetConfig is an embedded preset's configuration as the command line builds it.
func presetConfig(t testing.TB, name string) sim.Config {
	f, err := presets.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := presets.Build(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// firstFrame is what the program does before its first frame: build the model, take the
// terminal's size and draw.
func firstFrame(t testing.TB, cfg sim.Config) (*Model, string) {
	m, err := New(cfg, Options{Color: true})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	return m, m.View().Content
}

// The first frame never waits for the engine: it is drawn before the engine is built
// (Hermes' takes most of a second), with the run's name and every pane's frame, and
// within 150 ms for every family. The engine and its first step fill it in afterwards.
func TestFirstFrameDoesNotWaitForTheEngine(t *testing.T) {
	for _, p := range firstFramePresets {
		t.Run(p, func(t *testing.T) {
			cfg := presetConfig(t, p)
			start := time.Now()
			m, frame := firstFrame(t, cfg)
			took := time.Since(start)
			if m.eng != nil {
				t.Fatal("the engine was built before the first frame")
			}
			plain := ansi.Strip(frame)
			for _, want := range []string{"pimtui " + p, "2 Timeline", "6 Requests", "waiting for the first step"} {
				if !strings.Contains(plain, want) {
					t.Fatalf("first frame lacks %q:\n%s", want, plain)
				}
			}
			if took > 150*time.Millisecond && !raceEnabled {
				t.Fatalf("first frame took %v", took)
			}
			d := drive(t, m, 120, 40)
			d.run(m.Init())
			at := max(1, cfg.OpenAt)
			if m.snap == nil || m.snap.Step != at || !strings.Contains(d.screen(), fmt.Sprintf("step %d ", at)) {
				t.Fatalf("the run did not fill in after the first frame:\n%s", d.screen())
			}
		})
	}
}

// A configuration the engine refuses ends the program with the reason, which the
// command line reports as bad input.
func TestStartErrorEndsTheProgram(t *testing.T) {
	cfg := presetConfig(t, "neupims")
	cfg.Workload.MaxBatch = 0
	m, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := m.build()()
	_, cmd := m.Update(msg)
	if cmd == nil || cmd() != tea.Quit() {
		t.Fatal("a refused configuration does not end the program")
	}
	if err := m.StartErr(); err == nil || !strings.Contains(err.Error(), "batch must be at least 1") {
		t.Fatalf("StartErr %v", err)
	}
}

// BenchmarkFirstFrame is the time from the configuration to the first frame at 120×40,
// per family: what a user waits before the screen appears.
func BenchmarkFirstFrame(b *testing.B) {
	for _, p := range firstFramePresets {
		b.Run(p, func(b *testing.B) {
			cfg := presetConfig(b, p)
			for b.Loop() {
				firstFrame(b, cfg)
			}
		})
	}
}

// With a catalogue to read, the explorer reads it off the UI goroutine after the first
// frame; p or t pressed before it arrives opens its picker when it does.
func TestCatalogArrivesAfterTheFirstFrame(t *testing.T) {
	cfg, err := smallConfig("neupims")
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	presets := opts.Presets
	opts.Presets = nil
	opts.Lessons, opts.LessonStep = nil, tinyStep(new(int))
	opts.Catalog = func() Catalog { return Catalog{Presets: presets, Lessons: tinyLessons} }
	m, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	d := drive(t, m, 120, 40)
	d.keys("t", "p")
	if m.picker != nil {
		t.Fatal("a picker opened before the catalogue")
	}
	d.run(m.Init())
	if m.picker == nil || len(m.picker.items) != len(presets) {
		t.Fatal("p before the catalogue does not open the preset picker when it arrives")
	}
	d.keys("esc", "t")
	if m.picker == nil || m.picker.title != " Lessons " {
		t.Fatal("t after the catalogue does not open the lesson picker")
	}
}
