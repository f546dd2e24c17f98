// Command soak is a chaos soak of a real `luamcp serve`, meant for a build
// with the race detector: it finds the races, panics, deadlocks and leaks
// that need many minutes of mixed traffic, which no test in CI can afford.
//
//	go build -race -o /tmp/luamcp-race .   # at the repository root
//	cd tests && nice -n 10 go run ./soak -bin /tmp/luamcp-race -dur 12m
//
// It serves the scripts of soak/scripts (copied to a temporary folder) and a
// hot.lua it rewrites every few seconds (a changed tool, sometimes a broken
// version then fixed, sometimes removed for longer than the second an
// unmount waits, sometimes a SIGHUP), and runs -clients clients at once, each
// a random mix of: initialize, calls, lists, DELETE; GET channels dropped
// mid-stream and resumed with Last-Event-ID; progress streams dropped and
// resumed; notifications/cancelled; elicitation and sampling answered,
// refused or abandoned; errors, endless loops, call timeouts and memory
// hogs; stateless and 2026-07-28 calls (input_required rounds, listens);
// malformed requests; four calls of one session at once. Each client checks
// its sessions' counters, so a state lost or applied twice shows, and a
// session that answers 404 soon after a success is reported as lost. At
// -restart-at it restarts the server (SIGTERM, --sessions-file) and checks
// the sessions come back with their state; with -under-load, without
// pausing the clients. With -tls it serves HTTPS (a self-signed
// certificate) and the clients speak HTTP/2. At the end, with the load stopped and the sessions
// deleted or expired, it compares goroutines, descriptors and Lua states
// with the baseline, ends the server with SIGQUIT for a goroutine dump, and
// counts DATA RACE, panic and fatal error in its log.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"embed"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	v25 = "2025-11-25"
	v26 = "2026-07-28"
)

//go:embed scripts/*.lua
var scripts embed.FS

var (
	bin       = flag.String("bin", "", "the luamcp binary (build it with -race)")
	dur       = flag.Duration("dur", 12*time.Minute, "how long the load runs")
	nclients  = flag.Int("clients", 7, "clients at once (keep it below ~8 on a shared 2-core machine)")
	addr      = flag.String("addr", "127.0.0.1:18750", "the server's address")
	maddr     = flag.String("metrics", "127.0.0.1:19464", "the server's --metrics-addr")
	logPath   = flag.String("log", "soak-server.log", "where the server's output goes")
	useTLS    = flag.Bool("tls", false, "serve HTTPS with a self-signed certificate: the clients speak HTTP/2")
	restartAt = flag.Float64("restart-at", 0.5, "fraction of dur at which to restart (0: never)")
	underLoad = flag.Bool("under-load", false, "restart without pausing the load")
)

var (
	ops      sync.Map     // op name -> *int64
	problems sync.Map     // problem -> *int64
	gate     sync.RWMutex // clients hold it shared per operation; a paused restart takes it
	base     string
	dir      string // the scripts folder served
	sessFile string
	client   = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 5 * time.Second}}
)

// count adds one to the counter k of m (ops or problems).
func count(m *sync.Map, k string) {
	v, _ := m.LoadOrStore(k, new(int64))
	atomic.AddInt64(v.(*int64), 1)
}

// restarting is set while the server restarts under load: what fails
// then is reported apart.
var restarting atomic.Bool

// problem records a finding, printing it the first time it is seen.
func problem(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if restarting.Load() {
		s = "[during restart] " + s
	}
	if len(s) > 300 {
		s = s[:300]
	}
	v, loaded := problems.LoadOrStore(s, new(int64))
	atomic.AddInt64(v.(*int64), 1)
	if !loaded {
		fmt.Fprintf(os.Stderr, "%s PROBLEM %s\n", time.Now().Format("15:04:05"), s)
	}
}

// ---- server process ----

// server is one luamcp serve process.
type server struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startServer starts luamcp serve on the scripts and waits for /readyz.
func startServer() *server {
	lf, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(lf, "\n===== start %s =====\n", time.Now().Format(time.RFC3339))
	cmd := exec.Command(*bin, "serve", "--addr", *addr, "--metrics-addr", *maddr,
		"--sessions-file", sessFile, "--log-level", "info", "--max-running", "8", dir)
	if tlsFiles != nil {
		cmd.Args = append(cmd.Args[:len(cmd.Args)-1], "--tls-cert", tlsFiles[0], "--tls-key", tlsFiles[1], dir)
	}
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=0 history_size=2")
	cmd.Stdout = lf
	cmd.Stderr = lf
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	curPID.Store(int64(cmd.Process.Pid))
	go func() { s.err = cmd.Wait(); lf.Close(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r, err := client.Get(base + "/readyz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return s
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	panic("server not ready")
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM and waits for the process to exit.
func (s *server) stop() error {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return s.err
	case <-time.After(60 * time.Second):
		problem("server did not exit within 60s of SIGTERM")
		s.cmd.Process.Signal(syscall.SIGQUIT)
		<-s.done
		return s.err
	}
}

// ---- HTTP helpers ----

// msg is a JSON-RPC message, as the driver reads it.
type msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// event is one SSE event.
type event struct {
	id   string
	data string
}

// req encodes a JSON-RPC request (a notification when id is nil).
func req(id any, method string, params any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return b
}

// newReq builds an HTTP request to /mcp/route with the headers a
// conforming client sends; a "" value in hdr deletes a default.
func newReq(ctx context.Context, method, route string, body []byte, sid string, hdr map[string]string) *http.Request {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, base+"/mcp/"+route, rd)
	if err != nil {
		panic(err)
	}
	switch method {
	case "POST":
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
	case "GET":
		r.Header.Set("Accept", "text/event-stream")
	}
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", v25)
	}
	for k, v := range hdr {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	return r
}

// readSSE calls fn for each event until it returns false or the body ends.
func readSSE(r io.Reader, fn func(event) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var e event
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if e.id != "" || len(data) > 0 {
				e.data = strings.Join(data, "\n")
				if !fn(e) {
					return nil
				}
			}
			e, data = event{}, nil
		case strings.HasPrefix(line, "id:"):
			e.id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[5:], " "))
		}
	}
	return sc.Err()
}

