// Package luavm runs MCP servers written in Lua: it loads a script, keeps warm
// sandboxed gopher-lua states for it, and implements mcp.Server and
// mcp.Session by calling the script's callbacks (script-api.md).
//
// A state has one owner at a time. A session owns one state for its whole
// life; a stateless request, a snapshot, an auth check or Describe borrows
// one. Every callback runs under the caller's context, its route's call
// timeout and a memory watchdog, in a slot of the Scheduler (sched.go); a callback that crashes leaves the session's state exactly
// as it was before the call.
package luavm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/bridge/hostlib"
	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

// Config is what Load needs besides the script's path.
type Config struct {
	Dir    string       // the scripts folder (require root); default: the script's folder
	Logger *slog.Logger // default: slog.Default()
	// Pushes returns where the pushes of a script served on a route path go
	// (mcp.Hub.Route: the sessions of that route only); nil drops pushes.
	Pushes func(path string) bridge.Pushes
	// PoolSize is the least number of warm fresh states kept per script
	// (default 4; negative: none); the lane deepens with demand (pool.go).
	PoolSize int
	// CallTimeout is the hard cap on one callback of a route that does not
	// set call_timeout_ms (default DefaultCallTimeout).
	CallTimeout time.Duration
	// Sched caps the Lua calls running at once, shared by every script
	// given the same one; nil sets no cap.
	Sched *Scheduler
	// MemoryLimit is the process heap size, in bytes, past which the running
	// call of this script whose state holds the most memory is cancelled
	// (default DefaultMemoryLimit; negative disables the watchdog). Each
	// state's own budget is the route option memory_limit_mb.
	MemoryLimit int64
}

// Defaults of Config.
const (
	DefaultPoolSize    = 4
	DefaultCallTimeout = 10 * time.Minute
)

// terminateTimeout bounds terminate(reason, state), which has no caller's
// context to honour.
const terminateTimeout = 10 * time.Second

// Script is one server script file. It implements mcp.Server.
//
// A Script is a handle that outlives code edits: it holds a current compiled
// version (a Version), which Reload or Commit replace. Init always uses the
// current version; each session remembers the version its state lives in and
// moves to the current one before its next call, or at once when idle
// (reload.go).
type Script struct {
	name   string // file name without .lua
	path   string // the file
	chunk  string // path shown in messages: relative to Dir
	cfg    Config
	logger *slog.Logger
	watch  *watchdog
	lane   *lane        // the script's share of Config.Sched
	live   atomic.Int64 // states open, of every version, pooled or lent out
	// ended counts the states of sessions that ended, of every version:
	// recycled into a fresh lane, or closed (recycle.go; metrics, tests).
	ended [numEndings]atomic.Int64

	cur     atomic.Pointer[Version]
	retired atomic.Bool // see Retire

	reloadMu sync.Mutex // serialises Commit and Close
	mu       sync.Mutex // guards sessions and closed
	sessions map[*session]struct{}
	closed   bool

	sweep sweeper // hibernates idle sessions (hibernate.go)

	// authWarn spaces the warnings of auth hooks that could not run (no
	// slot in time, or the client left while it waited): while the server
	// is busy every request would be one, and any client can send them.
	authWarn logcap.Throttle
}

// Version is one compiled version of a script: its chunk, its route options,
// its required modules and its pool of warm states.
type Version struct {
	*Script
	proto  *lua.FunctionProto
	opts   mcp.Options
	pushes bridge.Pushes // where this version's pushes go: its route's sessions; nil drops them
	memory int64         // bytes each state may hold (memory_limit_mb); 0 until validated
	// hibernate is how long a session of this version stays idle before it
	// hibernates (session_hibernate_ms); 0: never.
	hibernate time.Duration
	// defined says which callbacks the server module defines (as vm.has),
	// for work without a state: closing a sleeping session.
	defined [numCallbacks]bool
	modules *modules
	pool    *pool
	retLine int          // line of the chunk's final return, for module errors
	lib     *hostlib.Lib // route.allow and what its states share; nil until validate

	callTimeout timeoutError  // the bound of one callback: call_timeout_ms or Config.CallTimeout
	slotWait    time.Duration // the longest wait for a scheduler slot: request_timeout_ms
	reuseLists  listReuse     // reuse_lists (lists.go)
	// validateArgs checks tools/call arguments against the tool's input
	// schema (validate_arguments, validate.go), compiled into schemas.
	validateArgs bool
	// validateResults checks successful tool results' structured_content
	// against the tool's output schema (validate_results, validate.go).
	validateResults bool
	schemas         schemaCache
	// schemaWarn throttles the error of an input schema that cannot be
	// checked: logged once per schema, but a tools() may make a new one
	// for every call.
	schemaWarn logcap.Throttle
	// crashes throttles this version's crash lines, per place (crashlog.go):
	// a reload starts afresh, since its places may be other lines.
	crashes crashLog
	// prints meters this version's print lines (printlog.go).
	prints printLog
}

