// Command luamcp serves Model Context Protocol servers written in Lua over
// Streamable HTTP: every *.lua file in a folder is one server.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/luamcp/luamcp/bridge/hostlib"
	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/edge"
	"github.com/luamcp/luamcp/luavm"
	"github.com/luamcp/luamcp/mcp"
)

// version is the release this source tree builds.
const version = "0.1.0-dev"

// HTTP server limits. There is no ReadTimeout or WriteTimeout: event streams
// and long tool calls stay open as long as they need (sessions have their own
// idle TTL), and package mcp bounds each POST body read and each write to a
// client itself (mcp.Options.BodyTimeout, WriteTimeout). An HTTP/2
// connection, whose streams share one writer, is closed when it takes no
// byte for as long as one write may take (edge.Config.WriteTimeout).
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 10 * time.Second
)

func main() {
	hostlib.UserAgent = "luamcp/" + version
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "luamcp:", err)
		os.Exit(1)
	}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "luamcp",
		Usage:     "serve MCP servers written in Lua",
		Version:   version,
		Writer:    stdout,
		ErrWriter: stderr,
		Action:    unknownCommand,
		Commands: []*cli.Command{
			{
				Name:      "serve",
				Usage:     "mount every *.lua file of a folder as an MCP server",
				ArgsUsage: "[DIR] (default: --dir, else scripts)",
				Before:    flagsFirst,
				Action:    serve,
				Flags: fromEnv(append([]cli.Flag{
					&cli.StringFlag{Name: "dir", Value: "scripts", Usage: "folder of *.lua servers (sub-folders hold modules)"},
					&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8750", Usage: "address to listen on"},
					&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
					&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json"},
					&cli.BoolFlag{Name: "no-watch", Usage: "do not reload scripts when their files change"},
					accessLogFlag(),
					&cli.DurationFlag{Name: "drain", Usage: "on SIGTERM or SIGINT, first answer 503 on /readyz and keep serving this long (a load balancer's or Kubernetes' time to stop sending traffic), then shut down"},
					&cli.StringFlag{Name: "watch-poll", Value: "auto", Usage: "also look at the folder every DURATION (1s), for folders that send no file events (NFS, SMB, WSL's Windows drives); auto: on such filesystems only; off: never"},
					&cli.DurationFlag{Name: "call-timeout", Value: luavm.DefaultCallTimeout, Usage: "hard cap on one callback of a route that sets no call_timeout_ms"},
					&cli.IntFlag{Name: "max-running", Usage: "Lua calls running at once, shared fairly by the routes; 0: 4 × GOMAXPROCS"},
					&cli.IntFlag{Name: "max-sessions", Value: mcp.DefaultMaxSessions, Usage: "live sessions across all routes; an initialize past it gets 503"},
					&cli.IntFlag{Name: "max-listens", Value: mcp.DefaultMaxListens, Usage: "open subscriptions/listen streams (2026-07-28) across all routes; a listen past it gets 503"},
					&cli.IntFlag{Name: "max-stateless", Value: mcp.DefaultMaxStateless, Usage: "open requests served without a session (stateless routes, 2026-07-28) across all routes; one past it gets 503"},
					&cli.IntFlag{Name: "replay-budget-mb", Value: mcp.DefaultReplayBudget >> 20, Usage: "events (MiB) all sessions and listen streams together keep for clients to read or resume; past it a stream pushed to gives up its own oldest events"},
					&cli.IntFlag{Name: "body-budget-mb", Value: mcp.DefaultBodyBudget >> 20, Usage: "POST bodies (MiB) all routes together hold while they arrive, with their requests' headers, and calls waiting in their session's queue; past it a request gets 503"},
					&cli.IntFlag{Name: "max-connections", Usage: "open TCP connections; past it new ones wait for one to close. 0: three quarters of the open-file limit"},
					&cli.IntFlag{Name: "max-header-kb", Value: edge.DefaultMaxHeaderBytes >> 10, Usage: "a request's headers (KiB); past it HTTP/1.1 answers 431, and HTTP/2 and HTTP/3 tell the client the limit"},
					&cli.IntFlag{Name: "memory-limit-mb", Value: luavm.DefaultMemoryLimit >> 20, Usage: "process heap (MiB) past which the Lua call holding the most memory is cancelled"},
					&cli.StringFlag{Name: "sessions-file", Usage: "on shutdown, save the live sessions of session-mode routes to FILE (0600), and resume them from it at the next start (it is then removed): clients keep their Mcp-Session-Id and state across a restart"},
					&cli.StringFlag{Name: "state-key-file", Usage: "file holding the key (16 bytes or more) that signs the 2026-07-28 era's requestState; default: $" + stateKeyEnv + ", else random per process"},
					envFileFlag(),
					metricsFlag(),
					// TLS, HTTP/2, HTTP/3 (internal/edge).
					&cli.StringFlag{Name: "tls-cert", Usage: "PEM certificate chain: serve HTTPS, with HTTP/2 (needs --tls-key)"},
					&cli.StringFlag{Name: "tls-key", Usage: "PEM private key of --tls-cert"},
					&cli.BoolFlag{Name: "http3", Usage: "also serve HTTP/3 (QUIC) on the same port over UDP, announced with Alt-Svc (needs --tls-cert)"},
				}, clusterFlags()...)),
			},
			checkCommand(),
			callCommand(),
			newCommand(),
			{Name: "version", Usage: "print the version", Action: func(c *cli.Context) error {
				writeVersion(c.App.Writer)
				return nil
			}},
		},
		OnUsageError: usageError,
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = usageError
	}
	return app
}

