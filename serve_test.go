package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"

	"github.com/pimtui/pimtui/ui/serve"
)

// syncBuf is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuf) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// serveArgs keep the explorer's engine small so that sessions start fast.
var serveArgs = []string{"--requests", "64", "--batch", "32"}

// served is a server under test: the model factory its sessions use can be swapped.
type served struct {
	*serve.Server
	model atomic.Pointer[serve.ModelFactory]
}

// setModel makes f build the sessions' explorers from now on and returns the factory
// it replaces.
func (s *served) setModel(f serve.ModelFactory) serve.ModelFactory { return *s.model.Swap(&f) }

// startServe runs `pimtui serve` with args on a free loopback port and shuts it down
// when the test ends, failing the test if the shutdown is not clean. It returns the
// server, its address and its log.
func startServe(t *testing.T, args ...string) (*served, string, *syncBuf) {
	t.Helper()
	return startServeWith(t, nil, args...)
}

// startServeWith is startServe with tune changing the server's configuration first.
func startServeWith(t *testing.T, tune func(*serve.Config), args ...string) (*served, string, *syncBuf) {
	t.Helper()
	logs := &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := &served{}
	var addr string
	c := serveCmd(logs, buildVersion(), func(c serve.Config, newModel serve.ModelFactory, _ string) error {
		if tune != nil {
			tune(&c)
		}
		srv.model.Store(&newModel)
		s, err := newServer(c, func(color bool) (tea.Model, error) { return (*srv.model.Load())(color) })
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv.Server, addr = s, ln.Addr().String()
		go func() { done <- s.Serve(ctx, ln) }()
		return nil
	})
	if !hasFlag(args, "--host-key") {
		args = append([]string{"--host-key", filepath.Join(t.TempDir(), "host_ed25519")}, args...)
	}
	c.SetArgs(append(append([]string{}, serveArgs...), args...))
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	if err := c.Execute(); err != nil {
		cancel()
		t.Fatalf("serve %v: %v", args, err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(serve.ShutdownGrace + 5*time.Second):
			t.Errorf("server did not shut down; log:\n%s", logs)
		}
	})
	return srv, addr, logs
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

func dialSSH(t *testing.T, addr string, auth ...gossh.AuthMethod) (*gossh.Client, error) {
	t.Helper()
	c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{
		User:            "student",
		Auth:            auth,
		HostKeyCallback: gossh.InsecureIgnoreHostKey(),
		Timeout:         10 * time.Second,
	})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func mustDial(t *testing.T, addr string, auth ...gossh.AuthMethod) *gossh.Client {
	t.Helper()
	c, err := dialSSH(t, addr, auth...)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

// sshTerm is one interactive session: a pty, the keyboard and the screen's byte stream.
type sshTerm struct {
	s   *gossh.Session
	in  io.WriteCloser
	out *syncBuf
}

func openTerm(t *testing.T, c *gossh.Client, w, h int, env ...string) *sshTerm {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := s.Setenv(k, v); err != nil {
			t.Fatalf("setenv: %v", err)
		}
	}
	if err := s.RequestPty("xterm-256color", h, w, gossh.TerminalModes{}); err != nil {
		t.Fatalf("pty: %v", err)
	}
	tm := &sshTerm{s: s, out: &syncBuf{}}
	s.Stdout, s.Stderr = tm.out, tm.out
	if tm.in, err = s.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.Shell(); err != nil {
		t.Fatalf("shell: %v", err)
	}
	return tm
}

// waitFor waits until the screen output after byte from contains sub once escape
// sequences are stripped, and returns the output's length then.
func (tm *sshTerm) waitFor(t *testing.T, sub string, from int, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := tm.out.String()
		if strings.Contains(ansi.Strip(s[from:]), sub) {
			return len(s)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q; output:\n%s", sub, ansi.Strip(s[from:]))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// repaintUntil resizes the client's window back and forth until the whole screen,
// repainted after a resize, shows sub. The renderer redraws only the cells that
// change, so a changed number alone would not show a whole word in the stream.
func repaintUntil(out *syncBuf, s *gossh.Session, w, h int, sub string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for i := 1; ; i++ {
		at := out.Len()
		if err := s.WindowChange(h+i%2, w+i%2); err != nil {
			return err
		}
		for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(ansi.Strip(out.String()[at:]), sub) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %q after resizes; output:\n%s", sub, ansi.Strip(out.String()[at:]))
		}
	}
}

// wait waits for the session to end and returns its exit status.
func (tm *sshTerm) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- tm.s.Wait() }()
	select {
	case err := <-errc:
		var ee *gossh.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitStatus()
		default:
			t.Fatalf("session: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("session did not end; output:\n%s", ansi.Strip(tm.out.String()))
	}
	return -1
}

