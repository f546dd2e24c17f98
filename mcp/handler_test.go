package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// serveDirect runs one request through the handler with a chosen peer
// address and Host, bypassing the network.
func serveDirect(h http.Handler, method, remote, host, body string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://"+host+"/mcp", strings.NewReader(body))
	r.RemoteAddr = remote
	r.Host = host
	if method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
	}
	for _, hd := range headers {
		k, v, _ := strings.Cut(hd, ":")
		r.Header.Set(k, strings.TrimSpace(v))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMethodNotAllowed(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		f := newFakeServer()
		h := mcp.NewHandler(f, mcp.Options{Sessions: sessions}, nil, quietLogger())
		allow := "POST"
		verbs := []string{http.MethodPut, http.MethodPatch, http.MethodOptions, http.MethodHead, "BREW"}
		if sessions {
			allow = "POST, GET, DELETE"
		} else {
			verbs = append(verbs, http.MethodGet, http.MethodDelete)
		}
		for _, verb := range verbs {
			// A remote peer with a foreign Origin still gets 405: it comes
			// before the gates.
			w := serveDirect(h, verb, "203.0.113.7:5000", "evil.example.com", "", "Origin: http://evil.example.com")
			if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != allow || w.Body.Len() != 0 {
				t.Errorf("sessions=%v %s: %d Allow=%q body=%q", sessions, verb, w.Code, w.Header().Get("Allow"), w.Body)
			}
		}
	}
}

// authStatus is an auth hook that refuses every request with status.
func authStatus(status int) func(context.Context, *mcp.AuthRequest) int {
	return func(context.Context, *mcp.AuthRequest) int { return status }
}

func TestGates(t *testing.T) {
	authHook := func(ctx context.Context, r *mcp.AuthRequest) int {
		if r.Headers["authorization"] == "Bearer good" {
			return 0
		}
		return http.StatusUnauthorized
	}
	tests := []struct {
		name    string
		opts    mcp.Options
		method  string
		remote  string
		host    string
		headers []string
		want    int
	}{
		{name: "loopback v4", remote: "127.0.0.1:5000", want: 200},
		{name: "loopback v6", remote: "[::1]:5000", want: 200},
		{name: "mapped loopback", remote: "[::ffff:127.0.0.1]:5000", want: 200},
		{name: "mapped 127/8", remote: "[::ffff:127.1.2.3]:5000", want: 200},
		{name: "remote peer", remote: "203.0.113.7:5000", want: 403},
		{name: "no peer", remote: "", want: 403},
		{name: "remote opt-in", opts: mcp.Options{AllowRemoteAccess: true}, remote: "203.0.113.7:5000", want: 200},
		{name: "host localhost", host: "localhost:9999", want: 200},
		{name: "host v6", host: "[::1]:9999", want: 200},
		{name: "foreign host", host: "evil.example.com", want: 403},
		{name: "foreign host with port", host: "evil.example.com:8080", want: 403},
		{name: "foreign host opt-in", opts: mcp.Options{AllowRemoteAccess: true}, host: "evil.example.com", want: 200},
		{name: "session GET remote", opts: mcp.Options{Sessions: true}, method: http.MethodGet, remote: "203.0.113.7:1", want: 403},
		{name: "session DELETE remote", opts: mcp.Options{Sessions: true}, method: http.MethodDelete, remote: "203.0.113.7:1", want: 403},
		{name: "origin absent", want: 200},
		{name: "origin allowed", opts: mcp.Options{Origins: []string{"http://localhost:3000"}}, headers: []string{"Origin: http://localhost:3000"}, want: 200},
		{name: "origin disallowed", opts: mcp.Options{Origins: []string{"http://localhost:3000"}}, headers: []string{"Origin: http://evil.example.com"}, want: 403},
		{name: "origin empty allowlist", headers: []string{"Origin: http://localhost:3000"}, want: 403},
		{name: "own loopback origin", host: "127.0.0.1:8750", headers: []string{"Origin: http://127.0.0.1:8750"}, want: 200},
		{name: "own localhost origin", host: "localhost:8750", headers: []string{"Origin: http://localhost:8750"}, want: 200},
		{name: "own origin other port", host: "127.0.0.1:8750", headers: []string{"Origin: http://127.0.0.1:8751"}, want: 403},
		{name: "rebound same origin", opts: mcp.Options{AllowRemoteAccess: true}, host: "evil.example.com:8750",
			headers: []string{"Origin: http://evil.example.com:8750"}, want: 403},
		{name: "auth rejects", opts: mcp.Options{Auth: authHook}, want: 401},
		{name: "auth reads header", opts: mcp.Options{Auth: authHook}, headers: []string{"Authorization: Bearer good"}, want: 200},
		{name: "auth wrong token", opts: mcp.Options{Auth: authHook}, headers: []string{"Authorization: Bearer bad"}, want: 401},
		{name: "auth custom status", opts: mcp.Options{Auth: func(context.Context, *mcp.AuthRequest) int { return 403 }}, want: 403},
		{name: "auth after origin", opts: mcp.Options{Auth: authHook}, headers: []string{"Origin: http://x", "Authorization: Bearer good"}, want: 403},
		// A hook's status outside 400..599 is not an HTTP error: it is
		// mapped to 403 rather than written (a 302 or 200 would let the
		// request look served); the bounds themselves pass through.
		{name: "auth status 400", opts: mcp.Options{Auth: authStatus(400)}, want: 400},
		{name: "auth status 599", opts: mcp.Options{Auth: authStatus(599)}, want: 599},
		{name: "auth status 399", opts: mcp.Options{Auth: authStatus(399)}, want: 403},
		{name: "auth status 200", opts: mcp.Options{Auth: authStatus(200)}, want: 403},
		{name: "auth status 600", opts: mcp.Options{Auth: authStatus(600)}, want: 403},
		{name: "auth status negative", opts: mcp.Options{Auth: authStatus(-1)}, want: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer()
			h := mcp.NewHandler(f, tt.opts, nil, quietLogger())
			method, remote, host := tt.method, tt.remote, tt.host
			if method == "" {
				method = http.MethodPost
			}
			if remote == "" && !strings.Contains(tt.name, "no peer") {
				remote = "127.0.0.1:4000"
			}
			if host == "" {
				host = "127.0.0.1:8750"
			}
			w := serveDirect(h, method, remote, host, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, tt.headers...)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d (%s)", w.Code, tt.want, w.Body)
			}
			if tt.want >= 400 {
				if w.Body.Len() != 0 {
					t.Errorf("gate failure has a body: %q", w.Body)
				}
				if len(f.inits) != 0 {
					t.Error("a gate failure reached the server")
				}
			}
		})
	}
}

