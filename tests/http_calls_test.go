package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Calls over raw HTTP: streaming answers, cancellation, the buffered queue,
// request timeouts and idle expiry (behaviour.md §3, §6c, §6d).

// --- streaming calls ----------------------------------------------------------

// checkProgressStream checks a streamed progress call: progress notifications for
// token, then the result "done" as the last message.
func checkProgressStream(t *testing.T, r *reply, token string) {
	t.Helper()
	if r.Status != http.StatusOK || r.contentType() != "text/event-stream" {
		t.Fatalf("HTTP %d %q, want 200 text/event-stream; body:\n%s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	for _, e := range r.Events {
		if e.Data != "" && e.Event != "" && e.Event != "message" {
			t.Errorf("event type %q, want message", e.Event)
		}
	}
	msgs := r.messages(t)
	want := []string{
		`{"progressToken":` + token + `,"progress":1,"total":2,"message":"step 1/2"}`,
		`{"progressToken":` + token + `,"progress":2,"total":2,"message":"step 2/2"}`,
	}
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 2 progress notifications and the result:\n%s", len(msgs), r.Body)
	}
	for i, w := range want {
		if msgs[i].Method != "notifications/progress" || !jsonEqual(t, msgs[i].Params, w) {
			t.Errorf("message %d = %s %s, want notifications/progress %s", i, msgs[i].Method, msgs[i].Params, w)
		}
	}
	var res toolResult
	if err := json.Unmarshal(msgs[2].Result, &res); err != nil || msgs[2].Method != "" {
		t.Fatalf("last message %+v is not the result", msgs[2])
	}
	res.wantText(t, "done")
}

func TestPostStreamingProgress(t *testing.T) { // post_streaming_progress, streaming_tool_relays_progress
	t.Parallel()
	s := startServer(t, "stateless")
	checkProgressStream(t, s.do(t, s.url("stateless"), call{Body: toolCall(1, "progress", nil, "tok-1")}), `"tok-1"`)
}

func TestSessionStreamingProgress(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	checkProgressStream(t, s.do(t, u, call{Body: toolCall(1, "progress", nil, 42), Session: sid}), `42`)
}

func TestStreamingProgressParams(t *testing.T) { // progress_no_opts, progress_with_opts, progress_inert_noop
	t.Parallel()
	s := startServer(t, "stateless")
	u := s.url("stateless")
	msgs := s.do(t, u, call{Body: toolCall(1, "progress", map[string]any{"plain": true}, 7)}).messages(t)
	if len(msgs) != 2 || !jsonEqual(t, msgs[0].Params, `{"progressToken":7,"progress":1}`) {
		t.Errorf("messages = %+v, want one progress {progressToken:7, progress:1} and the result", msgs)
	}
	// No token: progress is a no-op and nothing streams.
	r := s.do(t, u, call{Body: toolCall(1, "progress", nil, nil)})
	if r.contentType() != "application/json" {
		t.Errorf("a call without a token answered %q, want application/json", r.Header.Get("Content-Type"))
	}
	var res toolResult
	_ = json.Unmarshal(r.response(t).Result, &res)
	res.wantText(t, "done")
}

func TestStreamingToolErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	sid := s.initialize(t, s.url("session"))
	tests := []struct {
		name, tool string
		args       map[string]any
		code       int
		msg        string
	}{
		{"streaming_tool_unknown", "nope", nil, -32602, "Unknown tool: nope"},
		{"streaming_tool_crash", "crash", nil, -32603, "Internal error"},
		{"streaming_tool_unencodable_result", "unencodable", map[string]any{"kind": "utf8"}, -32603, "Internal error"},
		{"streaming_tool_unencodable_progress", "progress", map[string]any{"bad": true}, -32603, "Internal error"},
	}
	for _, tt := range tests {
		for _, variant := range []string{"stateless", "session"} {
			t.Run(tt.name+"_"+variant, func(t *testing.T) {
				c := call{Body: toolCall(11, tt.tool, tt.args, "tok")}
				if variant == "session" {
					c.Session = sid
				}
				r := s.do(t, s.url(variant), c)
				if r.Status != http.StatusOK {
					t.Fatalf("HTTP %d, want 200", r.Status)
				}
				msgs := r.messages(t)
				for _, m := range msgs[:len(msgs)-1] {
					if m.Method == "notifications/progress" {
						t.Errorf("a progress notification was sent: %s", m.Params)
					}
				}
				last := msgs[len(msgs)-1]
				wantID(t, last, "11")
				wantError(t, last, tt.code, tt.msg)
			})
		}
	}
}

