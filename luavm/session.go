package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/mcp"
)

// session implements mcp.Session on one state.
//
// State threading (script-api.md "State"): callbacks get the state; the one a
// callback returns after its result (or after its in-band error) replaces it,
// and when it returns none the table it was given stays, mutations included.
// In session mode every call first takes a deep copy (vm.backup) of the
// state: a crash or an interruption puts that copy back, so the state is
// exactly what it was before the call even if Lua changed it in place. During
// a call the copy is the committed state that Snapshot reads, since Lua never
// touches it.
type session struct {
	script *Script
	id     string // the Mcp-Session-Id; "" when stateless
	owned  bool   // session mode: roll back on crash, run terminate, follow reloads
	spare  bool   // a stateless request's borrowed state: given back to the pool if clean
	has    mcp.Capabilities

	// work serialises the Lua work on the session's state: the transport's
	// calls and a reload's migration (reload.go).
	work  sync.Mutex
	stuck *Version // a version the session failed to move to; not retried

	mu     sync.Mutex // guards s, v, state, frozen, phase's changes and closed against Snapshot
	s      *Version   // the version v runs (asleep: the version it wakes on, if still current)
	v      *vm        // nil while asleep
	state  lua.LValue // the committed state (asleep: nil)
	closed bool

	// Hibernation (hibernate.go), session mode only.
	phase    atomic.Uint32 // a phase: awake or asleep; changes with work and mu held, read by the sweeper without them
	frozen   []byte        // asleep: the committed state, frozen (bridge.Codec.Freeze)
	lastRun  atomic.Int64  // clock() when the last method ended (or init did): the sweeper's idle test
	unfrozen int64         // guarded by work: the lastRun whose state could not be frozen (not tried again)

	op op // the method in progress; the transport runs one at a time
}

var _ mcp.Session = (*session)(nil)

// errClosed is returned by a session used after Close.
var errClosed = errors.New("luavm: session closed")

// Init runs init on a state from the pool. In session mode (sessionID != "")
// it gets params plus mcp_session_id, on a fresh state the session owns for
// life; in stateless mode it gets {} on a borrowed state, which Close gives
// back.
func (s *Script) Init(ctx context.Context, params json.RawMessage, sessionID string) (mcp.Session, *mcp.InitResult, error) {
	ss, res, err := s.current().start(ctx, params, sessionID, true)
	if err != nil {
		return nil, nil, err
	}
	if ss.owned && !s.track(ss) {
		ss.Close("")
		return nil, nil, fmt.Errorf("%s: script closed", s.name)
	}
	return ss, res, nil
}

var _ mcp.CallIniter = (*Script)(nil)

// InitCall is Init(ctx, nil, "") for a stateless request that needs only the
// capabilities: init's server_info and capabilities are checked but not
// encoded.
func (s *Script) InitCall(ctx context.Context) (mcp.Session, mcp.Capabilities, error) {
	ss, res, err := s.current().start(ctx, nil, "", false)
	if err != nil {
		return nil, mcp.Capabilities{}, err
	}
	return ss, res.Has, nil
}

