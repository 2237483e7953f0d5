package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/wish/v2"
	"charm.land/wish/v2/bubbletea"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/ssh"
	"github.com/spf13/cobra"
	gossh "golang.org/x/crypto/ssh"

	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
	"github.com/pimtui/pimtui/ui/outfile"
)

// shutdownGrace is how long a shutdown waits for sessions to say goodbye and their
// connections to close before it closes what is left.
const shutdownGrace = 10 * time.Second

// quitGrace is how long a session's explorer gets to quit on its own (restoring the
// client's terminal) before the session is closed under it.
const quitGrace = 2 * time.Second

// handshakeTimeout is how long a connection may take to authenticate before it is
// closed, and maxHandshakes (at least; --max-sessions when larger) how many connections
// may be authenticating at once: further ones are closed at once, so a flood of idle
// TCP connections cannot hold the server's descriptors.
const (
	handshakeTimeout = 20 * time.Second
	maxHandshakes    = 64
)

// maxServedWidth and maxServedHeight bound the frame a session draws, whatever terminal
// size its client asks for: drawing costs the server a few hundred bytes a cell while a
// frame is built (a 1000×1000 frame took about 385 MiB), so a 10000×10000 request would
// take gigabytes. A larger terminal shows the explorer in its top-left 500×200 cells,
// more than any screen shows.
const (
	maxServedWidth  = 500
	maxServedHeight = 200
)

// servedSize is the frame size a session draws in a w×h terminal.
func servedSize(w, h int) (int, int) {
	return min(max(w, 0), maxServedWidth), min(max(h, 0), maxServedHeight)
}

// serveFlags are the flags of `pimtui serve` besides the shared options.
type serveFlags struct {
	addr, hostKey, authorizedKeys string
	lesson                        string
	open                          bool
	maxSessions                   int
	idleTimeout                   time.Duration
}

func newServeCmd(stderr io.Writer) *cobra.Command {
	return serveCmd(stderr, func(s *server, addr string) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return s.serve(ctx, ln)
	})
}

// serveCmd is `pimtui serve`, with start running the server it builds.
func serveCmd(stderr io.Writer, start func(s *server, addr string) error) *cobra.Command {
	var o options
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the explorer over SSH: every connection gets an explorer of its own",
		Long: `serve runs an SSH server for a class: everyone connects with ssh -p 2222 HOST and
gets an explorer of their own, with its own engine, at their terminal's size and colours.

Connections offer nothing else: no shell, no commands, no file transfer, no port or
agent forwarding. Logging in needs a key listed in --authorized-keys, or, on a closed
classroom network only, --open lets anyone who reaches the port in. The host key is
created once (private, 0600) and reused, so students are asked to trust it only once.

One student cannot starve the others: a session draws at most 500×200 cells whatever
its terminal's size, builds one engine at a time, and rebuilds share the server's cores
with one left over; a connection must log in within 20 s.`,
		Example: `  pimtui serve --authorized-keys class_keys --max-sessions 60
  pimtui serve --open --addr :2222 --preset npu-pim --idle-timeout 20m`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("serve takes no arguments, got %q (pimtui serve --help lists the flags)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := newServer(cmd, &o, f, slog.New(slog.NewTextHandler(stderr, nil)))
			if err != nil {
				return err
			}
			return start(s, f.addr)
		},
	}
	o.register(c)
	fl := c.Flags()
	fl.BoolVar(&o.noMouse, "no-mouse", false, "leave the mouse to the students' terminals so text can be selected")
	fl.StringVar(&f.addr, "addr", ":2222", "HOST:PORT to listen on")
	fl.StringVar(&f.hostKey, "host-key", "", "host key file, created on first use (default: pimtui/host_ed25519 under the user's config directory)")
	fl.StringVar(&f.authorizedKeys, "authorized-keys", "", "file of public keys allowed to log in, one per line in authorized_keys format")
	fl.BoolVar(&f.open, "open", false, "let anyone who reaches the port in, without a key (closed classroom networks only)")
	fl.IntVar(&f.maxSessions, "max-sessions", 64, "most sessions at once; the next one is turned away politely")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 30*time.Minute, "close a session after this long without a key press or resize (0: never)")
	fl.StringVar(&f.lesson, "lesson", "", "open every session on this lesson (pimtui lesson --list lists them)")
	return c
}

