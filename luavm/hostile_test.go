package luavm

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// Each misbehaving tool fails its own call, and the server goes on.
func TestHostileLua(t *testing.T) {
	short, _ := load(t, "hostile.lua", func(c *Config) { c.CallTimeout = 100 * time.Millisecond })
	long, _ := load(t, "hostile.lua", nil)
	tests := []struct {
		s     *Script
		kind  string
		crash string // part of the crash message
	}{
		{short, "loop", "call timeout: still running after 100ms"},
		{short, "pcall_loop", "call timeout: still running after"},
		{short, "coroutine_loop", "call timeout: still running after"},
		{short, "stored_coroutine", "call timeout: still running after"},
		{short, "sleep", "call timeout: still running after"},
		{long, "rep", "string.rep: the resulting string would exceed 64 MiB"},
		{long, "rep_method", "string.rep: the resulting string would exceed"},
		{long, "recurse", "stack overflow"},
		{long, "meta_recursion", "callstack overflow"},
		{long, "unpack", "registry overflow"},
		{long, "byte", "registry overflow"},
		{long, "gsub", "string.gsub: the resulting string would exceed"},
		{long, "concat", "table.concat: the resulting string would exceed"},
		{long, "format", "invalid format (width or precision too long)"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			ss, _ := open(t, tt.s, "")
			_, err := call(t, ss, "any", `{"kind":"`+tt.kind+`"}`)
			if !isCrash(err) {
				t.Fatalf("want a crash, got %v", err)
			}
			contains(t, err.Error(), tt.crash)
			if tt.kind == "rep" {
				contains(t, err.Error(), at(t, "hostile.lua", `string.rep("x", 2 ^ 40)`))
			}
			ss.Close("")
			// The script still serves.
			ss2, _ := open(t, tt.s, "")
			if got := text(t, mustCall(t, ss2, "any", `{"kind":"gsub_ok"}`)); got != "hell0 w0rld" {
				t.Errorf("after %s: %q", tt.kind, got)
			}
		})
	}
	t.Run("load_deep", func(t *testing.T) {
		ss, _ := open(t, long, "")
		contains(t, text(t, mustCall(t, ss, "any", `{"kind":"load_deep"}`)), "nests deeper than 200 levels")
	})
}

// Cancelling the caller's context stops Lua wherever it is, even inside pcall
// or a coroutine; the error wraps the context's.
func TestCancelInterruptsLua(t *testing.T) {
	s, _ := load(t, "hostile.lua", nil)
	for _, kind := range []string{"loop", "pcall_loop", "coroutine_loop", "stored_coroutine", "sleep"} {
		t.Run(kind, func(t *testing.T) {
			ss, _ := open(t, s, "")
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			done := make(chan error, 1)
			go func() {
				_, err := ss.CallTool(ctx, testCall(""), "any", []byte(`{"kind":"`+kind+`"}`))
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("want an error wrapping context.Canceled, got %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call was not interrupted")
			}
		})
	}
}

// The memory watchdog cancels a call that allocates without bound.
func TestMemoryWatchdog(t *testing.T) {
	runtime.GC()
	sample := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(sample)
	limit := int64(sample[0].Value.Uint64()) + 64<<20
	s, logs := load(t, "hostile.lua", func(c *Config) { c.MemoryLimit = limit })
	ss, _ := open(t, s, "")
	_, err := call(t, ss, "any", `{"kind":"alloc"}`)
	if !isCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	contains(t, err.Error(), "memory limit exceeded")
	contains(t, err.Error(), "hostile.lua:")
	contains(t, logs.String(), "memory limit exceeded: running Lua calls cancelled")
	ss.Close("")
	runtime.GC()

	// The watchdog samples only while calls run: its goroutine is gone.
	eventually(t, "the watchdog to stop", func() bool {
		s.watch.mu.Lock()
		defer s.watch.mu.Unlock()
		return !s.watch.running
	})
}