// reply is a whole HTTP answer: a JSON body or every SSE event.
type reply struct {
	status int
	header http.Header
	msgs   []msg
	events []event
	body   []byte
}

// response is the reply's JSON-RPC response, nil when it has none.
func (r *reply) response() *msg {
	for i := range r.msgs {
		if r.msgs[i].Method == "" {
			return &r.msgs[i]
		}
	}
	return nil
}

// sessionTTL is the session_ttl_ms of the session routes.
const sessionTTL = 20 * time.Second

// sessInfo follows every session id the driver holds, to tell a session
// lost from one that expired or was deleted.
type sessInfo struct {
	route   string
	lastOK  time.Time
	deleted bool
}

var (
	sessMu      sync.Mutex
	sessions    = map[string]*sessInfo{}
	lastUnmount atomic.Int64 // unix nanos of the last removal of hot.lua
	lastRestart atomic.Int64
)

// sessionSeen notes the answer to a request of session sid: a success, or
// a 404 that tells whether the session was lost.
func sessionSeen(route, sid string, status int) {
	if sid == "" || sid == "deadbeef" {
		return
	}
	sessMu.Lock()
	defer sessMu.Unlock()
	si := sessions[sid]
	if si == nil {
		si = &sessInfo{route: route}
		sessions[sid] = si
	}
	switch {
	case status >= 200 && status < 300:
		si.lastOK = time.Now()
	case status == 404 && !si.deleted && si.route == route:
		idle := time.Since(si.lastOK)
		// a removal unmounts a second later: sessions used until then end too
		if route == "hot" && lastUnmount.Load()+int64(2500*time.Millisecond) > si.lastOK.UnixNano() {
			count(&ops, "hot.gone-with-unmount")
			return
		}
		if idle < sessionTTL-time.Second {
			problem("session of %s lost: 404 %v after its last success", route, idle.Round(time.Millisecond))
		} else {
			count(&ops, "session.expired")
		}
		si.deleted = true
	}
}

// markDeleted notes that the driver ends sid: its 404s are expected.
func markDeleted(sid string) {
	sessMu.Lock()
	defer sessMu.Unlock()
	if si := sessions[sid]; si != nil {
		si.deleted = true
	}
}

// do sends and reads everything (JSON or SSE), within d.
func do(method, route string, body []byte, sid string, hdr map[string]string, d time.Duration) (*reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	resp, err := client.Do(newReq(ctx, method, route, body, sid, hdr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if method != "DELETE" && hdr["Mcp-Session-Id"] == "" {
		sessionSeen(route, sid, resp.StatusCode)
	}
	rp := &reply{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		err = readSSE(resp.Body, func(e event) bool {
			rp.events = append(rp.events, e)
			if e.data != "" {
				var m msg
				if json.Unmarshal([]byte(e.data), &m) != nil {
					problem("SSE data not JSON on %s: %q", route, e.data)
				}
				rp.msgs = append(rp.msgs, m)
			}
			return true
		})
		return rp, err
	}
	rp.body, err = io.ReadAll(resp.Body)
	if err != nil {
		return rp, err
	}
	if len(rp.body) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		var m msg
		if json.Unmarshal(rp.body, &m) == nil {
			rp.msgs = append(rp.msgs, m)
		}
	}
	return rp, nil
}

// hotAway: hot.lua was removed lately, so /mcp/hot may be unmounted.
func hotAway(route string) bool {
	return route == "hot" && time.Since(time.Unix(0, lastUnmount.Load())) < 6*time.Second
}

// check5xx reports a 5xx other than 503, and Go paths in an answer.
func check5xx(what string, r *reply) {
	if r != nil && r.status >= 500 && r.status != 503 {
		problem("%s: HTTP %d %s", what, r.status, r.body)
	}
	if r != nil && bytes.Contains(r.body, []byte(".go:")) {
		problem("%s: Go file path in body %s", what, r.body)
	}
	if r != nil {
		for _, e := range r.events {
			if strings.Contains(e.data, ".go:") || strings.Contains(e.data, "goroutine ") {
				problem("%s: Go path in event %s", what, e.data)
			}
		}
	}
}

// toolText is the first text of a tool result, and whether it succeeded.
func toolText(m *msg) (string, bool) {
	if m == nil || m.Error != nil {
		return "", false
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if json.Unmarshal(m.Result, &res) != nil || len(res.Content) == 0 {
		return "", false
	}
	return res.Content[0].Text, !res.IsError
}

// ---- client ----

// sess is one session a worker holds.
type sess struct {
	route  string
	sid    string
	n      int  // expected counter (hib)
	unsure bool // a call that may or may not have run
	// a call given up on may still reach the session later: until then
	// the counter is unsure
	unsureUntil  time.Time
	askBusyUntil time.Time // an unanswered elicitation holds the session's turn until then
	lastEID      string
}

// worker is one client: it runs operations one at a time on its own
// sessions, so it knows what their counters must say.
type worker struct {
	id   int
	rng  *rand.Rand
	sess map[string]*sess // route -> session
	seq  int
}

// nextID is a fresh request id.
func (w *worker) nextID() int { w.seq++; return w.seq }

// initialize opens a session on route, replacing the worker's previous one
// there (deleted, or left to expire).
func (w *worker) initialize(route string, caps map[string]any) *sess {
	count(&ops, "initialize")
	if caps == nil {
		caps = map[string]any{}
	}
	r, err := do("POST", route, req(0, "initialize", map[string]any{"protocolVersion": v25, "capabilities": caps,
		"clientInfo": map[string]any{"name": "soak", "version": "1"}}), "", nil, 20*time.Second)
	if err != nil {
		problem("initialize %s: %v", route, err)
		return nil
	}
	check5xx("initialize "+route, r)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || sid == "" {
		if r.status != 503 && !(r.status == 404 && hotAway(route)) {
			problem("initialize %s: HTTP %d %s", route, r.status, r.body)
		}
		return nil
	}
	n, err := do("POST", route, req(nil, "notifications/initialized", nil), sid, nil, 10*time.Second)
	if err != nil || n.status != 202 {
		problem("initialized %s: %v %v", route, err, n)
	}
	s := &sess{route: route, sid: sid}
	if old := w.sess[route]; old != nil && w.rng.IntN(2) == 0 {
		w.delete(old) // else left to expire: the reaper gets work too
	}
	w.sess[route] = s
	return s
}

// delete ends s with DELETE and checks its id is gone.
func (w *worker) delete(s *sess) {
	count(&ops, "delete")
	markDeleted(s.sid)
	r, err := do("DELETE", s.route, nil, s.sid, nil, 10*time.Second)
	if err != nil {
		problem("DELETE: %v", err)
		return
	}
	check5xx("DELETE", r)
	if r.status != 200 && r.status != 204 && r.status != 404 {
		problem("DELETE: HTTP %d %s", r.status, r.body)
	}
	if w.sess[s.route] == s {
		delete(w.sess, s.route)
	}
	// the id is gone now
	r, err = do("POST", s.route, req(1, "ping", nil), s.sid, nil, 10*time.Second)
	if err == nil && r.status != 404 {
		problem("ping after DELETE: HTTP %d %s", r.status, r.body)
	}
}

// get is the worker's session on route, opened if need be.
func (w *worker) get(route string, caps map[string]any) *sess {
	if s := w.sess[route]; s != nil {
		return s
	}
	return w.initialize(route, caps)
}

// call a tool, plain.
// call calls a tool of s, with a plain POST read to its end within d.
func (w *worker) call(s *sess, name string, args map[string]any, d time.Duration) (*reply, error) {
	if args == nil {
		args = map[string]any{}
	}
	r, err := do("POST", s.route, req(w.nextID(), "tools/call", map[string]any{"name": name, "arguments": args}), s.sid, nil, d)
	if err == nil {
		check5xx("tools/call "+s.route+" "+name, r)
		if r.status == 404 {
			// expired/reaped (ttl) or lost: start over
			delete(w.sess, s.route)
		}
	}
	return r, err
}

// caps are the client capabilities of the sessions asked things.
var caps = map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}}

