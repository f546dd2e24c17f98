package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The host library (host-api.md) end to end: testdata/hostlib/world.lua and
// wild.lua, served over real HTTP, reach a fake API on 127.0.0.1 (fakeAPI),
// files in a temporary folder and sh. Every module's success path and every
// refusal the issue lists runs through the official Go SDK client and the
// official TypeScript SDK client (node/hostlib.mjs).

func init() {
	// env.get's success path: the environment is the process's, and tests
	// that run in parallel cannot use t.Setenv.
	os.Setenv("LUAMCP_E2E_VALUE", "from the environment")
}

// fakeAPI is the HTTP API the scripts call.
type fakeAPI struct {
	*httptest.Server
	inFlight, maxInFlight atomic.Int32
	slowStarted           chan struct{}
	slowClosed            chan time.Time // when a /slow request's connection went away
}

func newFakeAPI(t *testing.T) *fakeAPI {
	api := &fakeAPI{slowStarted: make(chan struct{}, 16), slowClosed: make(chan time.Time, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"method": r.Method, "query": r.URL.RawQuery,
			"ua": r.UserAgent(), "ct": r.Header.Get("Content-Type"), "body": string(body)})
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, strings.Repeat("x", 1000)) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		api.slowStarted <- struct{}{}
		select {
		case <-r.Context().Done():
			api.slowClosed <- time.Now()
		case <-time.After(waitLong):
		}
	})
	mux.HandleFunc("/count", func(w http.ResponseWriter, r *http.Request) {
		n := api.inFlight.Add(1)
		for m := api.maxInFlight.Load(); n > m && !api.maxInFlight.CompareAndSwap(m, n); m = api.maxInFlight.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		api.inFlight.Add(-1)
		io.WriteString(w, r.URL.Query().Get("i"))
	})
	api.Server = httptest.NewServer(mux)
	t.Cleanup(api.Close)
	return api
}

// timedOut consumes the /slow request of the "request timeout" case: it
// started, and its connection closed.
func (api *fakeAPI) timedOut(t *testing.T) {
	t.Helper()
	select {
	case <-api.slowStarted:
	case <-time.After(waitLong):
		t.Fatal("the API never got the request that times out")
	}
	select {
	case <-api.slowClosed:
	case <-time.After(waitLong):
		t.Fatal("the timed-out request's connection stayed open")
	}
}

func (api *fakeAPI) hostPort() string { return strings.TrimPrefix(api.URL, "http://") }

// startWorld mounts world.lua (granted the fake API) and wild.lua (granted
// "*") in a folder with data/ (readable), out/ (writable) and secret/ (not
// granted), where data/link leads to secret/.
func startWorld(t *testing.T, api *fakeAPI) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "hostlib", "world.lua"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("world.lua", strings.ReplaceAll(string(src), "{{API}}", api.hostPort()))
	copyFile(t, filepath.Join("testdata", "hostlib", "wild.lua"), filepath.Join(dir, "wild.lua"))
	write("data/a.txt", "alpha")
	write("out/keep.txt", "")
	write("secret/s.txt", "secret")
	if err := os.Symlink("../secret", filepath.Join(dir, "data", "link")); err != nil {
		t.Fatal(err)
	}
	return startHost(t, dir), dir
}

// hostCase is one tool call and the text it must answer; it is also the
// JSON node/hostlib.mjs reads.
type hostCase struct {
	Name     string         `json:"name"`
	Route    string         `json:"route"`
	Tool     string         `json:"tool"`
	Args     map[string]any `json:"args"`
	Want     string         `json:"want"`
	Contains bool           `json:"contains"` // Want is a part of the text
	IsError  bool           `json:"isError"`
}