// start runs init on a state of this version; encode asks for the init
// result's server_info and capabilities in wire form.
func (s *Version) start(ctx context.Context, params json.RawMessage, sessionID string, encode bool) (*session, *mcp.InitResult, error) {
	owned := sessionID != ""
	var v *vm
	var err error
	if owned {
		v, err = s.pool.get(ctx)
	} else {
		v, err = s.pool.getSpare(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: no Lua state: %w", s.name, err)
	}
	ss := &session{script: s.Script, id: sessionID, s: s, v: v, owned: owned, spare: !owned, state: lua.LNil}
	res, err := ss.init(ctx, params, sessionID, encode)
	if err != nil {
		ss.release()
		return nil, nil, err
	}
	if owned {
		ss.lastRun.Store(clock())
	}
	return ss, res, nil
}

func (ss *session) init(ctx context.Context, params json.RawMessage, sessionID string, encode bool) (*mcp.InitResult, error) {
	v := ss.v
	r, err := v.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer r.end()
	p, err := v.decodeObject(params)
	if err != nil {
		return nil, r.paramsError("init", "params", err)
	}
	if sessionID != "" {
		p.RawSetString("mcp_session_id", lua.LString(sessionID))
	}
	rets, err := r.call("init", v.fns[cbInit], 3, p)
	if err != nil {
		return nil, err
	}
	res, err := v.initResult(rets[0], rets[1], encode)
	if err != nil {
		return nil, r.crashf("init", "%v", err)
	}
	if err := v.checkCapabilities(res.Has); err != nil {
		return nil, r.crashf("init", "%v", err)
	}
	ss.has = res.Has
	ss.state = rets[2]
	v.hold(ss.state)
	return res, nil
}

// initResult checks init's server_info and capabilities, and encodes them
// when encode is set (a value that cannot be encoded is found only then).
func (v *vm) initResult(info, caps lua.LValue, encode bool) (*mcp.InitResult, error) {
	t, ok := info.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("server_info: want a table, got %s", describe(info))
	}
	res := &mcp.InitResult{}
	switch ins := t.RawGetString("instructions").(type) {
	case *lua.LNilType:
	case lua.LString:
		res.Instructions = string(ins)
	default:
		return nil, fmt.Errorf("server_info.instructions: want a string, got %s", describe(ins))
	}
	var err error
	if encode {
		if res.ServerInfo, err = v.object(t, "server_info", func(k string) bool { return k == "instructions" }, serverInfoShapes); err != nil {
			return nil, err
		}
	}
	switch c := caps.(type) {
	case *lua.LNilType:
		res.Capabilities = json.RawMessage("{}")
	case *lua.LTable:
		if encode {
			if res.Capabilities, err = v.codec.Encode(c, "capabilities"); err != nil {
				return nil, err
			}
		}
		present := func(k string) bool { return c.RawGetString(k) != lua.LNil }
		res.Has = mcp.Capabilities{
			Tools:       present("tools"),
			Resources:   present("resources"),
			Prompts:     present("prompts"),
			Logging:     present("logging"),
			Completions: present("completions"),
		}
	default:
		return nil, fmt.Errorf("capabilities: want a table, got %s", describe(caps))
	}
	return res, nil
}

// checkCapabilities enforces "a server that advertises a capability must
// implement its callbacks".
func (v *vm) checkCapabilities(has mcp.Capabilities) error {
	return capabilityGap(v.has, has)
}

// capabilityGap is checkCapabilities for a server module whose callbacks
// defined reports.
func capabilityGap(defined func(cb int) bool, has mcp.Capabilities) error {
	need := func(cap string, cbs ...int) error {
		for _, cb := range cbs {
			if defined(cb) {
				continue
			}
			if isList(cb) {
				return fmt.Errorf("advertises the %s capability, but the server module has no %s (a function or a list)", cap, callbackNames[cb])
			}
			return fmt.Errorf("advertises the %s capability, but the server module has no %s function", cap, callbackNames[cb])
		}
		return nil
	}
	if has.Resources {
		if err := need("resources", cbResources, cbReadResource); err != nil {
			return err
		}
	}
	if has.Prompts {
		if err := need("prompts", cbPrompts, cbGetPrompt); err != nil {
			return err
		}
	}
	if has.Completions {
		return need("completions", cbComplete)
	}
	return nil
}

// paramsError answers client params that did not decode. Text the decoder
// refuses (nested too deep, invalid UTF-8, a number out of range) is the
// client's mistake: -32602, never a crash. Anything else (a memory limit) is
// the callback's crash.
func (r *run) paramsError(callback, what string, err error) error {
	var de *bridge.DecodeError
	if errors.As(err, &de) {
		return mcp.ErrInvalidParams(what + ": " + de.Msg)
	}
	return r.crashf(callback, "%s: %v", what, err)
}

// decodeObject decodes JSON params into a table; absent or null is {}.
func (v *vm) decodeObject(raw json.RawMessage) (*lua.LTable, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return v.codec.MarkObject(v.L.CreateTable(0, 1)), nil
	}
	val, err := v.codec.Decode(raw)
	if err != nil {
		return nil, err
	}
	t, ok := val.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", describe(val))
	}
	return t, nil
}

