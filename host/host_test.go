package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// A stateless server whose tool uses a module from a sub-folder.
const goodScript = `local util = require("lib.util")
return {
  init = function(params) return { name = "good", version = "1.0.0" }, { tools = {} }, {} end,
  tools = function(state)
    return { { name = "echo", description = "echo", input_schema = { type = "object" } } }
  end,
  handle_tool = function(name, args, ctx, state) return util.tag(args.text) end,
}
`

const utilModule = `return { tag = function(s) return "util:" .. tostring(s) end }`

// A complete server inside a sub-folder: a module, so never mounted.
const nestedServer = `return {
  init = function(params) return { name = "nested", version = "1" }, { tools = {} }, {} end,
  tools = function(state) return {} end,
  handle_tool = function(name, args, ctx, state) return "" end,
}
`

// server returns a minimal server module with the given route table and tools.
func server(route string, tools ...string) string {
	var list strings.Builder
	for _, t := range tools {
		list.WriteString(`{ name = "` + t + `", description = "` + t + `", input_schema = { type = "object" } }, `)
	}
	return `return {
  route = ` + route + `,
  init = function(params) return { name = "s", version = "1" }, { tools = {} }, {} end,
  tools = function(state) return { ` + list.String() + ` } end,
  handle_tool = function(name, args, ctx, state) return name end,
}
`
}

func TestMountGoodAndBroken(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"good.lua":        goodScript,
		"syntax.lua":      "return {\n  init = function(params)\n    return { name = \"x\" version = \"1\" }, {}, {}\n  end,\n}\n",
		"runtime.lua":     "local x = 1\nerror(\"boom\")\n",
		"missing.lua":     "return { init = function() end, tools = function() return {} end }\n",
		"lib/util.lua":    utilModule,
		"lib/nested.lua":  nestedServer,
		"README.md":       "not a script",
		".#good.lua":      "editor lock file",
		"notes.lua.bak":   "backup",
		"sub/server.lua":  nestedServer,
		"sub/deeper/x.md": "",
	})
	h, logs := newHost(t, dir)

	want := []host.Route{{Path: "/mcp/good", Script: filepath.Join(dir, "good.lua"), Tools: []string{"echo"}}}
	if got := h.Routes(); !routesEqual(got, want) {
		t.Fatalf("Routes() = %+v, want %+v", got, want)
	}

	errs := h.LoadErrors()
	wantErrs := []struct{ file, text string }{ // in file name order
		{"missing.lua", "handle_tool"},
		{"runtime.lua", "runtime.lua:2:"},
		{"syntax.lua", "syntax.lua:3:"},
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("LoadErrors() = %v, want %d errors", errs, len(wantErrs))
	}
	for i, w := range wantErrs {
		var lerr *host.LoadError
		if !errors.As(errs[i], &lerr) || lerr.Script != filepath.Join(dir, w.file) {
			t.Errorf("LoadErrors()[%d] = %#v, want a *LoadError for %s", i, errs[i], w.file)
			continue
		}
		if msg := errs[i].Error(); !strings.Contains(msg, w.text) {
			t.Errorf("load error %q does not contain %q", msg, w.text)
		}
		if !strings.Contains(logs.String(), w.text) {
			t.Errorf("log does not report %q:\n%s", w.text, logs.String())
		}
	}

	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	_, res := rpc(t, srv.URL+"/mcp/good", "", "initialize", initParams)
	var init struct{ ServerInfo struct{ Name string } }
	decodeResult(t, res, &init)
	if init.ServerInfo.Name != "good" {
		t.Errorf("initialize serverInfo.name = %q, want good", init.ServerInfo.Name)
	}
	_, res = rpc(t, srv.URL+"/mcp/good", "", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	if got := toolText(t, res); got != "util:hi" {
		t.Errorf("echo answered %q, want util:hi (the lib module)", got)
	}

	for _, path := range []string{"/mcp/syntax", "/mcp/util", "/mcp/nested", "/mcp/server", "/mcp/good/", "/mcp", "/"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: status %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestDuplicatePaths(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.lua": server(`{ path = "/mcp/shared" }`, "from_a"),
		"b.lua": server(`{ path = "/mcp/shared" }`, "from_b"),
		"c.lua": server(`{}`, "from_c"),
		"d.lua": server(`{ path = "/mcp/c" }`, "from_d"), // clashes with c.lua's default path
	})
	h, _ := newHost(t, dir)

	want := []host.Route{
		{Path: "/mcp/c", Script: filepath.Join(dir, "c.lua"), Tools: []string{"from_c"}},
		{Path: "/mcp/shared", Script: filepath.Join(dir, "a.lua"), Tools: []string{"from_a"}},
	}
	if got := h.Routes(); !routesEqual(got, want) {
		t.Fatalf("Routes() = %+v, want %+v", got, want)
	}
	errs := h.LoadErrors()
	if len(errs) != 2 {
		t.Fatalf("LoadErrors() = %v, want 2", errs)
	}
	for i, w := range [][]string{{"b.lua", "/mcp/shared", "a.lua"}, {"d.lua", "/mcp/c", "c.lua"}} {
		for _, part := range w {
			if !strings.Contains(errs[i].Error(), part) {
				t.Errorf("duplicate error %q does not name %s", errs[i], part)
			}
		}
	}

	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	_, res := rpc(t, srv.URL+"/mcp/shared", "", "tools/call", map[string]any{"name": "from_a"})
	if got := toolText(t, res); got != "from_a" {
		t.Errorf("/mcp/shared answered %q, want a.lua's from_a", got)
	}
}

