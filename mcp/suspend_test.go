package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// savingServer is a fakeServer whose sessions can be saved (their counter)
// and resumed.
type savingServer struct{ *fakeServer }

type savingSession struct{ *fakeSession }

func (s savingServer) Init(ctx context.Context, params json.RawMessage, sessionID string) (mcp.Session, *mcp.InitResult, error) {
	sess, ir, err := s.fakeServer.Init(ctx, params, sessionID)
	if err != nil {
		return nil, nil, err
	}
	return savingSession{sess.(*fakeSession)}, ir, nil
}

func (s savingSession) Save() ([]byte, error) { return []byte(strconv.Itoa(s.counter)), nil }

func (s savingServer) Resume(ctx context.Context, sessionID string, has mcp.Capabilities, state []byte) (mcp.Session, error) {
	n, err := strconv.Atoi(string(state))
	if err != nil {
		return nil, err
	}
	return savingSession{&fakeSession{f: s.fakeServer, id: sessionID, counter: n}}, nil
}

// TestSuspendAndResume: Handler.Suspend leaves the sessions to a later
// handler of the route, with what the transport owns of them (the client's
// capabilities, log level, subscriptions, channels, event numbers) and
// their server's state, closing each with no reason; Resume brings them
// back before the route serves.
func TestSuspendAndResume(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	for range 2 {
		rt.call(sid, 1, "tools/call", `{"name":"count"}`)
	}
	rt.call(sid, 2, "logging/setLevel", `{"level":"error"}`)
	rt.call(sid, 3, "resources/subscribe", `{"uri":"mem://greeting"}`)
	rt.push().Notify(sid, "notifications/test", nil)
	saved, settle, err := rt.h.Suspend(context.Background())
	if err != nil || len(saved) != 1 {
		t.Fatalf("Suspend: %d saved, %v", len(saved), err)
	}
	// The saved session stays open until settle says it was kept.
	if got := f.closeReasons(); len(got) != 0 {
		t.Errorf("the saved session was closed (%q) before settle", got)
	}
	settle(true)
	sv := saved[0]
	if sv.ID != sid || sv.ProtocolVersion != "2025-11-25" || sv.LogLevel != "error" || string(sv.State) != "2" ||
		!slices.Equal(sv.Subscriptions, []string{"mem://greeting"}) || !slices.Equal(sv.Channels, []string{"fixture"}) ||
		sv.LastEventID != 1 || !strings.Contains(string(sv.ClientCapabilities), "elicitation") || !sv.Capabilities.Tools {
		t.Errorf("saved %+v", sv)
	}
	if got := f.closeReasons(); !slices.Equal(got, []string{""}) {
		t.Errorf("the saved session was closed with %q, want no reason", got)
	}
	// JSON carries it whole.
	b, _ := json.Marshal(saved)
	var back []mcp.SavedSession
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}

	f2 := newFakeServer()
	rt2 := newRouteOver(t, savingServer{f2}, f2, mcp.Options{Sessions: true})
	if n := rt2.h.Resume(context.Background(), back); n != 1 {
		t.Fatalf("Resume: %d", n)
	}
	if r := rt2.call(sid, 4, "tools/call", `{"name":"count"}`); r.text() != "3" {
		t.Errorf("the resumed session counts %q, want 3", r.text())
	}
	// The subscription holds; events are numbered on from 1; the log level
	// holds (an info line is not sent, an error line is).
	get := newSSE(t, rt2.openGet(context.Background(), sid, "Last-Event-ID: 1"))
	rt2.push().ResourceUpdated("mem://greeting")
	if ev := get.next(); ev.id != "2" || !strings.Contains(ev.data, "notifications/resources/updated") {
		t.Errorf("after the resume: %+v, want event 2, the resource update", ev)
	}
	rt2.push().Log(sid, "info", json.RawMessage(`"quiet"`))
	rt2.push().Log(sid, "error", json.RawMessage(`"loud"`))
	if ev := get.next(); !strings.Contains(ev.data, "loud") {
		t.Errorf("after the resume: %+v, want the error line only", ev)
	}
	get.close()
	// The same sessions again, and on a stateless route: nothing resumes.
	if n := rt2.h.Resume(context.Background(), back); n != 0 {
		t.Errorf("a live session's id resumed again: %d", n)
	}
	rt3 := newRouteOver(t, savingServer{newFakeServer()}, f, mcp.Options{})
	if n := rt3.h.Resume(context.Background(), back); n != 0 {
		t.Errorf("a stateless route resumed %d sessions", n)
	}
}

