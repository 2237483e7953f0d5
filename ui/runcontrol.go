package ui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// runControl is the run loop the explorer and the compare view share: one move in
// flight off the UI goroutine with the moves asked for meanwhile queued, autoplay at a
// speed, and a status message that expires. Each view names its own tick and expiry
// messages, so that with the compare view open over the explorer each loop gets its own.
type runControl struct {
	seq     int  // sequence number of the last move asked for
	busy    bool // a move is running off the UI goroutine
	pending int  // moves asked for while busy: positive forward, negative back
	playing bool
	speed   int
	err     error // the run stopped on it; no move is queued after it

	status    string
	statusBad bool
	statusSeq int
	// log keeps the last status messages, oldest first, for the message log overlay
	// (showLog); stepNow tells the step each was shown at.
	log     []logEntry
	showLog bool
	stepNow func() int

	tickMsg, expiredMsg func(seq int) tea.Msg

	// after schedules a message (autoplay ticks, status expiry); tests replace it to
	// control time.
	after func(time.Duration, func(time.Time) tea.Msg) tea.Cmd
	// now is the wall clock autoplay's achieved rate is measured on; landed holds when
	// the last steps of autoplay landed, nLanded how many it holds.
	now     func() time.Time
	landed  [16]time.Time
	nLanded int

	frame frameCache
}

// frameCache keeps the last frame a view drew, so that a frame is not drawn again while
// only messages that change nothing on the screen have come: Bubble Tea draws after every
// message, and an autoplay tick, which only starts the next step, would draw each step's
// frame twice (at 200×60 a frame costs more than the step).
type frameCache struct {
	last  tea.View
	state int // messages that may have changed the screen
	drawn int // state when last was drawn, +1 (0: never drawn)
}

// seen counts a message about to be handled; one that changes nothing on the screen
// (an autoplay tick) leaves the last frame current.
func (f *frameCache) seen(changes bool) {
	if changes {
		f.state++
	}
}

// view returns the last frame if it is current, or draws one.
func (f *frameCache) view(draw func() tea.View) tea.View {
	if f.drawn != f.state+1 {
		f.last, f.drawn = draw(), f.state+1
	}
	return f.last
}

func newRunControl(tickMsg, expiredMsg func(seq int) tea.Msg) runControl {
	return runControl{speed: defaultSpeed, tickMsg: tickMsg, expiredMsg: expiredMsg, after: tea.Tick, now: time.Now}
}

// queue counts a move asked for while one is in flight and says whether it did.
func (r *runControl) queue(back bool) bool {
	if !r.busy {
		return false
	}
	if back {
		r.pending--
	} else {
		r.pending++
	}
	return true
}

// arrived takes in the result of the move numbered seq and says whether it is the
// latest; a stale one, from an engine since replaced, is dropped.
func (r *runControl) arrived(seq int) bool {
	if seq != r.seq {
		return false
	}
	r.busy = false
	if r.playing {
		r.landed[r.nLanded%len(r.landed)] = r.now()
		r.nLanded++
	}
	return true
}

// achieved is the rate autoplay's last steps landed at, in steps per second, and
// whether enough have landed to say: a step that takes longer than the tick's interval
// (a Hermes engine's, at 60/s) slows autoplay below the speed asked for.
func (r *runControl) achieved() (float64, bool) {
	n := min(r.nLanded, len(r.landed))
	if n < 4 {
		return 0, false
	}
	first := r.landed[(r.nLanded-n)%len(r.landed)]
	last := r.landed[(r.nLanded-1)%len(r.landed)]
	d := last.Sub(first).Seconds()
	if d <= 0 {
		return 0, false
	}
	return float64(n-1) / d, true
}

// next follows a move's result with status: the next queued move through request, or
// the next autoplay tick.
func (r *runControl) next(status tea.Cmd, request func(back bool) tea.Cmd) tea.Cmd {
	if r.pending != 0 && r.err == nil {
		back := r.pending < 0
		if back {
			r.pending++
		} else {
			r.pending--
		}
		return tea.Batch(status, request(back))
	}
	if r.playing {
		return tea.Batch(status, r.tick())
	}
	return status
}

func (r *runControl) tick() tea.Cmd {
	msg := r.tickMsg(r.seq)
	d := time.Duration(float64(time.Second) / speeds[r.speed])
	return r.after(d, func(time.Time) tea.Msg { return msg })
}