func TestAuthRequestFields(t *testing.T) {
	var got *mcp.AuthRequest
	h := mcp.NewHandler(newFakeServer(), mcp.Options{Path: "/mcp", Auth: func(_ context.Context, r *mcp.AuthRequest) int {
		got = r
		return 0
	}}, nil, quietLogger())
	serveDirect(h, http.MethodPost, "127.0.0.1:4000", "localhost", pingBody, "X-Multi: a", "Authorization: Bearer t")
	if got == nil || got.Method != "POST" || got.Path != "/mcp" || got.RemoteAddr != "127.0.0.1:4000" ||
		got.Headers["authorization"] != "Bearer t" || got.Headers["content-type"] != "application/json" {
		t.Fatalf("auth request: %+v", got)
	}
}

func TestPostChecks(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{MaxBodyBytes: 1024})
	tests := []struct {
		name    string
		body    string
		headers []string
		status  int
		code    int
		id      any // the id an error echoes; nil: null
	}{
		{name: "ok", body: pingBody, status: 200},
		{name: "too large", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`, status: 413},
		{name: "text/plain", body: pingBody, headers: []string{"Content-Type: text/plain"}, status: 415, code: -32600, id: float64(1)},
		{name: "no content type", body: pingBody, headers: []string{"Content-Type:"}, status: 415, code: -32600, id: float64(1)},
		{name: "json with charset", body: pingBody, headers: []string{"Content-Type: application/json; charset=utf-8"}, status: 200},
		{name: "accept html", body: pingBody, headers: []string{"Accept: text/html"}, status: 406, code: -32600, id: float64(1)},
		{name: "accept json only", body: pingBody, headers: []string{"Accept: application/json"}, status: 200},
		{name: "accept sse only", body: pingBody, headers: []string{"Accept: text/event-stream"}, status: 200},
		{name: "accept any", body: pingBody, headers: []string{"Accept: */*"}, status: 200},
		{name: "no accept", body: pingBody, headers: []string{"Accept:"}, status: 200},
		{name: "version 2025-11-25", body: pingBody, headers: []string{"MCP-Protocol-Version: 2025-11-25"}, status: 200},
		{name: "version 2025-06-18", body: pingBody, headers: []string{"MCP-Protocol-Version: 2025-06-18"}, status: 200},
		{name: "version 2025-03-26", body: pingBody, headers: []string{"MCP-Protocol-Version: 2025-03-26"}, status: 200},
		{name: "version unsupported", body: pingBody, headers: []string{"MCP-Protocol-Version: 2024-11-05"}, status: 400, code: -32022, id: float64(1)},
		{name: "version garbage", body: pingBody, headers: []string{"MCP-Protocol-Version: banana"}, status: 400, code: -32022, id: float64(1)},
		{name: "parse error", body: `{"jsonrpc":`, status: 200, code: -32700},
		{name: "empty body", body: ``, status: 200, code: -32700},
		{name: "batch", body: `[` + pingBody + `]`, status: 200, code: -32600},
		{name: "fractional id", body: `{"jsonrpc":"2.0","id":2.5,"method":"ping"}`, status: 200, code: -32600},
		{name: "bool id", body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, status: 200, code: -32600},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, status: 200, code: -32600, id: float64(1)},
		{name: "params array", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}`, status: 200, code: -32600, id: float64(1)},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: 202},
		{name: "null id notification", body: `{"jsonrpc":"2.0","id":null,"method":"whatever"}`, status: 202},
		{name: "unmatched response", body: `{"jsonrpc":"2.0","id":"s-x-1","result":{}}`, status: 400, code: -32600},
		{name: "malformed response", body: `{"jsonrpc":"2.0","id":"s-x-1","result":{},"error":{"code":1,"message":"m"}}`, status: 400, code: -32600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rt.post(tt.body, tt.headers...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.status == 202 && r.body != "" {
				t.Errorf("202 with a body: %q", r.body)
			}
			if tt.code != 0 {
				if r.errorCode() != tt.code {
					t.Fatalf("code %d, want %d: %s", r.errorCode(), tt.code, r.body)
				}
				// A readable id is echoed; only ids that cannot be read are null.
				if id, ok := r.msg["id"]; !ok || id != tt.id {
					t.Errorf("id = %v, want %v", id, tt.id)
				}
			}
		})
	}
	r := rt.post(pingBody, "MCP-Protocol-Version: 2024-11-05")
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"} {
		if !strings.Contains(r.errorMessage(), v) {
			t.Errorf("version error %q does not name %s", r.errorMessage(), v)
		}
	}
	if m := rt.post(`{"jsonrpc":`).errorMessage(); m != "Parse error" {
		t.Errorf("parse error message %q", m)
	}
	if m := rt.post(`[1]`).errorMessage(); m != "Invalid Request" {
		t.Errorf("invalid request message %q", m)
	}
}

