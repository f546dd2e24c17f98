// Package hostlib is the host library of luamcp scripts (host-api.md): the
// Lua modules through which a script reaches the world — http, fs, env and
// exec, each behind the permissions the script declares in route.allow — and
// the pure modules json, base64, crypto, time, re and url, always there.
//
// A [Lib] holds what the states of one script version share: its [Grants]
// and its HTTP client. A [State] is the host library of one Lua state: it
// builds a module when the script requires it, so a state that requires
// none pays nothing. Every function follows one outcome convention: it
// returns its value, or nil and a message naming the module and the cause
// (denied, not found, too large, timed out, a network error); it raises a
// Lua error only for a programmer's mistake, such as an argument of the
// wrong type. Every call is bound to the context of the Lua state's running
// call (LState.Context), so a cancelled or timed-out request stops its HTTP
// request or kills its process.
package hostlib

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/luamcp/luamcp/bridge"
	lua "github.com/yuin/gopher-lua"
)

// UserAgent is the User-Agent of every HTTP request scripts make. The
// command sets it to "luamcp/<version>" at start.
var UserAgent = "luamcp"

// Config is what [New] needs.
type Config struct {
	Grants *Grants // route.allow, from ParseAllow; nil grants nothing
	Dir    string  // the scripts folder: base of relative paths, exec's default cwd
}

// Lib is the host library of one script version: its grants and the
// resources its states share. It is safe for concurrent use.
type Lib struct {
	grants *Grants
	dir    string

	// client is the route's one HTTP client (connection reuse); nil when
	// the script may reach no host.
	client    *http.Client
	transport *http.Transport
	closed    atomic.Bool // set by Close: connections are not kept idle after
}

// New returns the host library of a script version.
func New(cfg Config) *Lib {
	if cfg.Grants == nil {
		cfg.Grants = &Grants{}
	}
	l := &Lib{grants: cfg.Grants, dir: cfg.Dir}
	if len(cfg.Grants.HTTP) > 0 {
		l.transport = l.newTransport()
		l.client = &http.Client{Transport: l.transport, CheckRedirect: l.checkRedirect}
	}
	return l
}

// Grants returns what the script may reach.
func (l *Lib) Grants() *Grants { return l.grants }

// Close releases the library's idle connections. A call still running on a
// state of the version may go on; its connection is closed when it ends.
func (l *Lib) Close() {
	if l == nil {
		return
	}
	l.closed.Store(true)
	if l.transport != nil {
		l.transport.CloseIdleConnections()
	}
}

// State is the host library of one Lua state. Like the state, it has one
// owner at a time. Its zero value is unusable: call Init.
type State struct {
	// L is the state's main thread: its Context is the running call's.
	L     *lua.LState
	codec *bridge.Codec
	// lib is nil while the script's main chunk runs: the capability modules
	// refuse every call until Grant gives them the script's permissions,
	// which are only known once the chunk has returned its route table.
	lib *Lib
}

// Init binds s to the state L and its codec.
func (s *State) Init(L *lua.LState, codec *bridge.Codec) {
	s.L, s.codec = L, codec
}

// Grant gives the state's capability modules the script's permissions.
func (s *State) Grant(lib *Lib) { s.lib = lib }

// Open builds module name for the state, or returns false when name is not
// a host module. The caller caches the table (package.loaded).
func (s *State) Open(name string) (*lua.LTable, bool) {
	m, ok := modules[name]
	if !ok {
		return nil, false
	}
	L := s.L
	t := L.CreateTable(0, len(m.funcs)+2)
	for _, f := range m.funcs {
		s.setFunc(t, name+"."+f.name, f)
	}
	if m.extra != nil {
		m.extra(s, t)
	}
	return t, true
}

// setFunc sets t[f.name] to f for the state, known to argument errors as
// qualified ("json.decode") when its caller gives it no name: pcall(f, ...)
// or a metamethod read "bad argument #1 to '(anonymous)'" (a direct call
// json.decode() reads 'decode', as in Lua).
func (s *State) setFunc(t *lua.LTable, qualified string, f function) {
	fn := f.fn
	t.RawSetString(f.name, s.L.NewNamedFunction(qualified, func(L *lua.LState) int { return fn(s, L) }))
}

// IsModule reports whether name is a host module.
func IsModule(name string) bool {
	_, ok := modules[name]
	return ok
}

// Modules returns the names of the host modules and of their functions
// (nested tables as "raw.sha256"), for the editor stubs' test.
func Modules() map[string][]string {
	out := make(map[string][]string, len(modules))
	for name, m := range modules {
		var fns []string
		for _, f := range m.funcs {
			fns = append(fns, f.name)
		}
		out[name] = append(fns, m.more...)
	}
	return out
}

// A module is one host module: its functions, and optionally other fields.
type module struct {
	funcs []function
	extra func(s *State, t *lua.LTable) // adds fields that are not plain functions
	more  []string                      // the functions extra adds, as "table.name"
}

type function struct {
	name string
	fn   func(s *State, L *lua.LState) int
}

// modules are the host modules by name; each is defined in its own file.
var modules = map[string]*module{
	"json":   &jsonModule,
	"base64": &base64Module,
	"crypto": &cryptoModule,
	"time":   &timeModule,
	"re":     &reModule,
	"url":    &urlModule,
	"env":    &envModule,
	"fs":     &fsModule,
	"exec":   &execModule,
	"http":   &httpModule,
}

