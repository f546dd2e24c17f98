package host_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/internal/syncbuf"
)

// savedScript keeps a counter, can put a function in its state (which no
// file can hold), pushes to its own session, and hibernates at once, so
// that its sessions are saved from their frozen state.
const savedScript = `local mcp = require("mcp")
return {
  route = { sessions = true, session_hibernate_ms = 1 },
  init = function(params)
    return { name = "saved", version = "1" }, { tools = {}, resources = { subscribe = true } }, { n = 0 }
  end,
  tools = {
    { name = "count", description = "count", input_schema = { type = "object" } },
    { name = "keepfn", description = "keep a function", input_schema = { type = "object" } },
    { name = "poke", description = "push to this session", input_schema = { type = "object" } },
    { name = "touch", description = "announce that mem://x changed", input_schema = { type = "object" } },
  },
  handle_tool = function(name, args, ctx, state)
    if name == "count" then state.n = state.n + 1; return tostring(state.n) end
    if name == "keepfn" then state.f = function() end; return "kept" end
    if name == "poke" then mcp.notify(ctx.session_id, "notifications/test/poke", { n = state.n }); return "poked" end
    mcp.resource_updated("mem://x")
    return "touched"
  end,
  resources = function() return { { uri = "mem://x", name = "x" } } end,
  read_resource = function(uri) return { { uri = uri, text = "x" } } end,
  terminate = function(reason, state) print("terminated " .. reason .. " n=" .. tostring(state.n)) end,
}
`

// TestSessionsFile: host.Config.SessionsFile carries sessions from one host
// to the next: their state (saved asleep, here), resource subscriptions
// and event numbers; terminate runs only for a session whose state cannot
// be saved; a stateless route saves nothing; the next host resumes them
// before it serves and removes the file.
func TestSessionsFile(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"saved.lua": savedScript,
		"st.lua":    server(`{}`, "echo"),
	})
	file := filepath.Join(t.TempDir(), "sessions.json")
	logs := &syncbuf.Buffer{}
	cfg := host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	url := srv.URL + "/mcp/saved"
	call := func(url, sid, tool string) string {
		t.Helper()
		_, res := rpc(t, url, sid, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}})
		return toolText(t, res)
	}
	initialize := func(url string) string {
		t.Helper()
		resp, _ := rpc(t, url, "", "initialize", initParams)
		return resp.Header.Get("Mcp-Session-Id")
	}
	kept, lost := initialize(url), initialize(url)
	for range 3 {
		call(url, kept, "count")
	}
	call(url, kept, "poke") // GET-channel event 1, kept unread
	rpc(t, url, kept, "resources/subscribe", map[string]any{"uri": "mem://x"})
	call(url, lost, "count")
	call(url, lost, "keepfn")
	call(srv.URL+"/mcp/st", "", "echo")
	// kept hibernates (lost cannot: its state holds a function), so that
	// it is saved from its frozen state.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), `session hibernated" script=saved session=`+logcap.Session(kept)); {
		if time.Now().After(deadline) {
			t.Fatalf("the session never hibernated:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if n := strings.Count(logs.String(), "terminated"); n != 1 || !strings.Contains(logs.String(), "terminated shutdown n=1") {
		t.Errorf("terminate ran %d times, want once, for the session whose state holds a function:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "session not saved") {
		t.Errorf("no warning for the session that could not be saved:\n%s", logs.String())
	}

	cfg.Logger = slog.New(slog.DiscardHandler)
	h = startHost(t, cfg)
	srv = httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	url = srv.URL + "/mcp/saved"
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the sessions file stays once read: %v", err)
	}
	if got := call(url, kept, "count"); got != "4" {
		t.Errorf("the saved session counts %s, want 4", got)
	}
	if resp, err := http.DefaultClient.Do(newRPCRequest(t, url, lost, "ping", nil)); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("the session that was not saved: %v %v, want 404", resp.StatusCode, err)
	}
	// Event numbers go on from 1: a GET resuming after it gets the next
	// push, and the subscription made before the restart holds.
	get := openGet(t, url, kept, "1")
	call(url, kept, "poke")
	if id, data := get.next(t); id != "2" || !strings.Contains(data, `"n":4`) {
		t.Errorf("first push after the restart: id %q %s, want id 2", id, data)
	}
	call(url, kept, "touch")
	if _, data := get.next(t); !strings.Contains(data, "notifications/resources/updated") {
		t.Errorf("after the restart a subscribed session got %s, want notifications/resources/updated", data)
	}
}