// usageError answers a flag urfave/cli cannot read (unknown, or a value of
// the wrong type) with the error and where the help is, instead of the
// whole help with the error at its end, where it scrolls out of sight.
func usageError(c *cli.Context, err error, _ bool) error {
	help := "luamcp --help"
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		help = "luamcp " + c.Command.Name + " --help"
	}
	return fmt.Errorf("%w (%s lists the flags)", err, help)
}

// unknownCommand runs when no command matched: with no argument it prints
// the help, as urfave/cli does; with one it is an error naming the commands
// (urfave/cli's own answer, "No help topic for 'x'", reads as if help had
// been asked for).
func unknownCommand(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowAppHelp(c)
	}
	var names []string
	for _, cmd := range c.App.VisibleCommands() {
		if cmd.Name != "help" {
			names = append(names, cmd.Name)
		}
	}
	return fmt.Errorf("unknown command %q: the commands are %s (luamcp --help)", c.Args().First(), strings.Join(names, ", "))
}

// stateKeyEnv names the environment variable holding the state key.
const stateKeyEnv = "LUAMCP_STATE_KEY"

// readStateKey returns the requestState key: the contents of file (without
// surrounding whitespace) when it is given, else $LUAMCP_STATE_KEY, else nil
// (a random key per process). Processes that serve one endpoint behind a
// load balancer need the same key, so that a client's next round may reach
// any of them.
func readStateKey(file string) ([]byte, error) {
	var key []byte
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--state-key-file: %w", err)
		}
		key = bytes.TrimSpace(b)
	case os.Getenv(stateKeyEnv) != "":
		key = []byte(os.Getenv(stateKeyEnv))
	default:
		return nil, nil
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("the state key (--state-key-file or $%s) has %d bytes; it needs at least 16", stateKeyEnv, len(key))
	}
	return key, nil
}

// flagsFirst refuses a command line with one of the command's flags after
// its arguments: urfave/cli stops reading flags at the first argument, so
// `luamcp serve examples --addr :9000` would serve on the default address
// and `luamcp check scripts --json` look for a file named --json.
func flagsFirst(c *cli.Context) error {
	for _, arg := range c.Args().Slice() {
		name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "-") || name == "" {
			continue
		}
		for _, f := range c.Command.Flags {
			if slices.Contains(f.Names(), name) {
				return fmt.Errorf("%s comes after the arguments, where it is not read as a flag: put flags first (luamcp %s [flags] %s)", arg, c.Command.Name, c.Command.ArgsUsage)
			}
		}
	}
	return nil
}

