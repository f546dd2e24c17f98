package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

func progressCall(id, token string, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"progress","arguments":` + args + `,"_meta":{"progressToken":` + token + `}}}`
}

func checkSSEHeaders(t *testing.T, h http.Header) {
	t.Helper()
	if h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" || h.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("SSE headers %v", h)
	}
}

// readStream reads a stream to its end and returns its events.
func readStream(s *sse) []event {
	var evs []event
	for ev := s.nextEvent(); !ev.eof; ev = s.nextEvent() {
		evs = append(evs, ev)
	}
	return evs
}

func TestProgressStreamStateless(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	s := rt.stream(context.Background(), "", progressCall("3", `"tok-1"`, `{}`))
	checkSSEHeaders(t, s.resp.Header)
	evs := readStream(s)
	if len(evs) != 3 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	for i, ev := range evs[:2] {
		m := ev.msg()
		p := m["params"].(map[string]any)
		if ev.name != "message" || ev.hasID || m["method"] != "notifications/progress" || p["progressToken"] != "tok-1" ||
			p["progress"] != float64(i+1) || !strings.HasPrefix(p["message"].(string), "step ") {
			t.Fatalf("progress event %d: %+v", i, ev)
		}
	}
	last := evs[2].msg()
	if last["id"] != float64(3) || !strings.Contains(evs[2].data, `"text":"done"`) {
		t.Fatalf("result event: %+v", evs[2])
	}
}

func TestProgressWithoutSSEIsBuffered(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: sessions})
		sid := ""
		if sessions {
			sid = rt.initialize()
		}
		headers := []string{"Accept: application/json"}
		if sid != "" {
			headers = append(headers, "Mcp-Session-Id: "+sid)
		}
		r := rt.post(progressCall("1", `"t"`, `{}`), headers...)
		if r.header.Get("Content-Type") != "application/json" || r.text() != "done" {
			t.Fatalf("sessions=%v: %s %s", sessions, r.header.Get("Content-Type"), r.body)
		}
	}
}

// TestProgressTokenAnyValue: a _meta.progressToken of any JSON value
// streams the call and comes back as sent in its notifications/progress,
// as the original's does (behaviour.md: "present (any JSON value)").
func TestProgressTokenAnyValue(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: sessions})
		var headers []string
		if sessions {
			headers = append(headers, "Mcp-Session-Id: "+rt.initialize())
		}
		for _, tok := range []string{`null`, `1.5`, `true`, `{"a":1}`} {
			r := rt.post(progressCall("1", tok, `{}`), headers...)
			if r.header.Get("Content-Type") != "text/event-stream" || !strings.Contains(r.body, `"progressToken":`+tok+`,`) {
				t.Fatalf("sessions=%v, token %s: %s %s", sessions, tok, r.header.Get("Content-Type"), r.body)
			}
		}
	}
}

// TestProgressStreamRunsOnSessionState: a progress token changes how the
// answer travels, never what the call does to the state (issue 9, item 11).
func TestProgressStreamRunsOnSessionState(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize() // 2025-06-18: no event ids
	rt.call(sid, 1, "tools/call", `{"name":"count"}`)
	evs := readStream(rt.stream(context.Background(), sid, progressCall("2", `42`, `{}`)))
	if len(evs) != 3 || evs[0].hasID {
		t.Fatalf("events %+v", evs)
	}
	if tok := evs[0].msg()["params"].(map[string]any)["progressToken"]; tok != float64(42) {
		t.Fatalf("token %v", tok)
	}
	if !strings.Contains(evs[2].data, `"text":"done"`) {
		t.Fatalf("result %+v", evs[2])
	}
	if taken, _ := f.snapshotCounts(); taken != 0 {
		t.Fatalf("%d snapshots taken for a call that is not concurrent", taken)
	}
	// The stream's state change (+100) landed.
	if r := rt.call(sid, 3, "tools/call", `{"name":"count"}`); r.text() != "102" {
		t.Fatalf("count after stream: %s", r.body)
	}
	// Streams and buffered calls share one queue: one call at a time.
	if n := f.maxConcurrent(); n != 1 {
		t.Fatalf("%d calls ran at once on one session", n)
	}
}

// TestProgressStreamQueuesInOrder: a stream waits for the call before it
// (with its SSE headers already sent) and counts against session_max_pending.
func TestProgressStreamQueuesInOrder(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionMaxPending: 1})
	sid := rt.initialize()
	running := callTool(rt, sid, 1, "wait", `{}`)
	waitStarted(t, f, "wait")
	s := rt.stream(context.Background(), sid, progressCall("2", `"t"`, `{}`))
	checkSSEHeaders(t, s.resp.Header)
	rt.queued(sid, 1)
	// The queue is full: the next stream is refused.
	if r := rt.post(progressCall("3", `"t"`, `{}`), "Mcp-Session-Id: "+sid); r.errorMessage() != "Session overloaded" || r.msg["id"] != float64(3) {
		t.Fatalf("stream past session_max_pending: %d %s", r.status, r.body)
	}
	s.none(50 * time.Millisecond) // nothing before the call runs
	f.release <- struct{}{}
	await(t, running)
	if evs := readStream(s); len(evs) != 3 || !strings.Contains(evs[2].data, `"done"`) {
		t.Fatalf("queued stream: %+v", evs)
	}
	if got := f.runOrder(); !slices.Equal(got, []string{"wait:", "progress:"}) {
		t.Fatalf("run order %v", got)
	}
}

// TestConcurrentTools: a concurrent tool runs on a snapshot, beside a busy
// queue, and its state changes are dropped; it counts against
// session_max_pending like a queued call.
func TestConcurrentTools(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		f := newFakeServer()
		rt := newRoute(t, f, mcp.Options{Sessions: true, SessionMaxPending: 2, ConcurrentTools: []string{"progress", "slowcount"}})
		sid := rt.initialize()
		rt.call(sid, 1, "tools/call", `{"name":"count"}`)
		running := callTool(rt, sid, 2, "wait", `{}`)
		waitStarted(t, f, "wait")
		queued := callTool(rt, sid, 3, "count", `{}`)
		rt.queued(sid, 1)
		// The queue is blocked; the concurrent call runs at once.
		if streaming {
			evs := readStream(rt.stream(context.Background(), sid, progressCall("4", `"t"`, `{}`)))
			if len(evs) != 3 || !strings.Contains(evs[2].data, `"done"`) {
				t.Fatalf("concurrent stream beside a blocked queue: %+v", evs)
			}
		} else if r := rt.call(sid, 4, "tools/call", `{"name":"progress"}`); r.text() != "done" {
			t.Fatalf("concurrent call beside a blocked queue: %s", r.body)
		}
		// One queued and one concurrent call fill session_max_pending 2.
		slow := callTool(rt, sid, 5, "slowcount", `{"ms":60000}`)
		waitStarted(t, f, "slowcount")
		if r := rt.call(sid, 6, "ping", ""); r.errorMessage() != "Session overloaded" {
			t.Fatalf("past session_max_pending: %s", r.body)
		}
		if r := rt.notify(sid, "notifications/cancelled", `{"requestId":5}`); r.status != 202 {
			t.Fatalf("cancel: %d", r.status)
		}
		if r := await(t, slow); r.errorMessage() != "Request cancelled" {
			t.Fatalf("cancelled concurrent call: %s", r.body)
		}
		f.release <- struct{}{}
		await(t, running)
		if r := await(t, queued); r.text() != "2" {
			t.Fatalf("queued count: %s", r.body)
		}
		// Neither the progress (+100) nor the slowcount landed.
		if r := rt.call(sid, 7, "tools/call", `{"name":"count"}`); r.text() != "3" {
			t.Fatalf("streaming=%v: count after concurrent calls: %s", streaming, r.body)
		}
		eventually(t, "snapshots closed", func() bool { taken, closed := f.snapshotCounts(); return taken == 2 && closed == 2 })
	}
}

func TestProgressStreamErrors(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: sessions})
		sid := ""
		if sessions {
			sid = rt.initialize()
		}
		for name, want := range map[string]string{"nope": `{"code":-32602,"message":"Unknown tool: nope"}`, "crash": `{"code":-32603,"message":"Internal error"}`} {
			body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + name + `","_meta":{"progressToken":"t"}}}`
			evs := readStream(rt.stream(context.Background(), sid, body))
			if len(evs) != 1 || !strings.Contains(evs[0].data, want) {
				t.Fatalf("sessions=%v %s: %+v", sessions, name, evs)
			}
		}
	}
}