var _ mcp.Server = (*Script)(nil)

// Load compiles one script once and validates its module table and route
// options. Errors read "file:line: message" where Lua gives a line.
func Load(path string, cfg Config) (*Script, error) {
	return LoadContext(context.Background(), path, cfg)
}

// LoadContext is Load under ctx: cancelling it stops the script's main chunk
// (which also stops by itself after 5 s).
func LoadContext(ctx context.Context, path string, cfg Config) (*Script, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".lua")
	if cfg.Dir == "" {
		cfg.Dir = filepath.Dir(path)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = logcap.Logger(cfg.Logger) // scripts write much of what is logged
	if cfg.PoolSize == 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	cfg.PoolSize = max(cfg.PoolSize, 0)
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	chunk := chunkName(path, cfg.Dir)
	logger := cfg.Logger.With("script", name)
	s := &Script{
		name:     name,
		path:     path,
		chunk:    chunk,
		cfg:      cfg,
		logger:   logger,
		watch:    newWatchdog(cfg.MemoryLimit, logger),
		lane:     cfg.Sched.newLane(),
		sessions: make(map[*session]struct{}),
	}
	ver, err := s.PrepareContext(ctx)
	if err != nil {
		return nil, err
	}
	s.cur.Store(ver)
	return s, nil
}

// chunkName is how messages name the file at path: relative to dir when it
// lies inside it.
func chunkName(path, dir string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(path)
}

// Prepare compiles the script's file again into a version that is not yet
// current, validating it as Load does: Commit makes it current, Discard drops
// it. The running version is untouched either way.
func (s *Script) Prepare() (*Version, error) { return s.PrepareContext(context.Background()) }

// PrepareContext is Prepare under ctx: cancelling it stops the main chunk
// (which also stops by itself after 5 s).
func (s *Script) PrepareContext(ctx context.Context) (*Version, error) {
	src, err := ReadSource(s.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.chunk, err)
	}
	proto, err := compile(src, s.chunk, maxFileDepth, nil)
	if err != nil {
		return nil, err
	}
	ver := &Version{
		Script:  s,
		proto:   proto,
		modules: newModules(s.cfg.Dir),
		retLine: returnLine(proto),
	}
	v, err := ver.newVM(ctx)
	if err != nil {
		return nil, err
	}
	if err := ver.validate(v); err != nil {
		v.close()
		return nil, err
	}
	v.host.Grant(ver.lib)
	if err := v.limitMemory(); err != nil {
		v.close()
		return nil, err
	}
	ver.pool = newPool(ver, s.cfg.PoolSize)
	ver.pool.start(v)
	return ver, nil
}

// Options returns the version's route options (see Script.Options).
func (ver *Version) Options() mcp.Options { return ver.opts }

// Discard releases a version that will not be committed.
func (ver *Version) Discard() { ver.pool.close() }

// defines reports whether the version's server module defines callback cb.
func (s *Version) defines(cb int) bool { return s.defined[cb] }

// current returns the current version.
func (s *Script) current() *Version { return s.cur.Load() }

