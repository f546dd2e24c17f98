package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/luamcp/luamcp/mcp"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// Clients that misbehave on purpose: they dribble bodies, stop reading their
// streams, flood a session or push across routes. Each must lose alone.

// rawConn is a client connection driven byte by byte.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, rt *route) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(rt.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes a request: its head, then body (which may be shorter than a
// Content-Length given in headers).
func (rc *rawConn) send(method, target string, headers []string, body string) {
	rc.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, target)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		rc.t.Fatal(err)
	}
}

// post sends a complete JSON-RPC POST on session sid ("" for none).
func (rc *rawConn) post(path, sid, body string) {
	rc.t.Helper()
	h := []string{"Content-Type: application/json", "Accept: application/json, text/event-stream",
		fmt.Sprintf("Content-Length: %d", len(body))}
	if sid != "" {
		h = append(h, "Mcp-Session-Id: "+sid)
	}
	rc.send("POST", path, h, body)
}

// response reads the next response's status and headers (not its body).
func (rc *rawConn) response() *http.Response {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(liveness))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("reading a response: %v", err)
	}
	return resp
}

func TestDribbledBodyTimesOut(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, BodyTimeout: 200 * time.Millisecond})
	sid := rt.initialize()
	rc := dialRaw(t, rt)
	rc.send("POST", "/mcp", []string{"Content-Type: application/json", "Accept: application/json",
		"Content-Length: 200", "Mcp-Session-Id: " + sid}, `{"jsonrpc":"2.0",`)
	// The body never completes: the read deadline ends it with a 400, and
	// the connection closes.
	if resp := rc.response(); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("dribbled body: HTTP %d, want 400", resp.StatusCode)
	}
	_ = rc.c.SetReadDeadline(time.Now().Add(liveness))
	if _, err := io.Copy(io.Discard, rc.br); err != nil {
		t.Fatalf("the connection did not close: %v", err)
	}
	// A body that arrives in time, in pieces, is read whole.
	rc = dialRaw(t, rt)
	body := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	rc.send("POST", "/mcp", []string{"Content-Type: application/json", "Accept: application/json",
		fmt.Sprintf("Content-Length: %d", len(body)), "Mcp-Session-Id: " + sid}, body[:10])
	time.Sleep(50 * time.Millisecond)
	if _, err := io.WriteString(rc.c, body[10:]); err != nil {
		t.Fatal(err)
	}
	if resp := rc.response(); resp.StatusCode != http.StatusOK {
		t.Fatalf("a body in pieces: HTTP %d", resp.StatusCode)
	}
	if r := rt.call(sid, 6, "ping", ""); r.status != 200 {
		t.Fatalf("the session after a dribbled body: %d", r.status)
	}
}

// bigPush is a notification of about 60 KiB (the tests' SSE reader takes
// lines up to 64 KiB).
var bigPush = []byte(`{"blob":"` + strings.Repeat("y", 60<<10) + `"}`)

func TestNonReadingGetChannelIsDropped(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, WriteTimeout: 200 * time.Millisecond, SessionKeepAlive: -1})
	sid := rt.initialize()
	rc := dialRaw(t, rt)
	rc.send("GET", "/mcp", []string{"Accept: text/event-stream", "Mcp-Session-Id: " + sid}, "")
	if resp := rc.response(); resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	// The client reads nothing more. Pushes fill the socket buffers, a write
	// misses its deadline, and the channel is dropped: a new GET attaches.
	getStatus := func() int {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := rt.openGet(ctx, sid)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := getStatus(); s != http.StatusConflict {
		t.Fatalf("second GET while the first is attached: %d, want 409", s)
	}
	eventually(t, "the non-reading channel is dropped", func() bool {
		for range 32 {
			rt.push().Notify(sid, "notifications/big", bigPush)
		}
		return getStatus() == http.StatusOK
	})
	// The session still answers, and a GET with Last-Event-ID replays what
	// the ring kept (bounded by SessionBufferBytes, the newest kept).
	if r := rt.call(sid, 2, "ping", ""); r.status != 200 {
		t.Fatalf("ping: %d", r.status)
	}
	rt.push().Notify(sid, "notifications/marker", nil)
	// The last probing GET above left on the client's side only: the server
	// may not have seen it go yet, and lets this one take over
	// (TestGetChannelHandover).
	resp := rt.openGet(context.Background(), sid, "Last-Event-ID: 1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET after the probes: %d", resp.StatusCode)
	}
	get := newSSE(t, resp)
	defer get.close()
	for {
		ev := get.nextEvent()
		if ev.eof {
			t.Fatal("the replay ended without the marker")
		}
		if strings.Contains(ev.data, "notifications/marker") {
			break
		}
	}
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != 204 {
		t.Fatalf("DELETE: %d", r.status)
	}
}