func newKey(t *testing.T) (gossh.Signer, gossh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, s.PublicKey()
}

// TestServeSession: a session renders the explorer at the client's size, steps on a
// key, follows a resize, and ends with status 0 on q; the log has its start and end.
func TestServeSession(t *testing.T) {
	_, addr, logs := startServe(t, "--open")
	tm := openTerm(t, mustDial(t, addr), 110, 32)
	tm.waitFor(t, "pimtui neupims", 0, 15*time.Second)
	tm.waitFor(t, "step 1", 0, 15*time.Second)
	tm.in.Write([]byte("n"))
	if err := repaintUntil(tm.out, tm.s, 120, 36, "step 2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tm.in.Write([]byte("q"))
	if code := tm.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	waitLog(t, logs, "reason=quit")
	for _, want := range []string{"msg=\"session start\"", "remote=127.0.0.1:", "user=student", "width=110", "duration="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func waitLog(t *testing.T, logs *syncBuf, sub string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", sub, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeNoColor: a client that sends NO_COLOR gets no colour.
func TestServeNoColor(t *testing.T) {
	_, addr, _ := startServe(t, "--open")
	tm := openTerm(t, mustDial(t, addr), 100, 30, "NO_COLOR=1")
	tm.waitFor(t, "step 1", 0, 15*time.Second)
	for _, m := range sgrRE.FindAllStringSubmatch(tm.out.String(), -1) {
		for _, p := range strings.Split(m[1], ";") {
			if n, err := strconv.Atoi(p); err == nil && (n >= 30 && n <= 49 || n >= 90 && n <= 107) {
				t.Fatalf("colour sequence %q under NO_COLOR", m[0])
			}
		}
	}
	tm.in.Write([]byte("q"))
	tm.wait(t, 10*time.Second)
}

var sgrRE = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// TestServeRefusesWithoutTerminal: an exec request is refused, and a shell without a
// pty gets a polite message and status 1; agent forwarding and port forwarding are
// refused.
func TestServeRefusesWithoutTerminal(t *testing.T) {
	_, addr, logs := startServe(t, "--open")
	c := mustDial(t, addr)

	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := s.CombinedOutput("cat /etc/passwd"); err == nil {
		t.Fatalf("exec accepted: %q", out)
	}
	waitLog(t, logs, "request=exec")

	s, err = c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SendRequest("subsystem", true, gossh.Marshal(struct{ Name string }{"sftp"})); ok || err != nil {
		t.Fatalf("subsystem sftp: ok %v err %v", ok, err)
	}
	if ok, _ := s.SendRequest("auth-agent-req@openssh.com", true, nil); ok {
		t.Fatal("agent forwarding accepted")
	}
	var out syncBuf
	s.Stdout = &out
	if err := s.Shell(); err != nil {
		t.Fatalf("shell: %v", err)
	}
	var ee *gossh.ExitError
	if err := s.Wait(); !errors.As(err, &ee) || ee.ExitStatus() != 1 {
		t.Fatalf("shell without pty: %v", err)
	}
	if !strings.Contains(out.String(), "needs a terminal") {
		t.Fatalf("no polite message: %q", out.String())
	}

	if _, err := c.Listen("tcp", "127.0.0.1:0"); err == nil {
		t.Fatal("remote port forwarding accepted")
	}
	if _, err := c.Dial("tcp", addr); err == nil {
		t.Fatal("local port forwarding accepted")
	}
}

// TestServeSessionCap: with --max-sessions 1 the second session is turned away
// politely while the first one carries on.
func TestServeSessionCap(t *testing.T) {
	_, addr, logs := startServe(t, "--open", "--max-sessions", "1")
	first := openTerm(t, mustDial(t, addr), 100, 30)
	first.waitFor(t, "step 1", 0, 15*time.Second)
	second := openTerm(t, mustDial(t, addr), 100, 30)
	if code := second.wait(t, 10*time.Second); code != 1 {
		t.Fatalf("second session: status %d", code)
	}
	if !strings.Contains(second.out.String(), "class is full") {
		t.Fatalf("no polite message: %q", second.out.String())
	}
	waitLog(t, logs, "reason=\"refused: full\"")
	first.in.Write([]byte("q"))
	if code := first.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("first session: status %d", code)
	}
}

// TestServeIdleTimeout: a session without key presses is closed with a message.
func TestServeIdleTimeout(t *testing.T) {
	_, addr, logs := startServe(t, "--open", "--idle-timeout", "700ms")
	tm := openTerm(t, mustDial(t, addr), 100, 30)
	tm.waitFor(t, "step 1", 0, 15*time.Second)
	start := time.Now()
	if code := tm.wait(t, 10*time.Second); code != 1 {
		t.Fatalf("exit status %d", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closed after %v", d)
	}
	if !strings.Contains(tm.out.String(), "without a key press") {
		t.Errorf("no message: %q", ansi.Strip(tm.out.String()))
	}
	waitLog(t, logs, "reason=idle")
}

// TestServeNeedsAccessFlag: serve refuses to start open by accident.
func TestServeNeedsAccessFlag(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, []byte("not a key\n"), 0o600)
	hk := filepath.Join(t.TempDir(), "hk")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--host-key", hk}, "--authorized-keys FILE"},
		{[]string{"serve", "--host-key", hk}, "--open"},
		{[]string{"serve", "--open", "--authorized-keys", keys, "--host-key", hk}, "exclusive"},
		{[]string{"serve", "--authorized-keys", keys, "--host-key", hk}, "keys:1"},
		{[]string{"serve", "--authorized-keys", filepath.Join(hk, "none"), "--host-key", hk}, "--authorized-keys"},
		{[]string{"serve", "--open", "--max-sessions", "0", "--host-key", hk}, "--max-sessions"},
		{[]string{"serve", "--open", "--preset", "nope", "--host-key", hk}, "nope"},
		{[]string{"serve", "--open", "extra"}, "no arguments"},
	} {
		_, errs, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q)", tc.args, code, errs, tc.want)
		}
	}
}