// opHibInc: one increment of a constantly hibernating session.
func (w *worker) opHibInc() {
	s := w.get("hib", nil)
	if s == nil {
		return
	}
	count(&ops, "hib.inc")
	r, err := w.call(s, "inc", nil, 20*time.Second)
	if err != nil {
		problem("hib inc: %v", err)
		s.unsure = true
		return
	}
	if r.status == 404 {
		count(&ops, "hib.expired")
		return
	}
	t, ok := toolText(r.response())
	if !ok {
		s.unsure = true
		if r.status != 503 {
			problem("hib inc: HTTP %d %s", r.status, r.body)
		}
		return
	}
	got, _ := strconv.Atoi(t)
	if s.unsure || time.Now().Before(s.unsureUntil) {
		s.n, s.unsure = got, false
	} else if got != s.n+1 {
		problem("hib inc: got %d want %d (state lost or doubled)", got, s.n+1)
		s.n = got
	} else {
		s.n = got
	}
}

// opHibParallel: calls of one session run in turn: four at once give four
// consecutive values.
func (w *worker) opHibParallel() {
	s := w.get("hib", nil)
	if s == nil {
		return
	}
	count(&ops, "hib.parallel4")
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	bad := false
	for i := 0; i < 4; i++ {
		id := w.nextID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := do("POST", "hib", req(id, "tools/call", map[string]any{"name": "inc", "arguments": map[string]any{}}), s.sid, nil, 20*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || r.status != 200 {
				bad = true
				return
			}
			t, ok := toolText(r.response())
			if !ok {
				problem("parallel inc: %s", r.body)
				bad = true
				return
			}
			n, _ := strconv.Atoi(t)
			got = append(got, n)
		}()
	}
	wg.Wait()
	if bad {
		s.unsure = true
		return
	}
	sort.Ints(got)
	for i := 1; i < 4; i++ {
		if got[i] != got[i-1]+1 {
			problem("parallel incs of one session gave %v", got)
			break
		}
	}
	if !s.unsure && !time.Now().Before(s.unsureUntil) && got[0] != s.n+1 {
		problem("parallel incs gave %v after %d", got, s.n)
	}
	s.n, s.unsure = got[3], false
}

// opHibSlowDisconnect: a client that goes away mid-call.
func (w *worker) opHibSlowDisconnect() {
	s := w.get("hib", nil)
	if s == nil {
		return
	}
	count(&ops, "hib.slow-disconnect")
	_, err := w.call(s, "slow", nil, time.Duration(50+w.rng.IntN(400))*time.Millisecond)
	s.unsure = true
	s.unsureUntil = time.Now().Add(3 * time.Second)
	_ = err
}

// opHibPushAndListen: pushes to the GET channel, which is opened (resumed
// from the last event seen, mostly) and dropped mid-stream.
func (w *worker) opHibPushAndListen() {
	s := w.get("hib", nil)
	if s == nil {
		return
	}
	tool := "push"
	if w.rng.IntN(3) == 0 {
		tool = "shout"
	}
	count(&ops, "hib."+tool)
	if r, err := w.call(s, tool, nil, 20*time.Second); err != nil {
		problem("hib %s: %v", tool, err)
	} else if r.status == 404 {
		return
	}
	// GET channel, resuming from the last id we saw, dropped mid-stream.
	count(&ops, "get.listen")
	hdr := map[string]string{}
	resumed := s.lastEID != "" && w.rng.IntN(3) > 0
	if resumed {
		hdr["Last-Event-ID"] = s.lastEID
		count(&ops, "get.resume")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(100+w.rng.IntN(1500))*time.Millisecond)
	defer cancel()
	resp, err := client.Do(newReq(ctx, "GET", "hib", nil, s.sid, hdr))
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			problem("GET: %v", err)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == 409 || resp.StatusCode == 404 {
		count(&ops, fmt.Sprintf("get.%d", resp.StatusCode))
		return
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		problem("GET: HTTP %d %s", resp.StatusCode, b)
		return
	}
	seen := map[string]bool{}
	dropAfter := w.rng.IntN(8)
	n := 0
	readSSE(resp.Body, func(e event) bool {
		if e.id != "" {
			if seen[e.id] {
				problem("GET: event id %s twice", e.id)
			}
			seen[e.id] = true
			if resumed && e.id == s.lastEID {
				problem("GET: resumed stream replayed the Last-Event-ID event itself %s", e.id)
			}
			s.lastEID = e.id
		}
		if strings.Contains(e.data, ".go:") {
			problem("GET event has Go path: %s", e.data)
		}
		n++
		return n < dropAfter
	})
}

