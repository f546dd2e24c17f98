package luavm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

func TestAuthHook(t *testing.T) {
	s, logs := load(t, "auth.lua", func(c *Config) { c.CallTimeout = 100 * time.Millisecond })
	auth := s.Options().Auth
	if auth == nil {
		t.Fatal("no Auth hook")
	}
	tests := []struct {
		token, method string
		want          int
	}{
		{"ok", "POST", 0},
		{"ok", "GET", 401}, // the script returns false for other methods
		{"deny", "POST", 401},
		{"", "POST", 401}, // nothing returned
		{"forbidden", "POST", 403},
		{"crash", "POST", 500},
		{"weird", "POST", 500},
		{"loop", "POST", 500},
	}
	for _, tt := range tests {
		t.Run(tt.token+"_"+tt.method, func(t *testing.T) {
			req := &mcp.AuthRequest{
				Method: tt.method, Path: "/mcp/auth", RemoteAddr: "127.0.0.1:5555",
				Headers: map[string]string{"x-token": tt.token, "accept": "application/json"},
			}
			if got := auth(context.Background(), req); got != tt.want {
				t.Errorf("auth = %d, want %d", got, tt.want)
			}
		})
	}
	l := logs.String()
	contains(t, l, at(t, "auth.lua", "auth exploded")+" auth exploded")
	contains(t, l, "auth returned an unusable value")

	// A cancelled request is refused.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := auth(ctx, &mcp.AuthRequest{Headers: map[string]string{"x-token": "ok"}}); got != 500 {
		t.Errorf("cancelled auth = %d", got)
	}
}

// TestAuthNotRunLogsOnce: while every slot is taken, each request's auth hook
// waits its request_timeout_ms and is answered 503; the warning is logged
// once per interval, not once per request (any client can send them).
func TestAuthNotRunLogsOnce(t *testing.T) {
	dir := t.TempDir()
	src := `return {
  route = { request_timeout_ms = 10 },
  auth = function(request) return true end,
  init = function() return { name = "a", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}`
	if err := os.WriteFile(filepath.Join(dir, "a.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, logs := newLogger()
	s, err := Load(filepath.Join(dir, "a.lua"), Config{Dir: dir, Logger: logger, Sched: NewScheduler(1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.lane.acquire(context.Background(), 0); err != nil { // the only slot
		t.Fatal(err)
	}
	defer s.lane.release()
	auth := s.Options().Auth
	const flood = 20
	for i := range flood {
		if got := auth(context.Background(), &mcp.AuthRequest{Method: "POST", Headers: map[string]string{}}); got != 503 {
			t.Fatalf("auth %d without a slot = %d, want 503", i, got)
		}
	}
	if n := strings.Count(logs.String(), "auth: not run"); n != 1 {
		t.Errorf("%d warnings for %d refusals, want 1:\n%s", n, flood, logs.String())
	}
}
