package mcp_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// recorder is an mcp.Observer that keeps every report.
type recorder struct {
	mu      sync.Mutex
	ops     []mcp.Operation
	refused []mcp.Gate
	ended   []string
	dropped map[mcp.DropReason]int
	// forwarded are the directions of the forwarded requests reported.
	forwarded []mcp.Direction
}

func newRecorder() *recorder { return &recorder{dropped: map[mcp.DropReason]int{}} }

func (r *recorder) Operation(op mcp.Operation) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recorder) SessionEnded(route string, lifetime time.Duration) {
	r.mu.Lock()
	r.ended = append(r.ended, route)
	r.mu.Unlock()
}

func (r *recorder) Refused(route string, gate mcp.Gate) {
	r.mu.Lock()
	r.refused = append(r.refused, gate)
	r.mu.Unlock()
}

func (r *recorder) Forwarded(route string, dir mcp.Direction) {
	r.mu.Lock()
	r.forwarded = append(r.forwarded, dir)
	r.mu.Unlock()
}

func (r *recorder) PushesDropped(route string, reason mcp.DropReason, n int) {
	r.mu.Lock()
	r.dropped[reason] += n
	r.mu.Unlock()
}

// op returns the operations reported for method and tool, in order.
func (r *recorder) op(method, tool string) []mcp.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ops []mcp.Operation
	for _, o := range r.ops {
		if o.Method == method && o.Tool == tool {
			ops = append(ops, o)
		}
	}
	return ops
}

func (r *recorder) gates() []mcp.Gate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refused)
}

func TestObserverGates(t *testing.T) {
	auth401 := func(_ context.Context, _ *mcp.AuthRequest) int { return http.StatusUnauthorized }
	for _, tt := range []struct {
		name    string
		opts    mcp.Options
		remote  string
		host    string
		headers []string
		want    []mcp.Gate
	}{
		{name: "passes", want: nil},
		{name: "remote peer", remote: "203.0.113.7:5000", want: []mcp.Gate{mcp.GateRemoteAccess}},
		{name: "foreign host", host: "evil.example.com", want: []mcp.Gate{mcp.GateRemoteAccess}},
		{name: "origin", headers: []string{"Origin: http://evil.example.com"}, want: []mcp.Gate{mcp.GateOrigin}},
		{name: "auth", opts: mcp.Options{Auth: auth401}, want: []mcp.Gate{mcp.GateAuth}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder()
			hub := mcp.NewHub(quietLogger())
			hub.SetObserver(rec)
			tt.opts.Path = "/mcp"
			h := mcp.NewHandler(newFakeServer(), tt.opts, hub, quietLogger())
			remote, host := tt.remote, tt.host
			if remote == "" {
				remote = "127.0.0.1:4000"
			}
			if host == "" {
				host = "127.0.0.1:8750"
			}
			serveDirect(h, http.MethodPost, remote, host, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, tt.headers...)
			if got := rec.gates(); !slices.Equal(got, tt.want) {
				t.Errorf("refusals %v, want %v", got, tt.want)
			}
			if ops := rec.op("tools/list", ""); (len(ops) == 1) != (tt.want == nil) {
				t.Errorf("tools/list operations %+v: a refused request is no operation, a served one is", ops)
			}
		})
	}
}

func TestObserverSessionCaps(t *testing.T) {
	for _, tt := range []struct {
		name           string
		routeMax, hubN int
		want           mcp.Gate
	}{
		{"route", 1, 0, mcp.GateRouteSessions},
		{"process", 0, 1, mcp.GateProcessSessions},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, MaxSessions: tt.routeMax})
			rec := newRecorder()
			rt.hub.SetObserver(rec)
			rt.hub.SetMaxSessions(tt.hubN)
			rt.initialize()
			if r := rt.post(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); r.status != http.StatusServiceUnavailable {
				t.Fatalf("initialize past the cap: %d %s", r.status, r.body)
			}
			if got := rec.gates(); !slices.Equal(got, []mcp.Gate{tt.want}) {
				t.Errorf("refusals %v, want [%s]", got, tt.want)
			}
			ops := rec.op("initialize", "")
			if len(ops) != 2 || ops[0].ErrorType != "" || ops[1].ErrorType != "-32603" {
				t.Errorf("initialize operations %+v, want one success and one -32603", ops)
			}
		})
	}
}

// TestObserverSessionCalls follows one session: a call that runs, one
// refused past session_max_pending, one cancelled while queued, a tool the
// server does not list, the session's end.
func TestObserverSessionCalls(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionMaxPending: 1})
	rec := newRecorder()
	rt.hub.SetObserver(rec)
	sid := rt.initialize()
	running := callTool(rt, sid, 1, "wait", `{}`)
	waitStarted(t, f, "wait")
	queued := callTool(rt, sid, 2, "count", `{}`)
	rt.queued(sid, 1)
	if r := rt.call(sid, 3, "ping", ""); r.errorMessage() != "Session overloaded" {
		t.Fatalf("third request: %d %s", r.status, r.body)
	}
	rt.notify(sid, "notifications/cancelled", `{"requestId":2}`)
	if r := await(t, queued); r.errorMessage() != "Request cancelled" {
		t.Fatalf("cancelled queued call: %s", r.body)
	}
	f.release <- struct{}{}
	if r := await(t, running); r.text() != "released" {
		t.Fatalf("running: %s", r.body)
	}
	if r := rt.call(sid, 4, "tools/call", `{"name":"made-up"}`); r.errorCode() != -32602 {
		t.Fatalf("unknown tool: %s", r.body)
	}
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.status)
	}

	if got := rec.gates(); !slices.Equal(got, []mcp.Gate{mcp.GateSessionPending}) {
		t.Errorf("refusals %v, want [session_pending]", got)
	}
	for _, want := range []mcp.Operation{
		{Method: "tools/call", Tool: "wait", ErrorType: ""},
		{Method: "tools/call", Tool: mcp.OtherName, ErrorType: mcp.ErrorCancelled}, // count never ran
		{Method: "tools/call", Tool: mcp.OtherName, ErrorType: "-32602"},
	} {
		found := false
		for _, o := range rec.op(want.Method, want.Tool) {
			found = found || (o.ErrorType == want.ErrorType && o.Route == "/mcp" && o.Duration > 0)
		}
		if !found {
			t.Errorf("no operation %+v among %+v", want, rec.ops)
		}
	}
	if ops := rec.op("ping", ""); len(ops) != 0 {
		t.Errorf("the refused ping is an operation: %+v", ops)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Equal(rec.ended, []string{"/mcp"}) {
		t.Errorf("sessions ended: %v, want one on /mcp", rec.ended)
	}
}

// TestObserverDroppedPushes checks the pushes reported lost: to a session
// that is not there, with params that are not JSON, and evicted unread.
func TestObserverDroppedPushes(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, SessionBufferMax: 2})
	rec := newRecorder()
	rt.hub.SetObserver(rec)
	sid := rt.initialize()
	p := rt.push()
	for range 5 {
		p.Notify(sid, "notifications/message", []byte(`{"level":"info","data":1}`))
	}
	p.Notify("gone", "notifications/message", nil)
	p.Log("gone", "info", nil)
	p.Notify(sid, "notifications/message", []byte(`{oops`))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[mcp.DropReason]int{mcp.DropEvicted: 3, mcp.DropNoSession: 2, mcp.DropInvalid: 1}
	for reason, n := range want {
		if rec.dropped[reason] != n {
			t.Errorf("dropped %s: %d, want %d (all: %v)", reason, rec.dropped[reason], n, rec.dropped)
		}
	}
}
