package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// Requests to the client: mcp.elicit, mcp.sample, mcp.list_roots and
// mcp.ask. Each request has a key (script-api.md "v2 additions"): in the
// 2026-07-28 era a call that asks is run again from its start with the
// client's answers, and each request gets its answer by key. The 2025 era
// sends the requests on the call's stream; the key is not sent there.

// An asker is one of the functions that ask the client one thing.
type asker int

const (
	askElicit asker = iota
	askSample
	askRoots
	numAskers
)

// askers describes each asker: its method, the prefix of its default keys
// and its params' snake_case top-level keys with their wire names (other
// keys, and everything nested, pass verbatim).
var askers = [numAskers]struct {
	method, prefix string
	rename         map[string]string
	shapes         map[string]Shape // by wire name, top-level only
}{
	askElicit: {"elicitation/create", "elicit", map[string]string{
		"requested_schema": "requestedSchema",
		"elicitation_id":   "elicitationId",
	}, map[string]Shape{"requestedSchema": Schema}},
	askSample: {"sampling/createMessage", "sample", map[string]string{
		"max_tokens":        "maxTokens",
		"system_prompt":     "systemPrompt",
		"model_preferences": "modelPreferences",
		"stop_sequences":    "stopSequences",
		"include_context":   "includeContext",
		"tool_choice":       "toolChoice",
	}, map[string]Shape{
		// Lists in the MCP schema: an empty table is [], not {}.
		"messages":      List,
		"stopSequences": List,
		"tools":         List,
	}},
	askRoots: {"roots/list", "roots", nil, nil},
}

// askerOf returns the asker of method.
func askerOf(method string) (asker, bool) {
	for a := range numAskers {
		if askers[a].method == method {
			return a, true
		}
	}
	return 0, false
}

func (m *Module) elicit(L *lua.LState) int { return m.askOne(L, askElicit) }

func (m *Module) sample(L *lua.LState) int { return m.askOne(L, askSample) }

func (m *Module) listRoots(L *lua.LState) int { return m.askOne(L, askRoots) }

// askOne is mcp.elicit(ctx, params), mcp.sample(ctx, params) and
// mcp.list_roots(ctx [, {key=}]): it returns the decoded result, or nil and
// a message when the request failed (so the script can answer with an
// in-band error). A call that ends while it waits (cancelled, timed out, or
// stopped for input in the 2026-07-28 era) raises instead.
func (m *Module) askOne(L *lua.LState, a asker) int {
	method := askers[a].method
	info := m.live(L, 1)
	var src *lua.LTable
	if a == askRoots {
		src = L.OptTable(2, nil)
	} else {
		src = L.CheckTable(2)
	}
	params, key := m.requestParams(L, method, a, src)
	if info == nil || info.Line == nil {
		return fail(L, method+": ctx is not a running call")
	}
	if key == "" {
		info.made[a]++
		key = askers[a].prefix + "-" + strconv.Itoa(info.made[a])
	}
	claim(L, info, method, key)
	answers, err := m.send(L, info, method, []InputRequest{{Key: key, Method: method, Params: params}})
	if err != nil {
		return fail(L, method+": "+err.Error())
	}
	v, msg := m.answer(method, answers[0])
	if msg != "" {
		return fail(L, msg)
	}
	L.Push(v)
	return 1
}