// server is pimtui's SSH server: one explorer per session, nothing else.
type server struct {
	ssh  *ssh.Server
	log  *slog.Logger
	max  int
	idle time.Duration

	// newModel builds a session's explorer; tests replace it.
	newModel func(color bool) (tea.Model, error)
	mu       sync.Mutex
	sessions map[*liveSession]struct{}
	closing  bool

	// Connections not yet authenticated: how many, at most how many, and how long each
	// may take (tests shorten it).
	handshakes    atomic.Int32
	maxHandshakes atomic.Int32
	handshakeWait atomic.Int64
}

// liveSession is a running explorer the server may have to stop.
type liveSession struct {
	sess ssh.Session
	p    *tea.Program // set under server.mu once built
	once sync.Once
	why  atomic.Value // string: why the server ended it
}

// stop asks the explorer to quit, restoring the client's terminal, and closes the
// session if it has not managed within quitGrace (a client that stopped reading can
// block it in a write).
func (ls *liveSession) stop(why string) {
	ls.once.Do(func() {
		ls.why.Store(why)
		go func() {
			go ls.p.Quit()
			t := time.NewTimer(quitGrace)
			defer t.Stop()
			select {
			case <-ls.sess.Context().Done():
				return
			case <-t.C:
			}
			ls.p.Kill()
			ls.sess.Close()
		}()
	})
}

// newServer checks the serve flags, loads or creates the host key and builds the
// server. Every problem with the command line is a usage error.
func newServer(cmd *cobra.Command, o *options, f serveFlags, log *slog.Logger) (*server, error) {
	switch {
	case f.authorizedKeys == "" && !f.open:
		return nil, usagef("serve needs --authorized-keys FILE (the public keys allowed in) or, on a closed classroom network, --open (anyone who reaches the port)")
	case f.authorizedKeys != "" && f.open:
		return nil, usagef("--authorized-keys and --open are exclusive; pick one")
	case f.maxSessions < 1:
		return nil, usagef("--max-sessions %d: want at least 1", f.maxSessions)
	case f.idleTimeout < 0:
		return nil, usagef("--idle-timeout %v: want a positive duration, or 0 for none", f.idleTimeout)
	}
	_, cfg, err := o.resolve(cmd)
	if err != nil {
		return nil, err
	}
	if f.lesson != "" && cmd.Flags().Changed("preset") {
		return nil, usagef("--lesson opens every session on the lesson's own presets; drop --preset")
	}
	sets, err := o.overrides(cmd)
	if err != nil {
		return nil, err
	}
	lessons, cfg, err := startLesson(f.lesson, sets, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := sim.New(cfg); err != nil {
		return nil, usagef("%s: %v", cfg.Preset, err)
	}
	hostKey := f.hostKey
	if hostKey == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, usagef("no default place for the host key (%v); give --host-key FILE", err)
		}
		hostKey = filepath.Join(dir, "pimtui", "host_ed25519")
	}
	signer, created, err := loadHostKey(hostKey)
	if err != nil {
		return nil, err
	}
	if created {
		log.Info("host key created", "path", hostKey, "fingerprint", gossh.FingerprintSHA256(signer.PublicKey()))
	}

	list, load := presetList(), o.loader(cmd)
	s := &server{log: log, max: f.maxSessions, idle: f.idleTimeout, sessions: map[*liveSession]struct{}{}}
	s.maxHandshakes.Store(int32(max(maxHandshakes, f.maxSessions)))
	s.handshakeWait.Store(int64(handshakeTimeout))
	// Rebuilds (a reset, a picked preset, a lesson step) leave a core to the rest of
	// the class however many students ask for them.
	slots := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))
	// No Figures: measuring the paper's experiments costs a core for a while, and a
	// class would start one measurement per student.
	s.newModel = func(color bool) (tea.Model, error) {
		return ui.New(cfg, ui.Options{Color: color, NoMouse: o.noMouse, Presets: list, Load: load, NoExport: servedNoExport, LessonOptions: lessons, BuildSlots: slots})
	}

	// The host key goes in first: without one the server would make its own.
	opts := []ssh.Option{func(srv *ssh.Server) error { srv.AddHostKey(signer); return nil }, wish.WithVersion("pimtui_" + buildVersion())}
	if f.authorizedKeys != "" {
		if _, err := readAuthorizedKeys(f.authorizedKeys); err != nil {
			return nil, usageError{err}
		}
		opts = append(opts, wish.WithPublicKeyAuth(s.authorizer(f.authorizedKeys)))
	}
	// With --open no authentication handler is set: the server accepts every client,
	// key or no key.
	srv, err := wish.NewServer(opts...)
	if err != nil {
		return nil, err
	}
	srv.Handler = s.handle
	if f.idleTimeout > 0 {
		// Connections that never open a session. Later than a session's own idle close,
		// which must win: it says why and sends the exit status before the connection goes.
		srv.IdleTimeout = 2*f.idleTimeout + 5*time.Second
	}
	srv.SessionRequestCallback = func(sess ssh.Session, kind string) bool {
		if kind == "shell" {
			return true
		}
		s.log.Info("request denied", "remote", sess.RemoteAddr().String(), "user", sess.User(), "request", kind)
		return false
	}
	srv.ChannelHandlers = map[string]ssh.ChannelHandler{"session": sessionWithoutForwarding}
	srv.RequestHandlers = map[string]ssh.RequestHandler{}
	srv.SubsystemHandlers = map[string]ssh.SubsystemHandler{}
	srv.ConnectionFailedCallback = func(conn net.Conn, err error) {
		s.log.Info("connection failed", "remote", conn.RemoteAddr().String(), "reason", err.Error())
	}
	srv.ConnCallback = s.handshake
	srv.ServerConfigCallback = func(ctx ssh.Context) *gossh.ServerConfig {
		hc, _ := ctx.Value(handshakeKey{}).(*handshakeConn)
		return &gossh.ServerConfig{AuthLogCallback: func(_ gossh.ConnMetadata, _ string, err error) {
			if err == nil && hc != nil {
				hc.end()
			}
		}}
	}
	s.ssh = srv
	return s, nil
}