// TestResumeRefusesForeignIDs: only ids of the form this process mints
// resume; anything else in a saved file is not a session to serve.
func TestResumeRefusesForeignIDs(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Sessions: true, MaxSessions: 1})
	saved := []mcp.SavedSession{
		{ID: "x", ProtocolVersion: "2025-11-25", LogLevel: "info", State: []byte("0")},
		{ID: "node.0123456789abcdef0123456789abcdef", ProtocolVersion: "2025-11-25", LogLevel: "info", State: []byte("0")},
		{ID: strings.Repeat("a", 32), ProtocolVersion: "2025-11-25", LogLevel: "loud", State: []byte("0")},
		{ID: strings.Repeat("e", 32), ProtocolVersion: "2026-07-28", LogLevel: "info", State: []byte("0")},
		{ID: strings.Repeat("b", 32), ProtocolVersion: "2025-11-25", LogLevel: "info", State: []byte("zero")},
		{ID: strings.Repeat("c", 32), ProtocolVersion: "2025-11-25", LogLevel: "info", State: []byte("7")},
		{ID: strings.Repeat("d", 32), ProtocolVersion: "2025-11-25", LogLevel: "info", State: []byte("0")}, // past max_sessions
	}
	if n := rt.h.Resume(context.Background(), saved); n != 1 {
		t.Fatalf("Resume: %d, want only the c… session", n)
	}
	if r := rt.call(strings.Repeat("c", 32), 1, "tools/call", `{"name":"count"}`); r.text() != "8" {
		t.Errorf("count %q, want 8", r.text())
	}
	if r := rt.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Mcp-Session-Id: "+strings.Repeat("d", 32), "MCP-Protocol-Version: 2025-11-25"); r.status != http.StatusNotFound {
		t.Errorf("a session past max_sessions: HTTP %d, want 404", r.status)
	}
}

// TestSuspendEndsWhatIsLate: a session whose call outlives Suspend's
// context is not saved after Suspend returned (nobody would keep it): it
// ends as on Shutdown, its server told so.
func TestSuspendEndsWhatIsLate(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	done := async(func() reply { return rt.call(sid, 1, "tools/call", `{"name":"stubborn","arguments":{"ms":300}}`) })
	waitStarted(t, f, "stubborn")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	saved, settle, err := rt.h.Suspend(ctx)
	settle(true)
	if err == nil || len(saved) != 0 {
		t.Fatalf("Suspend: %d saved, %v; want none and the context's error", len(saved), err)
	}
	await(t, done)
	select {
	case reason := <-f.closed:
		if reason != "shutdown" {
			t.Errorf("the late session was closed with %q, want shutdown", reason)
		}
	case <-time.After(liveness):
		t.Fatal("the late session was never closed")
	}
}

// TestSuspendNotKept: what Suspend saved and could not be kept ends as on
// Shutdown: settle(false) closes the sessions with reason "shutdown", their
// server told (its terminate runs).
func TestSuspendNotKept(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Sessions: true})
	rt.initialize()
	rt.initialize()
	saved, settle, err := rt.h.Suspend(context.Background())
	if err != nil || len(saved) != 2 {
		t.Fatalf("Suspend: %d saved, %v", len(saved), err)
	}
	settle(false)
	if got := f.closeReasons(); !slices.Equal(got, []string{"shutdown", "shutdown"}) {
		t.Errorf("sessions not kept were closed with %q, want shutdown twice", got)
	}
}

