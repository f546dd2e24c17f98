package luavm

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// The guards in this file keep one library call from doing unbounded work.
// Cancellation (LState.SetContext) is checked between VM instructions only: a
// Go function that allocates gigabytes or loops for minutes in one call cannot
// be stopped, and can take the whole process down with it. Everything else a
// script can do is bounded by the call stack and registry limits (sandbox.go),
// cancellation and the memory watchdog (watchdog.go).

// maxString bounds the string a single library call may build.
const maxString = 64 << 20

// guardLibs replaces the library functions that could build huge strings or
// run long in one call, and makes coroutines honour the running call's
// context.
func guardLibs(L *lua.LState) {
	str := L.GetGlobal("string").(*lua.LTable)
	str.RawSetString("rep", L.NewFunction(strRep))
	str.RawSetString("gsub", L.NewFunction(strGsub))
	str.RawSetString("gmatch", L.NewFunction(strGmatch))
	str.RawSetString("format", L.NewFunction(guardFormat(goFunction(str, "format"))))

	tbl := L.GetGlobal("table").(*lua.LTable)
	tbl.RawSetString("concat", L.NewFunction(guardConcat(goFunction(tbl, "concat"))))

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

func tooLarge(L *lua.LState, fname string) {
	L.RaiseError("%s: the resulting string would exceed %d MiB", fname, maxString>>20)
}

// strRep is string.rep with a bound on the result.
func strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := float64(L.CheckNumber(2))
	if n < 1 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if float64(len(s))*n > maxString {
		tooLarge(L, "string.rep")
	}
	L.Push(lua.LString(strings.Repeat(s, int(n))))
	return 1
}

// guardFormat bounds string.format: widths and precisions have at most two
// digits (as in Lua 5.1), and the result must stay below maxString.
func guardFormat(format lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		f := L.CheckString(1)
		size := len(f)
		for i := 0; i < len(f); i++ {
			if f[i] != '%' {
				continue
			}
			i++
			if i < len(f) && f[i] == '%' {
				continue
			}
			for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
				i++
			}
			if digits(f, &i) > 2 {
				L.RaiseError("invalid format (width or precision too long)")
			}
			if i < len(f) && f[i] == '.' {
				i++
				if digits(f, &i) > 2 {
					L.RaiseError("invalid format (width or precision too long)")
				}
			}
			size += 100
		}
		for i := 2; i <= L.GetTop(); i++ {
			if s, ok := L.Get(i).(lua.LString); ok {
				size += len(s)
			}
		}
		if size > maxString {
			tooLarge(L, "string.format")
		}
		return format(L)
	}
}

// digits advances *i past a run of decimal digits in s and returns its length.
func digits(s string, i *int) int {
	start := *i
	for *i < len(s) && s[*i] >= '0' && s[*i] <= '9' {
		*i++
	}
	return *i - start
}

// guardConcat bounds table.concat, which otherwise joins any number of
// references to one huge string.
func guardConcat(concat lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		t := L.CheckTable(1)
		sep := L.OptString(2, "")
		i := L.OptInt(3, 1)
		j := L.OptInt(4, t.Len())
		size := 0
		for k := max(i, 1); k <= j && k <= t.Len(); k++ {
			switch v := t.RawGetInt(k).(type) {
			case lua.LString:
				size += len(v) + len(sep)
			case lua.LNumber:
				size += 24 + len(sep)
			}
			if size > maxString {
				tooLarge(L, "table.concat")
			}
		}
		return concat(L)
	}
}

// strGsub is string.gsub (Lua 5.1 semantics) built in one pass with a bound on
// the result. gopher-lua's own rebuilds the whole string after every
// replacement, which is quadratic and cannot be interrupted.
func strGsub(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	switch repl.Type() {
	case lua.LTString, lua.LTNumber, lua.LTTable, lua.LTFunction:
	default:
		L.TypeError(3, lua.LTString)
	}
	limit := L.OptInt(4, -1)
	anchored := strings.HasPrefix(pat, "^")
	text := []byte(src)
	var out []byte
	pos, count := 0, 0
	for (limit < 0 || count < limit) && pos <= len(src) {
		m := findOne(L, pat, text, pos)
		if m == nil {
			break
		}
		start, end := m.Capture(0), m.Capture(1)
		out = append(out, src[pos:start]...)
		out = appendReplacement(L, out, src, m, repl)
		count++
		if count%256 == 0 {
			checkContext(L)
		}
		if len(out) > maxString {
			tooLarge(L, "string.gsub")
		}
		if end > start {
			pos = end
		} else {
			if start < len(src) {
				out = append(out, src[start])
			}
			pos = start + 1
		}
		if anchored {
			break
		}
	}
	if pos < len(src) {
		out = append(out, src[pos:]...)
	}
	if len(out) > maxString {
		tooLarge(L, "string.gsub")
	}
	L.Push(lua.LString(out))
	L.Push(lua.LNumber(count))
	return 2
}

