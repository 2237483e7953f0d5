package ui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// probe wraps the explorer in a running program and keeps a copy of each frame, so a
// flow can wait for what the screen shows rather than parse the renderer's output.
type probe struct {
	m      *Model
	mu     sync.Mutex
	screen string
}

func (p *probe) Init() tea.Cmd { return p.m.Init() }

func (p *probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := p.m.Update(msg)
	s := ansi.Strip(p.m.View().Content)
	p.mu.Lock()
	p.screen = s
	p.mu.Unlock()
	return p, cmd
}

func (p *probe) View() tea.View { return p.m.View() }

func (p *probe) frame() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.screen
}

// startFlow runs the explorer on preset in a test program of w×h.
func startFlow(t *testing.T, preset string, w, h int) (*teatest.TestModel, *probe) {
	t.Helper()
	cfg, err := smallConfig(preset)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{m: m}
	tm := teatest.NewTestModel(t, p, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ASCII)))
	t.Cleanup(func() { _ = tm.Quit() })
	return tm, p
}

func waitScreen(t *testing.T, p *probe, what string, cond func(string) bool) string {
	t.Helper()
	// Building a Hermes engine takes most of a second, several under the race detector.
	wait := 10 * time.Second
	if raceEnabled {
		wait = 60 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		s := p.frame()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func shows(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

func finalModel(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	return tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*probe).m
}

func TestFlowStepBackHelpQuit(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("nn")
	waitScreen(t, p, "step 3", shows("step 3 "))
	tm.Type("b")
	waitScreen(t, p, "step back to 2", shows("step 2 "))
	tm.Type("?")
	waitScreen(t, p, "the help", shows("Reading the screen"))
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEscape})
	waitScreen(t, p, "the help to close", func(s string) bool { return !strings.Contains(s, "Reading the screen") })
	tm.Send(tea.WindowSizeMsg{Width: 30, Height: 8})
	waitScreen(t, p, "the too-small screen", shows("terminal too small"))
	tm.Send(tea.WindowSizeMsg{Width: 100, Height: 30})
	waitScreen(t, p, "the dashboard again", shows("NPU-S"))
	tm.Type("q")
	if m := finalModel(t, tm); m.snap.Step != 2 {
		t.Fatalf("final step %d, want 2", m.snap.Step)
	}
}

func TestFlowPlayPause(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("+++ ")
	waitScreen(t, p, "autoplay", shows("playing 30/s"))
	waitScreen(t, p, "a few steps", func(s string) bool { return strings.Contains(s, "step 5 ") })
	tm.Type(" ")
	s := waitScreen(t, p, "pause", shows("paused"))
	time.Sleep(200 * time.Millisecond)
	if now := p.frame(); firstLine(now) != firstLine(s) {
		t.Fatalf("still stepping after pause:\n%s\n%s", firstLine(s), firstLine(now))
	}
	tm.Type("q")
	finalModel(t, tm)
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func TestFlowPresetSwitch(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("n")
	waitScreen(t, p, "step 2", shows("step 2 "))
	tm.Type("p")
	waitScreen(t, p, "the picker", shows("filter:"))
	tm.Type("gpu-h1")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitScreen(t, p, "the GPU preset", func(s string) bool {
		h := firstLine(s)
		return strings.Contains(h, "gpu-h100") && strings.Contains(h, "GPU-only") && strings.Contains(h, "step 1 ")
	})
	tm.Type("q")
	if m := finalModel(t, tm); m.cfg.Preset != "gpu-h100" {
		t.Fatalf("final preset %q", m.cfg.Preset)
	}
}

// Typing a preset's name in the picker and enter loads that preset, even where other
// names start with it (hermes-base, hermes-host) and descriptions mention it (rank-pim).
func TestFlowPickerTypesName(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("p")
	waitScreen(t, p, "the picker", shows("filter:"))
	tm.Send(tea.KeyPressMsg{Code: tea.KeyDown})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyDown})
	tm.Type("hermes")
	waitScreen(t, p, "the filter", shows("filter: hermes"))
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitScreen(t, p, "hermes", func(s string) bool {
		h := firstLine(s)
		return strings.Contains(h, "pimtui hermes ") && strings.Contains(h, "step 1 ")
	})
	tm.Type("q")
	if m := finalModel(t, tm); m.cfg.Preset != "hermes" {
		t.Fatalf("final preset %q", m.cfg.Preset)
	}
}

func TestFlowExport(t *testing.T) {
	tm, p := startFlow(t, "neupims", 120, 40)
	waitScreen(t, p, "the first step", shows("step 1 "))
	tm.Type("n")
	waitScreen(t, p, "step 2", shows("step 2 "))
	tm.Type("e")
	waitScreen(t, p, "the export", shows("exported iterations 1–2 to"))
	tm.Type("q")
	m := finalModel(t, tm)
	b, err := os.ReadFile(filepath.Join(m.opts.ExportDir, "pimtui-neupims-steps1-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []json.RawMessage `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.TraceEvents) < len(m.snap.Timeline.Spans) {
		t.Fatalf("trace: %v, %d events", err, len(doc.TraceEvents))
	}
}
