package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pimtui/pimtui/sim"
)

// The compare view's why overlay (w): why side B's iterations take longer or shorter
// than side A's, for the step shown and for the window of steps both sides keep, as the
// difference explainer tells it (sim/explain.go): the settings that differ, the critical
// path by lane group and operation, each lane group's time by bubble cause, and, when side
// B carries its contrast with A, the switches' shares, found by running the
// configurations between A and B off the UI goroutine with a progress line.

// whyBinding opens and closes the overlay.
var whyBinding = key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "why B differs"))

// whyState is the overlay, when open, and the number of the last one opened: results of an
// overlay since closed are dropped by it.
type whyState struct {
	open *whyOverlay
	seq  int
}

// whyOverlay is what the open overlay shows and how far its work has come.
type whyOverlay struct {
	seq     int
	top     int  // lines scrolled
	waiting bool // a move was in flight when it opened; the work starts when it arrives
	ctx     context.Context
	cancel  context.CancelFunc
	ch      chan tea.Msg

	step     *sim.Why // the step shown (nil: a side has ended; stepNote says so)
	stepNote string
	window   *sim.Why // the steps both sides keep, up to the one shown
	// attributing is set while the switched configurations run; progress is their share
	// done. note says why there is no attribution when Side B has no contrast.
	attributing bool
	progress    float64
	err         error
}

// whyWindowMsg brings the window's breakdown; whyProgressMsg and whyDoneMsg the
// attribution's progress and result.
type (
	whyWindowMsg struct {
		seq         int
		window      *sim.Why
		attributing bool
	}
	whyProgressMsg struct {
		seq  int
		done float64
	}
	whyDoneMsg struct {
		seq          int
		window, last *sim.Attribution
		err          error
	}
)

// openWhy opens the overlay over the step shown: the run pauses, and the work starts
// now, or when the move in flight arrives.
func (m *Compare) openWhy() tea.Cmd {
	m.playing, m.pending = false, 0
	m.why.seq++
	m.why.open = &whyOverlay{seq: m.why.seq, waiting: m.busy}
	if m.busy {
		return nil
	}
	return m.startWhy()
}

// closeWhy closes the overlay and stops its work.
func (m *Compare) closeWhy() {
	if o := m.why.open; o != nil && o.cancel != nil {
		o.cancel()
	}
	m.why.open = nil
}

// whyStepped starts the overlay's work once the move that was in flight when it opened
// has arrived.
func (m *Compare) whyStepped() tea.Cmd {
	if o := m.why.open; o != nil && o.waiting && !m.busy {
		o.waiting = false
		return m.startWhy()
	}
	return nil
}

// startWhy explains the step shown at once and hands the window and the attribution to a
// goroutine. It runs on the UI goroutine with no move in flight, so the engines' kept
// histories can be taken; reading them and running the switched configurations happen
// off it.
func (m *Compare) startWhy() tea.Cmd {
	o := m.why.open
	a, b := m.sides[0], m.sides[1]
	contrast := b.Contrast
	var settings []sim.Setting
	if contrast != nil {
		settings = contrast.Settings
	}
	to := m.step
	for _, s := range m.sides {
		if s.snap == nil {
			o.stepNote = "waiting for the first step"
			return nil
		}
		to = min(to, s.snap.Step)
	}
	if a.snap.Step == m.step && b.snap.Step == m.step {
		var ba, bb sim.Breakdown
		ba.Add(a.snap)
		bb.Add(b.snap)
		o.step = sim.Explain(&ba, &bb, settings)
	} else {
		o.stepNote = m.finishedText() + ": the step shown has one side only"
	}
	ha, hb := a.eng.History(), b.eng.History()
	ctx, cancel := context.WithCancel(context.Background())
	o.ctx, o.cancel, o.ch = ctx, cancel, make(chan tea.Msg, 1)
	seq, ch := o.seq, o.ch
	send := func(msg tea.Msg) {
		select {
		case ch <- msg:
		case <-ctx.Done():
		}
	}
	go func() {
		defer close(ch)
		ba, bb := keptWindow(ha, hb, to)
		w := sim.Explain(ba, bb, settings)
		run := contrast != nil && ba.Steps > 0
		if contrast == nil {
			w.SetAttribution(&sim.Attribution{Method: sim.MethodNone, Note: "side B was built without its settings"})
		}
		send(whyWindowMsg{seq, w, run})
		if !run {
			return
		}
		window, last, err := contrast.Attribute(ctx, ba, bb, func(f float64) {
			select { // a progress report the overlay has not read yet is replaced, not queued
			case ch <- whyProgressMsg{seq, f}:
			default:
			}
		})
		send(whyDoneMsg{seq, window, last, err})
	}()
	return waitWhy(ctx, ch)
}

// keptWindow is the breakdown of both sides over the steps both keep up to step to.
func keptWindow(ha, hb sim.History, to int) (*sim.Breakdown, *sim.Breakdown) {
	steps := map[int]int{}
	for i := range hb.Len() {
		steps[hb.Step(i)] = i
	}
	var ba, bb sim.Breakdown
	for i := range ha.Len() {
		s := ha.Step(i)
		if j, ok := steps[s]; ok && s <= to {
			ba.Add(ha.Snapshot(i))
			bb.Add(hb.Snapshot(j))
		}
	}
	return &ba, &bb
}