// checkContext raises the running call's cancellation inside a long Go loop,
// which the VM's own check between instructions cannot reach.
func checkContext(L *lua.LState) {
	if ctx := L.Context(); ctx != nil && ctx.Err() != nil {
		L.RaiseError("%s", ctx.Err().Error())
	}
}

// findOne returns the first match of pat in text at or after pos, or nil.
func findOne(L *lua.LState, pat string, text []byte, pos int) *pm.MatchData {
	ms, err := pm.Find(pat, text, pos, 1)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	if len(ms) == 0 {
		return nil
	}
	return ms[0]
}

// capture returns capture n of m (0: the whole match, or the first capture
// when there are none and n is 1).
func capture(L *lua.LState, src string, m *pm.MatchData, n int) lua.LValue {
	idx := 2 * n
	if idx >= m.CaptureLength() {
		if n != 1 {
			L.RaiseError("invalid capture index %%%d", n)
		}
		idx = 0
	}
	if m.IsPosCapture(idx) {
		return lua.LNumber(m.Capture(idx))
	}
	return lua.LString(src[m.Capture(idx):m.Capture(idx+1)])
}

func appendReplacement(L *lua.LState, out []byte, src string, m *pm.MatchData, repl lua.LValue) []byte {
	whole := src[m.Capture(0):m.Capture(1)]
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		s := r.String()
		for s != "" {
			i := strings.IndexByte(s, '%')
			if i < 0 || i+1 == len(s) {
				i = len(s)
			}
			if len(out)+i > maxString {
				tooLarge(L, "string.gsub")
			}
			out = append(out, s[:i]...)
			if i == len(s) {
				break
			}
			c := s[i+1]
			s = s[i+2:]
			switch {
			case c == '0':
				out = append(out, whole...)
			case '1' <= c && c <= '9':
				out = append(out, capture(L, src, m, int(c-'0')).String()...)
			default:
				out = append(out, c)
			}
			if len(out) > maxString {
				tooLarge(L, "string.gsub")
			}
		}
		return out
	case *lua.LTable:
		v = L.GetTable(r, capture(L, src, m, 1))
	case *lua.LFunction:
		L.Push(r)
		n := m.CaptureLength()/2 - 1
		if n == 0 {
			L.Push(lua.LString(whole))
			n = 1
		} else {
			for i := 1; i <= n; i++ {
				L.Push(capture(L, src, m, i))
			}
		}
		L.Call(n, 1)
		v = L.Get(-1)
		L.Pop(1)
	}
	switch v := v.(type) {
	case *lua.LNilType:
		return append(out, whole...)
	case lua.LBool:
		if !bool(v) {
			return append(out, whole...)
		}
	case lua.LString, lua.LNumber:
		return append(out, v.String()...)
	}
	L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	return out
}

// strGmatch is string.gmatch finding one match per step, instead of every
// match of the subject up front.
func strGmatch(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	if _, err := pm.Find(pat, nil, 0, 1); err != nil {
		L.RaiseError("%s", err.Error())
	}
	anchored := strings.HasPrefix(pat, "^")
	text := []byte(src)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if pos > len(src) {
			return 0
		}
		m := findOne(L, pat, text, pos)
		if m == nil {
			pos = len(src) + 1
			return 0
		}
		start, end := m.Capture(0), m.Capture(1)
		pos = end
		if end == start {
			pos++
		}
		if anchored {
			pos = len(src) + 1
		}
		n := m.CaptureLength()/2 - 1
		if n == 0 {
			L.Push(lua.LString(src[start:end]))
			return 1
		}
		for i := 1; i <= n; i++ {
			L.Push(capture(L, src, m, i))
		}
		return n
	}))
	return 1
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

func guardResume(resume lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		syncContext(L, L.CheckThread(1))
		return resume(L)
	}
}

func guardWrap(create, resume lua.LGFunction) lua.LGFunction {
	resumeFn := func(L *lua.LState) int {
		syncContext(L, L.CheckThread(1))
		return resume(L)
	}
	return func(L *lua.LState) int {
		L.CheckFunction(1)
		L.SetTop(1)
		create(L)
		th := L.Get(-1)
		L.Pop(1)
		rf := L.NewFunction(resumeFn)
		L.Push(L.NewFunction(func(L *lua.LState) int {
			top := L.GetTop()
			L.Insert(th, 1)
			L.Insert(rf, 1)
			L.Call(top+1, lua.MultRet)
			if !lua.LVAsBool(L.Get(1)) {
				L.Error(L.Get(2), 1)
			}
			return L.GetTop() - 1
		}))
		return 1
	}
}
