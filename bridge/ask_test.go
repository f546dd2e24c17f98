package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

func TestRequestKeys(t *testing.T) {
	h := newHarness(t)
	h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
	h.mustRun(t, `
		assert(mcp.elicit(ctx, {message = "a"}))
		assert(mcp.sample(ctx, {messages = mcp.array(), max_tokens = 1}))
		assert(mcp.elicit(ctx, {message = "b", key = "user_name"}))
		assert(mcp.list_roots(ctx))
		assert(mcp.elicit(ctx, {message = "c"}))
		assert(mcp.list_roots(ctx, {key = "client_roots"}))
		assert(mcp.sample(ctx, {messages = mcp.array()}))`)
	equal(t, "keys", h.line.keys, []string{"elicit-1", "sample-1", "user_name", "roots-1", "elicit-2", "client_roots", "sample-2"})
	equal(t, "line", h.line.events, []string{
		`request elicitation/create {"message":"a"}`,
		`request sampling/createMessage {"maxTokens":1,"messages":[]}`,
		`request elicitation/create {"message":"b"}`, // the key is not a param
		`request roots/list {}`,
		`request elicitation/create {"message":"c"}`,
		`request roots/list {}`,
		`request sampling/createMessage {"messages":[]}`,
	})

	// A new call counts from 1 again.
	h.line.keys = nil
	h.begin(CallInfo{RequestID: json.RawMessage(`2`)})
	h.mustRun(t, `assert(mcp.elicit(ctx, {message = "a"}))`)
	equal(t, "keys of the next call", h.line.keys, []string{"elicit-1"})
}

func TestRequestKeyErrors(t *testing.T) {
	tests := []struct{ name, chunk, want string }{
		{"key asked twice", `mcp.elicit(ctx, {message = "a", key = "k"}); mcp.sample(ctx, {key = "k"})`,
			`sampling/createMessage: key "k" was asked before in this call`},
		{"explicit key that a default took", `mcp.elicit(ctx, {}); mcp.elicit(ctx, {key = "elicit-1"})`,
			`key "elicit-1" was asked before`},
		{"ask reuses a key", `mcp.list_roots(ctx, {key = "r"}); mcp.ask(ctx, {r = {method = "roots/list"}})`,
			`mcp.ask: key "r" was asked before`},
		{"key not a string", `mcp.elicit(ctx, {key = 1})`, "elicitation/create: key must be a non-empty string, got number"},
		{"empty key", `mcp.list_roots(ctx, {key = ""})`, "roots/list: key must be a non-empty string, got string"},
		{"key not UTF-8", `mcp.elicit(ctx, {message = "a", key = "\255"})`, `elicitation/create: key "\xff" is not UTF-8`},
		{"ask key not UTF-8", `mcp.ask(ctx, {["\254"] = {method = "roots/list"}})`, "mcp.ask: key"},
		{"key too long", `mcp.elicit(ctx, {message = "a", key = string.rep("k", 1025)})`, "elicitation/create: key of 1025 bytes: at most 1024"},
		{"keys past their bound", `for i = 1, 2000 do mcp.list_roots(ctx, {key = string.rep("k", 1000) .. i}) end`, "roots/list: the call asked too many requests"},
		{"list_roots options not a table", `mcp.list_roots(ctx, "k")`, "table expected, got string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
			h.mustFail(t, tt.chunk, tt.want)
		})
	}
}

