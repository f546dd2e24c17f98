package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The 2026-07-28 era on the wire, with the raw client: what the SDKs hide
// or never send. The reference for each answer is the spec digest
// (../shared/reference/mcp-spec.md, §17) and the conformance suite's own
// reference server (the order of its checks: header, then _meta, then
// version).

const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
)

// eraCall builds a conforming 2026-07-28 request: the headers (version,
// Mcp-Method, Mcp-Name) and the _meta (version, the capabilities caps,
// client info). A "_meta" already in params is kept (nil: none is sent).
func eraCall(id any, method string, params map[string]any, caps map[string]any) call {
	if params == nil {
		params = map[string]any{}
	}
	if caps == nil {
		caps = map[string]any{}
	}
	meta, ok := params["_meta"]
	switch {
	case !ok:
		params["_meta"] = map[string]any{metaProtocolVersion: eraVersion, metaClientCapabilities: caps,
			metaClientInfo: map[string]any{"name": "raw-era-e2e", "version": "1.0.0"}}
	case meta == nil:
		delete(params, "_meta")
	}
	h := map[string]string{"MCP-Protocol-Version": eraVersion, "Mcp-Method": method}
	switch method {
	case "tools/call", "prompts/get":
		h["Mcp-Name"], _ = params["name"].(string)
	case "resources/read":
		h["Mcp-Name"], _ = params["uri"].(string)
	case "tasks/get", "tasks/update", "tasks/cancel":
		h["Mcp-Name"], _ = params["taskId"].(string)
	}
	return call{Body: request(id, method, params), Header: h}
}

// eraResult decodes a successful response's result, failing on an error.
func eraResult(t *testing.T, r *reply, out any) {
	t.Helper()
	m := r.response(t)
	if m.Error != nil {
		t.Fatalf("HTTP %d, error %d %q %s, want a result", r.Status, m.Error.Code, m.Error.Message, m.Error.Data)
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a 2026-07-28 answer carries Mcp-Session-Id %q", r.Header.Get("Mcp-Session-Id"))
	}
	if err := json.Unmarshal(m.Result, out); err != nil {
		t.Fatalf("result %s: %v", m.Result, err)
	}
}

// wantEraError checks an error answer: HTTP status (0: any), JSON-RPC
// code, the request's id (never null), and returns the error's data.
func wantEraError(t *testing.T, r *reply, status, code int, id string) json.RawMessage {
	t.Helper()
	m := r.response(t)
	if m.Error == nil {
		t.Fatalf("HTTP %d, result %s, want error %d", r.Status, m.Result, code)
	}
	if (status != 0 && r.Status != status) || m.Error.Code != code {
		t.Errorf("HTTP %d, error %d %q, want HTTP %d, error %d", r.Status, m.Error.Code, m.Error.Message, status, code)
	}
	wantID(t, m, id)
	return m.Error.Data
}

func TestEraRawDiscover(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			r := s.do(t, s.url(variant), eraCall(1, "server/discover", nil, nil))
			if r.Status != http.StatusOK {
				t.Fatalf("server/discover: HTTP %d %s", r.Status, r.Body)
			}
			var res struct {
				ResultType        string   `json:"resultType"`
				SupportedVersions []string `json:"supportedVersions"`
				Capabilities      struct {
					Tools *struct{} `json:"tools"`
				} `json:"capabilities"`
				TTLMs      *int64 `json:"ttlMs"`
				CacheScope string `json:"cacheScope"`
				Meta       struct {
					ServerInfo struct{ Name string } `json:"io.modelcontextprotocol/serverInfo"`
				} `json:"_meta"`
			}
			eraResult(t, r, &res)
			if res.ResultType != "complete" || !slices.Contains(res.SupportedVersions, eraVersion) || !slices.Contains(res.SupportedVersions, latestVersion) ||
				res.Capabilities.Tools == nil || res.TTLMs == nil || *res.TTLMs != 0 || res.CacheScope != "private" ||
				res.Meta.ServerInfo.Name != "luamcp-test-fixture" {
				t.Errorf("server/discover = %s", r.response(t).Result)
			}
		})
	}
}

