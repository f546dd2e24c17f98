// Package host mounts a folder of scripts as MCP routes.
//
// A Host loads every *.lua file directly in a folder with luavm.Load, serves
// each on its route path with an mcp.Handler, and routes requests to them with
// a gorilla/mux router. Sub-folders hold plain Lua modules for require; they
// are not servers. The CLI and the end-to-end tests both build their servers
// this way, so what the tests exercise is what `luamcp serve` runs.
package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/bridge/hostlib"
	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/luavm"
	"github.com/luamcp/luamcp/mcp"
	"github.com/luamcp/luamcp/oauth"
)

// describeTimeout bounds the init + tools run that lists a script's tools
// at mount time, so a script that loops in init cannot stall the start.
const describeTimeout = 5 * time.Second

// Config says what to mount.
type Config struct {
	// Dir is the folder of *.lua servers; sub-folders hold modules.
	Dir string
	// Logger receives load errors, script output and transport logs.
	// Nil means slog.Default().
	Logger *slog.Logger
	// PoolSize is the number of warm Lua states kept per script
	// (0 = the luavm default).
	PoolSize int
	// Watch reloads scripts when their files change (see watch.go).
	Watch bool
	// Debounce is how long the watcher waits for a burst of writes to end
	// before it reloads (default 100 ms).
	Debounce time.Duration
	// WatchPoll makes the watcher also look at the folder every WatchPoll
	// (poll.go), for folders that deliver no file events. 0 means
	// [DefaultPollInterval] on a filesystem known to deliver none (NFS,
	// SMB, 9p, FUSE), else never; negative, never.
	WatchPoll time.Duration
	// noEvents makes the watcher add no file watches, as on a folder whose
	// filesystem sends no events: tests of polling set it.
	noEvents bool
	// CallTimeout bounds one callback of a route that sets no
	// call_timeout_ms (0 = the luavm default, 10 minutes).
	CallTimeout time.Duration
	// MaxRunning caps the Lua calls running at once across every route,
	// shared fairly among them (0 = luavm.DefaultMaxRunning()).
	MaxRunning int
	// MaxSessions caps the live sessions of all routes together
	// (0 = mcp.DefaultMaxSessions; negative: no cap); an initialize past it
	// gets 503.
	MaxSessions int
	// MaxListens caps the open subscriptions/listen streams (2026-07-28 era)
	// of all routes together (0 = mcp.DefaultMaxListens; negative: no cap);
	// a listen past it gets 503.
	MaxListens int
	// MaxStateless caps the requests served without a session (stateless
	// routes', and the 2026-07-28 era's but listens) open at once on all
	// routes together (0 = mcp.DefaultMaxStateless; negative: no cap); one
	// past it gets 503.
	MaxStateless int
	// ReplayBudget bounds the bytes of the events all routes together keep
	// for clients to read or resume (0 = mcp.DefaultReplayBudget; negative:
	// no bound; see mcp.Hub.SetReplayBudget).
	ReplayBudget int64
	// BodyBudget bounds the bytes the POST bodies all routes together are
	// reading hold, with the requests waiting for them (0 =
	// mcp.DefaultBodyBudget; negative: no bound; see mcp.Hub.SetBodyBudget).
	BodyBudget int64
	// SessionsFile, when set, makes sessions outlive the process: Shutdown
	// saves the live sessions of every session-mode route to it, and New
	// resumes them from it, then removes it (sessions.go).
	SessionsFile string
	// BodyTimeout and WriteTimeout set mcp.Options.BodyTimeout and
	// WriteTimeout on every route (0 = the mcp defaults).
	BodyTimeout, WriteTimeout time.Duration
	// MemoryLimit is the process heap, in bytes, past which the running Lua
	// call holding the most memory is cancelled (luavm.Config.MemoryLimit;
	// 0 = the luavm default).
	MemoryLimit int64
	// StateKey authenticates the requestState of the 2026-07-28 era's
	// multi-round-trip requests (mcp.Hub.SetStateKey): processes serving one
	// endpoint share it. Nil: a random key per process.
	StateKey []byte
	// Observer is told what the routes and the reloads do (metrics.go);
	// nil: nothing.
	Observer Observer
	// PubSub carries broadcasts and resource updates (mcp.NewHubWith): a
	// distributed one (internal/cluster) joins the processes serving one
	// endpoint. Nil: the in-process mcp.LocalPubSub.
	PubSub mcp.PubSub
	// Cluster joins the hub to the other nodes serving the same folder
	// (mcp.Hub.SetCluster): session ids name this node, and requests and
	// pushes for other nodes' sessions go to them. Nil: a single process.
	Cluster mcp.Cluster
	// Changed, when set, is called after the watcher has applied a batch of
	// changes that mounted, reloaded, remounted or unmounted a script, or
	// failed to: `luamcp serve` prints its route table again there. It runs
	// in the background, without the host's lock (so it may call
	// [Host.Routes]), one call at a time.
	Changed func()
}

