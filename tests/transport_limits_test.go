package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// Issue 9: what one client or one script can do to the others through the
// transport. Pushes stay on their route, sessions and subscriptions are
// capped, and a client that dribbles its body or stops reading loses alone.

// rawClient is a TCP connection driven byte by byte, for clients that
// misbehave on purpose.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (s *testServer) dialRaw(t *testing.T) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", s.hostPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes a request head and then body, which may be shorter than the
// Content-Length among the headers.
func (rc *rawClient) send(method, path string, headers []string, body string) {
	rc.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		rc.t.Fatal(err)
	}
}

// status reads the status code of the next response (not its body).
func (rc *rawClient) status() int {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(waitLong))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("reading a response: %v", err)
	}
	return resp.StatusCode
}

func TestCrossRoutePushesRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session", "other")
	u, other := s.url("session"), s.url("other")
	sid, victim := s.initialize(t, u), s.initialize(t, other)
	s.result(t, other, victim, "resources/subscribe", map[string]any{"uri": "mem://greeting"}, nil)
	get := s.openGET(t, other, victim, nil)

	// The script on /mcp/session aims at the session of /mcp/other: by id,
	// through the channel both routes' sessions joined, and through a
	// resource uri the victim subscribed to.
	s.callTool(t, u, sid, "notify", map[string]any{"to": victim, "n": 1}).wantText(t, "notified")
	s.callTool(t, u, sid, "log", map[string]any{"to": victim, "level": "emergency"}).wantText(t, "logged")
	s.callTool(t, u, sid, "broadcast", nil).wantText(t, "broadcast")
	s.callTool(t, u, sid, "touch", map[string]any{"uri": "mem://greeting"}).wantText(t, "touched")
	// A push that is not a notification is refused, whatever its target.
	for _, tool := range []string{"notify", "broadcast"} {
		got := s.callTool(t, u, sid, tool, map[string]any{"method": "sampling/createMessage"}).text(t)
		if !strings.HasPrefix(got, "refused: ") || !strings.Contains(got, "is not a notification") {
			t.Errorf("%s with a request method: %q, want it refused", tool, got)
		}
	}
	// The victim's own route reaches it: that is the first thing it gets.
	s.callTool(t, other, victim, "notify", map[string]any{"n": 2}).wantText(t, "notified")
	m := get.nextMessage()
	if m.Method != "notifications/test/poke" || !jsonEqual(t, m.Params, `{"n":2}`) {
		t.Fatalf("the other route's session got %s %s first, want its own poke {n:2}", m.Method, m.Params)
	}
}

func TestProcessWideSessionCap(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, func(c *host.Config) { c.MaxSessions = 3 }, "session", "other")
	sid := s.initialize(t, s.url("session"))
	s.initialize(t, s.url("session"))
	s.initialize(t, s.url("other"))
	for _, v := range []string{"session", "other"} {
		r := s.do(t, s.url(v), call{Body: request(9, "initialize", initializeParams(latestVersion))})
		if r.Status != http.StatusServiceUnavailable {
			t.Fatalf("initialize on %s past --max-sessions: HTTP %d, want 503", v, r.Status)
		}
		m := r.response(t)
		wantID(t, m, "9")
		wantError(t, m, -32603, "Server at capacity")
	}
	if r := s.do(t, s.url("session"), call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d", r.Status)
	}
	s.initialize(t, s.url("other")) // the freed slot serves any route
}