func TestNonReadingPostStreamIsDropped(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, WriteTimeout: 200 * time.Millisecond})
	sid := rt.initialize() // 2025-06-18: a dropped stream stops its call
	rc := dialRaw(t, rt)
	rc.post("/mcp", sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","_meta":{"progressToken":"t"}}}`)
	if resp := rc.response(); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	waitStarted(t, f, "flood")
	eventually(t, "the flooding call is stopped", func() bool { return f.activeCalls() == 0 })
	if r := rt.call(sid, 2, "tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("the session after the dropped stream: %s", r.body)
	}
}

// TestDeleteDoesNotWaitForAStuckWriter: a client that stops reading its
// stream holds its own handler until the write deadline, never DELETE.
func TestDeleteDoesNotWaitForAStuckWriter(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, WriteTimeout: time.Hour})
	sid := rt.initializeWith(resumableInit)
	rc := dialRaw(t, rt)
	rc.post("/mcp", sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"flood","_meta":{"progressToken":"t"}}}`)
	if resp := rc.response(); resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	waitStarted(t, f, "flood")
	time.Sleep(100 * time.Millisecond) // let it fill the socket buffers
	done := make(chan reply, 1)
	go func() { done <- rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid) }()
	select {
	case r := <-done:
		if r.status != 204 {
			t.Fatalf("DELETE: %d", r.status)
		}
	case <-time.After(liveness):
		t.Fatal("DELETE hangs behind a client that stopped reading")
	}
	if reason := <-waitClose(t, f); reason != "normal" {
		t.Fatalf("reason %q", reason)
	}
}

// TestParallelProgressCallsLeaveNothing: a thousand progress calls at once
// on one session: session_max_pending of them are taken, the rest refused;
// once the clients are gone, no goroutine of theirs is left.
func TestParallelProgressCallsLeaveNothing(t *testing.T) {
	const calls = 1000
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionMaxPending: 100})
	sid := rt.initialize() // 2025-06-18: a client that goes away cancels its stream
	before := runtime.NumGoroutine()
	conns := make([]*rawConn, calls)
	for i := range conns {
		conns[i] = dialRaw(t, rt)
		conns[i].post("/mcp", sid, progressCall(fmt.Sprint(i+10), `"t"`, `{"block":true}`))
	}
	streamsOpen, refused := 0, 0
	for _, rc := range conns {
		resp := rc.response()
		switch resp.Header.Get("Content-Type") {
		case "text/event-stream":
			streamsOpen++
		case "application/json":
			b, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(b), "Session overloaded") {
				t.Fatalf("refused call: %s", b)
			}
			refused++
		}
	}
	// One runs, SessionMaxPending wait.
	if streamsOpen != 101 || refused != calls-101 {
		t.Fatalf("%d streams, %d refused", streamsOpen, refused)
	}
	for _, rc := range conns {
		rc.c.Close()
	}
	eventually(t, "the calls end", func() bool { return f.activeCalls() == 0 && mcp.QueueLen(rt.h, sid) == 0 })
	eventually(t, "goroutines back to where they were", func() bool { return runtime.NumGoroutine() <= before })
	if r := rt.call(sid, 2, "tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("the session after the flood: %s", r.body)
	}
}

// twoRoutes serves two fake servers on one hub, at /a and /b.
func twoRoutes(t *testing.T, hub *mcp.Hub) (a, b *route) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	mk := func(path string) *route {
		f := newFakeServer()
		h := mcp.NewHandler(f, mcp.Options{Path: path, Sessions: true}, hub, quietLogger())
		mux.Handle(path, h)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), liveness)
			defer cancel()
			_ = h.Shutdown(ctx)
		})
		return &route{t: t, f: f, h: h, hub: hub, srv: srv, url: srv.URL + path}
	}
	a, b = mk("/a"), mk("/b")
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return a, b
}

func TestPushesStayOnTheirRoute(t *testing.T) {
	hub := mcp.NewHub(quietLogger())
	a, b := twoRoutes(t, hub)
	sa, sb := a.initialize(), b.initialize()
	for _, c := range []struct {
		rt  *route
		sid string
	}{{a, sa}, {b, sb}} {
		if r := c.rt.call(c.sid, 2, "resources/subscribe", `{"uri":"mem://greeting"}`); r.status != 200 {
			t.Fatalf("subscribe: %s", r.body)
		}
	}
	getA := newSSE(t, a.openGet(context.Background(), sa))
	defer getA.close()
	getB := newSSE(t, b.openGet(context.Background(), sb))
	defer getB.close()

	// Route a's pushes, aimed at b's session, b's channel and b's uri.
	pa := hub.Route("/a")
	pa.Notify(sb, "notifications/a/notify", nil)
	pa.Log(sb, "error", []byte(`"from a"`))
	pa.Broadcast("fixture", "notifications/a/broadcast", nil)
	pa.ResourceUpdated("mem://greeting")
	hub.Route("/b").Notify(sb, "notifications/b/marker", nil)
	if ev := getB.nextEvent(); !strings.Contains(ev.data, "notifications/b/marker") {
		t.Fatalf("b's session got %q from another route", ev.data)
	}
	// The broadcast and the update did reach a's own session.
	for _, want := range []string{"notifications/a/broadcast", "notifications/resources/updated"} {
		if ev := getA.nextEvent(); !strings.Contains(ev.data, want) {
			t.Fatalf("a's session got %q, want %s", ev.data, want)
		}
	}
}

func TestProcessSessionCap(t *testing.T) {
	hub := mcp.NewHub(quietLogger())
	hub.SetMaxSessions(2)
	a, b := twoRoutes(t, hub)
	sa := a.initialize()
	b.initialize()
	for _, rt := range []*route{a, b} {
		r := rt.post(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if r.status != http.StatusServiceUnavailable || r.msg["id"] != float64(7) || r.errorMessage() != "Server at capacity" {
			t.Fatalf("initialize past the process cap: %d %s", r.status, r.body)
		}
	}
	if r := a.do(http.MethodDelete, "", "Mcp-Session-Id: "+sa); r.status != 204 {
		t.Fatalf("DELETE: %d", r.status)
	}
	b.initialize() // the slot is free again
}

func TestSubscriptionCap(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	for i := range 1000 {
		if r := rt.call(sid, i, "resources/subscribe", fmt.Sprintf(`{"uri":"mem://u/%d"}`, i)); r.status != 200 || r.errorCode() != 0 {
			t.Fatalf("subscribe %d: %s", i, r.body)
		}
	}
	if r := rt.call(sid, 1000, "resources/subscribe", `{"uri":"mem://u/0"}`); r.errorCode() != 0 {
		t.Fatalf("subscribing again to a uri is idempotent: %s", r.body)
	}
	r := rt.call(sid, 1001, "resources/subscribe", `{"uri":"mem://one-too-many"}`)
	if r.errorCode() != -32603 || !strings.Contains(r.errorMessage(), "1000") || r.msg["id"] != float64(1001) {
		t.Fatalf("subscription past the cap: %s", r.body)
	}
	rt.call(sid, 1002, "resources/unsubscribe", `{"uri":"mem://u/0"}`)
	if r := rt.call(sid, 1003, "resources/subscribe", `{"uri":"mem://one-too-many"}`); r.errorCode() != 0 {
		t.Fatalf("subscribe after an unsubscribe: %s", r.body)
	}
}

// TestSubscriptionBytesCap: a session's subscriptions hold at most 1 MiB of
// URIs, however few they are.
func TestSubscriptionBytesCap(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	long := func(i int) string { return fmt.Sprintf(`{"uri":"mem://%d/%s"}`, i, strings.Repeat("x", 400<<10)) }
	for i := range 2 {
		if r := rt.call(sid, i, "resources/subscribe", long(i)); r.errorCode() != 0 {
			t.Fatalf("subscribe %d: %.200s", i, r.body)
		}
	}
	r := rt.call(sid, 2, "resources/subscribe", long(2))
	if r.errorCode() != -32603 || !strings.Contains(r.errorMessage(), "1024 KiB") || r.msg["id"] != float64(2) {
		t.Fatalf("subscription past 1 MiB of URIs: %.200s", r.body)
	}
	if r := rt.call(sid, 3, "resources/subscribe", `{"uri":"mem://short"}`); r.errorCode() != 0 {
		t.Fatalf("a short uri still fits: %s", r.body)
	}
	rt.call(sid, 4, "resources/unsubscribe", long(0))
	if r := rt.call(sid, 5, "resources/subscribe", long(2)); r.errorCode() != 0 {
		t.Fatalf("subscribe after an unsubscribe: %.200s", r.body)
	}
}

// TestListenResourceBounds: a listen stream honours at most 1,000 distinct
// resource URIs, of at most 1 MiB in all, and says which in its
// acknowledgement.
func TestListenResourceBounds(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	big := strings.Repeat("y", 400<<10)
	many := make([]string, 0, 1200)
	for i := range 1200 {
		many = append(many, fmt.Sprintf("mem://%d", i%1100)) // 100 repeated
	}
	tests := []struct {
		name string
		uris []string
		want []string
	}{
		{"count", many, many[:1000]},
		{"bytes", []string{"mem://1/" + big, "mem://2/" + big, "mem://3/" + big, "mem://4"}, []string{"mem://1/" + big, "mem://2/" + big, "mem://4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := `{"notifications":{"resourceSubscriptions":` + mustJSON(tt.uris) + `}}`
			body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":` + withMeta(params, metaAll) + `}`
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := rt.stream(ctx, "", body, modernHeaders("subscriptions/listen", params)...)
			defer s.close()
			p, _ := s.nextEvent().msg()["params"].(map[string]any)
			want := `{"resourceSubscriptions":` + mustJSON(tt.want) + `}`
			if got := mustJSON(p["notifications"]); got != want {
				t.Errorf("honoured %.300s, want %.300s", got, want)
			}
		})
	}
}

