package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/cluster"
	"github.com/luamcp/luamcp/internal/cluster/localcluster"
	"github.com/luamcp/luamcp/mcp"
)

// clusterStateKey is the requestState key every node of a test cluster shares.
var clusterStateKey = []byte("0123456789abcdef0123456789abcdef")

// natsAndScripts starts an embedded NATS server for the test and a script
// folder holding testdata/servers/lib and the named servers of
// testdata/servers; it returns the server's URL and the folder.
func natsAndScripts(t *testing.T, servers ...string) (natsURL, dir string) {
	t.Helper()
	e, err := cluster.StartEmbedded("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	dir = t.TempDir()
	copyDir(t, filepath.Join("testdata", "servers", "lib"), filepath.Join(dir, "lib"))
	for _, name := range servers {
		copyFile(t, filepath.Join("testdata", "servers", name), filepath.Join(dir, name))
	}
	return e.URL(), dir
}

// stateKeyFile writes clusterStateKey to a file for --state-key-file.
func stateKeyFile(t *testing.T) string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, clusterStateKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return key
}

// testNode is one luamcp node of a test cluster (localcluster.Node), with
// the requests it received counted.
type testNode struct {
	*localcluster.Node
	id   string
	logs *logRecorder
	// direct counts the requests that reached this node from outside (the
	// proxy or a client), forwarded those another node forwarded to it.
	direct, forwarded atomic.Int64
}

// startNode joins a node serving dir to the NATS server at natsURL.
func startNode(t *testing.T, natsURL, id, dir string) *testNode {
	t.Helper()
	n := &testNode{id: id, logs: newLogRecorder()}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var err error
	n.Node, err = localcluster.StartNode(ctx, localcluster.NodeConfig{
		NATSURL: natsURL, ID: id, Heartbeat: time.Second,
		Host: host.Config{Dir: dir, Logger: slog.New(n.logs), StateKey: clusterStateKey},
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(mcp.ForwardedHeader) != "" {
					n.forwarded.Add(1)
				} else {
					n.direct.Add(1)
				}
				h.ServeHTTP(w, r)
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.stop(t)
		if t.Failed() {
			t.Logf("node %s log:\n%s", id, n.logs.dump())
		}
	})
	return n
}

// stop ends the node as `luamcp serve` does: sessions, then the cluster.
func (n *testNode) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Error(err)
	}
}

func (n *testNode) url() string { return n.URL + "/mcp/session" }

// startCluster starts a NATS server, three nodes serving the session fixture
// and a round-robin proxy in front of them.
func startCluster(t *testing.T) ([]*testNode, *localcluster.RoundRobin, string) {
	t.Helper()
	nodes, rr, proxyURL, _ := startClusterNATS(t)
	return nodes, rr, proxyURL
}

// startClusterNATS is startCluster; it also returns the NATS server, which
// the test may stop (its own cleanup shuts down the last one it started).
func startClusterNATS(t *testing.T) ([]*testNode, *localcluster.RoundRobin, string, **cluster.Embedded) {
	t.Helper()
	e, err := cluster.StartEmbedded("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	current := &e
	t.Cleanup(func() {
		if *current != nil {
			(*current).Shutdown()
		}
	})
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "servers", "lib"), filepath.Join(dir, "lib"))
	copyFile(t, filepath.Join("testdata", "servers", "session.lua"), filepath.Join(dir, "session.lua"))
	nodes := []*testNode{startNode(t, e.URL(), "n1", dir), startNode(t, e.URL(), "n2", dir), startNode(t, e.URL(), "n3", dir)}
	rr, err := localcluster.NewRoundRobin(nodes[0].URL, nodes[1].URL, nodes[2].URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(rr)
	t.Cleanup(proxy.Close)
	return nodes, rr, proxy.URL + "/mcp/session", current
}

// owner returns the node a session id names.
func owner(t *testing.T, nodes []*testNode, sid string) *testNode {
	t.Helper()
	for _, n := range nodes {
		if strings.HasPrefix(sid, n.id+".") {
			return n
		}
	}
	t.Fatalf("session id %q names none of the nodes", sid)
	return nil
}