// decodeValue decodes an optional JSON value; absent is nil.
func (v *vm) decodeValue(raw json.RawMessage) (lua.LValue, error) {
	if len(raw) == 0 {
		return lua.LNil, nil
	}
	return v.codec.Decode(raw)
}

// op is one Session method in progress.
type op struct {
	*run
	live lua.LValue // the state the callbacks see; what a clean end commits
	// ranList is set once a lookup ran a list callback: Lua may have
	// changed the state since the mirror's Sync, so no list may be reused
	// for being a function of an unchanged state (lists.go).
	ranList bool
	// backedUp is set when begin backed the state up: a crash puts the
	// backup back into the state's own tables (vm.rollback).
	backedUp bool
}

// begin starts a Session method. In session mode it backs the state up and
// makes the backup the committed state for the length of the call. A
// stateless request's session serves one call and is thrown away, so it needs
// neither the rollback nor the protection from a concurrent Snapshot.
func (ss *session) begin(ctx context.Context) (*op, error) {
	ss.work.Lock()
	if ss.isClosed() {
		ss.work.Unlock()
		return nil, errClosed
	}
	if phase(ss.phase.Load()) == asleep {
		if err := ss.wake(ctx); err != nil {
			ss.work.Unlock()
			return nil, err
		}
	}
	if ss.owned {
		ss.follow(ctx)
	}
	r, err := ss.v.begin(ctx)
	if err != nil {
		ss.work.Unlock()
		return nil, err
	}
	ss.op = op{run: r, live: ss.state}
	c := &ss.op
	if ss.owned {
		if t, ok := ss.state.(*lua.LTable); ok {
			// Under mu, as every walk of the committed state: a Snapshot
			// may be copying it, and walking a table is not a pure read
			// (it marks what it synced, and may index the table's keys).
			ss.mu.Lock()
			ss.state = ss.v.backup(t)
			ss.mu.Unlock()
			c.backedUp = true
		}
	}
	return c, nil
}

// end finishes a method: unless it crashed or was interrupted, the state the
// callbacks left becomes the committed state.
func (ss *session) end(c *op, err error) {
	c.run.end()
	live, backedUp := c.live, c.backedUp
	*c = op{}
	switch {
	case err == nil || inBand(err):
		ss.mu.Lock()
		ss.state = live
		ss.mu.Unlock()
	case backedUp:
		// The state's own tables get back what the backup holds: a
		// module-level local, a closure or a coroutine that holds one of
		// them holds the rolled-back state, not an orphan.
		ss.mu.Lock() // a Snapshot may be reading the backup
		ss.state = ss.v.rollback()
		ss.mu.Unlock()
	}
	ss.v.hold(ss.state)
	if ss.owned {
		ss.lastRun.Store(clock()) // before the unlock: the sweeper reads it under work
	}
	ss.work.Unlock()
	if ss.owned && ss.behind() {
		go func() { // a reload happened during the call
			ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout())
			defer cancel()
			ss.followIdle(ctx)
		}()
	}
}

// inBand reports whether err is an answer (a *mcp.Error) rather than a crash
// or a stop (whose cause may be a *mcp.Error the transport answers with).
func inBand(err error) bool {
	var merr *mcp.Error
	var stop *stopError
	return errors.As(err, &merr) && !errors.As(err, &stop)
}

// adopt makes a state a callback returned the new state.
func (c *op) adopt(state lua.LValue) {
	if state != lua.LNil {
		c.live = state
	}
}

// list runs a list callback and returns its entries as items keyed by key.
func (ss *session) list(c *op, cb int, key string) ([]mcp.Item, error) {
	items, _, err := ss.listPage(c, cb, key, 0, wholeList)
	return items, err
}