// TestListenKeepsNoBody: an open listen stream keeps its request's id and
// filter, not the body they came in: 16 streams opened with bodies of 2 MiB
// held all 32 MiB for as long as they stayed open.
func TestListenKeepsNoBody(t *testing.T) {
	const streams, pad = 16, 2 << 20
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	params := `{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://greeting"]}}`
	body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":` + withMeta(params, metaAll) +
		`,"padding":"` + strings.Repeat("p", pad) + `"}`
	before := heapInUse()
	for range streams {
		ctx, cancel := context.WithCancel(context.Background())
		s := rt.stream(ctx, "", body, modernHeaders("subscriptions/listen", params)...)
		t.Cleanup(func() { cancel(); s.close() })
		if m := s.nextEvent().msg(); m["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("first message %v", m)
		}
	}
	body = "" // the test's own copy is not the server's
	if grown := heapInUse() - before; grown > streams*pad/4 {
		t.Errorf("%d open listen streams hold %d MiB; their bodies were %d MiB", streams, grown>>20, streams*pad>>20)
	}
}

// TestProcessListenCap: open subscriptions/listen streams are capped across
// the routes of a hub; a listen past the cap gets 503 and runs nothing, and a
// closed stream frees its slot.
func TestProcessListenCap(t *testing.T) {
	hub := mcp.NewHub(quietLogger())
	hub.SetMaxListens(2)
	rec := newRecorder()
	hub.SetObserver(rec)
	a, b := twoRoutes(t, hub)
	params := `{"notifications":{"toolsListChanged":true}}`
	body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":` + withMeta(params, metaAll) + `}`
	listen := func(rt *route) (*sse, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		s := rt.stream(ctx, "", body, modernHeaders("subscriptions/listen", params)...)
		if m := s.nextEvent().msg(); m["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("first message %v", m)
		}
		return s, cancel
	}
	sa, cancelA := listen(a)
	defer cancelA()
	defer sa.close()
	sb, cancelB := listen(b)
	defer cancelB()
	defer sb.close()
	inits := func() int {
		n := 0
		for _, f := range []*fakeServer{a.f, b.f} {
			f.mu.Lock()
			n += len(f.inits)
			f.mu.Unlock()
		}
		return n
	}
	before := inits()
	for _, rt := range []*route{a, b} {
		// Bounded: without the cap this listen would stream for ever.
		ctx, cancel := context.WithTimeout(context.Background(), liveness)
		resp := rt.open(ctx, http.MethodPost, body, modernHeaders("subscriptions/listen", params)...)
		if resp.Header.Get("Content-Type") == "text/event-stream" {
			cancel()
			t.Fatal("a listen past the cap got a stream")
		}
		r := readReply(t, resp)
		resp.Body.Close()
		cancel()
		if r.status != http.StatusServiceUnavailable || r.errorMessage() != "Server at capacity" || r.msg["id"] != "L" {
			t.Fatalf("listen past the cap: %d %s", r.status, r.body)
		}
	}
	if n := inits() - before; n != 0 {
		t.Errorf("a refused listen ran init %d times", n)
	}
	if got := rec.gates(); !slices.Equal(got, []mcp.Gate{mcp.GateProcessListens, mcp.GateProcessListens}) {
		t.Errorf("refusals %v, want process_listens twice", got)
	}
	// Other requests are not counted.
	if r := a.modern("tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("a call beside full listens: %s", r.body)
	}
	cancelA()
	sa.close()
	eventually(t, "the closed stream's slot to be free", func() bool {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := a.open(ctx, http.MethodPost, body, modernHeaders("subscriptions/listen", params)...)
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// TestProcessStatelessCap: the requests served without a session (a
// stateless route's, and the 2026-07-28 era's on any route) that are open at
// once are capped across the hub; one past it gets 503 before init runs, a
// session's calls and listen streams are not counted, and a finished request
// frees its place.
func TestProcessStatelessCap(t *testing.T) {
	hub := mcp.NewHub(quietLogger())
	hub.SetMaxStateless(1)
	rec := newRecorder()
	hub.SetObserver(rec)
	a, b := twoRoutes(t, hub) // session routes: the 2026-07-28 era is stateless on them
	waiting := async(func() reply { return a.modern("tools/call", `{"name":"wait"}`) })
	waitStarted(t, a.f, "wait")
	inits := func() int {
		a.f.mu.Lock()
		defer a.f.mu.Unlock()
		b.f.mu.Lock()
		defer b.f.mu.Unlock()
		return len(a.f.inits) + len(b.f.inits)
	}
	before := inits()
	for _, rt := range []*route{a, b} {
		r := rt.modern("tools/call", `{"name":"count"}`)
		if r.status != http.StatusServiceUnavailable || r.errorMessage() != "Server at capacity" || r.msg["id"] != float64(7) {
			t.Fatalf("a request past the cap: %d %s", r.status, r.body)
		}
	}
	if n := inits() - before; n != 0 {
		t.Errorf("a refused request ran init %d times", n)
	}
	if got := rec.gates(); !slices.Equal(got, []mcp.Gate{mcp.GateProcessStateless, mcp.GateProcessStateless}) {
		t.Errorf("refusals %v, want process_stateless twice", got)
	}
	// Sessions and listen streams have caps of their own.
	sid := b.initialize()
	if r := b.call(sid, 2, "tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("a session call beside the full cap: %s", r.body)
	}
	params := `{"notifications":{"toolsListChanged":true}}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := b.stream(ctx, "", `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":`+withMeta(params, metaAll)+`}`,
		modernHeaders("subscriptions/listen", params)...)
	defer listen.close()
	if m := listen.nextEvent().msg(); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen beside the full cap: %v", m)
	}
	a.f.release <- struct{}{}
	if r := await(t, waiting); r.status != 200 || r.errorCode() != 0 {
		t.Fatalf("the waiting call: %d %s", r.status, r.body)
	}
	if r := b.modern("tools/call", `{"name":"count"}`); r.status != 200 || r.text() != "1" {
		t.Fatalf("a request after the place was freed: %d %s", r.status, r.body)
	}

	// A stateless route's requests are counted the same way.
	st := newRoute(t, newFakeServer(), mcp.Options{})
	st.hub.SetMaxStateless(1)
	held := async(func() reply {
		return st.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)
	})
	waitStarted(t, st.f, "wait")
	r := st.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count"}}`)
	if r.status != http.StatusServiceUnavailable || r.errorMessage() != "Server at capacity" || r.msg["id"] != float64(2) {
		t.Fatalf("a stateless route's request past the cap: %d %s", r.status, r.body)
	}
	st.f.release <- struct{}{}
	if r := await(t, held); r.errorCode() != 0 {
		t.Fatalf("the held call: %s", r.body)
	}
}

