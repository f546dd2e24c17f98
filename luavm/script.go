// Package luavm runs MCP servers written in Lua: it loads a script, keeps warm
// sandboxed gopher-lua states for it, and implements mcp.Server and
// mcp.Session by calling the script's callbacks (script-api.md).
//
// A state has one owner at a time. A session owns one state for its whole
// life; a stateless request, a snapshot, an auth check or Describe borrows
// one. Every callback runs under the caller's context, Config.MaxCall and a
// memory watchdog; a callback that crashes leaves the session's state exactly
// as it was before the call.
package luavm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

// Config is what Load needs besides the script's path.
type Config struct {
	Dir      string        // the scripts folder (require root); default: the script's folder
	Logger   *slog.Logger  // default: slog.Default()
	Pushes   bridge.Pushes // the mcp.Hub; nil drops pushes
	PoolSize int           // warm fresh states kept per script (default 4; negative: none)
	MaxCall  time.Duration // hard cap on one callback (default 10 min)
	// MemoryLimit is the process heap size, in bytes, past which this
	// script's running calls are cancelled (default DefaultMemoryLimit;
	// negative disables the watchdog).
	MemoryLimit int64
}

// Defaults of Config.
const (
	DefaultPoolSize = 4
	DefaultMaxCall  = 10 * time.Minute
)

// terminateTimeout bounds terminate(reason, state), which has no caller's
// context to honour.
const terminateTimeout = 10 * time.Second

// Script is one loaded server script. It implements mcp.Server.
type Script struct {
	name    string // file name without .lua
	chunk   string // path shown in messages: relative to Dir
	cfg     Config
	logger  *slog.Logger
	proto   *lua.FunctionProto
	opts    mcp.Options
	modules *modules
	watch   *watchdog
	pool    *pool
	live    atomic.Int64 // states open, in the pool or lent out

	retLine int // line of the chunk's final return, for module errors

	closeOnce sync.Once
}

var _ mcp.Server = (*Script)(nil)

// Load compiles one script once and validates its module table and route
// options. Errors read "file:line: message" where Lua gives a line.
func Load(path string, cfg Config) (*Script, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".lua")
	if cfg.Dir == "" {
		cfg.Dir = filepath.Dir(path)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	cfg.PoolSize = max(cfg.PoolSize, 0)
	if cfg.MaxCall <= 0 {
		cfg.MaxCall = DefaultMaxCall
	}
	chunk := filepath.Base(path)
	if rel, err := filepath.Rel(cfg.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		chunk = filepath.ToSlash(rel)
	}

	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", chunk, err)
	}
	proto, err := compile(src, chunk, 0)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("script", name)
	s := &Script{
		name:    name,
		chunk:   chunk,
		cfg:     cfg,
		logger:  logger,
		proto:   proto,
		modules: newModules(cfg.Dir),
		watch:   newWatchdog(cfg.MemoryLimit, logger),
		retLine: returnLine(proto),
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxCall)
	defer cancel()
	v, err := s.newVM(ctx)
	if err != nil {
		s.watch.close()
		return nil, err
	}
	if err := s.validate(v); err != nil {
		v.close()
		s.watch.close()
		return nil, err
	}
	s.pool = newPool(s, cfg.PoolSize)
	s.pool.start(v)
	return s, nil
}

// validate checks the server module of a freshly built state: callback types,
// auth and route options.
func (s *Script) validate(v *vm) error {
	mod := v.module
	for i, name := range callbackNames {
		if val := mod.RawGetString(name); val != lua.LNil && !required(i) {
			if _, ok := val.(*lua.LFunction); !ok {
				return s.moduleError("%s must be a function, got %s", name, describe(val))
			}
		}
	}
	if val := mod.RawGetString("auth"); val != lua.LNil && v.auth == nil {
		return s.moduleError("auth must be a function, got %s", describe(val))
	}
	opts, err := parseRoute(mod.RawGetString("route"), s.name)
	if err != nil {
		return s.moduleError("%v", err)
	}
	if v.auth != nil {
		opts.Auth = s.authHook
	}
	s.opts = opts
	return nil
}

// moduleError reports a problem with the server module, at the line of the
// chunk's return statement when it has one.
func (s *Script) moduleError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if s.retLine > 0 {
		return fmt.Errorf("%s:%d: %s", s.chunk, s.retLine, msg)
	}
	return fmt.Errorf("%s: %s", s.chunk, msg)
}

// returnLine finds the line of the chunk's explicit final return: the
// instruction before the RETURN the compiler always appends.
func returnLine(p *lua.FunctionProto) int {
	n := len(p.Code)
	if n < 2 || len(p.DbgSourcePositions) < n || int(p.Code[n-2]>>26) != lua.OP_RETURN {
		return 0
	}
	return p.DbgSourcePositions[n-2]
}

// Name returns the script's file name without .lua.
func (s *Script) Name() string { return s.name }

// Options returns the route options: Path defaulted to /mcp/<name>, Auth set
// when the module has an auth function. Other unset options are zero (their
// defaults, see mcp.Options.Defaults).
func (s *Script) Options() mcp.Options { return s.opts }

// Describe runs init({}) and tools on a pooled state and returns the tool
// names; it also checks that the capabilities init advertises have their
// callbacks.
func (s *Script) Describe(ctx context.Context) (tools []string, err error) {
	sess, _, err := s.Init(ctx, nil, "")
	if err != nil {
		return nil, err
	}
	defer sess.Close("")
	items, err := sess.Tools(ctx)
	if err != nil {
		return nil, err
	}
	tools = make([]string, len(items))
	for i, it := range items {
		tools[i] = it.Key
	}
	return tools, nil
}

// Close stops the pool filler and closes the pooled states. Sessions still
// open keep their states until they are closed.
func (s *Script) Close() {
	s.closeOnce.Do(func() {
		s.pool.close()
		s.watch.close()
	})
}

// liveStates reports the states open (pooled or lent out), for tests.
func (s *Script) liveStates() int64 { return s.live.Load() }