// Route describes one mounted script.
type Route struct {
	// Path is the mount path, e.g. "/mcp/hello".
	Path string
	// Script is the script's file path.
	Script string
	// Sessions reports session mode.
	Sessions bool
	// Tools names the script's tools as init({}) + tools() listed them at
	// mount (or reload) time; nil when that failed (the failure is logged).
	Tools []string
	// Grants is what the script's route.allow grants (host-api.md).
	Grants *hostlib.Grants
	// Issuer is the authorization server of a route with the oauth option;
	// "" when the route takes no tokens.
	Issuer string
}

// LoadError is a script that could not be mounted. Its message reads
// "file:line: message" when Lua gave a line, "file: message" otherwise.
type LoadError struct {
	Script string // file path
	Err    error
}

func (e *LoadError) Error() string {
	msg := e.Err.Error()
	if strings.HasPrefix(msg, e.Script) || strings.HasPrefix(msg, filepath.Base(e.Script)) {
		return msg
	}
	return e.Script + ": " + msg
}

func (e *LoadError) Unwrap() error { return e.Err }

// Host serves the scripts of one folder. Its methods are safe for concurrent
// use.
type Host struct {
	cfg     Config
	logger  *slog.Logger
	vmCfg   luavm.Config
	hub     *mcp.Hub
	handler http.Handler
	routes  atomic.Pointer[routeTable] // swapped whole by publish
	watcher *watcher
	ctx     context.Context // bounds loads and Describe runs; Shutdown cancels it
	stop    context.CancelFunc
	work    sync.WaitGroup // changes applied and routes retired in the background

	mu     sync.Mutex         // guards the fields below; never held while Lua runs
	mounts map[string]*mount  // by file
	failed map[string]*failed // by file
	// loading holds the files whose load is in flight (a change's jobs);
	// a change to one of them meanwhile is recorded in redo (true: forced)
	// and applied once the load is done.
	loading map[string]bool
	redo    map[string]bool
	// waiting holds the sessions file's sessions and tasks of the routes
	// no script served when it was read, by route path: mount resumes
	// them when a script is mounted on one, and shutdown saves them again
	// (sessions.go).
	waiting map[string]*savedRoute
	closed  bool
	// draining is set by Drain: /readyz answers 503.
	draining bool
	freed    bool // a route path was released since the last retry of what failed (Host.retry)
	reloads  int  // Reload calls under way: a removed file is unmounted at once (Host.gone)
	// settled counts the loads settled and the scripts unmounted: a batch
	// of changes that moved it calls Config.Changed.
	settled uint64

	changedMu sync.Mutex // serializes the calls of Config.Changed

	// sessionsLock holds the lock of Config.SessionsFile from New to the
	// end of Shutdown (sessions_lock.go); nil without the file.
	sessionsLock *os.File
	shutdownOnce sync.Once
	shutdownErr  error
}

type mount struct {
	route   Route
	opts    mcp.Options
	script  *luavm.Script
	handler *mcp.Handler
	sum     [sha256.Size]byte // of the file the current version came from
	// unapplied is the content of the file that last failed to reload, and
	// why; nil while the file holds what serves. It is recorded apart from
	// sum so that the failure is logged once, yet the content is tried
	// again when its cause may be gone (a module it requires appears, the
	// path it claims is freed, Reload): sum still says the file differs.
	unapplied *failed
	// missing is when the file was first found missing, zero while it is
	// there: the route is unmounted once it has been missing for the
	// removal grace (Host.gone).
	missing time.Time
	// verifier checks the bearer tokens of a route with the oauth option
	// (nil without); closed when the mount is retired or shut down.
	verifier *oauth.Verifier
}

