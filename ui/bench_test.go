package ui

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// benchConfig is a preset, with edits, on its default workload made long enough that no
// benchmark reaches its end (a million requests, no step limit).
func benchConfig(b testing.TB, preset string, edit ...string) sim.Config {
	f, err := presets.Get(preset)
	if err != nil {
		b.Fatal(err)
	}
	for _, kv := range edit {
		if err := f.Set(kv); err != nil {
			b.Fatal(err)
		}
	}
	f.Workload.Requests = 1000000
	f.Workload.Steps = 0
	cfg, err := presets.Build(f, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

// benchModel is the explorer on a preset's full default workload at w×h, after its
// first step.
func benchModel(b testing.TB, preset string, w, h int, edit ...string) *Model {
	m, err := New(benchConfig(b, preset, edit...), Options{Color: true})
	if err != nil {
		b.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	if err := m.startNow(); err != nil {
		b.Fatal(err)
	}
	return m
}

// benchStep runs one step the way the program does: the command, then its message.
func (m *Model) benchStep() {
	cmd := m.request(false)
	m.Update(cmd())
}

// familyPresets are the presets the render benchmarks cover: each family's own system and
// the plainest NeuPIMs baseline and GPU.
var familyPresets = []string{"neupims", "npu-pim", "gpu-h100", "l3", "lolpim", "helios", "hermes"}

// discardTerminal draws frames as Bubble Tea's renderer does, into a terminal that
// discards what it is sent: a frame's text parsed into cells, compared with the frame
// before, and the cells that changed encoded as escape sequences. It counts the bytes.
type discardTerminal struct {
	cells uv.ScreenBuffer
	scr   *uv.TerminalRenderer
	sent  countingWriter
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

func newDiscardTerminal(w, h int) *discardTerminal {
	t := &discardTerminal{cells: uv.NewScreenBuffer(w, h)}
	t.scr = uv.NewTerminalRenderer(&t.sent, []string{"TERM=xterm-256color"})
	t.scr.SetColorProfile(colorprofile.TrueColor)
	t.scr.SetFullscreen(true)
	t.scr.SetRelativeCursor(false)
	return t
}

func (t *discardTerminal) draw(v tea.View) {
	t.cells.Clear()
	uv.NewStyledString(v.Content).Draw(t.cells, t.cells.Bounds())
	t.scr.Render(t.cells.RenderBuffer)
	t.scr.Flush()
}

// autoplayStep is one step of autoplay as the program runs it: the tick's message (and
// the frame Bubble Tea asks for after it), the step it starts, the step's message, and
// its frame drawn to term. The next tick, which the step's message schedules, is the
// next call's.
func (m *Model) autoplayStep(term *discardTerminal) {
	_, step := m.Update(tickMsg{m.seq})
	m.View()
	m.Update(step())
	term.draw(m.View())
}

// BenchmarkStepRender is one iteration of autoplay at 200×60 as the user pays for it:
// the engine's step, every pane taking the new snapshot, the frame, and the renderer's
// work to put it on a terminal (which here discards it). term-B/op is what the terminal
// would have been sent.
func BenchmarkStepRender(b *testing.B) {
	for _, p := range familyPresets {
		b.Run(p, func(b *testing.B) {
			m := benchModel(b, p, 200, 60)
			m.playing = true
			term := newDiscardTerminal(200, 60)
			term.draw(m.View())
			term.sent.n = 0
			b.ReportAllocs()
			for b.Loop() {
				m.autoplayStep(term)
			}
			b.ReportMetric(float64(term.sent.n)/float64(b.N), "term-B/op")
		})
	}
}

// BenchmarkTerminal is the renderer's share of BenchmarkStepRender alone: two successive
// 200×60 frames of a preset drawn in turn, the same frames with every escape sequence
// stripped, a frame of spaces and an empty frame. The renderer clears, parses and
// compares every cell of the screen whatever the frame holds, so the last two are the
// floor any frame pays.
func BenchmarkTerminal(b *testing.B) {
	m := benchModel(b, "neupims", 200, 60)
	m.playing = true
	term := newDiscardTerminal(200, 60)
	m.autoplayStep(term)
	f0 := m.View().Content
	m.autoplayStep(term)
	f1 := m.View().Content
	blank := strings.Repeat(strings.Repeat(" ", 200)+"\n", 59) + strings.Repeat(" ", 200)
	for _, c := range []struct {
		name   string
		frames [2]string
	}{
		{"neupims", [2]string{f0, f1}},
		{"neupims-stripped", [2]string{ansi.Strip(f0), ansi.Strip(f1)}},
		{"spaces", [2]string{blank, blank}},
		{"empty", [2]string{"", ""}},
	} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				term.draw(tea.NewView(c.frames[i%2]))
				i++
			}
		})
	}
}