// waitWhy waits for the overlay's next message; nil once its work is done or stopped.
func waitWhy(ctx context.Context, ch chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		select {
		case msg, ok := <-ch:
			if ok {
				return msg
			}
		case <-ctx.Done():
		}
		return nil
	}
}

// whyUpdate takes the overlay's messages; handled is false for any other.
func (m *Compare) whyUpdate(msg tea.Msg) (cmd tea.Cmd, handled bool) {
	o := m.why.open
	switch msg := msg.(type) {
	case whyWindowMsg:
		if o != nil && msg.seq == o.seq {
			o.window, o.attributing = msg.window, msg.attributing
			return waitWhy(o.ctx, o.ch), true
		}
	case whyProgressMsg:
		if o != nil && msg.seq == o.seq {
			o.progress = msg.done
			return waitWhy(o.ctx, o.ch), true
		}
	case whyDoneMsg:
		if o != nil && msg.seq == o.seq {
			o.attributing, o.err = false, msg.err
			if msg.err == nil {
				o.window.SetAttribution(msg.window)
				if o.step != nil {
					o.step.SetAttribution(msg.last)
				}
			}
		}
	default:
		return nil, false
	}
	return nil, true
}

// whyKey takes a key while the overlay is open: quit quits, the movement and page keys
// scroll, any other key closes it.
func (m *Compare) whyKey(msg tea.KeyPressMsg) tea.Cmd {
	k, o := m.c.Keys, m.why.open
	switch {
	case key.Matches(msg, k.Quit):
		m.closeWhy()
		return tea.Quit
	case key.Matches(msg, k.Down):
		o.top++
	case key.Matches(msg, k.Up):
		o.top = max(0, o.top-1)
	case msg.String() == "pgdown" || msg.String() == "space":
		o.top += 10
	case msg.String() == "pgup":
		o.top = max(0, o.top-10)
	default:
		m.closeWhy()
	}
	return nil
}

// whyBox draws the overlay for a screen of w×h.
func (m *Compare) whyBox(w, h int) []string {
	st := m.c.Styles
	bw := helpWidth(w)
	inner := bw - 4
	lines := m.whyLines(inner)
	room := max(1, h-2)
	o := m.why.open
	o.top = clamp(o.top, 0, max(0, len(lines)-room+1))
	body := lines[o.top:]
	if len(body) > room {
		body = append(body[:room-1:room-1], st.Faint.render("… j/k scroll · any other key closes"))
	}
	return frame(st, " Why B differs from A ", padBox(body, inner), bw, min(h, len(body)+2), true)
}

