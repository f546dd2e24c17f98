package host_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// settledMemory returns the live heap and the goroutine stacks once
// collections settle.
func settledMemory() (heap, stacks int64) {
	var m runtime.MemStats
	prev := int64(-1)
	for range 5 {
		runtime.GC()
		runtime.ReadMemStats(&m)
		now := int64(m.HeapAlloc)
		if prev >= 0 && now >= prev {
			break
		}
		prev = now
	}
	return int64(m.HeapAlloc), int64(m.StackInuse)
}

// Idle sessions hibernate down to a few KiB each, transport included, and
// once the idle TTL reaps them the memory is back where it started. The
// bench's "idle" scenario runs the same with 200,000 sessions and reports the
// RSS per session.
func TestIdleSessionsHibernateAndReap(t *testing.T) {
	const n = 500
	dir := writeDir(t, map[string]string{
		"idle.lua": server(`{ sessions = true, session_hibernate_ms = 1, session_ttl_ms = 8000 }`, "echo"),
	})
	// No pool: its depth follows demand, and its states would blur both
	// the count of states and the memory per session.
	h := startHost(t, host.Config{Dir: dir, Logger: slog.New(slog.DiscardHandler), PoolSize: -1})
	handler := h.Handler()
	post := func(sid, method string, params any) string {
		t.Helper()
		msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
		body, _ := json.Marshal(msg)
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp/idle", bytes.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		res := rec.Result()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", method, res.StatusCode, out)
		}
		return res.Header.Get("Mcp-Session-Id")
	}
	stats := func() host.RouteStats { return h.Stats()[0] }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second) // liveness bound only
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, stats())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// One session first, so that one-time allocations are in the baseline.
	sid := post("", "initialize", initParams)
	post(sid, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	del := httptest.NewRequest(http.MethodDelete, "http://127.0.0.1/mcp/idle", nil)
	del.RemoteAddr = "127.0.0.1:40000"
	del.Header.Set("Mcp-Session-Id", sid)
	del.Header.Set("MCP-Protocol-Version", "2025-11-25")
	handler.ServeHTTP(httptest.NewRecorder(), del)
	waitFor("the first session to end", func() bool { return stats().Sessions == 0 })
	// The runtime keeps the descriptor of every goroutine that ended for
	// reuse, never freeing it: the n workers that run at once below leave n
	// of them behind. Have them in the baseline.
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); <-release }()
	}
	close(release)
	wg.Wait()
	baseHeap, baseStacks := settledMemory()
	baseGoroutines := runtime.NumGoroutine()

	for range n {
		sid := post("", "initialize", initParams)
		post(sid, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}})
	}
	waitFor("every session to hibernate", func() bool { return stats().LuaStates == 0 })
	// A session's worker goroutine lingers a second after its last call.
	waitFor("the idle workers to exit", func() bool { return runtime.NumGoroutine() <= baseGoroutines+10 })
	// On a slow machine the TTL may reap the first sessions before the last
	// is open: what they held is gone with them, so the cost is per live one.
	live := stats().Sessions
	if live < n/2 {
		t.Fatalf("%d of %d sessions live: opening them took longer than the TTL", live, n)
	}
	heap, stacks := settledMemory()
	per := float64(heap+stacks-baseHeap-baseStacks) / float64(live)
	t.Logf("%.0f bytes per idle session (heap and stacks)", per)
	if per > 6<<10 {
		t.Errorf("an idle session holds %.0f bytes, want <= 6 KiB", per)
	}

	waitFor("the TTL to reap every session", func() bool { return stats().Sessions == 0 })
	// Goroutine stacks freed stay in the runtime's per-P caches: only the
	// heap is compared. 500 sessions that leaked would hold about 1 MiB.
	heap, _ = settledMemory()
	if grew := heap - baseHeap; grew > 128<<10 {
		t.Errorf("after the reap the heap holds %d KiB more than before the sessions", grew>>10)
	}
	if got := stats().LuaStates; got != 0 {
		t.Errorf("%d Lua states open after the reap", got)
	}
}