// failed is content of a script that could not be loaded (Host.failed: a
// script not mounted; mount.unapplied: an edit of a mounted one), and why:
// the same content is not tried again unless its cause may be gone (see
// Host.retry).
type failed struct {
	err *LoadError
	sum [sha256.Size]byte
}

// newHub returns a hub on ps, or on the in-process pubsub when ps is nil.
func newHub(ps mcp.PubSub, logger *slog.Logger) *mcp.Hub {
	if ps == nil {
		return mcp.NewHub(logger)
	}
	return mcp.NewHubWith(ps, logger)
}

// New loads every *.lua file directly in cfg.Dir and mounts each on its route
// path. A script that fails to load is logged and listed in LoadErrors; the
// others serve. When two scripts claim the same path, the one whose file name
// sorts first keeps it and the other is a load error. New fails only when
// cfg.Dir cannot be read (or, with cfg.Watch, cannot be watched).
//
// With cfg.Watch, changes to the folder are applied as they happen: a changed
// script is reloaded (live sessions keep their state), an added one is
// mounted, a removed one unmounted, and a change to a module reloads the
// scripts that required it.
func New(cfg Config) (*Host, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logcap.Logger(logger) // scripts and clients supply much of what is logged
	if cfg.Debounce <= 0 {
		cfg.Debounce = defaultDebounce
	}
	// Every path the host keys by (mounts, changed files) is clean, so
	// "./" and "scripts/" name their files as "." and "scripts" do.
	cfg.Dir = filepath.Clean(cfg.Dir)
	if _, err := os.ReadDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("reading scripts folder: %w", err)
	}
	if err := checkSessionsFile(cfg.SessionsFile); err != nil {
		return nil, err
	}
	var lock *os.File
	if cfg.SessionsFile != "" {
		var err error
		if lock, err = lockSessionsFile(cfg.SessionsFile); err != nil {
			return nil, err
		}
	}
	h := &Host{
		sessionsLock: lock,
		cfg:          cfg,
		logger:       logger,
		hub:          newHub(cfg.PubSub, logger),
		mounts:       make(map[string]*mount),
		failed:       make(map[string]*failed),
		loading:      make(map[string]bool),
		redo:         make(map[string]bool),
		waiting:      make(map[string]*savedRoute),
	}
	h.ctx, h.stop = context.WithCancel(context.Background())
	h.vmCfg = luavm.Config{
		Dir: cfg.Dir, Logger: logger, PoolSize: cfg.PoolSize,
		// Each script pushes to its own route's sessions only.
		Pushes:      func(path string) bridge.Pushes { return h.hub.Route(path) },
		CallTimeout: cfg.CallTimeout, Sched: luavm.NewScheduler(cfg.MaxRunning), MemoryLimit: cfg.MemoryLimit,
	}
	if cfg.Observer != nil {
		h.hub.SetObserver(cfg.Observer)
	}
	if cfg.Cluster != nil {
		h.hub.SetCluster(cfg.Cluster)
	}
	if cfg.StateKey != nil {
		if err := h.hub.SetStateKey(cfg.StateKey); err != nil {
			h.unlockSessions()
			return nil, err
		}
	}
	if n, ok := hubCap(cfg.MaxSessions); ok {
		h.hub.SetMaxSessions(n)
	}
	if n, ok := hubCap(cfg.MaxListens); ok {
		h.hub.SetMaxListens(n)
	}
	if n, ok := hubCap(cfg.MaxStateless); ok {
		h.hub.SetMaxStateless(n)
	}
	if n := cfg.ReplayBudget; n != 0 {
		h.hub.SetReplayBudget(max(n, 0))
	}
	if n := cfg.BodyBudget; n != 0 {
		h.hub.SetBodyBudget(max(n, 0))
	}
	h.routes.Store(&routeTable{router: mux.NewRouter()})
	h.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == HealthPath || p == ReadyPath {
			h.serveProbe(w, r, p)
			return
		}
		h.routes.Load().ServeHTTP(w, r)
	})
	if cfg.Watch {
		// Watch first: an edit made while the folder loads is not missed.
		w, err := h.watch()
		if err != nil {
			h.unlockSessions()
			return nil, err
		}
		h.watcher = w
	}
	if err := h.scan(); err != nil {
		if h.watcher != nil {
			h.watcher.stop()
		}
		h.stop()
		h.unlockSessions()
		return nil, err
	}
	h.resumeSessions()
	return h, nil
}

