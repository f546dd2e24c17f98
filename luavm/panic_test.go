package luavm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Go panics that escaped gopher-lua's PCall: its deferred handler formats a
// traceback of the frames the error left, and a panic there passes every
// recover. luavm's call then panics: on a goroutine of the transport (a
// session's queued call, mcp's session worker) that ends the process, and
// elsewhere it leaves the session's locks and the route's scheduler slot
// held for good.

// inChild runs the test named name again in a child process with env set,
// and fails when the child dies. In the child (env set), it calls tool on
// a stateless session of script src, on a goroutine of its own as the
// transport does, and logs the result.
func inChild(t *testing.T, name, env, src, tool string) {
	t.Helper()
	if os.Getenv(env) == "1" {
		s, _ := loadSource(t, "child.lua", src)
		ss, _ := open(t, s, "")
		done := make(chan string, 1)
		go func() {
			res, err := call(t, ss, tool, `{}`)
			done <- fmt.Sprintf("res=%.200s err=%v", res, err)
		}()
		t.Log(<-done)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		text := string(out)
		if i := strings.Index(text, "panic:"); i >= 0 {
			text = text[i:min(len(text), i+600)]
		}
		t.Fatalf("the process died: %v\n%s", err, text)
	}
	contains(t, string(out), "res=")
}

// tailOverflow tail-calls a vararg function with its arguments filling the
// value stack, for every count near the stack's bound: for one of them the
// arguments fit and the callee's frame does not, and the tail call raises
// "registry overflow" from the frame it reuses, before its first
// instruction.
const tailOverflow = `local function g(a, b, ...)
  local x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
  local y1, y2, y3, y4, y5, y6, y7, y8, y9, y10 = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
  return a
end
local t = {}
for i = 1, 65536 do t[i] = i end
local function go(n) return g(unpack(t, 1, n)) end
return {
  init = function() return { name = "tail", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "tail" } } end,
  handle_tool = function()
    local failures = 0
    for n = 65536 - 400, 65536 do
      if not pcall(go, n) then failures = failures + 1 end
    end
    return tostring(failures)
  end,
}`

// A tail call whose callee's frame overflows the value stack is a Lua error
// like any other. gopher-lua's OP_TAILCALL reuses the caller's frame with
// its program counter reset to 0 before it sizes the registers, and the
// error's position and the traceback read the line table at index -1.
func TestTailCallOverflowIsAnError(t *testing.T) {
	inChild(t, "TestTailCallOverflowIsAnError", "LUAVM_PANIC_CHILD_TAIL", tailOverflow, "tail")
}

// emptyName errors inside a function called as t[""](): the traceback
// names the function by the key it was called with, "".
const emptyName = `local t = {}
t[""] = function() error("boom") end
return {
  init = function() return { name = "empty", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "empty" } } end,
  handle_tool = function()
    local ok, err = pcall(t[""]) -- a call named by nothing: no traceback line
    t[""]()
  end,
}`

// An error in a function called through an empty string key is a crash of
// its call, not of the process: the traceback read the first byte of the
// function's name, "".
func TestEmptyFunctionNameInTraceback(t *testing.T) {
	inChild(t, "TestEmptyFunctionNameInTraceback", "LUAVM_PANIC_CHILD_EMPTY", emptyName, "empty")
}

// unwindScript runs the chunk %s as its tool's body.
const unwindScript = `return {
  init = function() return { name = "unwind", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "unwind" } } end,
  handle_tool = function() %s end,
}`

// Errors caught at every depth of the call stack leave it as deep as it
// was. gopher-lua's auto-growing call stack lost 8 frames each time a
// pcall entered at a depth that is a multiple of 8 unwound (patched
// SetSp): an xpcall whose handler recursed through xpcall ran until the Go
// stack passed its maximum, a fatal error, or returned Go nils among its
// results, on which the tool's result encoding panicked (FuzzChunk's first
// finding).
func TestCallStackUnwinds(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"xpcall", `local function f() return xpcall(f, f) end return f()`},
		{"xpcall_first", `local function f() return xpcall(f, f) end return (f())`},
		{"pcall", `local function f() return pcall(f) end return f()`},
		{"handler", `local function h() return select(2, xpcall(error, h)) end return xpcall(error, h)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inChild(t, "TestCallStackUnwinds/"+tt.name, "LUAVM_PANIC_CHILD_UNWIND_"+strings.ToUpper(tt.name),
				fmt.Sprintf(unwindScript, tt.body), "unwind")
		})
	}
}

// A coroutine that yields from inside a pcall gets an error, as in Lua 5.1:
// gopher-lua let the yield leave the pcall's own loop running the
// coroutine, and the next resume dereferenced a nil frame (FuzzChunk's
// second finding: a Go panic, recovered as a Lua error).
func TestYieldInsidePcall(t *testing.T) {
	s, _ := loadSource(t, "yield.lua", fmt.Sprintf(unwindScript, `
local co = coroutine.create(function()
  return pcall(function() coroutine.yield(1) error("after") end)
end)
local out = {}
for i = 1, 3 do
  local r = { coroutine.resume(co) }
  for j = 1, #r do r[j] = tostring(r[j]) end
  out[i] = table.concat(r, " ")
end
return table.concat(out, ";")`))
	ss, _ := open(t, s, "")
	got := text(t, mustCall(t, ss, "unwind", `{}`))
	contains(t, got, "attempt to yield across metamethod/C-call boundary")
	if strings.Contains(got, "runtime error") {
		t.Errorf("a Go panic: %s", got)
	}
}

// A Go nil among a call's results (a corrupt VM stack: what an interpreter
// bug left, FuzzChunk's first finding) is a crash that drops the state, not
// a value the host reads and panics on with the session's lock held.
func TestGoNilResultIsACrash(t *testing.T) {
	s, _ := load(t, "echo.lua", nil)
	v, err := s.current().newVM(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	r := v.start(context.Background(), &timeoutError{what: "test", limit: time.Minute})
	defer r.end()
	corrupt := v.L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("ok"))
		L.Push(nil)
		return 2
	})
	rets, err := r.call("corrupt", corrupt, 2)
	if err == nil || !strings.Contains(err.Error(), "invalid value") {
		t.Fatalf("got %v, %v; want the crash of an invalid value", rets, err)
	}
	if !v.broken {
		t.Error("the state is still in use after it returned a Go nil")
	}
}