// validate checks the server module of a freshly built state: callback types,
// auth and route options.
func (s *Version) validate(v *vm) error {
	mod := v.module
	for i, name := range callbackNames {
		if val := mod.RawGetString(name); val != lua.LNil && !required(i) {
			if _, ok := val.(*lua.LTable); ok && isList(i) {
				continue // a static list (lists.go)
			}
			if _, ok := val.(*lua.LFunction); !ok {
				what := "a function"
				if isList(i) {
					what = "a function or a table (a static list)"
				}
				return s.moduleError("%s must be %s, got %s", name, what, describe(val))
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
	route, _ := mod.RawGetString("route").(*lua.LTable)
	var allow lua.LValue = lua.LNil
	if route != nil {
		allow = route.RawGetString("allow")
	}
	grants, err := hostlib.ParseAllow(allow, s.cfg.Dir, nil)
	if err != nil {
		return s.moduleError("%v", err)
	}
	s.opts, s.memory, s.reuseLists, s.hibernate = opts.Options, opts.memoryLimit, opts.reuseLists, opts.hibernate
	s.validateArgs, s.validateResults = opts.validateArgs, opts.validateResults
	for i, fn := range v.fns {
		s.defined[i] = fn != nil
	}
	s.callTimeout = timeoutError{what: "call timeout", limit: cmp.Or(opts.callTimeout, s.cfg.CallTimeout)}
	s.slotWait = opts.Defaults().RequestTimeout
	s.lib = hostlib.New(hostlib.Config{Grants: grants, Dir: s.cfg.Dir})
	if s.cfg.Pushes != nil {
		s.pushes = s.cfg.Pushes(s.opts.Path)
	}
	return nil
}

// versionPushes is where the mcp module of a version's states pushes: the
// version's route, known once its chunk has run on the first state (pushes
// made by that first run, before any session exists, are dropped).
type versionPushes struct{ v *Version }

func (p versionPushes) Notify(sessionID, method string, params json.RawMessage) {
	if q := p.v.pushes; q != nil {
		q.Notify(sessionID, method, params)
	}
}

func (p versionPushes) Broadcast(channel, method string, params json.RawMessage) {
	if q := p.v.pushes; q != nil {
		q.Broadcast(channel, method, params)
	}
}

func (p versionPushes) ResourceUpdated(uri string) {
	if q := p.v.pushes; q != nil {
		q.ResourceUpdated(uri)
	}
}

func (p versionPushes) Log(sessionID, level string, data json.RawMessage) {
	if q := p.v.pushes; q != nil {
		q.Log(sessionID, level, data)
	}
}

// moduleError reports a problem with the server module, at the line of the
// chunk's return statement when it has one.
func (s *Version) moduleError(format string, args ...any) error {
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

// Options returns the current version's route options: Path defaulted to
// /mcp/<name>, Auth set when the module has an auth function. Other unset
// options are zero (their defaults, see mcp.Options.Defaults).
func (s *Script) Options() mcp.Options { return s.current().opts }

// Modules returns the files, relative to Config.Dir and slash-separated, of
// the modules the current version has required so far: a change to one of
// them calls for a reload.
func (s *Script) Modules() []string {
	m := s.current().modules
	m.mu.Lock()
	defer m.mu.Unlock()
	files := make([]string, 0, len(m.protos))
	for _, p := range m.protos {
		files = append(files, p.SourceName)
	}
	slices.Sort(files)
	return files
}

// Grants returns what the current version's route.allow grants.
func (s *Script) Grants() *hostlib.Grants { return s.current().lib.Grants() }

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

// Retire marks the script as leaving while the server goes on (its file was
// removed, or its route is remounted): sessions the transport ends from now
// on with reason "shutdown" run terminate with reason "normal".
func (s *Script) Retire() { s.retired.Store(true) }

// Close stops the pool filler and closes the pooled states. Sessions still
// open keep their states until they are closed. A version committed later is
// discarded.
func (s *Script) Close() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.stopSweeper()
	s.current().pool.close()
}

// EndedStates reports how many states of ended sessions (closed, reaped,
// hibernated, snapshots) went back to a pool's fresh lane as pristine, and
// how many were closed, since the script was loaded (recycle.go).
func (s *Script) EndedStates() (recycled, closed int64) {
	return s.ended[recycledState].Load(), s.ended[closedState].Load()
}

// LiveStates reports the Lua states of this script that are open: pooled,
// owned by a session, or lent to a request, of every version. Tests use it to
// prove that nothing leaks.
func (s *Script) LiveStates() int { return int(s.live.Load()) }
