package tests

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// HTTP-level behaviour in front of JSON-RPC: verbs, content negotiation, body
// limits, the protocol-version header, the Host/Origin/auth gates and the
// session cap (behaviour.md §1, §3 and the deliberate differences at its top).

func TestHTTPMethodNotAllowed(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	tests := []struct {
		variant, method, allow string
	}{
		{"stateless", http.MethodGet, "POST"}, // handle_get_405, get_returns_405
		{"stateless", http.MethodDelete, "POST"},
		{"stateless", http.MethodPut, "POST"},
		{"stateless", http.MethodPatch, "POST"},
		{"stateless", http.MethodOptions, "POST"},
		{"stateless", http.MethodHead, "POST"},
		{"session", http.MethodPut, "POST, GET, DELETE"},
		{"session", http.MethodPatch, "POST, GET, DELETE"},
		{"session", http.MethodOptions, "POST, GET, DELETE"},
		{"session", http.MethodHead, "POST, GET, DELETE"},
	}
	for _, tt := range tests {
		t.Run(tt.variant+"_"+tt.method, func(t *testing.T) {
			r := s.do(t, s.url(tt.variant), call{Method: tt.method})
			if r.Status != http.StatusMethodNotAllowed {
				t.Fatalf("HTTP %d, want 405", r.Status)
			}
			if got := r.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			if len(r.Body) != 0 {
				t.Errorf("body = %q, want empty", r.Body)
			}
		})
	}
}

// Verbs are refused before the gates: a 405 even from a forbidden Origin.
func TestHTTPMethodNotAllowedBeforeGates(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	r := s.do(t, s.url("stateless"), call{Method: http.MethodGet, Header: map[string]string{"Origin": "http://evil.example"}})
	if r.Status != http.StatusMethodNotAllowed {
		t.Errorf("HTTP %d, want 405", r.Status)
	}
}

// A POST whose Accept allows neither JSON nor SSE is 406. Otherwise the answer
// comes in a type the client accepts: a client that accepts only JSON never
// gets a stream, one that accepts only SSE never gets JSON.
func TestHTTPNotAcceptable(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	sid := s.initialize(t, s.url("session"))
	tests := []struct {
		accept string
		want   string // "406", or the Content-Type of the answer ("" = either)
	}{
		{"text/html", "406"},
		{"image/png, text/plain", "406"},
		{"application/json", "application/json"},
		{"application/json;q=1, text/event-stream;q=0", "application/json"},
		{"text/event-stream", "text/event-stream"},
		{acceptBoth, ""},
		{"*/*", ""},
		{"", ""}, // no Accept: anything goes
	}
	for _, variant := range []string{"stateless", "session"} {
		for _, tt := range tests {
			for _, body := range []map[string]any{request(1, "ping", nil), toolCall(2, "progress", nil, "tok")} {
				c := call{Body: body, Header: map[string]string{"Accept": tt.accept}}
				if variant == "session" {
					c.Session = sid
				}
				r := s.do(t, s.url(variant), c)
				method := body["method"]
				switch {
				case tt.want == "406":
					if r.Status != http.StatusNotAcceptable {
						t.Errorf("%s %s, Accept %q: HTTP %d, want 406; body:\n%s", variant, method, tt.accept, r.Status, r.Body)
					}
				case r.Status != http.StatusOK:
					t.Errorf("%s %s, Accept %q: HTTP %d, want 200; body:\n%s", variant, method, tt.accept, r.Status, r.Body)
				case tt.want != "" && r.contentType() != tt.want:
					t.Errorf("%s %s, Accept %q: answered %q, which the client does not accept", variant, method, tt.accept, r.Header.Get("Content-Type"))
				}
			}
		}
	}
}

// post_progress_without_accept_buffered: a token-bearing call from a client
// that does not accept SSE runs buffered; its progress is dropped.
func TestPostProgressWithoutAcceptBuffered(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	r := s.do(t, s.url("stateless"), call{Body: toolCall(1, "progress", nil, "tok-1"), Header: map[string]string{"Accept": "application/json"}})
	if r.Status != http.StatusOK || r.contentType() != "application/json" {
		t.Fatalf("HTTP %d %q, want 200 application/json; body:\n%s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var res toolResult
	_ = json.Unmarshal(r.response(t).Result, &res)
	res.wantText(t, "done")
}

func TestHTTPUnsupportedMediaType(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		r := s.do(t, s.url("stateless"), call{Body: request(1, "ping", nil), Header: map[string]string{"Content-Type": ct}})
		if r.Status != http.StatusUnsupportedMediaType {
			t.Errorf("Content-Type %q: HTTP %d, want 415; body:\n%s", ct, r.Status, r.Body)
		}
	}
	// Media-type parameters are fine.
	r := s.do(t, s.url("stateless"), call{Body: request(1, "ping", nil),
		Header: map[string]string{"Content-Type": "application/json; charset=utf-8"}})
	if r.Status != http.StatusOK {
		t.Errorf("Content-Type with charset: HTTP %d, want 200; body:\n%s", r.Status, r.Body)
	}
}

func TestHTTPBodyTooLarge(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	const limit = 4 << 20
	build := func(size int) []byte {
		head := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`
		tail := `"}}`
		return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
	}
	if r := s.do(t, s.url("stateless"), call{Body: build(limit + 1)}); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of 4 MiB + 1: HTTP %d, want 413", r.Status)
	}
	m := s.rpc(t, s.url("stateless"), "", 1, "ping", map[string]any{"pad": strings.Repeat("x", 1<<20)})
	if m.Error != nil {
		t.Errorf("a 1 MiB ping: error %+v, want a result", m.Error)
	}
}

