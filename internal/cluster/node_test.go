package cluster

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/luamcp/luamcp/mcp"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

func joinNode(t *testing.T, url, id, advertise string) *Node {
	t.Helper()
	return joinKeyed(t, url, id, advertise, nil)
}

// TestNodeForward: Forward streams the owner's answer through as it is
// written, with the headers it was given; a node the bucket does not list, one that
// left, and one that cannot be reached answer 404.
func TestNodeForward(t *testing.T) {
	e := startNATS(t)
	release := make(chan struct{})
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: by " + r.Header.Get(mcp.ForwardedHeader) + " for " + r.Host + "\n\n"))
		w.(http.Flusher).Flush()
		<-release // the first event must arrive before the answer ends
	}))
	defer owner.Close()
	defer close(release)
	a := joinNode(t, e.URL(), "a", "http://127.0.0.1:1")
	defer a.Close()
	b := joinNode(t, e.URL(), "b", owner.URL)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	c := joinNode(t, e.URL(), "c", deadURL)
	defer c.Close()

	entry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(mcp.ForwardedHeader, "a") // the handler marks (and signs) what it forwards
		a.Forward(w, r, r.URL.Query().Get("node"), nil)
	}))
	defer entry.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, entry.URL+"/mcp?node=b", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	wantHost := strings.TrimPrefix(entry.URL, "http://")
	if err != nil || line != "data: by a for "+wantHost+"\n" {
		t.Errorf("forwarded stream: %q, %v; want the first event at once, by a, for %s", line, err, wantHost)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// a cached b's address; b's leaving reaches it over NATS, soon after.
	status := func(node string) int {
		resp, err := http.Get(entry.URL + "/mcp?node=" + node)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(addrCacheTTL / 2)
	for status("b") != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatalf("node b: still forwarded %v after it left, want 404 well within the %v an address is cached", addrCacheTTL/2, addrCacheTTL)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, node := range []string{"c", "nobody"} {
		if got := status(node); got != http.StatusNotFound {
			t.Errorf("node %s: status %d, want 404", node, got)
		}
	}
}

// TestNodeSend: a push sent to a node reaches the function its hub
// attached, and no other node.
func TestNodeSend(t *testing.T) {
	e := startNATS(t)
	a := joinNode(t, e.URL(), "a", "http://127.0.0.1:1")
	defer a.Close()
	b := joinNode(t, e.URL(), "b", "http://127.0.0.1:2")
	defer b.Close()
	got := make(chan string, 2)
	a.Attach(func(p []byte) { got <- "a:" + string(p) })
	b.Attach(func(p []byte) { got <- "b:" + string(p) })
	a.Send("b", []byte("hello"))
	select {
	case g := <-got:
		if g != "b:hello" {
			t.Errorf("delivered %q, want b:hello", g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not delivered")
	}
	a.nc.Flush()
	b.nc.Flush()
	select {
	case g := <-got:
		t.Errorf("delivered again: %q", g)
	default:
	}

	// The counters of the metrics: a's Send, b's receive; then a broadcast
	// from b, which a receives (and b does not count as received).
	b.PubSub().Publish("news", []byte(`{}`))
	deadline := time.Now().Add(10 * time.Second)
	for a.Stats().PushesReceived < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	sa, sb := a.Stats(), b.Stats()
	if sa.PushesSent != 1 || sa.PushesReceived != 1 || sb.PushesSent != 1 || sb.PushesReceived != 1 || !sa.Connected || sa.Reconnects != 0 {
		t.Errorf("stats: a %+v, b %+v; want one push sent and one received by each, connected", sa, sb)
	}
}

// TestNodeIDInUse: a node id held by another address is refused; the same
// address may take it again (a restart before the entry expired).
func TestNodeIDInUse(t *testing.T) {
	e := startNATS(t)
	a := joinNode(t, e.URL(), "a", "http://127.0.0.1:1")
	defer a.Close()
	nc, err := nats.Connect(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Join(ctx, Config{Conn: nc, NodeID: "a", Advertise: "http://127.0.0.1:2"}); err == nil || !strings.Contains(err.Error(), "in use by the node at http://127.0.0.1:1") {
		t.Errorf("a second node a joined: %v", err)
	}
	again, err := Join(ctx, Config{Conn: nc, NodeID: "a", Advertise: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatalf("the same address could not take its id again: %v", err)
	}
	again.Close()
}

// TestNodeOutage: pushes made while NATS is down are dropped at once, not
// kept for later (ConnectOptions): counted as unsent, the first of each kind
// logged; when NATS returns, the other node gets only what is sent since.
func TestNodeOutage(t *testing.T) {
	e := startNATS(t)
	u, err := url.Parse(e.URL())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	var logs syncbuf.Buffer
	join := func(id string) *Node {
		nc, err := nats.Connect(e.URL(), append(ConnectOptions(id), nats.ReconnectWait(50*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := Join(ctx, Config{Conn: nc, NodeID: id, Advertise: "http://127.0.0.1:1", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	a, b := join("a"), join("b")
	got := make(chan []byte, 10)
	b.Attach(func(p []byte) { got <- p })

	e.Shutdown()
	waitFor(t, 10*time.Second, "a sees NATS gone", func() bool { return a.nc.Status() == nats.RECONNECTING })
	a.PubSub().Publish("news", []byte(`{"n":1}`))
	a.PubSub().Publish("news", []byte(`{"n":2}`))
	a.Send("b", []byte("lost"))
	if s := a.Stats(); s.PushesUnsent != 3 || s.PushesSent != 0 || s.Connected {
		t.Errorf("stats while NATS is down: %+v; want 3 unsent, none sent, not connected", s)
	}
	if n := strings.Count(logs.String(), "further ones are counted"); n != 2 {
		t.Errorf("%d warnings for 3 unsent pushes, want 2 (one per kind):\n%s", n, logs.String())
	}

	e2, err := StartEmbedded("127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e2.Shutdown)
	waitFor(t, 10*time.Second, "both reconnect", func() bool { return a.nc.IsConnected() && b.nc.IsConnected() })
	// b's subscription is back once a push sent now arrives.
	waitFor(t, 10*time.Second, "a push crosses again", func() bool {
		a.Send("b", []byte("after"))
		a.nc.Flush()
		select {
		case p := <-got:
			if string(p) != "after" {
				t.Fatalf("b got %q: a push made while NATS was down", p)
			}
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
	if s := a.Stats(); s.Reconnects != 1 || !s.Connected {
		t.Errorf("stats after NATS returned: %+v; want 1 reconnect, connected", s)
	}
}

// waitFor fails t unless ok holds within d, polling it.
func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestForwardWarningsLogOnce: a client can send request after request with a
// session id naming a node that cannot be reached, or (NATS down) looked up:
// each is refused, and the warning is logged once, not once per request.
func TestForwardWarningsLogOnce(t *testing.T) {
	e := startNATS(t)
	var logs syncbuf.Buffer
	nc, err := nats.Connect(e.URL(), ConnectOptions("a")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := Join(ctx, Config{Conn: nc, NodeID: "a", Advertise: "http://127.0.0.1:1", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	joinNode(t, e.URL(), "c", deadURL) // listed in the bucket, never reachable

	forward := func(node string) int {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/mcp", nil)
		r.Header.Set(mcp.ForwardedHeader, "a")
		a.Forward(w, r, node, nil)
		return w.Code
	}
	const flood = 20
	for i := range flood {
		if got := forward("c"); got != http.StatusNotFound {
			t.Fatalf("request %d to an unreachable node: %d, want 404", i, got)
		}
	}
	e.Shutdown()
	waitFor(t, 10*time.Second, "a sees NATS gone", func() bool { return nc.Status() == nats.RECONNECTING })
	for i := range flood {
		if got := forward("nobody"); got != http.StatusServiceUnavailable {
			t.Fatalf("request %d to a node never looked up, NATS down: %d, want 503", i, got)
		}
	}
	for _, msg := range []string{"cannot be reached", "request not forwarded"} {
		if n := strings.Count(logs.String(), msg); n != 1 {
			t.Errorf("%q logged %d times for %d requests, want once:\n%s", msg, n, flood, logs.String())
		}
	}
}