// ask is mcp.ask(ctx, {key = {method=, params=?}, ...}): one round of
// requests (one input_required round in the 2026-07-28 era). It returns the
// results by key, and a table of messages by key for the requests that
// failed, or nil when none did.
func (m *Module) ask(L *lua.LState) int {
	const fname = "mcp.ask"
	info := m.live(L, 1)
	spec := L.CheckTable(2)
	var keys []string
	spec.ForEach(func(k, _ lua.LValue) {
		s, ok := k.(lua.LString)
		if !ok || s == "" {
			L.ArgError(2, "keys must be non-empty strings, got "+describeKey(k))
		}
		keys = append(keys, string(s))
	})
	// Sorted, so that the round is the same on every run of the call.
	slices.Sort(keys)
	reqs := make([]InputRequest, len(keys))
	for i, key := range keys {
		t, ok := spec.RawGetString(key).(*lua.LTable)
		if !ok {
			L.ArgError(2, fmt.Sprintf("[%q] must be a table {method=, params=?}, got %s", key, typeName(spec.RawGetString(key))))
		}
		method, ok := t.RawGetString("method").(lua.LString)
		a, known := askerOf(string(method))
		if !ok || !known {
			L.ArgError(2, fmt.Sprintf("[%q].method must be elicitation/create, sampling/createMessage or roots/list, got %s",
				key, typeName(t.RawGetString("method"))))
		}
		var src *lua.LTable
		switch p := t.RawGetString("params").(type) {
		case *lua.LNilType:
		case *lua.LTable:
			src = p
		default:
			L.ArgError(2, fmt.Sprintf("[%q].params must be a table or nil, got %s", key, typeName(p)))
		}
		if src != nil && src.RawGetString("key") != lua.LNil {
			L.ArgError(2, fmt.Sprintf("[%q].params.key: the key is the table's key here", key))
		}
		params, _ := m.requestParams(L, string(method), a, src)
		reqs[i] = InputRequest{Key: key, Method: string(method), Params: params}
	}
	if info == nil || info.Line == nil {
		return fail(L, fname+": ctx is not a running call")
	}
	for _, r := range reqs {
		claim(L, info, fname, r.Key)
	}
	results := L.CreateTable(0, len(reqs))
	if len(reqs) == 0 {
		L.Push(results)
		return 1
	}
	answers, err := m.send(L, info, fname, reqs)
	if err != nil {
		return fail(L, fname+": "+err.Error())
	}
	var failures *lua.LTable
	for i, r := range reqs {
		v, msg := m.answer(r.Method, answers[i])
		if msg != "" {
			if failures == nil {
				failures = L.CreateTable(0, 1)
			}
			failures.RawSetString(r.Key, lua.LString(msg))
			continue
		}
		results.RawSetString(r.Key, v)
	}
	L.Push(results)
	if failures == nil {
		return 1
	}
	L.Push(failures)
	return 2
}

// Bounds of a call's request keys, which the call keeps in Go (asked), out
// of the measure of its state's memory: one key is a name on the wire (an
// inputRequests member), not data.
const (
	maxKeyBytes   = 1024
	maxAskedBytes = 1 << 20 // a call's keys together
)

// claim records that the call asks key, and raises when it asked it before:
// a key names one request of the call, since a re-run of the call is
// answered by key (a loop that asks again under one key would get the same
// answer forever). A key must be UTF-8 (a JSON member name the client
// answers by) and within the bounds above.
func claim(L *lua.LState, info *CallInfo, fname, key string) {
	switch {
	case len(key) > maxKeyBytes:
		raise(L, fmt.Sprintf("%s: key of %d bytes: at most %d", fname, len(key), maxKeyBytes))
	case !utf8.ValidString(key):
		raise(L, fmt.Sprintf("%s: key %q is not UTF-8", fname, key))
	case info.askedBytes+len(key) > maxAskedBytes:
		raise(L, fmt.Sprintf("%s: the call asked too many requests (their keys take %d bytes at most)", fname, maxAskedBytes))
	}
	if _, dup := info.asked[key]; dup {
		raise(L, fmt.Sprintf("%s: key %q was asked before in this call (give each request its own key)", fname, key))
	}
	if info.asked == nil {
		info.asked = make(map[string]struct{})
	}
	info.asked[key] = struct{}{}
	info.askedBytes += len(key)
}

// send asks reqs on the call's line under the state's context. It raises
// when that context ended while it waited: the call is over (cancelled,
// timed out, or stopped for input in the 2026-07-28 era), and not even a
// pcall lets the script go on. Any other failure of the round is returned.
func (m *Module) send(L *lua.LState, info *CallInfo, fname string, reqs []InputRequest) ([]InputAnswer, error) {
	ctx := L.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	answers, err := info.Line.Ask(ctx, reqs)
	if ctxErr := ctx.Err(); ctxErr != nil {
		raise(L, fname+": "+ctxErr.Error())
	}
	if err != nil {
		return nil, err
	}
	if len(answers) != len(reqs) {
		return nil, fmt.Errorf("%d answers to %d requests", len(answers), len(reqs))
	}
	return answers, nil
}