// TestServeAuthorizedKeys: only listed keys log in; others, and clients without a key,
// are rejected.
func TestServeAuthorizedKeys(t *testing.T) {
	in, inPub := newKey(t)
	out, _ := newKey(t)
	keys := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keys, append([]byte("# class of 2026\n\n"), gossh.MarshalAuthorizedKey(inPub)...), 0o600)
	_, addr, logs := startServe(t, "--authorized-keys", keys)
	if _, err := dialSSH(t, addr, gossh.PublicKeys(out)); err == nil {
		t.Fatal("unlisted key accepted")
	}
	if _, err := dialSSH(t, addr); err == nil {
		t.Fatal("client without a key accepted")
	}
	if _, err := dialSSH(t, addr, gossh.Password("student")); err == nil {
		t.Fatal("password accepted")
	}
	waitLog(t, logs, "key rejected")
	tm := openTerm(t, mustDial(t, addr, gossh.PublicKeys(in)), 100, 30)
	tm.waitFor(t, "step 1", 0, 15*time.Second)
	tm.in.Write([]byte("q"))
	if code := tm.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// TestServeHostKey: the host key is created private and reused by the next server.
func TestServeHostKey(t *testing.T) {
	hk := filepath.Join(t.TempDir(), "pimtui", "host_ed25519")
	fingerprint := func(addr string) string {
		var fp string
		c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{User: "x", Timeout: 10 * time.Second,
			HostKeyCallback: func(_ string, _ net.Addr, k gossh.PublicKey) error {
				fp = gossh.FingerprintSHA256(k)
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		return fp
	}
	_, addr, logs := startServe(t, "--open", "--host-key", hk)
	st, err := os.Stat(hk)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("host key mode %v", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(hk)); dst.Mode().Perm() != 0o700 {
		t.Errorf("host key directory mode %v", dst.Mode().Perm())
	}
	if !strings.Contains(logs.String(), "host key created") {
		t.Errorf("creation not logged:\n%s", logs)
	}
	before, _ := os.ReadFile(hk)
	fp1 := fingerprint(addr)
	_, addr2, logs2 := startServe(t, "--open", "--host-key", hk)
	after, _ := os.ReadFile(hk)
	if !bytes.Equal(before, after) || fingerprint(addr2) != fp1 {
		t.Fatal("host key not reused")
	}
	if strings.Contains(logs2.String(), "host key created") {
		t.Error("host key created again")
	}
	if _, err := os.Stat("id_ed25519"); err == nil {
		t.Error("a key was written to the working directory")
	}
	os.Chmod(hk, 0o644)
	if _, errs, code := cli(t, "serve", "--open", "--host-key", hk); code != 2 || !strings.Contains(errs, "chmod 600") {
		t.Errorf("world-readable host key: exit %d %q", code, errs)
	}
}

// TestServeDisconnectMidFrame: a client that vanishes while its screen is being drawn
// (autoplay on, connection cut) leaves the server serving others.
func TestServeDisconnectMidFrame(t *testing.T) {
	_, addr, logs := startServe(t, "--open")
	c := mustDial(t, addr)
	tm := openTerm(t, c, 160, 50)
	tm.waitFor(t, "step 1", 0, 15*time.Second)
	tm.in.Write([]byte(" +++"))
	tm.waitFor(t, "playing", 0, 10*time.Second)
	c.Close()
	waitLog(t, logs, "reason=disconnected")

	tm2 := openTerm(t, mustDial(t, addr), 100, 30)
	tm2.waitFor(t, "step 1", 0, 15*time.Second)
	tm2.in.Write([]byte("q"))
	if code := tm2.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit status %d", code)
	}
}

// panicModel panics on x, to show that a session's panic ends only that session.
type panicModel struct{}

func (panicModel) Init() tea.Cmd { return nil }
func (m panicModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch k.String() {
		case "x":
			panic("boom")
		case "q":
			return m, tea.Quit
		}
	}
	return m, nil
}
func (panicModel) View() tea.View { return tea.NewView("panic model ready") }