// find returns the entry of list callback cb whose key field is want (the
// first, if several), or nil. It reuses the list the last lookup found while
// that list cannot have changed (lists.go); otherwise it runs the callback.
func (ss *session) find(c *op, cb int, key, want string) (*lua.LTable, error) {
	v := ss.v
	if lc := v.cached(cb, c.live, c.ranList); lc != nil && lc.key == key {
		return lc.index[want], nil
	}
	changes, reuse := v.cacheable(cb, c.live)
	name := callbackNames[cb]
	c.ranList = true
	rets, err := c.call(name, v.fns[cb], 1, c.live)
	if err != nil {
		return nil, err
	}
	entries, ok := rets[0].(*lua.LTable)
	if !ok {
		if _, err := list(rets[0], name); err != nil {
			return nil, c.crashf(name, "%v", err)
		}
		return nil, nil
	}
	if reuse {
		return v.keep(cb, entries, key, c.live, changes).index[want], nil
	}
	if lc := v.again(cb, entries, key); lc != nil {
		return lc.index[want], nil
	}
	for i := 1; i <= entries.Len(); i++ {
		if t, ok := entries.RawGetInt(i).(*lua.LTable); ok {
			if k, ok := t.RawGetString(key).(lua.LString); ok && string(k) == want {
				return t, nil
			}
		}
	}
	return nil, nil
}

// listMethod runs one list callback as a whole Session method.
func (ss *session) listMethod(ctx context.Context, cb int, key string) ([]mcp.Item, error) {
	c, err := ss.begin(ctx)
	if err != nil {
		return nil, err
	}
	if !ss.v.has(cb) {
		ss.end(c, nil)
		return []mcp.Item{}, nil
	}
	items, err := ss.list(c, cb, key)
	ss.end(c, err)
	return items, err
}

func (ss *session) Tools(ctx context.Context) ([]mcp.Item, error) {
	return ss.listMethod(ctx, cbTools, "name")
}

func (ss *session) Resources(ctx context.Context) ([]mcp.Item, error) {
	return ss.listMethod(ctx, cbResources, "uri")
}

// ResourceTemplates lists resource_templates; a module without it has none.
func (ss *session) ResourceTemplates(ctx context.Context) ([]mcp.Item, error) {
	return ss.listMethod(ctx, cbResourceTemplates, "uri_template")
}

func (ss *session) Prompts(ctx context.Context) ([]mcp.Item, error) {
	return ss.listMethod(ctx, cbPrompts, "name")
}

// CallTool runs handle_tool(name, args, ctx, state) for a listed tool. A
// result, or an in-band error (`nil, err`), is a CallToolResult; returning
// nothing is an empty success.
func (ss *session) CallTool(ctx context.Context, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	c, err := ss.begin(ctx)
	if err != nil {
		return nil, err
	}
	out, err := ss.callTool(c, call, name, args)
	ss.end(c, err)
	return out, err
}

func (ss *session) callTool(c *op, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	v := ss.v
	tool, err := ss.find(c, cbTools, "name", name)
	if err != nil {
		return nil, err
	}
	if tool == nil {
		return nil, mcp.ErrUnknownTool(name)
	}
	call.Listed = true
	if err := call.SetTaskSupport(taskSupport(tool)); err != nil {
		return nil, err
	}
	if v.s.validateArgs {
		if msg := v.checkArguments(tool, name, args); msg != "" {
			return v.toolResult(lua.LString(msg), true, "error", nil)
		}
	}
	argv, err := v.decodeObject(args)
	if err != nil {
		return nil, c.paramsError("handle_tool", "arguments", err)
	}
	ctxT := v.mod.BeginCall(c.callInfo(call))
	// The tool's own name value: boxed already.
	rets, err := c.call("handle_tool", v.fns[cbHandleTool], 3, tool.RawGetString("name"), argv, ctxT, c.live)
	v.mod.EndCall(ctxT)
	if err != nil {
		return nil, err
	}
	res, failure, state := outcome(rets)
	var out json.RawMessage
	guide, _ := renamed(tool, "output_schema").(*lua.LTable)
	if failure != lua.LNil {
		out, err = v.toolResult(failure, true, "error", guide)
	} else {
		out, err = v.toolResult(res, false, "result", guide)
		if err == nil && v.s.validateResults {
			if msg := v.checkResult(tool, res); msg != "" {
				err = errors.New(msg)
			}
		}
	}
	if err != nil {
		return nil, c.crashf("handle_tool", "%v", err)
	}
	c.adopt(state)
	return out, nil
}