// ctx returns the running call's context.
func (s *State) ctx() context.Context {
	if ctx := s.L.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// granted returns the script's library, or nil (after pushing the failure)
// while the main chunk runs.
func (s *State) granted(L *lua.LState, mod string) *Lib {
	if s.lib == nil {
		fail(L, "%s: not available while the script's main chunk runs (call it from init or a callback)", mod)
	}
	return s.lib
}

// fail pushes the in-band failure nil, message and returns its count. A
// message may quote what the script passed (a name, a URL's port): it is
// charged to the memory budget like a result, and cut to maxCutMessage
// bytes when the budget cannot hold it.
func fail(L *lua.LState, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if L.ReserveMemory(len(msg)) != nil && len(msg) > maxCutMessage {
		msg = strings.ToValidUTF8(msg[:maxCutMessage], "") + "..." // not mid-character
	}
	L.Push(lua.LNil)
	L.Push(lua.LString(msg))
	return 2
}

// maxCutMessage is the length of a failure message the budget could not
// hold: the start of it says what failed.
const maxCutMessage = 256

// optTable returns argument n as a table, or nil when it is absent or nil; any
// other value raises.
func optTable(L *lua.LState, n int) *lua.LTable {
	switch v := L.Get(n).(type) {
	case *lua.LNilType:
		return nil
	case *lua.LTable:
		return v
	}
	L.TypeError(n, lua.LTTable)
	return nil
}

// onlyOptions raises when options table t (nil: none) has a key other than
// keys: an unknown option key is a programmer's mistake (script-api.md,
// "Outcomes").
func onlyOptions(L *lua.LState, t *lua.LTable, fname string, keys ...string) {
	if t == nil {
		return
	}
	t.ForEach(func(k, _ lua.LValue) {
		if ks, ok := k.(lua.LString); !ok || !slices.Contains(keys, string(ks)) {
			L.RaiseError("%s: unknown option %s (want %s)", fname, describe(k), strings.Join(keys, ", "))
		}
	})
}

// field reads an option of an options table: nil when absent.
func field(t *lua.LTable, key string) lua.LValue {
	if t == nil {
		return lua.LNil
	}
	return t.RawGetString(key)
}

// intField reads an integer option in [least, most], or def when absent. A
// value of another type or out of range raises, naming fname and key.
func intField(L *lua.LState, t *lua.LTable, fname, key string, def, least, most int64) int64 {
	v := field(t, key)
	if v == lua.LNil {
		return def
	}
	n, ok := v.(lua.LNumber)
	if !ok || float64(n) != float64(int64(n)) || int64(n) < least || int64(n) > most {
		L.RaiseError("%s: %s must be an integer from %d to %d, got %s", fname, key, least, most, describe(v))
	}
	return int64(n)
}

// intArg reads argument n, a count, as an integer in [least, most]. A
// fraction, NaN or a number out of range raises rather than being cut to an
// integer as Lua's luaL_checkint would: random_bytes(1.5) is a mistake.
func intArg(L *lua.LState, n int, least, most int64) int64 {
	v := L.CheckNumber(n)
	if f := float64(v); f != math.Trunc(f) || f < float64(least) || f > float64(most) {
		L.ArgError(n, fmt.Sprintf("an integer from %d to %d expected, got %s", least, most, v.String()))
	}
	return int64(v)
}

// boolField reads a boolean option, or def when absent.
func boolField(L *lua.LState, t *lua.LTable, fname, key string, def bool) bool {
	v := field(t, key)
	if v == lua.LNil {
		return def
	}
	b, ok := v.(lua.LBool)
	if !ok {
		L.RaiseError("%s: %s must be true or false, got %s", fname, key, describe(v))
	}
	return bool(b)
}

// stringField reads a string option, or def when absent.
func stringField(L *lua.LState, t *lua.LTable, fname, key, def string) string {
	v := field(t, key)
	if v == lua.LNil {
		return def
	}
	s, ok := v.(lua.LString)
	if !ok {
		L.RaiseError("%s: %s must be a string, got %s", fname, key, describe(v))
	}
	return string(s)
}

// stringMap reads an option that is a table of string keys to strings (or
// numbers), such as headers; nil when absent.
func stringMap(L *lua.LState, t *lua.LTable, fname, key string) map[string]string {
	v := field(t, key)
	if v == lua.LNil {
		return nil
	}
	m, ok := v.(*lua.LTable)
	if !ok {
		L.RaiseError("%s: %s must be a table of strings, got %s", fname, key, describe(v))
	}
	out := make(map[string]string)
	m.ForEach(func(k, val lua.LValue) {
		ks, ok := k.(lua.LString)
		if !ok {
			L.RaiseError("%s: %s has a key that is not a string: %s", fname, key, describe(k))
		}
		out[string(ks)] = scalar(L, val, fname+": "+key+"."+string(ks))
	})
	return out
}

// scalar converts a string, finite number or boolean to text; anything else
// raises, naming what (NaN and the infinities have no text a server reads as
// a number: json refuses them too).
func scalar(L *lua.LState, v lua.LValue, what string) string {
	switch v := v.(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			L.RaiseError("%s must be a finite number, got %s", what, v.String())
		}
		return v.String()
	case lua.LBool:
		if v {
			return "true"
		}
		return "false"
	}
	L.RaiseError("%s must be a string, number or boolean, got %s", what, describe(v))
	return ""
}