// TestRequestParamShapes: the top-level params the MCP schema makes lists
// reach the client as lists: mcp.sample with stop_sequences = {} sent
// "stopSequences":{} (and messages = {} "messages":{}), which a client that
// checks the schema refuses. An empty table there is [] (the script's table
// stays unmarked), a value of the other kind is an error naming it, and
// nested tables pass as written.
func TestRequestParamShapes(t *testing.T) {
	tests := []struct{ name, chunk, want, fail string }{
		{"empty lists", `mcp.sample(ctx, {messages = {}, stop_sequences = {}, tools = {}})`,
			`request sampling/createMessage {"messages":[],"stopSequences":[],"tools":[]}`, ""},
		{"wire names", `mcp.sample(ctx, {messages = {}, stopSequences = {}})`,
			`request sampling/createMessage {"messages":[],"stopSequences":[]}`, ""},
		{"lists", `mcp.sample(ctx, {messages = {{role = "user", content = {type = "text", text = "hi"}}}, stop_sequences = {"x"}})`,
			`request sampling/createMessage {"messages":[{"content":{"text":"hi","type":"text"},"role":"user"}],"stopSequences":["x"]}`, ""},
		{"through mcp.ask", `mcp.ask(ctx, {s = {method = "sampling/createMessage", params = {messages = {}}}})`,
			`request sampling/createMessage {"messages":[]}`, ""},
		{"nested lists of the schema", `mcp.sample(ctx, {messages = {}, model_preferences = {hints = {}}, metadata = {hints = {}}})`,
			`request sampling/createMessage {"messages":[],"metadata":{"hints":{}},"modelPreferences":{"hints":[]}}`, ""},
		{"the script's table unmarked", `local m = {}; mcp.sample(ctx, {messages = m}); assert(mcp.json_encode(m) == "{}")`,
			`request sampling/createMessage {"messages":[]}`, ""},
		{"elicit unchanged", `mcp.elicit(ctx, {message = "m", requested_schema = {type = "object", properties = {}}})`,
			`request elicitation/create {"message":"m","requestedSchema":{"properties":{},"type":"object"}}`, ""},
		{"elicit schema's lists", `local s = {type = "object", properties = {}, required = {}}; mcp.elicit(ctx, {message = "m", requested_schema = s}); assert(mcp.json_encode(s.required) == "{}")`,
			`request elicitation/create {"message":"m","requestedSchema":{"properties":{},"required":[],"type":"object"}}`, ""},
		{"elicit schema a list", `mcp.elicit(ctx, {message = "m", requested_schema = {"object"}})`, "",
			"elicitation/create: params.requestedSchema: want an object (a table with string keys), got a list"},
		{"marked object", `mcp.sample(ctx, {messages = mcp.object({})})`, "",
			"sampling/createMessage: params.messages: want a list, got a table marked as the other kind"},
		{"a table with keys", `mcp.sample(ctx, {messages = {}, stop_sequences = {a = "x"}})`, "",
			`sampling/createMessage: params.stopSequences: want a list, got a table with the key "a"`},
		{"a string", `mcp.sample(ctx, {messages = {}, tools = "x"})`, "",
			`sampling/createMessage: params.tools: want a list, got the string "x"`},
		// A tool's schemas are renamed and written as a tool descriptor's
		// are; the script's tables stay as they were.
		{"tool schemas", `local s = {type = "object", properties = {}, required = {}}
			mcp.sample(ctx, {messages = {}, tools = {{name = "t", input_schema = s, output_schema = {type = "object", required = {}}}}})
			assert(mcp.json_encode(s.required) == "{}" and s.type == "object")`,
			`request sampling/createMessage {"messages":[],"tools":[{"inputSchema":{"properties":{},"required":[],"type":"object"},"name":"t","outputSchema":{"required":[],"type":"object"}}]}`, ""},
		{"tool wire names", `mcp.sample(ctx, {messages = {}, tools = {{name = "t", inputSchema = {type = "object"}, annotations = {x = 1}}}})`,
			`request sampling/createMessage {"messages":[],"tools":[{"annotations":{"x":1},"inputSchema":{"type":"object"},"name":"t"}]}`, ""},
		{"tool both names", `mcp.sample(ctx, {messages = {}, tools = {{name = "t", input_schema = {type = "object"}, inputSchema = {type = "object"}}}})`, "",
			"sampling/createMessage: params.tools[1]: both input_schema and inputSchema are set"},
		// model_preferences' own keys are renamed too (a client ignores
		// speed_priority); the script's table stays as it was.
		{"model preferences", `local p = {speed_priority = 1, cost_priority = 0.5, intelligencePriority = 0}
			mcp.sample(ctx, {messages = {}, model_preferences = p}); assert(p.speed_priority == 1 and p.speedPriority == nil)`,
			`request sampling/createMessage {"messages":[],"modelPreferences":{"costPriority":0.5,"intelligencePriority":0,"speedPriority":1}}`, ""},
		{"model preferences both names", `mcp.sample(ctx, {messages = {}, model_preferences = {speed_priority = 1, speedPriority = 1}})`, "",
			"sampling/createMessage: params.model_preferences: both speed_priority and speedPriority are set"},
		{"tool without schema", `mcp.sample(ctx, {messages = {}, tools = {{name = "t"}}})`, "",
			"sampling/createMessage: params.tools[1]: a tool needs input_schema"},
		{"tool without name", `mcp.sample(ctx, {messages = {}, tools = {{input_schema = {type = "object"}}}})`, "",
			"sampling/createMessage: params.tools[1]: a tool needs name (a string), got nil"},
		{"tool schema not an object", `mcp.sample(ctx, {messages = {}, tools = {{name = "t", input_schema = {type = "string"}}}})`, "",
			`sampling/createMessage: params.tools[1].inputSchema.type: the root of an input schema must be type = "object", got the string "string"`},
		{"tool a string", `mcp.sample(ctx, {messages = {}, tools = {"t"}})`, "",
			`sampling/createMessage: params.tools[1]: want a tool (a table with name and input_schema), got the string "t"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
			if tt.fail != "" {
				h.mustFail(t, tt.chunk, tt.fail)
				return
			}
			h.mustRun(t, tt.chunk)
			equal(t, "line", h.line.events, []string{tt.want})
		})
	}
}

// TestSamplingMessages: mcp.sample's messages have a role, user or
// assistant, and content (a block, or a list of blocks) whose blocks have
// the fields the MCP schema requires of a sampling message's; otherwise the
// request raises, naming the place, and is not sent.
func TestSamplingMessages(t *testing.T) {
	tests := []struct{ name, messages, want, fail string }{
		{"block", `{{role = "user", content = {type = "text", text = "hi", _meta = {}}}}`,
			`[{"content":{"_meta":{},"text":"hi","type":"text"},"role":"user"}]`, ""},
		{"list of blocks", `{{role = "assistant", content = {{type = "tool_use", id = "1", name = "f", input = {}}}},
			{role = "user", content = {{type = "tool_result", toolUseId = "1", content = {{type = "text", text = "ok"}}}, {type = "image", data = "aGk=", mimeType = "image/png"}}}}`,
			`[{"content":[{"id":"1","input":{},"name":"f","type":"tool_use"}],"role":"assistant"},` +
				`{"content":[{"content":[{"text":"ok","type":"text"}],"toolUseId":"1","type":"tool_result"},{"data":"aGk=","mimeType":"image/png","type":"image"}],"role":"user"}]`, ""},
		{"marked empty list", `{{role = "user", content = mcp.array()}}`, `[{"content":[],"role":"user"}]`, ""},
		{"no text", `{{role = "user", content = {type = "text"}}}`, "",
			"params.messages[1].content: a text block needs text"},
		{"in a list", `{{role = "user", content = {{type = "text", text = "a"}, {type = "image", data = "aGk="}}}}`, "",
			"params.messages[1].content[2]: an image block needs mimeType"},
		{"system role", `{{role = "system", content = {type = "text", text = "hi"}}}`, "",
			`params.messages[1].role: want "user" or "assistant", got the string "system"`},
		{"string content", `{{role = "user", content = "hi"}}`, "",
			`params.messages[1].content: want a content block (a table with type), got the string "hi"`},
		{"no content", `{{role = "user"}}`, "", "params.messages[1]: a message needs content"},
		{"resource_link", `{{role = "user", content = {type = "resource_link", uri = "r://x", name = "x"}}}`, "",
			`params.messages[1].content.type: want text, image, audio, tool_use or tool_result, got the string "resource_link"`},
		{"tool_use without input", `{{role = "assistant", content = {type = "tool_use", id = "1", name = "f"}}}`, "",
			"params.messages[1].content: a tool_use block needs input"},
		{"tool_use input a list", `{{role = "assistant", content = {type = "tool_use", id = "1", name = "f", input = {1}}}}`, "",
			"params.messages[1].content.input: want an object (a table with string keys), got a list"},
		{"tool_result one block", `{{role = "user", content = {type = "tool_result", toolUseId = "1", content = {type = "text", text = "x"}}}}`, "",
			"params.messages[1].content.content: want a list of content blocks, got one block (put it in a list: { block })"},
		{"tool_result bad block", `{{role = "user", content = {type = "tool_result", toolUseId = "1", content = {{type = "image"}}}}}`, "",
			"params.messages[1].content.content[1]: an image block needs data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, chunk := range []string{
				`mcp.sample(ctx, {max_tokens = 5, messages = ` + tt.messages + `})`,
				`mcp.ask(ctx, {s = {method = "sampling/createMessage", params = {max_tokens = 5, messages = ` + tt.messages + `}}})`,
			} {
				h := newHarness(t)
				h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
				if tt.fail != "" {
					h.mustFail(t, chunk, "sampling/createMessage: "+tt.fail)
					equal(t, "line", h.line.events, nil)
					continue
				}
				h.mustRun(t, chunk)
				equal(t, "line", h.line.events, []string{`request sampling/createMessage {"maxTokens":5,"messages":` + tt.want + `}`})
			}
		})
	}
}

func TestAsk(t *testing.T) {
	h := newHarness(t)
	h.line.answer = func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
		switch method {
		case "roots/list":
			return json.RawMessage(`{"roots":[{"uri":"file:///w"}]}`), nil
		case "sampling/createMessage":
			return nil, errors.New("the user declined")
		}
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
	}
	h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
	got := h.mustRun(t, `
		local answers, failed = mcp.ask(ctx, {
			user_name = {method = "elicitation/create", params = {message = "Name?", requested_schema = {type = "object"}}},
			client_roots = {method = "roots/list"},
			greeting = {method = "sampling/createMessage", params = {messages = mcp.array(), max_tokens = 5}},
		})
		return answers.user_name.content.name, answers.client_roots.roots[1].uri, tostring(answers.greeting), failed.greeting`)
	if got != "Ada, file:///w, nil, sampling/createMessage: the user declined" {
		t.Errorf("got %q", got)
	}
	// One round, in the order of the keys: the same on every run of a call.
	equal(t, "keys", h.line.keys, []string{"client_roots", "greeting", "user_name"})
	equal(t, "line", h.line.events, []string{
		`request roots/list {}`,
		`request sampling/createMessage {"maxTokens":5,"messages":[]}`,
		`request elicitation/create {"message":"Name?","requestedSchema":{"type":"object"}}`,
	})

	t.Run("all answered", func(t *testing.T) {
		h := newHarness(t)
		h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
		if got := h.mustRun(t, `return select("#", mcp.ask(ctx, {a = {method = "roots/list"}}))`); got != "1" {
			t.Errorf("mcp.ask returned %s values, want 1 (no failures table)", got)
		}
	})
	t.Run("nothing to ask", func(t *testing.T) {
		h := newHarness(t)
		h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
		if got := h.mustRun(t, `return next(mcp.ask(ctx, {}))`); got != "nil" {
			t.Errorf("got %q", got)
		}
		equal(t, "line", h.line.events, nil)
	})
	t.Run("stale ctx", func(t *testing.T) {
		h := newHarness(t)
		ctx := h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
		h.m.EndCall(ctx)
		if got := h.mustRun(t, `return mcp.ask(ctx, {a = {method = "roots/list"}})`); got != "nil, mcp.ask: ctx is not a running call" {
			t.Errorf("got %q", got)
		}
	})
}

func TestAskBadSpec(t *testing.T) {
	tests := []struct{ name, chunk, want string }{
		{"not a table", `mcp.ask(ctx, "x")`, "table expected, got string"},
		{"number key", `mcp.ask(ctx, {{method = "roots/list"}})`, "keys must be non-empty strings, got number"},
		{"entry not a table", `mcp.ask(ctx, {a = "roots/list"})`, `["a"] must be a table {method=, params=?}, got string`},
		{"unknown method", `mcp.ask(ctx, {a = {method = "tools/call"}})`, `["a"].method must be elicitation/create, sampling/createMessage or roots/list`},
		{"no method", `mcp.ask(ctx, {a = {}})`, `["a"].method must be`},
		{"params not a table", `mcp.ask(ctx, {a = {method = "roots/list", params = 1}})`, `["a"].params must be a table or nil, got number`},
		{"key in params", `mcp.ask(ctx, {a = {method = "roots/list", params = {key = "b"}}})`, `["a"].params.key: the key is the table's key here`},
		{"params that do not encode", `mcp.ask(ctx, {a = {method = "elicitation/create", params = {f = print}}})`, "params.f: cannot encode a function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
			h.mustFail(t, tt.chunk, tt.want)
			equal(t, "line", h.line.events, nil)
		})
	}
}