// taskSupport reads a tool descriptor's execution.taskSupport.
func taskSupport(tool *lua.LTable) mcp.TaskSupport {
	exec, ok := tool.RawGetString("execution").(*lua.LTable)
	if !ok {
		return mcp.TaskForbidden
	}
	s, _ := exec.RawGetString("taskSupport").(lua.LString)
	return mcp.ParseTaskSupport(string(s))
}

// outcome splits `result [, state]` and `nil, failure [, state]`.
// failed answers a callback's in-band failure (`return nil, msg [, state]`):
// the state it returned is kept, and the client gets code with the script's
// message, or none when the script gave no message (a bare `return nil`).
func (c *op) failed(callback string, failure, state lua.LValue, code int, none *mcp.Error) error {
	c.adopt(state)
	if failure == lua.LNil {
		return none
	}
	msg, ok := message(failure)
	if !ok {
		return c.crashf(callback, "error: want a message string, got %s", describe(failure))
	}
	return &mcp.Error{Code: code, Message: msg}
}

func outcome(rets [3]lua.LValue) (res, failure, state lua.LValue) {
	if rets[0] != lua.LNil {
		return rets[0], lua.LNil, rets[1]
	}
	return lua.LNil, rets[1], rets[2]
}

// ReadResource runs read_resource(uri, state, vars, ctx) for a listed uri (vars
// {}) or one a template matches (vars from the template); any other uri is
// not found without a call.
func (ss *session) ReadResource(ctx context.Context, call *mcp.Call, uri string) (json.RawMessage, error) {
	c, err := ss.begin(ctx)
	if err != nil {
		return nil, err
	}
	out, err := ss.readResource(c, call, uri)
	ss.end(c, err)
	return out, err
}

func (ss *session) readResource(c *op, call *mcp.Call, uri string) (json.RawMessage, error) {
	v := ss.v
	var entry *lua.LTable
	var vars map[string]string
	var err error
	if v.has(cbResources) {
		if entry, err = ss.find(c, cbResources, "uri", uri); err != nil {
			return nil, err
		}
	}
	if entry == nil && v.has(cbResourceTemplates) {
		if entry, vars, err = ss.matchTemplate(c, uri); err != nil {
			return nil, err
		}
	}
	if entry == nil {
		return nil, mcp.ErrResourceNotFound(uri)
	}
	if !v.has(cbReadResource) {
		return nil, c.crashf("read_resource", "the server module has no read_resource function")
	}
	varsT := v.L.CreateTable(0, len(vars))
	for k, val := range vars {
		varsT.RawSetString(k, lua.LString(val))
	}
	ctxT := v.mod.BeginCall(c.callInfo(call))
	rets, err := c.call("read_resource", v.fns[cbReadResource], 3, lua.LString(uri), c.live, varsT, ctxT)
	v.mod.EndCall(ctxT)
	if err != nil {
		return nil, err
	}
	res, failure, state := outcome(rets)
	if res == lua.LNil {
		return nil, c.failed("read_resource", failure, state, mcp.CodeResourceNotFound, mcp.ErrResourceNotFound(uri))
	}
	mime := entry.RawGetString("mime_type")
	if mime == lua.LNil {
		mime = entry.RawGetString("mimeType")
	}
	out, err := v.resourceResult(res, uri, mime)
	if err != nil {
		return nil, c.crashf("read_resource", "%v", err)
	}
	c.adopt(state)
	return out, nil
}

// matchTemplate returns the first template that matches uri, and its
// variables. Like find, it reuses the list of templates while it cannot have
// changed.
func (ss *session) matchTemplate(c *op, uri string) (*lua.LTable, map[string]string, error) {
	const name = "resource_templates"
	v := ss.v
	var entries []*lua.LTable
	if lc := v.cached(cbResourceTemplates, c.live, c.ranList); lc != nil {
		entries = lc.entries
	} else {
		changes, reuse := v.cacheable(cbResourceTemplates, c.live)
		c.ranList = true
		rets, err := c.call(name, v.fns[cbResourceTemplates], 1, c.live)
		if err != nil {
			return nil, nil, err
		}
		items, err := list(rets[0], name)
		if err != nil {
			return nil, nil, c.crashf(name, "%v", err)
		}
		if t, ok := rets[0].(*lua.LTable); ok && reuse {
			entries = v.keep(cbResourceTemplates, t, "", c.live, changes).entries
		} else {
			for _, e := range items {
				if t, ok := e.(*lua.LTable); ok {
					entries = append(entries, t)
				}
			}
		}
	}
	for _, t := range entries {
		tpl, ok := t.RawGetString("uri_template").(lua.LString)
		if !ok {
			continue
		}
		if vars, ok := mcp.MatchTemplate(string(tpl), uri); ok {
			return t, vars, nil
		}
	}
	return nil, nil, nil
}