// opProgress: a progress stream of a concurrent tool, read to its end, or
// dropped and resumed with GET + Last-Event-ID.
func (w *worker) opProgress() {
	s := w.get("prog", caps)
	if s == nil {
		return
	}
	count(&ops, "prog.countdown")
	n := 3 + w.rng.IntN(10)
	body := req(w.nextID(), "tools/call", map[string]any{"name": "countdown", "arguments": map[string]any{"n": n},
		"_meta": map[string]any{"progressToken": fmt.Sprintf("p%d-%d", w.id, w.seq)}})
	drop := w.rng.IntN(3) == 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := client.Do(newReq(ctx, "POST", "prog", body, s.sid, nil))
	if err != nil {
		problem("countdown: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		delete(w.sess, "prog")
		return
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		problem("countdown: HTTP %d %s", resp.StatusCode, b)
		return
	}
	progress, done := 0, false
	var lastID string
	readSSE(resp.Body, func(e event) bool {
		if e.id != "" {
			lastID = e.id
		}
		var m msg
		json.Unmarshal([]byte(e.data), &m)
		if m.Method == "notifications/progress" {
			progress++
			if drop && progress == 2 {
				return false
			}
		}
		if m.Method == "" && (m.Result != nil || m.Error != nil) {
			done = true
			if t, ok := toolText(&m); !ok || t != "done" {
				problem("countdown result %s", e.data)
			}
		}
		return true
	})
	if drop {
		cancel()
		count(&ops, "prog.countdown-dropped")
		if lastID != "" && w.rng.IntN(2) == 0 {
			// resume the POST stream with GET + Last-Event-ID
			count(&ops, "prog.resume-post")
			r, err := do("GET", "prog", nil, s.sid, map[string]string{"Last-Event-ID": lastID}, 20*time.Second)
			if err != nil {
				problem("resume POST stream: %v", err)
				return
			}
			check5xx("resume", r)
			if r.status == 200 && r.response() == nil {
				problem("resumed POST stream ended without the result (%d events)", len(r.events))
			}
		}
		return
	}
	if !done || progress != n {
		problem("countdown n=%d: done=%v progress=%d", n, done, progress)
	}
}

// opCancel: notifications/cancelled for a running call.
func (w *worker) opCancel() {
	s := w.get("prog", caps)
	if s == nil {
		return
	}
	count(&ops, "prog.cancel")
	id := w.nextID()
	body := req(id, "tools/call", map[string]any{"name": "countdown", "arguments": map[string]any{"n": 40}})
	ch := make(chan *reply, 1)
	go func() {
		r, err := do("POST", "prog", body, s.sid, nil, 30*time.Second)
		if err != nil {
			problem("cancelled call: %v", err)
		}
		ch <- r
	}()
	time.Sleep(time.Duration(20+w.rng.IntN(300)) * time.Millisecond)
	c, err := do("POST", "prog", req(nil, "notifications/cancelled", map[string]any{"requestId": id, "reason": "soak"}), s.sid, nil, 10*time.Second)
	if err != nil || (c.status != 202 && c.status != 404) {
		problem("notifications/cancelled: %v %+v", err, c)
	}
	select {
	case r := <-ch:
		if r != nil {
			check5xx("cancelled call", r)
		}
	case <-time.After(20 * time.Second):
		problem("a cancelled call did not end within 20s")
	}
}

// opAsk: the server asks the client (elicitation or sampling) on the POST
// stream; the client answers, answers with an error, or goes away.
func (w *worker) opAsk() {
	s := w.get("prog", caps)
	if s == nil {
		return
	}
	tool := "ask"
	if w.rng.IntN(2) == 0 {
		tool = "sample"
	}
	mode := w.rng.IntN(4) // 0,1: answer; 2: error; 3: disconnect
	count(&ops, fmt.Sprintf("prog.%s.mode%d", tool, mode))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := client.Do(newReq(ctx, "POST", "prog", req(w.nextID(), "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}), s.sid, nil))
	if err != nil {
		problem("ask: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		delete(w.sess, "prog")
		return
	}
	var final *msg
	var seen []string
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		var m msg
		if json.Unmarshal(b, &m) == nil && m.ID != nil {
			final = &m
		}
		seen = append(seen, fmt.Sprintf("HTTP %d %s %s", resp.StatusCode, ct, b))
	}
	readSSE(resp.Body, func(e event) bool {
		seen = append(seen, e.id+" "+e.data)
		var m msg
		json.Unmarshal([]byte(e.data), &m)
		if m.Method == "elicitation/create" || m.Method == "sampling/createMessage" {
			var ans []byte
			switch mode {
			case 0, 1:
				res := map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
				if m.Method == "sampling/createMessage" {
					res = map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hi"}, "model": "m"}
				}
				ans, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
			case 2:
				ans, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -1, "message": "no"}})
			case 3:
				return false
			}
			r, err := do("POST", "prog", ans, s.sid, nil, 10*time.Second)
			if err != nil || r.status != 202 {
				problem("answer to %s: %v %+v", m.Method, err, r)
			}
			return true
		}
		if m.Method == "" && m.ID != nil {
			final = &m
			return false
		}
		return true
	})
	if mode == 3 {
		cancel()
		if w.rng.IntN(2) == 0 {
			count(&ops, "prog.ask.cancelled")
			do("POST", "prog", req(nil, "notifications/cancelled", map[string]any{"requestId": w.seq, "reason": "gone"}), s.sid, nil, 10*time.Second)
		} else {
			s.askBusyUntil = time.Now().Add(6 * time.Second)
		}
		return
	}
	if final.Error != nil && final.Error.Message == "Request timed out" && time.Now().Before(s.askBusyUntil) {
		count(&ops, "prog.ask.timed-out-behind-unanswered")
		return
	}
	if final == nil {
		problem("%s mode %d: no final answer", tool, mode)
		fmt.Fprintf(os.Stderr, "   seen: %q\n", seen)
		return
	}
	t, ok := toolText(final)
	switch {
	case mode < 2 && !ok:
		problem("%s answered: result %s %v", tool, final.Result, final.Error)
	case mode < 2 && tool == "ask" && t != "got accept Ada":
		problem("ask answered: %q", t)
	case mode == 2 && ok:
		problem("%s refused: a success %q", tool, t)
	}
}

// opBad: a tool that crashes, spins past its timeout, hogs memory, fails,
// or sleeps while its client goes away.
func (w *worker) opBad() {
	s := w.get("bad", nil)
	if s == nil {
		return
	}
	tools := []string{"boom", "spin", "nap", "hog", "toolerr", "ok", "ok", "ok"}
	tool := tools[w.rng.IntN(len(tools))]
	d := 20 * time.Second
	if tool == "nap" && w.rng.IntN(2) == 0 {
		d = time.Duration(100+w.rng.IntN(500)) * time.Millisecond
		tool = "nap-disconnect"
	}
	count(&ops, "bad."+tool)
	r, err := w.call(s, strings.TrimSuffix(tool, "-disconnect"), nil, d)
	if tool == "nap-disconnect" {
		return
	}
	if err != nil {
		problem("bad %s: %v", tool, err)
		return
	}
	if r.status == 404 {
		return
	}
	m := r.response()
	if m == nil {
		problem("bad %s: no response: HTTP %d %s", tool, r.status, r.body)
		return
	}
	switch tool {
	case "boom", "spin", "hog", "nap":
		if m.Error == nil {
			if _, ok := toolText(m); ok && tool != "nap" {
				problem("bad %s succeeded: %s", tool, m.Result)
			}
		} else if strings.Contains(m.Error.Message, ".go") {
			problem("bad %s: error message with a Go path: %s", tool, m.Error.Message)
		}
	case "ok":
		if _, ok := toolText(m); !ok {
			problem("bad ok failed: %s %v", m.Result, m.Error)
		}
	}
}

// opStateless: a 2025-11-25 call of a stateless route.
func (w *worker) opStateless() {
	count(&ops, "sl.2025")
	r, err := do("POST", "sl", req(w.nextID(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"x": w.seq}}), "",
		map[string]string{"MCP-Protocol-Version": v25}, 20*time.Second)
	if err != nil {
		problem("stateless: %v", err)
		return
	}
	check5xx("stateless", r)
	if t, ok := toolText(r.response()); !ok || !strings.Contains(t, `"x"`) {
		if r.status != 503 {
			problem("stateless echo: HTTP %d %s", r.status, r.body)
		}
	}
}