// TestClientWarningsLogOnce: a flood of requests at a process-wide cap is
// refused every time, counted every time, and logged once; so is a flood of
// responses that answer no request.
func TestClientWarningsLogOnce(t *testing.T) {
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	hub := mcp.NewHub(logger)
	hub.SetMaxStateless(1)
	rec := newRecorder()
	hub.SetObserver(rec)
	f := newFakeServer()
	h := mcp.NewHandler(f, mcp.Options{Path: "/mcp"}, hub, logger)
	srv := httptest.NewServer(h)
	rt := &route{t: t, f: f, h: h, hub: hub, srv: srv, url: srv.URL + "/mcp"}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), liveness)
		defer cancel()
		_ = h.Shutdown(ctx)
		srv.CloseClientConnections()
		srv.Close()
	})
	held := async(func() reply {
		return rt.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)
	})
	waitStarted(t, f, "wait")
	const flood = 50
	for i := range flood {
		if r := rt.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count"}}`); r.status != http.StatusServiceUnavailable {
			t.Fatalf("request %d past the cap: %d %s", i, r.status, r.body)
		}
	}
	if n := len(rec.gates()); n != flood {
		t.Errorf("%d refusals counted, want %d", n, flood)
	}
	if n := strings.Count(log.String(), "request refused"); n != 1 {
		t.Errorf("%d refusals logged, want 1:\n%s", n, log.String())
	}
	f.release <- struct{}{}
	await(t, held)
	// Answers to no request: refused each time, logged once.
	for i := range flood {
		if r := rt.post(`{"jsonrpc":"2.0","id":"nobody-asked","result":{}}`); r.status != http.StatusBadRequest {
			t.Fatalf("stray response %d: %d %s", i, r.status, r.body)
		}
	}
	if n := strings.Count(log.String(), "matches no pending request"); n != 1 {
		t.Errorf("%d stray responses logged, want 1:\n%s", n, log.String())
	}
}