// A streaming call (a progress token) runs in its turn on the session's state
// and keeps its changes: asking for progress never changes what a call does.
func TestSessionStreamingKeepsState(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
	r := s.do(t, u, call{Body: toolCall(2, "count", nil, "tok"), Session: sid})
	if r.contentType() != "text/event-stream" {
		t.Fatalf("the streaming count answered %q, want text/event-stream", r.Header.Get("Content-Type"))
	}
	var res toolResult
	_ = json.Unmarshal(r.response(t).Result, &res)
	res.wantText(t, "2")
	s.callTool(t, u, sid, "count", nil).wantText(t, "3")
}

// A concurrent tool (route option concurrent_tools) runs on a snapshot of the
// state, streaming or not, and its changes are dropped.
func TestConcurrentToolRunsOnSnapshot(t *testing.T) {
	t.Parallel()
	s := startServer(t, "concurrent")
	u := s.url("concurrent")
	sid := s.initialize(t, u)
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
	r := s.do(t, u, call{Body: toolCall(2, "sleep", map[string]any{"ms": 10}, "tok"), Session: sid})
	var res toolResult
	_ = json.Unmarshal(r.response(t).Result, &res)
	res.wantText(t, "slept")
	s.callTool(t, u, sid, "sleep", map[string]any{"ms": 10}).wantText(t, "slept")
	// Neither sleep's increment landed.
	s.callTool(t, u, sid, "count", nil).wantText(t, "2")
	// A concurrent call runs beside a running one: the session still answers.
	st := s.streamingBlock(t, u, sid, 5)
	s.callTool(t, u, sid, "count", nil).wantText(t, "3")
	s.cancel(t, u, sid, 5)
	noResult(t, st.ended(), "5")
}

// streamingBlock starts a streaming block call and waits for its first
// progress event, so that the call is known to run.
func (s *testServer) streamingBlock(t *testing.T, url, sid string, id int) *stream {
	t.Helper()
	st := s.open(t, url, call{Body: toolCall(id, "block", nil, fmt.Sprintf("blk-%d", id)), Session: sid})
	if st.Status != http.StatusOK {
		t.Fatalf("streaming block: HTTP %d; body:\n%s", st.Status, st.Body)
	}
	if m := st.nextMessage(); m.Method != "notifications/progress" {
		t.Fatalf("first message %+v, want the block's progress", m)
	}
	return st
}

// noResult checks that a stream ended without a response to id.
func noResult(t *testing.T, events []sseEvent, id string) {
	t.Helper()
	for _, e := range events {
		if e.Data == "" {
			continue
		}
		if m := e.message(t); m.Method == "" && string(m.ID) == id {
			t.Errorf("the stream carried a response %s after all: %s", m.ID, e.Data)
		}
	}
}

func TestSessionCancelStopsStream(t *testing.T) { // cancel_stops_streaming_tool
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	st := s.streamingBlock(t, u, sid, 5)
	s.cancel(t, u, sid, 5)
	noResult(t, st.ended(), "5")
	s.rpc(t, u, sid, 6, "ping", nil)
}

func TestCancelUnknownIDIsNoop(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	s.cancel(t, u, sid, 12345)
	s.cancel(t, u, sid, "12345")
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
}

// A cancel matches the id exactly: integer 7 is not string "7".
func TestCancelMatchesIDType(t *testing.T) {
	t.Parallel()
	s := startServer(t, "concurrent") // the block runs beside the queue, so a ping can pass it
	u := s.url("concurrent")
	sid := s.initialize(t, u)
	st := s.streamingBlock(t, u, sid, 7)
	s.cancel(t, u, sid, "7")
	s.rpc(t, u, sid, 8, "ping", nil) // the session serves while the stream runs
	if ev := st.pendingMessages(); len(ev) != 0 {
		t.Errorf("the stream got %v after a cancel of \"7\"", ev)
	}
	select {
	case <-st.done:
		t.Errorf("a cancel of string \"7\" ended the call with integer id 7")
	default:
	}
	s.cancel(t, u, sid, 7)
	noResult(t, st.ended(), "7")
}

