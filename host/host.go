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

	"github.com/gorilla/mux"

	"github.com/luamcp/luamcp/luavm"
	"github.com/luamcp/luamcp/mcp"
)

// describeTimeout bounds the init + tools run that lists a script's tools at
// mount time, so a script that loops in init cannot stall the start.
const describeTimeout = 10 * time.Second

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
	// MemoryLimit is the process heap, in bytes, past which the running Lua
	// call holding the most memory is cancelled (luavm.Config.MemoryLimit;
	// 0 = the luavm default).
	MemoryLimit int64
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
	router  atomic.Pointer[mux.Router]
	watcher *watcher

	mu     sync.Mutex         // guards mounts, failed and closed; held while applying changes
	mounts map[string]*mount  // by file
	failed map[string]*failed // by file
	closed bool
	freed  bool // a route path was released since the last retry of the failed scripts

	shutdownOnce sync.Once
	shutdownErr  error
}

type mount struct {
	route   Route
	opts    mcp.Options
	script  *luavm.Script
	handler *mcp.Handler
	sum     [sha256.Size]byte // of the file the current version came from
}

// failed is a script that could not be mounted, and the content it failed
// with: the same content is not tried again unless a module changed.
type failed struct {
	err *LoadError
	sum [sha256.Size]byte
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
	if cfg.Debounce <= 0 {
		cfg.Debounce = defaultDebounce
	}
	if _, err := os.ReadDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("reading scripts folder: %w", err)
	}
	h := &Host{
		cfg:    cfg,
		logger: logger,
		hub:    mcp.NewHub(logger),
		mounts: make(map[string]*mount),
		failed: make(map[string]*failed),
	}
	h.vmCfg = luavm.Config{Dir: cfg.Dir, Logger: logger, Pushes: h.hub, PoolSize: cfg.PoolSize, MemoryLimit: cfg.MemoryLimit}
	h.router.Store(mux.NewRouter())
	h.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.router.Load().ServeHTTP(w, r)
	})
	if cfg.Watch {
		// Watch first: an edit made while the folder loads is not missed.
		w, err := h.watch()
		if err != nil {
			return nil, err
		}
		h.watcher = w
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.scan(); err != nil {
		if h.watcher != nil {
			h.watcher.stop()
		}
		return nil, err
	}
	return h, nil
}

// scan brings the mounts in line with the folder: new files are mounted,
// changed ones reloaded, missing ones unmounted. It runs with h.mu held.
func (h *Host) scan() error {
	entries, err := os.ReadDir(h.cfg.Dir)
	if err != nil {
		return fmt.Errorf("reading scripts folder: %w", err)
	}
	present := make(map[string]bool)
	for _, e := range entries { // os.ReadDir sorts by name: mounting is deterministic
		if isServerFile(e) {
			file := filepath.Join(h.cfg.Dir, e.Name())
			present[file] = true
			h.sync(file, false)
		}
	}
	for file := range h.mounts {
		if !present[file] {
			h.sync(file, false)
		}
	}
	for file := range h.failed {
		if !present[file] {
			delete(h.failed, file)
		}
	}
	h.publish()
	return nil
}

// isServerFile reports whether a folder entry is a script to mount. Hidden
// files are skipped: editors leave lock and swap files named .#x.lua.
func isServerFile(e os.DirEntry) bool {
	name := e.Name()
	return !e.IsDir() && strings.HasSuffix(name, ".lua") && !strings.HasPrefix(name, ".")
}

// checkPath rejects paths the router cannot match literally: mux reads braces
// as variables.
func checkPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("route path %q must start with /", path)
	}
	if strings.ContainsAny(path, "{}?#") {
		return fmt.Errorf("route path %q must not contain {, }, ? or #", path)
	}
	return nil
}

// sync applies the state of one server file: mounts it, reloads it, or
// unmounts it. Content already mounted, or already failed, is left alone
// unless force (a module it may depend on changed). It runs with h.mu held;
// the caller publishes the router.
func (h *Host) sync(file string, force bool) {
	src, err := os.ReadFile(file)
	m := h.mounts[file]
	if errors.Is(err, fs.ErrNotExist) {
		delete(h.failed, file)
		if m != nil {
			h.unmount(m, "removed")
		}
		return
	}
	sum := sha256.Sum256(src)
	if err != nil {
		h.fail(file, err, sum)
		return
	}
	switch {
	case m != nil && (force || m.sum != sum):
		h.reload(m, sum)
	case m == nil:
		if f := h.failed[file]; f != nil && f.sum == sum && !force {
			return
		}
		h.mountNew(file, sum)
	}
}