// answer decodes one answer of method; msg is set, with the method, when
// the request failed or the result does not decode.
func (m *Module) answer(method string, a InputAnswer) (v lua.LValue, msg string) {
	if a.Err != nil {
		return nil, method + ": " + a.Err.Error()
	}
	v, err := m.c.Decode(a.Result)
	if err != nil {
		return nil, method + ": undecodable answer from the client: " + err.Error()
	}
	return v, ""
}

func fail(L *lua.LState, msg string) int {
	L.Push(lua.LNil)
	L.Push(lua.LString(msg))
	return 2
}

// requestParams encodes src as the params of method, renaming its
// top-level snake_case keys, and takes its key field out: the key names the
// request and is never sent. The top-level keys the MCP schema makes lists
// (sampling's messages, stopSequences, tools) are sent as lists: an empty
// table is [], and a value of the other kind is an error naming it. The params are always an object, {} for none:
// a 2026-07-28 inputRequest carries them as given, and clients read them as
// an object (the Go SDK refuses a roots/list inputRequest without params).
func (m *Module) requestParams(L *lua.LState, method string, a asker, src *lua.LTable) (json.RawMessage, string) {
	var key string
	t := m.c.MarkObject(L.CreateTable(0, 4))
	if src != nil {
		var dup string
		src.ForEach(func(k, v lua.LValue) {
			if s, ok := k.(lua.LString); ok {
				if s == "key" {
					ks, ok := v.(lua.LString)
					if !ok || ks == "" {
						raise(L, method+": key must be a non-empty string, got "+typeName(v))
					}
					key = string(ks)
					return
				}
				if wire, ok := askers[a].rename[string(s)]; ok {
					if src.RawGetString(wire) != lua.LNil {
						dup = string(s) + " and " + wire
					}
					k = lua.LString(wire)
				}
				if shape, ok := askers[a].shapes[string(k.(lua.LString))]; ok {
					v = m.shaped(L, method, string(k.(lua.LString)), v, shape)
				}
			}
			t.RawSet(k, v)
		})
		if dup != "" {
			raise(L, method+": params: both "+dup+" are set")
		}
	}
	if a == askSample {
		m.sampleParams(L, method, t)
	}
	out, err := m.c.EncodeAs(t, "params", Protocol)
	if err != nil {
		raise(L, method+": "+err.Error())
	}
	return out, key
}

// shaped returns v, the param name of method, checked against shape: an
// unmarked empty table becomes a new one marked as a list (so that it is
// encoded [] without marking the script's own table), a value of the other
// shape raises. A schema is encoded as one (its required = {} is []) and
// decoded again: the copy's tables are marked as what they were written as.
func (m *Module) shaped(L *lua.LState, method, name string, v lua.LValue, shape Shape) lua.LValue {
	if shape == Schema {
		text, err := m.c.EncodeAs(v, "params."+name, Schema)
		if err == nil {
			v, err = m.c.Decode(text)
		}
		if err != nil {
			raise(L, method+": "+err.Error())
		}
		return v
	}
	emptyList, err := m.c.checkShape(v, "params."+name, shape)
	if err != nil {
		raise(L, method+": "+err.Error())
	}
	if emptyList {
		return m.c.MarkArray(L.CreateTable(0, 0))
	}
	return v
}

// describeKey names a table key in an error message.
func describeKey(k lua.LValue) string {
	if s, ok := k.(lua.LString); ok {
		return fmt.Sprintf("%q", string(s))
	}
	return typeName(k)
}