// TestChunkedBodyTooLarge covers a body without Content-Length.
// TestSSEOnlyClient: a client that accepts only text/event-stream gets every
// 200 answer as SSE; one that refuses SSE (q=0) never streams.
func TestSSEOnlyClient(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: sessions})
		sid := ""
		if sessions {
			init := rt.stream(context.Background(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "Accept: text/event-stream")
			sid = init.resp.Header.Get("Mcp-Session-Id")
			if evs := readStream(init); len(evs) != 1 || !strings.Contains(evs[0].data, `"protocolVersion"`) {
				t.Fatalf("initialize as SSE: %+v", evs)
			}
		}
		for _, body := range []string{pingBody, `{"jsonrpc":`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"mem://x"}}`} {
			evs := readStream(rt.stream(context.Background(), sid, body, "Accept: text/event-stream"))
			if len(evs) == 0 || evs[len(evs)-1].msg()["jsonrpc"] != "2.0" {
				t.Fatalf("sessions=%v %s: %+v", sessions, body, evs)
			}
		}
		r := rt.post(progressCall("4", `"t"`, `{}`), "Accept: application/json;q=1, text/event-stream;q=0", "Mcp-Session-Id: "+sid)
		if r.header.Get("Content-Type") != "application/json" || r.text() != "done" {
			t.Fatalf("sessions=%v q=0 SSE: %s %s", sessions, r.header.Get("Content-Type"), r.body)
		}
	}
}

func TestChunkedBodyTooLarge(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{MaxBodyBytes: 100})
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"` + strings.Repeat("y", 500) + `"}}`
	for _, tc := range []struct {
		body string
		want int
	}{{big, 413}, {pingBody, 200}} {
		req, _ := http.NewRequest(http.MethodPost, rt.url, struct{ *strings.Reader }{strings.NewReader(tc.body)})
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("chunked body of %d bytes: %d, want %d", len(tc.body), resp.StatusCode, tc.want)
		}
	}
}