// scan mounts every server file of the folder; the scripts load in
// parallel.
func (h *Host) scan() error {
	entries, err := os.ReadDir(h.cfg.Dir)
	if err != nil {
		return fmt.Errorf("reading scripts folder: %w", err)
	}
	files := make(map[string]bool)
	for _, e := range entries {
		if isServerFile(e) {
			files[filepath.Join(h.cfg.Dir, e.Name())] = false
		}
	}
	h.change(files, true)
	return nil
}

// isServerFile reports whether a folder entry is a script to mount. Hidden
// files are skipped: editors leave lock and swap files named .#x.lua.
func isServerFile(e os.DirEntry) bool {
	name := e.Name()
	return !e.IsDir() && strings.HasSuffix(name, ".lua") && !strings.HasPrefix(name, ".")
}

// CheckPath reports why no script may be served on path, nil when one may:
// `luamcp check` applies it as serve does.
func CheckPath(path string) error { return checkPath(path) }

// checkPath rejects paths the router cannot match literally (mux reads
// braces as variables), paths that are not UTF-8 (a Latin-1 file name,
// or route.path): a client could not name them in a URL, and a metric label
// may not hold them, and the paths the host serves itself: the probes, and
// the oauth routes' metadata documents (publish would put one of those in
// the route's place, without a word).
func checkPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("route path %q must start with /", path)
	}
	if !utf8.ValidString(path) {
		return fmt.Errorf("route path %q is not UTF-8 (rename the file, or set route.path)", path)
	}
	if strings.ContainsAny(path, "{}?#") {
		return fmt.Errorf("route path %q must not contain {, }, ? or #", path)
	}
	if c := cleanPath(path); c == HealthPath || c == ReadyPath || c == HealthPath+"/" || c == ReadyPath+"/" {
		return fmt.Errorf("route path %q is taken by the health probes (%s, %s)", path, HealthPath, ReadyPath)
	}
	if c := cleanPath(path); c == mcp.WellKnownProtectedResource || strings.HasPrefix(c, mcp.WellKnownProtectedResource+"/") {
		return fmt.Errorf("route path %q is taken by the OAuth metadata documents (%s/...)", path, mcp.WellKnownProtectedResource)
	}
	return nil
}

// A job is one server file to load: a new mount, or a new version of a
// mounted script. A change plans its jobs under h.mu, loads them in
// parallel without it (Lua runs there: the main chunk, init and tools under
// their bounds), then settles them under h.mu in file name order.
type job struct {
	file  string
	sum   [sha256.Size]byte
	m     *mount // the mount to reload; nil for a new mount
	force bool

	// Set by load.
	script   *luavm.Script // a new script to mount (a new mount, or a remount)
	reloaded bool          // m.script committed a new version
	tools    []string
	err      error
}

// change applies the state of server files (file -> forced): each is
// mounted, reloaded, remounted or unmounted. Content already mounted, or
// already failed, is left alone unless forced (a module it may depend on
// changed). When a route path was freed, what failed is tried again
// (Host.retry).
//
// The files load in parallel. With ordered (at start) their results are
// applied in file name order once all are loaded, so that of two scripts
// claiming one path the first by name keeps it; otherwise each as soon as it
// is loaded, so that a script that loops while loading delays only itself.
func (h *Host) change(files map[string]bool, ordered bool) {
	for len(files) > 0 {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		var jobs []*job
		for _, file := range slices.Sorted(maps.Keys(files)) {
			if j := h.plan(file, files[file]); j != nil {
				jobs = append(jobs, j)
				h.loading[file] = true
			}
		}
		h.publish()
		h.mu.Unlock()

		loaded := make(chan *job, len(jobs))
		for _, j := range jobs {
			go func() {
				h.load(j)
				loaded <- j
			}()
		}
		if ordered {
			for range jobs {
				<-loaded
			}
		}
		files = make(map[string]bool)
		for i := range jobs {
			j := jobs[i]
			if !ordered {
				j = <-loaded
			}
			h.mu.Lock()
			delete(h.loading, j.file)
			h.settle(j)
			if force, ok := h.redo[j.file]; ok {
				files[j.file] = force
				delete(h.redo, j.file)
			}
			h.publish()
			h.mu.Unlock()
		}
		h.mu.Lock()
		if h.freed {
			h.freed = false
			h.retry(files, true)
		}
		h.mu.Unlock()
	}
}