func TestBadArgumentsAreInvalidParams(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	for _, tt := range []struct{ method, params string }{
		{"tools/call", `{"name":"echo","arguments":5}`},
		{"tools/call", `{"name":"echo","arguments":[1]}`},
		{"tools/call", `{"name":"echo","arguments":"x"}`},
		{"prompts/get", `{"name":"greet","arguments":true}`},
	} {
		r := rt.call(sid, 3, tt.method, tt.params)
		if r.errorCode() != -32602 || r.errorMessage() != "Invalid params: arguments must be an object" || r.msg["id"] != float64(3) {
			t.Errorf("%s %s: %s", tt.method, tt.params, r.body)
		}
	}
	if r := rt.call(sid, 4, "tools/call", `{"name":"echo","arguments":null}`); r.errorCode() != 0 {
		t.Errorf("null arguments: %s", r.body)
	}
}

// TestSessionErrorsEchoTheID: errors about the session of a request with a
// readable id carry it.
func TestSessionErrorsEchoTheID(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	for _, tt := range []struct {
		headers []string
		status  int
	}{
		{nil, 400},
		{[]string{"Mcp-Session-Id: nope"}, 404},
		{[]string{"Mcp-Session-Id: nope", "MCP-Protocol-Version: 1999-01-01"}, 400},
		{[]string{"Mcp-Session-Id: nope", "Content-Type: text/plain"}, 415},
	} {
		r := rt.post(`{"jsonrpc":"2.0","id":"abc","method":"ping"}`, tt.headers...)
		if r.status != tt.status || r.msg["id"] != "abc" {
			t.Errorf("%v: %d %s", tt.headers, r.status, r.body)
		}
	}
}