// A round that ends the call (the 2026-07-28 era's input_required: the line
// cancelled the call first) stops the script, pcall or not; a round that
// fails without ending the call is an in-band failure.
func TestAskRoundEnds(t *testing.T) {
	for _, fn := range []string{
		`mcp.elicit(ctx, {message = "m", key = "user_name"})`,
		`mcp.ask(ctx, {user_name = {method = "elicitation/create", params = {message = "m"}}})`,
	} {
		t.Run(strings.Fields(fn)[0], func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			h.L.SetContext(ctx)
			stop := errors.New("input required")
			h.line.round = func(context.Context, []InputRequest) error {
				cancel(stop)
				return stop
			}
			h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
			_, err := h.run(`local ok, e = pcall(function() return ` + fn + ` end); reached = true`)
			if err == nil || !strings.Contains(err.Error(), "context canceled") {
				t.Fatalf("error %v, want a raise", err)
			}
			if h.L.GetGlobal("reached") != lua.LNil {
				t.Error("script went on after the round ended the call")
			}
			equal(t, "keys", h.line.keys, []string{"user_name"})
		})
	}
	t.Run("round fails, call goes on", func(t *testing.T) {
		h := newHarness(t)
		h.line.round = func(context.Context, []InputRequest) error { return errors.New("stream closed") }
		h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
		if got := h.mustRun(t, `return mcp.list_roots(ctx)`); got != "nil, roots/list: stream closed" {
			t.Errorf("got %q", got)
		}
		if got := h.mustRun(t, `return mcp.ask(ctx, {r = {method = "roots/list"}})`); got != "nil, mcp.ask: stream closed" {
			t.Errorf("got %q", got)
		}
	})
}