func TestRoutes(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"zeta.lua":    server(`{ path = "/a/zeta" }`, "z1"),
		"alpha.lua":   server(`{ sessions = true }`, "a2", "a1"),
		"mid.lua":     server(`{ sessions = false, path = "/mcp/middle/v1.2" }`),
		"initbad.lua": "return { init = function() error('needs client params') end,\n tools = function() return {} end,\n handle_tool = function() end }\n",
	})
	h, logs := newHost(t, dir)

	want := []host.Route{
		{Path: "/a/zeta", Script: filepath.Join(dir, "zeta.lua"), Tools: []string{"z1"}},
		{Path: "/mcp/alpha", Script: filepath.Join(dir, "alpha.lua"), Sessions: true, Tools: []string{"a2", "a1"}},
		{Path: "/mcp/initbad", Script: filepath.Join(dir, "initbad.lua"), Tools: nil}, // listing failed, still served
		{Path: "/mcp/middle/v1.2", Script: filepath.Join(dir, "mid.lua"), Tools: []string{}},
	}
	got := h.Routes()
	if !routesEqual(got, want) {
		t.Fatalf("Routes() = %+v, want %+v", got, want)
	}
	if got[2].Tools != nil || got[3].Tools == nil {
		t.Errorf("Tools must be nil only when listing failed: %+v", got)
	}
	if !strings.Contains(logs.String(), "needs client params") {
		t.Errorf("the failed tool listing is not logged:\n%s", logs.String())
	}
	if errs := h.LoadErrors(); len(errs) != 0 {
		t.Errorf("LoadErrors() = %v, want none", errs)
	}

	// Routes returns a copy.
	got[0].Tools[0] = "changed"
	if h.Routes()[0].Tools[0] != "z1" {
		t.Error("Routes() shares its slices with the Host")
	}

	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	_, res := rpc(t, srv.URL+"/mcp/middle/v1.2", "", "tools/list", nil)
	var list struct{ Tools []any }
	decodeResult(t, res, &list)
	if len(list.Tools) != 0 {
		t.Errorf("tools/list on /mcp/middle/v1.2 = %v, want none", list.Tools)
	}
}

func TestNewUnreadableDir(t *testing.T) {
	_, err := host.New(host.Config{Dir: filepath.Join(t.TempDir(), "absent")})
	if err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("New(absent dir) error = %v, want one naming the folder", err)
	}
}

