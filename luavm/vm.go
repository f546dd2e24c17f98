package luavm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/bridge/hostlib"
	"github.com/luamcp/luamcp/internal/logcap"
	lua "github.com/yuin/gopher-lua"
)

// The server module's callbacks.
const (
	cbInit = iota
	cbTools
	cbHandleTool
	cbResources
	cbResourceTemplates
	cbReadResource
	cbPrompts
	cbGetPrompt
	cbComplete
	cbChannels
	cbTerminate
	numCallbacks
)

var callbackNames = [numCallbacks]string{
	"init", "tools", "handle_tool", "resources", "resource_templates", "read_resource",
	"prompts", "get_prompt", "complete", "channels", "terminate",
}

// required reports whether every server module must define callback i.
func required(i int) bool { return i <= cbHandleTool }

// A vm is one sandboxed Lua state that has run the script's chunk: its own
// globals, `mcp` module and server module. Like the state, it has one owner at
// a time.
type vm struct {
	s      *Version
	L      *lua.LState
	codec  *bridge.Codec
	mod    *bridge.Module
	module *lua.LTable // the server module the chunk returned
	fns    [numCallbacks]*lua.LFunction
	auth   *lua.LFunction

	host    hostlib.State   // the host modules (http, fs, json, ...) this state required
	loaded  *lua.LTable     // package.loaded
	loading map[string]bool // modules being required, for loop detection

	// static holds the lists the module gives as tables (lists.go); fns
	// holds a function returning each.
	static [numCallbacks]*lua.LTable
	// constant marks the list functions proven to build their result from
	// constants alone (lists.go).
	constant [numCallbacks]bool
	// lists caches the lookups' list results (lists.go).
	lists [numCallbacks]listCache

	buf     []byte         // scratch for encoded results
	mirror  *bridge.Mirror // the rollback backup of the owning session's state; nil until needed
	globals *globals       // the snapshot a spare state is put back to (isolate.go); nil until lent as one
	base    *lua.Baseline  // what Lua could reach once the state was built (recycle.go); nil: never recycled
	fields  []field        // scratch for top-level object keys
	run     run            // the run in progress; a state runs one at a time

	// broken is set when a call on the state crashed or was interrupted:
	// Lua may have been stopped halfway through anything, so the state is
	// not lent again.
	broken bool
	closed bool
}

// newVM builds a sandboxed state and runs the script's chunk on it, under ctx.
func (s *Version) newVM(ctx context.Context) (*vm, error) {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       callStackSize,
		RegistrySize:        registrySize,
		RegistryMaxSize:     registryMaxSize,
		RegistryGrowStep:    registryGrowStep,
		MinimizeStackMemory: true,
	})
	s.live.Add(1)
	v := &vm{s: s, L: L, loading: make(map[string]bool)}
	v.codec = bridge.NewCodec(L)
	v.mod = bridge.NewModule(v.codec, versionPushes{s}, s.logger)
	v.host.Init(L, v.codec)
	v.sandbox()
	// The budget's measure walks what Lua reaches from the registry, the
	// globals and the threads. These tables are held by Go, and Lua reaches
	// them again through Go (getmetatable(mcp.array({})), require once
	// package is gone, the module's callbacks): out of the registry, what a
	// script stashed in them was never counted (a callback's upvalues only
	// while it ran), and a 16 MiB state held hundreds of MiB.
	roots := L.CreateTable(6, 0)
	for _, r := range v.mod.Roots() {
		roots.Append(r)
	}
	roots.Append(v.loaded)
	L.G.Registry.RawSetString("luamcp.roots", roots)
	L.SetMemoryLimit(s.stateMemory())

	run := v.start(ctx, &timeoutError{what: "load timeout", limit: loadTimeout})
	run.quiet = true
	rets, err := run.call("main chunk", L.NewFunctionFromProto(s.proto), 1)
	run.end()
	if err != nil {
		v.close()
		return nil, err
	}
	module, ok := rets[0].(*lua.LTable)
	if !ok {
		v.close()
		return nil, s.moduleError("the script must return the server module (a table), got %s", describe(rets[0]))
	}
	for i, name := range callbackNames {
		fn, _ := module.RawGetString(name).(*lua.LFunction)
		if t, ok := module.RawGetString(name).(*lua.LTable); ok && isList(i) {
			fn = v.staticList(i, t)
		} else if fn != nil && isList(i) {
			v.constant[i] = constantFunction(fn)
		}
		if fn == nil && required(i) {
			v.close()
			return nil, s.moduleError("the server module has no %s function", name)
		}
		v.fns[i] = fn
	}
	v.module = module
	roots.Append(module)
	v.auth, _ = module.RawGetString("auth").(*lua.LFunction)
	if s.lib != nil { // nil on the first state of a version: Prepare grants it
		v.host.Grant(s.lib)
	}
	return v, nil
}