func TestCancelProgressStream(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionTTL: 200 * time.Millisecond})
	sid := rt.initialize()
	s := rt.stream(context.Background(), sid, progressCall(`"s1"`, `"t"`, `{"block":true}`))
	if ev := s.nextEvent(); ev.msg()["method"] != "notifications/progress" {
		t.Fatalf("first event %+v", ev)
	}
	time.Sleep(300 * time.Millisecond) // past the TTL: the stream holds the session
	if r := rt.notify(sid, "notifications/cancelled", `{"requestId":"s1"}`); r.status != 202 {
		t.Fatalf("cancel: %d", r.status)
	}
	for ev := s.nextEvent(); !ev.eof; ev = s.nextEvent() {
		if ev.msg()["id"] != nil {
			t.Fatalf("a cancelled stream got a result: %+v", ev)
		}
	}
	// Cancelling the stream re-armed the TTL.
	if reason := <-waitClose(t, f); reason != "normal" {
		t.Fatalf("reason %q", reason)
	}
}

func TestDisconnectCancelsProgressStream(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize() // 2025-06-18: a disconnect cancels the stream
	ctx, cancel := context.WithCancel(context.Background())
	s := rt.stream(ctx, sid, progressCall("1", `"t"`, `{"block":true}`))
	s.nextEvent()
	cancel()
	s.close()
	eventually(t, "call stopped", func() bool { return f.activeCalls() == 0 })
	if r := rt.call(sid, 2, "ping", ""); r.status != 200 {
		t.Fatalf("ping after disconnect: %d", r.status)
	}
	stateless := newRoute(t, f, mcp.Options{})
	ctx, cancel = context.WithCancel(context.Background())
	s = stateless.stream(ctx, "", progressCall("1", `"t"`, `{"block":true}`))
	s.nextEvent()
	cancel()
	s.close()
	eventually(t, "stateless call stopped", func() bool { return f.activeCalls() == 0 })
	if r := stateless.call("", 2, "ping", ""); r.status != 200 {
		t.Fatalf("stateless ping after disconnect: %d", r.status)
	}
}