// TestThrottledFailuresNotLogged: a failure its source throttled (a crash
// luavm held back) is not logged at error level by the transport either;
// any other failure is, once per failure.
func TestThrottledFailuresNotLogged(t *testing.T) {
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFakeServer()
	h := mcp.NewHandler(f, mcp.Options{Path: "/mcp", Sessions: true}, mcp.NewHub(logger), logger)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	rt := &route{t: t, f: f, h: h, srv: srv, url: srv.URL + "/mcp"}
	sid := rt.initialize()
	for _, tt := range []struct {
		tool  string
		level string // the level of the transport's line
	}{
		{"crash", "level=ERROR"},
		{"heldcrash", "level=DEBUG"},
	} {
		before := len(log.String())
		if r := rt.call(sid, 2, "tools/call", `{"name":"`+tt.tool+`"}`); r.errorCode() != -32603 {
			t.Fatalf("%s: %s", tt.tool, r.body)
		}
		var lines []string
		for line := range strings.SplitSeq(log.String()[before:], "\n") {
			if strings.Contains(line, "mcp: call failed") {
				lines = append(lines, line)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], tt.level) {
			t.Errorf("%s: transport logged %q, want one line at %s", tt.tool, lines, tt.level)
		}
	}
}

// TestNonReadingJSONAnswerIsCut: a JSON answer (not a stream) has the
// route's write deadline too: a client that posts a call with a large
// answer and never reads it loses the connection after WriteTimeout, rather
// than holding its handler, the answer's buffer and the connection for as
// long as it likes. The stream tests above do not reach sink.json.
func TestNonReadingJSONAnswerIsCut(t *testing.T) {
	const size = 12 << 20 // past the socket buffers of a client that does not read
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{MaxBodyBytes: 2 * size, WriteTimeout: 200 * time.Millisecond})
	rc := dialRaw(t, rt)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"s":"` +
		strings.Repeat("x", size) + `"}}}`
	rc.send("POST", "/mcp", []string{"Content-Type: application/json", "Accept: application/json",
		fmt.Sprintf("Content-Length: %d", len(body))}, body)
	// The head arrives with the first bytes of the answer: the write, and
	// its deadline, have started. Then nothing is read for well past it.
	resp := rc.response()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	time.Sleep(time.Second)
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		t.Fatalf("the whole answer (%d bytes) arrived after the write deadline", n)
	}
}

// TestBurstReachesAReadingClient: a call that sends its messages faster than
// the network takes them (here 40 MiB of log messages at once) is not a
// client that stopped reading: a client that keeps reading, if not as fast as
// the call sends, gets the answer, on a stream that cannot be resumed
// (2025-06-18) too. Messages past what a stream may queue are skipped; only
// the write deadline drops a client.
func TestBurstReachesAReadingClient(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, ConcurrentTools: []string{"burst"}})
	sid := rt.initialize()
	rc := dialRaw(t, rt)
	rc.post("/mcp", sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"burst","arguments":{"n":40,"kib":1024},"_meta":{"progressToken":"t"}}}`)
	resp := rc.response()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// About 50 MB/s: far from the write deadline, slower than the call.
	var b []byte
	buf := make([]byte, 256<<10)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err == io.EOF || bytes.Contains(b, []byte(`"burst done"`)) {
			break
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !bytes.Contains(b, []byte(`"burst done"`)) {
		t.Fatalf("the stream (%d bytes, %d log messages) ended without the answer", len(b), bytes.Count(b, []byte("notifications/message")))
	}
	if r := rt.call(sid, 2, "tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("the session after the burst: %s", r.body)
	}
}

// TestIdsAndTokensAreUTF8: answers echo a request's id and its progress
// token as they came, so one that is not UTF-8 would make them invalid JSON:
// such an id is an Invalid Request, such a token none (the call is answered
// without progress).
func TestIdsAndTokensAreUTF8(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	r := rt.post("{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}", "Mcp-Session-Id: "+sid)
	if r.errorCode() != mcp.CodeInvalidRequest || r.msg["id"] != nil || !utf8.ValidString(r.body) {
		t.Errorf("an id that is not UTF-8: %d %q", r.status, r.body)
	}
	r = rt.post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"progress\",\"_meta\":{\"progressToken\":\"t\xfe\"}}}", "Mcp-Session-Id: "+sid)
	if r.status != 200 || !utf8.ValidString(r.body) || r.errorCode() != 0 || strings.Contains(r.body, "notifications/progress") {
		t.Errorf("a progress token that is not UTF-8: %d %q", r.status, r.body)
	}
}

// TestLongProgressTokenIsNone: every progress notification repeats the
// token, so one longer than an id may be counts as none, as a long id is
// refused: 100 steps must not copy a 1 MiB token 100 times.
func TestLongProgressTokenIsNone(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	long := `"` + strings.Repeat("t", 1<<20) + `"`
	r := rt.call(sid, 1, "tools/call", `{"name":"progress","arguments":{"steps":100},"_meta":{"progressToken":`+long+`}}`)
	if r.status != 200 || r.errorCode() != 0 || len(r.body) > 64<<10 || strings.Contains(r.body, "notifications/progress") {
		t.Errorf("a 1 MiB progress token: %d, %d bytes", r.status, len(r.body))
	}
	short := `"` + strings.Repeat("t", 1000) + `"`
	r = rt.call(sid, 2, "tools/call", `{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":`+short+`}}`)
	if n := strings.Count(r.body, "notifications/progress"); n != 2 {
		t.Errorf("a token of 1,000 bytes: %d progress notifications, want 2: %.200s", n, r.body)
	}
}