// BenchmarkStep is the engine's share of BenchmarkStepRender.
func BenchmarkStep(b *testing.B) {
	for _, p := range familyPresets {
		b.Run(p, func(b *testing.B) {
			m := benchModel(b, p, 200, 60)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.eng.Step(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRender is one frame of an unchanged snapshot: what a resize or a cursor move
// costs (the View after a message that may change the screen), without the terminal.
func BenchmarkRender(b *testing.B) {
	for _, p := range familyPresets {
		b.Run(p, func(b *testing.B) {
			m := benchModel(b, p, 200, 60)
			b.ReportAllocs()
			for b.Loop() {
				m.frame.seen(true)
				_ = m.View()
			}
		})
	}
}

// bigSnapshot is a system far larger than any preset: 2,048 rows of 16 banks (16 nodes ×
// 8 modules × 16 channels), a million KV blocks over 2,048 locations, and 100,000 spans on
// 66 lanes.
func bigSnapshot() *sim.Snapshot {
	s := fixture(1)
	g := &s.Banks
	g.Rows, g.Cols, g.ColGroup = 2048, 16, 4
	n := g.Rows * g.Cols
	g.PIM, g.Mem, g.Owner, g.RowNotes = make([]float64, n), make([]float64, n), make([]int, n), make([]string, g.Rows)
	for i := range n {
		g.PIM[i], g.Mem[i], g.Owner[i] = float64(i%97)/96, float64(i%89)/88, 1+i%5000
	}
	kv := &s.KV
	kv.Locations, kv.Capacity, kv.Used = nil, 0, 0
	for i := range 2048 {
		loc := sim.KVLocation{Label: fmt.Sprintf("n%d.c%d", i/128, i%128), Capacity: 512}
		for j := range 4 {
			h := sim.KVHolder{Request: 1 + i*4 + j, KBlocks: 40, VBlocks: 40, Reserved: 90, Fill: 0.9}
			loc.Holders = append(loc.Holders, h)
			loc.Used += 80
			loc.Reserved += 90
		}
		kv.Locations = append(kv.Locations, loc)
		kv.Capacity += loc.Capacity
		kv.Used += loc.Used
	}
	tl := &s.Timeline
	tl.Lanes = tl.Lanes[:2]
	for c := range 64 {
		tl.Lanes = append(tl.Lanes, sim.Lane{Name: fmt.Sprintf("PIM ch%d", c), Group: "pim"})
	}
	tl.Spans, tl.Bubbles = nil, nil
	per := 100000 / len(tl.Lanes)
	for l := range tl.Lanes {
		t := sim.Time(0)
		for i := range per {
			d := sim.Time(1000 + (i*7+l)%500)
			tl.Spans = append(tl.Spans, sim.Span{Op: sim.Op{Name: "MHA", Lane: l, Layer: i % 32, SubBatch: 1 + i%2, Dur: d}, Start: t})
			tl.Bubbles = append(tl.Bubbles, sim.Bubble{Lane: l, Start: t + d, Dur: 100, Waited: -1})
			t += d + 100
		}
		tl.Makespan = max(tl.Makespan, t)
	}
	tl.Layers = 32
	s.IterTime = tl.Makespan
	return s
}

// BenchmarkLargeConfig is one autoplay step at 200×60, as BenchmarkStepRender, of each
// family's largest configuration: a 16×16 HeLioS mesh, about a million live KV blocks, LoL-PIM's 16 nodes,
// and Hermes with every neuron of LLaMA2-70B tracked.
func BenchmarkLargeConfig(b *testing.B) {
	cases := []struct {
		name, preset string
		edit         []string
	}{
		{"helios-mesh16", "helios", []string{"hb.mesh=16"}},
		{"helios-1M-blocks", "helios", []string{"kvcache.block_tokens=1", "workload.batch=128", "workload.arrival=closed"}},
		{"lolpim-16-nodes", "lolpim", nil},
		{"hermes-70b", "hermes", []string{"workload.steps=0", "workload.output_len=100000"}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			m := benchModel(b, c.preset, 200, 60, c.edit...)
			m.playing = true
			term := newDiscardTerminal(200, 60)
			b.ReportAllocs()
			for b.Loop() {
				m.autoplayStep(term)
			}
		})
	}
}

// BenchmarkLargeSystem takes a huge snapshot into every pane and draws the dashboard.
func BenchmarkLargeSystem(b *testing.B) {
	m := benchModel(b, "neupims", 200, 60)
	s := bigSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		m.setSnapshot(s)
		m.frame.seen(true)
		_ = m.View()
	}
}

// Memory stays flat however long autoplay runs: the engine keeps a bounded history and
// the panes keep fixed-size state.
func TestAutoplayMemoryIsBounded(t *testing.T) {
	if quick() {
		t.Skip("long autoplay skipped in -short mode")
	}
	m := benchModel(t, "neupims", 200, 60)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	run := func(n int) {
		for range n {
			m.benchStep()
			_ = m.View()
		}
	}
	run(2 * historyCap)
	a := heap()
	run(3 * historyCap)
	b := heap()
	runtime.KeepAlive(m)
	t.Logf("heap after %d steps %.1f MB, after %d steps %.1f MB", 2*historyCap, float64(a)/1e6, 5*historyCap, float64(b)/1e6)
	if float64(b) > 1.15*float64(a) {
		t.Fatalf("heap grew from %.1f MB to %.1f MB", float64(a)/1e6, float64(b)/1e6)
	}
}

// BenchmarkAutoplayMemory steps and draws as autoplay does and reports the live heap at
// the end: with the history full it stays the same however many steps run.
func BenchmarkAutoplayMemory(b *testing.B) {
	m := benchModel(b, "neupims", 200, 60)
	for b.Loop() {
		m.benchStep()
		_ = m.View()
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/1e6, "heap-MB")
	runtime.KeepAlive(m)
}