func TestSessionDisconnectCancelsStream(t *testing.T) {
	t.Parallel()
	s := startServer(t, "concurrent", "session")
	// A concurrent stream whose client goes away leaves the session serving.
	u := s.url("concurrent")
	sid := s.initialize(t, u)
	st := s.streamingBlock(t, u, sid, 5)
	st.close()
	s.rpc(t, u, sid, 6, "ping", nil)
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")

	// A 2025-11-25 stream in the queue is not cancelled by a disconnect (the
	// client may resume it): it holds the queue until the client cancels it.
	u = s.url("session")
	sid = s.initialize(t, u)
	st = s.streamingBlock(t, u, sid, 5)
	st.close()
	s.cancel(t, u, sid, 5)
	s.rpc(t, u, sid, 6, "ping", nil)
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
}

// wantSessionEnded checks the answer of a buffered call whose session ended
// under it: HTTP 200 with -32603 "Session ended".
func wantSessionEnded(t *testing.T, r *reply, id string) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("the held call: HTTP %d, want 200; body:\n%s", r.Status, r.Body)
	}
	m := r.response(t)
	if id != "" {
		wantID(t, m, id)
	}
	wantError(t, m, -32603, "Session ended")
}

func TestSessionDeleteReleasesStreamingPost(t *testing.T) { // terminate_kills_streaming_worker, terminate_releases_streaming_conn
	t.Parallel()
	s := startServer(t, "concurrent", "session")
	// Two concurrent calls, one streaming, one buffered.
	u := s.url("concurrent")
	sid := s.initialize(t, u)
	st := s.streamingBlock(t, u, sid, 5)
	buffered := s.async(t, u, call{Body: toolCall(6, "block", nil, nil), Session: sid})
	waitBlock(t, s, 6)
	if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d, want 204", r.Status)
	}
	noResult(t, st.ended(), "5")
	wantSessionEnded(t, buffered.wait(t), "6")
	s.logs.waitFor(t, terminated("normal", sid), 1)

	// A stream running in the queue, and a request queued behind it.
	u = s.url("session")
	sid = s.initialize(t, u)
	st = s.streamingBlock(t, u, sid, 7)
	queued := s.async(t, u, call{Body: request(8, "ping", nil), Session: sid})
	if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d, want 204", r.Status)
	}
	noResult(t, st.ended(), "7")
	if r := queued.wait(t); r.Status != http.StatusNotFound { // it may have come after the DELETE
		wantSessionEnded(t, r, "8")
	}
	s.logs.waitFor(t, terminated("normal", sid), 1)
}

func TestSessionDeleteReleasesChannelGet(t *testing.T) { // terminate_releases_channel
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	if r := s.do(t, u, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d, want 204", r.Status)
	}
	get.ended()
}

// session_death_releases_streaming_post, supervisor_shutdown_runs_terminate:
// Shutdown ends every session with reason "shutdown" and closes its streams.
func TestSessionShutdownReleasesStreams(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	a, b := s.initialize(t, u), s.initialize(t, u)
	st := s.streamingBlock(t, u, a, 5)
	get := s.openGET(t, u, b, nil)
	buffered := s.async(t, u, call{Body: toolCall(6, "block", nil, nil), Session: b})
	waitBlock(t, s, 6)
	if err := s.shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	noResult(t, st.ended(), "5")
	get.ended()
	wantSessionEnded(t, buffered.wait(t), "6")
	for _, sid := range []string{a, b} {
		if n := s.logs.count(terminated("shutdown", sid)); n != 1 {
			t.Errorf("session %s: terminate(\"shutdown\") ran %d times, want once", sid, n)
		}
	}
}

// --- buffered calls: queue, cancel, timeout ----------------------------------