// TestBodiesShareABudget: bodies still arriving hold memory together, and
// slow clients that each stay within MaxBodyBytes could hold gigabytes; past
// the hub's body budget the body that grows gets 503, and once the slow one
// is gone a body larger than the whole budget, alone, is read.
func TestBodiesShareABudget(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	// The slow body's buffer grows to 1 MiB, and each request counts its
	// headers and 16 KiB besides (TestStalledRequestsShareTheBodyBudget):
	// 1.5 MiB leaves room for a small body, not for another of 600 KiB.
	rt.hub.SetBodyBudget(3 << 19)
	padded := func(n int) string {
		return `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", n) + `"}}`
	}
	slow := dialRaw(t, rt)
	slow.send("POST", "/mcp", []string{"Content-Type: application/json", "Accept: application/json, text/event-stream",
		fmt.Sprintf("Content-Length: %d", 3<<20)}, padded(3 << 20)[:900<<10])
	// Of two bodies that grow at once the one that passes the budget is
	// refused, whichever it is: the slow one's bytes are counted first.
	eventually(t, "the slow body's bytes to be counted", func() bool { return rt.hub.BodyBytes() >= 700<<10 })
	eventually(t, "a body past the budget is refused", func() bool {
		r := rt.post(padded(600 << 10))
		if r.status == 200 {
			return false
		}
		if r.status != http.StatusServiceUnavailable || r.errorMessage() != "Server at capacity" {
			t.Fatalf("a body past the budget: %d %s", r.status, r.body)
		}
		return true
	})
	if r := rt.post(padded(100)); r.status != 200 || r.errorCode() != 0 {
		t.Fatalf("a small body beside the slow one: %d %s", r.status, r.body)
	}
	slow.c.Close()
	eventually(t, "the slow body's bytes are given back", func() bool {
		r := rt.post(padded(3 << 20))
		return r.status == 200 && r.errorCode() == 0
	})
}

// TestStalledRequestsShareTheBodyBudget: a request waiting for its body
// holds its headers and its goroutine, and HTTP/2 and HTTP/3 carry 100 of
// them per connection; they count against the body budget from before the
// body's first byte, so past it the next one gets the body budget's 503 at
// once, not after BodyTimeout, and they give back what they counted when
// they end. Once they have stalled for mcp.StallAfter, a new request makes
// room by cutting the oldest (503 too), so that stalled requests cannot keep
// every other client refused. A request alone always fits, whatever its
// headers.
func TestStalledRequestsShareTheBodyBudget(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	pad := strings.Repeat("x", 40<<10)
	head := []string{"Content-Type: application/json", "Accept: application/json, text/event-stream",
		"Content-Length: 100", "X-Pad: " + pad}
	// What the server sees of such a request: the cost of one.
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	req.Host = "127.0.0.1"
	for _, h := range head {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	cost := mcp.RequestCost(req)
	if cost < 56<<10 || cost > 57<<10 {
		t.Fatalf("a request with 40 KiB of headers costs %d bytes, want its headers and 16 KiB", cost)
	}
	rt.hub.SetBodyBudget(4*cost + cost/2)
	var stalled []*rawConn
	for i := range 4 {
		rc := dialRaw(t, rt)
		rc.send("POST", "/mcp", head, "")
		stalled = append(stalled, rc)
		eventually(t, fmt.Sprintf("stalled request %d counted", i+1), func() bool { return rt.hub.BodyBytes() == int64(i+1)*cost })
	}
	start := time.Now()
	rc := dialRaw(t, rt)
	rc.send("POST", "/mcp", head, "")
	resp := rc.response()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"message":"Server at capacity"`) {
		t.Fatalf("a request past the budget: %d %s", resp.StatusCode, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refused after %v, want at once", d)
	}
	if n := rt.hub.BodyBytes(); n != 4*cost {
		t.Errorf("after the refusal the budget counts %d bytes, want the 4 stalled requests' %d", n, 4*cost)
	}

	time.Sleep(mcp.StallAfter)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	if r := rt.post(ping, "X-Pad: "+pad); r.status != 200 || r.errorCode() != 0 {
		t.Errorf("a request once the others stalled %v: %d %s", mcp.StallAfter, r.status, r.body)
	}
	resp = stalled[0].response()
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"message":"Server at capacity"`) {
		t.Errorf("the oldest stalled request, cut to make room: %d %s", resp.StatusCode, body)
	}
	eventually(t, "the cut request gives back what it counted", func() bool { return rt.hub.BodyBytes() == 3*cost })

	rt.hub.SetBodyBudget(1 << 10)
	for _, rc := range stalled {
		rc.c.Close()
	}
	eventually(t, "the stalled requests give back what they counted", func() bool { return rt.hub.BodyBytes() == 0 })
	if r := rt.post(ping, "X-Pad: "+pad); r.status != 200 || r.errorCode() != 0 {
		t.Errorf("a request alone, its headers past the budget: %d %s", r.status, r.body)
	}
}