func TestDeleteReleasesStreams(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	get := newSSE(t, rt.openGet(context.Background(), sid))
	s := rt.stream(context.Background(), sid, progressCall("1", `"t"`, `{"block":true}`))
	s.nextEvent()
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != 204 {
		t.Fatalf("DELETE: %d", r.status)
	}
	for _, ev := range readStream(s) {
		if ev.msg()["id"] != nil {
			t.Fatalf("stream got a result after DELETE: %+v", ev)
		}
	}
	if ev := get.nextEvent(); !ev.eof {
		t.Fatalf("GET after DELETE: %+v", ev)
	}
}

func TestRelatedLogUpgradesToSSE(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: sessions})
		sid := ""
		if sessions {
			sid = rt.initialize()
		}
		body := func(levels string) string {
			return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log","arguments":{"levels":` + levels + `}}}`
		}
		// Nothing sent (debug is below the default info): plain JSON.
		r := rt.post(body(`["debug"]`), "Mcp-Session-Id: "+sid)
		if r.header.Get("Content-Type") != "application/json" || r.text() != "logged" {
			t.Fatalf("sessions=%v filtered log: %s", sessions, r.body)
		}
		// A message upgrades the answer to SSE: the log, then the result.
		evs := readStream(rt.stream(context.Background(), sid, body(`["debug","info","error"]`)))
		if len(evs) != 3 || !strings.Contains(evs[0].data, `"level":"info","data":"msg at info"`) ||
			!strings.Contains(evs[1].data, `"level":"error"`) || !strings.Contains(evs[2].data, `"text":"logged"`) {
			t.Fatalf("sessions=%v upgraded answer: %+v", sessions, evs)
		}
		// A client without SSE gets JSON; the log is dropped.
		r = rt.post(body(`["error"]`), "Mcp-Session-Id: "+sid, "Accept: application/json")
		if r.header.Get("Content-Type") != "application/json" || r.text() != "logged" {
			t.Fatalf("sessions=%v JSON-only client: %s", sessions, r.body)
		}
		if sessions {
			rt.call(sid, 2, "logging/setLevel", `{"level":"warning"}`)
			evs = readStream(rt.stream(context.Background(), sid, body(`["info","error"]`)))
			if len(evs) != 2 || !strings.Contains(evs[0].data, `"level":"error"`) {
				t.Fatalf("after setLevel warning: %+v", evs)
			}
		}
	}
}

// answerRequest reads the request the server sent on s and POSTs answer
// (a "result" or "error" member) for it.
func answerRequest(t *testing.T, rt *route, sid string, s *sse, wantMethod, answer string) reply {
	t.Helper()
	ev := s.nextEvent()
	m := ev.msg()
	id, _ := m["id"].(string)
	if m["method"] != wantMethod || !strings.HasPrefix(id, "s-") {
		t.Fatalf("server request %+v", ev)
	}
	idb, _ := json.Marshal(id)
	headers := []string{}
	if sid != "" {
		headers = append(headers, "Mcp-Session-Id: "+sid)
	}
	return rt.post(`{"jsonrpc":"2.0","id":`+string(idb)+`,`+answer+`}`, headers...)
}

