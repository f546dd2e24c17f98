package host_test

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptOptionEditKeepsSessions: a change to the route options the
// host library and luavm apply themselves (memory_limit_mb,
// session_hibernate_ms, reuse_lists, allow) reloads the script and keeps its
// sessions; only the transport's options (path, sessions, page_size, ...)
// remount the route.
func TestScriptOptionEditKeepsSessions(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.lua"), server(`{ sessions = true }`, "one"))
	h, logs := watchHost(t, dir)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	resp, _ := rpc(t, srv.URL+"/mcp/a", "", "initialize", initParams)
	sid := resp.Header.Get("Mcp-Session-Id")

	for i, route := range []string{
		`{ sessions = true, memory_limit_mb = 32 }`,
		`{ sessions = true, memory_limit_mb = 32, session_hibernate_ms = 0 }`,
		`{ sessions = true, memory_limit_mb = 32, session_hibernate_ms = 0, reuse_lists = true }`,
		`{ sessions = true, memory_limit_mb = 32, session_hibernate_ms = 0, reuse_lists = true, allow = { env = { "HOME" } } }`,
	} {
		before := strings.Count(logs.String(), "script reloaded")
		write(t, filepath.Join(dir, "a.lua"), server(route, "one"))
		waitFor(t, "the reload", func() bool { return strings.Count(logs.String(), "script reloaded") > before })
		if strings.Contains(logs.String(), "remounted") {
			t.Fatalf("edit %d remounted", i)
		}
		if resp, res := rpc(t, srv.URL+"/mcp/a", sid, "ping", nil); resp.StatusCode != 200 || res.Error != nil {
			t.Fatalf("edit %d: the session after the reload: HTTP %d %+v", i, resp.StatusCode, res.Error)
		}
	}
}

// TestSessionCapabilitiesGainTasks: script-api.md ("init") says the capabilities
// init returns are sent exactly as given. A 2025-11-25 session of a script
// with tools also gets the era's experimental tasks capability, which the
// script did not write; a stateless route's initialize does not.
func TestSessionCapabilitiesGainTasks(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "s.lua"), server(`{ sessions = true }`, "one"))
	write(t, filepath.Join(dir, "l.lua"), server(`{}`, "one"))
	h, _ := watchHost(t, dir)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	caps := func(path string) map[string]any {
		_, res := rpc(t, srv.URL+path, "", "initialize", map[string]any{
			"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		var r struct{ Capabilities map[string]any }
		decodeResult(t, res, &r)
		return r.Capabilities
	}
	if c := caps("/mcp/s"); c["tasks"] == nil {
		t.Errorf("session route: capabilities %v, want tasks added", c)
	}
	if c := caps("/mcp/l"); c["tasks"] != nil || len(c) != 1 {
		t.Errorf("stateless route: capabilities %v, want { tools } as given", c)
	}
}