func TestSessionBufferedCancelFreesRequest(t *testing.T) { // buffered_cancel_frees_caller, session_buffered_cancel_frees_request
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	held := s.async(t, u, call{Body: toolCall(5, "block", nil, nil), Session: sid})
	waitBlock(t, s, 5)
	s.cancel(t, u, sid, 5)
	r := held.wait(t)
	if r.Status != http.StatusOK {
		t.Fatalf("HTTP %d, want 200", r.Status)
	}
	m := r.response(t)
	wantID(t, m, "5")
	wantError(t, m, -32603, "Request cancelled")
	s.rpc(t, u, sid, 6, "ping", nil)
}

// buffered_requests_serialize: a queued ping waits behind a blocked call and
// runs once it is cancelled.
func TestBufferedRequestsSerialize(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	held := s.async(t, u, call{Body: toolCall(5, "block", nil, nil), Session: sid})
	waitBlock(t, s, 5)
	ping := s.async(t, u, call{Body: request(6, "ping", nil), Session: sid})
	time.Sleep(200 * time.Millisecond) // time for the ping to overtake, if it could
	if ping.done() {
		t.Fatalf("the ping was answered while the call before it was still running")
	}
	s.cancel(t, u, sid, 5)
	wantError(t, held.wait(t).response(t), -32603, "Request cancelled")
	if m := ping.wait(t).response(t); string(m.Result) != "{}" {
		t.Errorf("ping = %+v, want {}", m)
	}
}

func TestCancelQueuedBufferedRequest(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	active := s.async(t, u, call{Body: toolCall(5, "block", nil, nil), Session: sid})
	waitBlock(t, s, 5)
	queued := s.async(t, u, call{Body: toolCall(6, "count", nil, nil), Session: sid})
	// The queued request cannot be seen from outside: cancel until it answers
	// (a cancel for an id the session does not know yet is a no-op).
	deadline := time.Now().Add(waitLong)
	for !queued.done() {
		if time.Now().After(deadline) {
			t.Fatalf("the queued request did not answer its cancel")
		}
		s.cancel(t, u, sid, 6)
		time.Sleep(20 * time.Millisecond)
	}
	m := queued.wait(t).response(t)
	wantID(t, m, "6")
	wantError(t, m, -32603, "Request cancelled")
	if active.done() {
		t.Fatalf("cancelling the queued request ended the active one")
	}
	s.cancel(t, u, sid, 5)
	wantError(t, active.wait(t).response(t), -32603, "Request cancelled")
	s.callTool(t, u, sid, "count", nil).wantText(t, "1") // the cancelled count never ran
}

// buffered_queue_cap_rejects: with session_max_pending 1, one request queues
// behind the running one and the next is refused at once.
func TestBufferedQueueCapRejects(t *testing.T) {
	t.Parallel()
	s := startServer(t, "limits")
	u := s.url("limits")
	sid := s.initialize(t, u)
	active := s.async(t, u, call{Body: toolCall(5, "block", nil, nil), Session: sid})
	waitBlock(t, s, 5)
	a := s.async(t, u, call{Body: request(6, "ping", nil), Session: sid})
	b := s.async(t, u, call{Body: request(7, "ping", nil), Session: sid})
	// Exactly one of the two pings is refused at once, whichever came second.
	var refused, queued *pending
	deadline := time.Now().Add(waitLong)
	for refused == nil {
		switch {
		case a.done():
			refused, queued = a, b
		case b.done():
			refused, queued = b, a
		case time.Now().After(deadline):
			t.Fatalf("neither queued ping was refused")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wantError(t, refused.wait(t).response(t), -32603, "Session overloaded")
	s.cancel(t, u, sid, 5)
	wantError(t, active.wait(t).response(t), -32603, "Request cancelled")
	if m := queued.wait(t).response(t); m.Error != nil {
		t.Errorf("the queued ping = %+v, want a result", m.Error)
	}
}

// buffered_timeout_frees_queue_slot: a queued request that times out leaves
// the queue; the running one runs on.
func TestBufferedTimeoutFreesQueueSlot(t *testing.T) {
	t.Parallel()
	s := startServer(t, "limits")
	u := s.url("limits")
	sid := s.initialize(t, u)
	active := s.async(t, u, call{Body: toolCall(5, "block", nil, nil), Session: sid})
	waitBlock(t, s, 5)
	queued := s.async(t, u, call{Body: request(6, "ping", nil), Session: sid})
	wantError(t, queued.wait(t).response(t), -32603, "Request timed out")
	wantError(t, active.wait(t).response(t), -32603, "Request timed out")
	// The block still runs; its queue slot is free again: this ping queues
	// (and times out) instead of being refused.
	m := s.rpc(t, u, sid, 7, "ping", nil)
	wantError(t, m, -32603, "Request timed out")
	s.cancel(t, u, sid, 5)
	deadline := time.Now().Add(waitLong)
	for {
		m := s.rpc(t, u, sid, 8, "ping", nil)
		if m.Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ping after cancelling the block: %+v", m.Error)
		}
	}
}

// dispatch_bounded_timeout: the caller is freed after request_timeout_ms; the
// call runs on and its state lands.
func TestDispatchBoundedTimeout(t *testing.T) {
	t.Parallel()
	s := startServer(t, "timeout")
	u := s.url("timeout")
	sid := s.initialize(t, u)
	m := s.rpc(t, u, sid, 5, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 300}})
	wantID(t, m, "5")
	wantError(t, m, -32603, "Request timed out")
	s.logs.waitFor(t, "fixture slept id=5", 1)
	s.callTool(t, u, sid, "count", nil).wantText(t, "2")
}