func TestInitialize(t *testing.T) {
	versions := []struct{ asked, got string }{
		{`"2025-11-25"`, "2025-11-25"},
		{`"2025-06-18"`, "2025-06-18"},
		{`"2025-03-26"`, "2025-03-26"},
		{`"2024-11-05"`, "2025-11-25"},
		{`"1999-01-01"`, "2025-11-25"},
		{`7`, "2025-11-25"},
		{``, "2025-11-25"},
	}
	for _, sessions := range []bool{false, true} {
		f := newFakeServer()
		f.instructions = "Use add."
		rt := newRoute(t, f, mcp.Options{Sessions: sessions})
		for _, v := range versions {
			params := `{"capabilities":{}}`
			if v.asked != "" {
				params = `{"protocolVersion":` + v.asked + `,"capabilities":{}}`
			}
			r := rt.post(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":` + params + `}`)
			if r.status != 200 || r.msg["id"] != "init" {
				t.Fatalf("initialize: %d %s", r.status, r.body)
			}
			res := r.result()
			if res["protocolVersion"] != v.got {
				t.Errorf("asked %s, got %v, want %s", v.asked, res["protocolVersion"], v.got)
			}
			if len(res) != 4 || res["instructions"] != "Use add." {
				t.Errorf("result members: %v", res)
			}
			// Verbatim, but for the tasks a 2025-11-25 session serves.
			want := `{"completions":{},"logging":{},"prompts":{},"resources":{"subscribe":true},"tools":{}}`
			if sessions && v.got == "2025-11-25" {
				want = `{"completions":{},"logging":{},"prompts":{},"resources":{"subscribe":true},"tasks":{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}},"tools":{}}`
			}
			if caps, _ := json.Marshal(res["capabilities"]); string(caps) != want {
				t.Errorf("capabilities not verbatim: %s", caps)
			}
			info := res["serverInfo"].(map[string]any)
			if info["name"] != "fake" || info["version"] != "1.0.0" {
				t.Errorf("serverInfo %v", info)
			}
			sid := r.header.Get("Mcp-Session-Id")
			if sessions != (sid != "") {
				t.Errorf("sessions=%v, Mcp-Session-Id=%q", sessions, sid)
			}
			if sessions && !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(sid) {
				t.Errorf("session id %q is not 32 lowercase hex chars", sid)
			}
		}
		if sessions && rt.h.SessionCount() != len(versions) {
			t.Errorf("%d sessions, want %d", rt.h.SessionCount(), len(versions))
		}
	}
}

func TestInitializeWithoutInstructions(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	r := rt.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
	if _, ok := r.result()["instructions"]; ok || len(r.result()) != 3 {
		t.Fatalf("result: %s", r.body)
	}
}

func TestInitFailures(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		f := newFakeServer()
		f.initErr = context.DeadlineExceeded // not a *mcp.Error: a crash
		rt := newRoute(t, f, mcp.Options{Sessions: sessions})
		r := rt.post(`{"jsonrpc":"2.0","id":50,"method":"initialize","params":{}}`)
		if r.status != 200 || r.errorCode() != -32603 || r.errorMessage() != "Internal error" || r.msg["id"] != float64(50) {
			t.Errorf("sessions=%v init crash: %d %s", sessions, r.status, r.body)
		}
		if r.header.Get("Mcp-Session-Id") != "" || rt.h.SessionCount() != 0 {
			t.Error("a failed init left a session")
		}
		if !sessions {
			// Every stateless request runs init, so its crash answers them all,
			// the streaming leg included (as JSON, before any stream starts).
			r = rt.post(`{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"t"}}}`)
			if r.status != 200 || r.errorCode() != -32603 || r.msg["id"] != float64(51) {
				t.Errorf("stateless streaming init crash: %d %s", r.status, r.body)
			}
		}
	}
	f := newFakeServer()
	f.channelsErr = context.Canceled
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	r := rt.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if r.errorCode() != -32603 || rt.h.SessionCount() != 0 {
		t.Errorf("channels failure: %s, %d sessions", r.body, rt.h.SessionCount())
	}
}

func TestMaxSessions(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, MaxSessions: 1})
	rt.initialize()
	r := rt.post(`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}`)
	if r.status != 503 || r.errorCode() != -32603 || r.errorMessage() != "Server at capacity" || r.msg["id"] != float64(9) {
		t.Fatalf("second initialize: %d %s", r.status, r.body)
	}
}

