package tests

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// The JSON-RPC surface over raw HTTP: the cases of the original's dispatch
// suite (behaviour.md §6b), its codec suite (§6e) and the POST half of its
// end-to-end suite (§6d), with the error codes and messages of §4.

// fixtureTools is the fixture's tool list, in callback order.
var fixtureTools = []string{"add", "boom", "crash", "echo", "count", "progress", "block", "sleep", "unencodable",
	"elicit", "sample", "roots", "notify", "broadcast", "touch", "log", "reconnect"}

func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

func TestPostInitialize(t *testing.T) { // post_initialize, dispatch_initialize
	t.Parallel()
	s := startServer(t, "stateless")
	r := s.do(t, s.url("stateless"), call{Body: request(1, "initialize", initializeParams("2025-06-18"))})
	if r.Status != http.StatusOK || r.contentType() != "application/json" {
		t.Fatalf("HTTP %d %q, want 200 application/json; body:\n%s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a stateless initialize set Mcp-Session-Id %q", sid)
	}
	m := r.response(t)
	wantID(t, m, "1")
	var res map[string]json.RawMessage
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range res {
		keys = append(keys, k)
	}
	if len(res) != 3 {
		t.Errorf("result keys = %v, want exactly protocolVersion, capabilities, serverInfo", keys)
	}
	if !jsonEqual(t, res["protocolVersion"], `"2025-06-18"`) {
		t.Errorf("protocolVersion = %s, want the client's 2025-06-18", res["protocolVersion"])
	}
	if !jsonEqual(t, res["capabilities"], `{"tools":{"listChanged":true},"resources":{"subscribe":true},"prompts":{},"logging":{},"completions":{}}`) {
		t.Errorf("capabilities = %s, want the fixture's map verbatim", res["capabilities"])
	}
	if !jsonEqual(t, res["serverInfo"], `{"name":"luamcp-test-fixture","version":"1.0.0"}`) {
		t.Errorf("serverInfo = %s", res["serverInfo"])
	}
}

func TestDispatchInitializeVersions(t *testing.T) { // dispatch_initialize_unsupported_version
	t.Parallel()
	s := startServer(t, "stateless")
	tests := []struct {
		sent any
		want string
	}{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2024-11-05", "2025-11-25"},
		{"1999-01-01", "2025-11-25"},
		{42, "2025-11-25"},
		{nil, "2025-11-25"},
	}
	for _, tt := range tests {
		params := initializeParams(latestVersion)
		if tt.sent == nil {
			delete(params, "protocolVersion")
		} else {
			params["protocolVersion"] = tt.sent
		}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		s.result(t, s.url("stateless"), "", "initialize", params, &res)
		if res.ProtocolVersion != tt.want {
			t.Errorf("client version %v: got %q, want %q", tt.sent, res.ProtocolVersion, tt.want)
		}
	}
}

func TestDispatchPing(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	for _, id := range []any{1, "abc", 0, -5} {
		m := s.rpc(t, s.url("stateless"), "", id, "ping", nil)
		want, _ := json.Marshal(id)
		wantID(t, m, string(want))
		if string(m.Result) != "{}" || m.Error != nil {
			t.Errorf("ping id %v: result %s error %v, want exactly {}", id, m.Result, m.Error)
		}
	}
}

func TestDispatchUnknownMethod(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	m := s.rpc(t, s.url("stateless"), "", 9, "tools/frobnicate", nil)
	wantID(t, m, "9")
	wantError(t, m, -32601, "Method not found")
}