// serveDir is the folder serve mounts: its one argument (`luamcp serve
// examples`), else --dir. The argument wins over $LUAMCP_DIR, as a flag
// does, but giving both it and a different --dir is an error.
func serveDir(c *cli.Context) (string, error) {
	switch c.NArg() {
	case 0:
		return c.String("dir"), nil
	case 1:
	default:
		return "", fmt.Errorf("serve takes one folder, not %q", c.Args().Slice())
	}
	dir := c.Args().First()
	if flag := c.String("dir"); c.IsSet("dir") && flag != dir && flag != os.Getenv(envVar("dir")) {
		return "", fmt.Errorf("the folder is given twice, as --dir %s and as %s", flag, dir)
	}
	return dir, nil
}

// parseWatchPoll reads --watch-poll as host.Config.WatchPoll: "auto" is 0,
// "off" negative, else a positive duration.
func parseWatchPoll(v string) (time.Duration, error) {
	switch v {
	case "auto":
		return 0, nil
	case "off":
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--watch-poll must be auto, off or a positive duration (1s), not %q", v)
	}
	return d, nil
}

// serve runs until SIGINT or SIGTERM, then shuts down: the listener closes
// first, then every session ends (terminate runs with reason "shutdown").
func serve(c *cli.Context) error {
	dir, err := serveDir(c)
	if err != nil {
		return err
	}
	logger, err := newLogger(c.String("log-level"), c.String("log-format"), c.App.ErrWriter)
	if err != nil {
		return err
	}
	callTimeout, maxRunning := c.Duration("call-timeout"), c.Int("max-running")
	if callTimeout <= 0 {
		return fmt.Errorf("--call-timeout must be positive, not %s", callTimeout)
	}
	if maxRunning < 0 {
		return fmt.Errorf("--max-running must be at least 1 (0: the default), not %d", maxRunning)
	}
	watchPoll, err := parseWatchPoll(c.String("watch-poll"))
	if err != nil {
		return err
	}
	drain := c.Duration("drain")
	if drain < 0 {
		return fmt.Errorf("--drain must not be negative, not %s", drain)
	}
	if err := loadEnvFile(c.String("env-file")); err != nil {
		return err
	}
	caps := map[string]int{}
	for _, name := range []string{"max-sessions", "max-listens", "max-stateless"} {
		if caps[name] = c.Int(name); caps[name] < 1 {
			return fmt.Errorf("--%s must be at least 1, not %d", name, caps[name])
		}
	}
	stateKey, err := readStateKey(c.String("state-key-file"))
	if err != nil {
		return err
	}
	if n := c.Int("max-connections"); n < 0 {
		return fmt.Errorf("--max-connections must be at least 1 (0: from the open-file limit), not %d", n)
	}
	const maxHeaderKB = 64 << 10 // 64 MiB: past any sane header, and no int overflow in bytes
	headerKB := c.Int("max-header-kb")
	if headerKB < 1 || headerKB > maxHeaderKB {
		return fmt.Errorf("--max-header-kb must be from 1 to %d, not %d", maxHeaderKB, headerKB)
	}
	// In bytes these are int64: past maxMiB a value would wrap to a
	// negative one, which means "no limit".
	const maxMiB = 1 << 30 // a PiB
	replayBudget := c.Int("replay-budget-mb")
	if replayBudget < 1 || replayBudget > maxMiB {
		return fmt.Errorf("--replay-budget-mb must be from 1 to %d, not %d", maxMiB, replayBudget)
	}
	bodyBudget := c.Int("body-budget-mb")
	if bodyBudget < 1 || bodyBudget > maxMiB {
		return fmt.Errorf("--body-budget-mb must be from 1 to %d, not %d", maxMiB, bodyBudget)
	}
	memory := c.Int("memory-limit-mb")
	if memory < 1 || memory > maxMiB {
		return fmt.Errorf("--memory-limit-mb must be from 1 to %d, got %d", maxMiB, memory)
	}
	activated, err := activatedListener()
	if err != nil {
		return err
	}
	if activated != nil {
		logger.Info("serving the socket systemd passed (socket activation)", "addr", activated.Addr().String())
		if c.IsSet("addr") {
			logger.Warn("--addr is ignored: systemd passed the socket to serve", "addr", c.String("addr"))
		}
	}
	systemd, err := newSDNotifier(logger)
	if err != nil {
		return err
	}
	defer systemd.close()
	srv, err := edge.Listen(edge.Config{
		Addr: c.String("addr"), Listener: activated, CertFile: c.String("tls-cert"), KeyFile: c.String("tls-key"), HTTP3: c.Bool("http3"),
		Logger: logger, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout, WriteTimeout: mcp.DefaultWriteTimeout,
		MaxConnections: c.Int("max-connections"), MaxHeaderBytes: headerKB << 10,
	})
	if err != nil {
		if activated != nil {
			activated.Close()
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: another process (another luamcp serve?) listens there; stop it, or choose another --addr", err)
		}
		return err
	}
	defer srv.Close()
	if addr, ok := srv.Addr().(*net.TCPAddr); ok && !addr.IP.IsLoopback() {
		logger.Warn("listening on a non-loopback address: other hosts can connect, but every route still refuses remote peers unless its script sets allow_remote_access", "addr", srv.Addr().String())
	}
	if edge.BadPort(srv.Port()) {
		logger.Warn("browsers refuse to connect to this port (a \"bad port\" of the Fetch Standard): browser-based MCP clients cannot reach it; choose another --addr", "port", srv.Port())
	}
	if srv.Protocols() != edge.HTTP {
		logger.Info("serving with TLS", "protocols", srv.Protocols().String(), "addr", srv.Addr().String())
	}
	ms, err := listenMetrics(c.String("metrics-addr"), logger)
	if err != nil {
		return err
	}
	defer ms.close()
	node, err := joinCluster(c, stateKey, srv.URL(), logger)
	if err != nil {
		return err
	}
	defer func() { // runs after the host has shut down: its last pushes still go out
		if err := node.close(c.String("sessions-file") != ""); err != nil {
			logger.Warn("leaving the cluster", "err", err)
		}
	}()
	ms.cluster(node)
	// The signals are caught before the scripts load, which may take a
	// while: a SIGTERM then ends the process in order once they are loaded
	// (a second one at once), a SIGHUP (systemctl reload; the way to apply
	// changes with --no-watch) applies the folder as it is then, rather
	// than the default action killing the process. Not on Windows, which
	// has no SIGHUP.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process at once
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// Ignored from then on, not given back its default action: the
	// deferred calls that run after (leaving the cluster) may take a while,
	// and a reload sent meanwhile would kill a process that has saved its
	// sessions and stops cleanly, and make the stop look failed (exit 129).
	defer signal.Ignore(syscall.SIGHUP)
	watch := !c.Bool("no-watch")
	table := &routeTable{w: c.App.Writer, base: srv.URL(), systemd: systemd}
	h, err := host.New(host.Config{
		Dir: dir, Logger: logger, Watch: watch, WatchPoll: watchPoll,
		CallTimeout: callTimeout, MaxRunning: maxRunning, MaxSessions: caps["max-sessions"], MaxListens: caps["max-listens"], MaxStateless: caps["max-stateless"],
		SessionsFile: c.String("sessions-file"), ReplayBudget: int64(replayBudget) << 20, BodyBudget: int64(bodyBudget) << 20, MemoryLimit: int64(memory) << 20, StateKey: stateKey,
		Observer: ms.observer(), Changed: table.print, PubSub: node.pubsub(), Cluster: node.cluster(),
	})
	if err != nil {
		return err
	}
	table.start(h)
	ms.serve(h, c.App.Writer)
	if len(h.Routes()) == 0 {
		if !watch {
			return errors.Join(fmt.Errorf("no server to mount in %s", dir), h.Shutdown(context.Background()))
		}
		fmt.Fprintf(c.App.Writer, "no server mounted yet at %s: watching %s for *.lua files\n", srv.URL(), dir)
	}

	served := make(chan error, 1)
	handler := h.Handler()
	if c.Bool("access-log") {
		handler = accessLog(handler, logger)
	}
	go func() { served <- srv.Serve(handler) }()
	// The listener was bound before the scripts loaded: requests are
	// answered from now on.
	systemd.notify("READY=1\nSTATUS=" + table.status())
	defer systemd.watchdog()()

	for running := true; running; {
		select {
		case err := <-served:
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			return errors.Join(err, h.Shutdown(sctx))
		case <-hup:
			logger.Info("SIGHUP: applying the scripts folder as it is now")
			// In the background: a script that loops while it loads must
			// not hold up a SIGTERM.
			go func() {
				h.Reload()
				logger.Info("SIGHUP: the scripts folder is applied", "mounted", len(h.Routes()), "not_mounted", len(h.LoadErrors()))
			}()
		case <-ctx.Done():
			running = false
		}
	}
	systemd.notify("STOPPING=1")
	if drain > 0 {
		// Not ready from now on, and still serving for drain: the load
		// balancer takes this process out before it stops accepting.
		h.Drain()
		logger.Info("draining: /readyz answers 503, the routes still serve", "for", drain)
		systemd.notify("STATUS=draining: /readyz answers 503, the routes still serve")
		time.Sleep(drain)
	}
	logger.Info("shutting down")
	systemd.notify("STATUS=shutting down")

	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// Shutdown closes the listener and then runs this hook. Ending the
	// sessions closes their event streams, which Shutdown would otherwise
	// wait for until the deadline.
	hostDone := make(chan error, 1)
	srv.RegisterOnShutdown(func() { hostDone <- h.Shutdown(sctx) })
	err = srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	return errors.Join(err, <-hostDone)
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var opts slog.HandlerOptions
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	opts.Level = lvl
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, &opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, &opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// routeTable prints the route table (printStatus): once at start, and again
// after every change the watcher applies, so that the terminal shows what is
// served now. Prints never interleave.
type routeTable struct {
	mu      sync.Mutex
	w       io.Writer
	base    string      // the server's URL
	systemd *sdNotifier // told the new status after each change (systemctl status shows it)
	host    *host.Host  // nil until start: changes applied while host.New runs are in the first print
}

// start prints the table for the first time; later changes print it again.
func (t *routeTable) start(h *host.Host) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.host = h
	printStatus(t.w, t.base, h)
}