func TestSessionHeaderErrors(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()

	r := rt.call("", 5, "tools/list", "")
	if r.status != 400 || r.errorCode() != -32600 || r.errorMessage() != "Missing Mcp-Session-Id" || r.msg["id"] != float64(5) {
		t.Errorf("missing id: %d %s", r.status, r.body)
	}
	r = rt.call("bogus", "x", "tools/list", "")
	if r.status != 404 || r.errorCode() != -32600 || r.errorMessage() != "Unknown or expired session" || r.msg["id"] != "x" {
		t.Errorf("unknown id: %d %s", r.status, r.body)
	}
	if r := rt.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != 400 {
		t.Errorf("notification without session: %d", r.status)
	}
	if r := rt.notify("bogus", "notifications/initialized", ""); r.status != 404 {
		t.Errorf("notification with unknown session: %d", r.status)
	}
	if r := rt.notify(sid, "notifications/initialized", ""); r.status != 202 {
		t.Errorf("notification: %d", r.status)
	}
	if r := rt.call(sid, 1, "tools/list", ""); r.status != 200 {
		t.Errorf("request with session: %d", r.status)
	}
	for _, verb := range []string{http.MethodGet, http.MethodDelete} {
		if r := rt.do(verb, ""); r.status != 400 || r.body != "" {
			t.Errorf("%s without id: %d %q", verb, r.status, r.body)
		}
		if r := rt.do(verb, "", "Mcp-Session-Id: bogus"); r.status != 404 || r.body != "" {
			t.Errorf("%s unknown id: %d %q", verb, r.status, r.body)
		}
		if r := rt.do(verb, "", "Mcp-Session-Id: "+sid, "MCP-Protocol-Version: 1.0"); r.status != 400 {
			t.Errorf("%s bad version header: %d", verb, r.status)
		}
	}
}

func TestMethods(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		f := newFakeServer()
		rt := newRoute(t, f, mcp.Options{Sessions: sessions})
		sid := ""
		if sessions {
			sid = rt.initialize()
		}
		tests := []struct {
			method, params string
			check          func(r reply) bool
		}{
			{"ping", ``, func(r reply) bool { return r.body == `{"jsonrpc":"2.0","id":1,"result":{}}` }},
			{"tools/call", `{"name":"add","arguments":{"a":2,"b":3}}`, func(r reply) bool { return r.text() == "5" && r.result()["isError"] == false }},
			{"tools/call", `{"name":"echo","arguments":{"x":1}}`, func(r reply) bool {
				sc, _ := json.Marshal(r.result()["structuredContent"])
				return string(sc) == `{"x":1}`
			}},
			{"tools/call", `{"name":"echo"}`, func(r reply) bool {
				sc, _ := json.Marshal(r.result()["structuredContent"])
				return string(sc) == `{}`
			}},
			{"tools/call", `{"name":"boom"}`, func(r reply) bool { return r.text() == "kaboom" && r.result()["isError"] == true }},
			{"tools/call", `{"name":"nope"}`, func(r reply) bool { return r.errorCode() == -32602 && r.errorMessage() == "Unknown tool: nope" }},
			{"tools/call", `{}`, func(r reply) bool {
				return r.errorCode() == -32602 && r.errorMessage() == "Invalid params: missing tool name"
			}},
			{"tools/call", `{"name":7}`, func(r reply) bool { return r.errorMessage() == "Invalid params: missing tool name" }},
			{"tools/call", `{"name":"crash"}`, func(r reply) bool {
				return r.errorCode() == -32603 && r.errorMessage() == "Internal error" && !strings.Contains(r.body, "fake.lua")
			}},
			{"tools/call", `{"name":"badjson"}`, func(r reply) bool { return r.errorCode() == -32603 }},
			{"nope/nope", ``, func(r reply) bool { return r.errorCode() == -32601 && r.errorMessage() == "Method not found" }},
			{"resources/read", `{"uri":"mem://greeting"}`, func(r reply) bool { return strings.Contains(r.body, `"text":"hello"`) }},
			{"resources/read", `{"uri":"mem://user/ada"}`, func(r reply) bool { return strings.Contains(r.body, `"text":"user ada"`) }},
			{"resources/read", `{"uri":"mem://locked"}`, func(r reply) bool { return r.errorCode() == -32002 && r.errorMessage() == "locked" }},
			{"resources/read", `{"uri":"mem://nope"}`, func(r reply) bool {
				return r.errorCode() == -32002 && r.errorMessage() == "Resource not found: mem://nope"
			}},
			{"resources/read", `{}`, func(r reply) bool {
				return r.errorCode() == -32602 && r.errorMessage() == "Invalid params: missing resource uri"
			}},
			{"resources/subscribe", `{"uri":"mem://greeting"}`, func(r reply) bool { return r.body == `{"jsonrpc":"2.0","id":1,"result":{}}` }},
			{"resources/subscribe", `{}`, func(r reply) bool { return r.errorMessage() == "Invalid params: missing resource uri" }},
			{"resources/unsubscribe", `{"uri":"mem://never"}`, func(r reply) bool { return r.body == `{"jsonrpc":"2.0","id":1,"result":{}}` }},
			{"resources/templates/list", ``, func(r reply) bool {
				return strings.Contains(r.body, `"resourceTemplates":[{"uriTemplate":"mem://user/{id}"`)
			}},
			{"prompts/list", ``, func(r reply) bool {
				return strings.Contains(r.body, `"prompts":[{"name":"greet","arguments":[{"name":"who","required":true}]}`)
			}},
			{"prompts/get", `{"name":"greet","arguments":{"who":"Ada"}}`, func(r reply) bool { return strings.Contains(r.body, "Hello, Ada") }},
			{"prompts/get", `{"name":"deny"}`, func(r reply) bool { return r.errorCode() == -32602 && r.errorMessage() == "denied" }},
			{"prompts/get", `{"name":"nope"}`, func(r reply) bool { return r.errorCode() == -32602 && r.errorMessage() == "Unknown prompt: nope" }},
			{"prompts/get", `{}`, func(r reply) bool { return r.errorMessage() == "Invalid params: missing prompt name" }},
			{"logging/setLevel", `{"level":"warning"}`, func(r reply) bool { return r.body == `{"jsonrpc":"2.0","id":1,"result":{}}` }},
			{"logging/setLevel", `{"level":"loud"}`, func(r reply) bool { return r.errorCode() == -32602 && r.errorMessage() == "Invalid log level: loud" }},
			{"logging/setLevel", `{}`, func(r reply) bool { return r.errorMessage() == "Invalid params: missing level" }},
			{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"Ad"}}`, func(r reply) bool {
				return strings.Contains(r.body, `"completion":{"values":["Ada","Adam"],"total":2,"hasMore":false}`)
			}},
			{"completion/complete", `{"ref":{"type":"ref/resource","uri":"mem://user/{id}"},"argument":{"name":"many","value":""}}`, func(r reply) bool {
				c := r.result()["completion"].(map[string]any)
				return len(c["values"].([]any)) == 100 && c["total"] == float64(150) && c["hasMore"] == true
			}},
			{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"}}`, func(r reply) bool {
				return r.errorCode() == -32602 && r.errorMessage() == "Invalid params: missing ref or argument"
			}},
			{"completion/complete", `{"ref":{"type":"ref/other"},"argument":{"name":"who","value":"A"}}`, func(r reply) bool {
				return r.errorCode() == -32602 && r.errorMessage() == "Invalid completion ref or argument"
			}},
			{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who"}}`, func(r reply) bool {
				return r.errorMessage() == "Invalid completion ref or argument"
			}},
		}
		for _, tt := range tests {
			r := rt.call(sid, 1, tt.method, tt.params)
			if r.status != 200 || !tt.check(r) {
				t.Errorf("sessions=%v %s %s: %d %s", sessions, tt.method, tt.params, r.status, r.body)
			}
		}
		// A crash leaves the session serving.
		if r := rt.call(sid, 2, "ping", ""); r.status != 200 {
			t.Errorf("ping after crash: %d", r.status)
		}
	}
}

