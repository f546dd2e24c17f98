package lua

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A tail call whose callee's registers do not fit the registry raises
// "registry overflow" from the reused frame before its first instruction:
// a Lua error, which the script's pcall catches and DoString returns. It was
// a Go panic (where() read the line table at pc 0 - 1) that escaped PCall.
func TestTailCallRegistryOverflow(t *testing.T) {
	overflows := 0
	for n := 65536 - 40; n <= 65536; n++ {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%d arguments: a Go panic escaped PCall: %v", n, r)
				}
			}()
			L := NewState(Options{CallStackSize: 200, RegistrySize: 256, RegistryMaxSize: 64 << 10, RegistryGrowStep: 2048})
			defer L.Close()
			err := L.DoString(fmt.Sprintf(`
local function g(a, b, ...)
  local x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
  local y1, y2, y3, y4, y5, y6, y7, y8, y9, y10 = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
  return a
end
local t = {}
for i = 1, %d do t[i] = i end
local function go() return g(unpack(t)) end
pcall(go)
return go()`, n))
			// unpack refuses the values that do not fit at all, as Lua 5.1.
			if err != nil && strings.Contains(err.Error(), "registry overflow") {
				overflows++
			} else if err != nil && !strings.Contains(err.Error(), "too many results to unpack") {
				t.Errorf("%d arguments: %v", n, err)
			}
		}()
	}
	if overflows == 0 {
		t.Error("no tail call overflowed the registry")
	}
}

// An error in a function called through an empty string key (t[""]()) gets
// a traceback naming it by the empty string. Formatting that name read its
// first byte: a Go panic from PCall's deferred handler, which escaped it.
func TestTracebackEmptyFunctionName(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("a Go panic escaped PCall: %v", r)
		}
	}()
	L := NewState()
	defer L.Close()
	err := L.DoString(`local t = {} t[""] = function() error("boom") end t[""]()`)
	if err == nil || !strings.Contains(err.Error(), "in function ''") {
		t.Errorf("got %v, want the error with a traceback naming function ''", err)
	}
}

// A function a host calls from Go is named by where it is defined, as in
// Lua 5.1, not "main chunk": the bottom frame of every callback's traceback.
func TestTracebackHostCalledFunction(t *testing.T) {
	L := NewState()
	defer L.Close()
	if err := L.DoString("f = function()\n  error('boom')\nend"); err != nil {
		t.Fatal(err)
	}
	err := L.CallByParam(P{Fn: L.GetGlobal("f"), NRet: 0, Protect: true})
	if err == nil || !strings.Contains(err.Error(), "in function <<string>:1>") || strings.Contains(err.Error(), "main chunk") {
		t.Errorf("got %v, want a traceback naming function <<string>:1>", err)
	}
	err = L.DoString("error('boom')")
	if err == nil || !strings.Contains(err.Error(), "in main chunk") {
		t.Errorf("a chunk: got %v, want a traceback naming the main chunk", err)
	}
}

// A traceback keeps a frame's lost tail calls as a count: a loop of tail
// calls stopped by its deadline has tens of millions of them, and the
// traceback built a line for each before it kept 15 (4.5 GiB in luamcp for a
// 3 s call timeout, outside any memory limit). Here the error after 4
// million tail calls must take no more memory than returning after them.
func TestTracebackOfManyTailCalls(t *testing.T) {
	const loop = `
local n = 4000000
local function f()
  n = n - 1
  if n == 0 then %s end
  return f()
end
return f()`
	allocated := func(end string) (uint64, error) {
		L := NewState()
		defer L.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := L.DoString(fmt.Sprintf(loop, end))
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, err
	}
	returned, err := allocated("return 1")
	if err != nil {
		t.Fatal(err)
	}
	failed, err := allocated(`error("boom")`)
	var aerr *ApiError
	if !errors.As(err, &aerr) {
		t.Fatalf("want an ApiError, got %v", err)
	}
	if extra := int64(failed) - int64(returned); extra > 1<<20 {
		t.Errorf("the error took %d MiB more than the return", extra>>20)
	}
	lines := strings.Split(aerr.StackTrace, "\n")
	if len(lines) != 16 || lines[2] != "\t<string>:5: in function <<string>:3>" || lines[3] != "\t(tailcall): ?" ||
		lines[8] != "\t..." || lines[14] != "\t(tailcall): ?" || lines[15] != "\t[G]: ?" {
		t.Errorf("traceback:\n%s", aerr.StackTrace)
	}
}
