package host_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/host"
)

// TestProbes: /healthz answers while the host serves; /readyz only while a
// script is mounted and the host is not shutting down; no script may take
// their paths; they pass no gate (a probe comes from the node's address).
func TestProbes(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "clash.lua"), server(`{ path = "/readyz" }`, "x"))
	h, _ := watchHost(t, dir)
	probe := func(method, path string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, "http://example.com"+path, nil)
		req.RemoteAddr = "10.1.2.3:40000" // not loopback
		rec := httptest.NewRecorder()
		h.Handler().ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body)
	}
	if errs := h.LoadErrors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "taken by the health probes") {
		t.Errorf("a script on /readyz: load errors %v, want it refused", errs)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{http.MethodGet, host.HealthPath, http.StatusOK, "ok\n"},
		{http.MethodHead, host.HealthPath, http.StatusOK, ""},
		{http.MethodPost, host.HealthPath, http.StatusMethodNotAllowed, ""},
		{http.MethodGet, host.ReadyPath, http.StatusServiceUnavailable, "not ready: no server mounted\n"},
	} {
		if status, body := probe(tc.method, tc.path); status != tc.status || (tc.body != "" && body != tc.body) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, status, body, tc.status, tc.body)
		}
	}
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one"))
	waitFor(t, "a.lua to mount", func() bool { return tools(h, "/mcp/a") == "one" })
	if status, body := probe(http.MethodGet, host.ReadyPath); status != http.StatusOK || body != "ready\n" {
		t.Errorf("ready with a script: %d %q", status, body)
	}
	h.Drain()
	if status, body := probe(http.MethodGet, host.ReadyPath); status != http.StatusServiceUnavailable || body != "not ready: draining\n" {
		t.Errorf("ready while draining: %d %q", status, body)
	}
	if got := tools(h, "/mcp/a"); got != "one" {
		t.Errorf("draining unmounted a.lua: %q", got)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, body := probe(http.MethodGet, host.ReadyPath); status != http.StatusServiceUnavailable || body != "not ready: shutting down\n" {
		t.Errorf("ready after Shutdown: %d %q", status, body)
	}
}
