package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// fakeCluster joins hubs in one process: Send hands the push straight to the
// peer's hub; Forward records the node and answers 299, or serves the
// request with the peer's handler when it has one.
type fakeCluster struct {
	id    string
	peers map[string]*fakeCluster
	// handler serves the requests forwarded to this node (nil: 299).
	handler http.Handler

	mu        sync.Mutex
	forwarded []string
	bodies    []string // each forwarded POST's body, as Forward got it
	deliver   func([]byte)
	// flooded gets the error that ended a forwarded ?flood=1 stream.
	flooded chan error
}

func (c *fakeCluster) NodeID() string { return c.id }

func (c *fakeCluster) Forward(w http.ResponseWriter, r *http.Request, node string, stop <-chan struct{}) {
	// The forward ends when the client leaves or stop closes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	r = r.WithContext(ctx)
	if r.Method == http.MethodPost {
		// The handler hands the body over read, with its length.
		b, err := io.ReadAll(r.Body)
		if err != nil || int64(len(b)) != r.ContentLength {
			panic(fmt.Sprintf("forwarded body: %d bytes, %v; ContentLength %d", len(b), err, r.ContentLength))
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		c.mu.Lock()
		c.bodies = append(c.bodies, string(b))
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.forwarded = append(c.forwarded, r.Method+" "+node)
	c.mu.Unlock()
	if p := c.peers[node]; p != nil && p.handler != nil {
		p.handler.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Get("flood") != "" {
		// A forwarded stream the owner keeps writing to until a write
		// fails; the error goes to c.flooded.
		w.WriteHeader(http.StatusOK)
		chunk := bytes.Repeat([]byte("data: x\n\n"), 8<<10)
		rc := http.NewResponseController(w)
		var err error
		for err == nil {
			if _, err = w.Write(chunk); err == nil {
				err = rc.Flush()
			}
		}
		c.flooded <- err
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Get("hold") != "" {
		// A forwarded stream: open until the request's context ends.
		w.WriteHeader(299)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	w.WriteHeader(299)
}

func (c *fakeCluster) Send(node string, push []byte) {
	if p := c.peers[node]; p != nil {
		p.mu.Lock()
		d := p.deliver
		p.mu.Unlock()
		d(push)
	}
}

func (c *fakeCluster) Attach(deliver func([]byte)) {
	c.mu.Lock()
	c.deliver = deliver
	c.mu.Unlock()
}

// clusterKey is the state key the nodes of a test cluster share.
var clusterKey = []byte("0123456789abcdef0123456789abcdef")

// signedBy returns the headers of a request node forwards for session,
// made over plain HTTP, signed with key at the time at, as "Name: value"
// lines.
func signedBy(key []byte, node, method, session, client string, at time.Time) []string {
	return signedOver("http", key, node, method, session, client, at)
}

// signedOver is signedBy for a request the client made on scheme.
func signedOver(scheme string, key []byte, node, method, session, client string, at time.Time) []string {
	var out []string
	for k, v := range mcp.SignForward(key, node, method, "/mcp", session, client, scheme, at) {
		out = append(out, k+": "+v[0])
	}
	return out
}

// newClusterRoute is newRoute on a hub joined to c.
func newClusterRoute(t *testing.T, c mcp.Cluster) *route {
	t.Helper()
	return newClusterRouteWith(t, c, mcp.Options{Path: "/mcp", Sessions: true})
}

// newClusterRouteWith serves a fake server with opts on a hub joined to c,
// with the cluster's state key.
func newClusterRouteWith(t *testing.T, c mcp.Cluster, opts mcp.Options) *route {
	t.Helper()
	f := newFakeServer()
	hub := mcp.NewHub(quietLogger())
	if err := hub.SetStateKey(clusterKey); err != nil {
		t.Fatal(err)
	}
	hub.SetCluster(c)
	h := mcp.NewHandler(f, opts, hub, quietLogger())
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), liveness)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		srv.CloseClientConnections()
		srv.Close()
	})
	return &route{t: t, f: f, h: h, hub: hub, srv: srv, url: srv.URL + opts.Path}
}

// TestClusterSessions: session ids name their node; a request for another
// node's session is forwarded (once: never a forwarded one); a push for
// another node's session reaches it through the cluster.
func TestClusterSessions(t *testing.T) {
	peers := map[string]*fakeCluster{}
	ca, cb := &fakeCluster{id: "a", peers: peers}, &fakeCluster{id: "b", peers: peers}
	peers["a"], peers["b"] = ca, cb
	a, b := newClusterRoute(t, ca), newClusterRoute(t, cb)

	sa, sb := a.initialize(), b.initialize()
	if !strings.HasPrefix(sa, "a.") || !strings.HasPrefix(sb, "b.") {
		t.Fatalf("session ids %q and %q do not name their nodes", sa, sb)
	}

	for _, tc := range []struct {
		name    string
		method  string
		sid     string
		headers []string
		status  int
	}{
		{"own session", http.MethodPost, sa, nil, http.StatusOK},
		{"other node's session", http.MethodPost, sb, nil, 299},
		{"other node's GET", http.MethodGet, sb, []string{"Accept: text/event-stream"}, 299},
		{"other node's DELETE", http.MethodDelete, sb, nil, 299},
		{"already forwarded, unsigned", http.MethodPost, sb, []string{mcp.ForwardedHeader + ": b"}, http.StatusForbidden},
		{"already forwarded, signed", http.MethodPost, sb, signedBy(clusterKey, "b", http.MethodPost, sb, "127.0.0.1:1", time.Now()), http.StatusNotFound},
		{"id naming no node", http.MethodPost, "0123456789abcdef", nil, http.StatusNotFound},
		{"bad node id", http.MethodPost, "../b." + strings.Repeat("0", 32), nil, http.StatusNotFound},
		{"short id", http.MethodPost, "b.0123", nil, http.StatusNotFound},
		{"not hex", http.MethodPost, "b." + strings.Repeat("z", 32), nil, http.StatusNotFound},
		{"2026-07-28 era", http.MethodPost, sb, []string{"Mcp-Protocol-Version: 2026-07-28"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := append([]string{"Mcp-Session-Id: " + tc.sid, "Mcp-Protocol-Version: 2025-06-18"}, tc.headers...)
			r := a.do(tc.method, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, headers...)
			if tc.status == 0 { // served here, whatever the answer
				if r.status == 299 {
					t.Errorf("%s: forwarded", tc.name)
				}
				return
			}
			if r.status != tc.status {
				t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
			}
		})
	}
	ca.mu.Lock()
	got := strings.Join(ca.forwarded, ",")
	ca.mu.Unlock()
	if got != "POST b,GET b,DELETE b" {
		t.Errorf("forwarded %q", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	get := newSSE(t, b.openGet(ctx, sb, "Mcp-Protocol-Version: 2025-06-18"))
	defer get.close()
	a.push().Log(sb, "debug", []byte(`"below the default level"`)) // filtered by the owner
	a.push().Notify(sb, "notifications/test/poke", []byte(`{"n":1}`))
	a.push().Log(sb, "error", []byte(`"from a"`))
	var methods []string
	for len(methods) < 2 {
		e := get.next()
		if e.eof {
			t.Fatal("GET stream ended")
		}
		if e.data == "" {
			continue
		}
		m := e.msg()
		methods = append(methods, m["method"].(string))
	}
	if strings.Join(methods, ",") != "notifications/test/poke,notifications/message" {
		t.Errorf("b's session received %v", methods)
	}
}

// TestClusterShutdownEndsForwardedStreams: Shutdown ends the streams a node
// forwards for other nodes' sessions (they would hold the listener's
// graceful shutdown open), and refuses new forwards.
func TestClusterShutdownEndsForwardedStreams(t *testing.T) {
	peers := map[string]*fakeCluster{}
	ca := &fakeCluster{id: "a", peers: peers}
	peers["a"] = ca
	a := newClusterRoute(t, ca)
	sid := "b." + strings.Repeat("0", 32)
	req, _ := http.NewRequest(http.MethodGet, a.url+"?hold=1", nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 299 {
		t.Fatalf("status %d, want the forwarded stream", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	if err := a.h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a forwarded stream open: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the forwarded stream did not end cleanly: %v", err)
	}
	r := a.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, "Mcp-Session-Id: "+sid)
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("a forward after Shutdown: status %d, want 503", r.status)
	}
}

// TestClusterForwardSlowReader: the entry node's writes of a forwarded
// answer are bounded by WriteTimeout, as its own are: a client that stops
// reading a forwarded stream has it cut, and does not hold the forward (its
// goroutine, the client's connection and one to the owner) for ever.
func TestClusterForwardSlowReader(t *testing.T) {
	ca := &fakeCluster{id: "a", peers: map[string]*fakeCluster{}, flooded: make(chan error, 1)}
	a := newClusterRouteWith(t, ca, mcp.Options{Path: "/mcp", Sessions: true, WriteTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", a.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The client asks for the stream and never reads it.
	sid := "b." + strings.Repeat("0", 32)
	fmt.Fprintf(conn, "GET /mcp?flood=1 HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n",
		a.srv.Listener.Addr(), sid)
	select {
	case err := <-ca.flooded:
		if err == nil {
			t.Fatal("the flood ended without an error")
		}
	case <-time.After(liveness):
		t.Fatal("a forwarded stream nobody reads still writes after 10 s (WriteTimeout 200 ms)")
	}
}

// TestClusterForwardBody: a POST for another node's session has its body
// read on the entry node within the route's bounds, as the owner would:
// Forward gets it in memory; one too large gets 413 and is not forwarded.
func TestClusterForwardBody(t *testing.T) {
	ca := &fakeCluster{id: "a", peers: map[string]*fakeCluster{}}
	a := newClusterRouteWith(t, ca, mcp.Options{Path: "/mcp", Sessions: true, MaxBodyBytes: 64})
	sid := "Mcp-Session-Id: b." + strings.Repeat("0", 32)
	small := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 64) + `"}}`
	tests := []struct {
		name, body string
		chunked    bool
		wantStatus int
		wantBody   string // as forwarded; "" when not forwarded
	}{
		{name: "small", body: small, wantStatus: 299, wantBody: small},
		{name: "small chunked", body: small, chunked: true, wantStatus: 299, wantBody: small},
		{name: "too large", body: big, wantStatus: http.StatusRequestEntityTooLarge},
		{name: "too large chunked", body: big, chunked: true, wantStatus: http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca.mu.Lock()
			ca.bodies = nil
			ca.mu.Unlock()
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, a.url, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			k, v, _ := strings.Cut(sid, ": ")
			req.Header.Set(k, v)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			ca.mu.Lock()
			bodies := ca.bodies
			ca.mu.Unlock()
			if tt.wantBody == "" && len(bodies) != 0 || tt.wantBody != "" && (len(bodies) != 1 || bodies[0] != tt.wantBody) {
				t.Errorf("forwarded bodies %q, want %q", bodies, tt.wantBody)
			}
		})
	}
}

// TestClusterForwardTrust: the owner serves a request another node forwarded
// only when its signature holds, exempt from the remote-access and Origin
// gates (the entry node applied them), with the client's address; the auth
// hook runs once, on the owner; a missing, forged, stale or misapplied
// signature gets 403 with a JSON-RPC error.
func TestClusterForwardTrust(t *testing.T) {
	type seen struct {
		calls  int
		remote string
	}
	var mu sync.Mutex
	hooks := map[string]*seen{"a": {}, "b": {}}
	hook := func(node string) func(context.Context, *mcp.AuthRequest) int {
		return func(_ context.Context, r *mcp.AuthRequest) int {
			mu.Lock()
			defer mu.Unlock()
			hooks[node].calls++
			hooks[node].remote = r.RemoteAddr
			return 0
		}
	}
	calls := func(node string) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		return hooks[node].calls, hooks[node].remote
	}
	peers := map[string]*fakeCluster{}
	ca, cb := &fakeCluster{id: "a", peers: peers}, &fakeCluster{id: "b", peers: peers}
	peers["a"], peers["b"] = ca, cb
	a := newClusterRouteWith(t, ca, mcp.Options{Path: "/mcp", Sessions: true, Auth: hook("a")})
	b := newClusterRouteWith(t, cb, mcp.Options{Path: "/mcp", Sessions: true, Auth: hook("b")})
	cb.handler = b.h // a forwards to b in process
	recA, recB := newRecorder(), newRecorder()
	a.hub.SetObserver(recA) // before the first request
	b.hub.SetObserver(recB)
	sb := b.initialize()

	t.Run("through the entry node, the auth hook runs once, on the owner", func(t *testing.T) {
		a0, _ := calls("a")
		b0, _ := calls("b")
		if r := a.call(sb, 2, "ping", ""); r.status != http.StatusOK {
			t.Fatalf("forwarded ping: %d %s", r.status, r.body)
		}
		a1, _ := calls("a")
		b1, remote := calls("b")
		if a1 != a0 || b1 != b0+1 {
			t.Errorf("auth hook calls: entry %d, owner %d; want 0 and 1", a1-a0, b1-b0)
		}
		if !strings.HasPrefix(remote, "127.0.0.1:") {
			t.Errorf("the owner's hook saw remote %q, want the client's", remote)
		}
		recA.mu.Lock()
		recB.mu.Lock()
		if !slices.Equal(recA.forwarded, []mcp.Direction{mcp.ForwardedOut}) || !slices.Equal(recB.forwarded, []mcp.Direction{mcp.ForwardedIn}) {
			t.Errorf("observed forwards: entry %v, owner %v; want [out] and [in]", recA.forwarded, recB.forwarded)
		}
		recB.mu.Unlock()
		recA.mu.Unlock()
	})

	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	base := []string{"Mcp-Session-Id: " + sb, "Mcp-Protocol-Version: 2025-06-18"}
	now := time.Now()
	client := "203.0.113.7:4000" // remote: b's gates would refuse it
	otherKey := []byte("another key, not the cluster's..")
	for _, tc := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"signed, remote client and foreign Origin", append(signedBy(clusterKey, "a", http.MethodPost, sb, client, now), "Origin: https://evil.example"), http.StatusOK},
		{"signed a minute ago", signedBy(clusterKey, "a", http.MethodPost, sb, client, now.Add(-time.Minute)), http.StatusOK},
		{"unsigned", []string{mcp.ForwardedHeader + ": a", mcp.ForwardedForHeader + ": " + client}, http.StatusForbidden},
		{"another key", signedBy(otherKey, "a", http.MethodPost, sb, client, now), http.StatusForbidden},
		{"signed for another method", signedBy(clusterKey, "a", http.MethodDelete, sb, client, now), http.StatusForbidden},
		{"signed for another session", signedBy(clusterKey, "a", http.MethodPost, "b."+strings.Repeat("0", 32), client, now), http.StatusForbidden},
		{"signed by another node", append(signedBy(clusterKey, "a", http.MethodPost, sb, client, now), mcp.ForwardedHeader+": c"), http.StatusForbidden},
		{"client address changed", append(signedBy(clusterKey, "a", http.MethodPost, sb, client, now), mcp.ForwardedForHeader+": 127.0.0.1:1"), http.StatusForbidden},
		{"scheme changed", append(signedBy(clusterKey, "a", http.MethodPost, sb, client, now), mcp.ForwardedProtoHeader+": https"), http.StatusForbidden},
		{"no scheme", append(signedBy(clusterKey, "a", http.MethodPost, sb, client, now), mcp.ForwardedProtoHeader+":"), http.StatusForbidden},
		{"stale", signedBy(clusterKey, "a", http.MethodPost, sb, client, now.Add(-3*time.Minute)), http.StatusForbidden},
		{"from the future", signedBy(clusterKey, "a", http.MethodPost, sb, client, now.Add(3*time.Minute)), http.StatusForbidden},
		{"garbage", []string{mcp.ForwardedHeader + ": a", mcp.ForwardSignatureHeader + ": 12.!!"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b0, _ := calls("b")
			r := b.do(http.MethodPost, ping, append(append([]string(nil), base...), tc.headers...)...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d (%s)", r.status, tc.status, r.body)
			}
			b1, remote := calls("b")
			if tc.status == http.StatusOK {
				if b1 != b0+1 || remote != client {
					t.Errorf("auth hook: %d calls, remote %q; want 1 call with the client's address %s", b1-b0, remote, client)
				}
				return
			}
			if b1 != b0 {
				t.Error("the auth hook ran for a refused forward")
			}
			recB.mu.Lock()
			refused := slices.Clone(recB.refused)
			recB.mu.Unlock()
			if n := len(refused); n == 0 || refused[n-1] != mcp.GateForward {
				t.Errorf("refusals observed %v, want the last by gate %q", refused, mcp.GateForward)
			}
			if msg := r.errorMessage(); !strings.Contains(msg, "Forwarded request refused") {
				t.Errorf("error message %q, want a JSON-RPC error saying the forward was refused", msg)
			}
		})
	}

	t.Run("without a signature, the owner's gates apply as usual", func(t *testing.T) {
		if r := b.do(http.MethodPost, ping, append(append([]string(nil), base...), "Origin: https://evil.example")...); r.status != http.StatusForbidden {
			t.Errorf("foreign Origin, not forwarded: status %d, want 403", r.status)
		}
	})
}