// TestProcessWideListenCap: host.Config.MaxListens (serve --max-listens)
// caps the open subscriptions/listen streams of every route together; a
// closed stream frees its slot for any route.
func TestProcessWideListenCap(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, func(c *host.Config) { c.MaxListens = 2 }, "session", "other")
	listen := func(v string, id int) *stream {
		return s.open(t, s.url(v), eraCall(id, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil))
	}
	first := listen("session", 1)
	for _, st := range []*stream{first, listen("other", 2)} {
		if st.Status != http.StatusOK || st.nextMessage().Method != "notifications/subscriptions/acknowledged" {
			t.Fatalf("listen within the cap: HTTP %d %s", st.Status, st.Body)
		}
	}
	for _, v := range []string{"session", "other"} {
		st := listen(v, 9)
		if st.Status != http.StatusServiceUnavailable {
			t.Fatalf("listen on %s past --max-listens: HTTP %d, want 503", v, st.Status)
		}
		r := reply{Status: st.Status, Header: st.Header, Body: st.Body}
		m := r.response(t)
		wantID(t, m, "9")
		wantError(t, m, -32603, "Server at capacity")
	}
	first.close()
	deadline := time.Now().Add(waitLong)
	for {
		st := listen("other", 10)
		st.close()
		if st.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed listen stream never freed its slot: HTTP %d", st.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProcessWideStatelessCap: host.Config.MaxStateless (serve
// --max-stateless) caps the requests served without a session that are open
// at once: Lua tools that wait (here in mcp.sleep) hold a fresh Lua state
// each, which nothing else bounds. One past the cap gets 503; a client that
// goes away frees its place.
func TestProcessWideStatelessCap(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, func(c *host.Config) { c.MaxStateless = 2 }, "stateless", "session")
	block := func(v string, id int) *stream {
		return s.open(t, s.url(v), call{Body: request(id, "tools/call", map[string]any{
			"name": "block", "arguments": map[string]any{"ms": 60000}, "_meta": map[string]any{"progressToken": "p"},
		})})
	}
	first := block("stateless", 1)
	for _, st := range []*stream{first, block("stateless", 2)} {
		if st.Status != http.StatusOK || st.nextMessage().Method != "notifications/progress" {
			t.Fatalf("a blocking call within the cap: HTTP %d %s", st.Status, st.Body)
		}
	}
	r := s.do(t, s.url("stateless"), call{Body: request(9, "tools/call", map[string]any{"name": "count"})})
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a call past --max-stateless: HTTP %d %s, want 503", r.Status, r.Body)
	}
	m := r.response(t)
	wantID(t, m, "9")
	wantError(t, m, -32603, "Server at capacity")
	// A session's calls are not counted.
	u := s.url("session")
	s.callTool(t, u, s.initialize(t, u), "count", nil).wantText(t, "1")

	first.close() // cancels its call
	deadline := time.Now().Add(waitLong)
	for {
		r := s.do(t, s.url("stateless"), call{Body: request(10, "tools/call", map[string]any{"name": "count"})})
		if r.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a cancelled call never freed its place: HTTP %d", r.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSubscriptionsPerSessionCapped(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	for i := range 1000 {
		s.result(t, u, sid, "resources/subscribe", map[string]any{"uri": fmt.Sprintf("mem://user/%d", i)}, nil)
	}
	m := s.rpc(t, u, sid, 77, "resources/subscribe", map[string]any{"uri": "mem://greeting"})
	wantID(t, m, "77")
	if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, "at most 1000") {
		t.Fatalf("the 1001st subscription: %+v, want -32603 naming the cap", m.Error)
	}
	s.rpc(t, u, sid, 78, "ping", nil) // the session still serves
}

func TestDribbledBodyLosesItsConnection(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, func(c *host.Config) { c.BodyTimeout = 300 * time.Millisecond }, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	rc := s.dialRaw(t)
	rc.send("POST", "/mcp/session", []string{"Content-Type: application/json", "Accept: application/json",
		"Content-Length: 100", "Mcp-Session-Id: " + sid, "MCP-Protocol-Version: " + latestVersion}, `{"jsonrpc":`)
	if st := rc.status(); st != http.StatusBadRequest {
		t.Fatalf("a body that never completes: HTTP %d, want 400", st)
	}
	_ = rc.c.SetReadDeadline(time.Now().Add(waitLong))
	if _, err := io.Copy(io.Discard, rc.br); err != nil {
		t.Fatalf("the connection stayed open: %v", err)
	}
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
}

// bigN is a push payload of about 60 KiB (the test's SSE reader takes lines
// up to 1 MiB).
var bigN = strings.Repeat("z", 60<<10)