// TestEraRawLists: resultType on every result, the cache hints (route
// defaults: ttlMs 0, cacheScope private) on lists and reads.
func TestEraRawLists(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	url := s.url("session")
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{"tools/list", nil},
		{"resources/list", nil},
		{"resources/templates/list", nil},
		{"prompts/list", nil},
		{"resources/read", map[string]any{"uri": "mem://greeting"}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			var res struct {
				ResultType string `json:"resultType"`
				TTLMs      *int64 `json:"ttlMs"`
				CacheScope string `json:"cacheScope"`
			}
			eraResult(t, s.do(t, url, eraCall(7, tc.method, tc.params, nil)), &res)
			if res.ResultType != "complete" || res.TTLMs == nil || *res.TTLMs != 0 || res.CacheScope != "private" {
				t.Errorf("%s: resultType %q ttlMs %v cacheScope %q, want complete, 0, private", tc.method, res.ResultType, res.TTLMs, res.CacheScope)
			}
		})
	}
	var res struct {
		ResultType string `json:"resultType"`
	}
	eraResult(t, s.do(t, url, eraCall(8, "tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 1}}, nil)), &res)
	if res.ResultType != "complete" {
		t.Errorf("tools/call resultType %q, want complete", res.ResultType)
	}
}

// eraReject is a malformed (or refused) new-era request and the refusal it
// must get.
type eraReject struct {
	name         string
	call         func() call
	status, code int // status 0: any
	check        func(t *testing.T, data json.RawMessage)
}

// eraRejects lists the refusals, on the fixture's add and elicit tools and
// mem:// resources.
func eraRejects() []eraReject {
	add := func() map[string]any {
		return map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}
	}
	return []eraReject{
		{"removed ping", func() call { return eraCall(3, "ping", nil, nil) }, 404, -32601, nil},
		{"removed initialize", func() call {
			return eraCall(3, "initialize", map[string]any{"protocolVersion": eraVersion, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "x", "version": "1"}}, nil)
		}, 404, -32601, nil},
		{"removed logging/setLevel", func() call { return eraCall(3, "logging/setLevel", map[string]any{"level": "info"}, nil) }, 404, -32601, nil},
		{"removed resources/subscribe", func() call { return eraCall(3, "resources/subscribe", map[string]any{"uri": "mem://greeting"}, nil) }, 404, -32601, nil},
		{"removed resources/unsubscribe", func() call { return eraCall(3, "resources/unsubscribe", map[string]any{"uri": "mem://greeting"}, nil) }, 404, -32601, nil},
		{"Mcp-Method mismatch", func() call {
			c := eraCall(3, "tools/call", add(), nil)
			c.Header["Mcp-Method"] = "tools/list"
			return c
		}, 400, -32020, nil},
		{"Mcp-Method missing", func() call {
			c := eraCall(3, "tools/call", add(), nil)
			c.Header["Mcp-Method"] = ""
			return c
		}, 400, -32020, nil},
		{"Mcp-Name mismatch", func() call {
			c := eraCall(3, "tools/call", add(), nil)
			c.Header["Mcp-Name"] = "echo"
			return c
		}, 400, -32020, nil},
		{"Mcp-Name missing", func() call {
			c := eraCall(3, "tools/call", add(), nil)
			c.Header["Mcp-Name"] = ""
			return c
		}, 400, -32020, nil},
		{"Mcp-Name bad Base64", func() call {
			c := eraCall(3, "tools/call", add(), nil)
			c.Header["Mcp-Name"] = "=?base64?!!!?="
			return c
		}, 400, -32020, nil},
		{"header and _meta versions differ", func() call {
			p := add()
			p["_meta"] = map[string]any{metaProtocolVersion: latestVersion, metaClientCapabilities: map[string]any{}}
			return eraCall(3, "tools/call", p, nil)
		}, 400, -32020, nil},
		{"_meta missing", func() call {
			p := add()
			p["_meta"] = nil
			return eraCall(3, "tools/call", p, nil)
		}, 400, -32602, nil},
		{"_meta without clientCapabilities", func() call {
			p := add()
			p["_meta"] = map[string]any{metaProtocolVersion: eraVersion}
			return eraCall(3, "tools/call", p, nil)
		}, 400, -32602, nil},
		{"unsupported version", func() call {
			p := add()
			p["_meta"] = map[string]any{metaProtocolVersion: "2099-01-01", metaClientCapabilities: map[string]any{}}
			c := eraCall(3, "tools/call", p, nil)
			c.Header["MCP-Protocol-Version"] = "2099-01-01"
			return c
		}, 400, -32022, func(t *testing.T, data json.RawMessage) {
			var d struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			}
			if json.Unmarshal(data, &d) != nil || !slices.Contains(d.Supported, eraVersion) || !slices.Contains(d.Supported, latestVersion) || d.Requested != "2099-01-01" {
				t.Errorf("-32022 data = %s, want supported with both eras and requested 2099-01-01", data)
			}
		}},
		{"missing client capability", func() call {
			return eraCall(3, "tools/call", map[string]any{"name": "elicit", "arguments": map[string]any{"message": "accept"}}, nil)
		}, 400, -32021, func(t *testing.T, data json.RawMessage) {
			if !strings.Contains(string(data), "requiredCapabilities") || !strings.Contains(string(data), "elicitation") {
				t.Errorf("-32021 data = %s, want requiredCapabilities naming elicitation", data)
			}
		}},
		{"resource not found", func() call { return eraCall(3, "resources/read", map[string]any{"uri": "mem://nope"}, nil) }, 0, -32602,
			func(t *testing.T, data json.RawMessage) {
				var d struct{ URI string }
				if json.Unmarshal(data, &d) != nil || d.URI != "mem://nope" {
					t.Errorf("not found data = %s, want uri mem://nope", data)
				}
			}},
	}
}

