package luavm

import (
	"context"
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