// hostCases are every module's success path and every refusal. client names
// the client, so that files the cases write do not clash.
func hostCases(api *fakeAPI, client string) []hostCase {
	nums := make([]string, 50)
	for i := range nums {
		nums[i] = strconv.Itoa(i + 1)
	}
	port := api.hostPort()[strings.LastIndexByte(api.hostPort(), ':')+1:]
	return []hostCase{
		// http
		{Name: "http get", Route: "world", Tool: "http_get", Args: map[string]any{"path": "/echo?x=1"},
			Want: `200 {"body":"","ct":"","method":"GET","query":"x=1","ua":"luamcp"}`},
		{Name: "http post", Route: "world", Tool: "http_post", Args: map[string]any{"body": map[string]any{"k": "v"}},
			Want: `POST application/json {"k":"v"}`},
		{Name: "request_all: 50, in order", Route: "world", Tool: "request_all", Args: map[string]any{"n": 50},
			Want: strings.Join(nums, ",")},
		{Name: "host not allowed", Route: "world", Tool: "http_url", Args: map[string]any{"url": "http://example.com/"},
			Want: "http: host example.com is not allowed (route.allow.http)", IsError: true},
		{Name: "redirect to a host not allowed", Route: "world", Tool: "http_get",
			Args: map[string]any{"path": "/redirect?to=http://127.0.0.1:1/"},
			Want: "http: redirect to 127.0.0.1:1 is not allowed (route.allow.http)", IsError: true},
		{Name: "a name that resolves to 127.0.0.1 through *", Route: "wild", Tool: "http_url",
			Args: map[string]any{"url": "http://localhost:" + port + "/echo"},
			Want: ", a loopback address: only an entry that names it literally allows it (route.allow.http)", Contains: true, IsError: true},
		{Name: "a loopback address through *", Route: "wild", Tool: "http_url", Args: map[string]any{"url": api.URL + "/echo"},
			Want: "http: host " + api.hostPort() + " is a loopback address: only an entry that names it literally allows it (route.allow.http)", IsError: true},
		{Name: "cloud metadata through *", Route: "wild", Tool: "http_url", Args: map[string]any{"url": "http://169.254.169.254/latest/"},
			Want: "http: host 169.254.169.254 is a link-local address: only an entry that names it literally allows it (route.allow.http)", IsError: true},
		{Name: "body over max_bytes", Route: "world", Tool: "http_get", Args: map[string]any{"path": "/big", "max_bytes": 999},
			Want: "http: response body is larger than max_bytes (999)", IsError: true},
		{Name: "request timeout", Route: "world", Tool: "http_get", Args: map[string]any{"path": "/slow", "timeout_ms": 100},
			Want: "http: timed out after 100 ms", IsError: true},
		// fs
		{Name: "fs read", Route: "world", Tool: "fs_read", Args: map[string]any{"path": "data/a.txt"}, Want: "alpha"},
		{Name: "fs write", Route: "world", Tool: "fs_write", Args: map[string]any{"path": "out/" + client + ".txt", "data": "written"},
			Want: "written in ", Contains: true},
		{Name: ".. escaping a root", Route: "world", Tool: "fs_read", Args: map[string]any{"path": "data/../secret/s.txt"},
			Want: "fs: data/../secret/s.txt escapes its root", IsError: true},
		{Name: "a symlink escaping a root", Route: "world", Tool: "fs_read", Args: map[string]any{"path": "data/link/s.txt"},
			Want: "fs: data/link/s.txt escapes its root", IsError: true},
		{Name: "a write outside write", Route: "world", Tool: "fs_write", Args: map[string]any{"path": "data/new.txt", "data": "x"},
			Want: "fs: data/new.txt is not in a writable folder (route.allow.write)", IsError: true},
		{Name: "a path outside every root", Route: "world", Tool: "fs_read", Args: map[string]any{"path": "secret/s.txt"},
			Want: "fs: secret/s.txt is outside the allowed folders (route.allow.read, route.allow.write)", IsError: true},
		// env
		{Name: "env get", Route: "world", Tool: "env_get", Args: map[string]any{"name": "LUAMCP_E2E_VALUE"}, Want: "from the environment"},
		{Name: "env name not allowed", Route: "world", Tool: "env_get", Args: map[string]any{"name": "HOME"},
			Want: "env: HOME is not allowed (route.allow.env)", IsError: true},
		// exec
		{Name: "exec run", Route: "world", Tool: "exec_run", Args: map[string]any{"args": []string{"sh", "-c", "cat; pwd", "x"}, "stdin": "in ", "cwd": "data"},
			Want: "0:in /", Contains: true},
		{Name: "program not in exec", Route: "world", Tool: "exec_run", Args: map[string]any{"args": []string{"ls", "/"}},
			Want: "exec: ls is not allowed (route.allow.exec)", IsError: true},
		{Name: "exec child that ignores SIGTERM and forks", Route: "world", Tool: "exec_run", Args: map[string]any{
			"args":       []string{"sh", "-c", "trap '' TERM; echo $$ > out/" + client + ".pid; (trap '' TERM; sleep 30) & sleep 30 & wait"},
			"timeout_ms": 300},
			Want: "exec: sh timed out after 300 ms", IsError: true},
		// the pure modules
		{Name: "pure modules", Route: "world", Tool: "pure",
			Want: `{"a":[],"b":null} | bHVhbWNw | ba7816bf | 1970-01-01T00:00:00Z | 1+22+333 | https://example.com/s?q=a+b`},
	}
}

