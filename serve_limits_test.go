package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pimtui/pimtui/ui/serve"
)

var classSessions = flag.Int("class-sessions", 4, "sessions of TestServeFullHistories (a class: 30)")

// heapPeak samples the heap in use until stop is called, which returns the peak above
// the heap in use after a collection at the start.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-sampled
		return peak - min(peak, base)
	}
}

// servedFrameBound is the most heap a session at the largest drawn size may take while
// it draws: a 500×200 frame peaked at 31 MiB when measured.
const servedFrameBound = 48 << 20

// TestServeHugeTerminal: a client asking for a 10000×10000 terminal, and resizing to it
// after a normal start, gets a frame of at most 500×200 cells, and the server's heap
// stays within servedFrameBound.
func TestServeHugeTerminal(t *testing.T) {
	_, addr, logs := startServe(t, "--open")
	peak := heapPeak()
	tm := openTerm(t, mustDial(t, addr), 10000, 10000)
	tm.waitFor(t, "step 1", 0, 20*time.Second)
	waitLog(t, logs, "drawn=500×200")
	small := openTerm(t, mustDial(t, addr), 100, 30)
	small.waitFor(t, "step 1", 0, 20*time.Second)
	if err := small.s.WindowChange(10000, 10000); err != nil {
		t.Fatal(err)
	}
	small.in.Write([]byte("n"))
	if err := repaintUntil(small.out, small.s, 10000, 10000, "step 2", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	moves := cursorRE.FindAllStringSubmatch(small.out.String(), -1)
	if len(moves) == 0 {
		t.Fatal("no cursor positioning in the output to check")
	}
	for _, m := range moves {
		var row, col int
		fmt.Sscanf(m[1]+" "+m[2], "%d %d", &row, &col)
		if row > serve.MaxHeight || col > serve.MaxWidth {
			t.Fatalf("cursor moved to row %d, column %d: beyond the %d×%d frame", row, col, serve.MaxWidth, serve.MaxHeight)
		}
	}
	if p := peak(); p > 2*servedFrameBound {
		t.Fatalf("heap in use rose by %d MiB with two 10000×10000 sessions, more than %d MiB", p>>20, 2*servedFrameBound>>20)
	} else {
		t.Logf("heap in use rose by %d MiB", p>>20)
	}
	for _, s := range []*sshTerm{tm, small} {
		s.in.Write([]byte("q"))
		s.wait(t, 10*time.Second)
	}
}

var cursorRE = regexp.MustCompile(`\x1b\[(\d+);(\d+)H`)

// TestServeHandshakeLimits: a connection that does not authenticate is closed after the
// handshake deadline; beyond the cap on connections authenticating at once, a new one
// is closed at once; once they are gone a student logs in as usual, and a logged-in
// session outlives the deadline.
func TestServeHandshakeLimits(t *testing.T) {
	const limit, wait = 3, 400 * time.Millisecond
	srv, addr, logs := startServeWith(t, func(c *serve.Config) { c.MaxHandshakes, c.HandshakeTimeout = limit, wait }, "--open")

	// read reports what the server sent on conn before closing it, and when it closed.
	read := func(conn net.Conn) (string, time.Duration) {
		start := time.Now()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(conn)
		return string(b), time.Since(start)
	}
	var conns []net.Conn
	for range limit + 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		time.Sleep(20 * time.Millisecond) // in order
	}
	var wg sync.WaitGroup
	got := make([]string, len(conns))
	took := make([]time.Duration, len(conns))
	for i, c := range conns {
		wg.Go(func() { got[i], took[i] = read(c) })
	}
	wg.Wait()
	for i := range conns {
		held := i < limit
		switch {
		case held && (!strings.HasPrefix(got[i], "SSH-2.0-") || took[i] < wait/2 || took[i] > 5*time.Second):
			t.Errorf("connection %d: got %q, closed after %v; want the server's banner and a close after about %v", i, got[i], took[i], wait)
		case !held && (got[i] != "" || took[i] > wait/2):
			t.Errorf("connection %d beyond the cap of %d: got %q, closed after %v; want a close at once", i, limit, got[i], took[i])
		}
	}
	waitLog(t, logs, "already authenticating")
	for deadline := time.Now().Add(5 * time.Second); srv.Handshakes() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d handshakes counted after every connection closed", srv.Handshakes())
		}
	}
	tm := openTerm(t, mustDial(t, addr), 100, 30)
	tm.waitFor(t, "step 1", 0, 15*time.Second)
	time.Sleep(2 * wait)
	tm.in.Write([]byte("n"))
	if err := repaintUntil(tm.out, tm.s, 100, 30, "step 2", 10*time.Second); err != nil {
		t.Fatalf("the session did not outlive the handshake deadline: %v", err)
	}
	tm.in.Write([]byte("q"))
	if code := tm.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// firstFrame connects, opens a session and returns how long the explorer's first step