// eraReq builds a 2026-07-28 request: its _meta and headers.
func eraReq(id any, method string, params map[string]any) ([]byte, map[string]string) {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": v26,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "soak", "version": "1"}}
	h := map[string]string{"MCP-Protocol-Version": v26, "Mcp-Method": method}
	if n, ok := params["name"].(string); ok {
		h["Mcp-Name"] = n
	}
	return req(id, method, params), h
}

// opEra: 2026-07-28 requests, listens dropped mid-stream among them.
func (w *worker) opEra() {
	routes := []string{"sl", "hib", "prog", "hot"}
	route := routes[w.rng.IntN(len(routes))]
	switch k := w.rng.IntN(5); {
	case k == 0:
		count(&ops, "era.discover")
		b, h := eraReq(w.nextID(), "server/discover", nil)
		r, err := do("POST", route, b, "", h, 20*time.Second)
		if err == nil && r.status == 404 && hotAway(route) {
			return
		}
		if err != nil || r.status != 200 {
			problem("era discover %s: %v %+v", route, err, r)
		}
	case k == 1:
		count(&ops, "era.list")
		b, h := eraReq(w.nextID(), "tools/list", nil)
		r, err := do("POST", route, b, "", h, 20*time.Second)
		if err == nil && r.status == 404 && hotAway(route) {
			return
		}
		if err != nil || r.status != 200 || r.response() == nil || r.response().Error != nil {
			problem("era tools/list %s: %v %+v", route, err, r)
		}
	case k == 2:
		count(&ops, "era.ask")
		b, h := eraReq(w.nextID(), "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}})
		r, err := do("POST", "sl", b, "", h, 20*time.Second)
		if err != nil || r.response() == nil || r.response().Error != nil {
			problem("era ask: %v %+v", err, r)
			return
		}
		var ir struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		json.Unmarshal(r.response().Result, &ir)
		if ir.ResultType != "input_required" || len(ir.InputRequests) != 1 {
			problem("era ask first round: %s", r.response().Result)
			return
		}
		ans := map[string]any{}
		for k := range ir.InputRequests {
			ans[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
		}
		b, h = eraReq(w.nextID(), "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "inputResponses": ans, "requestState": ir.RequestState})
		r, err = do("POST", "sl", b, "", h, 20*time.Second)
		if err != nil {
			problem("era ask retry: %v", err)
			return
		}
		if t, ok := toolText(r.response()); !ok || t != "got Ada" {
			problem("era ask retry: %s", r.body)
		}
	case k == 3:
		count(&ops, "era.listen")
		b, h := eraReq("l"+strconv.Itoa(w.nextID()), "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(100+w.rng.IntN(2000))*time.Millisecond)
		defer cancel()
		lr := "hib"
		if w.rng.IntN(2) == 0 {
			lr = "hot"
		}
		resp, err := client.Do(newReq(ctx, "POST", lr, b, "", h))
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				problem("listen: %v", err)
			}
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode == 404 && hotAway(lr) {
			return
		}
		if resp.StatusCode != 200 {
			bb, _ := io.ReadAll(resp.Body)
			problem("listen: HTTP %d %s", resp.StatusCode, bb)
			return
		}
		readSSE(resp.Body, func(e event) bool { return true })
	default:
		count(&ops, "era.call")
		b, h := eraReq(w.nextID(), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"y": 1}})
		r, err := do("POST", "sl", b, "", h, 20*time.Second)
		if err != nil {
			problem("era call: %v", err)
			return
		}
		check5xx("era call", r)
		if _, ok := toolText(r.response()); !ok && r.status != 503 {
			problem("era call: HTTP %d %s", r.status, r.body)
		}
	}
}

// opMalformed: a request no client should send.
func (w *worker) opMalformed() {
	count(&ops, "malformed")
	routes := []string{"sl", "hib", "prog", "hot", "bad", "nope"}
	route := routes[w.rng.IntN(len(routes))]
	sid := ""
	if s := w.sess["hib"]; s != nil && w.rng.IntN(2) == 0 {
		sid = s.sid
		route = "hib"
	}
	bodies := []string{
		``, `{`, `[]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `null`, `"x"`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":123}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`, `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"nope/nope"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99999}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","arguments":[1,2]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x://y"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":[1]}}}`,
		string(bytes.Repeat([]byte("["), 10000)),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get","arguments":{"a":"` + strings.Repeat("\\u0000", 1000) + `"}}}`,
	}
	hdrs := []map[string]string{nil, {"Content-Type": "text/plain"}, {"Accept": "text/html"}, {"MCP-Protocol-Version": "1999-01-01"},
		{"Mcp-Session-Id": "deadbeef"}, {"Origin": "http://evil.example"}, {"MCP-Protocol-Version": v26, "Mcp-Method": "ping"},
		{"Content-Type": ""}, {"Accept": ""}}
	method := "POST"
	switch w.rng.IntN(10) {
	case 0:
		method = "PUT"
	case 1:
		method = "GET"
	case 2:
		method = "DELETE"
		sid = ""
	}
	r, err := do(method, route, []byte(bodies[w.rng.IntN(len(bodies))]), sid, hdrs[w.rng.IntN(len(hdrs))], 5*time.Second)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			problem("malformed: %v", err)
		}
		return
	}
	check5xx("malformed", r)
}