func TestHTTPProtocolVersionHeader(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	sid := s.initialize(t, s.url("session"))
	tests := []struct {
		version string
		status  int
	}{
		{"2025-11-25", http.StatusOK},
		{"2025-06-18", http.StatusOK}, // every supported version, not only the negotiated one
		{"2025-03-26", http.StatusOK},
		{"", http.StatusOK}, // absent means 2025-03-26
		{"1999-01-01", http.StatusBadRequest},
		{"garbage", http.StatusBadRequest},
	}
	for _, tt := range tests {
		for _, variant := range []string{"stateless", "session"} {
			c := call{Body: request(1, "ping", nil), Header: map[string]string{"MCP-Protocol-Version": tt.version}}
			if variant == "session" {
				c.Session = sid
			}
			r := s.do(t, s.url(variant), c)
			if r.Status != tt.status {
				t.Errorf("%s, MCP-Protocol-Version %q: HTTP %d, want %d; body:\n%s", variant, tt.version, r.Status, tt.status, r.Body)
			}
		}
	}
	// The GET channel and DELETE check it too.
	if r := s.do(t, s.url("session"), call{Method: http.MethodDelete, Session: sid,
		Header: map[string]string{"MCP-Protocol-Version": "1999-01-01"}}); r.Status != http.StatusBadRequest {
		t.Errorf("DELETE with a bad version: HTTP %d, want 400", r.Status)
	}
}

func TestHTTPNotificationsAccepted(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	sid := s.initialize(t, s.url("session"))
	bodies := map[string]any{
		"initialized": request(nil, "notifications/initialized", nil),
		"unknown":     request(nil, "notifications/whatever", map[string]any{"x": 1}), // dispatch_unknown_notification
		"null id":     map[string]any{"jsonrpc": "2.0", "id": nil, "method": "ping"},  // decode_null_id_is_notification
		"cancel":      request(nil, "notifications/cancelled", map[string]any{"requestId": 999}),
	}
	for name, body := range bodies {
		for _, variant := range []string{"stateless", "session"} {
			c := call{Body: body}
			if variant == "session" {
				c.Session = sid
			}
			r := s.do(t, s.url(variant), c)
			if r.Status != http.StatusAccepted || len(r.Body) != 0 {
				t.Errorf("%s, %s: HTTP %d body %q, want 202 with an empty body", variant, name, r.Status, r.Body)
			}
		}
	}
	// A POSTed response that answers no pending server request (a stray or a
	// very late answer) is either accepted (202) or refused with a 4xx; it
	// never reaches dispatch as a request. Answers to pending requests are 202:
	// see TestElicitationRawRoundTrip.
	for name, body := range map[string]any{
		"response":     map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]any{}},
		"error answer": map[string]any{"jsonrpc": "2.0", "id": 8, "error": map[string]any{"code": -1, "message": "no"}},
	} {
		for _, variant := range []string{"stateless", "session"} {
			c := call{Body: body}
			if variant == "session" {
				c.Session = sid
			}
			r := s.do(t, s.url(variant), c)
			if r.Status != http.StatusAccepted && (r.Status < 400 || r.Status > 499) {
				t.Errorf("%s, stray %s: HTTP %d body %q, want 202 or a 4xx", variant, name, r.Status, r.Body)
			}
		}
	}
}

// dns-rebinding-protection (conformance) and the Host gate: a foreign Host
// is refused even from a loopback peer; the server's own loopback names pass.
func TestDNSRebindingProtection(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	port := s.hostPort()[strings.LastIndex(s.hostPort(), ":"):]
	tests := []struct {
		host, origin string
		status       int
	}{
		{"evil.example.com", "http://evil.example.com", http.StatusForbidden},
		{"evil.example.com", "", http.StatusForbidden},
		{"evil.example.com" + port, "", http.StatusForbidden},
		{"127.0.0.1" + port, "", http.StatusOK},
		{"localhost" + port, "", http.StatusOK},
		{"[::1]" + port, "", http.StatusOK},
		{"localhost", "", http.StatusOK},
		// The conformance suite's "valid" case: Host and Origin are the URL's own.
		{"127.0.0.1" + port, "http://127.0.0.1" + port, http.StatusOK},
	}
	for _, tt := range tests {
		r := s.do(t, s.url("stateless"), call{Body: request(1, "initialize", initializeParams(latestVersion)),
			Header: map[string]string{"Host": tt.host, "Origin": tt.origin}})
		if r.Status != tt.status {
			t.Errorf("Host %q Origin %q: HTTP %d, want %d; body:\n%s", tt.host, tt.origin, r.Status, tt.status, r.Body)
		}
	}
}

