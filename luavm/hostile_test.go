package luavm

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// Each misbehaving tool fails its own call, and the server goes on: another
// session opened before the attack and a new one both still work.
func TestHostileLua(t *testing.T) {
	short, _ := load(t, "hostile.lua", func(c *Config) { c.CallTimeout = 100 * time.Millisecond })
	long, _ := load(t, "hostile.lua", nil)
	const memory = "memory limit exceeded"
	tests := []struct {
		s     *Script
		kind  string
		crash string // part of the crash message
		at    string // the line it names, when it must name one
	}{
		{short, "loop", "call timeout: still running after 100ms", ""},
		{short, "pcall_loop", "call timeout: still running after", ""},
		{short, "coroutine_loop", "call timeout: still running after", ""},
		{short, "stored_coroutine", "call timeout: still running after", ""},
		{short, "sleep", "call timeout: still running after", ""},
		{short, "backtrack", "call timeout: still running after", ""},
		{short, "balance", "call timeout: still running after", ""},
		{short, "sort", "call timeout: still running after", ""},
		{long, "rep", memory, `string.rep("x", 2 ^ 40)`},
		{long, "rep_method", memory, `(("xy"):rep(2 ^ 31))`},
		{long, "concat_double", memory, "for i = 1, 5 do s = s .. s end"},
		{long, "json_dag", "mcp.json_encode: value[1][1]", ""},
		{long, "json_dag", memory, ""},
		{long, "result_dag", memory, ""},
		{long, "os_date", memory, `os.date(string.rep("%c", 3e7))`},
		{long, "sparse", memory, "t[67108863] = 1"},
		{long, "tables", memory, "t[i] = { i }"},
		{long, "coroutines", memory, "coroutine.create(function() end)"},
		{long, "alloc", memory, ""},
		{long, "recurse", "stack overflow", ""},
		{long, "meta_recursion", "stack overflow", "return t[k]"},
		{long, "unpack", "too many results to unpack", ""},
		{long, "byte", "registry overflow", ""},
		{long, "gsub", memory, ""},
		{long, "concat", memory, ""},
		{long, "format", "invalid format (width or precision too long)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			other, _ := open(t, tt.s, "")
			ss, _ := open(t, tt.s, "")
			_, err := call(t, ss, "any", `{"kind":"`+tt.kind+`"}`)
			if !isCrash(err) {
				t.Fatalf("want a crash, got %v", err)
			}
			contains(t, err.Error(), tt.crash)
			if tt.at != "" {
				contains(t, err.Error(), at(t, "hostile.lua", tt.at))
			}
			ss.Close("")
			for _, ss := range []mcp.Session{other, first(open(t, tt.s, ""))} {
				if got := text(t, mustCall(t, ss, "any", `{"kind":"gsub_ok"}`)); got != "hell0 w0rld" {
					t.Errorf("after %s: %q", tt.kind, got)
				}
			}
		})
	}
	t.Run("load_deep", func(t *testing.T) {
		ss, _ := open(t, long, "")
		contains(t, text(t, mustCall(t, ss, "any", `{"kind":"load_deep"}`)), "nests deeper than 200 levels")
	})
	t.Run("gfind", func(t *testing.T) {
		// gfind is the lazy gmatch: the first match comes at once, not after
		// every match of the subject was found and kept.
		ss, _ := open(t, long, "")
		if got := text(t, mustCall(t, ss, "any", `{"kind":"gfind"}`)); got != "a" {
			t.Errorf("got %q", got)
		}
	})
}

func first[A, B any](a A, _ B) A { return a }