// ticked says whether a tick with seq should move the run on.
func (r *runControl) ticked(seq int) bool { return r.playing && seq == r.seq }

// logCap is how many status messages the message log keeps.
const logCap = 100

// logEntry is one status message as the message log shows it.
type logEntry struct {
	step int
	text string
	bad  bool
}

func (r *runControl) setStatus(s string, bad bool) tea.Cmd {
	r.status, r.statusBad = s, bad
	step := 0
	if r.stepNow != nil {
		step = r.stepNow()
	}
	if len(r.log) == logCap {
		r.log = append(r.log[:0], r.log[1:]...)
	}
	r.log = append(r.log, logEntry{step, s, bad})
	r.statusSeq++
	msg := r.expiredMsg(r.statusSeq)
	return r.after(8*time.Second, func(time.Time) tea.Msg { return msg })
}

// expire clears the status if seq is its latest.
func (r *runControl) expire(seq int) {
	if seq == r.statusSeq {
		r.status = ""
	}
}

// transportKey acts on the play, step, back and speed keys, moving through request;
// handled is false for any other key.
func (r *runControl) transportKey(msg tea.KeyPressMsg, k *KeyMap, request func(back bool) tea.Cmd) (cmd tea.Cmd, handled bool) {
	switch {
	case key.Matches(msg, k.Play):
		r.playing = !r.playing
		r.nLanded = 0
		if r.playing && !r.busy {
			return request(false), true
		}
	case key.Matches(msg, k.Step):
		r.playing = false
		return request(false), true
	case key.Matches(msg, k.Back):
		r.playing = false
		return request(true), true
	case key.Matches(msg, k.Faster):
		r.speed = min(len(speeds)-1, r.speed+1)
		r.nLanded = 0
	case key.Matches(msg, k.Slower):
		r.speed = max(0, r.speed-1)
		r.nLanded = 0
	default:
		return nil, false
	}
	return nil, true
}

// playState is the header's word for the run: playing at its speed, finished or paused.
// Playing says the rate the steps land at when it falls short of the speed asked for, so
// the header never claims a rate the engine does not keep up with.
func (r *runControl) playState(finished bool) string {
	switch {
	case r.playing:
		asked := speeds[r.speed]
		if got, ok := r.achieved(); ok && got < 0.9*asked {
			return fmt.Sprintf("playing %s/s (%s/s asked)", fmtRate(got), fmt.Sprint(asked))
		}
		return fmt.Sprintf("playing %s/s", fmt.Sprint(asked))
	case finished:
		return "finished"
	}
	return "paused"
}

// footerLine is the short help keyLine, after the status message when there is one.
func (r *runControl) footerLine(st *Styles, keyLine string, w int) string {
	var rb rowBuf
	if r.status != "" {
		p := st.Accent
		if r.statusBad {
			p = st.Bad
		}
		rb.str(p, cutWords(r.status, w))
		rb.spaces(3)
	}
	if rest := w - rb.w; rest > 10 {
		rb.styled(truncate(keyLine, rest))
	}
	return rb.line(w)
}

// logBox is the message log over a screen of w×h: the newest messages that fit, newest
// last, each with the step it came at.
func (r *runControl) logBox(st *Styles, w, h int) []string {
	bw := helpWidth(w)
	inner := bw - 4
	var body []string
	for _, e := range r.log {
		p := paint("")
		if e.bad {
			p = st.Bad
		}
		for i, l := range wrap(e.text, inner-10) {
			head := fmt.Sprintf("%-9s ", fmt.Sprintf("step %d", e.step))
			if i > 0 {
				head = strings.Repeat(" ", 10)
			}
			body = append(body, st.Faint.render(head)+p.render(l))
		}
	}
	if len(body) == 0 {
		body = append(body, st.Faint.render("no messages yet"))
	}
	room := max(1, h-3)
	body = body[max(0, len(body)-room):]
	body = append(body, st.Faint.render("the last "+fmt.Sprint(logCap)+" messages are kept · any key closes"))
	return frame(st, " Messages ", padBox(body, inner), bw, min(h, len(body)+2), true)
}

// fmtRate is a rate of steps per second to two significant figures: 15, 2.5, 0.41.
func fmtRate(v float64) string {
	switch {
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