// plan decides what to do with one server file, and does what needs no
// Lua: a removed file is unmounted, a file that cannot be read fails (a
// mounted one keeps serving: its reload failed). It returns the job that
// loads the file, or nil. It runs with h.mu held.
func (h *Host) plan(file string, force bool) *job {
	if h.loading[file] {
		h.redo[file] = h.redo[file] || force
		return nil
	}
	src, err := luavm.ReadSource(file)
	m := h.mounts[file]
	if errors.Is(err, fs.ErrNotExist) {
		delete(h.failed, file)
		if m != nil && h.gone(m, file) {
			h.unmount(m, "removed")
		}
		return nil
	}
	if m != nil {
		m.missing = time.Time{}
	}
	sum := sha256.Sum256(src)
	switch {
	case err != nil && m != nil:
		// A file unreadable for a moment (half written, too large) is not
		// a script "not mounted": LoadErrors would list one that serves.
		h.settled++ // a failed reload, as in settle: Config.Changed hears of it
		h.notReloaded(m, sum, err)
		return nil
	case err != nil:
		h.fail(file, err, sum)
		return nil
	case m == nil:
		if f := h.failed[file]; f != nil && f.sum == sum && !force {
			return nil
		}
	case force: // a module changed or a path was freed: even content tried before
	case m.sum == sum:
		if m.unapplied != nil { // an edit undone: nothing is pending
			m.unapplied = nil
			h.logger.Info("script back to its running version: nothing to reload", "script", file, "path", m.opts.Path)
		}
		return nil
	case m.unapplied != nil && m.unapplied.sum == sum:
		return nil // failed already: Host.retry tries it once its cause may be gone
	}
	return &job{file: file, sum: sum, m: m, force: force}
}

// gone reports whether the mounted file m, found missing, has been missing
// for the removal grace (removeGrace), or a Reload runs, so that its route
// is unmounted and its sessions end. The first time it is found missing, it is looked at again
// once the grace has passed: a file a deploy or an editor deletes and
// writes anew (a slow copy, a checkout) comes back before then, and is
// reloaded with its sessions kept. It runs with h.mu held.
func (h *Host) gone(m *mount, file string) bool {
	if h.reloads > 0 {
		return true // Reload applies the folder as it is now
	}
	grace := h.removeGrace()
	if m.missing.IsZero() {
		m.missing = time.Now()
		h.logger.Info("script file gone: its route is unmounted unless it comes back", "script", file, "path", m.opts.Path, "within", grace)
		time.AfterFunc(grace, func() { h.apply([]string{file}, nil) })
		return false
	}
	return time.Since(m.missing) >= grace
}

// removeGrace is how long a mounted file may be missing before its route is
// unmounted: the longest the watcher waits for a burst of events to end.
func (h *Host) removeGrace() time.Duration { return maxDebounceFactor * h.cfg.Debounce }

// reloadListChanges are the notifications a reload sends to listen streams.
var reloadListChanges = []string{
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
}

// load runs a job's Lua, without h.mu: a new script is loaded; a mounted one
// prepares its new version and commits it when its route options allow
// (otherwise it is loaded afresh, to be remounted). Either way its tools are
// listed. Loads and listings stop when the host shuts down.
func (h *Host) load(j *job) {
	if j.m != nil {
		ver, err := j.m.script.PrepareContext(h.ctx)
		if err != nil {
			j.err = err
			return
		}
		if sameRoute(j.m.opts, h.routeOptions(ver.Options())) {
			j.m.script.Commit(ver)
			j.reloaded = true
			j.tools = h.describe(j.m.script)
			// Live sessions hear of the lists that changed for them from
			// luavm; the 2026-07-28 era's listen streams have no state to
			// compare, so they hear that every list may have changed.
			pushes := h.hub.Route(j.m.opts.Path)
			for _, method := range reloadListChanges {
				pushes.ListChanged(method)
			}
			return
		}
		ver.Discard()
	}
	j.script, j.err = luavm.LoadContext(h.ctx, j.file, h.vmCfg)
	if j.err == nil {
		j.tools = h.describe(j.script)
	}
}