// mountNew loads a script and mounts it on its path.
func (h *Host) mountNew(file string, sum [sha256.Size]byte) {
	script, err := luavm.Load(file, h.vmCfg)
	if err != nil {
		h.fail(file, err, sum)
		return
	}
	opts := script.Options()
	if err := h.claim(file, opts.Path); err != nil {
		script.Close()
		h.fail(file, err, sum)
		return
	}
	delete(h.failed, file)
	m := &mount{script: script, opts: opts, sum: sum}
	m.handler = mcp.NewHandler(script, opts, h.hub, h.logger.With("route", opts.Path))
	m.route = Route{Path: opts.Path, Script: file, Sessions: opts.Sessions, Tools: describe(script, h.logger)}
	h.mounts[file] = m
	if h.watcher != nil { // at start-up the status lines say it
		h.logger.Info("script mounted", "script", file, "path", opts.Path)
	}
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

// reload moves a mounted script to its file's new content. A version that
// fails to load leaves the running one untouched; one whose route options
// the running handler cannot take is mounted afresh (remount).
func (h *Host) reload(m *mount, sum [sha256.Size]byte) {
	file := m.route.Script
	m.sum = sum // a failed edit is reported once
	ver, err := m.script.Prepare()
	if err != nil {
		h.logger.Error("script not reloaded: the running version stays", "err", (&LoadError{Script: file, Err: err}).Error())
		return
	}
	opts := ver.Options()
	if !sameRoute(m.opts, opts) {
		ver.Discard()
		h.remount(m, opts, sum)
		return
	}
	m.script.Commit(ver)
	m.route.Tools = describe(m.script, h.logger)
	h.logger.Info("script reloaded", "script", file, "path", opts.Path)
}

// remount replaces a mount whose route options changed: the new one serves at
// once, the old one's sessions end (reason "normal").
func (h *Host) remount(m *mount, opts mcp.Options, sum [sha256.Size]byte) {
	file := m.route.Script
	if err := h.claim(file, opts.Path); err != nil {
		h.logger.Error("script not reloaded: the running version stays", "err", (&LoadError{Script: file, Err: err}).Error())
		return
	}
	delete(h.mounts, file)
	h.publish() // the old route stops taking requests before the new one may take its path
	h.retire(m)
	h.mountNew(file, sum)
	if h.mounts[file] != nil {
		h.logger.Info("script remounted: its route options changed, its sessions ended", "script", file, "path", opts.Path)
	}
}

// unmount removes a mount: its route answers 404, its sessions end.
func (h *Host) unmount(m *mount, why string) {
	delete(h.mounts, m.route.Script)
	h.publish()
	h.retire(m)
	h.logger.Info("script unmounted", "script", m.route.Script, "path", m.opts.Path, "why", why)
}

// retire ends a mount that is no longer routed: its sessions terminate with
// reason "normal", then its script closes.
func (h *Host) retire(m *mount) {
	h.freed = true
	m.script.Retire()
	ctx, cancel := context.WithTimeout(context.Background(), retireTimeout)
	defer cancel()
	if err := m.handler.Shutdown(ctx); err != nil {
		h.logger.Warn("sessions of an unmounted script did not end in time", "path", m.opts.Path, "err", err)
	}
	m.script.Close()
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

// publish builds a router for the current mounts and swaps it in: gorilla/mux
// cannot remove a route. It runs with h.mu held.
func (h *Host) publish() {
	r := mux.NewRouter()
	for _, m := range h.sorted() {
		r.Handle(m.opts.Path, m.handler)
	}
	h.router.Store(r)
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

// describe lists a script's tools for the status lines; a failure is logged and
// does not stop the script from serving (init may depend on client params).
func describe(s *luavm.Script, logger *slog.Logger) []string {
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()
	tools, err := s.Describe(ctx)
	if err != nil {
		logger.Warn("cannot list tools", "script", s.Name(), "err", err)
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
		h.logger.Error("script not mounted", "err", lerr.Error())
	}
	h.failed[file] = &failed{err: lerr, sum: sum}
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

// Shutdown stops watching, ends every session of every route (each script's
// terminate runs with reason "shutdown"), then closes the scripts. Routes
// shut down in parallel so that one slow script does not use up the others'
// time. It returns when all sessions are gone or ctx ends; later calls return
// the first call's result.
func (h *Host) Shutdown(ctx context.Context) error {
	h.shutdownOnce.Do(func() {
		if h.watcher != nil {
			h.watcher.stop()
		}
		h.mu.Lock()
		h.closed = true
		mounts := h.sorted()
		h.mu.Unlock()
		errs := make([]error, len(mounts))
		var wg sync.WaitGroup
		for i, m := range mounts {
			wg.Go(func() {
				if err := m.handler.Shutdown(ctx); err != nil {
					errs[i] = fmt.Errorf("shutting down %s: %w", m.route.Path, err)
				}
			})
		}
		wg.Wait()
		for _, m := range mounts {
			m.script.Close()
		}
		h.shutdownErr = errors.Join(errs...)
	})
	return h.shutdownErr
}
