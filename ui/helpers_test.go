package ui

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pimtui/pimtui/presets"
	"github.com/pimtui/pimtui/sim"
)

// smallConfig builds a preset with a short workload so tests step quickly.
func smallConfig(name string) (sim.Config, error) {
	f, err := presets.Get(name)
	if err != nil {
		return sim.Config{}, err
	}
	f.Workload.Requests = 64
	f.Workload.Batch = min(f.Workload.Batch, 32)
	f.Workload.OpenAt = 0 // small runs open at their first iteration
	return presets.Build(f, nil)
}

// presetList is every embedded preset with its description, read once.
var presetList = sync.OnceValue(func() []PresetInfo {
	var list []PresetInfo
	for _, n := range presets.Names() {
		f, err := presets.Get(n)
		if err != nil {
			panic(err)
		}
		list = append(list, PresetInfo{Name: n, Family: f.Family, Description: f.Description})
	}
	return list
})

func testOptions(t testing.TB) Options {
	return Options{Presets: presetList(), Load: smallConfig, ExportDir: t.TempDir()}
}

// laterMsg is a message a test clock holds back until the test advances time.
type laterMsg struct {
	d   time.Duration
	msg tea.Msg
}

// holdTime makes the run loop's delayed messages wait for a test driver's advance.
func (r *runControl) holdTime() {
	r.after = func(dur time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return laterMsg{dur, fn(time.Time{})} }
	}
}

// drivenModel is a view a test driver runs: the explorer or the compare view.
type drivenModel interface {
	tea.Model
	holdTime()
}

// testDriver runs a model synchronously: commands run at once and their messages are
// fed back, except delayed ones (ticks, status expiry), which wait for advance.
type testDriver[M drivenModel] struct {
	t     testing.TB
	m     M
	later []tea.Msg
	quit  bool
}

type (
	driver    = testDriver[*Model]
	cmpDriver = testDriver[*Compare]
)

// drive holds m's clock and gives it a w×h screen; Init is left to the caller.
func drive[M drivenModel](t testing.TB, m M, w, h int) *testDriver[M] {
	d := &testDriver[M]{t: t, m: m}
	m.holdTime()
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	return d
}

// start drives m from Init.
func start[M drivenModel](t testing.TB, m M, w, h int) *testDriver[M] {
	d := drive(t, m, w, h)
	d.run(m.Init())
	return d
}

func newDriver(t testing.TB, preset string, w, h int) *driver {
	t.Helper()
	cfg, err := smallConfig(preset)
	if err != nil {
		t.Fatal(err)
	}
	return startDriver(t, cfg, testOptions(t), w, h)
}

// startDriver runs New and Init under the test clock.
func startDriver(t testing.TB, cfg sim.Config, opts Options, w, h int) *driver {
	t.Helper()
	m, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return start(t, m, w, h)
}

// typeText types s one key at a time, as a user does.
func (d *testDriver[M]) typeText(s string) {
	for _, r := range s {
		d.keys(string(r))
	}
}

func (d *testDriver[M]) send(msg tea.Msg) {
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		_, cmd := d.m.Update(next)
		queue = append(queue, d.exec(cmd)...)
	}
}

func (d *testDriver[M]) run(cmd tea.Cmd) {
	for _, msg := range d.exec(cmd) {
		d.send(msg)
	}
}

// exec runs cmd and returns the messages to feed back now.
func (d *testDriver[M]) exec(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case nil:
		return nil
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, d.exec(c)...)
		}
		return out
	case tea.QuitMsg:
		d.quit = true
		return nil
	case laterMsg:
		d.later = append(d.later, msg.msg)
		return nil
	default:
		return []tea.Msg{msg}
	}
}

// advance fires every held-back message once.
func (d *testDriver[M]) advance() {
	msgs := d.later
	d.later = nil
	for _, m := range msgs {
		d.send(m)
	}
}

func (d *testDriver[M]) keys(ks ...string) {
	for _, k := range ks {
		d.send(keyPress(k))
	}
}

func (d *testDriver[M]) screen() string { return ansi.Strip(d.m.View().Content) }