// TestEraRawRejects: every refusal of a malformed new-era request, with its
// HTTP status, its code and the request's id.
func TestEraRawRejects(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		for _, tt := range eraRejects() {
			t.Run(variant+"/"+tt.name, func(t *testing.T) { tt.run(t, s, s.url(variant)) })
		}
	}

	// The Base64 form of Mcp-Name is decoded before the comparison.
	c := eraCall(4, "tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}, nil)
	c.Header["Mcp-Name"] = "=?base64?" + base64.StdEncoding.EncodeToString([]byte("add")) + "?="
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	eraResult(t, s.do(t, s.url("stateless"), c), &res)
	if len(res.Content) != 1 || res.Content[0].Text != "3" {
		t.Errorf("add with a Base64 Mcp-Name = %+v, want 3", res)
	}
}

func (tt eraReject) run(t *testing.T, s *testServer, url string) {
	t.Helper()
	r := s.do(t, url, tt.call())
	data := wantEraError(t, r, tt.status, tt.code, "3")
	if tt.check != nil {
		tt.check(t, data)
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("the refusal minted session %q", sid)
	}
}

// inputRequired is an input_required result.
type inputRequired struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
	Content      []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// TestEraRawInputRequired: mcp.elicit in the new era, on the wire. The first
// run stops at the question: input_required with one elicitation/create and
// an authenticated requestState; the retry with the answer completes. A
// tampered state, a state replayed for other arguments or another tool, and a
// malformed answer are refused; a retry without the state is a fresh call,
// whose first round the retry's answers may answer.
func TestEraRawInputRequired(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) { checkInputRequiredWire(t, s, s.url(variant), true) })
	}
}