// handshakeKey is the context key of a connection's handshakeConn.
type handshakeKey struct{}

// handshakeConn is a connection until it has authenticated: it counts towards the
// server's handshakes and is closed if it has not authenticated in time.
type handshakeConn struct {
	net.Conn
	s     *server
	timer *time.Timer
	once  sync.Once
}

// end takes the connection out of the handshakes: it authenticated, or it closed.
func (hc *handshakeConn) end() {
	hc.once.Do(func() {
		hc.timer.Stop()
		hc.s.handshakes.Add(-1)
	})
}

func (hc *handshakeConn) Close() error {
	hc.end()
	return hc.Conn.Close()
}

// handshake admits a new connection unless too many are authenticating already, and
// gives it s.handshakeWait to authenticate.
func (s *server) handshake(ctx ssh.Context, conn net.Conn) net.Conn {
	if n := s.maxHandshakes.Load(); s.handshakes.Add(1) > n {
		s.handshakes.Add(-1)
		s.log.Warn("connection refused", "remote", conn.RemoteAddr().String(), "reason", fmt.Sprintf("%d connections already authenticating", n))
		return nil
	}
	hc := &handshakeConn{Conn: conn, s: s}
	hc.timer = time.AfterFunc(time.Duration(s.handshakeWait.Load()), func() { conn.Close() })
	ctx.SetValue(handshakeKey{}, hc)
	return hc
}

// servedNoExport is what e and s say in a served session: an export would be written on
// the server, where the student cannot reach it, and a large one (a HeLioS trace of the
// kept iterations is about 300 MB) from each of fifty students would fill its disk.
const servedNoExport = "exports are off over SSH (the files would stay on the server): run pimtui on your own machine to export"