// GetPrompt runs get_prompt(name, args, state, ctx) for a listed prompt.
func (ss *session) GetPrompt(ctx context.Context, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	c, err := ss.begin(ctx)
	if err != nil {
		return nil, err
	}
	out, err := ss.getPrompt(c, call, name, args)
	ss.end(c, err)
	return out, err
}

func (ss *session) getPrompt(c *op, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	v := ss.v
	if !v.has(cbPrompts) || !v.has(cbGetPrompt) {
		return nil, mcp.ErrUnknownPrompt(name)
	}
	prompt, err := ss.find(c, cbPrompts, "name", name)
	if err != nil {
		return nil, err
	}
	if prompt == nil {
		return nil, mcp.ErrUnknownPrompt(name)
	}
	argv, err := v.decodeObject(args)
	if err != nil {
		return nil, c.paramsError("get_prompt", "arguments", err)
	}
	if missing := missingPromptArgument(prompt, argv); missing != "" {
		return nil, mcp.ErrInvalidParams(fmt.Sprintf("missing required argument %q of prompt %q", missing, name))
	}
	ctxT := v.mod.BeginCall(c.callInfo(call))
	rets, err := c.call("get_prompt", v.fns[cbGetPrompt], 3, lua.LString(name), argv, c.live, ctxT)
	v.mod.EndCall(ctxT)
	if err != nil {
		return nil, err
	}
	res, failure, state := outcome(rets)
	if res == lua.LNil {
		return nil, c.failed("get_prompt", failure, state, mcp.CodeInvalidParams, mcp.ErrUnknownPrompt(name))
	}
	out, err := v.promptResult(res)
	if err != nil {
		return nil, c.crashf("get_prompt", "%v", err)
	}
	c.adopt(state)
	return out, nil
}

// missingPromptArgument is the first argument the prompt descriptor marks
// required (arguments = { { name =, required = true } }) that argv lacks, ""
// for none: the MCP spec answers such a prompts/get with -32602, so
// get_prompt never runs without them.
func missingPromptArgument(prompt *lua.LTable, argv lua.LValue) string {
	list, ok := prompt.RawGetString("arguments").(*lua.LTable)
	if !ok {
		return ""
	}
	given, _ := argv.(*lua.LTable)
	for i := 1; i <= list.Len(); i++ {
		a, ok := list.RawGetInt(i).(*lua.LTable)
		if !ok || a.RawGetString("required") != lua.LTrue {
			continue
		}
		name, ok := a.RawGetString("name").(lua.LString)
		if ok && (given == nil || given.RawGetString(string(name)) == lua.LNil) {
			return string(name)
		}
	}
	return ""
}

// Complete runs complete(ref, argument, state, context); it must return a
// list of strings. A module that advertises completions without complete
// cannot load, so its absence here is a crash.
func (ss *session) Complete(ctx context.Context, ref, argument, hint json.RawMessage) ([]string, error) {
	c, err := ss.begin(ctx)
	if err != nil {
		return nil, err
	}
	out, err := ss.complete(c, ref, argument, hint)
	ss.end(c, err)
	return out, err
}

func (ss *session) complete(c *op, ref, argument, hint json.RawMessage) ([]string, error) {
	const name = "complete"
	v := ss.v
	if !v.has(cbComplete) {
		return nil, c.crashf(name, "the server module has no complete function")
	}
	var args [3]lua.LValue
	for i, raw := range []json.RawMessage{ref, argument, hint} {
		val, err := v.decodeValue(raw)
		if err != nil {
			return nil, c.paramsError(name, "params", err)
		}
		args[i] = val
	}
	rets, err := c.call(name, v.fns[cbComplete], 2, args[0], args[1], c.live, args[2])
	if err != nil {
		return nil, err
	}
	if rets[0] == lua.LNil {
		return nil, c.crashf(name, "result: want a list of strings, got nil")
	}
	values, err := stringsOf(rets[0], "result")
	if err != nil {
		return nil, c.crashf(name, "%v", err)
	}
	c.adopt(rets[1])
	return values, nil
}