// checkCase compares a tool's text and error flag with c.
func checkCase(t *testing.T, c hostCase, text string, isError bool) {
	t.Helper()
	ok := text == c.Want
	if c.Contains {
		ok = strings.Contains(text, c.Want)
	}
	if !ok || isError != c.IsError {
		t.Errorf("%s: %s(%v) = %q (isError %v), want %q (isError %v)", c.Name, c.Tool, c.Args, text, isError, c.Want, c.IsError)
	}
}

// runCasesGo runs the cases with the Go SDK client, and closes its sessions.
func runCasesGo(t *testing.T, s *testServer, cases []hostCase) {
	t.Helper()
	clients := map[string]*goClient{}
	defer func() {
		for _, cl := range clients {
			cl.close()
		}
	}()
	for _, c := range cases {
		cl := clients[c.Route]
		if cl == nil {
			cl = connectGo(t, s.url(c.Route), nil, latestVersion)
			clients[c.Route] = cl
		}
		res := cl.call(t, c.Tool, c.Args)
		checkCase(t, c, goText(t, res), res.IsError)
	}
}

// close ends the session and drops the client's connections.
func (c *goClient) close() {
	_ = c.Close()
	c.watch.base.CloseIdleConnections()
}

// groupAlive lists the live (not zombie) processes of process group pgid.
func groupAlive(t *testing.T, pgid int) []string {
	t.Helper()
	var live []string
	forProcesses(t, func(stat string, fields []string) {
		if fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			live = append(live, stat)
		}
	})
	return live
}

// forProcesses calls fn with each process's /proc stat line and its fields
// after the command name (state, ppid, pgrp, ...).
func forProcesses(t *testing.T, fn func(stat string, fields []string)) {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if fields := strings.Fields(s[end+1:]); end > 0 && len(fields) > 2 {
			fn(s[:end+1], fields)
		}
	}
}

// wantGroupGone waits until the process group whose leader wrote its pid in
// pidFile has no live process left.
func wantGroupGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the exec child did not write its pid: %v", err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLong)
	for live := groupAlive(t, pgid); len(live) > 0; live = groupAlive(t, pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantBoundedFanOut checks request_all's concurrency as the API saw it.
func wantBoundedFanOut(t *testing.T, api *fakeAPI) {
	t.Helper()
	if m := api.maxInFlight.Load(); m > 16 || m < 2 {
		t.Errorf("request_all had %d requests in flight at once, want 2 to 16", m)
	}
}

// cancelSlowCall starts a call of the /slow endpoint with the Go SDK, cancels
// it once the API has the request, and checks that the API's connection is
// closed promptly and that the server serves on.
func cancelSlowCall(t *testing.T, s *testServer, api *fakeAPI) {
	t.Helper()
	cl := connectGo(t, s.url("world"), nil, latestVersion)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cl.CallTool(ctx, &sdk.CallToolParams{Name: "http_get", Arguments: map[string]any{"path": "/slow"}})
		done <- err
	}()
	select {
	case <-api.slowStarted:
	case <-time.After(waitLong):
		t.Fatal("the API never got the slow request")
	}
	cancelled := time.Now()
	cancel()
	wantPromptClose(t, api, cancelled)
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
	s.logs.waitFor(t, "Lua call interrupted", 1)
	cl.wantText(t, "env_get", map[string]any{"name": "LUAMCP_E2E_VALUE"}, "from the environment")
	cl.close()
}

