package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The session's GET channel and the pushes it carries, the SSE polling
// resumption of a call's stream, and requests to the client (behaviour.md
// §3, §5, §6c, §6d).

// --- the GET channel ----------------------------------------------------------

// poke pushes notifications/test/poke {n} to the session's channel.
func (s *testServer) poke(t *testing.T, url, sid string, n int) {
	t.Helper()
	s.callTool(t, url, sid, "notify", map[string]any{"n": n}).wantText(t, "notified")
}

// wantPoke reads the next channel event and checks it is poke n with id.
func wantPoke(t *testing.T, st *stream, n int, id string) {
	t.Helper()
	e := st.next()
	if e.ID != id || (e.Event != "" && e.Event != "message") {
		t.Errorf("event id %q type %q, want id %q type message", e.ID, e.Event, id)
	}
	m := e.message(t)
	if m.Method != "notifications/test/poke" || !jsonEqual(t, m.Params, fmt.Sprintf(`{"n":%d}`, n)) || len(m.ID) != 0 {
		t.Errorf("event = %s, want notifications/test/poke {n:%d}", e.Data, n)
	}
}

func TestSessionChannelReceivesPush(t *testing.T) { // notify_pushes_to_channel
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	if cc := get.Header.Get("Cache-Control"); !strings.Contains(cc, "no-cache") {
		t.Errorf("Cache-Control %q, want no-cache", cc)
	}
	s.poke(t, u, sid, 1)
	wantPoke(t, get, 1, "1")
	s.poke(t, u, sid, 2)
	wantPoke(t, get, 2, "2")
}

func TestNotifyUnencodableIsDropped(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	s.callTool(t, u, sid, "notify", map[string]any{"n": 1, "bad": true}).wantText(t, "notified")
	wantPoke(t, get, 1, "1") // the bad push used up no id
	s.logs.waitFor(t, "push dropped", 1)
	s.rpc(t, u, sid, 2, "ping", nil)
}

func TestNotifyWithoutChannelIsNoop(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	s.poke(t, u, sid, 1)
	s.rpc(t, u, sid, 2, "ping", nil)
}

func TestNotifyUnknownSessionIsNoop(t *testing.T) { // notify_unknown_session_is_noop, log_unknown_session_is_noop
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	s.callTool(t, u, sid, "notify", map[string]any{"n": 1, "to": "no-such-session"}).wantText(t, "notified")
	s.callTool(t, u, sid, "log", map[string]any{"level": "error", "to": "no-such-session"}).wantText(t, "logged")
	s.poke(t, u, sid, 2)
	wantPoke(t, get, 2, "1") // nothing reached this session, and no id was used
}

// log_level_severities: after logging/setLevel L, exactly the levels at or
// above L arrive, in the syslog order.
func TestLogLevelSeverities(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	levels := []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
	for i, min := range levels {
		s.result(t, u, sid, "logging/setLevel", map[string]any{"level": min}, nil)
		for _, l := range levels {
			s.log(t, u, sid, l)
		}
		s.poke(t, u, sid, i)
		var got []string
		for {
			m := get.nextMessage()
			if m.Method == "notifications/test/poke" {
				break
			}
			var p struct{ Level string }
			_ = json.Unmarshal(m.Params, &p)
			got = append(got, p.Level)
		}
		if want := levels[i:]; !reflect.DeepEqual(got, want) {
			t.Errorf("at level %s: got %v, want %v", min, got, want)
		}
	}
}