// opHot: a call or a list of the route the reloader keeps rewriting.
func (w *worker) opHot() {
	s := w.get("hot", nil)
	if s == nil {
		return
	}
	count(&ops, "hot.call")
	if w.rng.IntN(3) == 0 {
		r, err := do("POST", "hot", req(w.nextID(), "tools/list", nil), s.sid, nil, 20*time.Second)
		if err == nil {
			check5xx("hot list", r)
			if r.status == 404 {
				delete(w.sess, "hot")
			}
		}
		return
	}
	r, err := w.call(s, "inc", nil, 20*time.Second)
	if err != nil {
		problem("hot inc: %v", err)
		return
	}
	if r.status == 404 {
		return
	}
	t, ok := toolText(r.response())
	if !ok {
		s.unsure = true
		if r.status != 503 {
			problem("hot inc: HTTP %d %s", r.status, r.body)
		}
		return
	}
	// "v<version> <n>"
	var v, n int
	fmt.Sscanf(t, "v%d %d", &v, &n)
	if s.unsure || s.n == 0 {
		s.n, s.unsure = n, false
	} else if n != s.n+1 {
		problem("hot inc: got %d want %d (%q)", n, s.n+1, t)
		s.n = n
	} else {
		s.n = n
	}
}

// opList: lists, ping, logging/setLevel.
func (w *worker) opList() {
	routes := []string{"hib", "prog", "bad"}
	s := w.get(routes[w.rng.IntN(3)], caps)
	if s == nil {
		return
	}
	methods := []string{"tools/list", "ping", "resources/list", "prompts/list", "logging/setLevel"}
	m := methods[w.rng.IntN(len(methods))]
	count(&ops, "list."+m)
	var params any
	if m == "logging/setLevel" {
		params = map[string]any{"level": []string{"debug", "info", "error"}[w.rng.IntN(3)]}
	}
	r, err := do("POST", s.route, req(w.nextID(), m, params), s.sid, nil, 20*time.Second)
	if err != nil {
		problem("%s: %v", m, err)
		return
	}
	check5xx(m, r)
	if r.status == 404 {
		delete(w.sess, s.route)
	}
}

// run draws weighted operations until stop closes.
func (w *worker) run(stop <-chan struct{}) {
	type op struct {
		wt int
		fn func()
	}
	table := []op{
		{10, w.opHibInc}, {2, w.opHibParallel}, {3, w.opHibSlowDisconnect}, {5, w.opHibPushAndListen}, {4, w.opProgress}, {2, w.opCancel},
		{3, w.opAsk}, {4, w.opBad}, {5, w.opStateless}, {5, w.opEra}, {5, w.opMalformed}, {5, w.opHot}, {4, w.opList},
		{1, func() {
			if s := w.sess[[]string{"hib", "prog", "bad", "hot"}[w.rng.IntN(4)]]; s != nil {
				w.delete(s)
			}
		}},
	}
	total := 0
	for _, o := range table {
		total += o.wt
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		k := w.rng.IntN(total)
		gate.RLock()
		for _, o := range table {
			if k < o.wt {
				o.fn()
				break
			}
			k -= o.wt
		}
		gate.RUnlock()
	}
}

// ---- hot reloader ----

// hotSrc is hot.lua: its version, its hibernation delay, and its version
// in the server info, a tool's name and the results.
const hotSrc = `-- hot.lua version %d
return {
  route = { sessions = true, session_hibernate_ms = %d, session_ttl_ms = 20000 },
  init = function(params)
    return { name = "hot", version = "%d" }, { tools = { listChanged = true } }, { n = 0 }
  end,
  tools = function(state)
    return {
      { name = "inc", description = "inc", input_schema = { type = "object" } },
      { name = "v%d", description = "version tool", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    state.n = (state.n or 0) + 1
    return "v%d " .. state.n
  end,
}
`

// writeAtomic writes content beside path and renames it over it, as
// editors and deploys do.
func writeAtomic(path, content string) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	os.WriteFile(tmp, []byte(content), 0o644)
	os.Rename(tmp, path)
}

// counts of the reloader's doings
var reloads, broken, unmounts, hups int64

