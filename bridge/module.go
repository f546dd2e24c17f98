package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Pushes is where mcp.notify, mcp.broadcast, mcp.resource_updated and
// mcp.log(session_id, ...) go (the transport's Hub). Params and data arrive
// already encoded and valid; nil params means none.
type Pushes interface {
	Notify(sessionID, method string, params json.RawMessage)
	Broadcast(channel, method string, params json.RawMessage)
	ResourceUpdated(uri string)
	Log(sessionID, level string, data json.RawMessage)
}

// CallLine is the running call's own stream back to the client (luavm
// adapts the transport's Outbound to it: bridge imports no mcp).
type CallLine interface {
	Progress(params json.RawMessage) error
	Log(level string, data json.RawMessage) error
	// Ask sends one round of requests to the client and returns the answers
	// in the order of reqs (see mcp.Outbound.Ask). A request that failed
	// alone (a JSON-RPC error, a capability the client lacks) has its Err
	// set. An error of the round ends the call: the line has cancelled the
	// call's context by then (in the 2026-07-28 era, to answer
	// input_required or -32021).
	Ask(ctx context.Context, reqs []InputRequest) ([]InputAnswer, error)
	// StartTask makes the call a task and reports whether it is one (see
	// mcp.Outbound.StartTask); ttl and poll of 0 mean the defaults.
	StartTask(ttl, poll time.Duration) bool
	CloseStream() error
}

// InputRequest is one request to the client within a [CallLine.Ask] round.
type InputRequest struct {
	// Key names the request among the call's requests: the script's key=,
	// or a name given by its place in the call ("elicit-1", ...). Never
	// empty.
	Key string
	// Method is elicitation/create, sampling/createMessage or roots/list.
	Method string
	// Params are the encoded params: an object, {} for none.
	Params json.RawMessage
}

// InputAnswer is the client's answer to one [InputRequest]: its encoded
// result, or why there is none.
type InputAnswer struct {
	Result json.RawMessage
	Err    error
}

// CallInfo describes the call a ctx table stands for.
type CallInfo struct {
	SessionID     string
	RequestID     json.RawMessage
	ProgressToken json.RawMessage // nil = none
	// ProtocolVersion is the revision the call is served under (ctx.protocol_version).
	ProtocolVersion string
	// ClientCapabilities is the client's capabilities object
	// (ctx.client_capabilities); nil when unknown.
	ClientCapabilities json.RawMessage
	// Auth is the request's verified access token (ctx.auth); nil on a
	// route without oauth.
	Auth *CallAuth
	Line CallLine

	// asked holds the keys of the requests the call has made, so that a
	// key names one request only (a re-run of the call in the 2026-07-28
	// era is answered by key). nil until the first request.
	asked map[string]struct{}
	// askedBytes is the bytes of the keys in asked (maxAskedBytes).
	askedBytes int
	// made counts the requests made without a key, by function, to name
	// them "elicit-1", "sample-1", "roots-1", ...
	made [numAskers]int
	// lastProgress is the progress of the call's last progress
	// notification, once progressed: MCP has each one's progress increase,
	// so mcp.progress does not send one that is not above it.
	lastProgress float64
	progressed   bool
}

// Module is the `mcp` Lua module of one LState.
type Module struct {
	c      *Codec
	pushes Pushes
	logger *slog.Logger
	table  *lua.LTable
	calls  map[*lua.LTable]*CallInfo // live ctx tables
	// ctxMeta is the metatable of ctx tables with lazy fields: {__index =
	// ctxIndex}. Shared by every call of the state, so it is protected
	// (__metatable): a script could otherwise rewrite it for the state's
	// next client (a pooled state serves several).
	ctxMeta *lua.LTable
	buf     []byte // scratch for notification params
}

// NewModule builds the `mcp` module for c's state. pushes may be nil (pushes
// are then dropped); logger may be nil.
func NewModule(c *Codec, pushes Pushes, logger *slog.Logger) *Module {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Module{c: c, pushes: pushes, logger: logger, calls: make(map[*lua.LTable]*CallInfo)}
	L := c.l
	t := L.CreateTable(0, 20)
	t.RawSetString("null", c.null)
	for _, f := range moduleFuncs {
		fn := f.fn
		t.RawSetString(f.name, L.NewNamedFunction("mcp."+f.name, func(L *lua.LState) int { return fn(m, L) }))
	}
	m.table = t
	m.ctxMeta = L.CreateTable(0, 2)
	m.ctxMeta.RawSetString("__index", L.NewFunction(m.ctxIndex))
	m.ctxMeta.RawSetString("__metatable", lua.LFalse)
	return m
}