// print is host.Config.Changed.
func (t *routeTable) print() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.host != nil {
		printStatus(t.w, t.base, t.host)
		t.systemd.notify("STATUS=" + t.statusLocked())
	}
}

// status is one line saying what is served, for systemd.
func (t *routeTable) status() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.statusLocked()
}

func (t *routeTable) statusLocked() string {
	n := len(t.host.Routes())
	s := fmt.Sprintf("serving %d script%s at %s", n, map[bool]string{true: "s"}[n != 1], t.base)
	if n := len(t.host.LoadErrors()); n > 0 {
		s += fmt.Sprintf(", %d not mounted", n)
	}
	return s
}

// printStatus lists each mounted URL with its mode and tools, then the
// scripts that could not be mounted.
func printStatus(w io.Writer, base string, h *host.Host) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range h.Routes() {
		mode := "stateless"
		if r.Sessions {
			mode = "session"
		}
		if r.Issuer != "" {
			mode += ", oauth: " + r.Issuer
		}
		tools := "(unknown: see the log)"
		if r.Tools != nil {
			tools = strings.Join(r.Tools, ", ")
		}
		grants := ""
		if !r.Grants.Empty() {
			grants = "\t" + r.Grants.String()
		}
		fmt.Fprintf(tw, "%s%s\t%s\ttools: %s%s\n", base, r.Path, mode, tools, grants)
	}
	tw.Flush()
	for _, err := range h.LoadErrors() {
		fmt.Fprintf(w, "not mounted: %v\n", err)
	}
}

func init() {
	// urfave/cli prints --version (and -v) through a package-level printer,
	// its own "luamcp version X" unless set: both forms print writeVersion.
	cli.VersionPrinter = func(c *cli.Context) { writeVersion(c.App.Writer) }
}

// writeVersion writes what `luamcp version` and `luamcp --version` print:
// the release, then the Go toolchain and platform, the module version and
// the commit when the build recorded them.
func writeVersion(w io.Writer) {
	fmt.Fprintf(w, "luamcp %s\n", version)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	fmt.Fprintf(w, "%s %s/%s\n", bi.GoVersion, runtime.GOOS, runtime.GOARCH)
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		fmt.Fprintf(w, "module %s\n", v)
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev != "" {
		fmt.Fprintf(w, "commit %s %s%s\n", rev, at, dirty)
	}
}
