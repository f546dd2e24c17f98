package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// fakeCluster joins hubs in one process: Send hands the push straight to the
// peer's hub; Forward records the node and answers 299.
type fakeCluster struct {
	id    string
	peers map[string]*fakeCluster

	mu        sync.Mutex
	forwarded []string
	deliver   func([]byte)
}

func (c *fakeCluster) NodeID() string { return c.id }

func (c *fakeCluster) Forward(w http.ResponseWriter, r *http.Request, node string) {
	c.mu.Lock()
	c.forwarded = append(c.forwarded, r.Method+" "+node)
	c.mu.Unlock()
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

// newClusterRoute is newRoute on a hub joined to c.
func newClusterRoute(t *testing.T, c *fakeCluster) *route {
	t.Helper()
	f := newFakeServer()
	opts := mcp.Options{Path: "/mcp", Sessions: true}
	hub := mcp.NewHub(quietLogger())
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
		{"already forwarded", http.MethodPost, sb, []string{mcp.ForwardedHeader + ": b"}, http.StatusNotFound},
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