// moduleFuncs are the functions of the mcp module.
var moduleFuncs = []struct {
	name string
	fn   func(*Module, *lua.LState) int
}{
	{"array", (*Module).array},
	{"object", (*Module).object},
	{"json_encode", (*Module).jsonEncode},
	{"json_decode", (*Module).jsonDecode},
	{"progress", (*Module).progress},
	{"notify", (*Module).notify},
	{"broadcast", (*Module).broadcast},
	{"resource_updated", (*Module).resourceUpdated},
	{"log", (*Module).log},
	{"sleep", (*Module).sleep},
	{"elicit", (*Module).elicit},
	{"sample", (*Module).sample},
	{"list_roots", (*Module).listRoots},
	{"ask", (*Module).ask},
	{"close_stream", (*Module).closeStream},
	{"task", (*Module).task},
}

// Loader pushes the module table; register it as package.preload["mcp"].
func (m *Module) Loader(L *lua.LState) int {
	L.Push(m.table)
	return 1
}

// Table returns the module table.
func (m *Module) Table() *lua.LTable { return m.table }

// Roots returns the Lua values the module and its codec keep from Go and
// lend to Lua: the module table, the metatable of ctx tables, mcp.null and
// the array and object markers. A host recording what Lua can reach in the
// state (lua.LState.NewBaseline) passes them as roots: Lua reaches the
// markers through getmetatable of a decoded value, which no Lua root
// leads to.
func (m *Module) Roots() []lua.LValue {
	return []lua.LValue{m.table, m.ctxMeta, m.c.null, m.c.arrayMeta, m.c.objectMeta}
}

// Idle reports whether no call of the state is live (every BeginCall was
// ended).
func (m *Module) Idle() bool { return len(m.calls) == 0 }

// BeginCall returns a fresh ctx table {session_id, request_id,
// progress_token, protocol_version, client_capabilities, auth} for the call
// info describes; it stays live until EndCall.
//
// The table fields (client_capabilities, auth) are built when the script
// first reads them, through ctx's metatable (see [Module.ctxIndex]): most
// calls never look at them, and decoding them on every call cost as much as
// the rest of the call's set-up.
func (m *Module) BeginCall(info *CallInfo) *lua.LTable {
	ctx := m.c.l.CreateTable(0, 4)
	if info.SessionID != "" {
		ctx.RawSetString("session_id", lua.LString(info.SessionID))
	}
	if v := m.decodeID(info.RequestID); v != nil {
		ctx.RawSetString("request_id", v)
	}
	if v := m.decodeID(info.ProgressToken); v != nil {
		ctx.RawSetString("progress_token", v)
	}
	if info.ProtocolVersion != "" {
		ctx.RawSetString("protocol_version", lua.LString(info.ProtocolVersion))
	}
	if len(info.ClientCapabilities) > 0 || info.Auth != nil {
		ctx.Metatable = m.ctxMeta
	}
	m.calls[ctx] = info
	return ctx
}

// ctxIndex is the __index of ctx tables: it builds a lazy field on its first
// read, from the call's info, and stores it in ctx, so that later reads (and
// pairs) see it as a plain field. Read after EndCall, a field never read
// during the call is nil: the call is over.
func (m *Module) ctxIndex(L *lua.LState) int {
	ctx := L.CheckTable(1)
	key := L.Get(2)
	info := m.calls[ctx]
	var v lua.LValue = lua.LNil
	if k, ok := key.(lua.LString); ok && info != nil {
		switch k {
		case "client_capabilities":
			// The transport checked the object; one that does not decode
			// (too deep) is left out rather than failing the call.
			if dv, err := m.c.Decode(info.ClientCapabilities); err == nil {
				if t, ok := dv.(*lua.LTable); ok {
					v = t
				}
			}
		case "auth":
			if info.Auth != nil {
				v = m.c.AuthTable(info.Auth)
			}
		}
		if v != lua.LNil {
			ctx.RawSetString(string(k), v)
		}
	}
	L.Push(v)
	return 1
}