func elicitBody(id, method string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"elicit","arguments":{"method":"` + method + `"}}}`
}

const clientWithCaps = `{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{},"sampling":{},"roots":{}},"clientInfo":{"name":"t","version":"1"}}`

func TestRequestToClientRoundTrip(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: sessions})
		sid := ""
		if sessions {
			sid = rt.initializeWith(clientWithCaps)
		}
		for _, method := range []string{"elicitation/create", "sampling/createMessage", "roots/list"} {
			s := rt.stream(context.Background(), sid, elicitBody("1", method))
			if r := answerRequest(t, rt, sid, s, method, `"result":{"action":"accept","content":{"name":"Ada"}}`); r.status != 202 {
				t.Fatalf("answer: %d %s", r.status, r.body)
			}
			evs := readStream(s)
			if len(evs) != 1 || !strings.Contains(evs[0].data, `answer {\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}`) {
				t.Fatalf("sessions=%v %s result: %+v", sessions, method, evs)
			}
		}
		s := rt.stream(context.Background(), sid, elicitBody("2", "elicitation/create"))
		answerRequest(t, rt, sid, s, "elicitation/create", `"error":{"code":-1,"message":"User rejected"}`)
		if evs := readStream(s); len(evs) != 1 || !strings.Contains(evs[0].data, "error -1 User rejected") {
			t.Fatalf("error answer: %+v", evs)
		}
	}
}

func TestRequestToClientNeedsCapability(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize() // declares no client capability
	for _, method := range []string{"elicitation/create", "sampling/createMessage", "roots/list"} {
		r := rt.post(elicitBody("1", method), "Mcp-Session-Id: "+sid)
		if r.header.Get("Content-Type") != "application/json" || r.text() != "no capability" {
			t.Fatalf("%s without capability: %s", method, r.body)
		}
	}
	// A client that cannot receive a stream cannot be asked either.
	sid = rt.initializeWith(clientWithCaps)
	r := rt.post(elicitBody("1", "roots/list"), "Mcp-Session-Id: "+sid, "Accept: application/json")
	if r.text() != "no capability" {
		t.Fatalf("JSON-only client: %s", r.body)
	}
}

func TestCancelWhileWaitingForClient(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initializeWith(clientWithCaps)
	s := rt.stream(context.Background(), sid, elicitBody("9", "elicitation/create"))
	ev := s.nextEvent()
	reqID, _ := ev.msg()["id"].(string)
	rt.notify(sid, "notifications/cancelled", `{"requestId":9}`)
	evs := readStream(s)
	if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].data, `"message":"Request cancelled"`) {
		t.Fatalf("cancelled call: %+v", evs)
	}
	// The wait was cleaned up: a late answer matches nothing.
	idb, _ := json.Marshal(reqID)
	eventually(t, "pending request removed", func() bool {
		return rt.post(`{"jsonrpc":"2.0","id":`+string(idb)+`,"result":{}}`, "Mcp-Session-Id: "+sid).status == 400
	})
	if r := rt.call(sid, 10, "ping", ""); r.status != 200 {
		t.Fatalf("ping: %d", r.status)
	}
}

func TestClientRequestTimesOutWithTheCall(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, RequestTimeout: 150 * time.Millisecond})
	sid := rt.initializeWith(clientWithCaps)
	s := rt.stream(context.Background(), sid, elicitBody("1", "elicitation/create"))
	s.nextEvent() // the request; never answered
	evs := readStream(s)
	if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].data, `"message":"Request timed out"`) {
		t.Fatalf("timed-out call: %+v", evs)
	}
	if r := rt.call(sid, 2, "ping", ""); r.status != 200 || r.errorCode() != 0 {
		t.Fatalf("ping after the wait timed out: %s", r.body)
	}
}

func TestGetChannel(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	resp := rt.openGet(context.Background(), sid)
	checkSSEHeaders(t, resp.Header)
	get := newSSE(t, resp)
	if r := rt.do(http.MethodGet, "", "Mcp-Session-Id: "+sid); r.status != 409 {
		t.Fatalf("second GET: %d", r.status)
	}
	rt.push().Notify(sid, "notifications/tools/list_changed", nil)
	rt.push().Notify(sid, "custom/thing", json.RawMessage(`{"x":1}`))
	rt.push().Notify(sid, "dropped", json.RawMessage(`{bad`)) // invalid params: dropped, no id used
	rt.push().Notify("unknown-session", "x", nil)
	rt.push().Log("unknown-session", "info", nil)
	rt.push().Log(sid, "info", json.RawMessage(`"hello"`))
	for i, want := range []string{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"custom/thing","params":{"x":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`} {
		ev := get.nextEvent()
		if ev.name != "message" || ev.id != string(rune('1'+i)) || ev.data != want {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	get.close()
	// The dead channel is replaced by the next GET.
	eventually(t, "a new GET attaches", func() bool {
		resp := rt.openGet(context.Background(), sid)
		if resp.StatusCode != 200 {
			resp.Body.Close()
			return false
		}
		get = newSSE(t, resp)
		return true
	})
	rt.push().Notify(sid, "again", nil)
	if ev := get.nextEvent(); ev.id != "4" {
		t.Fatalf("ids never reset: %+v", ev)
	}
	get.close()
	if r := rt.call(sid, 1, "ping", ""); r.status != 200 {
		t.Fatalf("session after channel disconnect: %d", r.status)
	}
}

// TestGetAccept checks that a session's GET opens its stream whatever its
// Accept header says, as the original's does (behaviour.md: "Accept is not
// checked"; only POST's is, a listed difference).
func TestGetAccept(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	for _, accept := range []string{
		"", // no Accept header
		"text/event-stream",
		"Text/Event-Stream; q=0.5",
		"*/*",
		"application/json",
		"text/html, application/json",
		"text/event-stream;q=0, application/json",
	} {
		t.Run(accept, func(t *testing.T) {
			sid := rt.initialize() // a session each: one GET channel per session
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp := rt.open(ctx, http.MethodGet, "", "Mcp-Session-Id: "+sid, "Accept: "+accept)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q, want the stream", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		})
	}
}

// TestGetChannelHandover: a client that drops its GET channel and reconnects
// at once is not refused by its own dead stream, although the server learns
// of that stream's end only after the new GET arrived; a truly second GET is
// still refused. Here the server learns of every GET's end 50 ms late, as
// a busy one may from its connection reader.
func TestGetChannelHandover(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionKeepAlive: -1})
	sid := rt.initialize()
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		defer cancel()
		stop := context.AfterFunc(r.Context(), func() { time.AfterFunc(50*time.Millisecond, cancel) })
		defer stop()
		rt.h.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer late.Close()
	lr := *rt
	lr.url = late.URL + "/mcp"

	ctx, drop := context.WithCancel(context.Background())
	first := lr.openGet(ctx, sid)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first GET: %d", first.StatusCode)
	}
	drop()
	first.Body.Close()
	again := lr.openGet(context.Background(), sid, "Last-Event-ID: 0")
	if again.StatusCode != http.StatusOK {
		t.Fatalf("GET right after the client dropped the first: %d, want 200", again.StatusCode)
	}
	get := newSSE(t, again)
	defer get.close()
	if r := rt.do(http.MethodGet, "", "Mcp-Session-Id: "+sid); r.status != http.StatusConflict {
		t.Fatalf("a second GET while one is attached: %d, want 409", r.status)
	}
	rt.push().Notify(sid, "notifications/marker", nil)
	if ev := get.nextEvent(); !strings.Contains(ev.data, "notifications/marker") {
		t.Fatalf("the reattached channel got %+v", ev)
	}
}

