package mcp_test

import (
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// TestTaskPollAndTTLBounds: mcp.task's poll_ms (script-api.md, "Tasks") is
// raised to 50 ms at least, and its ttl_ms lowered to a day at most.
func TestTaskPollAndTTLBounds(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{})
	res := rt.taskCall(`{"support":"optional","ttl":999999999,"poll":1}`).result()
	if res["pollIntervalMs"] != 50.0 || res["ttlMs"] != 86400000.0 {
		t.Errorf("pollIntervalMs %v, ttlMs %v; want 50, 86400000", res["pollIntervalMs"], res["ttlMs"])
	}
}
