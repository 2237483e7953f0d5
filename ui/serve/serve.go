// Package serve is pimtui's SSH server for a class: every connection that logs in gets an
// explorer of its own, built by the caller's model factory, and nothing else (no shell,
// no commands, no forwarding). It holds the host key, the authorised keys, the limits that
// keep one student from starving the others, and the sessions' lifecycle.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/wish/v2"
	"charm.land/wish/v2/bubbletea"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/pimtui/pimtui/ui"
)

// ModelFactory builds a session's explorer; color is false when the client asks for
// NO_COLOR.
type ModelFactory func(color bool) (tea.Model, error)

// Config is what a server is built from.
type Config struct {
	// HostKey is the host key file, created on first use; "" is pimtui/host_ed25519 under
	// the user's config directory.
	HostKey string
	// AuthorizedKeys is the file of public keys allowed in; "" lets anyone in who reaches
	// the port (closed classroom networks only).
	AuthorizedKeys string
	MaxSessions    int           // most sessions at once, at least 1
	IdleTimeout    time.Duration // close a session after this long without input; 0: never
	Version        string        // pimtui's version, in the SSH banner
	Log            *slog.Logger

	// MaxHandshakes and HandshakeTimeout bound connections not yet authenticated; zero
	// takes maxHandshakes (or MaxSessions when larger) and handshakeTimeout.
	MaxHandshakes    int
	HandshakeTimeout time.Duration
}

// InputError is a problem with what the user gave the server (a key file): the command
// reports it as bad input.
type InputError struct{ Err error }

func (e InputError) Error() string { return e.Err.Error() }
func (e InputError) Unwrap() error { return e.Err }

// noExport is what e and s say in a served session: an export would be written on the
// server, where the student cannot reach it, and a large one (a HeLioS trace of the kept
// iterations is about 300 MB) from each of fifty students would fill its disk.
const noExport = "exports are off over SSH (the files would stay on the server): run pimtui on your own machine to export"

// Options are the explorer options of a served session: exports off, rebuilds (a reset,
// a picked preset, a lesson step) sharing slots that leave a core to the rest of the
// class however many students ask for them, and no paper figures, whose measurement
// costs a core for a while and would start once per student. The slots are shared by
// every session built from the options returned.
func Options(o ui.Options) ui.Options {
	o.NoExport = noExport
	o.BuildSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))
	o.Figures = nil
	return o
}

// ShutdownGrace is how long a shutdown waits for sessions to say goodbye and their
// connections to close before it closes what is left.
const ShutdownGrace = 10 * time.Second

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

// MaxWidth and MaxHeight bound the frame a session draws, whatever terminal
// size its client asks for: drawing costs the server a few hundred bytes a cell while a
// frame is built (a 1000×1000 frame took about 385 MiB), so a 10000×10000 request would
// take gigabytes. A larger terminal shows the explorer in its top-left 500×200 cells,
// more than any screen shows.
const (
	MaxWidth  = 500
	MaxHeight = 200
)

// servedSize is the frame size a session draws in a w×h terminal.
func servedSize(w, h int) (int, int) {
	return min(max(w, 0), MaxWidth), min(max(h, 0), MaxHeight)
}

// Server is pimtui's SSH server: one explorer per session, nothing else.
type Server struct {
	ssh  *ssh.Server
	log  *slog.Logger
	max  int
	idle time.Duration

	newModel ModelFactory
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

// New loads or creates the host key, reads the authorised keys and builds the server;
// newModel builds each session's explorer.
func New(c Config, newModel ModelFactory) (*Server, error) {
	hostKey := c.HostKey
	if hostKey == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, InputError{fmt.Errorf("no default place for the host key (%v); give --host-key FILE", err)}
		}
		hostKey = filepath.Join(dir, "pimtui", "host_ed25519")
	}
	signer, created, err := loadHostKey(hostKey)
	if err != nil {
		return nil, err
	}
	if created {
		c.Log.Info("host key created", "path", hostKey, "fingerprint", gossh.FingerprintSHA256(signer.PublicKey()))
	}

	s := &Server{log: c.Log, max: c.MaxSessions, idle: c.IdleTimeout, newModel: newModel, sessions: map[*liveSession]struct{}{}}
	if c.MaxHandshakes == 0 {
		c.MaxHandshakes = max(maxHandshakes, c.MaxSessions)
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = handshakeTimeout
	}
	s.maxHandshakes.Store(int32(c.MaxHandshakes))
	s.handshakeWait.Store(int64(c.HandshakeTimeout))

	// The host key goes in first: without one the server would make its own.
	opts := []ssh.Option{func(srv *ssh.Server) error { srv.AddHostKey(signer); return nil }, wish.WithVersion("pimtui_" + c.Version)}
	if c.AuthorizedKeys != "" {
		if _, err := readAuthorizedKeys(c.AuthorizedKeys); err != nil {
			return nil, InputError{err}
		}
		opts = append(opts, wish.WithPublicKeyAuth(s.authorizer(c.AuthorizedKeys)))
	}
	// Without authorised keys no authentication handler is set: the server accepts every
	// client, key or no key.
	srv, err := wish.NewServer(opts...)
	if err != nil {
		return nil, err
	}
	srv.Handler = s.handle
	if c.IdleTimeout > 0 {
		// Connections that never open a session. Later than a session's own idle close,
		// which must win: it says why and sends the exit status before the connection goes.
		srv.IdleTimeout = 2*c.IdleTimeout + 5*time.Second
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

// Handshakes is how many connections are authenticating now.
func (s *Server) Handshakes() int { return int(s.handshakes.Load()) }

// handshakeKey is the context key of a connection's handshakeConn.
type handshakeKey struct{}

// handshakeConn is a connection until it has authenticated: it counts towards the
// server's handshakes and is closed if it has not authenticated in time.
type handshakeConn struct {
	net.Conn
	s     *Server
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
func (s *Server) handshake(ctx ssh.Context, conn net.Conn) net.Conn {
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

// Serve accepts connections on ln until ctx ends, then shuts down gracefully: it tells
// every session, waits up to ShutdownGrace for the connections to close, and closes the
// rest.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
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
	deadline := time.Now().Add(ShutdownGrace)
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

func (s *Server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// admit registers a session unless the server is full or closing.
func (s *Server) admit(ls *liveSession) (ok bool, why string) {
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

func (s *Server) leave(ls *liveSession) {
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
func (s *Server) handle(sess ssh.Session) {
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
func (s *Server) watchIdle(ctx context.Context, ls *liveSession, last *atomic.Int64) {
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
