package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/presets"
)

func newTestModel(t testing.TB, preset string) Model {
	t.Helper()
	f, err := presets.Get(preset)
	if err != nil {
		t.Fatal(err)
	}
	f.Workload.Requests = 64
	f.Workload.Batch = 32
	cfg, err := presets.Build(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// send delivers msg and runs any command it returns once, feeding step results back.
func send(m Model, msg tea.Msg) Model {
	next, cmd := m.Update(msg)
	m = next.(Model)
	for cmd != nil {
		out := cmd()
		if _, ok := out.(stepMsg); !ok {
			break
		}
		next, cmd = m.Update(out)
		m = next.(Model)
		if m.playing {
			break
		}
	}
	return m
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "space":
		return tea.KeyPressMsg{Code: ' ', Text: " "}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	}
	return tea.KeyPressMsg{Code: rune(s[0]), Text: s}
}

func TestStepAndBack(t *testing.T) {
	m := newTestModel(t, "neupims")
	m = send(m, m.Init()())
	if m.snap == nil || m.snap.Step != 1 {
		t.Fatal("init did not take the first step")
	}
	m = send(m, key("n"))
	m = send(m, key("right"))
	if m.snap.Step != 3 {
		t.Fatalf("step %d after two steps, want 3", m.snap.Step)
	}
	m = send(m, key("b"))
	if m.snap.Step != 2 {
		t.Fatalf("step %d after back, want 2", m.snap.Step)
	}
	m = send(m, key("r"))
	if m.snap.Step != 1 {
		t.Fatalf("step %d after reset, want 1", m.snap.Step)
	}
}

func TestPlayPauseAndQuit(t *testing.T) {
	m := newTestModel(t, "neupims")
	m = send(m, m.Init()())
	m = send(m, key("space"))
	if !m.playing {
		t.Fatal("space did not start autoplay")
	}
	m = send(m, key("space"))
	if m.playing {
		t.Fatal("space did not pause")
	}
	_, cmd := m.Update(key("q"))
	if cmd == nil {
		t.Fatal("q returned no command")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q did not quit")
	}
}

func TestStaleStepIsDropped(t *testing.T) {
	m := newTestModel(t, "neupims")
	m = send(m, m.Init()())
	next, _ := m.Update(stepMsg{seq: m.seq - 1, snap: nil})
	if next.(Model).snap != m.snap {
		t.Fatal("a stale step replaced the snapshot")
	}
}

// No line is ever wider than the terminal, and the screen never taller, at any size.
func TestViewFitsEverySize(t *testing.T) {
	for _, p := range []string{"neupims", "gpu-h100"} {
		m := newTestModel(t, p)
		m = send(m, m.Init()())
		for w := 20; w <= 200; w += 15 {
			for h := 5; h <= 60; h += 11 {
				m = send(m, tea.WindowSizeMsg{Width: w, Height: h})
				for _, help := range []bool{false, true} {
					m.help = help
					out := m.View().Content
					lines := strings.Split(out, "\n")
					if len(lines) > h {
						t.Fatalf("%s %dx%d: %d lines", p, w, h, len(lines))
					}
					for _, l := range lines {
						if lw := ansi.StringWidth(l); lw > w {
							t.Fatalf("%s %dx%d: line of width %d: %q", p, w, h, lw, l)
						}
					}
					if w < MinWidth || h < MinHeight {
						if !strings.Contains(out, "terminal too small") && h > 0 {
							t.Fatalf("%dx%d: no too-small screen: %q", w, h, out)
						}
					}
				}
			}
		}
	}
}

func TestViewShowsPresetAndStep(t *testing.T) {
	m := newTestModel(t, "neupims")
	m = send(m, m.Init()())
	m = send(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	out := ansi.Strip(m.View().Content)
	for _, want := range []string{"neupims", "GPT3-7B", "step 1", "NPU-S", "PIM ch0"} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q:\n%s", want, out)
		}
	}
}

func FuzzUpdate(f *testing.F) {
	f.Add([]byte("nnb +-r?q"), uint8(80), uint8(24))
	f.Add([]byte("  nnnnbbbb"), uint8(10), uint8(3))
	m0 := newTestModel(f, "neupims")
	f.Fuzz(func(t *testing.T, keys []byte, w, h uint8) {
		m := m0
		m = send(m, tea.WindowSizeMsg{Width: int(w), Height: int(h)})
		for i, k := range keys {
			if i > 40 {
				break
			}
			if k%7 == 0 {
				m = send(m, tea.WindowSizeMsg{Width: int(k), Height: int(k / 3)})
				continue
			}
			if k == 'q' || k == 3 {
				continue
			}
			m = send(m, tea.KeyPressMsg{Code: rune(k), Text: string(rune(k))})
		}
		for _, l := range strings.Split(m.View().Content, "\n") {
			if ansi.StringWidth(l) > max(m.width, 0) && m.width > 0 {
				t.Fatalf("line wider than %d: %q", m.width, l)
			}
		}
	})
}