// whyLines is the overlay's text for width w: the step shown and the window side by side.
func (m *Compare) whyLines(w int) []string {
	st := m.c.Styles
	o := m.why.open
	a, b := m.sides[0], m.sides[1]
	var ls []whyLine
	add := func(p paint, text string) { ls = append(ls, whyLine{text: text, p: p}) }
	para := func(p paint, s string) {
		for _, l := range wrap(s, w) {
			add(p, l)
		}
	}
	row := func(p paint, cells ...string) { ls = append(ls, whyLine{cells: cells, p: p}) }
	section := func(title string) {
		add(paint(""), "")
		add(st.Title, title)
	}
	add(paint(""), "A "+a.Name+" · B "+b.Name)
	stepHead := fmt.Sprintf("step %d", m.step)
	winHead := "window"
	if o.window != nil && o.window.Steps > 0 {
		winHead = fmt.Sprintf("steps %d–%d", o.window.From, o.window.To)
	}
	heads := func() { row(st.Faint, "", stepHead, winHead) }
	if o.waiting {
		add(st.Faint, "waiting for the step in flight…")
	} else {
		add(st.Faint, "window: the steps both sides keep, up to the one shown; figures are means")
		pick := func(y *sim.Why, f func(*sim.Why) string) string {
			if y == nil || y.Steps == 0 {
				return "–"
			}
			return f(y)
		}
		both := func(label string, f func(*sim.Why) string) { row(paint(""), label, pick(o.step, f), pick(o.window, f)) }
		row(st.Bold, "", stepHead, winHead)
		both("iteration A", func(y *sim.Why) string { return fmtMS(y.AMS) })
		both("iteration B", func(y *sim.Why) string { return fmtMS(y.BMS) })
		both("B − A", func(y *sim.Why) string { return sim.SignedMS(y.DeltaMS) })
		both("B / A", func(y *sim.Why) string { return fmt.Sprintf("%.3f×", y.Ratio) })
		add(paint(""), "")
		if o.step != nil {
			para(paint(""), "Step "+fmt.Sprint(m.step)+": "+o.step.Summary)
		} else if o.stepNote != "" {
			para(st.Faint, o.stepNote)
		}
		if o.window != nil {
			para(paint(""), strings.ToUpper(winHead[:1])+winHead[1:]+": "+o.window.Summary)
		} else {
			para(st.Faint, "reading the kept steps…")
		}
	}

	section("Settings that differ")
	switch {
	case b.Contrast == nil:
		add(st.Faint, "not known: side B was built without them")
	case len(b.Contrast.Settings) == 0:
		add(paint(""), "none: the configurations are the same")
	}
	if b.Contrast != nil {
		for _, s := range b.Contrast.Settings {
			add(st.Bold, s.Key+" "+s.A+" → "+s.B)
			for _, l := range wrap(s.Meaning, w-4) {
				add(st.Faint, "    "+l)
			}
		}
	}
	if o.waiting {
		return m.layWhy(ls, w)
	}

	// A table of both explanations: the window's rows in its order, then those only the
	// step has.
	table := func(rows func(y *sim.Why, put func(label string, v float64))) {
		var labels []string
		val := map[string][2]string{}
		for col, y := range []*sim.Why{o.step, o.window} {
			if y == nil {
				continue
			}
			rows(y, func(label string, v float64) {
				if !slices.Contains(labels, label) {
					labels = append(labels, label)
				}
				x := val[label]
				x[col] = sim.SignedMS(v)
				val[label] = x
			})
		}
		if o.window != nil {
			order := map[string]int{}
			rows(o.window, func(label string, _ float64) { order[label] = len(order) })
			slices.SortStableFunc(labels, func(x, y string) int {
				ix, okx := order[x]
				iy, oky := order[y]
				switch {
				case okx && oky:
					return ix - iy
				case okx:
					return -1
				case oky:
					return 1
				}
				return 0
			})
		}
		heads()
		for _, l := range labels {
			row(paint(""), l, dash(val[l][0]), dash(val[l][1]))
		}
	}
	section("Critical path, B − A per iteration")
	table(func(y *sim.Why, put func(string, float64)) {
		for _, p := range y.Path {
			put(p.Label(), p.DeltaMS)
		}
	})
	section("Lane groups, B − A per lane and iteration")
	table(func(y *sim.Why, put func(string, float64)) {
		for _, g := range y.Groups {
			put(g.Group+" busy", g.Busy.DeltaMS)
			for _, c := range g.Idle {
				put(g.Group+" idle, "+c.Cause, c.DeltaMS)
			}
		}
	})

	section("Switches, B − A per iteration")
	var att *sim.Attribution
	if o.window != nil {
		att = o.window.Attribution
	}
	switch {
	case o.attributing:
		add(paint(""), fmt.Sprintf("running the configurations between A and B %s %.0f%%", whyBar(o.progress, 20), 100*o.progress))
	case o.err != nil:
		para(st.Bad, "stopped: "+o.err.Error())
	case att == nil:
		add(st.Faint, "–")
	case len(att.Switches) == 0:
		para(st.Faint, "none: "+att.Note)
	default:
		table(func(y *sim.Why, put func(string, float64)) {
			if y.Attribution != nil {
				for _, s := range y.Attribution.Switches {
					put(s.Key+" "+s.A+" → "+s.B, s.DeltaMS)
				}
			}
		})
		if att.Method == sim.MethodSingle {
			row(paint(""), "interplay of the switches", dash(stepInteraction(o.step)), sim.SignedMS(att.InteractionMS))
		}
		para(st.Faint, att.Note)
	}
	return m.layWhy(ls, w)
}

// whyLine is a line of the overlay: text, or a row of a label and two values (the step
// shown, the window), laid out once the labels' width is known.
type whyLine struct {
	text  string
	cells []string
	p     paint
}

// layWhy lays out the overlay's lines for width w: text as it is, rows as a label column
// as wide as the widest label needs and two value columns.
func (m *Compare) layWhy(ls []whyLine, w int) []string {
	vw, lw := 10, 0
	for _, l := range ls {
		if l.cells != nil {
			lw = max(lw, width(l.cells[0])+2)
			vw = max(vw, width(l.cells[1])+2, width(l.cells[2])+2)
		}
	}
	lw = max(4, min(lw, w-2*vw))
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		if l.cells == nil {
			out = append(out, l.p.render(truncate(l.text, w)))
			continue
		}
		label := truncate(l.cells[0], lw-1)
		out = append(out, l.p.render(label+strings.Repeat(" ", lw-width(label))+fmt.Sprintf("%*s%*s", vw, l.cells[1], vw, l.cells[2])))
	}
	return out
}

// stepInteraction is the step's interplay of single-switch effects, "" without one.
func stepInteraction(y *sim.Why) string {
	if y == nil || y.Attribution == nil || len(y.Attribution.Switches) == 0 {
		return ""
	}
	return sim.SignedMS(y.Attribution.InteractionMS)
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// fmtMS writes milliseconds with a unit that keeps three significant digits.
func fmtMS(v float64) string { return fmtTime(sim.Time(v * float64(sim.Millisecond))) }

// whyBar draws the fraction f as a bar w cells wide.
func whyBar(f float64, w int) string {
	n := int(max(0, min(1, f))*float64(w) + 0.5)
	return "▕" + strings.Repeat("█", n) + strings.Repeat("░", w-n) + "▏"
}