func TestHandleOrigin(t *testing.T) {
	t.Parallel()
	s := startServer(t, "origins", "stateless", "session")
	sid := s.initialize(t, s.url("session"))
	tests := []struct {
		name, variant, origin string
		status                int
	}{
		{"handle_origin_absent_ok", "origins", "", http.StatusOK},
		{"handle_origin_allowed_ok", "origins", "http://allowed.example", http.StatusOK},
		{"handle_origin_disallowed_403", "origins", "http://evil.example", http.StatusForbidden}, // post_disallowed_origin_403
		{"origin_is_exact", "origins", "http://allowed.example:80", http.StatusForbidden},
		{"handle_origin_empty_allowlist_403", "stateless", "http://evil.example", http.StatusForbidden},
		{"session_post_forbidden_origin", "session", "http://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := call{Body: request(1, "ping", nil), Header: map[string]string{"Origin": tt.origin}}
			if tt.variant == "session" {
				c.Session = sid
			}
			r := s.do(t, s.url(tt.variant), c)
			if r.Status != tt.status {
				t.Fatalf("HTTP %d, want %d; body:\n%s", r.Status, tt.status, r.Body)
			}
		})
	}
	// GET and DELETE pass the same gate.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		r := s.do(t, s.url("session"), call{Method: method, Session: sid, Header: map[string]string{"Origin": "http://evil.example"}})
		if r.Status != http.StatusForbidden {
			t.Errorf("%s from a forbidden Origin: HTTP %d, want 403", method, r.Status)
		}
	}
	s.rpc(t, s.url("session"), sid, 1, "ping", nil) // the refused DELETE ended nothing
}

func TestHandleAuth(t *testing.T) {
	t.Parallel()
	s := startServer(t, "auth")
	u := s.url("auth")
	tests := []struct {
		name, header string
		status       int
	}{
		{"auth_missing_token_401", "", http.StatusUnauthorized}, // handle_auth_rejects
		{"auth_wrong_token_403", "Bearer nope", http.StatusForbidden},
		{"auth_valid_token_ok", "Bearer test-token", http.StatusOK}, // handle_auth_reads_header
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(t, u, call{Body: request(1, "initialize", initializeParams(latestVersion)),
				Header: map[string]string{"Authorization": tt.header}})
			if r.Status != tt.status {
				t.Fatalf("HTTP %d, want %d; body:\n%s", r.Status, tt.status, r.Body)
			}
			if tt.status != http.StatusOK && len(r.Body) != 0 {
				t.Errorf("a rejection has body %q, want empty", r.Body)
			}
		})
	}
	// With the token, a whole session works; every verb is gated.
	auth := map[string]string{"Authorization": "Bearer test-token"}
	r := s.do(t, u, call{Body: request(1, "initialize", initializeParams(latestVersion)), Header: auth})
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("no session id; body:\n%s", r.Body)
	}
	if r := s.do(t, u, call{Body: request(2, "tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}}),
		Session: sid, Header: auth}); r.Status != http.StatusOK {
		t.Errorf("tools/call with the token: HTTP %d", r.Status)
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		c := call{Method: method, Session: sid}
		if method == http.MethodPost {
			c.Body = request(3, "ping", nil)
		}
		if r := s.do(t, u, c); r.Status != http.StatusUnauthorized {
			t.Errorf("%s without the token: HTTP %d, want 401", method, r.Status)
		}
	}
	if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid, Header: auth}); r.Status != http.StatusNoContent {
		t.Errorf("DELETE with the token: HTTP %d, want 204", r.Status)
	}
}

// session_max_sessions_503: the second initialize past max_sessions gets 503
// with exactly the original's body; ending a session frees its slot.
func TestSessionMaxSessions503(t *testing.T) {
	t.Parallel()
	s := startServer(t, "maxsessions")
	u := s.url("maxsessions")
	sid := s.initialize(t, u)
	r := s.do(t, u, call{Body: request(7, "initialize", initializeParams(latestVersion))})
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("HTTP %d, want 503; body:\n%s", r.Status, r.Body)
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a refused initialize carries Mcp-Session-Id %q", r.Header.Get("Mcp-Session-Id"))
	}
	var got, want any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, r.Body)
	}
	_ = json.Unmarshal([]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Server at capacity"}}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body = %s, want {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,\"message\":\"Server at capacity\"}}", r.Body)
	}
	if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d, want 204", r.Status)
	}
	s.initialize(t, u) // the slot is free again
}