// curPID is the server's pid, for SIGHUP.
var curPID atomic.Int64

// reloader rewrites hot.lua every 2 to 4 s until stop closes: a new
// version mostly, else a broken one then fixed, a removal long enough to
// unmount it, one short enough to be a reload, a SIGHUP, or a touch of
// hib.lua, whose sessions hibernate all the time.
func reloader(stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(7, 7))
	path := filepath.Join(dir, "hot.lua")
	hib := filepath.Join(dir, "hib.lua")
	hibSrc, _ := os.ReadFile(hib)
	for v := 2; ; v++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(2000+rng.IntN(2000)) * time.Millisecond):
		}
		atomic.AddInt64(&reloads, 1)
		switch {
		case v%6 == 0:
			atomic.AddInt64(&broken, 1)
			os.WriteFile(path, []byte("return { route = { sessions = true ,, } -- broken\n"), 0o644)
			time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
			writeAtomic(path, fmt.Sprintf(hotSrc, v, 10*(v%3), v, v, v))
		case v%11 == 0:
			// hot.lua gone for longer than the second a removal waits: its
			// route unmounts, its sessions end; then it comes back
			atomic.AddInt64(&unmounts, 1)
			lastUnmount.Store(time.Now().UnixNano())
			os.Remove(path)
			time.Sleep(time.Duration(1200+rng.IntN(1500)) * time.Millisecond)
			writeAtomic(path, fmt.Sprintf(hotSrc, v, 10*(v%3), v, v, v))
		case v%13 == 0:
			// gone and back within the second: a reload
			lastUnmount.Store(time.Now().UnixNano()) // a watcher may take it for a removal
			os.Remove(path)
			time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
			writeAtomic(path, fmt.Sprintf(hotSrc, v, 10*(v%3), v, v, v))
		case v%9 == 0:
			atomic.AddInt64(&hups, 1)
			if p := curPID.Load(); p != 0 {
				syscall.Kill(int(p), syscall.SIGHUP)
			}
		case v%7 == 0:
			// a reload of the constantly hibernating route
			os.WriteFile(hib, append(append([]byte{}, hibSrc...), []byte(fmt.Sprintf("\n-- touch %d\n", v))...), 0o644)
		default:
			if rng.IntN(2) == 0 {
				writeAtomic(path, fmt.Sprintf(hotSrc, v, 10*(v%3), v, v, v))
			} else {
				os.WriteFile(path, []byte(fmt.Sprintf(hotSrc, v, 10*(v%3), v, v, v)), 0o644)
			}
		}
	}
}

// ---- metrics ----

// snapshot is what the metrics and /proc say of the server.
type snapshot struct {
	goroutines, fds, heap, luaStates, sessions float64
	procFDs                                    int
	states                                     map[string]float64
}

// metricRE matches a sample line of the Prometheus text format.
var metricRE = regexp.MustCompile(`^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$`)

// scrape reads the metrics and counts the open descriptors of pid.
func scrape(pid int) snapshot {
	s := snapshot{states: map[string]float64{}}
	r, err := http.Get("http://" + *maddr + "/metrics")
	if err != nil {
		problem("metrics: %v", err)
		return s
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		m := metricRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		switch m[1] {
		case "go_goroutines":
			s.goroutines = v
		case "process_open_fds":
			s.fds = v
		case "go_memstats_heap_alloc_bytes":
			s.heap = v
		case "luamcp_lua_states":
			s.luaStates += v
			s.states[m[2]] = v
		case "luamcp_sessions_active":
			s.sessions += v
		}
	}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	s.procFDs = len(ents)
	return s
}

func (s snapshot) String() string {
	keys := make([]string, 0, len(s.states))
	for k := range s.states {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%g", k, s.states[k])
	}
	return fmt.Sprintf("goroutines=%g fds=%g procfds=%d heap=%.1fMiB luaStates=%g sessions=%g [%s ]",
		s.goroutines, s.fds, s.procFDs, s.heap/1048576, s.luaStates, s.sessions, b.String())
}