// settle applies a loaded job to the mounts. It runs with h.mu held.
func (h *Host) settle(j *job) {
	if h.closed {
		if j.script != nil {
			j.script.Close()
		}
		return
	}
	h.settled++
	file, m := j.file, j.m
	switch {
	case m != nil && j.err != nil:
		h.notReloaded(m, j.sum, j.err)
	case m != nil && j.reloaded:
		// Only now does the mount serve this content.
		m.sum, m.unapplied = j.sum, nil
		m.route.Tools = j.tools
		m.route.Grants = m.script.Grants()
		h.logger.Info("script reloaded", "script", file, "path", m.opts.Path)
		h.reloaded(m.opts.Path, true)
	case m != nil: // its route options changed
		opts := h.routeOptions(j.script.Options())
		if err := h.claim(file, opts.Path); err != nil {
			j.script.Close()
			h.notReloaded(m, j.sum, err)
			return
		}
		delete(h.mounts, file)
		h.publish() // the old route stops taking requests before the new one may take its path
		h.retire(m)
		h.mount(j)
		h.reloaded(opts.Path, true)
		h.logger.Info("script remounted: its route options changed, its sessions ended", "script", file, "path", opts.Path)
	case j.err != nil:
		h.fail(file, j.err, j.sum)
	default:
		if err := h.claim(file, j.script.Options().Path); err != nil {
			j.script.Close()
			h.fail(file, err, j.sum)
			return
		}
		h.mount(j)
		if h.watcher != nil { // at start-up the status lines say it
			h.logger.Info("script mounted", "script", file, "path", j.script.Options().Path)
		}
	}
}

// mount serves a loaded script on its path. It runs with h.mu held.
func (h *Host) mount(j *job) {
	delete(h.failed, j.file)
	opts := h.routeOptions(j.script.Options())
	m := &mount{script: j.script, opts: opts, sum: j.sum}
	logger := h.logger.With("route", opts.Path)
	if opts.OAuth != nil {
		// The verifier is the mount's, not a route option: m.opts stays
		// comparable by sameRoute.
		m.verifier = oauth.New(*opts.OAuth, nil, logger)
		opts.Verifier = m.verifier
	}
	m.handler = mcp.NewHandler(j.script, opts, h.hub, logger)
	m.route = Route{Path: opts.Path, Script: j.file, Sessions: opts.Sessions, Tools: j.tools,
		Grants: j.script.Grants()}
	if opts.OAuth != nil {
		m.route.Issuer = opts.OAuth.Issuer
	}
	h.mounts[j.file] = m
	if w := h.waiting[opts.Path]; w != nil {
		delete(h.waiting, opts.Path)
		h.resumeRoute(m, w)
	}
}

// routeOptions adds the host's transport settings to a script's options.
func (h *Host) routeOptions(o mcp.Options) mcp.Options {
	o.BodyTimeout, o.WriteTimeout = h.cfg.BodyTimeout, h.cfg.WriteTimeout
	return o
}

// claim reports an error when another mounted script has path.
func (h *Host) claim(file, path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	for f, m := range h.mounts {
		if f != file && m.opts.Path == path {
			return fmt.Errorf("route path %s is already mounted by %s", path, f)
		}
	}
	return nil
}

// unmount removes a mount: its route answers 404, its sessions end.
func (h *Host) unmount(m *mount, why string) {
	h.settled++
	delete(h.mounts, m.route.Script)
	h.publish()
	h.retire(m)
	h.logger.Info("script unmounted", "script", m.route.Script, "path", m.opts.Path, "why", why)
}

// retire ends a mount that is no longer routed, in the background: its
// sessions terminate with reason "normal", then its script closes. Its path
// is free at once.
func (h *Host) retire(m *mount) {
	h.freed = true
	m.script.Retire()
	h.work.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), retireTimeout)
		defer cancel()
		if err := m.handler.Shutdown(ctx); err != nil {
			h.logger.Warn("sessions of an unmounted script did not end in time", "path", m.opts.Path, "err", err)
		}
		m.close()
	})
}

// retireTimeout bounds how long an unmounted route's sessions may take to end.
const retireTimeout = 10 * time.Second