// sampleParams checks and completes t, the params of a
// sampling/createMessage: each message has a role (user or assistant) and
// content blocks with the fields the MCP schema requires (checkMessages),
// and each tool's input_schema and output_schema are renamed and written as
// a tool descriptor's are (sampleTools).
func (m *Module) sampleParams(L *lua.LState, method string, t *lua.LTable) {
	if msgs, ok := t.RawGetString("messages").(*lua.LTable); ok {
		if err := m.c.checkMessages(msgs, samplingBlocks); err != nil {
			raise(L, method+": "+err.under(lua.LString("messages")).finish("params").Error())
		}
	}
	if tools, ok := t.RawGetString("tools").(*lua.LTable); ok {
		t.RawSetString("tools", m.sampleTools(L, method, tools))
	}
	if prefs, ok := t.RawGetString("modelPreferences").(*lua.LTable); ok {
		t.RawSetString("modelPreferences", renamedCopy(L, method, "params.model_preferences", prefs, modelPreferenceNames))
	}
}

// modelPreferenceNames are the snake_case keys of mcp.sample's
// model_preferences, with the wire's names: a client ignores a
// speed_priority it does not know.
var modelPreferenceNames = map[string]string{
	"cost_priority":         "costPriority",
	"speed_priority":        "speedPriority",
	"intelligence_priority": "intelligencePriority",
}

// renamedCopy returns a copy of src whose keys in names have their wire
// names, and raises when src has a key under both names; at names src in
// the message. The script's table is left as it is.
func renamedCopy(L *lua.LState, method, at string, src *lua.LTable, names map[string]string) *lua.LTable {
	cp := L.CreateTable(0, 4)
	var dup string
	src.ForEach(func(k, v lua.LValue) {
		if s, ok := k.(lua.LString); ok {
			if wire, ok := names[string(s)]; ok {
				if src.RawGetString(wire) != lua.LNil {
					dup = string(s) + " and " + wire
				}
				k = lua.LString(wire)
			}
		}
		cp.RawSet(k, v)
	})
	if dup != "" {
		raise(L, method+": "+at+": both "+dup+" are set")
	}
	return cp
}

// WireNames are the snake_case keys a script may write in descriptors and
// results, with the wire's camelCase names (script-api.md "Callbacks"):
// luavm renames them at the top level of what it sends, and mcp.sample in
// each of its tools, which are tool descriptors.
var WireNames = map[string]string{
	"input_schema":       "inputSchema",
	"output_schema":      "outputSchema",
	"mime_type":          "mimeType",
	"uri_template":       "uriTemplate",
	"structured_content": "structuredContent",
	"website_url":        "websiteUrl",
}

// sampleTools returns a copy of tools, mcp.sample's list of tools (the
// MCP schema's Tool): in each, input_schema and output_schema become
// inputSchema and outputSchema, written as schemas (required = {} is []).
// A tool needs a name and an input schema of type "object". The script's
// tables are left as they are.
func (m *Module) sampleTools(L *lua.LState, method string, tools *lua.LTable) *lua.LTable {
	n := tools.Len()
	out := m.c.MarkArray(L.CreateTable(n, 0))
	for i := 1; i <= n; i++ {
		at := "tools[" + strconv.Itoa(i) + "]"
		tool, ok := tools.RawGetInt(i).(*lua.LTable)
		if !ok {
			raise(L, method+": params."+at+": want a tool (a table with name and input_schema), got "+describeValue(tools.RawGetInt(i)))
		}
		cp := renamedCopy(L, method, "params."+at, tool, WireNames)
		for _, key := range []string{"inputSchema", "outputSchema"} {
			if v := cp.RawGetString(key); v != lua.LNil {
				cp.RawSetString(key, m.shaped(L, method, at+"."+key, v, Schema))
			}
		}
		switch {
		case cp.RawGetString("name").Type() != lua.LTString:
			raise(L, method+": params."+at+": a tool needs name (a string), got "+describeValue(cp.RawGetString("name")))
		case cp.RawGetString("inputSchema") == lua.LNil:
			raise(L, method+": params."+at+": a tool needs input_schema")
		}
		if typ := cp.RawGetString("inputSchema").(*lua.LTable).RawGetString("type"); typ != lua.LString("object") {
			raise(L, method+": params."+at+".inputSchema.type: the root of an input schema must be type = \"object\", got "+describeValue(typ))
		}
		out.RawSetInt(i, cp)
	}
	return out
}