// TestServePanicIsolated: a panic ends its session with status 1; the server and the
// other sessions carry on.
func TestServePanicIsolated(t *testing.T) {
	srv, addr, logs := startServe(t, "--open")
	other := openTerm(t, mustDial(t, addr), 100, 30)
	other.waitFor(t, "step 1", 0, 15*time.Second)

	explorer := srv.setModel(func(bool) (tea.Model, error) { return panicModel{}, nil })
	tm := openTerm(t, mustDial(t, addr), 80, 24)
	tm.waitFor(t, "panic model ready", 0, 10*time.Second)
	srv.setModel(explorer)
	tm.in.Write([]byte("x"))
	if code := tm.wait(t, 10*time.Second); code != 1 {
		t.Fatalf("exit status %d", code)
	}
	waitLog(t, logs, "reason=panic")

	other.in.Write([]byte("n"))
	if err := repaintUntil(other.out, other.s, 100, 30, "step 2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	other.in.Write([]byte("q"))
	if code := other.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("other session: status %d", code)
	}
}

// TestServeShutdown: a shutdown says goodbye to the sessions and ends them.
func TestServeShutdown(t *testing.T) {
	logs := &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var addr string
	c := serveCmd(logs, buildVersion(), func(c serve.Config, newModel serve.ModelFactory, _ string) error {
		s, err := newServer(c, newModel)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr = ln.Addr().String()
		go func() { done <- s.Serve(ctx, ln) }()
		return nil
	})
	c.SetArgs(append([]string{"--open", "--host-key", filepath.Join(t.TempDir(), "hk")}, serveArgs...))
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	tm := openTerm(t, mustDial(t, addr), 100, 30)
	tm.waitFor(t, "step 1", 0, 15*time.Second)
	start := time.Now()
	cancel()
	if code := tm.wait(t, 10*time.Second); code != 1 {
		t.Errorf("exit status %d", code)
	}
	if !strings.Contains(tm.out.String(), "shutting down") {
		t.Errorf("no goodbye: %q", ansi.Strip(tm.out.String()))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(serve.ShutdownGrace + 5*time.Second):
		t.Fatal("no shutdown")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if !strings.Contains(logs.String(), "msg=stopped") {
		t.Errorf("log:\n%s", logs)
	}
}

// TestServeFiftySessions: a class of fifty steps at once on loopback, within a bounded
// time and without errors.
func TestServeFiftySessions(t *testing.T) {
	if quick() {
		t.Skip("50 sessions skipped in -short mode")
	}
	const n, steps = 50, 3
	_, addr, logs := startServe(t, "--open", "--max-sessions", "60")
	peak := heapPeak()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := classSession(addr, 80+i%40, 24+i%10, steps); err != nil {
				errs <- fmt.Errorf("session %d: %w", i, err)
			}
		}(i)
	}
	wg.Wait()
	rise := peak()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	d := time.Since(start)
	t.Logf("%d sessions × %d steps in %v, heap in use peaked %d MiB above the idle server's", n, steps, d, rise>>20)
	if rise > 512<<20 {
		t.Errorf("heap grew by %d MiB", rise>>20)
	}
	if d > 45*time.Second {
		t.Errorf("took %v", d)
	}
	waitLog(t, logs, "reason=quit")
	if got := strings.Count(logs.String(), "reason=quit"); got != n {
		time.Sleep(time.Second)
		if got = strings.Count(logs.String(), "reason=quit"); got != n {
			t.Errorf("%d sessions ended by quitting, want %d", got, n)
		}
	}
}