// sameRoute reports whether a running handler built with a can serve b: mcp
// handlers take their options once, so any change but Auth's function value
// calls for a remount.
func sameRoute(a, b mcp.Options) bool {
	if (a.Auth == nil) != (b.Auth == nil) || !slices.Equal(a.Origins, b.Origins) {
		return false
	}
	a.Auth, b.Auth, a.Origins, b.Origins = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// close releases what a mount holds once its handler is shut down.
func (m *mount) close() {
	m.script.Close()
	if m.verifier != nil {
		m.verifier.Close()
	}
}

// publish builds a router for the current mounts and swaps it in: gorilla/mux
// cannot remove a route. A route with the oauth option also gets its RFC 9728
// metadata document, and the root document when it is the only such route
// (clients that try the root form find it). It runs with h.mu held.
func (h *Host) publish() {
	t := &routeTable{router: mux.NewRouter(), exact: make(map[string]http.Handler)}
	var protected []*mount
	for _, m := range h.sorted() {
		t.handle(m.opts.Path, m.handler)
		if m.opts.OAuth != nil {
			protected = append(protected, m)
			t.handle(mcp.MetadataPath(m.opts.Path), http.HandlerFunc(m.handler.ServeMetadata))
		}
	}
	if len(protected) == 1 && protected[0].opts.Path != "/" {
		t.handle(mcp.WellKnownProtectedResource, http.HandlerFunc(protected[0].handler.ServeMetadata))
	}
	h.routes.Store(t)
}

// sorted returns the mounts sorted by path.
func (h *Host) sorted() []*mount {
	list := make([]*mount, 0, len(h.mounts))
	for _, m := range h.mounts {
		list = append(list, m)
	}
	slices.SortFunc(list, func(a, b *mount) int { return strings.Compare(a.opts.Path, b.opts.Path) })
	return list
}

// describe lists a script's tools for the status lines; a failure is logged
// and does not stop the script from serving (init may depend on client
// params).
func (h *Host) describe(s *luavm.Script) []string {
	ctx, cancel := context.WithTimeout(h.ctx, describeTimeout)
	defer cancel()
	tools, err := s.Describe(ctx)
	if err != nil {
		if ctx.Err() != nil && h.ctx.Err() == nil {
			err = fmt.Errorf("init({}) and tools() did not return within %s", describeTimeout)
		}
		h.logger.Warn("cannot list tools", "script", s.Name(), "err", err)
		return nil
	}
	if tools == nil {
		tools = []string{}
	}
	return tools
}

// fail records a script that could not be mounted; the same error is logged
// once.
func (h *Host) fail(file string, err error, sum [sha256.Size]byte) {
	lerr := &LoadError{Script: file, Err: err}
	if prev := h.failed[file]; prev == nil || prev.err.Error() != lerr.Error() {
		h.logger.Error("script not mounted", "script", file, "err", lerr.Error())
	}
	h.failed[file] = &failed{err: lerr, sum: sum}
}

// notReloaded records that a mounted script's file, with content sum,
// failed to reload: the running version stays. The failure is logged (and
// counted) once per content and error; the content is tried again when its
// cause may be gone (Host.retry). It runs with h.mu held.
func (h *Host) notReloaded(m *mount, sum [sha256.Size]byte, err error) {
	lerr := &LoadError{Script: m.route.Script, Err: err}
	if prev := m.unapplied; prev == nil || prev.sum != sum || prev.err.Error() != lerr.Error() {
		h.logger.Error("script not reloaded: the running version stays", "script", m.route.Script, "err", lerr.Error())
		h.reloaded(m.opts.Path, false)
	}
	m.unapplied = &failed{err: lerr, sum: sum}
}

// retry adds to files (forced when force) what failed and may load now that
// a module changed or a path was freed: the scripts not mounted, and the
// mounted scripts whose file holds an edit that failed to reload (it may
// require the module, or claim the path). It runs with h.mu held.
func (h *Host) retry(files map[string]bool, force bool) {
	for file := range h.failed {
		files[file] = files[file] || force
	}
	for file, m := range h.mounts {
		if m.unapplied != nil && m.unapplied.sum != m.sum {
			files[file] = files[file] || force
		}
	}
}

// Handler returns the handler serving every route. A request is routed on its
// exact path, whatever its method (the route's handler answers 405 itself);
// any other path gets 404. It stays the same handler across reloads.
func (h *Host) Handler() http.Handler { return h.handler }

// Routes returns the mounted routes, sorted by path.
func (h *Host) Routes() []Route {
	h.mu.Lock()
	defer h.mu.Unlock()
	mounts := h.sorted()
	routes := make([]Route, len(mounts))
	for i, m := range mounts {
		routes[i] = m.route
		routes[i].Tools = slices.Clone(m.route.Tools)
	}
	return routes
}

// LuaStates reports the Lua states open across every mounted script (warm
// pools included), so that tests can prove sessions release theirs.
func (h *Host) LuaStates() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.mounts {
		n += m.script.LiveStates()
	}
	return n
}