// TestSuspendAnswersRetry: while Suspend waits for a slow call of one
// session, a request of another, saved for the next process, is answered 503
// (retry), not 404, which would tell its client to forget a session the next
// process resumes; and a DELETE does not end it here, where its terminate
// would not run, but is told to come again.
func TestSuspendAnswersRetry(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Sessions: true})
	kept := rt.initialize()
	slow := rt.initialize()
	done := async(func() reply { return rt.call(slow, 1, "tools/call", `{"name":"stubborn","arguments":{"ms":1000}}`) })
	waitStarted(t, f, "stubborn")
	type suspended struct {
		saved  []mcp.SavedSession
		settle func(bool)
		err    error
	}
	over := make(chan suspended, 1)
	go func() {
		saved, settle, err := rt.h.Suspend(context.Background())
		over <- suspended{saved, settle, err}
	}()
	for deadline := time.Now().Add(liveness); rt.h.SessionCount() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Suspend never started")
		}
	}
	head := []string{"Mcp-Session-Id: " + kept, "MCP-Protocol-Version: 2025-11-25"}
	for _, tc := range []struct {
		method, body string
	}{
		{http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"ping"}`},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	} {
		if r := rt.do(tc.method, tc.body, head...); r.status != http.StatusServiceUnavailable {
			t.Errorf("%s of a session being saved, during Suspend: %d %s, want 503", tc.method, r.status, r.body)
		}
	}
	res := <-over
	res.settle(true)
	await(t, done)
	if res.err != nil || !slices.ContainsFunc(res.saved, func(sv mcp.SavedSession) bool { return sv.ID == kept }) {
		t.Fatalf("Suspend: %v; the session asked for during it was not saved (%d saved)", res.err, len(res.saved))
	}
}

// TestResumeRefusesIDsLiveElsewhere: a saved id that another route of the
// hub resumed already does not resume again (a file edited or merged by
// hand): the two would share the hub's entry, and the first to end would
// never give its place under the process's session cap back.
func TestResumeRefusesIDsLiveElsewhere(t *testing.T) {
	hub := mcp.NewHub(quietLogger())
	hub.SetMaxSessions(2)
	fa, fb := newFakeServer(), newFakeServer()
	ha := mcp.NewHandler(savingServer{fa}, mcp.Options{Path: "/a", Sessions: true}, hub, quietLogger())
	hb := mcp.NewHandler(savingServer{fb}, mcp.Options{Path: "/b", Sessions: true}, hub, quietLogger())
	t.Cleanup(func() {
		_ = ha.Shutdown(context.Background())
		_ = hb.Shutdown(context.Background())
	})
	sv := []mcp.SavedSession{{ID: strings.Repeat("a", 32), ProtocolVersion: "2025-11-25", LogLevel: "info", State: []byte("0")}}
	if na, nb := ha.Resume(context.Background(), sv), hb.Resume(context.Background(), sv); na != 1 || nb != 0 {
		t.Fatalf("resumed on /a: %d, on /b: %d; want 1 and 0", na, nb)
	}
	if err := ha.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := hub.SessionSlots(); n != 0 {
		t.Errorf("after the only live session ended %d places under the session cap stay taken", n)
	}
}

// TestSuspendKeepsTasks: the tasks that are over when the route shut down,
// and those it stopped (failed: shutting down), carry over until their ttl:
// a session's with it, the route's others through SavedTasks; a later
// process answers their polls with their outcomes.
func TestSuspendKeepsTasks(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	sessionTask := func(id int, args string) string {
		r := rt.call(sid, id, "tools/call", `{"name":"task","arguments":`+args+`,"task":{"ttl":60000}}`)
		task, _ := r.result()["task"].(map[string]any)
		if task == nil {
			t.Fatalf("no task: %s", r.body)
		}
		return task["taskId"].(string)
	}
	done := sessionTask(2, `{"support":"optional"}`)
	rt.call(sid, 3, "tasks/result", `{"taskId":"`+done+`"}`) // over
	stopped := sessionTask(4, `{"support":"optional","wait":true}`)
	over := rt.startTask(`{"support":"optional"}`)
	rt.pollTask(over, "completed")
	running := rt.startTask(`{"support":"optional","keys":["q"]}`)
	rt.pollTask(running, "input_required")

	saved, settle, err := rt.h.Suspend(context.Background())
	settle(true)
	if err != nil || len(saved) != 1 {
		t.Fatalf("Suspend: %d saved, %v", len(saved), err)
	}
	// Through JSON, as the sessions file carries them.
	var back []mcp.SavedSession
	var routeTasks []mcp.SavedTask
	b1, _ := json.Marshal(saved)
	b2, _ := json.Marshal(rt.h.SavedTasks())
	if json.Unmarshal(b1, &back) != nil || json.Unmarshal(b2, &routeTasks) != nil {
		t.Fatal("the saved tasks do not come back from JSON")
	}
	if len(back[0].Tasks) != 2 || len(routeTasks) != 2 {
		t.Fatalf("saved %d tasks of the session and %d of the route, want 2 and 2", len(back[0].Tasks), len(routeTasks))
	}

	f2 := newFakeServer()
	rt2 := newRouteOver(t, savingServer{f2}, f2, mcp.Options{Sessions: true})
	if n := rt2.h.Resume(context.Background(), back); n != 1 {
		t.Fatalf("Resume: %d", n)
	}
	if n := rt2.h.ResumeTasks(routeTasks); n != 2 {
		t.Fatalf("ResumeTasks: %d", n)
	}
	if r := rt2.call(sid, 5, "tasks/result", `{"taskId":"`+done+`"}`); r.text() != "task=true" || !strings.Contains(r.body, `"io.modelcontextprotocol/related-task":{"taskId":"`+done+`"}`) {
		t.Errorf("tasks/result of a task over before the restart: %s", r.body)
	}
	if r := rt2.call(sid, 6, "tasks/get", `{"taskId":"`+stopped+`"}`); r.result()["status"] != "failed" {
		t.Errorf("tasks/get of a task the restart stopped: %s", r.body)
	}
	if r := rt2.call(sid, 7, "tasks/result", `{"taskId":"`+stopped+`"}`); r.errorCode() != -32603 || !strings.Contains(r.body, "shutting down") {
		t.Errorf("tasks/result of a task the restart stopped: %s", r.body)
	}
	if r := rt2.call(sid, 8, "tasks/list", `{}`); len(r.result()["tasks"].([]any)) != 2 {
		t.Errorf("tasks/list: %s", r.body)
	}
	if got := rt2.pollTask(over, "completed"); !strings.Contains(mustJSON(got["result"]), "task=true") {
		t.Errorf("a 2026-07-28 task over before the restart: %v", got)
	}
	if got := rt2.pollTask(running, "failed"); !strings.Contains(mustJSON(got["error"]), "shutting down") {
		t.Errorf("a 2026-07-28 task the restart stopped: %v", got)
	}
	// The ttl runs on from the task's creation.
	if c := rt2.h.TaskCounts(); c != [5]int{0, 0, 2, 2, 0} {
		t.Errorf("tasks after the resume: %v", c)
	}
}

// TestSuspendKeepsCredentialTasks: a task bound to the credential an auth
// hook accepted stays bound to it across a restart: its client polls it,
// another client's credential does not reach it.
func TestSuspendKeepsCredentialTasks(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Auth: acceptAll})
	r := rt.modernWith(metaTasks, "tools/call", `{"name":"task","arguments":{"support":"optional"}}`, "Authorization: Bearer alice")
	id, _ := r.result()["taskId"].(string)
	if id == "" {
		t.Fatalf("no task: %s", r.body)
	}
	get := func(rt *route, credential string) reply {
		return rt.modernWith(metaTasks, "tasks/get", `{"taskId":`+mustJSON(id)+`}`, "Mcp-Name: "+id, "Authorization: Bearer "+credential)
	}
	deadline := time.Now().Add(liveness)
	for get(rt, "alice").result()["status"] != "completed" {
		if time.Now().After(deadline) {
			t.Fatal("the task never completed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, settle, err := rt.h.Suspend(context.Background())
	settle(true)
	if err != nil {
		t.Fatal(err)
	}
	var saved []mcp.SavedTask
	b, _ := json.Marshal(rt.h.SavedTasks())
	if err := json.Unmarshal(b, &saved); err != nil || len(saved) != 1 || saved[0].Subject != "" || saved[0].Credential == "" {
		t.Fatalf("saved %s, %v: want one task with a credential and no subject", b, err)
	}

	f2 := newFakeServer()
	rt2 := newRouteOver(t, savingServer{f2}, f2, mcp.Options{Auth: acceptAll})
	if n := rt2.h.ResumeTasks(saved); n != 1 {
		t.Fatalf("ResumeTasks: %d", n)
	}
	if r := get(rt2, "bob"); r.errorCode() != -32602 {
		t.Errorf("another credential polling the resumed task: %d %s", r.status, r.body)
	}
	if r := get(rt2, "alice"); r.result()["status"] != "completed" {
		t.Errorf("its credential polling the resumed task: %d %s", r.status, r.body)
	}
}

// TestResumeTasksRefuses: a saved task that is not over, has an outcome
// that does not fit its status, an id of another form, or a ttl out of
// range is refused; one whose ttl has passed is gone, as it would be.
func TestResumeTasksRefuses(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	id := func(c string) string { return strings.Repeat(c, 22) }
	created := time.Now()
	saved := []mcp.SavedTask{
		{ID: id("a"), Created: created, TTLMs: 60000, Status: "working"},
		{ID: id("b"), Created: created, TTLMs: 60000, Status: "completed"},
		{ID: id("c"), Created: created, TTLMs: 60000, Status: "completed", Outcome: json.RawMessage(`[1]`)},
		{ID: id("d"), Created: created, TTLMs: 60000, Status: "cancelled", Outcome: json.RawMessage(`{}`)},
		{ID: "node.x", Created: created, TTLMs: 60000, Status: "cancelled"},
		{ID: id("e"), Created: created, TTLMs: 0, Status: "cancelled"},
		{ID: id("f"), Created: created, TTLMs: 48 * 3600 * 1000, Status: "cancelled"},
		{ID: id("g"), Created: created.Add(-time.Hour), TTLMs: 60000, Status: "cancelled"},
		{ID: id("h"), Created: created, TTLMs: 60000, Status: "completed", Outcome: json.RawMessage(`{"content":[]}`)},
	}
	if n := rt.h.ResumeTasks(saved); n != 1 {
		t.Errorf("ResumeTasks: %d, want 1", n)
	}
	if c := rt.h.TaskCounts(); c != [5]int{0, 0, 1, 0, 0} {
		t.Errorf("tasks resumed: %v, want the last one only", c)
	}
	// Its outcome counts under the route's bound, and leaves it with it.
	if n := rt.h.TaskOutcomeBytes(); n != len(`{"content":[]}`) {
		t.Errorf("the resumed outcome counts %d bytes", n)
	}
	if err := rt.h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := rt.h.TaskOutcomeBytes(); n != 0 {
		t.Errorf("after the store closed its outcomes count %d bytes", n)
	}
}

// TestResumedSubjectSessionStaysBound: a session an oauth route saved
// belongs to its token's subject; resumed on a route that no longer checks
// tokens (the oauth section removed before the restart), no request can
// show that subject, so none may use it (ownedBy fails closed), rather
// than anyone who knows its id.
func TestResumedSubjectSessionStaysBound(t *testing.T) {
	f := newFakeServer()
	rt := newRouteOver(t, savingServer{f}, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	saved, settle, err := rt.h.Suspend(context.Background())
	if err != nil || len(saved) != 1 {
		t.Fatalf("Suspend: %d saved, %v", len(saved), err)
	}
	settle(true)
	tests := []struct {
		name    string
		subject string
		want    int
	}{
		{"no subject", "", http.StatusOK},
		{"a subject", "alice", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv := saved[0]
			sv.Subject = tt.subject
			f2 := newFakeServer()
			rt2 := newRouteOver(t, savingServer{f2}, f2, mcp.Options{Sessions: true})
			if n := rt2.h.Resume(context.Background(), []mcp.SavedSession{sv}); n != 1 {
				t.Fatalf("Resume: %d", n)
			}
			r := rt2.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id: "+sid)
			if r.status != tt.want {
				t.Fatalf("tools/list on the resumed session: HTTP %d %s, want %d", r.status, r.body, tt.want)
			}
		})
	}
}
