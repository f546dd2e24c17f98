package tests

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/cluster/localcluster"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// serveProcess is a `luamcp serve` process of a test cluster.
type serveProcess struct {
	id, base string // node id, http://127.0.0.1:PORT
	cmd      *exec.Cmd
	exited   chan struct{}
	logs     *syncbuf.Buffer // its stderr
}

// startServeProcess runs bin as `serve --nats natsURL --node-id id` over
// dir and waits for its route table.
func startServeProcess(t *testing.T, bin, natsURL, id, dir, keyFile string) *serveProcess {
	t.Helper()
	return startServe(t, bin, id, "--dir", dir, "--addr", "127.0.0.1:0", "--no-watch",
		"--nats", natsURL, "--node-id", id, "--state-key-file", keyFile)
}

// startServe runs bin as `serve args...`, named id in the test's log, and
// waits for its route table, whose first line names its address (a route
// under /mcp/). The process gets SIGTERM when the test ends, if it still
// runs.
func startServe(t *testing.T, bin, id string, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{id: id, exited: make(chan struct{}), logs: new(syncbuf.Buffer)}
	p.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	p.cmd.Stderr = p.logs
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(waitLong):
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("node %s log:\n%s", id, p.logs.String())
		}
	})
	lines := bufio.NewScanner(out)
	first := make(chan string, 1)
	go func() {
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
		io.Copy(io.Discard, out)
	}()
	select {
	case line := <-first:
		m := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)/mcp/\S+ `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("node %s printed %q, want its route table", id, line)
		}
		p.base = m[1]
	case <-time.After(waitLong):
		t.Fatalf("node %s did not start within %v:\n%s", id, waitLong, p.logs.String())
	}
	return p
}

// buildLuamcp builds the luamcp binary into a temporary folder.
func buildLuamcp(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "luamcp")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestClusterProcessKill: three `luamcp serve --nats` processes behind a
// round-robin proxy keep a session's state across them; the session's
// owner is killed (SIGKILL: its address stays in the bucket until it
// expires), every survivor answers 404 for the session, and a new session
// works on a survivor (issue 13: the client re-initializes).
func TestClusterProcessKill(t *testing.T) {
	bin := buildLuamcp(t)
	natsURL, dir := natsAndScripts(t, "session.lua")
	key := stateKeyFile(t)
	var procs []*serveProcess
	var urls []string
	for _, id := range []string{"p1", "p2", "p3"} {
		p := startServeProcess(t, bin, natsURL, id, dir, key)
		procs = append(procs, p)
		urls = append(urls, p.base)
	}
	rr, err := localcluster.NewRoundRobin(urls...)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(rr)
	t.Cleanup(front.Close)
	proxy := front.URL

	c := connectGo(t, proxy+"/mcp/session", nil, latestVersion)
	for i := 1; i <= 4; i++ { // round robin: the calls land on every process
		c.wantText(t, "count", nil, string(rune('0'+i)))
	}
	var dead *serveProcess
	for _, p := range procs {
		if strings.HasPrefix(c.ID(), p.id+".") {
			dead = p
		}
	}
	if dead == nil {
		t.Fatalf("session %q names no process", c.ID())
	}
	// The other two forwarded the calls that landed on them on a link
	// (through serve's whole stack: access log, limits, metrics).
	for _, p := range procs {
		if p != dead && !strings.Contains(p.logs.String(), "cluster: link opened") {
			t.Errorf("node %s forwarded without a link:\n%s", p.id, p.logs.String())
		}
	}
	rr.Remove(dead.base)
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-dead.exited

	s := nodesClient(t)
	for _, p := range procs {
		if p == dead {
			continue
		}
		r, err := s.send(t, p.base+"/mcp/session", call{Session: c.ID(), Body: request(1, "ping", nil)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusNotFound {
			t.Errorf("node %s answers %d for a killed node's session, want 404", p.id, r.Status)
		}
	}
	f := connectGo(t, proxy+"/mcp/session", nil, latestVersion)
	if strings.HasPrefix(f.ID(), dead.id+".") {
		t.Fatal("a new session on the killed node")
	}
	f.wantText(t, "count", nil, "1")
}

// TestClusterRestartKeepsSessions: a node restarted with --sessions-file
// (SIGTERM, then started again, on another address) keeps its sessions in
// the cluster: while it is down the other node answers them 503 with
// Retry-After, never 404 (a client would drop its session); once it is
// back, the other node forwards to its new address and the session's state
// is where it was.
func TestClusterRestartKeepsSessions(t *testing.T) {
	bin := buildLuamcp(t)
	natsURL, dir := natsAndScripts(t, "session.lua")
	key := stateKeyFile(t)
	sessions := filepath.Join(t.TempDir(), "sessions.json")
	owner := func() *serveProcess {
		return startServe(t, bin, "p1", "--dir", dir, "--addr", "127.0.0.1:0", "--no-watch",
			"--nats", natsURL, "--node-id", "p1", "--state-key-file", key, "--sessions-file", sessions)
	}
	p1 := owner()
	p2 := startServeProcess(t, bin, natsURL, "p2", dir, key)

	s := nodesClient(t)
	sid := s.initialize(t, p1.base+"/mcp/session")
	s.callTool(t, p1.base+"/mcp/session", sid, "count", nil).wantText(t, "1")
	s.callTool(t, p2.base+"/mcp/session", sid, "count", nil).wantText(t, "2") // forwarded

	p1.stop(t)
	r, err := s.send(t, p2.base+"/mcp/session", call{Session: sid, Body: request(1, "ping", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("the other node answers %d (Retry-After %q) for a restarting node's session, want 503 with Retry-After", r.Status, r.Header.Get("Retry-After"))
	}

	owner() // on a new address
	deadline := time.Now().Add(waitLong)
	for {
		r, err := s.send(t, p2.base+"/mcp/session", call{Session: sid, Body: request(1, "ping", nil)})
		if err == nil && r.Status == http.StatusOK {
			break
		}
		if err == nil && r.Status != http.StatusServiceUnavailable {
			t.Fatalf("the other node answers %d for the session of a node back from its restart", r.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session never came back through the other node: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.callTool(t, p2.base+"/mcp/session", sid, "count", nil).wantText(t, "3")
}