// The route option memory_limit_mb is each state's budget: a session may
// hold up to it, garbage never counts, and what it lets go of is free again.
func TestStateMemoryLimit(t *testing.T) {
	s, _ := load(t, "budget.lua", nil)
	ss, _ := open(t, s, "sid")
	if got := text(t, mustCall(t, ss, "alloc", `{"n":1000000}`)); got != "1000000" {
		t.Errorf("alloc 1 MB: %s", got)
	}
	for range 20 { // 20 MB of garbage under a 2 MiB budget
		mustCall(t, ss, "alloc", `{"n":1000000}`)
	}
	_, err := call(t, ss, "alloc", `{"n":3000000}`)
	if !isCrash(err) {
		t.Fatalf("alloc 3 MB: want a crash, got %v", err)
	}
	contains(t, err.Error(), at(t, "budget.lua", `#string.rep("x", args.n)`)+" memory limit exceeded")
	ss2, _ := open(t, s, "sid2")
	mustCall(t, ss2, "keep", `{"n":600000}`)
	mustCall(t, ss2, "keep", `{"n":600000}`)
	if _, err := call(t, ss2, "keep", `{"n":900000}`); err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Fatalf("keep past the budget: %v", err)
	}
	// The crash rolled the state back: it keeps two strings, and the other
	// session is untouched.
	if got := text(t, mustCall(t, ss2, "keep", `{"n":10}`)); got != "3" {
		t.Errorf("after the rollback: %s strings kept", got)
	}
	mustCall(t, ss, "alloc", `{"n":1000000}`)
}

// CPU attacks inside one library call stop when the caller cancels, within
// a few milliseconds (10 ms on an idle machine; the bound here is generous for
// loaded CI machines and -race).
func TestCancelInterruptsLibraryCalls(t *testing.T) {
	s, _ := load(t, "hostile.lua", nil)
	for _, kind := range []string{"backtrack", "balance", "sort"} {
		t.Run(kind, func(t *testing.T) {
			ss, _ := open(t, s, "")
			ctx, cancel := context.WithCancel(context.Background())
			var cancelled time.Time
			time.AfterFunc(50*time.Millisecond, func() { cancelled = time.Now(); cancel() })
			_, err := ss.CallTool(ctx, testCall(""), "any", []byte(`{"kind":"`+kind+`"}`))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("want an error wrapping context.Canceled, got %v", err)
			}
			lag := time.Since(cancelled)
			t.Logf("%s stopped %v after the cancellation", kind, lag)
			if lag > time.Second {
				t.Errorf("%s stopped %v after the cancellation", kind, lag)
			}
		})
	}
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

// Past the process ceiling, the watchdog cancels the running call whose
// state holds the most memory, and only that one.
func TestMemoryWatchdog(t *testing.T) {
	runtime.GC()
	sample := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(sample)
	limit := int64(sample[0].Value.Uint64()) + 64<<20
	s, logs := load(t, "greedy.lua", func(c *Config) { c.MemoryLimit = limit })
	spinner, _ := open(t, s, "")
	spinCtx, stopSpin := context.WithCancel(context.Background())
	defer stopSpin()
	spun := make(chan error, 1)
	go func() {
		_, err := spinner.CallTool(spinCtx, testCall(""), "spin", nil)
		spun <- err
	}()
	ss, _ := open(t, s, "")
	_, err := call(t, ss, "alloc", `{}`)
	if !isCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	contains(t, err.Error(), "memory limit exceeded")
	contains(t, err.Error(), "greedy.lua:")
	contains(t, logs.String(), "memory limit exceeded: the Lua call holding the most memory is cancelled")

	// The spinning call, holding little, was left alone.
	select {
	case err := <-spun:
		t.Fatalf("the spinning call ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	stopSpin()
	if err := <-spun; !errors.Is(err, context.Canceled) {
		t.Errorf("spin: want an error wrapping context.Canceled, got %v", err)
	}
	ss.Close("")
	runtime.GC()

	// The watchdog samples only while calls run: its goroutine is gone.
	eventually(t, "the watchdog to stop", func() bool {
		heapWatch.mu.Lock()
		defer heapWatch.mu.Unlock()
		return !heapWatch.running
	})
}