func TestNonReadingClientsAreDropped(t *testing.T) {
	t.Parallel()
	s := startServerWith(t, func(c *host.Config) { c.WriteTimeout = 300 * time.Millisecond }, "session")
	u := s.url("session")
	sid := s.initialize(t, u)

	// A GET channel whose client reads nothing.
	rc := s.dialRaw(t)
	rc.send("GET", "/mcp/session", []string{"Accept: text/event-stream", "Mcp-Session-Id: " + sid,
		"MCP-Protocol-Version: " + latestVersion}, "")
	if st := rc.status(); st != http.StatusOK {
		t.Fatalf("GET: HTTP %d", st)
	}
	getStatus := func() int {
		st := s.open(t, u, call{Method: http.MethodGet, Session: sid})
		defer st.close()
		return st.Status
	}
	if st := getStatus(); st != http.StatusConflict {
		t.Fatalf("a second GET while the first is attached: HTTP %d, want 409", st)
	}
	// Pushes fill its socket; a write misses its deadline; the channel is
	// dropped and a new GET may attach.
	deadline := time.Now().Add(waitLong)
	for getStatus() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the non-reading GET channel was never dropped")
		}
		s.callTool(t, u, sid, "notify", map[string]any{"n": bigN, "times": 16}).wantText(t, "notified")
	}
	// The session answers, and the next GET resumes from the replay ring.
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
	s.poke(t, u, sid, 7)
	get := s.openGET(t, u, sid, map[string]string{"Last-Event-ID": "1"})
	for {
		m := get.nextMessage()
		if jsonEqual(t, m.Params, `{"n":7}`) {
			break
		}
	}
	get.close()

	// A POST stream whose client reads nothing: the call goes on (a
	// 2025-11-25 stream may be resumed), the session answers, DELETE ends it.
	rc = s.dialRaw(t)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"log","arguments":{"on":"call","level":"info","data":%q,"times":400},"_meta":{"progressToken":"t"}}}`, bigN)
	rc.send("POST", "/mcp/session", []string{"Content-Type: application/json", "Accept: application/json, text/event-stream",
		fmt.Sprintf("Content-Length: %d", len(body)), "Mcp-Session-Id: " + sid, "MCP-Protocol-Version: " + latestVersion}, body)
	if st := rc.status(); st != http.StatusOK {
		t.Fatalf("stream: HTTP %d", st)
	}
	s.callTool(t, u, sid, "count", nil).wantText(t, "2") // queued behind the stream's call, which ended
	if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d", r.Status)
	}
}

// TestProcessWideReplayBudget: host.Config.ReplayBudget (serve
// --replay-budget-mb) bounds the events that sessions which never open their
// GET channel keep between them, though each session's own bounds would
// let them keep more. Past it the session pushed to keeps its newest events
// and gives up its oldest; a session whose events were kept before keeps
// them all; a warning says so, once for the burst; and the sessions' end
// gives every byte back.
func TestProcessWideReplayBudget(t *testing.T) {
	t.Parallel()
	const budget, sessions, pushes = 8 << 10, 20, 40
	s := startServerWith(t, func(c *host.Config) { c.ReplayBudget = budget }, "session")
	u := s.url("session")
	start := time.Now()
	first := s.initialize(t, u)
	s.callTool(t, u, first, "notify", map[string]any{"times": 10, "n": 7}).wantText(t, "notified")
	var sids []string
	for range sessions {
		sid := s.initialize(t, u)
		sids = append(sids, sid)
		s.callTool(t, u, sid, "notify", map[string]any{"times": pushes, "n": 9}).wantText(t, "notified")
	}
	// An event is about 90 bytes: without the budget the sessions would
	// keep 20 × 40 of them, 72 KiB.
	const event = 128
	if kept, _ := s.host.Replay(); kept > budget+(sessions+1)*event {
		t.Errorf("%d sessions that never read keep %d bytes; the budget is %d", sessions, kept, budget)
	}
	get := s.openGET(t, u, first, map[string]string{"Last-Event-ID": "0"})
	for i := range 10 {
		wantPoke(t, get, 7, strconv.Itoa(i+1))
	}
	get.close()
	// The last session pushed to kept at least its newest push.
	get = s.openGET(t, u, sids[sessions-1], map[string]string{"Last-Event-ID": strconv.Itoa(pushes - 1)})
	wantPoke(t, get, 9, strconv.Itoa(pushes))
	get.close()
	s.logs.waitFor(t, "replay budget is spent", 1)
	// At most once per 10 s: once, unless this machine took longer.
	if n, most := s.logs.count("replay budget is spent"), 1+int(time.Since(start)/(10*time.Second)); n > most {
		t.Errorf("the budget's warning was logged %d times for one burst, want at most %d", n, most)
	}
	for _, sid := range append(sids, first) {
		if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
			t.Fatalf("DELETE: HTTP %d", r.Status)
		}
	}
	for deadline := time.Now().Add(waitLong); ; time.Sleep(10 * time.Millisecond) {
		kept, _ := s.host.Replay()
		if kept == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ended sessions still keep %d bytes", kept)
		}
	}
}
