package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// The hostile-client suite: what a client can throw at the server, each
// with its expected outcome. (The dribbled bodies, readers that stop reading
// and session floods are in transport_limits_test.go.)

// serveH2C serves s's host again over cleartext HTTP/2 as well as HTTP/1.1,
// and returns a client that speaks only HTTP/2: thousands of calls at once
// then share a few connections instead of needing a file descriptor each.
func serveH2C(t *testing.T, s *testServer) (url func(string) string, client *http.Client, stop func()) {
	t.Helper()
	srv := httptest.NewUnstartedServer(s.host.Handler())
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	// One connection carries every stream: without a strict limit the
	// client opens a connection per request that finds the others full
	// (or not yet settled), and 10,000 of them exhaust the descriptors.
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1 << 14}
	srv.Start()
	tr := &http.Transport{Protocols: new(http.Protocols), HTTP2: &http.HTTP2Config{StrictMaxConcurrentRequests: true}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	client = &http.Client{Transport: tr}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			tr.CloseIdleConnections()
			srv.CloseClientConnections()
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return func(route string) string { return srv.URL + "/mcp/" + route }, client, stop
}

// 10,000 progress calls at once on ten sessions: each session queues at most
// session_max_pending of them and refuses the rest at once; when the clients
// go away every call they left is stopped, and nothing stays behind.
func TestHostileParallelProgressCalls(t *testing.T) {
	const (
		sessions = 10
		calls    = 1000 // per session
		pending  = 100  // the fixture's session_max_pending (the default)
	)
	warmUp(t)
	baseline := runtime.NumGoroutine()
	s := startServer(t, "session")
	url, client, stop := serveH2C(t, s)
	h2 := &testServer{t: t, host: s.host, logs: s.logs, client: client}
	var sids []string
	for range sessions {
		sids = append(sids, h2.initialize(t, url("session")))
	}

	ctx, cancel := context.WithCancel(context.Background())
	var overloaded, cut, other atomic.Int32
	var firstOther atomic.Value
	var wg sync.WaitGroup
	for i := range sessions * calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := toolCall(i, "block", map[string]any{"ms": 60000}, fmt.Sprintf("tok-%d", i))
			resp, err := client.Do(h2.newRequest(ctx, t, url("session"), call{Body: body, Session: sids[i%sessions]}))
			if err != nil {
				cut.Add(1) // cancelled by the client before an answer
				return
			}
			defer resp.Body.Close()
			var r reply
			r.Status = resp.StatusCode
			r.Header = resp.Header
			if r.contentType() == "text/event-stream" {
				// Accepted: a stream that stays open until the client leaves.
				_ = scanSSE(resp.Body, func(sseEvent) {})
				cut.Add(1)
				return
			}
			var m message
			if err := json.NewDecoder(resp.Body).Decode(&m); err == nil && m.Error != nil &&
				m.Error.Code == -32603 && strings.Contains(m.Error.Message, "overloaded") {
				overloaded.Add(1)
				return
			}
			other.Add(1)
			firstOther.CompareAndSwap(nil, fmt.Sprintf("HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type")))
		}()
	}
	// Every call past the queues is refused at once; wait for those answers.
	want := int32(sessions * (calls - pending - 1))
	deadline := time.Now().Add(waitLong)
	for overloaded.Load() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d calls refused as overloaded (want at least %d)", overloaded.Load(), want)
	if overloaded.Load() < want {
		t.Errorf("%d calls refused, want at least %d: each session queues at most %d", overloaded.Load(), want, pending)
	}
	if n := other.Load(); n > 0 {
		t.Errorf("%d calls got another answer; first: %v", n, firstOther.Load())
	}

	// The clients go away: the calls they left stop, the sessions serve on.
	cancel()
	wg.Wait()
	client.CloseIdleConnections()
	for _, sid := range sids {
		h2.rpc(t, url("session"), sid, 1, "ping", nil)
	}
	stop()
	s.close()
	settle(t, baseline, "after 10,000 progress calls were abandoned")
}

// Arguments that no Lua value can carry faithfully are the client's fault:
// -32602, logged at debug, never a script crash.
func TestHostileInvalidArguments(t *testing.T) {
	s := startServer(t, "stateless")
	u := s.url("stateless")
	deep := strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300)
	tests := []struct {
		name string
		args string
	}{
		{"nested_300_deep", deep},
		{"invalid_utf8", "{\"s\":\"\xff\xfe\"}"},
		{"huge_number", `{"n":1e400}`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":%s}}`, i+1, tt.args)
			r := s.do(t, u, call{Body: []byte(body)})
			if r.Status != http.StatusOK {
				t.Fatalf("HTTP %d, want 200; body:\n%s", r.Status, r.Body)
			}
			m := r.response(t)
			wantID(t, m, fmt.Sprint(i+1))
			if m.Error == nil || m.Error.Code != -32602 {
				t.Errorf("got %s %+v, want error -32602", m.Result, m.Error)
			}
		})
	}
	if n := s.logs.count("Lua callback failed"); n > 0 {
		t.Errorf("%d script crashes logged for the client's bad arguments, want none", n)
	}
	s.callTool(t, u, "", "add", map[string]any{"a": 1, "b": 2})
}

// A flood of initialize requests that never DELETE: past the process-wide
// session cap each gets 503 at once, and the other routes serve on.
func TestHostileInitializeFlood(t *testing.T) {
	const (
		limit = 2000 // --max-sessions for this test; the default is 10,000
		flood = 2500
	)
	dir := hostileDir(t)
	copyDir(t, filepath.Join("testdata", "servers", "lib"), filepath.Join(dir, "lib"))
	copyFile(t, filepath.Join("testdata", "servers", "session.lua"), filepath.Join(dir, "session.lua"))
	s := startHost(t, dir, func(c *host.Config) { c.MaxSessions = limit })
	p := s.probe(t)
	var opened, refused, other atomic.Int32
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r, err := s.send(t, s.url("session"), call{Body: request(i, "initialize", initializeParams(latestVersion))})
				switch {
				case err != nil:
					other.Add(1)
				case r.Status == http.StatusOK && r.Header.Get("Mcp-Session-Id") != "":
					opened.Add(1)
				case r.Status == http.StatusServiceUnavailable:
					refused.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	for i := range flood {
		work <- i
	}
	close(work)
	wg.Wait()
	p.finish(t, fmt.Sprintf("%d initialize requests", flood))
	t.Logf("%d sessions opened, %d refused with 503", opened.Load(), refused.Load())
	if opened.Load() != limit || refused.Load() != flood-limit || other.Load() != 0 {
		t.Errorf("%d opened, %d refused, %d other; want %d, %d, 0", opened.Load(), refused.Load(), other.Load(), limit, flood-limit)
	}
}