// TestClusterForwardOAuth: on an oauth route the owner checks the token of a
// forwarded request (the entry node does not), and its challenge names the
// metadata on the scheme the client used on the entry node.
func TestClusterForwardOAuth(t *testing.T) {
	peers := map[string]*fakeCluster{}
	cb := &fakeCluster{id: "b", peers: peers}
	peers["b"] = cb
	b := newClusterRouteWith(t, cb, oauthOptions())
	sb := b.initialize("Authorization: Bearer tok-alice-r")
	base := []string{"Mcp-Session-Id: " + sb, "Mcp-Protocol-Version: 2025-06-18"}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for _, tc := range []struct {
		name, scheme, token string
		status              int
		metadata            string
	}{
		{"no token, https entry", "https", "", http.StatusUnauthorized, "https://"},
		{"no token, http entry", "http", "", http.StatusUnauthorized, "http://"},
		{"the session's subject", "https", "tok-alice-r", http.StatusOK, ""},
		{"another subject", "https", "tok-bob-r", http.StatusForbidden, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := append(append([]string(nil), base...), signedOver(tc.scheme, clusterKey, "a", http.MethodPost, sb, "203.0.113.7:4000", time.Now())...)
			if tc.token != "" {
				h = append(h, "Authorization: Bearer "+tc.token)
			}
			r := b.do(http.MethodPost, ping, h...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d (%s)", r.status, tc.status, r.body)
			}
			if tc.metadata == "" {
				return
			}
			if c := r.header.Get("WWW-Authenticate"); !strings.Contains(c, `resource_metadata="`+tc.metadata+strings.TrimPrefix(b.srv.URL, "http://")+"/.well-known/") {
				t.Errorf("challenge %q, want the metadata at %s on this Host", c, tc.metadata)
			}
		})
	}
}