// checkInputRequiredWire runs the checks of TestEraRawInputRequired on the
// elicit tool at url; the refusals of forged, replayed and malformed retries
// only when integrity is set.
func checkInputRequiredWire(t *testing.T, s *testServer, url string, integrity bool) {
	t.Helper()
	caps := map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}}
	elicit := func(id int, message string, extra map[string]any) *reply {
		p := map[string]any{"name": "elicit", "arguments": map[string]any{"message": message}}
		for k, v := range extra {
			p[k] = v
		}
		return s.do(t, url, eraCall(id, "tools/call", p, caps))
	}
	var first inputRequired
	eraResult(t, elicit(1, "accept", nil), &first)
	if first.ResultType != "input_required" || len(first.InputRequests) != 1 || first.RequestState == "" || len(first.Content) != 0 {
		t.Fatalf("the first run = %+v, want input_required with one input request and a requestState", first)
	}
	var key string
	for k, req := range first.InputRequests {
		key = k
		if req.Method != "elicitation/create" || !strings.Contains(string(req.Params), `"accept"`) {
			t.Errorf("input request %q = %s %s, want elicitation/create with the message", k, req.Method, req.Params)
		}
	}
	answer := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}

	var done inputRequired
	eraResult(t, elicit(2, "accept", map[string]any{"inputResponses": answer, "requestState": first.RequestState}), &done)
	if done.ResultType != "complete" || len(done.Content) != 1 || done.Content[0].Text != "action=accept name=Ada" {
		t.Errorf("the retry = %+v, want complete \"action=accept name=Ada\"", done)
	}

	if !integrity {
		return
	}
	// Without the state the call starts afresh, and the answers given
	// answer its first round (the conformance suite's ignore-extra-params
	// scenario); answers under keys it did not ask answer nothing.
	var fresh inputRequired
	eraResult(t, elicit(3, "accept", map[string]any{"inputResponses": answer}), &fresh)
	if fresh.ResultType != "complete" || len(fresh.Content) != 1 || fresh.Content[0].Text != "action=accept name=Ada" {
		t.Errorf("a retry without requestState = %+v, want the first round answered: complete", fresh)
	}
	var again inputRequired
	eraResult(t, elicit(4, "accept", map[string]any{"inputResponses": map[string]any{"not-asked": answer[key]}}), &again)
	if again.ResultType != "input_required" {
		t.Errorf("a retry answering another key = %+v, want input_required again", again)
	}

	// Refused: whatever else comes back, never the completed call.
	refused := func(what string, r *reply) {
		t.Helper()
		m := r.response(t)
		if m.Error == nil {
			var got inputRequired
			_ = json.Unmarshal(m.Result, &got)
			if got.ResultType == "complete" {
				t.Errorf("%s completed the call: %s", what, m.Result)
			}
		}
		wantID(t, m, "9")
	}
	tampered := []byte(first.RequestState)
	tampered[len(tampered)/2] ^= 1
	refused("a tampered requestState", s.do(t, url, eraCall(9, "tools/call", map[string]any{"name": "elicit",
		"arguments": map[string]any{"message": "accept"}, "inputResponses": answer, "requestState": string(tampered)}, caps)))
	refused("the state replayed for other arguments", elicit(9, "decline", map[string]any{"inputResponses": answer, "requestState": first.RequestState}))
	refused("the state replayed for another tool", s.do(t, url, eraCall(9, "tools/call", map[string]any{"name": "sample",
		"arguments": map[string]any{"prompt": "hi"}, "inputResponses": answer, "requestState": first.RequestState}, caps)))
	refused("a malformed answer", elicit(9, "accept", map[string]any{"inputResponses": map[string]any{key: map[string]any{"action": 12}},
		"requestState": first.RequestState}))
	// A tampered state must be an error, not a new question.
	r := s.do(t, url, eraCall(9, "tools/call", map[string]any{"name": "elicit",
		"arguments": map[string]any{"message": "accept"}, "inputResponses": answer, "requestState": string(tampered)}, caps))
	if m := r.response(t); m.Error == nil {
		t.Errorf("a tampered requestState answered %s, want a JSON-RPC error", m.Result)
	}
}

// TestEraRawParamHeaders: Mcp-Param-* headers of x-mcp-header properties
// must agree with the body (Base64 forms decoded, integers compared as
// numbers); a mismatch, or a header missing while the body has the value,
// is 400 + -32020.
func TestEraRawParamHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t, "params")
	checkParamHeaders(t, s, s.url("params"))
}