// TestLargeCapabilitiesRefused: a session keeps its client's capabilities
// for its life, so an initialize that declares more than 64 KiB of them is
// Invalid params and opens no session; 60 KiB still does.
func TestLargeCapabilitiesRefused(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	caps := func(n int) string {
		return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"experimental":{"x":"` +
			strings.Repeat("x", n) + `"}},"clientInfo":{"name":"t","version":"1"}}}`
	}
	r := rt.post(caps(100 << 10))
	if r.errorCode() != mcp.CodeInvalidParams || r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("100 KiB of capabilities: %d %.200s (session %q)", r.status, r.body, r.header.Get("Mcp-Session-Id"))
	}
	if r := rt.post(caps(60 << 10)); r.status != 200 || r.header.Get("Mcp-Session-Id") == "" {
		t.Errorf("60 KiB of capabilities: %d %.200s", r.status, r.body)
	}
	// The 2026-07-28 era declares them in each request's _meta, and a task
	// keeps them for its life.
	meta := func(n int) string {
		return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"x":"` +
			strings.Repeat("x", n) + `"}}}`
	}
	if r := rt.modernWith(meta(100<<10), "tools/call", `{"name":"count"}`); r.errorCode() != mcp.CodeInvalidParams {
		t.Errorf("100 KiB of capabilities in _meta: %d %.200s", r.status, r.body)
	}
	if r := rt.modernWith(meta(60<<10), "tools/call", `{"name":"count"}`); r.errorCode() != 0 || r.text() != "1" {
		t.Errorf("60 KiB of capabilities in _meta: %d %.200s", r.status, r.body)
	}
}

// TestQueuedCallsShareTheBodyBudget: a call that waits in its session's
// queue counts its request and its body in the body budget until it runs:
// session_max_pending bounds one session's queue, not all of them (100
// calls of 4 MiB behind a slow tool on each of 10,000 sessions), so past the
// budget a call that would wait gets 503 "Server at capacity"; those queued
// run once the session is free and give back what they counted.
func TestQueuedCallsShareTheBodyBudget(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	held := make(chan reply, 1)
	go func() { held <- rt.call(sid, 1, "tools/call", `{"name":"wait"}`) }()
	eventually(t, "the call holding the session runs", func() bool { return f.activeCalls() == 1 })

	args := `{"name":"echo","arguments":{"pad":"` + strings.Repeat("x", 100<<10) + `"}}`
	rt.hub.SetBodyBudget(400 << 10) // room for three such calls to wait, not eight
	const calls = 8
	replies := make(chan reply, calls)
	for i := range calls {
		go func() { replies <- rt.call(sid, i+2, "tools/call", args) }()
		time.Sleep(20 * time.Millisecond) // each queued, or refused, before the next
	}
	eventually(t, "the calls queued or refused", func() bool {
		return mcp.QueueLen(rt.h, sid)+len(replies) == calls
	})
	if n := mcp.QueueLen(rt.h, sid); n == 0 || n == calls {
		t.Fatalf("%d of %d calls wait in the queue, want some, not all", n, calls)
	}
	if rt.hub.BodyBytes() < int64(mcp.QueueLen(rt.h, sid))*(100<<10) {
		t.Errorf("the budget counts %d bytes for %d queued calls of 100 KiB", rt.hub.BodyBytes(), mcp.QueueLen(rt.h, sid))
	}
	f.release <- struct{}{}
	if r := <-held; r.text() != "released" {
		t.Fatalf("the call holding the session: %s", r.body)
	}
	served, refused := 0, 0
	for range calls {
		switch r := <-replies; {
		case r.status == http.StatusOK && r.errorCode() == 0:
			served++
		case r.status == http.StatusServiceUnavailable && strings.Contains(r.body, `"message":"Server at capacity"`):
			refused++
		default:
			t.Errorf("a call: %d %s", r.status, r.body)
		}
	}
	if served == 0 || refused == 0 || served+refused != calls {
		t.Errorf("%d served, %d refused, want both", served, refused)
	}
	eventually(t, "the queued calls give back what they counted", func() bool { return rt.hub.BodyBytes() == 0 })
}