// serve accepts connections on ln until ctx ends, then shuts down gracefully: it tells
// every session, waits up to shutdownGrace for the connections to close, and closes the
// rest.
func (s *server) serve(ctx context.Context, ln net.Listener) error {
	s.log.Info("listening", "addr", ln.Addr().String(), "max_sessions", s.max, "idle_timeout", s.idle.String())
	errc := make(chan error, 1)
	go func() { errc <- s.ssh.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down", "sessions", s.count())
	s.mu.Lock()
	s.closing = true
	for ls := range s.sessions {
		if ls.p != nil {
			ls.stop("server shutdown")
		}
	}
	s.mu.Unlock()
	// Sessions end within quitGrace; connections without a session are closed after.
	deadline := time.Now().Add(shutdownGrace)
	for s.count() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.ssh.Shutdown(sctx); err != nil {
		s.ssh.Close()
	}
	<-errc
	s.log.Info("stopped")
	return nil
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// admit registers a session unless the server is full or closing.
func (s *server) admit(ls *liveSession) (ok bool, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return false, "server shutting down"
	case len(s.sessions) >= s.max:
		return false, "full"
	}
	s.sessions[ls] = struct{}{}
	return true, ""
}

func (s *server) leave(ls *liveSession) {
	s.mu.Lock()
	delete(s.sessions, ls)
	s.mu.Unlock()
}

// say writes a message for the person at the other end, on lines of its own.
func say(sess ssh.Session, format string, a ...any) {
	fmt.Fprintf(sess, "\r\n"+format+"\r\n", a...)
}

// handle runs one session: an explorer at the client's terminal size, until the user
// quits, disconnects, idles too long or the server shuts down. Nothing that happens in
// it reaches another session.
func (s *server) handle(sess ssh.Session) {
	start := time.Now()
	remote, user := sess.RemoteAddr().String(), sess.User()
	reason, status := "quit", 0
	defer func() {
		if r := recover(); r != nil {
			reason, status = fmt.Sprintf("panic: %v", r), 1
			say(sess, "Sorry, the explorer stopped on an internal error. Reconnect to start afresh.")
		}
		s.log.Info("session end", "remote", remote, "user", user, "duration", time.Since(start).Round(time.Millisecond).String(), "reason", reason)
		sess.Exit(status)
	}()

	pty, winCh, ok := sess.Pty()
	if !ok {
		reason, status = "no terminal", 1
		say(sess, "pimtui is an interactive explorer and needs a terminal: connect with plain `ssh -p PORT HOST` (or add -t).")
		return
	}
	env := sess.Environ()
	noColor := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NO_COLOR="); ok && v != "" {
			noColor = true
		}
	}
	ls := &liveSession{sess: sess}
	if ok, why := s.admit(ls); !ok {
		reason, status = "refused: "+why, 1
		if why == "full" {
			say(sess, "Sorry, the class is full: all %d places are taken. Please try again in a little while.", s.max)
		} else {
			say(sess, "Sorry, the server is shutting down.")
		}
		return
	}
	defer s.leave(ls)
	model, err := s.newModel(!noColor)
	if err != nil {
		reason, status = "explorer: "+err.Error(), 1
		say(sess, "Sorry, the explorer could not start: %v", err)
		return
	}
	last := new(atomic.Int64)
	last.Store(time.Now().UnixNano())
	w, h := servedSize(pty.Window.Width, pty.Window.Height)
	opts := append(bubbletea.MakeOptions(sess),
		tea.WithWindowSize(w, h),
		tea.WithContext(sess.Context()),
		tea.WithInput(activityReader{sess, last}),
		tea.WithoutSignalHandler(),
		// No job control over SSH: a suspend resumes at once.
		tea.WithFilter(func(_ tea.Model, msg tea.Msg) tea.Msg {
			if _, ok := msg.(tea.SuspendMsg); ok {
				return tea.ResumeMsg{}
			}
			return msg
		}))
	if noColor {
		opts = append(opts, tea.WithColorProfile(colorprofile.ASCII))
	}
	p := tea.NewProgram(model, opts...)
	s.mu.Lock()
	ls.p = p
	closing := s.closing
	s.mu.Unlock()
	if closing {
		ls.stop("server shutdown")
	}
	s.log.Info("session start", "remote", remote, "user", user, "term", pty.Term, "width", pty.Window.Width, "height", pty.Window.Height, "drawn", fmt.Sprintf("%d×%d", w, h), "no_color", noColor)

	ctx, cancel := context.WithCancel(sess.Context())
	defer cancel()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case win, ok := <-winCh:
				if !ok {
					return
				}
				last.Store(time.Now().UnixNano())
				w, h := servedSize(win.Width, win.Height)
				p.Send(tea.WindowSizeMsg{Width: w, Height: h})
			}
		}
	}()
	if s.idle > 0 {
		go s.watchIdle(ctx, ls, last)
	}

	_, err = p.Run()
	why, _ := ls.why.Load().(string)
	switch {
	case errors.Is(err, tea.ErrProgramPanic):
		reason, status = "panic", 1
		say(sess, "Sorry, the explorer stopped on an internal error. Reconnect to start afresh.")
	case sess.Context().Err() != nil:
		reason, status = "disconnected", 1
	case why == "idle":
		reason, status = "idle", 1
		say(sess, "Closed after %v without a key press. Reconnect any time.", s.idle)
	case why != "":
		reason, status = why, 1
		say(sess, "The server is shutting down. Thank you!")
	case err != nil:
		reason, status = "error: "+err.Error(), 1
	}
}