// Channels runs channels(state): the pubsub channels the session joins.
func (ss *session) Channels(ctx context.Context) ([]string, error) {
	const name = "channels"
	c, err := ss.begin(ctx)
	if err != nil {
		return nil, err
	}
	if !ss.v.has(cbChannels) {
		ss.end(c, nil)
		return nil, nil
	}
	rets, err := c.call(name, ss.v.fns[cbChannels], 1, c.live)
	var out []string
	if err == nil {
		if out, err = stringsOf(rets[0], "result"); err != nil {
			err = c.crashf(name, "%v", err)
		}
	}
	ss.end(c, err)
	return out, err
}

// Snapshot returns a session on a fresh state holding a deep copy of the
// committed state. It may run while a call runs on ss: it then copies the
// backup taken before that call, which Lua never touches. Like a session's,
// the snapshot's state is closed at the end, never lent again.
func (ss *session) Snapshot(ctx context.Context) (mcp.Session, error) {
	ver := ss.script.current() // a snapshot runs the newest code at once
	nv, err := ver.pool.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: snapshot: no Lua state: %w", ss.script.name, err)
	}
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		nv.close()
		return nil, errClosed
	}
	var state lua.LValue
	if phase(ss.phase.Load()) == asleep {
		state, err = nv.codec.Thaw(ss.frozen)
	} else {
		state, err = ss.v.codec.CopyTo(nv.codec, ss.state)
	}
	ss.mu.Unlock()
	if err != nil {
		nv.close()
		ss.script.logger.Error("snapshot of the session state failed", "error", err)
		return nil, fmt.Errorf("%s: snapshot: %w", ss.script.name, err)
	}
	nv.account(state)
	return &session{script: ss.script, id: ss.id, s: ver, v: nv, has: ss.has, state: state}, nil
}

// Close ends the session. In session mode a non-empty reason runs
// terminate(reason, state) (its errors are logged and ignored). A stateless
// request's state goes back to the pool if its work ended cleanly; any other
// is closed.
func (ss *session) Close(reason string) {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return
	}
	ss.closed = true
	ss.mu.Unlock()
	ss.work.Lock() // a migration may be under way
	defer ss.work.Unlock()
	if ss.owned {
		ss.script.untrack(ss)
	}
	if reason == "shutdown" && ss.script.retired.Load() {
		reason = "normal" // the script leaves, the server goes on
	}
	terminate := ss.owned && reason != ""
	if phase(ss.phase.Load()) == asleep {
		// terminate needs the state on a Lua state: wake the session for it
		// if the current version has terminate.
		if !terminate || !ss.script.current().defines(cbTerminate) {
			ss.frozen = nil
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), terminateTimeout)
		err := ss.wake(ctx)
		cancel()
		if err != nil {
			ss.script.logger.Warn("terminate not run", "session", logcap.Session(ss.id), "reason", reason, "error", err)
			ss.frozen = nil
			return
		}
	}
	if terminate && ss.v.has(cbTerminate) {
		ctx, cancel := context.WithTimeout(context.Background(), terminateTimeout)
		if r, err := ss.v.begin(ctx); err != nil {
			ss.script.logger.Warn("terminate not run", "session", logcap.Session(ss.id), "reason", reason, "error", err)
		} else {
			_, _ = r.call("terminate", ss.v.fns[cbTerminate], 0, lua.LString(reason), ss.state)
			r.end()
		}
		cancel()
	}
	ss.release()
}

// release disposes of the session's state: a stateless request's goes
// back to the spare lane (isolate.go), any other to the fresh lane of the
// pool that built it if it is pristine (recycle.go), or is closed.
func (ss *session) release() {
	if ss.spare {
		ss.s.pool.release(ss.v)
		return
	}
	if ss.v != nil { // nil: asleep
		ss.v.s.pool.recycle(ss.v)
	}
}