// counter counts notifications of one kind.
type counter struct {
	n  atomic.Int64
	ch chan struct{}
}

func newCounter() *counter { return &counter{ch: make(chan struct{}, 100)} }

func (c *counter) add() {
	c.n.Add(1)
	c.ch <- struct{}{}
}

// wait waits for the count to reach n, then checks it stays there a moment
// (exactly once: no copy arrives late).
func (c *counter) wait(t *testing.T, what string, n int64) {
	t.Helper()
	deadline := time.After(waitLong)
	for c.n.Load() < n {
		select {
		case <-c.ch:
		case <-deadline:
			t.Fatalf("%s: %d received within %v, want %d", what, c.n.Load(), waitLong, n)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if got := c.n.Load(); got != n {
		t.Errorf("%s: received %d, want exactly %d", what, got, n)
	}
}

// TestClusterGoSDK drives three nodes behind a round-robin proxy with the
// official Go SDK client (issue 13).
func TestClusterGoSDK(t *testing.T) {
	nodes, rr, proxyURL := startCluster(t)
	changed, updated, logged := newCounter(), newCounter(), newCounter()
	a := connectGo(t, proxyURL, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed.add() },
		ResourceUpdatedHandler: func(context.Context, *sdk.ResourceUpdatedNotificationRequest) { updated.add() },
		LoggingMessageHandler:  func(context.Context, *sdk.LoggingMessageRequest) { logged.add() },
	}, latestVersion)
	a.watch.wait(t) // the GET stream, through the proxy, to the owner
	own := owner(t, nodes, a.ID())

	t.Run("a session's calls land on every node and keep its state", func(t *testing.T) {
		for i := 1; i <= 6; i++ {
			a.wantText(t, "count", nil, string(rune('0'+i)))
		}
		for _, n := range nodes {
			if n.direct.Load() == 0 {
				t.Errorf("node %s received no request", n.id)
			}
		}
		if own.forwarded.Load() == 0 {
			t.Errorf("the owner %s was forwarded no request", own.id)
		}
	})

	t.Run("pushes from every node reach the stream exactly once", func(t *testing.T) {
		if err := a.Subscribe(goCtx(t), &sdk.SubscribeParams{URI: "mem://greeting"}); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			c := connectGo(t, n.url(), nil, latestVersion)
			c.wantText(t, "broadcast", nil, "broadcast")
			c.wantText(t, "touch", map[string]any{"uri": "mem://greeting"}, "touched")
			c.call(t, "log", map[string]any{"level": "error", "to": a.ID()})
		}
		changed.wait(t, "tools/list_changed", 3)
		updated.wait(t, "resources/updated", 3)
		logged.wait(t, "notifications/message to the session", 3)
	})

	t.Run("DELETE through any node ends the session everywhere", func(t *testing.T) {
		sid := a.ID()
		if err := a.Close(); err != nil { // its DELETE goes through the proxy
			t.Fatal(err)
		}
		for _, n := range nodes {
			req, _ := http.NewRequest(http.MethodPost, n.url(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", latestVersion)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			drain(resp.Body)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("node %s answers %d for the deleted session, want 404", n.id, resp.StatusCode)
			}
		}
	})

	t.Run("the owner gone: 404, and the client starts again on a survivor", func(t *testing.T) {
		e := connectGo(t, proxyURL, nil, latestVersion)
		e.wantText(t, "count", nil, "1")
		dead := owner(t, nodes, e.ID())
		rr.Remove(dead.URL)
		dead.stop(t)
		_, err := e.CallTool(goCtx(t), &sdk.CallToolParams{Name: "count"})
		if err == nil {
			t.Fatal("a call on a session whose node is gone succeeded")
		}
		f := connectGo(t, proxyURL, nil, latestVersion)
		if owner(t, nodes, f.ID()) == dead {
			t.Fatal("a new session on the dead node")
		}
		f.wantText(t, "count", nil, "1")
		f.wantText(t, "count", nil, "2")
	})
}