func TestShutdownEndsSessions(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"sess.lua": `return {
  route = { sessions = true },
  init = function(params) return { name = "sess", version = "1" }, { tools = {} }, { n = 0 } end,
  tools = function(state) return {} end,
  handle_tool = function(name, args, ctx, state) return "" end,
  terminate = function(reason, state) print("terminated with reason " .. reason) end,
}
`,
	})
	logs := &syncbuf.Buffer{}
	h, err := host.New(host.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Shutdown(context.Background()) }) // after a failure; Shutdown runs once
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	for range 2 {
		resp, _ := rpc(t, srv.URL+"/mcp/sess", "", "initialize", initParams)
		if resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatal("initialize in session mode returned no Mcp-Session-Id")
		}
	}
	if strings.Contains(logs.String(), "terminated") {
		t.Fatal("a session terminated before Shutdown")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // liveness bound only
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := strings.Count(logs.String(), "terminated with reason shutdown"); n != 2 {
		t.Errorf("terminate ran %d times with reason shutdown, want 2:\n%s", n, logs.String())
	}
	if err := h.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestBundledScripts keeps the tutorials working: every bundled script and
// example mounts, and the calls the README shows answer as it says.
func TestBundledScripts(t *testing.T) {
	h, _ := newHost(t, "../scripts")
	if errs := h.LoadErrors(); len(errs) != 0 {
		t.Fatalf("bundled scripts fail to load: %v", errs)
	}
	want := []host.Route{
		{Path: "/mcp/counter", Script: "../scripts/counter.lua", Sessions: true, Tools: []string{"increment", "get", "reset"}},
		{Path: "/mcp/hello", Script: "../scripts/hello.lua", Tools: []string{"greet", "add"}},
		{Path: "/mcp/live", Script: "../scripts/live.lua", Sessions: true, Tools: []string{"countdown", "shout", "ask_name", "unlock_die", "report"}},
		{Path: "/mcp/notes", Script: "../scripts/notes.lua", Sessions: true, Tools: []string{"add_note", "update_note"}},
	}
	if got := h.Routes(); !routesEqual(got, want) {
		t.Fatalf("Routes() = %+v, want %+v", got, want)
	}

	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	hello := srv.URL + "/mcp/hello"
	_, res := rpc(t, hello, "", "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "  Ada "}})
	if got := toolText(t, res); got != "Hello, Ada!" {
		t.Errorf("greet = %q", got)
	}
	_, res = rpc(t, hello, "", "tools/call", map[string]any{"name": "greet", "arguments": map[string]any{}})
	if r := toolResult(t, res); !r.IsError {
		t.Errorf("greet without a name: isError = false, want an in-band error")
	}
	_, res = rpc(t, hello, "", "tools/call", map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}})
	r := toolResult(t, res)
	var sum struct{ Sum *float64 }
	if err := json.Unmarshal(r.StructuredContent, &sum); err != nil || r.IsError || sum.Sum == nil || *sum.Sum != 5 || r.Content[0].Text != "5" {
		t.Errorf("add(2, 3) = %+v (structured %s)", r, r.StructuredContent)
	}

	counter := srv.URL + "/mcp/counter"
	resp, _ := rpc(t, counter, "", "initialize", initParams)
	sid := resp.Header.Get("Mcp-Session-Id")
	for _, step := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"increment", nil, "1"},
		{"increment", map[string]any{"n": 5}, "6"},
		{"get", nil, "6"},
		{"reset", nil, "0"},
		{"get", nil, "0"},
	} {
		_, res := rpc(t, counter, sid, "tools/call", map[string]any{"name": step.tool, "arguments": step.args})
		if got := toolText(t, res); got != step.want {
			t.Errorf("%s %v = %q, want %q", step.tool, step.args, got, step.want)
		}
	}
}