// TestSessionsFileUnreadable: a sessions file that cannot be read, or that
// others may read (its session ids are secrets no longer), is set aside with
// a ".bad" suffix and logged; the host serves without it.
func TestSessionsFileUnreadable(t *testing.T) {
	dir := writeDir(t, map[string]string{"saved.lua": savedScript})
	file := filepath.Join(t.TempDir(), "sessions.json")
	for name, content := range map[string]string{
		"not json":           `{"format":"luamcp-sessions","version":1,"routes":{`,
		"another format":     `{"format":"luamcp-sessions","version":99,"routes":{}}`,
		"readable by others": `{"format":"luamcp-sessions","version":1,"routes":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if name == "readable by others" {
				if err := os.Chmod(file, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			logs := &syncbuf.Buffer{}
			h := startHost(t, host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if len(h.Routes()) != 1 {
				t.Fatalf("routes: %v", h.Routes())
			}
			if b, err := os.ReadFile(file + ".bad"); err != nil || string(b) != content {
				t.Errorf("the file was not set aside whole: %v", err)
			}
			if !strings.Contains(logs.String(), "saved sessions not resumed") {
				t.Errorf("log:\n%s", logs.String())
			}
			os.Remove(file + ".bad")
		})
	}
	// A second unreadable file is set aside beside the first, which stays:
	// it was renamed over it before.
	t.Run("twice", func(t *testing.T) {
		for i, content := range []string{`{"first"`, `{"second"`} {
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			startHost(t, host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Shutdown(context.Background())
			if i == 0 {
				os.Remove(file) // the shutdown wrote an empty one
			}
		}
		for name, want := range map[string]string{file + ".bad": `{"first"`, file + ".bad.1": `{"second"`} {
			if b, err := os.ReadFile(name); err != nil || string(b) != want {
				t.Errorf("%s: %q, %v; want %q", name, b, err, want)
			}
		}
	})
}

// TestSessionsFileUnwritable: a sessions file that could not be written at
// shutdown stops New at once, before any session could be lost to it.
func TestSessionsFileUnwritable(t *testing.T) {
	dir := writeDir(t, map[string]string{"saved.lua": savedScript})
	folder := t.TempDir()
	for name, file := range map[string]string{
		"a folder":       folder,
		"missing folder": filepath.Join(folder, "absent", "sessions.json"),
	} {
		t.Run(name, func(t *testing.T) {
			h, err := host.New(host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.DiscardHandler)})
			if err == nil {
				h.Shutdown(context.Background())
				t.Fatal("New took a sessions file it could not write")
			}
			if !strings.Contains(err.Error(), "sessions file") {
				t.Errorf("error %q does not name the sessions file", err)
			}
		})
	}
}

// TestSessionsFileWriteFails: sessions saved for a file that cannot be
// written at shutdown (its folder went away since New checked it) are not
// lost silently: they end as without the file, their terminate run, and
// Shutdown reports the failure.
func TestSessionsFileWriteFails(t *testing.T) {
	dir := writeDir(t, map[string]string{"saved.lua": savedScript})
	folder := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	h, err := host.New(host.Config{Dir: dir, SessionsFile: filepath.Join(folder, "sessions.json"), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	url := srv.URL + "/mcp/saved"
	for range 2 {
		resp, _ := rpc(t, url, "", "initialize", initParams)
		sid := resp.Header.Get("Mcp-Session-Id")
		rpc(t, url, sid, "tools/call", map[string]any{"name": "count", "arguments": map[string]any{}})
	}
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err == nil || !strings.Contains(err.Error(), "saving sessions") {
		t.Errorf("Shutdown = %v, want the failed write", err)
	}
	if n := strings.Count(logs.String(), "terminated shutdown n=1"); n != 2 {
		t.Errorf("terminate ran %d times, want once per session not kept:\n%s", n, logs.String())
	}
}

// sseReader reads the events of a GET channel.
type sseReader struct {
	lines *bufio.Scanner
	resp  *http.Response
}

// openGet opens the session's GET channel with Last-Event-ID lastID.
func openGet(t *testing.T, url, sid, lastID string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // liveness bound only
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: status %d", resp.StatusCode)
	}
	return &sseReader{lines: bufio.NewScanner(resp.Body), resp: resp}
}

// next returns the id and data of the next event.
func (r *sseReader) next(t *testing.T) (id, data string) {
	t.Helper()
	for r.lines.Scan() {
		line := r.lines.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && data != "":
			return id, data
		}
	}
	t.Fatalf("the GET channel ended: %v", r.lines.Err())
	return "", ""
}

// BenchmarkSessionsFile measures a restart with 10,000 sessions (hibernated,
// each with a small state): the shutdown that saves them, the file's size,
// and the start that resumes them. One restart per iteration.
func BenchmarkSessionsFile(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "saved.lua"), []byte(savedScript), 0o644); err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "sessions.json")
	// No pool: the count of Lua states is then the sessions awake.
	cfg := host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.DiscardHandler), MaxSessions: -1, PoolSize: -1}
	var saving, resuming time.Duration
	var size int64
	for b.Loop() {
		b.StopTimer()
		h, err := host.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		handler := h.Handler()
		for range n - h.Stats()[0].Sessions {
			req := newRPCRequest(b, "http://127.0.0.1/mcp/saved", "", "initialize", initParams)
			req.RemoteAddr = "127.0.0.1:40000"
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("initialize: %d", rec.Code)
			}
		}
		for h.Stats()[0].LuaStates > 0 { // asleep, as idle sessions are
			time.Sleep(10 * time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		if err := h.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		saving += time.Since(start)
		fi, err := os.Stat(file)
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()
		start = time.Now()
		h, err = host.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		resuming += time.Since(start)
		if got := h.Stats()[0].Sessions; got != n {
			b.Fatalf("%d sessions resumed, want %d", got, n)
		}
		b.StopTimer() // the next iteration starts from what this one saves
		if err := h.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(saving.Milliseconds())/float64(b.N), "ms-save")
	b.ReportMetric(float64(resuming.Milliseconds())/float64(b.N), "ms-resume")
	b.ReportMetric(float64(size)/n, "file-B/session")
}

// TestSessionsFileLeftovers: what a process that died while it wrote the
// file left (bearer ids in a hidden temporary file) is removed at the next
// start; other files of the folder stay.
func TestSessionsFileLeftovers(t *testing.T) {
	dir := writeDir(t, map[string]string{"saved.lua": savedScript})
	folder := t.TempDir()
	file := filepath.Join(folder, "sessions.json")
	left := filepath.Join(folder, ".sessions.json.123456789")
	kept := []string{filepath.Join(folder, ".sessions.json.bak"), filepath.Join(folder, "sessions.json.bad"), filepath.Join(folder, ".other.json.42")}
	for _, name := range append(kept, left) {
		if err := os.WriteFile(name, []byte(`{"format":"luamcp-sessions"`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logs := &syncbuf.Buffer{}
	startHost(t, host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the unfinished file is still there: %v\n%s", err, logs.String())
	}
	for _, name := range kept {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSessionsFileInUse: two hosts given one sessions file would each write
// it whole at their shutdown, the second replacing the first's sessions
// without a word. The second does not start; once the first has shut down
// (its sessions written), a host may take the file again.
func TestSessionsFileInUse(t *testing.T) {
	dir := writeDir(t, map[string]string{"saved.lua": savedScript})
	file := filepath.Join(t.TempDir(), "sessions.json")
	cfg := host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.DiscardHandler)}
	first, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(first.Handler())
	defer srv.Close()
	resp, _ := rpc(t, srv.URL+"/mcp/saved", "", "initialize", initParams)
	sid := resp.Header.Get("Mcp-Session-Id")
	rpc(t, srv.URL+"/mcp/saved", sid, "tools/call", map[string]any{"name": "count", "arguments": map[string]any{}})

	second, err := host.New(cfg)
	if err == nil {
		second.Shutdown(context.Background())
		t.Fatal("a second host took a sessions file the first one uses")
	}
	if !strings.Contains(err.Error(), "another process uses it") {
		t.Errorf("error %q does not say the file is in use", err)
	}

	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	next, err := host.New(cfg)
	if err != nil {
		t.Fatalf("the file is still locked once its host shut down: %v", err)
	}
	defer next.Shutdown(context.Background())
	if !strings.Contains(logs.String(), "sessions=1 saved=1") {
		t.Errorf("the first host's session was not resumed:\n%s", logs)
	}
}

// TestSessionsFileWaits: the saved sessions of a route whose script fails
// to load at the next start are not dropped: they wait, are saved again at
// that process's shutdown, and resume once the script loads again, here
// when a watched folder gets the fixed script.
func TestSessionsFileWaits(t *testing.T) {
	dir := writeDir(t, map[string]string{"saved.lua": savedScript})
	script := filepath.Join(dir, "saved.lua")
	file := filepath.Join(t.TempDir(), "sessions.json")
	logs := &syncbuf.Buffer{}
	cfg := host.Config{Dir: dir, SessionsFile: file, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	shutdown := func(h *host.Host) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h := startHost(t, cfg)
	srv := httptest.NewServer(h.Handler())
	url := srv.URL + "/mcp/saved"
	resp, _ := rpc(t, url, "", "initialize", initParams)
	sid := resp.Header.Get("Mcp-Session-Id")
	for range 3 {
		rpc(t, url, sid, "tools/call", map[string]any{"name": "count", "arguments": map[string]any{}})
	}
	shutdown(h)
	srv.Close()

	// The script breaks before the restart: its route is not served, and
	// its session waits through this process and into the next.
	if err := os.WriteFile(script, []byte("return {"), 0o644); err != nil {
		t.Fatal(err)
	}
	h = startHost(t, cfg)
	if !strings.Contains(logs.String(), `msg="saved sessions wait`) {
		t.Errorf("no word of the sessions that wait:\n%s", logs.String())
	}
	shutdown(h)
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the waiting session was not saved again: %v\n%s", err, logs.String())
	}

	// Watched, the fixed script is mounted and the session resumes.
	cfg.Watch, cfg.Debounce = true, 10*time.Millisecond
	h = startHost(t, cfg)
	srv = httptest.NewServer(h.Handler())
	t.Cleanup(srv.Close)
	url = srv.URL + "/mcp/saved"
	if resp, err := http.DefaultClient.Do(newRPCRequest(t, url, sid, "ping", nil)); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the broken script's route: %v %v, want 404", resp.StatusCode, err)
	}
	if err := os.WriteFile(script, []byte(savedScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.DefaultClient.Do(newRPCRequest(t, url, sid, "ping", nil))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session never resumed:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, res := rpc(t, url, sid, "tools/call", map[string]any{"name": "count", "arguments": map[string]any{}})
	if got := toolText(t, res); got != "4" {
		t.Errorf("the session that waited counts %s, want 4", got)
	}
}