// LoadErrors returns the errors of the scripts that are not mounted, in file
// name order. Each is a *LoadError.
func (h *Host) LoadErrors() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	files := slices.Sorted(maps.Keys(h.failed))
	errs := make([]error, len(files))
	for i, f := range files {
		errs[i] = h.failed[f].err
	}
	return errs
}

// Shutdown stops watching, stops the loads in progress, ends every session
// of every route (each script's terminate runs with reason "shutdown"; with
// Config.SessionsFile, the sessions of session-mode routes are saved to it
// instead), then closes the scripts. Routes shut down in parallel so that
// one slow script does not use up the others' time. It returns when all of
// that is done, or when ctx ends: Lua that does not stop is abandoned, never
// waited for, but the sessions file is always written first. Later calls
// return the first call's result.
func (h *Host) Shutdown(ctx context.Context) error {
	h.shutdownOnce.Do(func() {
		h.stop()
		done := make(chan error, 1)
		saved := make(chan error, 1)
		go func() { done <- h.shutdown(ctx, saved) }()
		select {
		case err := <-done:
			h.shutdownErr = err
		case <-ctx.Done():
			h.logger.Warn("shutdown: Lua calls still running were abandoned")
			// The file that keeps the sessions saved is written before
			// the process may exit (the routes' Suspend returned with
			// ctx); settling them (closing, or ending them if the file
			// failed) may be abandoned with the rest.
			h.shutdownErr = errors.Join(ctx.Err(), <-saved)
		}
	})
	return h.shutdownErr
}

// shutdown ends the routes and closes their scripts. With a sessions file
// it sends the outcome of saving their sessions on saved once written, as
// soon as the routes' Suspend returned (at the latest when ctx ends), before
// it waits for the scripts; without, it sends nil at once.
func (h *Host) shutdown(ctx context.Context, savedErr chan<- error) error {
	if h.watcher != nil {
		h.watcher.stop()
	}
	h.mu.Lock()
	h.closed = true
	mounts := h.sorted()
	waiting := h.waiting
	h.mu.Unlock()
	errs := make([]error, len(mounts))
	kept := make([][]mcp.SavedSession, len(mounts))
	settle := make([]func(kept bool), len(mounts))
	var wg sync.WaitGroup
	for i, m := range mounts {
		wg.Go(func() {
			var err error
			if h.cfg.SessionsFile != "" {
				// A stateless route keeps no session, but its tasks.
				kept[i], settle[i], err = m.handler.Suspend(ctx)
			} else {
				err = m.handler.Shutdown(ctx)
			}
			if err != nil {
				errs[i] = fmt.Errorf("shutting down %s: %w", m.route.Path, err)
			}
		})
	}
	wg.Wait()
	if h.cfg.SessionsFile != "" {
		err := h.saveSessions(mounts, kept, waiting)
		if err != nil {
			h.logger.Error("the sessions could not be saved: they end, their scripts' terminate run", "err", err)
		}
		savedErr <- err
		errs = append(errs, err)
		// The saved sessions' states were kept open until now: written,
		// they close; not written, they end as without the file.
		for _, s := range settle {
			if s != nil {
				wg.Go(func() { s(err == nil) })
			}
		}
		wg.Wait()
		h.unlockSessions() // written: the next process may take it
	} else {
		savedErr <- nil
	}
	for _, m := range mounts {
		wg.Go(m.close)
	}
	wg.Wait()
	h.work.Wait() // changes settle as closed; retired routes end
	return errors.Join(errs...)
}

// hubCap reads a cap of [Config]: 0 keeps the hub's default (ok false), a
// negative one means no cap (0 for the hub).
func hubCap(n int) (hub int, ok bool) {
	return max(n, 0), n != 0
}
