package lua

func OpenCoroutine(L *LState) int {
	// TODO: Tie module name to contents of linit.go?
	mod := L.RegisterModule(CoroutineLibName, coFuncs)
	L.Push(mod)
	return 1
}

var coFuncs = map[string]LGFunction{
	"create":  coCreate,
	"yield":   coYield,
	"resume":  coResume,
	"running": coRunning,
	"status":  coStatus,
	"wrap":    coWrap,
}

func coCreate(L *LState) int {
	// patched for luamcp: Lua 5.1's messages for a bad argument of create,
	// wrap, resume and status.
	fn, ok := L.Get(1).(*LFunction)
	if !ok {
		L.ArgError(1, "Lua function expected")
	}
	L.charge(threadCost(L.Options)) // patched for luamcp
	newthread, _ := L.newThread()
	base := 0
	newthread.stack.Push(callFrame{
		Fn:         fn,
		Pc:         0,
		Base:       base,
		LocalBase:  base + 1,
		ReturnBase: base,
		NArgs:      0,
		NRet:       MultRet,
		Parent:     nil,
		TailCall:   0,
	})
	L.Push(newthread)
	return 1
}

func coYield(L *LState) int {
	return -1
}

// patched for luamcp: Lua 5.1's messages ("cannot resume dead coroutine";
// upstream said "can not resume a dead thread"), and a coroutine that is
// resuming another one, directly or through others ("normal"), cannot be
// resumed, as in Lua 5.1. Upstream resumed it: co1 resuming co2 resuming co1
// made each the other's parent and resumed them in turn on one Go stack until
// the stack passed its maximum, a fatal error ending the process.
func coResume(L *LState) int {
	th := checkCoroutine(L)
	if !th.Dead && L.G.CurrentThread != th && resuming(L, th) {
		msg := "cannot resume normal coroutine"
		if th.wrapped {
			L.RaiseError(msg)
			return 0
		}
		L.Push(LFalse)
		L.Push(LString(msg))
		return 2
	}
	if L.G.CurrentThread == th {
		msg := "cannot resume running coroutine"
		if th.wrapped {
			L.RaiseError(msg)
			return 0
		}
		L.Push(LFalse)
		L.Push(LString(msg))
		return 2
	}
	if th.Dead {
		msg := "cannot resume dead coroutine"
		if th.wrapped {
			L.RaiseError(msg)
			return 0
		}
		L.Push(LFalse)
		L.Push(LString(msg))
		return 2
	}
	if th.stack.IsEmpty() {
		// patched for luamcp: a coroutine whose function ended in a tail call
		// of yield (return coroutine.yield(...)) has no frame left, its
		// function's frame replaced by yield's: the values of this resume
		// are what the function returns, and the coroutine is dead, as in
		// Lua 5.1. Upstream took it for one not started and dereferenced
		// its missing frame (a Go panic).
		nargs := L.GetTop() - 1
		if !th.wrapped {
			L.Insert(LTrue, 2)
			nargs++
		}
		th.kill()
		return nargs
	}
	L.charge(0) // patched for luamcp: checks the registries the threads grew (budget.go)
	th.Parent = L
	L.G.CurrentThread = th
	if !th.isStarted() {
		cf := th.stack.Last()
		th.currentFrame = cf
		th.SetTop(0)
		nargs := L.GetTop() - 1
		L.XMoveTo(th, nargs)
		cf.NArgs = nargs
		th.initCallFrame(cf)
		th.Panic = panicWithoutTraceback
	} else {
		nargs := L.GetTop() - 1
		L.XMoveTo(th, nargs)
		adjustYieldResults(th, nargs)
	}
	top := L.GetTop()
	threadRun(th)
	return L.GetTop() - top
}

// adjustYieldResults makes the nargs values a resume passed to th, which
// yielded, the results of its call of yield as the call wants them (patched
// for luamcp): as many as the CALL instruction asks for, nils added or extra
// values dropped, as Lua 5.1's luaD_poscall when lua_resume finishes a yield.
// Upstream left them as passed: local a, b, c = coroutine.yield() resumed
// with one value left b and c as Go nils past the top (a Go panic where they
// were read), and return (coroutine.yield()) returned them all. The values
// are at the top of th's registers, where the call's results go (its
// ReturnBase, which is the CALL's A, also when yield replaced a function
// that tail-called it).
func adjustYieldResults(th *LState, nargs int) {
	cf := th.currentFrame
	if cf == nil || cf.Fn == nil || cf.Fn.IsG || cf.Pc < 1 || cf.Pc > len(cf.Fn.Proto.Code) {
		return
	}
	inst := cf.Fn.Proto.Code[cf.Pc-1]
	if opGetOpCode(inst) != OP_CALL {
		return
	}
	ra := cf.LocalBase + opGetArgA(inst)
	nret := opGetArgC(inst) - 1
	if nret < 0 || th.reg.Top()-nargs != ra {
		return
	}
	th.reg.SetTop(ra + nret)
}

func coRunning(L *LState) int {
	if L.G.MainThread == L {
		L.Push(LNil)
		return 1
	}
	L.Push(L.G.CurrentThread)
	return 1
}

// resuming reports whether th is in the chain of threads resuming L (patched
// for luamcp). While L runs, L.Parent is inside its resume of L, its Parent
// inside its resume of it, and so on up to the main thread; a suspended
// thread's Parent may be stale, but none is on this chain.
func resuming(L, th *LState) bool {
	for p := L.Parent; p != nil; p = p.Parent {
		if p == th {
			return true
		}
		if p == L { // a chain that loops (defensive: resume refuses to make one)
			break
		}
	}
	return false
}

func coStatus(L *LState) int {
	th := checkCoroutine(L)
	status := L.Status(th)
	if status == "suspended" && resuming(L, th) { // patched for luamcp: "normal" further up the chain too
		status = "normal"
	}
	L.Push(LString(status))
	return 1
}

func wrapaux(L *LState) int {
	L.Insert(L.ToThread(UpvalueIndex(1)), 1)
	return coResume(L)
}

func coWrap(L *LState) int {
	coCreate(L)
	L.CheckThread(L.GetTop()).wrapped = true
	v := L.Get(L.GetTop())
	L.Pop(1)
	L.Push(L.NewClosure(wrapaux, v))
	return 1
}

//

// checkCoroutine is argument 1 as a thread, or Lua 5.1's error for it.
func checkCoroutine(L *LState) *LState {
	th, ok := L.Get(1).(*LState)
	if !ok {
		L.ArgError(1, "coroutine expected")
	}
	return th
}