// cancelBound is how soon after the client cancels the API must see its
// connection close: the issue asks for 100 ms; the rest is margin for a
// loaded 2-core machine under the race detector.
const cancelBound = 100*time.Millisecond + 400*time.Millisecond

func wantPromptClose(t *testing.T, api *fakeAPI, cancelled time.Time) {
	t.Helper()
	select {
	case closed := <-api.slowClosed:
		d := closed.Sub(cancelled)
		t.Logf("the API saw the connection close %v after the client cancelled", d)
		if d > cancelBound {
			t.Errorf("the API's connection closed %v after the cancel, want within %v", d, cancelBound)
		}
	case <-time.After(waitLong):
		t.Fatal("the API's connection stayed open after the client cancelled")
	}
}

func TestHostlibGoSDK(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	s, dir := startWorld(t, api)
	runCasesGo(t, s, hostCases(api, "go"))
	api.timedOut(t)
	wantBoundedFanOut(t, api)
	wantGroupGone(t, filepath.Join(dir, "out", "go.pid"))
	cancelSlowCall(t, s, api)
}

func TestHostlibTSSDK(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	s, dir := startWorld(t, api)
	cases, err := json.Marshal(hostCases(api, "ts"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(file, cases, 0o644); err != nil {
		t.Fatal(err)
	}
	lines := runNode(t, 60*time.Second, "hostlib.mjs", s.srv.URL, file)
	api.timedOut(t)
	wantBoundedFanOut(t, api)
	wantGroupGone(t, filepath.Join(dir, "out", "ts.pid"))

	// The script's last lines: the cancellation, then {"done": true}.
	var cancelledAt int64
	done := false
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if m["ok"] == "cancelled" {
			cancelledAt = int64(m["at"].(float64))
		}
		done = done || m["done"] == true
	}
	if !done || cancelledAt == 0 {
		t.Fatalf("hostlib.mjs did not finish: %q", lines)
	}
	wantPromptClose(t, api, time.UnixMilli(cancelledAt))
}

// TestHostlibNoLeaks: after every module ran, with refusals, a cancelled
// HTTP call and a killed process group, a shut-down server leaves no
// goroutine, no file descriptor and no child process behind.
func TestHostlibNoLeaks(t *testing.T) {
	warmUp(t)
	// The API outlives the server: what the server held open to it must
	// close with the server.
	api := newFakeAPI(t)
	baseGoroutines, baseFDs := runtime.NumGoroutine(), openFDs(t)
	s, dir := startWorld(t, api)
	runCasesGo(t, s, hostCases(api, "leak"))
	api.timedOut(t)
	wantGroupGone(t, filepath.Join(dir, "out", "leak.pid"))
	cancelSlowCall(t, s, api)
	s.close()

	settle(t, baseGoroutines, "after Shutdown")
	deadline := time.Now().Add(waitLong)
	for n := openFDs(t); n > baseFDs; n = openFDs(t) {
		if time.Now().After(deadline) {
			t.Fatalf("%d file descriptors open after Shutdown, %d before", n, baseFDs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var children []string
	forProcesses(t, func(stat string, fields []string) {
		if fields[0] != "Z" && fields[1] == strconv.Itoa(os.Getpid()) {
			children = append(children, stat)
		}
	})
	if len(children) > 0 {
		t.Errorf("child processes left: %v", children)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}
