package lua

import (
	"errors"
	"strings"
	"testing"
)

// The auto-growing call stack (Options.MinimizeStackMemory) keeps its depth
// across SetSp at every depth: Push moves to a new segment only when it
// needs one, so a depth that is a multiple of FramesPerSegment is a full
// segment. SetSp(16) on a stack 16 deep left it 8 deep.
func TestAutoGrowingSetSpKeepsFullSegment(t *testing.T) {
	for depth := 0; depth <= 4*FramesPerSegment; depth++ {
		for to := 0; to <= depth; to++ {
			cs := newAutoGrowingCallFrameStack(64)
			for range depth {
				cs.Push(callFrame{})
			}
			cs.SetSp(to)
			if got := cs.Sp(); got != to {
				t.Fatalf("%d frames, SetSp(%d): Sp() = %d", depth, to, got)
			}
			cs.Push(callFrame{})
			if last := cs.Last(); last.Idx != to {
				t.Fatalf("%d frames, SetSp(%d), Push: the last frame is at %d", depth, to, last.Idx)
			}
		}
	}
}

// A full auto-growing call stack is found by IsFull, so that a call past it
// is the Lua error "stack overflow" with its position. IsFull compared the
// segment index with the number of segments, which it never reaches: the
// overflow was Push's panic("lua callstack overflow"), a Go panic.
func TestAutoGrowingIsFull(t *testing.T) {
	for _, size := range []int{8, 16, 200} {
		cs := newAutoGrowingCallFrameStack(size)
		for i := range size {
			if cs.IsFull() {
				t.Fatalf("size %d: full at %d frames", size, i)
			}
			cs.Push(callFrame{})
		}
		if !cs.IsFull() {
			t.Errorf("size %d: not full at %d frames", size, size)
		}
	}
}

// Call stack overflows with either stack are Lua errors, raised where the
// call is made, and every unwind leaves the call stack as deep as it was:
// the error handler of an xpcall that recurses through xpcall runs a
// bounded number of times. With the auto-growing stack, each unwind from a
// depth that is a multiple of 8 lost 8 frames; the handler ran forever,
// each time deeper in the Go stack, until it passed its maximum (a fatal
// error, not a panic: no recover catches it). The scripts count their
// calls and stop, so that the test fails instead of the process.
func TestCallStackOverflowUnwinds(t *testing.T) {
	scripts := []struct {
		name, src string
		maxCalls  int
	}{
		{"recursion", `local function r() return 1 + r() end return r()`, 0},
		{"xpcall handler", `
local n = 0
local function f()
  n = n + 1
  if n > 10000 then error("unbounded") end
  return xpcall(f, f)
end
return f()`, 10000},
		{"pcall", `
local n = 0
local function f()
  n = n + 1
  if n > 10000 then error("unbounded") end
  return pcall(f)
end
return f()`, 10000},
		{"handler of handler", `
local n = 0
local function h(e)
  n = n + 1
  if n > 10000 then error("unbounded") end
  return select(2, xpcall(error, h))
end
return xpcall(error, h)`, 10000},
	}
	for _, minimize := range []bool{false, true} {
		for _, size := range []int{15, 16, 17, 200} {
			for _, sc := range scripts {
				L := NewState(Options{CallStackSize: size, MinimizeStackMemory: minimize})
				err := L.DoString(sc.src)
				L.Close()
				if err != nil {
					var aerr *ApiError
					if !errors.As(err, &aerr) || aerr.Type != ApiErrorRun ||
						!strings.Contains(err.Error(), "stack overflow") || strings.Contains(err.Error(), "lua callstack overflow") {
						t.Errorf("minimize %v, size %d, %s: %v", minimize, size, sc.name, err)
					}
					continue
				}
				if sc.maxCalls == 0 {
					t.Errorf("minimize %v, size %d, %s: no error", minimize, size, sc.name)
				}
			}
		}
	}
}

// The results of a caught overflow are the values Lua returned, nothing
// else: no hole the host would read as a Go nil.
func TestCallStackOverflowResults(t *testing.T) {
	for _, minimize := range []bool{false, true} {
		L := NewState(Options{CallStackSize: 200, MinimizeStackMemory: minimize})
		fn, err := L.LoadString(`local n = 0
local function f() n = n + 1 if n > 10000 then error("unbounded") end return xpcall(f, f) end
return f()`)
		if err != nil {
			t.Fatal(err)
		}
		L.Push(fn)
		if err := L.PCall(0, MultRet, nil); err != nil {
			t.Errorf("minimize %v: %v", minimize, err)
		}
		for i := 1; i <= L.GetTop(); i++ {
			if L.Get(i) == nil {
				t.Errorf("minimize %v: result %d is a Go nil", minimize, i)
			}
		}
		// The overflow is raised inside the handler f, which xpcall returns
		// as Lua 5.1 does: "error in error handling" (LUA_ERRERR).
		if last := L.Get(-1); last.String() != "error in error handling" {
			t.Errorf("minimize %v: last result %q", minimize, last)
		}
		L.Close()
	}
}
