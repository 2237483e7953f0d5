package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"

	"github.com/pimtui/pimtui/sim"
	"github.com/pimtui/pimtui/ui"
	"github.com/pimtui/pimtui/ui/serve"
)

// serveFlags are the flags of `pimtui serve` besides the shared options.
type serveFlags struct {
	addr, hostKey, authorizedKeys string
	lesson                        string
	open                          bool
	maxSessions                   int
	idleTimeout                   time.Duration
}

func newServeCmd(stderr io.Writer, version string) *cobra.Command {
	return serveCmd(stderr, version, func(c serve.Config, newModel serve.ModelFactory, addr string) error {
		s, err := newServer(c, newModel)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return s.Serve(ctx, ln)
	})
}

// serveCmd is `pimtui serve`, with start building and running the server its flags
// describe.
func serveCmd(stderr io.Writer, version string, start func(c serve.Config, newModel serve.ModelFactory, addr string) error) *cobra.Command {
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
			newModel, err := f.check(cmd, &o)
			if err != nil {
				return err
			}
			return start(serve.Config{HostKey: f.hostKey, AuthorizedKeys: f.authorizedKeys, MaxSessions: f.maxSessions,
				IdleTimeout: f.idleTimeout, Version: version, Log: slog.New(slog.NewTextHandler(stderr, nil))}, newModel, f.addr)
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

// check checks the serve flags and the explorer they open, and returns what builds each
// session's explorer. Every problem with the command line is a usage error.
func (f serveFlags) check(cmd *cobra.Command, o *options) (serve.ModelFactory, error) {
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
	cfg = liftSteps(cfg, sets)
	if _, err := sim.New(cfg); err != nil {
		return nil, usagef("%s: %v", cfg.Preset, err)
	}
	opts := serve.Options(ui.Options{NoMouse: o.noMouse, Presets: presetList(), Load: o.loader(cmd), LessonOptions: lessons})
	return func(color bool) (tea.Model, error) {
		opts := opts
		opts.Color = color
		return ui.New(cfg, opts)
	}, nil
}

// newServer builds the server; a bad key file is a usage error.
func newServer(c serve.Config, newModel serve.ModelFactory) (*serve.Server, error) {
	s, err := serve.New(c, newModel)
	var bad serve.InputError
	if errors.As(err, &bad) {
		return nil, usageError{err}
	}
	return s, err
}
