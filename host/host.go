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
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// mount time; nil when that failed (the failure is logged).
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
	logger   *slog.Logger
	router   *mux.Router
	mounts   []mount // sorted by path
	loadErrs []error

	shutdownOnce sync.Once
	shutdownErr  error
}

type mount struct {
	route   Route
	script  *luavm.Script
	handler *mcp.Handler
}

// New loads every *.lua file directly in cfg.Dir and mounts each on its route
// path. A script that fails to load is logged and listed in LoadErrors; the
// others serve. When two scripts claim the same path, the one whose file name
// sorts first keeps it and the other is a load error. New fails only when
// cfg.Dir cannot be read.
func New(cfg Config) (*Host, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading scripts folder: %w", err)
	}

	h := &Host{logger: logger, router: mux.NewRouter()}
	hub := mcp.NewHub(logger)
	vmCfg := luavm.Config{Dir: cfg.Dir, Logger: logger, Pushes: hub, PoolSize: cfg.PoolSize}
	owner := make(map[string]string) // path -> script that mounted it

	for _, e := range entries { // os.ReadDir sorts by name: mounting is deterministic
		if !isServerFile(e) {
			continue
		}
		file := filepath.Join(cfg.Dir, e.Name())
		script, err := luavm.Load(file, vmCfg)
		if err != nil {
			h.fail(file, err)
			continue
		}
		opts := script.Options()
		if err := checkPath(opts.Path); err != nil {
			script.Close()
			h.fail(file, err)
			continue
		}
		if prev, taken := owner[opts.Path]; taken {
			script.Close()
			h.fail(file, fmt.Errorf("route path %s is already mounted by %s", opts.Path, prev))
			continue
		}
		owner[opts.Path] = file

		m := mount{
			route:  Route{Path: opts.Path, Script: file, Sessions: opts.Sessions, Tools: describe(script, logger)},
			script: script,
		}
		m.handler = mcp.NewHandler(script, opts, hub, logger.With("route", opts.Path))
		h.router.Handle(opts.Path, m.handler)
		h.mounts = append(h.mounts, m)
	}
	slices.SortFunc(h.mounts, func(a, b mount) int { return strings.Compare(a.route.Path, b.route.Path) })
	return h, nil
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

func (h *Host) fail(file string, err error) {
	lerr := &LoadError{Script: file, Err: err}
	h.logger.Error("script not mounted", "err", lerr.Error())
	h.loadErrs = append(h.loadErrs, lerr)
}

// Handler returns the router serving every route. A request is routed on its
// exact path, whatever its method (the route's handler answers 405 itself);
// any other path gets 404.
func (h *Host) Handler() http.Handler { return h.router }

// Routes returns the mounted routes, sorted by path.
func (h *Host) Routes() []Route {
	routes := make([]Route, len(h.mounts))
	for i, m := range h.mounts {
		routes[i] = m.route
		routes[i].Tools = slices.Clone(m.route.Tools)
	}
	return routes
}

// LoadErrors returns the errors of the scripts that were not mounted, in file
// name order. Each is a *LoadError.
func (h *Host) LoadErrors() []error {
	return slices.Clone(h.loadErrs)
}

// Shutdown ends every session of every route (each script's terminate runs
// with reason "shutdown"), then closes the scripts. Routes shut down in
// parallel so that one slow script does not use up the others' time. It
// returns when all sessions are gone or ctx ends; later calls return the first
// call's result.
func (h *Host) Shutdown(ctx context.Context) error {
	h.shutdownOnce.Do(func() {
		errs := make([]error, len(h.mounts))
		var wg sync.WaitGroup
		for i, m := range h.mounts {
			wg.Go(func() {
				if err := m.handler.Shutdown(ctx); err != nil {
					errs[i] = fmt.Errorf("shutting down %s: %w", m.route.Path, err)
				}
			})
		}
		wg.Wait()
		for _, m := range h.mounts {
			m.script.Close()
		}
		h.shutdownErr = errors.Join(errs...)
	})
	return h.shutdownErr
}