// --- idle expiry ---------------------------------------------------------------

func TestIdleTTLTerminates(t *testing.T) { // idle_ttl_terminates, count_sweeps_dead_sessions
	t.Parallel()
	s := startServer(t, "ttl")
	u := s.url("ttl")
	sid := s.initialize(t, u)
	s.logs.waitFor(t, terminated("normal", sid), 1)
	if r := s.do(t, u, call{Body: request(1, "ping", nil), Session: sid}); r.Status != http.StatusNotFound {
		t.Errorf("a reaped session answers HTTP %d, want 404", r.Status)
	}
}

// held reports that no terminate ran for sid yet.
func held(t *testing.T, s *testServer, sid string) {
	t.Helper()
	if n := s.logs.count(terminated("normal", sid)); n != 0 {
		t.Fatalf("session %s was reaped while held", sid)
	}
}

func TestStreamingToolHoldsSession(t *testing.T) {
	t.Parallel()
	s := startServer(t, "ttl")
	u := s.url("ttl")
	sid := s.initialize(t, u)
	st := s.streamingBlock(t, u, sid, 5)
	time.Sleep(400 * time.Millisecond) // four TTLs
	held(t, s, sid)
	s.cancel(t, u, sid, 5)
	st.ended()
	s.logs.waitFor(t, terminated("normal", sid), 1)
}

func TestBufferedBlockDoesNotWedgeSession(t *testing.T) {
	t.Parallel()
	s := startServer(t, "ttl")
	u := s.url("ttl")
	sid := s.initialize(t, u)
	call5 := s.async(t, u, call{Body: toolCall(5, "block", nil, nil), Session: sid})
	waitBlock(t, s, 5)
	time.Sleep(400 * time.Millisecond)
	held(t, s, sid)
	s.cancel(t, u, sid, 5)
	wantError(t, call5.wait(t).response(t), -32603, "Request cancelled")
	s.logs.waitFor(t, terminated("normal", sid), 1)
}

func TestBufferedDispatchSurvivesShortTTL(t *testing.T) {
	t.Parallel()
	s := startServer(t, "ttl")
	u := s.url("ttl")
	sid := s.initialize(t, u)
	res := s.callTool(t, u, sid, "sleep", map[string]any{"ms": 300})
	res.wantText(t, "slept")
	s.logs.waitFor(t, terminated("normal", sid), 1)
}

func TestChannelCancelsIdleTTL(t *testing.T) { // channel_cancels_idle_ttl, detach_re_arms_ttl
	t.Parallel()
	s := startServer(t, "ttl")
	u := s.url("ttl")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	time.Sleep(400 * time.Millisecond)
	held(t, s, sid)
	get.close()
	s.logs.waitFor(t, terminated("normal", sid), 1)
	s.wantGone(t, u, sid)
}
