package tests

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Session mode over raw HTTP: the session half of the original's end-to-end
// suite (behaviour.md §6d) and every case of its session-process suite (§6c)
// that can be seen from outside: lifecycle and state.

// terminated is the log line the fixture's terminate callback prints.
func terminated(reason, sid string) string {
	return "fixture terminate reason=" + reason + " session=" + sid
}

// waitBlock waits until the block call with request id runs. The log line
// ends the record's text, so a trailing attribute separator or the end of
// the line follows it; matching "id=N" alone would also match "id=N0".
func waitBlock(t *testing.T, s *testServer, id int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	re := regexp.MustCompile(fmt.Sprintf(`fixture block started id=%d(\s|$)`, id))
	for {
		s.logs.mu.Lock()
		found := false
		for _, l := range *s.logs.lines {
			if re.MatchString(l) {
				found = true
				break
			}
		}
		s.logs.mu.Unlock()
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("block call %d did not start within %v", id, waitLong)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cancel posts notifications/cancelled for request id and requires 202.
func (s *testServer) cancel(t *testing.T, url, sid string, id any) {
	t.Helper()
	r := s.do(t, url, call{Body: request(nil, "notifications/cancelled", map[string]any{"requestId": id, "reason": "test"}), Session: sid})
	if r.Status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: HTTP %d, want 202; body:\n%s", r.Status, r.Body)
	}
}

func toolCall(id any, name string, args map[string]any, token any) map[string]any {
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	if token != nil {
		params["_meta"] = map[string]any{"progressToken": token}
	}
	return request(id, "tools/call", params)
}

// wantGone waits until the session answers 404 (reaped or deleted).
func (s *testServer) wantGone(t *testing.T, url, sid string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		r := s.do(t, url, call{Body: request(1, "ping", nil), Session: sid})
		if r.Status == http.StatusNotFound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session still answers HTTP %d after %v, want 404", r.Status, waitLong)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var visibleASCII = regexp.MustCompile(`^[\x21-\x7e]+$`)

func TestSessionInitializeReturnsID(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	r := s.do(t, u, call{Body: request(1, "initialize", initializeParams(latestVersion))})
	if r.Status != http.StatusOK || r.contentType() != "application/json" {
		t.Fatalf("HTTP %d %q, want 200 application/json", r.Status, r.Header.Get("Content-Type"))
	}
	a := r.Header.Get("Mcp-Session-Id")
	if !visibleASCII.MatchString(a) || len(a) < 16 {
		t.Errorf("Mcp-Session-Id %q: want at least 16 visible ASCII characters", a)
	}
	// initialize always starts a new session, even when it carries an id.
	b := s.do(t, u, call{Body: request(1, "initialize", initializeParams(latestVersion)), Session: a}).Header.Get("Mcp-Session-Id")
	if b == "" || b == a {
		t.Errorf("a second initialize gave id %q (first %q), want a new one", b, a)
	}
	s.rpc(t, u, a, 2, "ping", nil)
	s.rpc(t, u, b, 2, "ping", nil)
}

func TestSessionRequestUsesSession(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	if m := s.rpc(t, u, sid, 1, "tools/list", nil); m.Error != nil {
		t.Errorf("tools/list: %+v", m.Error)
	}
}

// session_missing_id: the original answered 200 + -32600; luamcp follows the
// spec with 400.
func TestSessionMissingID(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	r := s.do(t, s.url("session"), call{Body: request(1, "tools/list", nil)})
	if r.Status != http.StatusBadRequest {
		t.Fatalf("HTTP %d, want 400; body:\n%s", r.Status, r.Body)
	}
	if r.contentType() == "application/json" {
		wantError(t, r.response(t), -32600, "Missing Mcp-Session-Id")
	}
}

func TestSessionUnknownID404(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	r := s.do(t, s.url("session"), call{Body: request(77, "tools/list", nil), Session: "no-such-session"})
	if r.Status != http.StatusNotFound {
		t.Fatalf("HTTP %d, want 404; body:\n%s", r.Status, r.Body)
	}
	m := r.response(t)
	wantID(t, m, "77")
	wantError(t, m, -32600, "Unknown or expired session")
	if r := s.do(t, s.url("session"), call{Method: http.MethodGet, Session: "no-such-session"}); r.Status != http.StatusNotFound {
		t.Errorf("GET with an unknown id: HTTP %d, want 404", r.Status)
	}
	if r := s.do(t, s.url("session"), call{Method: http.MethodDelete, Session: "no-such-session"}); r.Status != http.StatusNotFound {
		t.Errorf("DELETE with an unknown id: HTTP %d, want 404", r.Status)
	}
}

func TestSessionWithoutIDIs400(t *testing.T) { // session_delete_without_id, session_get_without_id_400
	t.Parallel()
	s := startServer(t, "session")
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if r := s.do(t, s.url("session"), call{Method: method}); r.Status != http.StatusBadRequest {
			t.Errorf("%s without Mcp-Session-Id: HTTP %d, want 400", method, r.Status)
		}
	}
}

func TestSessionDelete(t *testing.T) { // session_delete, terminate_calls_app, stop_removes_registration
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	r := s.do(t, u, call{Method: http.MethodDelete, Session: sid})
	if r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d, want 204", r.Status)
	}
	s.logs.waitFor(t, terminated("normal", sid), 1)
	if r := s.do(t, u, call{Body: request(1, "ping", nil), Session: sid}); r.Status != http.StatusNotFound {
		t.Errorf("POST after DELETE: HTTP %d, want 404", r.Status)
	}
	if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNotFound {
		t.Errorf("a second DELETE: HTTP %d, want 404", r.Status)
	}
	if n := s.logs.count(terminated("normal", sid)); n != 1 {
		t.Errorf("terminate ran %d times, want once", n)
	}
}

