package luavm

import (
	lua "github.com/yuin/gopher-lua"
)

// What a single library call may allocate or how long it may loop is bounded
// inside gopher-lua (third_party/gopher-lua, budget.go): each state has a
// memory budget (the route option memory_limit_mb) charged before every
// allocation a script controls, and the libraries' Go loops, the pattern
// matcher included, honour the state's context. The call stack and the value
// stack are bounded by the state's options (sandbox.go).
//
// What is left here: coroutines must honour the running call's context.

// guardLibs makes coroutines honour the running call's context.
func guardLibs(L *lua.LState) {
	co := L.GetGlobal("coroutine").(*lua.LTable)
	resume := goFunction(co, "resume")
	create := goFunction(co, "create")
	co.RawSetString("resume", L.NewFunction(guardResume(resume)))
	co.RawSetString("wrap", L.NewFunction(guardWrap(create, resume)))
}

// goFunction returns the Go implementation of the library function t[name].
func goFunction(t *lua.LTable, name string) lua.LGFunction {
	return t.RawGetString(name).(*lua.LFunction).GFunction
}

// Coroutines. A thread takes the context its creator had when it was created;
// one created outside a call has none and could then loop forever unseen, and
// one kept across calls would carry a context long cancelled. Resuming hands
// the thread the context of the code that resumes it.

func syncContext(L, th *lua.LState) {
	if ctx := L.Context(); ctx != nil {
		th.SetContext(ctx)
	} else if th.Context() != nil {
		th.RemoveContext()
	}
}

// A resumed coroutine runs on the Go stack of the goroutine that resumes it,
// under the resumer's frames, and callStackSize bounds each thread alone:
// coroutines nested in coroutines, each holding nested pcalls, grew the Go
// stack past its 1 GB maximum, a fatal error. A resume is refused when the
// frames of the chain of resumers pass maxResumeFrames, so the frames of one
// call's goroutine stay below maxResumeFrames + callStackSize.
const maxResumeFrames = 4 * callStackSize

// errNestedTooDeep is the refused resume's error message.
const errNestedTooDeep = "coroutines nested too deep"

// nestedTooDeep reports whether L, about to resume a coroutine, has too
// many frames under it. L.Parent is the thread that resumed L, and so on up:
// while L runs, each of them is inside the resume of the one below.
func nestedTooDeep(L *lua.LState) bool {
	frames := 0
	for th := L; th != nil; th = th.Parent {
		if frames += th.CallDepth() + 1; frames > maxResumeFrames {
			return true
		}
	}
	return false
}

func guardResume(resume lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		syncContext(L, L.CheckThread(1))
		if nestedTooDeep(L) {
			// As a failed resume: the script sees false and the message.
			L.Push(lua.LFalse)
			L.Push(lua.LString(errNestedTooDeep))
			return 2
		}
		return resume(L)
	}
}

func guardWrap(create, resume lua.LGFunction) lua.LGFunction {
	resumeFn := guardResume(resume)
	return func(L *lua.LState) int {
		L.CheckFunction(1)
		L.SetTop(1)
		create(L)
		th := L.Get(-1)
		L.Pop(1)
		// The thread and the resumer are the wrapper's upvalues, not values
		// its Go closure captures: what Lua can reach must be reachable
		// through Lua values (the budget's measure and the recycling
		// baseline walk them, recycle.go).
		L.Push(L.NewClosure(wrapped, th, L.NewFunction(resumeFn)))
		return 1
	}
}

// wrapped is the function coroutine.wrap returns: it resumes its upvalue 1
// (the thread) with upvalue 2 (the guarded resume).
func wrapped(L *lua.LState) int {
	top := L.GetTop()
	L.Insert(L.Get(lua.UpvalueIndex(1)), 1)
	L.Insert(L.Get(lua.UpvalueIndex(2)), 1)
	L.Call(top+1, lua.MultRet)
	if !lua.LVAsBool(L.Get(1)) {
		L.Error(L.Get(2), 1)
	}
	return L.GetTop() - 1
}