func TestGetChannelLogLevel(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	get := newSSE(t, rt.openGet(context.Background(), sid))
	defer get.close()
	rt.push().Log(sid, "debug", json.RawMessage(`1`))
	rt.push().Log(sid, "info", json.RawMessage(`2`))
	if ev := get.nextEvent(); !strings.Contains(ev.data, `"level":"info","data":2`) {
		t.Fatalf("default level: %+v", ev)
	}
	rt.call(sid, 1, "logging/setLevel", `{"level":"warning"}`)
	rt.push().Log(sid, "info", json.RawMessage(`3`))
	rt.push().Log(sid, "error", json.RawMessage(`4`))
	if ev := get.nextEvent(); !strings.Contains(ev.data, `"level":"error","data":4`) {
		t.Fatalf("after setLevel: %+v", ev)
	}
	// A log message pushed by notify or broadcast is filtered the same way.
	rt.push().Notify(sid, "notifications/message", json.RawMessage(`{"level":"info","data":5}`))
	rt.push().Broadcast("fixture", "notifications/message", json.RawMessage(`{"level":"notice","data":6}`))
	rt.push().Broadcast("fixture", "notifications/message", json.RawMessage(`{"level":"critical","data":7}`))
	rt.push().Notify(sid, "notifications/custom", json.RawMessage(`{"level":"debug"}`)) // not a log message
	if ev := get.nextEvent(); !strings.Contains(ev.data, `"level":"critical","data":7`) {
		t.Fatalf("pushed log messages after setLevel: %+v", ev)
	}
	if ev := get.nextEvent(); !strings.Contains(ev.data, `notifications/custom`) {
		t.Fatalf("a notification that is no log message: %+v", ev)
	}
}

func TestKeepAlive(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, SessionKeepAlive: 30 * time.Millisecond})
	sid := rt.initialize()
	get := newSSE(t, rt.openGet(context.Background(), sid))
	if ev := get.next(); ev.comment != "keepalive" || ev.hasID {
		t.Fatalf("keep-alive: %+v", ev)
	}
	get.close()

	off := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, SessionKeepAlive: -1})
	sid = off.initialize()
	get = newSSE(t, off.openGet(context.Background(), sid))
	defer get.close()
	time.Sleep(150 * time.Millisecond)
	off.push().Notify(sid, "ping/after/quiet", nil)
	if ev := get.next(); ev.comment != "" || ev.id != "1" {
		t.Fatalf("keep-alive disabled, got %+v first", ev)
	}
}