func TestCapabilityGate(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		f := newFakeServer()
		f.has = mcp.Capabilities{}
		f.capsJSON = `{}`
		rt := newRoute(t, f, mcp.Options{Sessions: sessions})
		sid := ""
		if sessions {
			sid = rt.initialize()
		}
		for _, method := range []string{"resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
			"resources/unsubscribe", "prompts/list", "prompts/get", "logging/setLevel", "completion/complete"} {
			r := rt.call(sid, 3, method, `{"uri":"mem://greeting","name":"greet","level":"info"}`)
			if r.errorCode() != -32601 || r.errorMessage() != "Method not found" {
				t.Errorf("sessions=%v %s without capability: %s", sessions, method, r.body)
			}
		}
		// Tools are served whatever the capabilities say.
		if r := rt.call(sid, 4, "tools/call", `{"name":"add","arguments":{"a":1,"b":1}}`); r.text() != "2" {
			t.Errorf("tools/call without tools capability: %s", r.body)
		}
		if r := rt.call(sid, 4, "tools/list", ``); r.status != 200 || r.errorCode() != 0 {
			t.Errorf("tools/list without tools capability: %s", r.body)
		}
	}
}

func TestCallFields(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	r := rt.call(sid, "r-1", "tools/call", `{"name":"session","_meta":{"progressToken":42}}`, "Accept: application/json")
	if r.text() != `sid=`+sid+` rid="r-1" tok=42` {
		t.Fatalf("call fields: %q", r.text())
	}
	stateless := newRoute(t, newFakeServer(), mcp.Options{})
	if r := stateless.call("", 7, "tools/call", `{"name":"session"}`); r.text() != `sid= rid=7 tok=` {
		t.Fatalf("stateless call fields: %q", r.text())
	}
}