func TestCtxEraFields(t *testing.T) {
	h := newHarness(t)
	h.begin(CallInfo{RequestID: json.RawMessage(`1`), ProtocolVersion: "2026-07-28",
		ClientCapabilities: json.RawMessage(`{"sampling":{},"elicitation":{"form":{}}}`)})
	got := h.mustRun(t, `
		local caps = ctx.client_capabilities
		return ctx.protocol_version, type(caps.sampling), type(caps.elicitation.form), tostring(caps.roots)`)
	if got != "2026-07-28, table, table, nil" {
		t.Errorf("got %q", got)
	}
	h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
	if got := h.mustRun(t, `return tostring(ctx.protocol_version), tostring(ctx.client_capabilities)`); got != "nil, nil" {
		t.Errorf("unknown era and capabilities: got %q", got)
	}
	h.begin(CallInfo{RequestID: json.RawMessage(`1`), ClientCapabilities: json.RawMessage(`"x"`)})
	if got := h.mustRun(t, `return tostring(ctx.client_capabilities)`); got != "nil" {
		t.Errorf("capabilities that are not an object: got %q", got)
	}
}

// The table fields of ctx are built on first read, once, and then are plain
// fields; the metatable that builds them cannot be read or replaced (a pooled
// state serves several clients).
func TestCtxLazyFields(t *testing.T) {
	h := newHarness(t)
	h.begin(CallInfo{RequestID: json.RawMessage(`1`), ClientCapabilities: json.RawMessage(`{"sampling":{}}`),
		Auth: &CallAuth{Subject: "alice"}})
	got := h.mustRun(t, `
		local before = rawget(ctx, "client_capabilities")
		local a, b = ctx.client_capabilities, ctx.client_capabilities
		local subject = ctx.auth.subject
		local ks = {} for k in pairs(ctx) do ks[#ks+1] = k end
		table.sort(ks)
		return tostring(before), tostring(a == b), subject, table.concat(ks, " "),
			tostring(getmetatable(ctx)), tostring(pcall(setmetatable, ctx, {}))`)
	if want := "nil, true, alice, auth client_capabilities request_id, false, false"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
