package tests

import (
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/luamcp/luamcp/internal/edge"
)

// Hostile HTTP/2 clients against the host served as `luamcp serve
// --tls-cert --tls-key` serves it, spoken frame by frame (h2raw_test.go).
// The front's own defences (the stream cap, a connection the client stops
// reading) are tested in internal/edge; these are about what a hostile
// client leaves behind in the host. Not parallel: they count goroutines.

// serveFront is the front's configuration under `luamcp serve`.
func serveFront(c *edge.Config) {
	c.ReadHeaderTimeout, c.IdleTimeout, c.WriteTimeout = 10*time.Second, 2*time.Minute, 10*time.Second
}

// initializeOver opens a session on url through rt, as a client would.
func initializeOver(t *testing.T, rt http.RoundTripper, url string) string {
	t.Helper()
	client := &http.Client{Transport: rt, Timeout: waitLong}
	post := func(body any, sid string) *http.Response {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", latestVersion)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	sid := post(request(0, "initialize", initializeParams(latestVersion)), "").Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("initialize: no session")
	}
	if r := post(request(nil, "notifications/initialized", nil), sid); r.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %s", r.Status)
	}
	return sid
}

// TestHTTP2RapidReset: a client that opens a stream with a tools/call of a
// tool that blocks and resets it at once, over and over (CVE-2023-44487),
// keeps at most a connection's worth of requests running, does not slow a
// well-behaved client down much, and leaves nothing behind.
func TestHTTP2RapidReset(t *testing.T) {
	s := startTLSWith(t, false, serveFront, nil, "stateless")
	tr := s.h2Transport()
	t.Cleanup(tr.CloseIdleConnections)
	stop := make(chan struct{})
	l := probe(t, tr, s.url("stateless"), 10*time.Millisecond, stop)
	time.Sleep(100 * time.Millisecond) // the probe's connection is up
	baseline := runtime.NumGoroutine()

	c := dialH2(t, s, true)
	// At least 3,000 streams and half a second, so that the other client
	// pings a few times meanwhile.
	const streams, least, most = 3000, 500 * time.Millisecond, 2 * time.Second
	peak, sent, start := 0, 0, time.Now()
	for ; (sent < streams || time.Since(start) < least) && time.Since(start) < most && !c.gone(); sent++ {
		id, err := c.post("/mcp/stateless", "", request(sent, "tools/call", map[string]any{"name": "block", "arguments": map[string]any{}}))
		if err != nil {
			break // the server hung up (ENHANCE_YOUR_CALM): fine too
		}
		_ = c.write(func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
		if sent%100 == 0 {
			peak = max(peak, runtime.NumGoroutine()-baseline)
		}
	}
	close(stop)
	n, fails, p50, p99, maxd, last := l.summary()
	t.Logf("%d streams opened and reset; at most %d goroutines more than before; the other client: %d pings, p50 %v, p99 %v, max %v", sent, peak, n, p50, p99, maxd)
	if fails > 0 || n == 0 {
		t.Errorf("the well-behaved client: %d of %d pings failed (last: %v)", fails, n+fails, last)
	}
	if maxd > 2*time.Second*raceSlowdown {
		t.Errorf("the well-behaved client waited up to %v for a ping", maxd)
	}
	// A connection runs at most 100 handlers; each holds a few goroutines.
	if peak > 1000 {
		t.Errorf("%d goroutines more than before during the attack", peak)
	}
	c.conn.Close()
	settle(t, baseline+2, "after the attacker left")
}

// TestHTTP2StalledWindowSSE: a client that never grants flow-control window
// (SETTINGS_INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE) to a session's GET
// channel and to a tools/call's event stream has both streams reset once a
// write has waited the write timeout, on a connection that stays up; the
// session's channel is free for the next GET, and the handlers are gone.
func TestHTTP2StalledWindowSSE(t *testing.T) {
	s := startTLSWith(t, false, serveFront, shortWrites, "channel")
	tr := s.h2Transport()
	t.Cleanup(tr.CloseIdleConnections)
	sid := initializeOver(t, tr, s.url("channel"))
	time.Sleep(100 * time.Millisecond) // the session's worker settles
	baseline := runtime.NumGoroutine()

	c := dialH2(t, s, false, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	get, err := c.open(http.MethodGet, "/mcp/channel", true, "accept", "text/event-stream", "mcp-session-id", sid, "mcp-protocol-version", latestVersion)
	if err != nil {
		t.Fatal(err)
	}
	call, err := c.post("/mcp/channel", sid, request(7, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "p"}}))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.waitFor(waitLong, "both streams reset", func() bool {
		_, a := c.rst[get]
		_, b := c.rst[call]
		return a && b
	})
	c.mu.Lock()
	t.Logf("reset after %v: GET %d %v, tools/call %d %v; %d bytes of DATA sent", time.Since(start), c.status[get], c.rst[get], c.status[call], c.rst[call], c.data[get]+c.data[call])
	if c.status[get] != http.StatusOK || c.status[call] != http.StatusOK {
		t.Errorf("statuses %d and %d before the resets, want the event streams' 200", c.status[get], c.status[call])
	}
	c.mu.Unlock()
	if c.gone() {
		t.Error("the connection closed: only the stalled streams should end")
	}

	req, _ := http.NewRequest(http.MethodGet, s.url("channel"), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", latestVersion)
	resp, err := (&http.Client{Transport: tr, Timeout: waitLong}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a new GET on the session: %s, want 200: the stalled channel still holds it", resp.Status)
	}
	c.conn.Close()
	settle(t, baseline+2, "after the stalled client left")
}