// nodesClient speaks raw HTTP to the nodes (the helpers of rawhttp_test.go).
func nodesClient(t *testing.T) *testServer {
	s := &testServer{t: t, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(s.client.CloseIdleConnections)
	return s
}

// TestClusterResumeThroughAnotherNode: a GET stream resumed through another
// node with Last-Event-ID replays from the owner's ring; a Notify made on
// another node reaches the owner's stream.
func TestClusterResumeThroughAnotherNode(t *testing.T) {
	nodes, _, _ := startCluster(t)
	s := nodesClient(t)
	sid := s.initialize(t, nodes[0].url())
	if owner(t, nodes, sid) != nodes[0] {
		t.Fatalf("session %q not owned by the node that created it", sid)
	}
	s.poke(t, nodes[1].url(), sid, 1) // forwarded; no stream yet: id 1 in the ring
	s.poke(t, nodes[2].url(), sid, 2) // id 2
	get := s.openGET(t, nodes[1].url(), sid, map[string]string{"Last-Event-ID": "1"})
	wantPoke(t, get, 2, "2")
	// notify from a session of node 3 to this one: through node 3's
	// Cluster.Send to the owner.
	other := s.initialize(t, nodes[2].url())
	s.callTool(t, nodes[2].url(), other, "notify", map[string]any{"n": 3, "to": sid}).wantText(t, "notified")
	wantPoke(t, get, 3, "3")
	get.close()
	if nodes[0].forwarded.Load() == 0 {
		t.Error("nothing was forwarded to the owner")
	}
}

// TestClusterNATSOutage: without NATS each node keeps delivering its own
// pushes to its own sessions and logs a warning; when NATS returns (here
// restarted without its storage) pushes cross nodes again and requests are
// forwarded again.
func TestClusterNATSOutage(t *testing.T) {
	nodes, _, _, natsSrv := startClusterNATS(t)
	natsURL := (*natsSrv).URL()
	u, err := url.Parse(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	remote, local := newCounter(), newCounter()
	a := connectGo(t, nodes[0].url(), &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { remote.add() },
	}, latestVersion)
	a.watch.wait(t)
	b := connectGo(t, nodes[1].url(), &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { local.add() },
	}, latestVersion)
	b.watch.wait(t)

	(*natsSrv).Shutdown()
	*natsSrv = nil
	for _, n := range nodes {
		n.logs.waitFor(t, "NATS disconnected", 1)
	}
	b.wantText(t, "broadcast", nil, "broadcast")
	local.wait(t, "tools/list_changed on the broadcasting node", 1)
	if got := remote.n.Load(); got != 0 {
		t.Errorf("a node received %d pushes while NATS was down", got)
	}

	e, err := cluster.StartEmbedded("127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	*natsSrv = e
	deadline := time.Now().Add(waitLong)
	for _, n := range nodes {
		for !n.Conn.IsConnected() {
			if time.Now().After(deadline) {
				t.Fatalf("node %s did not reconnect within %v", n.id, waitLong)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// At most once: pushes made while the subscriptions come back may be
	// lost, so broadcast until one crosses.
	for remote.n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no broadcast crossed nodes within %v of NATS returning", waitLong)
		}
		b.wantText(t, "broadcast", nil, "broadcast")
		time.Sleep(50 * time.Millisecond)
	}
	// The fresh server lost the bucket: the heartbeat makes it again, and
	// a request through node 3 reaches a's owner.
	s := nodesClient(t)
	for {
		r, err := s.send(t, nodes[2].url(), call{Session: a.ID(), Body: request(1, "ping", nil)})
		if err == nil && r.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests not forwarded within %v of NATS returning: %v %+v", waitLong, err, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterListen: a 2026-07-28 subscriptions/listen stream on one node
// receives resource updates and list_changed made on every node, once each.
func TestClusterListen(t *testing.T) {
	nodes, _, _ := startCluster(t)
	s := nodesClient(t)
	st := s.open(t, nodes[2].url(), eraCall("listen-1", "subscriptions/listen", map[string]any{"notifications": map[string]any{
		"toolsListChanged": true, "resourceSubscriptions": []string{"mem://greeting"},
	}}, nil))
	if st.Status != http.StatusOK {
		t.Fatalf("subscriptions/listen: HTTP %d; body:\n%s", st.Status, st.Body)
	}
	defer st.close()
	if m := st.nextMessage(); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen opened with %s", m.Method)
	}
	for _, n := range nodes {
		sid := s.initialize(t, n.url())
		s.callTool(t, n.url(), sid, "touch", map[string]any{"uri": "mem://greeting"}).wantText(t, "touched")
		if m := st.nextMessage(); m.Method != "notifications/resources/updated" {
			t.Errorf("after a touch on node %s the listen stream got %s %s", n.id, m.Method, m.Params)
		}
		s.callTool(t, n.url(), sid, "broadcast", nil).wantText(t, "broadcast")
		if m := st.nextMessage(); m.Method != "notifications/tools/list_changed" {
			t.Errorf("after a broadcast on node %s the listen stream got %s %s", n.id, m.Method, m.Params)
		}
	}
}

// TestClusterNoGoroutineLeak: a cluster's nodes, NATS server, forwarded
// streams and proxy leave no goroutine behind once stopped.
func TestClusterNoGoroutineLeak(t *testing.T) {
	warmUp(t)
	baseline := runtime.NumGoroutine()
	t.Run("cluster", func(t *testing.T) {
		nodes, _, _ := startCluster(t)
		s := nodesClient(t)
		sid := s.initialize(t, nodes[0].url())
		get := s.openGET(t, nodes[1].url(), sid, nil) // forwarded to the owner
		s.poke(t, nodes[2].url(), sid, 1)
		wantPoke(t, get, 1, "1")
		get.close()
		s.callTool(t, nodes[1].url(), sid, "count", nil).wantText(t, "1")
	})
	http.DefaultClient.CloseIdleConnections()
	settle(t, baseline, "after the cluster stopped")
}

// TestClusterTSSDK: the official TypeScript SDK client through the
// round-robin proxy (node/client.mjs, scenario cluster).
func TestClusterTSSDK(t *testing.T) {
	nodes, _, proxyURL := startCluster(t)
	obs := tsRun(t, "client.mjs", "cluster", proxyURL, nodes[0].url(), nodes[1].url(), nodes[2].url())
	if observation(obs, "pushes from every node, once each") == nil {
		t.Errorf("observations %v", obs)
	}
	for _, n := range nodes {
		if n.direct.Load() == 0 {
			t.Errorf("node %s received no request", n.id)
		}
	}
}

// TestClusterOwnerCrash: an owner that stops answering while its entry is
// still in the bucket (a crash: no clean leave, the heartbeat has not
// expired) gives 404 through every survivor, and the client starts again.
func TestClusterOwnerCrash(t *testing.T) {
	nodes, rr, proxyURL := startCluster(t)
	c := connectGo(t, proxyURL, nil, latestVersion)
	c.wantText(t, "count", nil, "1")
	dead := owner(t, nodes, c.ID())
	rr.Remove(dead.URL)
	dead.CloseListener() // the listener is gone; host, NATS connection and heartbeat live on
	s := nodesClient(t)
	for _, n := range nodes {
		if n == dead {
			continue
		}
		r, err := s.send(t, n.url(), call{Session: c.ID(), Body: request(1, "ping", nil)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusNotFound {
			t.Errorf("node %s answers %d for a crashed node's session, want 404", n.id, r.Status)
		}
	}
	f := connectGo(t, proxyURL, nil, latestVersion)
	if owner(t, nodes, f.ID()) == dead {
		t.Fatal("a new session on the crashed node")
	}
	f.wantText(t, "count", nil, "1")
}

// TestClusterEntryNodeStops: a node that stops ends the streams it forwards
// for other nodes' sessions at once (they do not hold its shutdown open),
// and the session lives on at its owner.
func TestClusterEntryNodeStops(t *testing.T) {
	nodes, _, _ := startCluster(t)
	s := nodesClient(t)
	sid := s.initialize(t, nodes[0].url())
	get := s.openGET(t, nodes[1].url(), sid, nil)
	stopped := make(chan struct{})
	go func() {
		nodes[1].stop(t)
		close(stopped)
	}()
	get.ended()
	select {
	case <-stopped:
	case <-time.After(waitLong):
		t.Fatalf("the entry node took over %v to stop", waitLong)
	}
	s.callTool(t, nodes[2].url(), sid, "count", nil).wantText(t, "1")
}

// TestClusterSpoofedForward: a client that marks its request as forwarded
// by a node, without that node's signature, is refused by the owner with
// 403 and a JSON-RPC error; the same request through a real node is served.
func TestClusterSpoofedForward(t *testing.T) {
	nodes, _, _ := startCluster(t)
	s := nodesClient(t)
	sid := s.initialize(t, nodes[0].url())
	req, _ := http.NewRequest(http.MethodPost, nodes[0].url(), strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", latestVersion)
	req.Header.Set(mcp.ForwardedHeader, "n2")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"Forwarded request refused`) {
		t.Errorf("spoofed forward: %d %s, want 403 with a JSON-RPC error", resp.StatusCode, body)
	}
	if m := s.rpc(t, nodes[1].url(), sid, 3, "ping", nil); m.Error != nil {
		t.Errorf("ping through node 2: %v", m.Error)
	}
}

// TestClusterSpoofedLink: a request to open a link that a node did not sign
// is refused (403), and the connection is not taken over: it goes on
// serving HTTP.
func TestClusterSpoofedLink(t *testing.T) {
	nodes, _, _ := startCluster(t)
	u, _ := url.Parse(nodes[0].url())
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for _, sig := range []string{"", "1796320000.AAAA"} {
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: n2\r\n%s: http\r\n%s: %s\r\n\r\n",
			u.Path, u.Host, mcp.LinkProtocol, mcp.ForwardedHeader, mcp.ForwardedProtoHeader, mcp.ForwardSignatureHeader, sig)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("an unsigned link (signature %q): %d, want 403", sig, resp.StatusCode)
		}
	}
}

// TestClusterForwardedTimeout: a call forwarded on a link that outlives
// the route's request_timeout gets its timeout answer through the entry node
// while the tool runs on (the owner's watcher writes it before the handler
// returns: it must not wait for the end of the exchange), and the call's
// effect lands.
func TestClusterForwardedTimeout(t *testing.T) {
	natsURL, dir := natsAndScripts(t, "timeout.lua")
	a, b := startNode(t, natsURL, "n1", dir), startNode(t, natsURL, "n2", dir)
	s := nodesClient(t)
	sid := s.initialize(t, a.URL+"/mcp/timeout")
	for i, id := range []int{5, 6} { // the second goes on the link the first opened
		m := s.rpc(t, b.URL+"/mcp/timeout", sid, id, "tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 300}})
		wantID(t, m, strconv.Itoa(id))
		wantError(t, m, -32603, "Request timed out")
		if n := a.logs.count("fixture slept id=" + strconv.Itoa(id)); n != 0 {
			t.Errorf("call %d: the timeout answer came after the tool ended", id)
		}
		a.logs.waitFor(t, "fixture slept id="+strconv.Itoa(id), 1)
		s.callTool(t, b.URL+"/mcp/timeout", sid, "count", nil).wantText(t, strconv.Itoa(2*i+2)) // each sleep and each count add one
	}
	if b.logs.count("cluster: link opened") != 1 {
		t.Errorf("the entry node opened %d links, want 1", b.logs.count("cluster: link opened"))
	}
	if out, in := b.Member.Stats().LinksOut, a.Member.Stats().LinksIn; out != 1 || in != 1 {
		t.Errorf("links counted: %d out of the entry node, %d into the owner; want 1 and 1", out, in)
	}
}