func keyPress(s string) tea.KeyPressMsg {
	named := map[string]tea.Key{
		"space":       {Code: tea.KeySpace, Text: " "},
		"right":       {Code: tea.KeyRight},
		"left":        {Code: tea.KeyLeft},
		"up":          {Code: tea.KeyUp},
		"down":        {Code: tea.KeyDown},
		"tab":         {Code: tea.KeyTab},
		"shift+tab":   {Code: tea.KeyTab, Mod: tea.ModShift},
		"shift+left":  {Code: tea.KeyLeft, Mod: tea.ModShift},
		"shift+right": {Code: tea.KeyRight, Mod: tea.ModShift},
		"esc":         {Code: tea.KeyEscape},
		"enter":       {Code: tea.KeyEnter},
		"backspace":   {Code: tea.KeyBackspace},
		"pgup":        {Code: tea.KeyPgUp},
		"pgdown":      {Code: tea.KeyPgDown},
		"ctrl+c":      {Code: 'c', Mod: tea.ModCtrl},
	}
	if k, ok := named[s]; ok {
		return tea.KeyPressMsg(k)
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// checkFits fails when out is not exactly h lines of exactly w cells: a pane fills the
// size it is given, and the explorer frames its lines without measuring them again.
func checkFits(t testing.TB, what, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Fatalf("%s: %d lines, want %d:\n%s", what, len(lines), h, ansi.Strip(out))
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw != w {
			t.Fatalf("%s: line %d is %d cells wide, not %d: %q", what, i, lw, w, ansi.Strip(l))
		}
	}
}

// fixture is a hand-made snapshot with every feature the panes draw: a grouped bank
// grid with uneven values and owners, two sub-batches, a lane group, bubbles of every
// cause, stage marks, KV locations with reserved and partly filled blocks, and requests
// in every state. It keeps the pane goldens independent of the engine's numbers.
func fixture(step int) *sim.Snapshot {
	s := &sim.Snapshot{Step: step, Batch: 24, Prefills: 2, Queue: 5, Tokens: 26, Done: 40, Total: 200}
	tl := &s.Timeline
	tl.Lanes = []sim.Lane{{Name: "NPU-S", Group: "npu"}, {Name: "NPU-V", Group: "npu_vector"}}
	for c := range 8 {
		tl.Lanes = append(tl.Lanes, sim.Lane{Name: fmt.Sprintf("PIM ch%d", c), Group: "pim"})
	}
	tl.Lanes = append(tl.Lanes, sim.Lane{Name: "Prefill NPU", Group: "prefill"})
	free := make([]sim.Time, len(tl.Lanes))
	add := func(name string, lane, layer, sb int, start, dur sim.Time) int {
		start = max(start, free[lane])
		tl.Spans = append(tl.Spans, sim.Span{Op: sim.Op{Name: name, Lane: lane, Layer: layer, SubBatch: sb, Dur: dur,
			FLOPs: float64(dur) * 1e3, Bytes: float64(dur) / 10}, Start: start})
		free[lane] = start + dur
		return len(tl.Spans) - 1
	}
	us := sim.Microsecond
	for l := range 4 {
		for sb := 1; sb <= 2; sb++ {
			q := add("QKV", 0, l, sb, 0, 40*us)
			sm := add("softmax", 1, l, sb, tl.Spans[q].End(), 6*us)
			end := tl.Spans[sm].End()
			for c := range 8 {
				i := add("MHA", 2+c, l, sb, tl.Spans[q].End(), sim.Time(30+5*(c%3)+step)*us)
				end = max(end, tl.Spans[i].End())
			}
			add("Proj", 0, l, sb, end, 12*us)
			add("FC1", 0, l, sb, 0, 30*us)
			add("FC2", 0, l, sb, 0, 30*us)
		}
	}
	add("prefill", len(tl.Lanes)-1, 0, 0, 0, 80*us)
	for _, f := range free {
		tl.Makespan = max(tl.Makespan, f)
	}
	// Bubbles: every gap on a lane waits for the span that ends where the gap ends.
	for lane := range tl.Lanes {
		at := sim.Time(0)
		for i, sp := range tl.Spans {
			if sp.Lane != lane {
				continue
			}
			if sp.Start > at {
				tl.Bubbles = append(tl.Bubbles, sim.Bubble{Lane: lane, Start: at, Dur: sp.Start - at, Cause: sim.BubbleCause(i % int(sim.CauseCapacity)), Waited: max(0, i-1)})
			}
			at = sp.End()
		}
		if at < tl.Makespan {
			tl.Bubbles = append(tl.Bubbles, sim.Bubble{Lane: lane, Start: at, Dur: tl.Makespan - at, Cause: sim.CauseTail, Waited: 0})
		}
	}
	// Each span started when a span that ends at its start ended (the latest such, or none),
	// and the critical path chains back through them from the span that ends last.
	last := 0
	for i := range tl.Spans {
		tl.Spans[i].By = -1
		for j := range tl.Spans {
			if tl.Spans[j].End() == tl.Spans[i].Start && tl.Spans[i].Start > 0 && j != i {
				tl.Spans[i].By = j
			}
		}
		if tl.Spans[i].End() > tl.Spans[last].End() {
			last = i
		}
	}
	for i := last; i >= 0; i = tl.Spans[i].By {
		tl.Critical = append([]int{i}, tl.Critical...)
	}
	tl.Layers = 4
	tl.Stages = []sim.StageMark{{Name: "A", Start: 0}, {Name: "B", Start: 40 * us}, {Name: "C1", Start: 200 * us}, {Name: "D1", Start: 400 * us}}
	s.IterTime = tl.Makespan
	s.Now = sim.Time(step) * tl.Makespan

	g := &s.Banks
	g.RowKind, g.ColKind, g.Rows, g.Cols, g.ColGroup = "channel", "bank", 8, 16, 4
	for r := range g.Rows {
		for c := range g.Cols {
			g.PIM = append(g.PIM, float64((r*3+c)%11)/10)
			g.Mem = append(g.Mem, float64((r+c)%7)/6)
			g.Owner = append(g.Owner, 1+(r*5+c/4)%9)
		}
		g.RowNotes = append(g.RowNotes, fmt.Sprintf("%d req  Σseq %d", 3, 400+r*37))
	}

	kv := &s.KV
	kv.Unit, kv.LocKind, kv.BlockBytes = "test tile", "channel", 32768
	for i := range 8 {
		loc := sim.KVLocation{Label: fmt.Sprintf("ch%d", i), Capacity: 1000}
		for _, id := range []int{i + 1, i + 9, i + 17} {
			k, v := 40+10*i, 30
			h := sim.KVHolder{Request: id, KBlocks: k, VBlocks: v, Reserved: k + v + 20*(i%2), Fill: 0.8}
			loc.Holders = append(loc.Holders, h)
			loc.Used += k + v
			loc.Reserved += h.Reserved
		}
		kv.Locations = append(kv.Locations, loc)
		kv.Capacity += loc.Capacity
		kv.Used += loc.Used
		kv.Reserved += loc.Reserved
	}
	kv.Fragmentation = 0.2
	s.Neurons.Reason = "This fixture has no neuron partition."
	s.Metrics = sim.Metrics{IterTime: s.IterTime, Throughput: 3700, StepTokPerSec: 3800 + float64(step*10), LoadImbalance: 1.2, KVUtil: 0.15,
		Util: map[string]float64{"npu": 0.6, "pim": 0.3, "bandwidth": 0.9}, Bubble: map[string]float64{"npu": 0.1, "npu_vector": 0.9, "pim": 0.7},
		BubbleShare: 0.42, ShareByCause: sim.Causes{sim.CauseDependency: 0.3, sim.CauseTail: 0.12}}
	for id := 1; id <= 24; id++ {
		s.Requests = append(s.Requests, sim.RequestRow{ID: id, InputLen: 100 + id*7, OutputLen: 200, Generated: step + id, Loc: (id - 1) % 8, Status: sim.Running})
	}
	for id := 25; id <= 29; id++ {
		s.Requests = append(s.Requests, sim.RequestRow{ID: id, InputLen: 50, OutputLen: 120, Loc: -1, Status: sim.Waiting})
	}
	for id := 30; id <= 32; id++ {
		s.Requests = append(s.Requests, sim.RequestRow{ID: id, InputLen: 70, OutputLen: 90, Generated: 90, Loc: 2, Status: sim.Done})
	}
	return s
}

func testCommon(color bool) *Common {
	return &Common{Width: 120, Height: 40, Styles: newStyles(color, true), Keys: DefaultKeyMap(), Color: color, Dark: true}
}

// withNeurons adds a hot/cold neuron partition to a fixture: 6 layers of QKV (8 bins)
// and MLP (16 bins) blocks over a GPU and two DIMMs, hotter bins first.
func withNeurons(s *sim.Snapshot) *sim.Snapshot {
	nr := &s.Neurons
	nr.Reason = ""
	nr.Locations = []string{"GPU", "DIMM0", "DIMM1"}
	nr.BinsPerBlock = 16
	for l := range 6 {
		for _, kind := range []string{"QKV", "MLP"} {
			bins := 8
			if kind == "MLP" {
				bins = 16
			}
			b := sim.NeuronBlock{Layer: l, Kind: kind, NeuronBytes: 8192, Computed: make([]int32, 3)}
			for j := range bins {
				n := uint16(256)
				gpu := uint16(max(0, 256-j*40))
				act := uint16(max(8, 200-j*15-l*5))
				bn := sim.NeuronBin{Neurons: n, GPU: gpu, Active: act, Predicted: act + uint16(j%3), FP: uint16(j % 3), FN: uint16(l % 2),
					Promoted: uint16(j % 5 / 4), State: float32(15 - j), Freq: float32(act) / 256}
				b.Bins = append(b.Bins, bn)
				placed := []uint16{gpu, 0, 0}
				placed[1+j%2] = n - gpu
				b.BinPlaced = append(b.BinPlaced, placed...)
				b.Neurons += int(n)
				b.GPUSlots += int(gpu)
				b.Active += int32(act)
				b.Predicted += int32(bn.Predicted)
				b.FP += int32(bn.FP)
				b.FN += int32(bn.FN)
				b.Computed[0] += int32(min(gpu, bn.Predicted))
				b.Computed[1+j%2] += int32(bn.Predicted - min(gpu, bn.Predicted))
			}
			nr.Blocks = append(nr.Blocks, b)
		}
	}
	nr.Stats = sim.NeuronStats{Token: 37, Window: 32, WindowPos: 5, GPUCoverage: 0.82, Accuracy: 0.95, Recall: 0.9, Precision: 0.88,
		Promoted: 12, PromotedMB: 0.1, Remapped: 4, RemappedMB: 0.03, HotMB: 1234, BudgetMB: 2048}
	return s
}