// decode_*: malformed bodies are HTTP 200. Their error echoes the id when
// one could be read (a string or an integer); otherwise the id is null.
func TestJSONRPCMalformed(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	sid := s.initialize(t, s.url("session"))
	tests := []struct {
		name, body string
		code       int
		msg        string
		id         string // the id the error echoes: a valid one is read even from an invalid request
	}{
		{"decode_parse_error", `{"jsonrpc":`, -32700, "Parse error", "null"},
		{"decode_parse_error_empty", ``, -32700, "Parse error", "null"},
		{"decode_invalid_non_object", `42`, -32600, "Invalid Request", "null"},
		{"decode_invalid_missing_method", `{"jsonrpc":"2.0","id":1}`, -32600, "Invalid Request", "1"},
		{"decode_invalid_method_type", `{"jsonrpc":"2.0","id":1,"method":42}`, -32600, "Invalid Request", "1"},
		{"decode_invalid_wrong_version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600, "Invalid Request", "1"},
		{"decode_invalid_no_version", `{"id":1,"method":"ping"}`, -32600, "Invalid Request", "1"},
		{"decode_invalid_params_not_object", `{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}`, -32600, "Invalid Request", "1"},
		{"decode_invalid_batch_array", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, "Invalid Request", "null"},
		{"post_fractional_id_invalid_request", `{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, -32600, "Invalid Request", "null"},
		{"decode_invalid_fractional_id_exponent", `{"jsonrpc":"2.0","id":1e2,"method":"ping"}`, -32600, "Invalid Request", "null"},
		{"decode_invalid_bool_id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, "Invalid Request", "null"},
		{"decode_invalid_array_id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, "Invalid Request", "null"},
		{"decode_invalid_object_id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "Invalid Request", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, variant := range []string{"stateless", "session"} {
				c := call{Body: tt.body}
				if variant == "session" {
					c.Session = sid
				}
				r := s.do(t, s.url(variant), c)
				if r.Status != http.StatusOK {
					t.Fatalf("%s: HTTP %d, want 200; body:\n%s", variant, r.Status, r.Body)
				}
				m := r.response(t)
				wantID(t, m, tt.id)
				wantError(t, m, tt.code, tt.msg)
			}
		})
	}
}

// result_shape, error_shape, decode_request: the envelopes carry exactly
// jsonrpc, id and result or error {code, message}.
func TestResultAndErrorShape(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	u := s.url("stateless")
	r := s.do(t, u, call{Body: request(12, "ping", nil)})
	if !jsonEqual(t, r.Body, `{"jsonrpc":"2.0","id":12,"result":{}}`) {
		t.Errorf("result envelope = %s", r.Body)
	}
	r = s.do(t, u, call{Body: request("x", "nope/nope", map[string]any{})})
	if !jsonEqual(t, r.Body, `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}}`) {
		t.Errorf("error envelope = %s", r.Body)
	}
}

// Absent params are an empty object (decode_absent_params_defaults_empty):
// tools/list and a tool without arguments work without them.
func TestDispatchAbsentParams(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	if m := s.rpc(t, s.url("stateless"), "", 1, "tools/list", nil); m.Error != nil {
		t.Errorf("tools/list without params: %+v", m.Error)
	}
	m := s.rpc(t, s.url("stateless"), "", 2, "tools/call", map[string]any{"name": "echo"})
	if m.Error != nil {
		t.Fatalf("tools/call without arguments: %+v", m.Error)
	}
	var res toolResult
	_ = json.Unmarshal(m.Result, &res)
	if !jsonEqual(t, res.StructuredContent, `{}`) {
		t.Errorf("echo without arguments: structuredContent %s, want {}", res.StructuredContent)
	}
}

func TestDispatchToolsList(t *testing.T) { // dispatch_tools_list, post_tools_list, pagination_no_cursor_when_list_fits
	t.Parallel()
	s := startServer(t, "stateless")
	var res struct {
		Tools      []map[string]json.RawMessage `json:"tools"`
		NextCursor *string                      `json:"nextCursor"`
	}
	s.result(t, s.url("stateless"), "", "tools/list", map[string]any{}, &res)
	var names []string
	for _, tool := range res.Tools {
		var name string
		_ = json.Unmarshal(tool["name"], &name)
		names = append(names, name)
		if _, ok := tool["inputSchema"]; !ok {
			t.Errorf("tool %s has no inputSchema", name)
		}
		if _, ok := tool["input_schema"]; ok {
			t.Errorf("tool %s still has input_schema", name)
		}
		if name == "echo" && !jsonEqual(t, tool["title"], `"Echo"`) {
			t.Errorf("echo title = %s, want \"Echo\"", tool["title"])
		}
		if name == "add" && !jsonEqual(t, tool["inputSchema"],
			`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`) {
			t.Errorf("add inputSchema = %s", tool["inputSchema"])
		}
	}
	if !reflect.DeepEqual(names, fixtureTools) {
		t.Errorf("tools = %v, want %v in callback order", names, fixtureTools)
	}
	if res.NextCursor != nil {
		t.Errorf("a list that fits one page has nextCursor %q", *res.NextCursor)
	}
}

func TestDispatchToolsCall(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	u := s.url("stateless")
	t.Run("dispatch_tools_call_success", func(t *testing.T) { // post_tools_call
		s.callTool(t, u, "", "add", map[string]any{"a": 2, "b": 3}).wantText(t, "5")
	})
	t.Run("dispatch_tools_call_structured", func(t *testing.T) {
		res := s.callTool(t, u, "", "echo", map[string]any{"x": 1, "nested": map[string]any{"y": []any{"z"}}})
		if !jsonEqual(t, res.StructuredContent, `{"x":1,"nested":{"y":["z"]}}`) {
			t.Errorf("structuredContent = %s, want the arguments", res.StructuredContent)
		}
		var echoed any
		if err := json.Unmarshal([]byte(res.text(t)), &echoed); err != nil {
			t.Errorf("the text block is not the JSON of the arguments: %v", err)
		}
	})
	t.Run("dispatch_tools_call_tool_error", func(t *testing.T) {
		res := s.callTool(t, u, "", "boom", nil)
		if res.IsError == nil || !*res.IsError || res.text(t) != "kaboom" {
			t.Errorf("boom = %+v isError %s, want isError true and text kaboom", res.Content, fmtBool(res.IsError))
		}
	})
	t.Run("dispatch_tools_call_unknown_tool", func(t *testing.T) {
		m := s.rpc(t, u, "", 3, "tools/call", map[string]any{"name": "nope"})
		wantID(t, m, "3")
		wantError(t, m, -32602, "Unknown tool: nope")
	})
	t.Run("dispatch_tools_call_missing_name", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 3, "tools/call", map[string]any{}), -32602, "Invalid params: missing tool name")
		wantError(t, s.rpc(t, u, "", 3, "tools/call", map[string]any{"name": 42}), -32602, "Invalid params: missing tool name")
	})
	t.Run("handle_tool_crash_internal_error", func(t *testing.T) {
		m := s.rpc(t, u, "", 4, "tools/call", map[string]any{"name": "crash"})
		wantID(t, m, "4")
		wantError(t, m, -32603, "Internal error")
		if strings.Contains(string(m.Error.Message), ".lua") {
			t.Errorf("the error names a file: %q", m.Error.Message)
		}
	})
	for _, kind := range []string{"function", "utf8", "nan"} {
		t.Run("handle_tool_unencodable_result_internal_error_"+kind, func(t *testing.T) {
			m := s.rpc(t, u, "", 5, "tools/call", map[string]any{"name": "unencodable", "arguments": map[string]any{"kind": kind}})
			wantID(t, m, "5")
			wantError(t, m, -32603, "Internal error")
		})
	}
	t.Run("dispatch_tools_call_stateless_no_accumulate", func(t *testing.T) {
		s.callTool(t, u, "", "count", nil).wantText(t, "1")
		s.callTool(t, u, "", "count", nil).wantText(t, "1")
	})
	t.Run("crash_is_logged_with_its_line", func(t *testing.T) {
		s.rpc(t, u, "", 6, "tools/call", map[string]any{"name": "crash"})
		s.logs.waitFor(t, "crash on purpose", 1)
	})
}

func TestDispatchResources(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	u := s.url("stateless")
	t.Run("dispatch_resources_list", func(t *testing.T) {
		var res struct {
			Resources []map[string]json.RawMessage `json:"resources"`
		}
		s.result(t, u, "", "resources/list", nil, &res)
		var uris []string
		for _, r := range res.Resources {
			var uri string
			_ = json.Unmarshal(r["uri"], &uri)
			uris = append(uris, uri)
			if _, ok := r["mime_type"]; ok {
				t.Errorf("%s still has mime_type", uri)
			}
		}
		want := []string{"mem://greeting", "mem://locked", "mem://structured", "mem://counter"}
		if !reflect.DeepEqual(uris, want) {
			t.Fatalf("uris = %v, want %v", uris, want)
		}
		g := res.Resources[0]
		if !jsonEqual(t, g["mimeType"], `"text/plain"`) || !jsonEqual(t, g["description"], `"A greeting"`) || !jsonEqual(t, g["name"], `"greeting"`) {
			t.Errorf("greeting descriptor = %v", g)
		}
	})
	t.Run("post_resources_read", func(t *testing.T) { // dispatch_resources_read
		var res struct {
			Contents []map[string]json.RawMessage `json:"contents"`
		}
		s.result(t, u, "", "resources/read", map[string]any{"uri": "mem://greeting"}, &res)
		if len(res.Contents) != 1 || !jsonEqual(t, res.Contents[0]["uri"], `"mem://greeting"`) || !jsonEqual(t, res.Contents[0]["text"], `"hello"`) {
			t.Fatalf("contents = %v, want [{uri mem://greeting, text hello}]", res.Contents)
		}
		if mt, ok := res.Contents[0]["mimeType"]; ok && !jsonEqual(t, mt, `"text/plain"`) {
			t.Errorf("mimeType = %s, want the listed text/plain or none", mt)
		}
	})
	t.Run("dispatch_resources_read_structured", func(t *testing.T) {
		m := s.rpc(t, u, "", 1, "resources/read", map[string]any{"uri": "mem://structured"})
		if m.Error != nil || !jsonEqual(t, m.Result, `{"contents":[{"uri":"mem://structured","mimeType":"application/json","text":"{\"a\":1}"}]}`) {
			t.Errorf("result %s error %v, want the contents verbatim", m.Result, m.Error)
		}
	})
	t.Run("read_template_uri", func(t *testing.T) {
		var res struct {
			Contents []struct{ URI, Text string } `json:"contents"`
		}
		s.result(t, u, "", "resources/read", map[string]any{"uri": "mem://user/42"}, &res)
		if len(res.Contents) != 1 || res.Contents[0].Text != "user 42" || res.Contents[0].URI != "mem://user/42" {
			t.Errorf("contents = %+v, want [{mem://user/42 user 42}]", res.Contents)
		}
	})
	t.Run("dispatch_resources_read_error", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "resources/read", map[string]any{"uri": "mem://locked"}), -32002, "locked")
	})
	t.Run("dispatch_resources_read_unknown", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "resources/read", map[string]any{"uri": "mem://nope"}), -32002, "Resource not found: mem://nope")
	})
	t.Run("dispatch_resources_read_missing_uri", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "resources/read", map[string]any{}), -32602, "Invalid params: missing resource uri")
		wantError(t, s.rpc(t, u, "", 1, "resources/read", map[string]any{"uri": 7}), -32602, "Invalid params: missing resource uri")
	})
	t.Run("dispatch_resources_subscribe_missing_uri", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "resources/subscribe", map[string]any{}), -32602, "Invalid params: missing resource uri")
		wantError(t, s.rpc(t, u, "", 1, "resources/unsubscribe", map[string]any{}), -32602, "Invalid params: missing resource uri")
	})
	t.Run("stateless_subscribe_accepted", func(t *testing.T) {
		for _, method := range []string{"resources/subscribe", "resources/unsubscribe"} {
			m := s.rpc(t, u, "", 1, method, map[string]any{"uri": "mem://greeting"})
			if m.Error != nil || string(m.Result) != "{}" {
				t.Errorf("%s: result %s error %v, want {}", method, m.Result, m.Error)
			}
		}
	})
	t.Run("post_resources_templates_list", func(t *testing.T) { // dispatch_resources_templates_list
		m := s.rpc(t, u, "", 1, "resources/templates/list", nil)
		if m.Error != nil || !jsonEqual(t, m.Result,
			`{"resourceTemplates":[{"uriTemplate":"mem://user/{id}","name":"user","description":"A user by id","mimeType":"text/plain"}]}`) {
			t.Errorf("result %s error %v", m.Result, m.Error)
		}
	})
}

func TestDispatchPrompts(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	u := s.url("stateless")
	t.Run("dispatch_prompts_list", func(t *testing.T) {
		m := s.rpc(t, u, "", 1, "prompts/list", nil)
		want := `{"prompts":[
			{"name":"greet","description":"Greet someone","arguments":[{"name":"who","description":"Who to greet","required":true}]},
			{"name":"deny","description":"Always fails"},
			{"name":"count","description":"Counts its renders"}]}`
		if m.Error != nil || !jsonEqual(t, m.Result, want) {
			t.Errorf("result %s error %v, want %s", m.Result, m.Error, want)
		}
	})
	t.Run("post_prompts_get", func(t *testing.T) { // dispatch_prompts_get
		m := s.rpc(t, u, "", 1, "prompts/get", map[string]any{"name": "greet", "arguments": map[string]any{"who": "Ada"}})
		want := `{"description":"A greeting","messages":[{"role":"user","content":{"type":"text","text":"Hello, Ada"}}]}`
		if m.Error != nil || !jsonEqual(t, m.Result, want) {
			t.Errorf("result %s error %v, want %s", m.Result, m.Error, want)
		}
	})
	t.Run("dispatch_prompts_get_error", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "prompts/get", map[string]any{"name": "deny"}), -32602, "denied")
	})
	t.Run("dispatch_prompts_get_unknown", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "prompts/get", map[string]any{"name": "nope"}), -32602, "Unknown prompt: nope")
	})
	t.Run("dispatch_prompts_get_missing_name", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "prompts/get", map[string]any{}), -32602, "Invalid params: missing prompt name")
	})
}

func TestDispatchLoggingAndCompletion(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	u := s.url("stateless")
	t.Run("dispatch_set_level", func(t *testing.T) {
		for _, level := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
			m := s.rpc(t, u, "", 1, "logging/setLevel", map[string]any{"level": level})
			if m.Error != nil || string(m.Result) != "{}" {
				t.Errorf("level %s: result %s error %v, want {}", level, m.Result, m.Error)
			}
		}
	})
	t.Run("dispatch_set_level_invalid", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "logging/setLevel", map[string]any{"level": "loud"}), -32602, "Invalid log level: loud")
	})
	t.Run("dispatch_set_level_missing", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "logging/setLevel", map[string]any{}), -32602, "Invalid params: missing level")
	})
	t.Run("post_completion_complete", func(t *testing.T) { // dispatch_complete
		tests := []struct {
			ref   map[string]any
			value string
			want  string
		}{
			{map[string]any{"type": "ref/prompt", "name": "greet"}, "Ad", `{"completion":{"values":["Ada","Adam"],"total":2,"hasMore":false}}`},
			{map[string]any{"type": "ref/prompt", "name": "greet"}, "", `{"completion":{"values":["Ada","Adam","Alan"],"total":3,"hasMore":false}}`},
			{map[string]any{"type": "ref/prompt", "name": "greet"}, "Z", `{"completion":{"values":[],"total":0,"hasMore":false}}`},
			{map[string]any{"type": "ref/resource", "uri": "mem://user/{id}"}, "Ala", `{"completion":{"values":["Alan"],"total":1,"hasMore":false}}`},
		}
		for _, tt := range tests {
			m := s.rpc(t, u, "", 1, "completion/complete", map[string]any{"ref": tt.ref, "argument": map[string]any{"name": "who", "value": tt.value}})
			if m.Error != nil || !jsonEqual(t, m.Result, tt.want) {
				t.Errorf("value %q: result %s error %v, want %s", tt.value, m.Result, m.Error, tt.want)
			}
		}
	})
	t.Run("dispatch_complete_invalid_ref", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "completion/complete", map[string]any{
			"ref": map[string]any{"type": "ref/bogus"}, "argument": map[string]any{"name": "who", "value": "A"}}),
			-32602, "Invalid completion ref or argument")
		wantError(t, s.rpc(t, u, "", 1, "completion/complete", map[string]any{
			"ref": map[string]any{"type": "ref/prompt", "name": "greet"}, "argument": map[string]any{"name": "who", "value": 5}}),
			-32602, "Invalid completion ref or argument")
	})
	t.Run("dispatch_complete_missing", func(t *testing.T) {
		wantError(t, s.rpc(t, u, "", 1, "completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "greet"}}),
			-32602, "Invalid params: missing ref or argument")
	})
}

// dispatch_resources_unsupported, dispatch_resources_templates_unsupported,
// dispatch_prompts_unsupported, dispatch_logging_unsupported,
// dispatch_complete_unsupported: a capability the server did not advertise
// gates its methods; tools are always served.
func TestDispatchUnsupported(t *testing.T) {
	t.Parallel()
	s := startServer(t, "nocaps")
	u := s.url("nocaps")
	calls := map[string]any{
		"resources/list":           nil,
		"resources/read":           map[string]any{"uri": "mem://greeting"},
		"resources/templates/list": nil,
		"resources/subscribe":      map[string]any{"uri": "mem://greeting"},
		"resources/unsubscribe":    map[string]any{"uri": "mem://greeting"},
		"prompts/list":             nil,
		"prompts/get":              map[string]any{"name": "greet", "arguments": map[string]any{"who": "Ada"}},
		"logging/setLevel":         map[string]any{"level": "info"},
		"completion/complete": map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "greet"},
			"argument": map[string]any{"name": "who", "value": "A"}},
	}
	for method, params := range calls {
		wantError(t, s.rpc(t, u, "", 1, method, params), -32601, "Method not found")
	}
	s.callTool(t, u, "", "add", map[string]any{"a": 1, "b": 1}).wantText(t, "2")
}

// --- pagination (page_size 2 in the session variant) -------------------------

func cursorOf(offset string) string { return base64.StdEncoding.EncodeToString([]byte(offset)) }

// walk lists every page of method and returns the keys of the items and the
// number of pages.
func walk(t *testing.T, s *testServer, u, sid, method, field, key string) ([]string, int) {
	t.Helper()
	var all []string
	var cursor *string
	for pages := 1; ; pages++ {
		params := map[string]any{}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		var res map[string]json.RawMessage
		s.result(t, u, sid, method, params, &res)
		var items []map[string]any
		if err := json.Unmarshal(res[field], &items); err != nil {
			t.Fatalf("%s: %s is %s: %v", method, field, res[field], err)
		}
		if len(items) > 2 {
			t.Fatalf("%s: a page of %d items at page_size 2", method, len(items))
		}
		for _, it := range items {
			all = append(all, it[key].(string))
		}
		raw, ok := res["nextCursor"]
		if !ok {
			return all, pages
		}
		var next string
		if err := json.Unmarshal(raw, &next); err != nil {
			t.Fatalf("nextCursor %s is not a string", raw)
		}
		cursor = &next
		if pages > 50 {
			t.Fatalf("%s: more than 50 pages", method)
		}
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	t.Run("pagination_tools_walk", func(t *testing.T) { // post_tools_list_paginates
		names, pages := walk(t, s, u, sid, "tools/list", "tools", "name")
		if !reflect.DeepEqual(names, fixtureTools) {
			t.Errorf("walked tools = %v, want %v", names, fixtureTools)
		}
		if want := (len(fixtureTools) + 1) / 2; pages != want {
			t.Errorf("%d pages, want %d", pages, want)
		}
	})
	t.Run("pagination_resources_walk", func(t *testing.T) {
		uris, pages := walk(t, s, u, sid, "resources/list", "resources", "uri")
		if len(uris) != 4 || pages != 2 {
			t.Errorf("walked %v in %d pages, want 4 resources in 2 pages", uris, pages)
		}
	})
	t.Run("pagination_prompts_walk", func(t *testing.T) {
		names, pages := walk(t, s, u, sid, "prompts/list", "prompts", "name")
		if !reflect.DeepEqual(names, []string{"greet", "deny", "count"}) || pages != 2 {
			t.Errorf("walked %v in %d pages, want [greet deny count] in 2", names, pages)
		}
	})
	t.Run("pagination_templates_one_page", func(t *testing.T) {
		uris, pages := walk(t, s, u, sid, "resources/templates/list", "resourceTemplates", "uriTemplate")
		if len(uris) != 1 || pages != 1 {
			t.Errorf("walked %v in %d pages, want one template in one page", uris, pages)
		}
	})
	t.Run("pagination_past_end_cursor", func(t *testing.T) {
		m := s.rpc(t, u, sid, 1, "tools/list", map[string]any{"cursor": cursorOf("1000")})
		if m.Error != nil || !jsonEqual(t, m.Result, `{"tools":[]}`) {
			t.Errorf("result %s error %v, want {\"tools\":[]} with no cursor", m.Result, m.Error)
		}
	})
	t.Run("pagination_invalid_cursor", func(t *testing.T) {
		for _, c := range []string{cursorOf("abc"), cursorOf("-1"), "!!not base64!!"} {
			wantError(t, s.rpc(t, u, sid, 1, "tools/list", map[string]any{"cursor": c}), -32602, "Invalid cursor")
		}
	})
	t.Run("pagination_non_binary_cursor", func(t *testing.T) {
		wantError(t, s.rpc(t, u, sid, 1, "tools/list", map[string]any{"cursor": 5}), -32602, "Invalid cursor")
		wantError(t, s.rpc(t, u, sid, 1, "prompts/list", map[string]any{"cursor": true}), -32602, "Invalid cursor")
	})
}