// classSession is one student: connect, wait for the explorer, step, check, quit.
func classSession(addr string, w, h, steps int) error {
	c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{User: "student", HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 20 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	if err := s.RequestPty("xterm-256color", h, w, gossh.TerminalModes{}); err != nil {
		return err
	}
	out := &syncBuf{}
	s.Stdout = out
	in, err := s.StdinPipe()
	if err != nil {
		return err
	}
	if err := s.Shell(); err != nil {
		return err
	}
	wait := func(sub string, from int) (int, error) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			o := out.String()
			if strings.Contains(ansi.Strip(o[from:]), sub) {
				return len(o), nil
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("no %q in %q", sub, ansi.Strip(o[from:]))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if _, err := wait("step 1", 0); err != nil {
		return err
	}
	for i := 0; i < steps; i++ {
		in.Write([]byte("n"))
		time.Sleep(20 * time.Millisecond)
	}
	if err := repaintUntil(out, s, w, h, fmt.Sprintf("step %d ", steps+1), 30*time.Second); err != nil {
		return err
	}
	in.Write([]byte("q"))
	errc := make(chan error, 1)
	go func() { errc <- s.Wait() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("did not quit")
	}
}

// TestServeOpenSSH: the OpenSSH client, in a terminal (tmux), gets the explorer, steps,
// resizes and quits with status 0; asking for a command instead is refused.
func TestServeOpenSSH(t *testing.T) {
	if quick() {
		t.Skip("OpenSSH test skipped in -short mode")
	}
	for _, tool := range []string{"ssh", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	_, addr, _ := startServe(t, "--open")
	host, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	sock := "pimtui-serve-" + filepath.Base(dir)
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() { tmux("kill-server") })
	ssh := "ssh -p " + port + " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile=/dev/null student@" + host
	rc := filepath.Join(dir, "rc")
	tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "36", "env -u TMUX "+ssh+"; echo $? > "+rc+"; sleep 30")
	waitFor := func(sub string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			s := tmux("capture-pane", "-p", "-t", "t")
			if strings.Contains(s, sub) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %q; screen:\n%s", sub, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("pimtui neupims")
	waitFor("step 1 ")
	tmux("send-keys", "-t", "t", "n")
	waitFor("step 2 ")
	tmux("resize-window", "-t", "t", "-x", "30", "-y", "8")
	waitFor("terminal too small")
	tmux("resize-window", "-t", "t", "-x", "100", "-y", "30")
	waitFor("step 2 ")
	tmux("send-keys", "-t", "t", "q")
	if got := waitFile(t, rc); got != "0" {
		t.Fatalf("exit status %s", got)
	}

	out, err := exec.Command("sh", "-c", ssh+" cat /etc/passwd").CombinedOutput()
	if err == nil || strings.Contains(string(out), "root:") {
		t.Fatalf("command accepted: %v %s", err, out)
	}
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if s := strings.TrimSpace(string(b)); s != "" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