func TestReplay(t *testing.T) {
	tests := []struct {
		name      string
		bufferMax int
		pushes    int
		lastID    string // "" = fresh GET
		want      []string
	}{
		{"after last event id", 0, 2, "1", []string{"2"}},
		{"evicts oldest", 2, 3, "0", []string{"2", "3"}},
		{"fresh GET replays nothing", 0, 2, "", nil},
		{"non-integer id replays nothing", 0, 2, "abc", nil},
		{"future id replays nothing", 0, 2, "99", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, SessionBufferMax: tt.bufferMax})
			sid := rt.initialize()
			for i := 0; i < tt.pushes; i++ {
				rt.push().Notify(sid, "n", nil) // no channel attached: buffered
			}
			var headers []string
			if tt.lastID != "" {
				headers = append(headers, "Last-Event-ID: "+tt.lastID)
			}
			get := newSSE(t, rt.openGet(context.Background(), sid, headers...))
			defer get.close()
			rt.push().Notify(sid, "live", nil)
			var got []string
			for {
				ev := get.nextEvent()
				if strings.Contains(ev.data, "live") {
					break
				}
				got = append(got, ev.id)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("replayed %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBroadcastAndSubscriptions(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	member := rt.initialize()
	loner := rt.initializeWith(`{"protocolVersion":"2025-06-18","clientInfo":{"name":"loner","version":"1"}}`)
	a := newSSE(t, rt.openGet(context.Background(), member))
	defer a.close()
	b := newSSE(t, rt.openGet(context.Background(), loner))
	defer b.close()

	rt.push().Broadcast("fixture", "notifications/resources/list_changed", nil)
	rt.push().Broadcast("nobody", "x", nil)
	if ev := a.nextEvent(); !strings.Contains(ev.data, "list_changed") {
		t.Fatalf("member: %+v", ev)
	}
	if r := rt.call(loner, 1, "resources/subscribe", `{"uri":"mem://greeting"}`); r.body != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("subscribe: %s", r.body)
	}
	rt.call(loner, 2, "resources/subscribe", `{"uri":"mem://greeting"}`) // idempotent
	rt.push().ResourceUpdated("mem://greeting")
	rt.push().ResourceUpdated("mem://other")
	ev := b.nextEvent()
	if ev.data != `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://greeting"}}` || ev.id != "1" {
		t.Fatalf("subscriber: %+v", ev)
	}
	rt.call(loner, 3, "resources/unsubscribe", `{"uri":"mem://greeting"}`)
	rt.push().ResourceUpdated("mem://greeting")
	rt.push().Notify(loner, "marker", nil)
	if ev := b.nextEvent(); !strings.Contains(ev.data, "marker") {
		t.Fatalf("after unsubscribe: %+v", ev)
	}
	// The loner got no broadcast, the member no resource update: the member's
	// next event is its own marker.
	rt.push().Notify(member, "marker", nil)
	if ev := a.nextEvent(); !strings.Contains(ev.data, "marker") || ev.id != "2" {
		t.Fatalf("member after updates: %+v", ev)
	}
}

func TestSessionExitDropsMemberships(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	rt.call(sid, 1, "resources/subscribe", `{"uri":"mem://greeting"}`)
	rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid)
	// Pushes to the ended session are no-ops (and do not panic).
	rt.push().Broadcast("fixture", "x", nil)
	rt.push().ResourceUpdated("mem://greeting")
	rt.push().Notify(sid, "x", nil)
	rt.push().Log(sid, "error", nil)
}

const resumableInit = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}`

func TestResumablePostStream(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"closestream"}}`
	evs := readStream(rt.stream(context.Background(), sid, body))
	// Priming event, the message sent before CloseStream, then the response
	// ends early.
	if len(evs) != 2 || evs[0].data != "" || evs[0].retry != "1000" || !evs[0].hasID || !strings.Contains(evs[1].data, "before close") {
		t.Fatalf("before close: %+v", evs)
	}
	k, _, _ := strings.Cut(evs[0].id, "_")
	if evs[0].id != k+"_0" || evs[1].id != k+"_1" {
		t.Fatalf("event ids %q %q", evs[0].id, evs[1].id)
	}
	// The client resumes with GET + Last-Event-ID and gets the rest, the
	// result included; then that GET ends.
	resume := newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+evs[1].id))
	f.release <- struct{}{}
	rest := readStream(resume)
	if len(rest) != 2 || !strings.Contains(rest[0].data, "after close") || rest[0].id != k+"_2" ||
		!strings.Contains(rest[1].data, `"text":"resumed"`) || rest[1].id != k+"_3" {
		t.Fatalf("resumed: %+v", rest)
	}
	// The GET channel is independent of resumed streams.
	get := newSSE(t, rt.openGet(context.Background(), sid))
	rt.push().Notify(sid, "n", nil)
	if ev := get.nextEvent(); ev.id != "1" {
		t.Fatalf("GET channel id %+v", ev)
	}
	get.close()
	// The delivered stream is forgotten: resuming it yields nothing.
	if evs := readStream(newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+k+"_0"))); len(evs) != 0 {
		t.Fatalf("resume of a delivered stream: %+v", evs)
	}
}

