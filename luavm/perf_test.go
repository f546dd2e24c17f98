package luavm

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// BenchmarkIdleSessionMemory reports the live heap one idle session-mode
// session holds after init and one call, as bytes/session: awake (its Lua
// state included) and asleep (hibernated: its state frozen, its Lua state
// closed).
func BenchmarkIdleSessionMemory(b *testing.B) {
	for _, asleep := range []bool{false, true} {
		name := "awake"
		if asleep {
			name = "asleep"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := load(b, "echo.lua", func(c *Config) { c.PoolSize = -1 })
			ctx := context.Background()
			const n = 200
			sessions := make([]mcp.Session, 0, n)
			var before, after runtime.MemStats
			for b.Loop() {
				settle()
				runtime.ReadMemStats(&before)
				for range n {
					ss, _, err := s.Init(ctx, json.RawMessage(initParams), "sid")
					if err != nil {
						b.Fatal(err)
					}
					if _, err := ss.CallTool(ctx, testCall("sid"), "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
						b.Fatal(err)
					}
					if asleep && !ss.(*session).hibernate(clock()) {
						b.Fatal("did not hibernate")
					}
					sessions = append(sessions, ss)
				}
				settle()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "bytes/session")
				for _, ss := range sessions {
					ss.Close("")
				}
				clear(sessions)
				sessions = sessions[:0]
			}
		})
	}
}

// settle collects garbage until the heap stops shrinking: objects reachable
// from finalizers or cleanups survive a first collection.
func settle() {
	var m runtime.MemStats
	prev := ^uint64(0)
	for range 5 {
		runtime.GC()
		runtime.ReadMemStats(&m)
		if m.HeapAlloc >= prev {
			return
		}
		prev = m.HeapAlloc
	}
}

// BenchmarkSnapshot is the deep copy of a session state into a fresh state,
// which a streaming call runs on.
func BenchmarkSnapshot(b *testing.B) {
	for _, bc := range []struct{ name, params string }{
		{"state=small", `{}`},
		{"state=10k", `{"size":10000}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ss := echoSession(b, bc.params)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				snap, err := ss.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				snap.Close("")
			}
		})
	}
}

// BenchmarkListPage is one tools/list page of 50 out of 1,000 tools.
func BenchmarkListPage(b *testing.B) {
	s, _ := load(b, "tools1000.lua", nil)
	ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid")
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close("")
	ctx := context.Background()
	b.Run("page", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ss.(mcp.Pager).Page(ctx, mcp.ListTools, 500, 50); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ss.Tools(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