// TestExamples serves examples/auth.lua; the examples that reach the world
// (weather, files, git) are tested end to end in tests/examples_test.go.
func TestExamples(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"auth.lua"} {
		src, err := os.ReadFile(filepath.Join("../examples", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := newHost(t, dir)
	if errs := h.LoadErrors(); len(errs) != 0 {
		t.Fatalf("examples fail to load: %v", errs)
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusForbidden},
		{"token", map[string]string{"Authorization": "Bearer change-me"}, http.StatusOK},
		{"token, allowed origin", map[string]string{"Authorization": "Bearer change-me", "Origin": "http://localhost:6274"}, http.StatusOK},
		{"token, other origin", map[string]string{"Authorization": "Bearer change-me", "Origin": "http://evil.example"}, http.StatusForbidden},
	} {
		req := newRPCRequest(t, srv.URL+"/mcp/auth", "", "tools/call", map[string]any{"name": "whoami"})
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("auth example, %s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
}

// --- helpers ---

var initParams = map[string]any{
	"protocolVersion": "2025-11-25",
	"capabilities":    map[string]any{},
	"clientInfo":      map[string]any{"name": "host_test", "version": "1"},
}

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newHost mounts dir with a logger writing to the returned buffer, and shuts
// the host down when the test ends.
func newHost(t *testing.T, dir string) (*host.Host, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return startHost(t, host.Config{Dir: dir, Logger: logger, PoolSize: 1}), logs
}

// startHost makes a host of cfg and shuts it down when the test ends.
func startHost(t *testing.T, cfg host.Config) *host.Host {
	t.Helper()
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

func routesEqual(a, b []host.Route) bool {
	return slices.EqualFunc(a, b, func(x, y host.Route) bool {
		return x.Path == y.Path && x.Script == y.Script && x.Sessions == y.Sessions &&
			slices.Equal(x.Tools, y.Tools) && (x.Tools == nil) == (y.Tools == nil)
	})
}

type rpcResponse struct {
	Result json.RawMessage
	Error  *struct {
		Code    int
		Message string
	}
}

func newRPCRequest(t testing.TB, url, sessionID, method string, params any) *http.Request {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method}
	if params != nil {
		msg["params"] = params
	}
	body, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method != "initialize" {
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	return req
}

// rpc posts one JSON-RPC request and decodes its JSON answer.
func rpc(t *testing.T, url, sessionID, method string, params any) (*http.Response, rpcResponse) {
	t.Helper()
	resp, err := http.DefaultClient.Do(newRPCRequest(t, url, sessionID, method, params))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s %s: status %d: %s", url, method, resp.StatusCode, body)
	}
	var res rpcResponse
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("POST %s %s: answer is not JSON (%v): %s", url, method, err, body)
	}
	if res.Error != nil {
		t.Fatalf("POST %s %s: error %d %s", url, method, res.Error.Code, res.Error.Message)
	}
	return resp, res
}

func decodeResult(t *testing.T, res rpcResponse, v any) {
	t.Helper()
	if err := json.Unmarshal(res.Result, v); err != nil {
		t.Fatalf("result %s: %v", res.Result, err)
	}
}

type toolCallResult struct {
	Content []struct {
		Type string
		Text string
	}
	StructuredContent json.RawMessage
	IsError           bool
}

func toolResult(t *testing.T, res rpcResponse) toolCallResult {
	t.Helper()
	var r toolCallResult
	decodeResult(t, res, &r)
	if len(r.Content) == 0 {
		t.Fatalf("tool result without content: %s", res.Result)
	}
	return r
}

// toolText returns the text of a successful single-text tool result.
func toolText(t *testing.T, res rpcResponse) string {
	t.Helper()
	r := toolResult(t, res)
	if r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("want one text block and no error, got %s", res.Result)
	}
	return r.Content[0].Text
}

// TestPathNotUTF8: a route path that is not UTF-8 (route.path, or a file
// named in Latin-1) is not mounted: no client could name it in a URL, and
// no metric could label it.
func TestPathNotUTF8(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.lua":       server(`{ path = "/mcp/caf\233" }`, "x"),
		"caf\xe9.lua": server(`{}`, "y"),
	})
	h, _ := newHost(t, dir)
	if errs := h.LoadErrors(); len(errs) != 2 || !strings.Contains(errs[0].Error(), "is not UTF-8") || !strings.Contains(errs[1].Error(), "is not UTF-8") {
		t.Errorf("load errors %v, want both refused", errs)
	}
}