func TestResumeReplaysFromAnyEvent(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	evs := readStream(rt.stream(context.Background(), sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"closestream"}}`))
	f.release <- struct{}{}
	eventually(t, "call done", func() bool { return rt.call(sid, 2, "ping", "").status == 200 })
	// From the priming event: everything, the result included.
	rest := readStream(newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+evs[0].id)))
	if len(rest) != 3 || !strings.Contains(rest[0].data, "before close") || !strings.Contains(rest[2].data, `"resumed"`) {
		t.Fatalf("replay: %+v", rest)
	}
}

// TestResumableStreamsShareTheSessionBudget: the replay buffers of a
// session's resumable POST streams hold at most SessionBufferBytes together;
// past it the oldest stream is forgotten, the others still resume.
func TestResumableStreamsShareTheSessionBudget(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionBufferBytes: 900})
	sid := rt.initializeWith(resumableInit)
	var primers []string
	for i := range 3 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"closestream"}}`, 10+i)
		evs := readStream(rt.stream(context.Background(), sid, body))
		if len(evs) != 2 || !evs[0].hasID {
			t.Fatalf("stream %d before close: %+v", i, evs)
		}
		primers = append(primers, evs[0].id)
		f.release <- struct{}{} // the rest goes to the replay buffer only
		eventually(t, "call done", func() bool { return rt.call(sid, 20+i, "ping", "").status == 200 })
	}
	// Each stream keeps about 375 bytes (a priming event and three
	// messages): three exceed 900, so the first was forgotten.
	if evs := readStream(newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+primers[0]))); len(evs) != 0 {
		t.Errorf("the oldest stream still resumes: %+v", evs)
	}
	for i, id := range primers[1:] {
		evs := readStream(newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+id)))
		if len(evs) != 3 || !strings.Contains(evs[2].data, `"resumed"`) {
			t.Errorf("stream %d resumed with %+v, want its three messages", i+1, evs)
		}
	}
}

// TestForgottenStreamsKeepNothing: a resumable stream the session forgot
// (past the session's budget) keeps no more events, though its call goes on
// sending: nobody can resume it. Each forgotten stream went on filling its
// own replay buffer up to SessionBufferBytes, so one session held that much
// per stream it had open (64 of them).
func TestForgottenStreamsKeepNothing(t *testing.T) {
	const streams, budget = 32, 1 << 20
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionBufferBytes: budget, SessionBufferMax: 1 << 20,
		ConcurrentTools: []string{"flood"}, SessionMaxPending: 2 * streams})
	sid := rt.initializeWith(resumableInit)
	before := heapInUse()
	for i := range streams {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"flood","arguments":{"close":true}}}`, i+1)
		readStream(rt.stream(context.Background(), sid, body)) // the priming event, then the response ends
	}
	// Every call floods 64 KiB a millisecond: each would fill a buffer of
	// the whole budget in ~20 ms.
	time.Sleep(500 * time.Millisecond)
	grown := int64(heapInUse()) - int64(before)
	// The session's budget, the newest stream's own buffer over it, and
	// each call's messages on their way (~100-200 KiB): measured 11-16 MiB
	// for 24-48 streams, and 56 MiB for 24 when each stream kept a budget.
	if grown > 12*budget+streams*384<<10 {
		t.Errorf("%d flooding streams hold %d MiB; the session's budget is %d MiB", streams, grown>>20, budget>>20)
	}
	rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid)
}

func TestResumableProgressStreamSurvivesDisconnect(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	ctx, cancel := context.WithCancel(context.Background())
	s := rt.stream(ctx, sid, progressCall("1", `"t"`, `{"steps":3,"ms":100}`))
	priming := s.nextEvent()
	first := s.nextEvent()
	if priming.data != "" || !first.hasID || !strings.Contains(first.data, "notifications/progress") {
		t.Fatalf("stream start: %+v %+v", priming, first)
	}
	cancel()
	s.close()
	// On 2025-11-25 a disconnect is not a cancellation: resume and finish.
	var rest []event
	eventually(t, "resume", func() bool {
		rest = readStream(newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+first.id)))
		return len(rest) > 0 && strings.Contains(rest[len(rest)-1].data, `"done"`)
	})
	// The call ran to its end on the session's state: its +100 landed.
	if r := rt.call(sid, 2, "tools/call", `{"name":"count"}`); r.text() != "101" {
		t.Fatalf("count after the resumed stream: %s", r.body)
	}
}

func TestOlderSessionsHaveNoEventIDsOnPost(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize() // 2025-06-18
	s := rt.stream(context.Background(), sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"closestream"}}`)
	first := s.nextEvent()
	// CloseStream is a no-op here (nothing to resume with): the answer stays whole.
	f.release <- struct{}{}
	evs := append([]event{first}, readStream(s)...)
	if len(evs) != 3 || !strings.Contains(evs[0].data, "before close") || !strings.Contains(evs[2].data, `"resumed"`) {
		t.Fatalf("events %+v", evs)
	}
	for _, ev := range evs {
		if ev.hasID || ev.retry != "" {
			t.Fatalf("event with an id: %+v", ev)
		}
	}
}