// checkParamHeaders runs the checks of TestEraRawParamHeaders on the where
// tool at url.
func checkParamHeaders(t *testing.T, s *testServer, url string) {
	where := func(args map[string]any, headers map[string]string) call {
		c := eraCall(5, "tools/call", map[string]any{"name": "where", "arguments": args}, nil)
		for k, v := range headers {
			c.Header[k] = v
		}
		return c
	}
	type listedTool struct {
		Name        string `json:"name"`
		InputSchema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"inputSchema"`
	}
	var listed struct {
		Tools []listedTool `json:"tools"`
	}
	eraResult(t, s.do(t, url, eraCall(4, "tools/list", nil, nil)), &listed)
	i := slices.IndexFunc(listed.Tools, func(tool listedTool) bool { return tool.Name == "where" })
	if i < 0 || listed.Tools[i].InputSchema.Properties["region"]["x-mcp-header"] != "Region" {
		t.Fatalf("tools/list = %+v, want where with region's x-mcp-header", listed)
	}
	ok := []struct {
		name    string
		args    map[string]any
		headers map[string]string
		want    string
	}{
		{"both headers", map[string]any{"region": "eu", "count": 3}, map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-Count": "3"}, "eu 3"},
		{"Base64 value", map[string]any{"region": "eu"}, map[string]string{"Mcp-Param-Region": "=?base64?" + base64.StdEncoding.EncodeToString([]byte("eu")) + "?="}, "eu nil"},
		{"no value, no header", map[string]any{}, nil, "nil nil"},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			var res struct {
				Content []struct{ Text string } `json:"content"`
			}
			eraResult(t, s.do(t, url, where(tt.args, tt.headers)), &res)
			if len(res.Content) != 1 || res.Content[0].Text != tt.want {
				t.Errorf("where = %+v, want %q", res, tt.want)
			}
		})
	}
	bad := []struct {
		name    string
		args    map[string]any
		headers map[string]string
	}{
		{"region differs", map[string]any{"region": "eu"}, map[string]string{"Mcp-Param-Region": "us"}},
		{"count differs", map[string]any{"count": 3}, map[string]string{"Mcp-Param-Count": "4"}},
		{"header missing", map[string]any{"region": "eu"}, nil},
		{"bad Base64", map[string]any{"region": "eu"}, map[string]string{"Mcp-Param-Region": "=?base64?!!?="}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			wantEraError(t, s.do(t, url, where(tt.args, tt.headers)), 400, -32020, "5")
		})
	}
}

// TestEraRawListen: subscriptions/listen on the wire. The stream opens with
// the acknowledgement of the honoured filter; every message carries the
// listen's id as _meta subscriptionId; a resource not subscribed sends
// nothing; a 2025 session's broadcast and touch reach it; at shutdown the
// server ends it with notifications/cancelled for the listen, then its
// result.
func TestEraRawListen(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	url := s.url("session")
	st := s.open(t, url, eraCall("listen-1", "subscriptions/listen", map[string]any{"notifications": map[string]any{
		"toolsListChanged": true, "resourceSubscriptions": []string{"mem://greeting"},
	}}, nil))
	if st.Status != http.StatusOK || !strings.HasPrefix(st.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("subscriptions/listen: HTTP %d %q, want 200 text/event-stream; body:\n%s", st.Status, st.Header.Get("Content-Type"), st.Body)
	}
	if sid := st.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("the listen stream minted session %q", sid)
	}
	type tagged struct {
		Meta struct {
			SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
		Notifications struct {
			ToolsListChanged      bool     `json:"toolsListChanged"`
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
		URI       string          `json:"uri"`
		RequestID json.RawMessage `json:"requestId"`
	}
	next := func(method string) tagged {
		t.Helper()
		m := st.nextMessage()
		var p tagged
		if m.Method != method || json.Unmarshal(m.Params, &p) != nil {
			t.Fatalf("listen stream: %s %s, want %s", m.Method, m.Params, method)
		}
		if string(p.Meta.SubscriptionID) != `"listen-1"` {
			t.Errorf("%s: _meta subscriptionId %s, want \"listen-1\"", method, p.Meta.SubscriptionID)
		}
		return p
	}
	ack := next("notifications/subscriptions/acknowledged")
	if !ack.Notifications.ToolsListChanged || !slices.Equal(ack.Notifications.ResourceSubscriptions, []string{"mem://greeting"}) {
		t.Errorf("acknowledged filter %+v, want toolsListChanged and mem://greeting", ack.Notifications)
	}

	sid := s.initialize(t, url)                                                                     // a 2025 session on the same URL
	s.callTool(t, url, sid, "touch", map[string]any{"uri": "mem://counter"}).wantText(t, "touched") // not subscribed
	s.callTool(t, url, sid, "touch", map[string]any{"uri": "mem://greeting"}).wantText(t, "touched")
	if p := next("notifications/resources/updated"); p.URI != "mem://greeting" {
		t.Errorf("resources/updated for %q, want mem://greeting only", p.URI)
	}
	s.callTool(t, url, sid, "broadcast", nil).wantText(t, "broadcast")
	next("notifications/tools/list_changed")

	if err := s.shutdown(); err != nil {
		t.Fatalf("host.Shutdown: %v", err)
	}
	var cancelled, result bool
	for _, e := range st.ended() {
		if e.Data == "" {
			continue
		}
		m := e.message(t)
		switch {
		case m.Method == "notifications/cancelled":
			var p tagged
			_ = json.Unmarshal(m.Params, &p)
			cancelled = string(p.RequestID) == `"listen-1"`
		case m.Method == "" && string(m.ID) == `"listen-1"` && m.Error == nil:
			result = cancelled // the notification first, then the result
		default:
			t.Errorf("after shutdown the listen stream sent %s", e.Data)
		}
	}
	if !cancelled || !result {
		t.Errorf("the listen stream ended without notifications/cancelled for it (%v) followed by its result (%v)", cancelled, result)
	}
}

// TestEraDisconnectStopsCall: in the new era the client closing a call's
// stream is the call's cancellation; the server holds nothing for it and
// serves on. Not parallel: it counts goroutines.
func TestEraDisconnectStopsCall(t *testing.T) {
	warmUp(t)
	s := startServer(t, "stateless", "session")
	add := func(id int) call {
		return eraCall(id, "tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 1}}, nil)
	}
	for _, variant := range []string{"stateless", "session"} {
		u := s.url(variant)
		var res struct{ ResultType string }
		eraResult(t, s.do(t, u, add(1)), &res)
		s.client.CloseIdleConnections()
		base := runtime.NumGoroutine()
		for i := range 3 {
			st := s.open(t, u, eraCall(10+i, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{},
				"_meta": map[string]any{metaProtocolVersion: eraVersion, metaClientCapabilities: map[string]any{}, "progressToken": fmt.Sprint("blk-", i)}}, nil))
			if st.Status != http.StatusOK {
				t.Fatalf("%s: streaming block: HTTP %d; body:\n%s", variant, st.Status, st.Body)
			}
			if m := st.nextMessage(); m.Method != "notifications/progress" {
				t.Fatalf("%s: first message %+v, want the block's progress", variant, m)
			}
			st.close()
			<-st.done
		}
		eraResult(t, s.do(t, u, add(2)), &res)
		s.client.CloseIdleConnections()
		settle(t, base, variant+": after the new-era streams were dropped")
	}
}

// eraTask is a CreateTaskResult, or a tasks/get answer.
type eraTask struct {
	ResultType string `json:"resultType"`
	TaskID     string `json:"taskId"`
	Status     string `json:"status"`
	TTLMs      int64  `json:"ttlMs"`
	Result     *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// TestEraRawTasks: live.lua's report, a tool that declares
// execution.taskSupport and calls mcp.task, on the real server: a client
// with the tasks extension gets a task at once and polls it to its result,
// or cancels it; a client without gets the result in the call's answer.
func TestEraRawTasks(t *testing.T) {
	t.Parallel()
	s := startScripts(t, "live")
	url := s.url("live")
	tasks := map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	report := func(id int, seconds int, caps map[string]any) *reply {
		return s.do(t, url, eraCall(id, "tools/call", map[string]any{"name": "report", "arguments": map[string]any{"seconds": seconds}}, caps))
	}
	get := func(id int, task string) eraTask {
		var got eraTask
		eraResult(t, s.do(t, url, eraCall(id, "tasks/get", map[string]any{"taskId": task}, tasks)), &got)
		return got
	}
	poll := func(task string) eraTask {
		deadline := time.Now().Add(waitShort)
		for i := 100; ; i++ {
			got := get(i, task)
			if got.Status != "working" || time.Now().After(deadline) {
				return got
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	var created eraTask
	eraResult(t, report(1, 1, tasks), &created)
	if created.ResultType != "task" || created.TaskID == "" || created.Status != "working" || created.TTLMs != 3600000 {
		t.Fatalf("report with the extension = %+v, want a working task", created)
	}
	done := poll(created.TaskID)
	if done.Status != "completed" || done.Result == nil || len(done.Result.Content) != 1 ||
		done.Result.Content[0].Text != "Report ready after 1 seconds" || done.Error != nil {
		t.Errorf("the task at its end = %+v", done)
	}

	var sync inputRequired
	eraResult(t, report(2, 0, map[string]any{}), &sync)
	if sync.ResultType != "complete" || len(sync.Content) != 1 || sync.Content[0].Text != "Report ready after 0 seconds" {
		t.Errorf("report without the extension = %+v, want its result", sync)
	}

	var long eraTask
	eraResult(t, report(3, 60, tasks), &long)
	var ack map[string]any
	eraResult(t, s.do(t, url, eraCall(4, "tasks/cancel", map[string]any{"taskId": long.TaskID}, tasks)), &ack)
	if len(ack) != 1 || ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel = %v, want the empty ack", ack)
	}
	if got := get(5, long.TaskID); got.Status != "cancelled" || got.Result != nil {
		t.Errorf("the cancelled task = %+v", got)
	}
	// Without the extension the task methods are refused.
	r := s.do(t, url, eraCall(6, "tasks/get", map[string]any{"taskId": created.TaskID}, map[string]any{}))
	wantEraError(t, r, http.StatusBadRequest, -32021, "6")
}
