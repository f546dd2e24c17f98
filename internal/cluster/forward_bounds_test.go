package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// ownerPair is an entry node (a) forwarding to an owner (b) over NATS.
type ownerPair struct {
	entry   *httptest.Server
	a, b    *Node
	natsURL string
}

// ownerSID names a session of node b.
const ownerSID = "b.00000000000000000000000000000000"

// startOwnerPair starts the two nodes, their routes sharing opts and the
// auth hook, which runs on the owner.
func startOwnerPair(t *testing.T, opts mcp.Options, hook func(context.Context, *mcp.AuthRequest) int) *ownerPair {
	t.Helper()
	e := startNATS(t)
	key := []byte("0123456789abcdef0123456789abcdef")
	opts.Path, opts.Sessions, opts.AllowRemoteAccess, opts.Auth = "/mcp", true, true, hook

	var ownerH http.Handler
	owner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ownerH.ServeHTTP(w, r) }))
	startClosingLinks(t, owner)
	b := joinNode(t, e.URL(), "b", owner.URL)
	t.Cleanup(func() { b.Close() })
	hubB := mcp.NewHub(nil)
	if err := hubB.SetStateKey(key); err != nil {
		t.Fatal(err)
	}
	hubB.SetCluster(b)
	ownerH = mcp.NewHandler(noServer{}, opts, hubB, nil)

	a := joinNode(t, e.URL(), "a", "http://127.0.0.1:1")
	t.Cleanup(func() { a.Close() })
	hubA := mcp.NewHub(nil)
	if err := hubA.SetStateKey(key); err != nil {
		t.Fatal(err)
	}
	hubA.SetCluster(a)
	entry := httptest.NewServer(mcp.NewHandler(noServer{}, opts, hubA, nil))
	t.Cleanup(entry.Close)
	return &ownerPair{entry: entry, a: a, b: b, natsURL: e.URL()}
}

// post sends a POST of body for the owner's session through the entry
// node, and returns its status.
func (p *ownerPair) post(timeout time.Duration, header http.Header, body string) (int, error) {
	resp, err := p.postHead(timeout, header, body)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// postHead is post, returning the answer's head.
func (p *ownerPair) postHead(timeout time.Duration, header http.Header, body string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.entry.URL+"/mcp", strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Mcp-Session-Id", ownerSID)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// pingBody is a request the owner's auth hook answers.
const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// TestForwardDropsDeleteBody: a DELETE's body is not forwarded (read, it
// was unbounded: one announcing 256 MiB grew the entry node by 511 MiB, one
// announcing 1 TiB killed it, and waiting for it held the link, so that
// other clients' forwards to the owner hung).
func TestForwardDropsDeleteBody(t *testing.T) {
	pair := startOwnerPair(t, mcp.Options{}, func(context.Context, *mcp.AuthRequest) int { return http.StatusForbidden })
	if s, err := pair.post(5*time.Second, nil, pingBody); s != http.StatusForbidden {
		t.Fatalf("warm-up POST: %d %v, want the owner hook's 403", s, err)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	conn, err := net.Dial("tcp", pair.entry.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const announced = 256 << 20 // MaxBodyBytes is 4 MiB
	fmt.Fprintf(conn, "DELETE /mcp HTTP/1.1\r\nHost: x\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n", ownerSID, announced)
	// ... and no body.
	time.Sleep(500 * time.Millisecond)

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 128<<20 {
		t.Errorf("one DELETE announcing %d MiB and sending nothing grew the entry node's heap by %d MiB (MaxBodyBytes 4 MiB)", announced>>20, grew>>20)
	}

	start := time.Now()
	s, err := pair.post(5*time.Second, nil, pingBody)
	if s != http.StatusForbidden {
		t.Errorf("another client's POST to the same owner, beside the stalled DELETE: status %d after %v (%v), want the owner hook's 403", s, time.Since(start).Round(time.Millisecond), err)
	}
}

// TestLinkDialledWhilePeerCloses: a link whose dial ends after its peer was
// closed (the node forgotten) is closed after its last answer, not left open
// with no slot to close it.
func TestLinkDialledWhilePeerCloses(t *testing.T) {
	upgrading := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == mcp.LinkProtocol {
			upgrading <- struct{}{}
			time.Sleep(300 * time.Millisecond) // the dial is in progress
			serveLink(w, r, mcp.Link{Serve: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }, MaxRequest: 1 << 20, Done: make(chan struct{})}, slog.New(slog.DiscardHandler))
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	startClosingLinks(t, srv)
	var open atomic.Int64
	p := linkPeer(t, &linkOwner{URL: srv.URL})
	p.linksOpen = &open
	entry := entryFor(t, p, nil)

	got := make(chan string, 1)
	go func() {
		resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	<-upgrading
	p.close() // the node is forgotten while its link is being dialled
	t.Logf("the request: %q", <-got)
	time.Sleep(time.Second)
	if n := open.Load(); n != 0 {
		t.Errorf("%d link(s) to a closed peer still open a second after their last answer (no slot holds them: they stay open for good)", n)
	}
}