// TestWriteTimeoutDoesNotKillStreams: a server WriteTimeout bounds plain
// answers, never a live SSE stream.
func TestWriteTimeoutDoesNotKillStreams(t *testing.T) {
	f := newFakeServer()
	hub := mcp.NewHub(quietLogger())
	h := mcp.NewHandler(f, mcp.Options{Sessions: true, SessionKeepAlive: -1}, hub, quietLogger())
	srv := httptest.NewUnstartedServer(h)
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	rt := &route{t: t, f: f, h: h, srv: srv, url: srv.URL}
	defer h.Shutdown(context.Background())
	sid := rt.initialize()
	get := newSSE(t, rt.openGet(context.Background(), sid))
	defer get.close()
	s := rt.stream(context.Background(), sid, progressCall("1", `"t"`, `{"steps":2,"ms":250}`))
	time.Sleep(300 * time.Millisecond) // past the WriteTimeout
	hub.Route("").Notify(sid, "late", nil)
	if ev := get.nextEvent(); !strings.Contains(ev.data, "late") {
		t.Fatalf("GET channel after WriteTimeout: %+v", ev)
	}
	if evs := readStream(s); len(evs) != 3 || !strings.Contains(evs[2].data, `"done"`) {
		t.Fatalf("progress stream after WriteTimeout: %+v", evs)
	}
}

func TestResumeTakesOverAnAttachedStream(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	post := rt.stream(context.Background(), sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"logwait"}}`)
	post.nextEvent() // priming
	waiting := post.nextEvent()
	if !strings.Contains(waiting.data, "waiting") {
		t.Fatalf("log event %+v", waiting)
	}
	resume := newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+waiting.id))
	if evs := readStream(post); len(evs) != 0 {
		t.Fatalf("the old response got %+v after the takeover", evs)
	}
	f.release <- struct{}{}
	if evs := readStream(resume); len(evs) != 1 || !strings.Contains(evs[0].data, `"released"`) {
		t.Fatalf("resumed: %+v", evs)
	}
}

// TestConcurrentToolLeavesPendingFirst: a concurrent call leaves
// session_max_pending's count before its answer goes out, so a client that
// calls again as soon as it has the answer is never refused as overloaded.
func TestConcurrentToolLeavesPendingFirst(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionMaxPending: 1, ConcurrentTools: []string{"progress"}})
	sid := rt.initialize()
	for i := range 200 {
		if r := rt.call(sid, i, "tools/call", `{"name":"progress"}`); r.text() != "done" {
			t.Fatalf("call %d: %s", i, r.body)
		}
	}
}

// TestQueuedStreamsKeepTheRunningOne: calls queued behind a running one open
// their resumable streams as they are admitted: as many as
// session_max_pending allows (here 64 of 100) do not push the running
// call's stream out (it is the one with events to lose): a client that
// resumes it gets the rest and the answer.
func TestQueuedStreamsKeepTheRunningOne(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	evs := readStream(rt.stream(context.Background(), sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"closestream"}}`))
	if len(evs) != 2 || !strings.Contains(evs[1].data, "before close") {
		t.Fatalf("before close: %+v", evs)
	}
	var streams []*sse
	for i := range 64 {
		streams = append(streams, rt.stream(context.Background(), sid, progressCall(fmt.Sprint(100+i), fmt.Sprintf(`"p%d"`, i), `{}`)))
	}
	rt.queued(sid, 64)
	resume := newSSE(t, rt.openGet(context.Background(), sid, "Last-Event-ID: "+evs[1].id))
	f.release <- struct{}{}
	if rest := readStream(resume); len(rest) != 2 || !strings.Contains(rest[1].data, `"resumed"`) {
		t.Errorf("resume of the running call's stream got %+v, want \"after close\" and its result", rest)
	}
	for _, s := range streams {
		readStream(s)
	}
}