func TestSessionState(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	t.Run("state_accumulates_across_calls", func(t *testing.T) {
		sid := s.initialize(t, u)
		for _, want := range []string{"1", "2", "3"} {
			s.callTool(t, u, sid, "count", nil).wantText(t, want)
		}
	})
	t.Run("error_outcome_threads_state", func(t *testing.T) {
		sid := s.initialize(t, u)
		s.callTool(t, u, sid, "count", nil).wantText(t, "1")
		res := s.callTool(t, u, sid, "count", map[string]any{"fail": true})
		if res.IsError == nil || !*res.IsError || res.text(t) != "count failed at 2" {
			t.Errorf("count fail = %+v, want isError with text \"count failed at 2\"", res)
		}
		s.callTool(t, u, sid, "count", nil).wantText(t, "3")
	})
	t.Run("crash_preserves_prior_state", func(t *testing.T) {
		sid := s.initialize(t, u)
		s.callTool(t, u, sid, "count", nil).wantText(t, "1")
		// The tool incremented the counter in place before raising: rolled back.
		wantError(t, s.rpc(t, u, sid, 2, "tools/call", map[string]any{"name": "count", "arguments": map[string]any{"crash": true}}),
			-32603, "Internal error")
		s.callTool(t, u, sid, "count", nil).wantText(t, "2")
	})
	t.Run("resource_read_threads_state", func(t *testing.T) {
		sid := s.initialize(t, u)
		for _, want := range []string{"1", "2"} {
			var res struct{ Contents []struct{ Text string } }
			s.result(t, u, sid, "resources/read", map[string]any{"uri": "mem://counter"}, &res)
			if len(res.Contents) != 1 || res.Contents[0].Text != want {
				t.Errorf("counter = %+v, want %s", res.Contents, want)
			}
		}
	})
	t.Run("prompt_get_threads_state", func(t *testing.T) {
		sid := s.initialize(t, u)
		for _, want := range []string{"count 1", "count 2"} {
			m := s.rpc(t, u, sid, 1, "prompts/get", map[string]any{"name": "count"})
			if m.Error != nil || !strings.Contains(string(m.Result), want) {
				t.Errorf("prompt count = %s %v, want %q", m.Result, m.Error, want)
			}
		}
	})
	t.Run("sessions_are_independent", func(t *testing.T) {
		a, b := s.initialize(t, u), s.initialize(t, u)
		s.callTool(t, u, a, "count", nil).wantText(t, "1")
		s.callTool(t, u, a, "count", nil).wantText(t, "2")
		s.callTool(t, u, b, "count", nil).wantText(t, "1")
	})
}

func TestSessionToolCrashSurvives(t *testing.T) { // session_tool_crash_survives, session_tool_unencodable_survives
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	m := s.rpc(t, u, sid, 2, "tools/call", map[string]any{"name": "crash"})
	wantID(t, m, "2")
	wantError(t, m, -32603, "Internal error")
	s.rpc(t, u, sid, 3, "ping", nil)
	m = s.rpc(t, u, sid, 2, "tools/call", map[string]any{"name": "unencodable", "arguments": map[string]any{"kind": "utf8"}})
	wantID(t, m, "2")
	wantError(t, m, -32603, "Internal error")
	s.rpc(t, u, sid, 3, "ping", nil)
}

func TestSessionInitCrashInternalError(t *testing.T) {
	t.Parallel()
	s := startServer(t, "initcrash_session")
	r := s.do(t, s.url("initcrash_session"), call{Body: request(1, "initialize", initializeParams(latestVersion))})
	if r.Status != http.StatusOK {
		t.Fatalf("HTTP %d, want 200; body:\n%s", r.Status, r.Body)
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("a failed initialize set Mcp-Session-Id %q", sid)
	}
	wantError(t, r.response(t), -32603, "Internal error")
}

func TestStatelessStreamingInitCrashInternalError(t *testing.T) {
	t.Parallel()
	s := startServer(t, "initcrash")
	r := s.do(t, s.url("initcrash"), call{Body: toolCall(50, "progress", nil, "tok")})
	if r.Status != http.StatusOK || r.contentType() != "application/json" {
		t.Fatalf("HTTP %d %q, want 200 application/json; body:\n%s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	m := r.response(t)
	wantID(t, m, "50")
	wantError(t, m, -32603, "Internal error")
}