func TestStateThreading(t *testing.T) {
	f := newFakeServer()
	stateless := newRoute(t, f, mcp.Options{})
	for i := 0; i < 2; i++ {
		if r := stateless.call("", 1, "tools/call", `{"name":"count"}`); r.text() != "1" {
			t.Fatalf("stateless count: %s", r.body)
		}
	}
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	for i, want := range []string{"1", "2"} {
		if r := rt.call(sid, i, "tools/call", `{"name":"count"}`); r.text() != want {
			t.Fatalf("session count: %s", r.body)
		}
	}
	rt.call(sid, 9, "tools/call", `{"name":"crash"}`)
	if r := rt.call(sid, 10, "tools/call", `{"name":"count"}`); r.text() != "3" {
		t.Fatalf("count after crash: %s", r.body)
	}
	if r := rt.call(sid, 11, "resources/read", `{"uri":"mem://counter"}`); !strings.Contains(r.body, `"text":"4"`) {
		t.Fatalf("resource threads state: %s", r.body)
	}
}

func TestPagination(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		key       string
		pageSize  int
		extra     int
		wantPages int
		wantItems int
	}{
		{"tools walk", "tools/list", "tools", 4, 5, 5, 20},
		{"tools exact pages", "tools/list", "tools", 5, 5, 4, 20},
		{"tools one page", "tools/list", "tools", 100, 5, 1, 20},
		{"tools fits exactly", "tools/list", "tools", 20, 5, 1, 20},
		{"resources walk", "resources/list", "resources", 2, 1, 2, 4},
		{"prompts one page", "prompts/list", "prompts", 2, 0, 1, 2},
		{"templates", "resources/templates/list", "resourceTemplates", 1, 0, 1, 1},
	}
	for _, paged := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			if paged {
				name += " (Pager)"
			}
			t.Run(name, func(t *testing.T) {
				testPages(t, tt.method, tt.key, tt.pageSize, tt.extra, tt.wantPages, tt.wantItems, paged)
			})
		}
	}
	rt := newRoute(t, newFakeServer(), mcp.Options{PageSize: 2})
	for _, c := range []struct{ cursor, want string }{
		{`"MTAwMA=="`, `{"tools":[]}`},    // base64("1000"): past the end, empty, no cursor
		{`"Mg=="`, `"nextCursor":"NA=="`}, // base64("2") -> next is base64("4")
	} {
		if r := rt.call("", 1, "tools/list", `{"cursor":`+c.cursor+`}`); !strings.Contains(r.body, c.want) {
			t.Errorf("cursor %s: %s", c.cursor, r.body)
		}
	}
	for _, bad := range []string{`"YWJj"`, `5`, `"!!"`, `{}`} {
		if r := rt.call("", 1, "tools/list", `{"cursor":`+bad+`}`); r.errorCode() != -32602 || r.errorMessage() != "Invalid cursor" {
			t.Errorf("cursor %s: %s", bad, r.body)
		}
	}
}

// testPages walks every page of a list and checks what it saw. With paged,
// the sessions implement mcp.Pager: the transport must ask them for each
// page's window only.
func testPages(t *testing.T, method, key string, pageSize, extra, wantPages, wantItems int, paged bool) {
	f := newFakeServer()
	f.extraTools, f.resources, f.paged = extra, extra, paged
	rt := newRoute(t, f, mcp.Options{PageSize: pageSize})
	var names []string
	seen := map[string]bool{}
	params := `{}`
	pages := 0
	for {
		r := rt.call("", 1, method, params)
		items, ok := r.result()[key].([]any)
		if !ok {
			t.Fatalf("page %d: %s", pages, r.body)
		}
		pages++
		if len(items) > pageSize {
			t.Fatalf("page of %d items", len(items))
		}
		for _, it := range items {
			b, _ := json.Marshal(it)
			if seen[string(b)] {
				t.Fatalf("item repeated: %s", b)
			}
			seen[string(b)] = true
			names = append(names, string(b))
		}
		next, ok := r.result()["nextCursor"].(string)
		if !ok {
			break
		}
		params = `{"cursor":"` + next + `"}`
	}
	if pages != wantPages || len(names) != wantItems {
		t.Fatalf("%d pages, %d items; want %d, %d", pages, len(names), wantPages, wantItems)
	}
	if method == "tools/list" && !strings.Contains(names[0], `"add"`) {
		t.Fatalf("order lost: first item %s", names[0])
	}
	if paged {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.pages) != pages {
			t.Fatalf("%d Page calls for %d pages", len(f.pages), pages)
		}
		for i, w := range f.pages {
			if w != [2]int{i * pageSize, pageSize} {
				t.Fatalf("Page call %d asked for offset %d limit %d", i, w[0], w[1])
			}
		}
	}
}