// stateMemory is the budget of the version's states. The first state of a
// version runs the chunk before the route table is read: it runs under the
// process ceiling, and limitMemory then applies the route's budget.
func (s *Version) stateMemory() int64 {
	switch {
	case s.memory > 0:
		return s.memory
	case s.cfg.MemoryLimit == 0:
		return DefaultMemoryLimit
	}
	return max(s.cfg.MemoryLimit, 0) // negative: none
}

// limitMemory applies the version's budget to the state that validated it; a
// chunk that left the state holding more fails to load.
func (v *vm) limitMemory() error {
	v.L.SetMemoryLimit(v.s.memory)
	if used := v.L.MemoryUsage(); used > v.s.memory {
		return v.s.moduleError("%s: the state holds %d MiB once the script is loaded, more than memory_limit_mb (%d)",
			errMemoryLimit, used>>20, v.s.memory>>20)
	}
	return nil
}

// hold makes the state's memory budget count a session's state, which Go
// keeps between calls (ss.state) and Lua reaches only during them: a measure
// taken between calls (a decode's, waking's) would leave it out, and the
// budget's count would restart without it (lua.LState.SetMemoryRoot). nil
// forgets it.
func (v *vm) hold(state lua.LValue) { v.L.SetMemoryRoot(state) }

// account holds a session state that Go code built in the state (Thaw, when
// a hibernated session wakes; CopyTo, when a reload moves it) and measures
// it: the budget counted its tables as they were made, but not its strings,
// which are most of a state. It reports the state's size.
func (v *vm) account(state lua.LValue) int64 {
	v.hold(state)
	return v.L.MemoryUsage()
}

// overBudget logs a session state that is larger than its state's budget
// once built (account): a reload lowered the limit. The session goes on,
// its state intact, but its calls fail with "memory limit exceeded" (their
// arguments' decode first) until a reload raises the limit again or the
// session ends.
func (v *vm) overBudget(id string, used int64) {
	if limit := v.L.MemoryLimit(); limit > 0 && used > limit {
		v.s.Script.logger.Warn("the session's state is larger than memory_limit_mb: its calls fail with \"memory limit exceeded\" until it shrinks",
			"session", logcap.Session(id), "MiB", used>>20, "memory_limit_mb", limit>>20)
	}
}

// backup returns a deep copy of a session state, taken before a call so that
// a crash can put it back. The copy is kept and patched from one call to the
// next (bridge.Mirror), so an unchanged state costs a read, not a rebuild.
// A crash puts it back with rollback.
func (v *vm) backup(state lua.LValue) lua.LValue {
	if v.mirror == nil {
		v.mirror = v.codec.NewMirror()
	}
	return v.mirror.Sync(state)
}

// rollback puts the last backup back into the tables of the state it was
// taken of (bridge.Mirror.Restore), and returns that state.
func (v *vm) rollback() lua.LValue {
	return v.mirror.Restore()
}

// has reports whether the module defines callback i.
func (v *vm) has(i int) bool { return v.fns[i] != nil }

func (v *vm) close() {
	if v.closed {
		return
	}
	v.closed = true
	v.L.Close()
	v.s.live.Add(-1)
}

// A run is one stretch of Lua work on a vm under one context: a Session
// method, a chunk, an auth check. It bounds the work by the caller's context,
// a time limit (the call timeout of a callback, the load timeout of the main
// chunk) and the memory watchdog, and holds a scheduler slot (sched.go)
// while Lua runs.
type run struct {
	v      *vm
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	watch  watched
	line   callLine // the line to the client of the call in progress (line.go)
	slot   bool     // holds a scheduler slot, given back by end
	quiet  bool     // do not log failures (Load reports them itself)
}