// watchIdle ends the session once no key press or resize has come for s.idle.
func (s *server) watchIdle(ctx context.Context, ls *liveSession, last *atomic.Int64) {
	every := min(max(s.idle/10, 10*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(time.Unix(0, last.Load())) >= s.idle {
				ls.stop("idle")
				return
			}
		}
	}
}

// activityReader notes the time of every read from the client.
type activityReader struct {
	r    io.Reader
	last *atomic.Int64
}

func (a activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// sessionWithoutForwarding is the standard session channel, minus agent and X11
// forwarding requests, which it refuses.
func sessionWithoutForwarding(srv *ssh.Server, conn *gossh.ServerConn, nc gossh.NewChannel, ctx ssh.Context) {
	ssh.DefaultSessionHandler(srv, conn, filteredChannel{nc}, ctx)
}

type filteredChannel struct{ gossh.NewChannel }

func (f filteredChannel) Accept() (gossh.Channel, <-chan *gossh.Request, error) {
	ch, reqs, err := f.NewChannel.Accept()
	if err != nil {
		return ch, reqs, err
	}
	out := make(chan *gossh.Request)
	go func() {
		defer close(out)
		for r := range reqs {
			switch r.Type {
			case "auth-agent-req@openssh.com", "x11-req":
				if r.WantReply {
					r.Reply(false, nil)
				}
				continue
			}
			out <- r
		}
	}()
	return ch, out, nil
}

// authorizer lets in the keys listed in path. The file is read again at each login,
// so keys added during a class count at once.
func (s *server) authorizer(path string) ssh.PublicKeyHandler {
	return func(ctx ssh.Context, key ssh.PublicKey) bool {
		keys, err := readAuthorizedKeys(path)
		if err != nil {
			s.log.Warn("authorized keys unreadable", "path", path, "reason", err.Error())
			return false
		}
		for _, k := range keys {
			if ssh.KeysEqual(k, key) {
				return true
			}
		}
		s.log.Info("key rejected", "remote", ctx.RemoteAddr().String(), "user", ctx.User(), "key", gossh.FingerprintSHA256(key))
		return false
	}
}

// readAuthorizedKeys parses an authorized_keys file; blank lines and # comments are
// skipped, and a line that is not a key is an error naming it.
func readAuthorizedKeys(path string) ([]ssh.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--authorized-keys: %w", err)
	}
	var keys []ssh.PublicKey
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		k, _, _, _, err := gossh.ParseAuthorizedKey(line)
		if err != nil {
			return nil, fmt.Errorf("--authorized-keys %s:%d: %v", path, n, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--authorized-keys %s: no keys in the file", path)
	}
	return keys, sc.Err()
}

// loadHostKey reads the host key at path, or creates an ed25519 one there (in a
// directory private to the user, mode 0600) when there is none. The path must be a
// regular file or new, as for every file pimtui writes.
func loadHostKey(path string) (signer gossh.Signer, created bool, err error) {
	if err := outfile.Check(path); err != nil {
		return nil, false, usagef("--host-key: %v", err)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if data, err = newHostKey(path); err != nil {
			return nil, false, fmt.Errorf("create host key: %w", err)
		}
		created = true
	} else if err != nil {
		return nil, false, usagef("--host-key: %v", err)
	} else if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, false, usagef("host key %s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	signer, err = gossh.ParsePrivateKey(data)
	if err != nil {
		return nil, false, usagef("host key %s: %v", path, err)
	}
	return signer, created, nil
}

func newHostKey(path string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := gossh.MarshalPrivateKey(priv, "pimtui host key")
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(block)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return data, outfile.WriteNew(path, 0o600, data)
}