// TestClusterTasks: a task's id names its node, and its requests sent to
// another node reach it there, whether the route keeps sessions or not.
func TestClusterTasks(t *testing.T) {
	for _, sessions := range []bool{true, false} {
		t.Run(fmt.Sprintf("sessions=%v", sessions), func(t *testing.T) {
			peers := map[string]*fakeCluster{}
			ca, cb := &fakeCluster{id: "a", peers: peers}, &fakeCluster{id: "b", peers: peers}
			peers["a"], peers["b"] = ca, cb
			opts := mcp.Options{Path: "/mcp", Sessions: sessions}
			a, b := newClusterRouteWith(t, ca, opts), newClusterRouteWith(t, cb, opts)
			cb.handler = b.h
			clusterTasks(t, a, b, ca)
		})
	}
}

func clusterTasks(t *testing.T, a, b *route, ca *fakeCluster) {
	id := b.startTask(`{"support":"optional","keys":["q"]}`)
	if !strings.HasPrefix(id, "b.") {
		t.Fatalf("task id %q does not name its node", id)
	}
	if got := a.pollTask(id, "input_required"); got["taskId"] != id {
		t.Fatalf("tasks/get through a: %v", got)
	}
	a.taskOp(metaTasks, "tasks/update", id, `,"inputResponses":{"q":{"action":"accept","content":{}}}`)
	if got := mustJSON(a.pollTask(id, "completed")["result"]); !strings.Contains(got, "accept") {
		t.Errorf("result through a: %s", got)
	}
	ca.mu.Lock()
	n := len(ca.forwarded)
	ca.mu.Unlock()
	if n < 3 {
		t.Errorf("a forwarded %d requests, want every tasks/* one", n)
	}
	// Ids that name no node, or a malformed one, are served where they
	// arrive: unknown there.
	for _, bad := range []string{"b." + strings.Repeat("A", 21), "b." + strings.Repeat("*", 22), strings.Repeat("A", 22), "../b." + strings.Repeat("A", 22)} {
		if r := a.taskOp(metaTasks, "tasks/get", bad, ""); r.errorCode() != -32602 {
			t.Errorf("%q: %s", bad, r.body)
		}
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if len(ca.forwarded) != n {
		t.Errorf("malformed ids were forwarded: %v", ca.forwarded[n:])
	}
}

// memberCluster is a fakeCluster that knows its members (mcp.MemberCluster).
type memberCluster struct {
	*fakeCluster
	members map[string]bool
	asked   []string
}

func (c *memberCluster) Member(_ context.Context, node string) bool {
	c.mu.Lock()
	c.asked = append(c.asked, node)
	c.mu.Unlock()
	return c.members[node]
}

// TestClusterMembers: a request naming a session of a node the cluster says
// is not a member is not forwarded: it gets the answer an unknown session of
// this node gets (404; a POST's with -32600 "Unknown or expired session"
// and the request's id, a GET's and a DELETE's empty: behaviour.md); one
// naming a member's session is forwarded.
func TestClusterMembers(t *testing.T) {
	c := &memberCluster{fakeCluster: &fakeCluster{id: "a", peers: map[string]*fakeCluster{}}, members: map[string]bool{"b": true}}
	a := newClusterRoute(t, c)
	sid := func(node string) string { return node + "." + strings.Repeat("0", 32) }
	for _, tc := range []struct {
		name, method, sid string
		status            int
		id                any // the error's id, for a POST
	}{
		{"member's session", http.MethodPost, sid("b"), 299, nil},
		{"member's GET", http.MethodGet, sid("b"), 299, nil},
		{"no such node, POST", http.MethodPost, sid("made-up"), http.StatusNotFound, float64(2)},
		{"no such node, GET", http.MethodGet, sid("made-up"), http.StatusNotFound, nil},
		{"no such node, DELETE", http.MethodDelete, sid("made-up"), http.StatusNotFound, nil},
		{"this node's unknown session", http.MethodPost, sid("a"), http.StatusNotFound, float64(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.mu.Lock()
			c.forwarded = nil
			c.mu.Unlock()
			r := a.do(tc.method, `{"jsonrpc":"2.0","id":2,"method":"ping"}`,
				"Mcp-Session-Id: "+tc.sid, "Mcp-Protocol-Version: 2025-06-18", "Accept: application/json, text/event-stream")
			if r.status != tc.status {
				t.Fatalf("status %d, want %d", r.status, tc.status)
			}
			c.mu.Lock()
			forwarded := len(c.forwarded)
			c.mu.Unlock()
			if want := tc.status == 299; (forwarded == 1) != want {
				t.Errorf("forwarded %d times, want forwarded: %v", forwarded, want)
			}
			if tc.status == http.StatusNotFound && tc.method != http.MethodPost {
				if r.body != "" {
					t.Errorf("body %q, want none", r.body)
				}
			} else if tc.status == http.StatusNotFound {
				if r.errorCode() != mcp.CodeInvalidRequest || r.errorMessage() != "Unknown or expired session" || r.msg["id"] != tc.id {
					t.Errorf("answer %v, want -32600 \"Unknown or expired session\" with id %v", r.msg, tc.id)
				}
			}
		})
	}
	if !slices.Equal(c.asked, []string{"b", "b", "made-up", "made-up", "made-up"}) {
		t.Errorf("Member asked about %v, want each other node named (not this one)", c.asked)
	}
}