// took to show, and the session.
func firstFrame(t *testing.T, addr string, w, h int) (time.Duration, *sshTerm) {
	t.Helper()
	c := mustDial(t, addr)
	start := time.Now()
	tm := openTerm(t, c, w, h)
	tm.waitFor(t, "step 1", 0, 60*time.Second)
	return time.Since(start), tm
}

// TestServeResetFlood: one student holding r on Hermes (30 resets a second) leaves
// another's first frame under a second (or twice what it takes on the idle server, on a
// machine too slow for one), and the server's heap bounded: resets coalesce into one
// build at a time per session, and rebuilds share the server's build slots.
func TestServeResetFlood(t *testing.T) {
	if quick() {
		t.Skip("Hermes sessions skipped in -short mode")
	}
	_, addr, _ := startServe(t, "--open", "--preset", "hermes", "--batch", "1", "--requests", "4")
	idle, tm := firstFrame(t, addr, 120, 36)
	tm.in.Write([]byte("q"))
	tm.wait(t, 10*time.Second)

	peak := heapPeak()
	_, flood := firstFrame(t, addr, 120, 36)
	stop := make(chan struct{})
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second / 30):
				flood.in.Write([]byte("r"))
			}
		}
	}()
	time.Sleep(2 * time.Second)
	busy, other := firstFrame(t, addr, 120, 36)
	time.Sleep(2 * time.Second)
	close(stop)
	<-flooded
	p := peak()
	t.Logf("first frame %v on the idle server, %v during the flood; heap in use rose by %d MiB", idle, busy, p>>20)
	if bound := max(time.Second, 2*idle); busy > bound {
		t.Errorf("first frame took %v during a reset flood, more than %v", busy, bound)
	}
	if p > 600<<20 {
		t.Errorf("heap in use rose by %d MiB during a reset flood", p>>20)
	}
	for _, s := range []*sshTerm{flood, other} {
		s.in.Write([]byte("q"))
		s.wait(t, 20*time.Second)
	}
}

// TestServeFullHistories: sessions on the NeuPIMs preset's own workload (batch 256),
// each stepped until its history is full, hold little memory each. Go test . -run
// TestServeFullHistories -class-sessions 30 is a class.
func TestServeFullHistories(t *testing.T) {
	if quick() {
		t.Skip("full histories skipped in -short mode")
	}
	n := *classSessions
	const steps = 130 // past the explorer's 128 kept iterations
	_, addr, _ := startServe(t, "--open", "--batch", "256", "--requests", "1000", "--max-sessions", fmt.Sprint(n+1))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	terms := make([]*sshTerm, n)
	for i := range terms {
		_, terms[i] = firstFrame(t, addr, 80, 24)
		terms[i].in.Write([]byte(strings.Repeat("n", steps-1)))
	}
	for _, tm := range terms {
		if err := repaintUntil(tm.out, tm.s, 80, 24, fmt.Sprintf("step %d ", steps), 120*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	per := (ms.HeapAlloc - min(ms.HeapAlloc, base)) / uint64(n)
	t.Logf("%d sessions with %d steps each: %.1f MiB of live heap per session", n, steps, float64(per)/(1<<20))
	if per > 40<<20 {
		t.Errorf("%.1f MiB of live heap per session with a full history, more than 40 MiB", float64(per)/(1<<20))
	}
	for _, tm := range terms {
		tm.in.Write([]byte("q"))
		tm.wait(t, 20*time.Second)
	}
}