// decodeID decodes a request id or progress token (a string or a number);
// nil when absent or malformed (the transport validates them).
func (m *Module) decodeID(raw json.RawMessage) lua.LValue {
	if len(raw) == 0 {
		return nil
	}
	v, err := m.c.Decode(raw)
	if err != nil || m.c.IsNull(v) {
		return nil
	}
	return v
}

// EndCall makes ctx inert: the mcp functions given it do nothing from now on
// (requests to the client fail in-band).
func (m *Module) EndCall(ctx *lua.LTable) {
	delete(m.calls, ctx)
}

// live returns the call behind the ctx argument at index n, or nil when it is
// not a live call. A non-table argument is an error.
func (m *Module) live(L *lua.LState, n int) *CallInfo {
	return m.calls[L.CheckTable(n)]
}

// raise stops the calling Lua code with msg, prefixed by its position.
func raise(L *lua.LState, msg string) {
	L.RaiseError("%s", msg)
}

// --- values -----------------------------------------------------------------

func (m *Module) array(L *lua.LState) int {
	L.Push(m.c.MarkArray(m.optTable(L)))
	return 1
}

func (m *Module) object(L *lua.LState) int {
	L.Push(m.c.MarkObject(m.optTable(L)))
	return 1
}

// optTable returns the table argument 1, or a new table when there is none.
func (m *Module) optTable(L *lua.LState) *lua.LTable {
	if L.Get(1) == lua.LNil {
		return L.CreateTable(0, 0)
	}
	return L.CheckTable(1)
}

func (m *Module) jsonEncode(L *lua.LState) int {
	buf, err := m.c.AppendEncode(m.buf[:0], L.Get(1), "value")
	if err == nil {
		err = L.ReserveMemory(len(buf)) // the Lua string copies it
	}
	if err != nil {
		raise(L, "mcp.json_encode: "+err.Error())
	}
	L.Push(lua.LString(buf))
	m.keep(buf)
	return 1
}

func (m *Module) jsonDecode(L *lua.LState) int {
	s := L.CheckString(1)
	v, err := m.c.Decode([]byte(s))
	if err != nil {
		raise(L, "mcp.json_decode: "+err.Error())
	}
	L.Push(v)
	return 1
}

// keep retains buf as scratch unless it grew too large.
func (m *Module) keep(buf []byte) {
	if cap(buf) <= maxKeptBuffer {
		m.buf = buf[:0]
	}
}

// encodeArg encodes argument n (a table, or nil for none) under root. It
// raises on a value that has no JSON form, so bad JSON never leaves the VM.
func (m *Module) encodeArg(L *lua.LState, fname string, n int, root string) (json.RawMessage, error) {
	v := L.Get(n)
	if v == lua.LNil {
		return nil, nil
	}
	if _, ok := v.(*lua.LTable); !ok {
		L.ArgError(n, root+" must be a table or nil, got "+typeName(v))
	}
	// A notification's params are an object in MCP: a list is refused
	// like params with no JSON form.
	if _, err := m.c.checkShape(v, root, Object); err != nil {
		return nil, fmt.Errorf("%s: %w", fname, err)
	}
	out, err := m.c.Encode(v, root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fname, err)
	}
	return out, nil
}