func TestSessionSecondChannel409(t *testing.T) { // detach_re_enables_attach
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	first := s.openGET(t, u, sid, nil)
	if r := s.do(t, u, call{Method: http.MethodGet, Session: sid}); r.Status != http.StatusConflict {
		t.Fatalf("a second GET: HTTP %d, want 409", r.Status)
	}
	first.close()
	deadline := time.Now().Add(waitLong)
	for {
		st := s.open(t, u, call{Method: http.MethodGet, Session: sid})
		if st.Status == http.StatusOK {
			s.poke(t, u, sid, 1)
			wantPoke(t, st, 1, "1")
			return
		}
		if st.Status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("GET after the first channel closed: HTTP %d, want 200", st.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSessionSurvivesChannelDisconnect(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	s.openGET(t, u, sid, nil).close()
	s.rpc(t, u, sid, 1, "ping", nil)
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
}

func TestSessionResumesWithLastEventID(t *testing.T) { // replay_after_last_event_id, fresh_attach_no_replay
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	s.poke(t, u, sid, 1) // no channel: buffered as id 1
	s.poke(t, u, sid, 2) // id 2
	get := s.openGET(t, u, sid, map[string]string{"Last-Event-ID": "1"})
	wantPoke(t, get, 2, "2")
	s.poke(t, u, sid, 3)
	wantPoke(t, get, 3, "3") // nothing else was replayed before it
	get.close()

	// A fresh GET (no Last-Event-ID) replays nothing; ids never reset.
	var fresh *stream
	deadline := time.Now().Add(waitLong)
	for fresh == nil {
		st := s.open(t, u, call{Method: http.MethodGet, Session: sid})
		switch {
		case st.Status == http.StatusOK:
			fresh = st
		case st.Status != http.StatusConflict || time.Now().After(deadline):
			t.Fatalf("fresh GET: HTTP %d, want 200", st.Status)
		default:
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.poke(t, u, sid, 4)
	wantPoke(t, fresh, 4, "4")
}

func TestSessionResumeNonIntegerLastEventID(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	s.poke(t, u, sid, 1)
	get := s.openGET(t, u, sid, map[string]string{"Last-Event-ID": "not-a-number"})
	s.poke(t, u, sid, 2)
	wantPoke(t, get, 2, "2")
}

// TestSessionResumeLastEventIDForms pins how the GET channel reads
// Last-Event-ID: integer text with an optional sign, as the original reads
// it; the events replayed are those with a greater id.
func TestSessionResumeLastEventIDForms(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	for _, tc := range []struct {
		lastID string
		want   []int // the pokes replayed, before poke 3
	}{
		{"-1", []int{1, 2}},
		{"-99999999999999999999", []int{1, 2}},
		{"+1", []int{2}},
		{"0", []int{1, 2}},
		{"2", nil},
		{"99999999999999999999", nil},
		{"1.0", nil},
		{"1e0", nil},
		{"--1", nil},
		{"-", nil},
	} {
		t.Run(tc.lastID, func(t *testing.T) {
			sid := s.initialize(t, u)
			s.poke(t, u, sid, 1)
			s.poke(t, u, sid, 2)
			get := s.openGET(t, u, sid, map[string]string{"Last-Event-ID": tc.lastID})
			for _, n := range tc.want {
				wantPoke(t, get, n, strconv.Itoa(n))
			}
			s.poke(t, u, sid, 3)
			wantPoke(t, get, 3, "3") // nothing else was replayed before it
			get.close()
		})
	}
}

func TestReplayBufferEvictsOldest(t *testing.T) {
	t.Parallel()
	s := startServer(t, "channel") // session_buffer_max 2
	u := s.url("channel")
	sid := s.initialize(t, u)
	for n := 1; n <= 3; n++ {
		s.poke(t, u, sid, n)
	}
	get := s.openGET(t, u, sid, map[string]string{"Last-Event-ID": "0"})
	wantPoke(t, get, 2, "2")
	wantPoke(t, get, 3, "3")
	s.poke(t, u, sid, 4)
	wantPoke(t, get, 4, "4")
}

func TestKeepalivePingsChannel(t *testing.T) {
	t.Parallel()
	s := startServer(t, "channel") // session_keepalive_ms 50
	u := s.url("channel")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	for {
		e := get.nextAny()
		if e.Data != "" {
			t.Fatalf("an idle channel sent %+v, want the comment \": keepalive\"", e)
		}
		if e.Comment != "" {
			if e.Comment != "keepalive" {
				t.Errorf("comment %q, want \"keepalive\"", e.Comment)
			}
			return
		}
	}
}

// keepalive_off_when_infinity: session_keepalive_ms = 0 in Lua.
func TestKeepaliveOffWhenInfinity(t *testing.T) {
	t.Parallel()
	s := startServer(t, "quiet") // session_keepalive_ms 0
	u := s.url("quiet")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	time.Sleep(300 * time.Millisecond)
	s.poke(t, u, sid, 1)
	if e := get.nextAny(); e.Comment != "" {
		t.Errorf("got comment %q with keep-alive off", e.Comment)
	} else if e.ID != "1" {
		t.Errorf("got event %+v, want the poke", e)
	}
}

func TestBroadcastReachesSubscribedSession(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	a, b := s.initialize(t, u), s.initialize(t, u)
	get := s.openGET(t, u, a, nil)
	s.callTool(t, u, b, "broadcast", nil).wantText(t, "broadcast")
	m := get.nextMessage()
	if m.Method != "notifications/tools/list_changed" || !jsonEqual(t, m.Params, `{}`) {
		t.Errorf("got %s %s, want notifications/tools/list_changed {}", m.Method, m.Params)
	}
}

func TestResourceSubscriptions(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	other := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	sub := func(method string) {
		t.Helper()
		if m := s.rpc(t, u, sid, 1, method, map[string]any{"uri": "mem://greeting"}); m.Error != nil || string(m.Result) != "{}" {
			t.Fatalf("%s: result %s error %v, want {}", method, m.Result, m.Error)
		}
	}
	touch := func() {
		s.callTool(t, u, other, "touch", map[string]any{"uri": "mem://greeting"}).wantText(t, "touched")
	}

	t.Run("resource_unsubscribe_without_subscribe", func(t *testing.T) { sub("resources/unsubscribe") })
	t.Run("resource_subscribe_receives_update", func(t *testing.T) { // session_resource_subscribe_pushes_update
		sub("resources/subscribe")
		touch()
		m := get.nextMessage()
		if m.Method != "notifications/resources/updated" || !jsonEqual(t, m.Params, `{"uri":"mem://greeting"}`) {
			t.Errorf("got %s %s, want notifications/resources/updated {uri: mem://greeting}", m.Method, m.Params)
		}
	})
	t.Run("resource_subscribe_idempotent", func(t *testing.T) {
		sub("resources/subscribe") // a second time
		touch()
		s.poke(t, u, sid, 1)
		if m := get.nextMessage(); m.Method != "notifications/resources/updated" {
			t.Fatalf("got %s, want one update", m.Method)
		}
		if m := get.nextMessage(); m.Method != "notifications/test/poke" {
			t.Errorf("got %s %s, want the poke (one update only)", m.Method, m.Params)
		}
	})
	t.Run("resource_unsubscribe_stops_updates", func(t *testing.T) {
		sub("resources/unsubscribe")
		touch()
		s.poke(t, u, sid, 2)
		if m := get.nextMessage(); m.Method != "notifications/test/poke" {
			t.Errorf("got %s %s after unsubscribe, want the poke", m.Method, m.Params)
		}
	})
}

// wantLog reads the next message and checks it is a log at level with data.
func wantLog(t *testing.T, st *stream, level, data string) {
	t.Helper()
	m := st.nextMessage()
	want := fmt.Sprintf(`{"level":%q,"data":%q}`, level, data)
	if m.Method != "notifications/message" || !jsonEqual(t, m.Params, want) {
		t.Errorf("got %s %s, want notifications/message %s", m.Method, m.Params, want)
	}
}

func (s *testServer) log(t *testing.T, url, sid, level string) {
	t.Helper()
	s.callTool(t, url, sid, "log", map[string]any{"level": level}).wantText(t, "logged")
}

func TestLogFilteredByDefaultLevel(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	s.log(t, u, sid, "debug")
	s.log(t, u, sid, "info")
	wantLog(t, get, "info", "log at info")
}

func TestSessionSetLevelFiltersLog(t *testing.T) { // log_respects_set_level
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	s.result(t, u, sid, "logging/setLevel", map[string]any{"level": "warning"}, nil)
	s.log(t, u, sid, "info")
	s.log(t, u, sid, "error")
	wantLog(t, get, "error", "log at error")
	s.result(t, u, sid, "logging/setLevel", map[string]any{"level": "debug"}, nil)
	s.log(t, u, sid, "debug")
	wantLog(t, get, "debug", "log at debug")
}

// mcp.log(ctx, ...) travels on the call's own stream: the JSON answer
// upgrades to SSE at the first message; a dropped log leaves it JSON.
func TestLogOnCallStream(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session", "stateless")
	for _, variant := range []string{"session", "stateless"} {
		t.Run(variant, func(t *testing.T) {
			u := s.url(variant)
			sid := ""
			var get *stream
			if variant == "session" {
				sid = s.initialize(t, u)
				get = s.openGET(t, u, sid, nil)
			}
			r := s.do(t, u, call{Body: toolCall(3, "log", map[string]any{"level": "warning", "data": map[string]any{"k": "v"}, "on": "call"}, nil), Session: sid})
			if r.contentType() != "text/event-stream" {
				t.Fatalf("Content-Type %q, want text/event-stream", r.Header.Get("Content-Type"))
			}
			msgs := r.messages(t)
			if len(msgs) != 2 || msgs[0].Method != "notifications/message" || !jsonEqual(t, msgs[0].Params, `{"level":"warning","data":{"k":"v"}}`) {
				t.Fatalf("messages = %+v, want the log then the result", msgs)
			}
			wantID(t, msgs[1], "3")
			r = s.do(t, u, call{Body: toolCall(4, "log", map[string]any{"level": "debug", "on": "call"}, nil), Session: sid})
			if r.contentType() != "application/json" {
				t.Errorf("a call whose only log was filtered answered %q, want application/json", r.Header.Get("Content-Type"))
			}
			if get != nil {
				s.poke(t, u, sid, 1)
				wantPoke(t, get, 1, "1") // the call's log never reached the channel
			}
		})
	}
}

// --- SSE polling (2025-11-25): a call's stream closed early and resumed ------

func TestSSEPollingReconnect(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	sid := s.initialize(t, u)
	channel := s.openGET(t, u, sid, nil) // as the SDKs hold one: resuming must not conflict with it
	st := s.open(t, u, call{Body: toolCall(1, "reconnect", nil, nil), Session: sid})
	if st.Status != http.StatusOK || !strings.HasPrefix(st.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("HTTP %d %q, want 200 text/event-stream; body:\n%s", st.Status, st.Header.Get("Content-Type"), st.Body)
	}
	events := st.ended()
	if len(events) == 0 {
		t.Fatalf("the stream closed without any event")
	}
	first := events[0]
	if !first.HasID || first.ID == "" || strings.TrimSpace(first.Data) != "" {
		t.Errorf("first event %+v, want a priming event (an id and empty data)", first)
	}
	var lastID, retry string
	for _, e := range events {
		if e.ID != "" {
			lastID = e.ID
		}
		if e.Retry != "" {
			retry = e.Retry
		}
	}
	if retry == "" {
		t.Errorf("no retry field before the server closed the stream")
	}
	noResult(t, events, "1")
	if lastID == "" {
		t.Fatalf("no event id to resume from")
	}

	resumed := s.open(t, u, call{Method: http.MethodGet, Session: sid, Header: map[string]string{"Last-Event-ID": lastID}})
	if resumed.Status != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID %q: HTTP %d, want 200; body:\n%s", lastID, resumed.Status, resumed.Body)
	}
	wantLog(t, resumed, "info", "after reconnect")
	m := resumed.nextMessage()
	wantID(t, m, "1")
	var res toolResult
	if err := json.Unmarshal(m.Result, &res); err != nil || m.Method != "" {
		t.Fatalf("resumed message %+v, want the result", m)
	}
	res.wantText(t, "reconnected")
	// The standalone channel saw none of it.
	s.poke(t, u, sid, 1)
	wantPoke(t, channel, 1, "1")
}

// --- requests to the client over raw HTTP -------------------------------------

// The server's elicitation/create travels on the call's stream; the client
// POSTs its answer (202) and the stream carries on to the result.
func TestElicitationRawRoundTrip(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	u := s.url("session")
	params := initializeParams(latestVersion)
	params["capabilities"] = map[string]any{"elicitation": map[string]any{}}
	r := s.do(t, u, call{Body: request(0, "initialize", params)})
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: HTTP %d, no session id", r.Status)
	}
	st := s.open(t, u, call{Body: toolCall(1, "elicit", map[string]any{"message": "name?"}, nil), Session: sid})
	if !strings.HasPrefix(st.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("Content-Type %q, want text/event-stream; body:\n%s", st.Header.Get("Content-Type"), st.Body)
	}
	req := st.nextMessage()
	if req.Method != "elicitation/create" || len(req.ID) == 0 {
		t.Fatalf("got %+v, want an elicitation/create request", req)
	}
	var p struct {
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requestedSchema"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Message != "name?" || p.RequestedSchema["type"] != "object" {
		t.Errorf("params = %s, want message \"name?\" and an object requestedSchema", req.Params)
	}
	answer := map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
	if a := s.do(t, u, call{Body: answer, Session: sid}); a.Status != http.StatusAccepted {
		t.Fatalf("POSTing the answer: HTTP %d, want 202", a.Status)
	}
	m := st.nextMessage()
	wantID(t, m, "1")
	var res toolResult
	_ = json.Unmarshal(m.Result, &res)
	res.wantText(t, "action=accept name=Ada")
	st.ended()
}