// tlsFiles are the certificate and key of -tls.
var tlsFiles []string

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir.
func selfSigned(dir string) []string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		panic(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "soak"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(crand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		panic(err)
	}
	files := []string{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
	os.WriteFile(files[0], pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(files[1], pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return files
}

// ---- main ----

func main() {
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: soak -bin LUAMCP [-dur 12m] [-clients 7] [-restart-at 0.5] [-under-load]")
		os.Exit(2)
	}
	base = "http://" + *addr
	if *useTLS {
		base = "https://" + *addr
	}
	tmp, err := os.MkdirTemp("", "luamcp-soak-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	dir, sessFile = filepath.Join(tmp, "scripts"), filepath.Join(tmp, "sessions.json")
	if err := os.CopyFS(tmp, scripts); err != nil {
		panic(err)
	}
	if *useTLS {
		tlsFiles = selfSigned(tmp)
		client.Transport = &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 5 * time.Second,
			ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	}
	os.Remove(*logPath)
	hotPath := filepath.Join(dir, "hot.lua")
	os.WriteFile(hotPath, []byte(fmt.Sprintf(hotSrc, 1, 10, 1, 1, 1)), 0o644)

	srv := startServer()
	time.Sleep(2 * time.Second)
	b0 := scrape(srv.pid())
	fmt.Printf("baseline: %v\n", b0)

	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	workers := make([]*worker, *nclients)
	for i := range workers {
		workers[i] = &worker{id: i, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano()))), sess: map[string]*sess{}}
		wg.Add(1)
		go func(w *worker) { defer wg.Done(); w.run(stop) }(workers[i])
	}
	rstop := make(chan struct{})
	go reloader(rstop)

	ticker := time.NewTicker(30 * time.Second)
	restarted := *restartAt == 0
	var resumedChecked, resumedOK int
	for time.Since(start) < *dur {
		<-ticker.C
		fmt.Printf("%s t=%v %v\n", time.Now().Format("15:04:05"), time.Since(start).Round(time.Second), scrape(srv.pid()))
		if !restarted && time.Since(start) > time.Duration(float64(*dur)**restartAt) {
			restarted = true
			if *underLoad {
				fmt.Println("restart under load")
				restarting.Store(true)
				t0 := time.Now()
				if err := srv.stop(); err != nil {
					problem("first server exit: %v", err)
				}
				fmt.Printf("stopped in %v\n", time.Since(t0))
				srv = startServer()
				fmt.Printf("restarted in %v; %v\n", time.Since(t0), scrape(srv.pid()))
				time.Sleep(time.Second)
				restarting.Store(false)
				continue
			}
			fmt.Println("restart: pausing load")
			gate.Lock()
			pre := scrape(srv.pid())
			fmt.Printf("before restart: %v\n", pre)
			t0 := time.Now()
			if err := srv.stop(); err != nil {
				problem("first server exit: %v", err)
			}
			fmt.Printf("stopped in %v\n", time.Since(t0))
			srv = startServer()
			fmt.Printf("restarted; %v\n", scrape(srv.pid()))
			// every worker's hib and hot sessions must be back, with their counters
			for _, w := range workers {
				for _, route := range []string{"hib", "hot"} {
					s := w.sess[route]
					if s == nil {
						continue
					}
					resumedChecked++
					r, err := w.call(s, map[string]string{"hib": "get", "hot": "inc"}[route], nil, 20*time.Second)
					if err == nil && r.status == 404 && route == "hot" {
						fmt.Println("hot session 404 after restart (hot.lua may have been away)")
						continue
					}
					if err != nil || r.status != 200 {
						problem("after restart, %s session: %v %+v", route, err, r)
						continue
					}
					t, _ := toolText(r.response())
					if route == "hib" {
						if n, _ := strconv.Atoi(t); !s.unsure && n != s.n {
							problem("after restart, hib counter %d, want %d", n, s.n)
							continue
						}
					} else {
						var v, n int
						fmt.Sscanf(t, "v%d %d", &v, &n)
						if !s.unsure && s.n != 0 && n != s.n+1 {
							problem("after restart, hot counter %d, want %d", n, s.n+1)
							continue
						}
						s.n, s.unsure = n, false
					}
					resumedOK++
				}
			}
			fmt.Printf("resumed sessions checked %d ok %d\n", resumedChecked, resumedOK)
			gate.Unlock()
		}
	}
	close(stop)
	close(rstop)
	wg.Wait()
	loadTime := time.Since(start)
	fmt.Printf("load stopped after %v\n", loadTime)
	// restore hot.lua to a good version (the reloader may have stopped mid-break)
	os.WriteFile(hotPath, []byte(fmt.Sprintf(hotSrc, 999, 10, 999, 999, 999)), 0o644)
	for _, w := range workers {
		for _, s := range w.sess {
			w.delete(s)
		}
	}
	// sessions nobody DELETEd expire after 20 s (session_ttl_ms)
	var end snapshot
	for i := 0; i < 20; i++ {
		time.Sleep(3 * time.Second)
		end = scrape(srv.pid())
		fmt.Printf("settling: %v\n", end)
		if end.sessions == 0 && end.goroutines <= b0.goroutines+5 {
			break
		}
	}
	time.Sleep(2 * time.Second)
	end = scrape(srv.pid())
	fmt.Printf("final:    %v\nbaseline: %v\n", end, b0)
	if end.sessions != 0 {
		problem("sessions left after the load: %g", end.sessions)
	}
	if end.goroutines > b0.goroutines+10 {
		problem("goroutines %g vs baseline %g", end.goroutines, b0.goroutines)
	}
	if end.procFDs > b0.procFDs+5 {
		problem("fds %d vs baseline %d", end.procFDs, b0.procFDs)
	}
	// goroutine dump on the way out (SIGQUIT), then the logs
	srv.cmd.Process.Signal(syscall.SIGQUIT)
	<-srv.done
	fmt.Printf("reloads %d (broken %d, unmounts %d, SIGHUPs %d)\n", reloads, broken, unmounts, hups)
	var names []string
	ops.Range(func(k, v any) bool {
		names = append(names, fmt.Sprintf("%-28s %d", k, atomic.LoadInt64(v.(*int64))))
		return true
	})
	sort.Strings(names)
	var tot int64
	ops.Range(func(k, v any) bool { tot += atomic.LoadInt64(v.(*int64)); return true })
	fmt.Printf("operations: %d in %v\n  %s\n", tot, loadTime.Round(time.Second), strings.Join(names, "\n  "))
	crashes := scanLog()
	n, hard := 0, 0
	problems.Range(func(k, v any) bool {
		fmt.Printf("PROBLEM x%d: %s\n", atomic.LoadInt64(v.(*int64)), k)
		n++
		if !strings.HasPrefix(k.(string), "[during restart]") {
			hard++
		}
		return true
	})
	fmt.Printf("%d distinct problems (%d outside the restart's window)\n", n, hard)
	if hard > 0 || crashes > 0 {
		os.Exit(1)
	}
}

// scanLog prints what the server's log holds of races, panics and warnings,
// and returns the count of races, panics and fatal errors before the final
// SIGQUIT (whose goroutine dump is wanted).
func scanLog() int {
	data, _ := os.ReadFile(*logPath)
	if i := bytes.Index(data, []byte("SIGQUIT")); i >= 0 {
		fmt.Printf("goroutines in the final dump: %d\n", bytes.Count(data[i:], []byte("\ngoroutine ")))
		data = data[:i]
	}
	crashes := 0
	for _, marker := range []string{"DATA RACE", "panic", "fatal error", "goroutine ", "level=ERROR", "level=WARN"} {
		c := bytes.Count(data, []byte(marker))
		fmt.Printf("log %-12q %d\n", marker, c)
		if marker != "level=ERROR" && marker != "level=WARN" {
			crashes += c
		}
	}
	// distinct messages of WARN/ERROR lines
	msgs := map[string]int{}
	re := regexp.MustCompile(`level=(WARN|ERROR) msg="?([^"=]*)`)
	for _, line := range strings.Split(string(data), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			msgs[m[1]+" "+m[2]]++
		}
	}
	for k, v := range msgs {
		fmt.Printf("  %5d %s\n", v, k)
	}
	return crashes
}