// callIniter is a fakeServer that also implements mcp.CallIniter, counting
// its calls.
type callIniter struct {
	*fakeServer
	calls atomic.Int32
}

func (c *callIniter) InitCall(ctx context.Context) (mcp.Session, mcp.Capabilities, error) {
	c.calls.Add(1)
	sess, ir, err := c.Init(ctx, nil, "")
	if err != nil {
		return nil, mcp.Capabilities{}, err
	}
	return sess, ir.Has, nil
}

// TestCallIniter checks which stateless requests start through InitCall:
// every one but those that answer with the init result (initialize, and
// server/discover in 2026-07-28), and that its capabilities gate methods.
func TestCallIniter(t *testing.T) {
	f := newFakeServer()
	f.has = mcp.Capabilities{Tools: true}
	f.capsJSON = `{"tools":{}}`
	ci := &callIniter{fakeServer: f}
	rt := newRouteOver(t, ci, f, mcp.Options{})
	for _, tc := range []struct {
		name  string
		do    func() reply
		calls int32
		check func(reply) bool
	}{
		{"tools/call", func() reply { return rt.call("", 1, "tools/call", `{"name":"count"}`) }, 1,
			func(r reply) bool { return r.text() == "1" }},
		{"prompts/list gated", func() reply { return rt.call("", 2, "prompts/list", `{}`) }, 1,
			func(r reply) bool { return r.errorCode() == mcp.CodeMethodNotFound }},
		{"initialize", func() reply {
			return rt.post(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		}, 0, func(r reply) bool { return strings.Contains(r.body, `"serverInfo":{"name":"fake"`) }},
		{"2026 tools/call", func() reply { return rt.modern("tools/call", `{"name":"count"}`) }, 1,
			func(r reply) bool { return r.status == 200 && r.errorCode() == 0 }},
		{"2026 discover", func() reply { return rt.modern("server/discover", `{}`) }, 0,
			func(r reply) bool { return strings.Contains(r.body, `/serverInfo":{"name":"fake"`) }},
	} {
		before := ci.calls.Load()
		r := tc.do()
		if got := ci.calls.Load() - before; got != tc.calls {
			t.Errorf("%s: %d InitCall, want %d", tc.name, got, tc.calls)
		}
		if !tc.check(r) {
			t.Errorf("%s: unexpected answer %d %s", tc.name, r.status, r.body)
		}
	}
}

// TestHTTP2Answers checks the answers over HTTP/2 (TLS), where a JSON answer
// is not flushed before its handler returns: a plain answer arrives whole,
// with its Content-Length, on session and stateless routes, and a streamed
// one still streams.
func TestHTTP2Answers(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		f := newFakeServer()
		h := mcp.NewHandler(f, mcp.Options{Path: "/mcp", Sessions: sessions}, mcp.NewHub(quietLogger()), quietLogger())
		srv := httptest.NewUnstartedServer(h)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		client := srv.Client()
		post := func(sid, body string) (*http.Response, string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 {
				t.Fatalf("answered over HTTP/%d", resp.ProtoMajor)
			}
			return resp, string(b)
		}
		sid := ""
		if sessions {
			resp, _ := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			sid = resp.Header.Get("Mcp-Session-Id")
			post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		}
		resp, body := post(sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count"}}`)
		if resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength != int64(len(body)) ||
			!strings.Contains(body, `"text":"1"`) {
			t.Errorf("sessions=%v: JSON answer %q, length %d: %s", sessions, resp.Header.Get("Content-Type"), resp.ContentLength, body)
		}
		if sessions {
			// Only HTTP/1.1 calls run inline (a response cannot end
			// before its handler returns over HTTP/2).
			if _, body := post(sid, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"where"}}`); !strings.Contains(body, `"text":"queue"`) {
				t.Errorf("a session call over HTTP/2: %s", body)
			}
		}
		resp, body = post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"p"}}}`)
		if resp.Header.Get("Content-Type") != "text/event-stream" || strings.Count(body, "notifications/progress") == 0 ||
			!strings.Contains(body, `"id":2,"result"`) {
			t.Errorf("sessions=%v: streamed answer %q: %s", sessions, resp.Header.Get("Content-Type"), body)
		}
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), liveness)
		_ = h.Shutdown(ctx)
		cancel()
	}
}