// timeoutError is the cause given to a run that outlives its time limit.
type timeoutError struct {
	what  string // "call timeout" or "load timeout"
	limit time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%s: still running after %s", e.what, e.limit)
}

// loadTimeout bounds the main chunk of a script (and of every fresh state
// of it): a chunk that loops cannot stall a start, a reload or the pool.
const loadTimeout = 5 * time.Second

// begin starts a callback on v: it takes a scheduler slot, waiting for one
// at most the route's request_timeout_ms, then runs under ctx and the call
// timeout. It fails, before any Lua runs, only when no slot came. The run
// must be ended before the next one begins.
func (v *vm) begin(ctx context.Context) (*run, error) {
	ver := v.s
	if err := ver.lane.acquire(ctx, ver.slotWait); err != nil {
		return nil, fmt.Errorf("%s: %w", ver.name, err)
	}
	r := v.start(ctx, &ver.callTimeout)
	r.slot = true
	return r, nil
}

// start starts a run on v bounded by ctx and *limit, without a slot.
func (v *vm) start(ctx context.Context, limit *timeoutError) *run {
	cctx, cancel := context.WithCancelCause(ctx)
	v.run = run{v: v, parent: ctx, ctx: cctx, cancel: cancel}
	r := &v.run
	r.timer = time.AfterFunc(limit.limit, func() { cancel(limit) })
	r.watch.cancel = cancel
	r.watch.state = v.L
	v.s.watch.add(&r.watch)
	v.L.SetContext(cctx)
	return r
}

func (r *run) end() {
	r.v.L.RemoveContext()
	r.v.L.SetTop(0)
	r.timer.Stop()
	r.v.s.watch.remove(&r.watch)
	r.cancel(nil)
	if r.slot {
		r.v.s.lane.release()
	}
	*r = run{v: r.v}
}

// call runs fn(args...) and returns its first nret (at most 3) results; the
// missing ones are nil. name is the callback's name, for errors and logs.
func (r *run) call(name string, fn *lua.LFunction, nret int, args ...lua.LValue) ([3]lua.LValue, error) {
	var rets [3]lua.LValue
	L := r.v.L
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	if err := L.PCall(len(args), nret, nil); err != nil {
		return rets, r.fail(name, err)
	}
	if cause := r.stopCause(); cause != nil {
		// Stopped as Lua returned: its results do not stand.
		L.Pop(nret)
		return rets, r.stopped(name, cause)
	}
	for i := range nret {
		rets[i] = L.Get(i - nret)
		if rets[i] == nil {
			// A Go nil is no Lua value: the VM's stack is corrupt (an
			// interpreter bug, such as FuzzChunk found). Reading it would
			// panic on the host's side with the session's lock held;
			// the call is a crash instead, and fail drops the state.
			L.Pop(nret)
			return [3]lua.LValue{}, r.fail(name, errCorrupt)
		}
	}
	L.Pop(nret)
	for i := nret; i < len(rets); i++ {
		rets[i] = lua.LNil
	}
	return rets, nil
}

// errCorrupt is the crash of a call whose results the VM left corrupt.
var errCorrupt = errors.New("the Lua VM returned an invalid value")

// fail turns a failed call into the error the transport expects: one wrapping
// the context's error when the caller cancelled it, a crash otherwise. A crash
// is logged with its position and traceback.
func (r *run) fail(name string, err error) error {
	v := r.v
	v.broken = true
	if cause := r.stopCause(); cause != nil {
		return r.stopped(name, cause)
	}
	if perr := r.parent.Err(); perr != nil {
		v.s.logger.Debug("Lua call interrupted", "callback", name, "cause", context.Cause(r.parent))
		return fmt.Errorf("%s: %s interrupted: %w", v.s.name, name, perr)
	}
	msg, trace := v.errorText(err)
	if r.ctx.Err() != nil {
		// Cancelled here: the time limit or the memory watchdog.
		msg = position(msg) + context.Cause(r.ctx).Error()
	}
	return r.crash(name, msg, trace)
}

// stopCause returns why the transport stopped the run (callLine), or nil.
func (r *run) stopCause() error {
	if r.ctx.Err() == nil {
		return nil
	}
	if cause := context.Cause(r.ctx); stops(cause) {
		return cause
	}
	return nil
}