// pushed ends a push function: true when the push went out, or (after a log
// line) false and the reason when it was refused (params that cannot be
// encoded or are not an object, a method that is not a notification, an MCP
// notification without the params its schema requires). A refused push is dropped,
// not raised: it is a notification, and
// the call that made it goes on (behaviour.md: logged and dropped, using up
// no event id).
func (m *Module) pushed(L *lua.LState, err error) int {
	if err != nil {
		m.logger.Warn("push dropped", "err", err)
		L.Push(lua.LFalse)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	L.Push(lua.LTrue)
	return 1
}

// --- pushes -----------------------------------------------------------------

// checkNotification checks the params of a push of method, one of the
// notifications MCP defines, against what its schema requires
// (notificationNeeds): notifications/message without level is refused like
// params with no JSON form.
func (m *Module) checkNotification(fname, method string, params lua.LValue) error {
	if err := m.c.checkNotification(method, params); err != nil {
		return fmt.Errorf("%s: %w", fname, err)
	}
	return nil
}

// target returns the string argument n; ok is false for nil (a stateless
// ctx.session_id), which makes the push a no-op.
func target(L *lua.LState, n int) (s string, ok bool) {
	if L.Get(n) == lua.LNil {
		return "", false
	}
	return L.CheckString(n), true
}

// pushMethod checks the method of a push: a push only tells a client
// something, it never asks (requests to the client go through mcp.elicit,
// mcp.sample and mcp.list_roots, on a call's own stream).
func pushMethod(fname, method string) error {
	if !strings.HasPrefix(method, "notifications/") {
		return fmt.Errorf("%s: method %q is not a notification (want \"notifications/...\")", fname, method)
	}
	return nil
}

func (m *Module) notify(L *lua.LState) int {
	sid, ok := target(L, 1)
	method := L.CheckString(2)
	params, err := m.encodeArg(L, "mcp.notify", 3, "params")
	if err == nil {
		err = pushMethod("mcp.notify", method)
	}
	if err == nil {
		err = m.checkNotification("mcp.notify", method, L.Get(3))
	}
	if err == nil && ok && m.pushes != nil {
		m.pushes.Notify(sid, method, params)
	}
	return m.pushed(L, err)
}

func (m *Module) broadcast(L *lua.LState) int {
	channel := L.CheckString(1)
	method := L.CheckString(2)
	params, err := m.encodeArg(L, "mcp.broadcast", 3, "params")
	if err == nil {
		err = pushMethod("mcp.broadcast", method)
	}
	if err == nil {
		err = m.checkNotification("mcp.broadcast", method, L.Get(3))
	}
	if err == nil && m.pushes != nil {
		m.pushes.Broadcast(channel, method, params)
	}
	return m.pushed(L, err)
}

func (m *Module) resourceUpdated(L *lua.LState) int {
	uri := L.CheckString(1)
	if m.pushes != nil {
		m.pushes.ResourceUpdated(uri)
	}
	return m.pushed(L, nil)
}

// logLevels are the MCP (syslog) severities, lowest first.
var logLevels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func validLevel(level string) bool {
	for _, l := range logLevels {
		if l == level {
			return true
		}
	}
	return false
}

// log is mcp.log(session_id | ctx, level, data). Arguments are checked before
// anything else, so a bad level or data fails the same way whether or not the
// message would be delivered.
func (m *Module) log(L *lua.LState) int {
	level := L.CheckString(2)
	if !validLevel(level) {
		L.ArgError(2, "invalid log level \""+level+"\" (want one of "+strings.Join(logLevels[:], ", ")+")")
	}
	data, err := m.c.Encode(L.Get(3), "data")
	switch to := L.Get(1).(type) {
	case lua.LString:
		// A push to the session's channel: dropped (and logged) when its
		// data cannot be encoded, like notify and broadcast.
		if err != nil {
			return m.pushed(L, fmt.Errorf("mcp.log: %w", err))
		}
		if m.pushes != nil {
			m.pushes.Log(string(to), level, data)
		}
		return m.pushed(L, nil)
	case *lua.LTable:
		// Part of the running call, like progress: bad data fails the call.
		if err != nil {
			raise(L, "mcp.log: "+err.Error())
		}
		if info := m.calls[to]; info != nil && info.Line != nil {
			if err := info.Line.Log(level, data); err != nil {
				m.logger.Debug("mcp.log: message not sent", "err", err)
			}
		}
	case *lua.LNilType:
		// A stateless call has no session to log to.
		if err != nil {
			return m.pushed(L, fmt.Errorf("mcp.log: %w", err))
		}
		return m.pushed(L, nil)
	default:
		L.ArgError(1, "session id or ctx expected, got "+typeName(to))
	}
	return 0
}

// progress is mcp.progress(ctx, progress [, {total=, message=}]).
func (m *Module) progress(L *lua.LState) int {
	info := m.live(L, 1)
	p := L.CheckNumber(2)
	opts := L.OptTable(3, nil)
	total, message := lua.LValue(lua.LNil), lua.LValue(lua.LNil)
	if opts != nil {
		total, message = opts.RawGetString("total"), opts.RawGetString("message")
	}
	if _, ok := total.(lua.LNumber); !ok && total != lua.LNil {
		L.ArgError(3, "total must be a number, got "+typeName(total))
	}
	if _, ok := message.(lua.LString); !ok && message != lua.LNil {
		L.ArgError(3, "message must be a string, got "+typeName(message))
	}

	buf := append(m.buf[:0], `{"progressToken":`...)
	if info != nil {
		buf = append(buf, info.ProgressToken...)
	} else {
		buf = append(buf, '0') // placeholder: the arguments are checked all the same
	}
	buf = append(buf, `,"progress":`...)
	var perr *pathError
	if buf, perr = appendNumber(buf, float64(p)); perr != nil {
		raise(L, "mcp.progress: "+perr.finish("progress").Error())
	}
	if total != lua.LNil {
		buf = append(buf, `,"total":`...)
		if buf, perr = appendNumber(buf, float64(total.(lua.LNumber))); perr != nil {
			raise(L, "mcp.progress: "+perr.finish("total").Error())
		}
	}
	if message != lua.LNil {
		buf = append(buf, `,"message":`...)
		var ok bool
		if buf, ok = appendString(buf, string(message.(lua.LString))); !ok {
			raise(L, "mcp.progress: message: string is not valid UTF-8")
		}
	}
	buf = append(buf, '}')
	m.keep(buf)

	if info == nil || len(info.ProgressToken) == 0 || info.Line == nil {
		return 0
	}
	if info.progressed && float64(p) <= info.lastProgress {
		m.logger.Debug("mcp.progress: notification not sent: progress must increase", "progress", float64(p), "last", info.lastProgress)
		return 0
	}
	info.progressed, info.lastProgress = true, float64(p)
	if err := info.Line.Progress(json.RawMessage(append([]byte(nil), buf...))); err != nil {
		m.logger.Debug("mcp.progress: notification not sent", "err", err)
	}
	return 0
}

// --- waiting ----------------------------------------------------------------

// sleep is mcp.sleep(ms). It ends early, raising an error, when the state's
// context ends, so that a cancelled or timed-out call stops at once.
func (m *Module) sleep(L *lua.LState) int {
	ms := float64(L.CheckNumber(1))
	if ms != ms {
		L.ArgError(1, "ms must be a number, got NaN")
	}
	var d time.Duration
	switch {
	case ms <= 0:
	case ms >= float64(math.MaxInt64/int64(time.Millisecond)):
		d = math.MaxInt64
	default:
		d = time.Duration(ms * float64(time.Millisecond))
	}
	ctx := L.Context()
	if ctx == nil {
		time.Sleep(d)
		return 0
	}
	if err := ctx.Err(); err != nil {
		raise(L, "mcp.sleep: "+err.Error())
	}
	if d <= 0 {
		return 0
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		raise(L, "mcp.sleep: "+ctx.Err().Error())
	}
	return 0
}

// closeStream ends the call's HTTP stream early (SSE polling); the client
// resumes it with GET + Last-Event-ID. A no-op on a stale ctx.
// task is mcp.task(ctx [, {ttl_ms =, poll_ms =}]): it makes the running
// tools/call a task (2026-07-28 tasks extension) and returns true, or
// returns false when the call cannot be one and goes on as it was.
func (m *Module) task(L *lua.LState) int {
	const fname = "mcp.task"
	info := m.live(L, 1)
	opts := L.OptTable(2, nil)
	var ttl, poll time.Duration
	if opts != nil {
		opts.ForEach(func(k, v lua.LValue) {
			key, _ := k.(lua.LString)
			n, ok := v.(lua.LNumber)
			var d *time.Duration
			switch key {
			case "ttl_ms":
				d = &ttl
			case "poll_ms":
				d = &poll
			default:
				raise(L, fname+": unknown option "+describeKey(k))
			}
			if !ok || n <= 0 || n > math.MaxInt32 || float64(n) != math.Trunc(float64(n)) {
				raise(L, fname+": "+string(key)+" must be a positive whole number of milliseconds")
			}
			*d = time.Duration(n) * time.Millisecond
		})
	}
	if info == nil || info.Line == nil {
		L.Push(lua.LFalse)
		return 1
	}
	L.Push(lua.LBool(info.Line.StartTask(ttl, poll)))
	return 1
}

func (m *Module) closeStream(L *lua.LState) int {
	info := m.live(L, 1)
	if info == nil || info.Line == nil {
		return 0
	}
	if err := info.Line.CloseStream(); err != nil {
		m.logger.Warn("mcp.close_stream failed", "err", err)
	}
	return 0
}