// stopped ends a run the transport stopped: a normal interruption (the
// 2026-07-28 era's input_required), logged at debug, never as a crash. The
// state is not lent again: Lua stopped halfway.
func (r *run) stopped(name string, cause error) error {
	v := r.v
	v.broken = true
	v.s.logger.Debug("Lua call stopped by the transport", "callback", name, "cause", cause)
	return &stopError{script: v.s.name, callback: name, cause: cause}
}

// crash logs a failed callback, with its traceback, and returns the error
// that stands for it. The message and the traceback come from the script:
// they are cut at logcap.Max.
func (r *run) crash(name, msg, trace string) error {
	v := r.v
	v.broken = true
	msg = logcap.String(msg)
	if r.quiet {
		return errors.New(msg)
	}
	e := &crashError{script: v.s.name, callback: name, msg: msg}
	place := position(msg)
	if place == "" {
		place = tracePosition(trace)
	}
	ok, held := v.s.crashes.allow(name+"\x00"+place, time.Now())
	if !ok {
		e.held = true
		return e
	}
	attrs := []any{"callback", name, "error", msg}
	if trace != "" {
		attrs = append(attrs, "traceback", logcap.String(trace))
	}
	if held > 0 {
		attrs = append(attrs, "same_crashes_not_logged", held)
	}
	v.s.logger.Error("Lua callback failed", attrs...)
	return e
}

// A crashError is a callback that crashed, logged by run.crash. The
// transport logs the crashes it is given too: in a log, a crashError names
// the callback and leaves the message out, so that no message is logged
// twice (a script's error can be megabytes long).
type crashError struct {
	script, callback, msg string
	// held is set when the crash was not logged: its place crashed and was
	// logged within crashLogEvery (crashlog.go).
	held bool
}

func (e *crashError) Error() string { return e.script + ": " + e.callback + ": " + e.msg }

// LogValue is how a crashError appears in a log record.
func (e *crashError) LogValue() slog.Value {
	return slog.StringValue(e.script + ": " + e.callback + " crashed (logged as \"Lua callback failed\")")
}

// Throttled reports whether the crash was held back rather than logged
// ([mcp.Throttled]): the transport then does not log it either.
func (e *crashError) Throttled() bool { return e.held }

// crashf reports a callback whose result breaks the contract.
func (r *run) crashf(name, format string, args ...any) error {
	return r.crash(name, r.v.definedAt(name)+fmt.Sprintf(format, args...), "")
}

// errorText returns the message and traceback of a Lua error. A table raised
// with error{...} is shown as JSON when it has a JSON form.
func (v *vm) errorText(err error) (msg, trace string) {
	var aerr *lua.ApiError
	if !errors.As(err, &aerr) {
		return err.Error(), ""
	}
	trace = aerr.StackTrace
	switch obj := aerr.Object.(type) {
	case lua.LString:
		msg = string(obj)
	case *lua.LTable:
		if b, jerr := v.codec.Encode(obj, "error"); jerr == nil {
			msg = "error object " + string(b)
		} else {
			msg = "error object " + obj.String()
		}
	default:
		if obj == nil {
			msg = err.Error()
		} else {
			msg = "error object " + obj.String()
		}
	}
	if position(msg) == "" {
		if at := tracePosition(trace); at != "" {
			msg = at + " " + msg
		}
	}
	return msg, trace
}

// position returns the "file:line: " prefix of a Lua error message, or "".
func position(msg string) string {
	colon := strings.IndexByte(msg, ':')
	if colon <= 0 || strings.ContainsAny(msg[:colon], " \t\n") {
		return ""
	}
	i := colon + 1
	for i < len(msg) && msg[i] >= '0' && msg[i] <= '9' {
		i++
	}
	if i == colon+1 || i+1 >= len(msg) || msg[i] != ':' || msg[i+1] != ' ' {
		return ""
	}
	return msg[:i+2]
}

// tracePosition returns the first "file:line:" of a Lua traceback.
func tracePosition(trace string) string {
	for line := range strings.SplitSeq(trace, "\n") {
		line = strings.TrimSpace(line)
		if p := position(line); p != "" && !strings.HasPrefix(line, "[G]") {
			return strings.TrimSuffix(p, " ")
		}
	}
	return ""
}
