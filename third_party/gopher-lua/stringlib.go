package lua

import (
	"strings"
	"unsafe"

	"github.com/yuin/gopher-lua/pm"
)

const emptyLString LString = LString("")

func OpenString(L *LState) int {
	var mod *LTable
	//_, ok := L.G.builtinMts[int(LTString)]
	//if !ok {
	mod = L.RegisterModule(StringLibName, strFuncs).(*LTable)
	// Patched for luamcp: gfind is Lua 5.1's alias of gmatch (LUA_COMPAT_GFIND),
	// the same guarded function.
	gmatch := L.NewFunction(strGmatch)
	mod.RawSetString("gmatch", gmatch)
	mod.RawSetString("gfind", gmatch)
	mod.RawSetString("__index", mod)
	L.G.builtinMts[int(LTString)] = mod
	//}
	L.Push(mod)
	return 1
}

var strFuncs = map[string]LGFunction{
	"byte":    strByte,
	"char":    strChar,
	"dump":    strDump,
	"find":    strFind,
	"format":  strFormat,
	"gsub":    strGsub,
	"len":     strLen,
	"lower":   strLower,
	"match":   strMatch,
	"rep":     strRep,
	"reverse": strReverse,
	"sub":     strSub,
	"upper":   strUpper,
}

func strByte(L *LState) int {
	str := L.CheckString(1)
	start := L.OptInt(2, 1) - 1
	end := L.OptInt(3, -1)
	l := len(str)
	if start < 0 {
		start = l + start + 1
	}
	if end < 0 {
		end = l + end + 1
	}

	if L.GetTop() == 2 {
		if start < 0 || start >= l {
			return 0
		}
		L.Push(LNumber(str[start]))
		return 1
	}

	start = intMax(start, 0)
	end = intMin(end, l)
	if end < 0 || end <= start || start >= l {
		return 0
	}

	for i := start; i < end; i++ {
		L.Push(LNumber(str[i]))
	}
	return end - start
}

func strChar(L *LState) int {
	top := L.GetTop()
	L.charge(top) // patched for luamcp
	bytes := make([]byte, L.GetTop())
	for i := 1; i <= top; i++ {
		bytes[i-1] = uint8(L.CheckInt(i))
	}
	L.Push(LString(string(bytes)))
	return 1
}

func strDump(L *LState) int {
	L.RaiseError("GopherLua does not support the string.dump")
	return 0
}

func strFind(L *LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	if len(pattern) == 0 {
		L.Push(LNumber(1))
		L.Push(LNumber(0))
		return 2
	}
	init := luaIndex2StringIndex(str, L.OptInt(3, 1), true)
	plain := false
	if L.GetTop() == 4 {
		plain = LVAsBool(L.Get(4))
	}

	if plain {
		pos := strings.Index(str[init:], pattern)
		if pos < 0 {
			L.Push(LNil)
			return 1
		}
		L.Push(LNumber(init+pos) + 1)
		L.Push(LNumber(init + pos + len(pattern)))
		return 2
	}

	md := L.findPattern(L.compilePattern(pattern), str, init) // patched for luamcp: guarded
	if md == nil {
		L.Push(LNil)
		return 1
	}
	L.Push(LNumber(md.Capture(0) + 1))
	L.Push(LNumber(md.Capture(1)))
	for i := 2; i < md.CaptureLength(); i += 2 {
		if md.IsPosCapture(i) {
			L.Push(LNumber(md.Capture(i)))
		} else {
			L.Push(L.substring(str, md.Capture(i), md.Capture(i+1))) // patched for luamcp: a copy
		}
	}
	return md.CaptureLength()/2 + 1
}

func strFormat(L *LState) int {
	str := L.CheckString(1)
	L.charge(formatSize(L, str)) // patched for luamcp
	L.Push(LString(strFormatLua(L, str)))
	return 1
}

// Patched for luamcp: gsub builds its result in one pass, finding one match
// at a time, with the result charged to the budget as it grows. Upstream
// found every match up front and rebuilt the whole string after each
// replacement (quadratic, and not interruptible). Replacement strings read
// as upstream's ("%%" is "%", "%" and another non-digit stay as they are);
// as in Lua 5.1, a number replaces like a string, and a table or function
// whose value is neither false, nil, a string nor a number is an error.
func strGsub(L *LState) int {
	src := L.CheckString(1)
	pat := L.compilePattern(L.CheckString(2))
	L.CheckTypes(3, LTString, LTNumber, LTTable, LTFunction)
	repl := L.Get(3)
	limit := L.OptInt(4, -1)
	var out []byte
	pos, count := 0, 0
	for (limit < 0 || count < limit) && pos <= len(src) {
		m := L.findPattern(pat, src, pos)
		if m == nil {
			break
		}
		start, end := m.Capture(0), m.Capture(1)
		out = appendCharged(L, out, src[pos:start])
		out = strGsubAppend(L, out, src, m, repl)
		count++
		L.step(end - pos + 1)
		if end > start {
			pos = end
		} else {
			if start < len(src) {
				out = appendCharged(L, out, src[start:start+1])
			}
			pos = start + 1
		}
		if pat.MustHead() {
			break
		}
	}
	if count == 0 {
		L.SetTop(1)
		L.Push(LNumber(0))
		return 2
	}
	if pos < len(src) {
		out = appendCharged(L, out, src[pos:])
	}
	L.charge(len(out))
	L.Push(LString(out))
	L.Push(LNumber(count))
	return 2
}

// appendCharged appends s to b, charging the growth of b before it happens.
func appendCharged(L *LState, b []byte, s string) []byte {
	if len(b)+len(s) > cap(b) {
		n := max(addSize(len(b), len(s)), 2*cap(b), 64)
		L.charge(n)
		nb := make([]byte, len(b), n)
		copy(nb, b)
		b = nb
	}
	return append(b, s...)
}

// strGsubCapture returns capture n of m (0: the whole match, as is capture 1
// of a pattern without captures).
func strGsubCapture(L *LState, src string, m *pm.MatchData, n int) LValue {
	idx := strCaptureIndex(L, m, n)
	if m.IsPosCapture(idx) {
		return LNumber(m.Capture(idx))
	}
	return L.substring(src, m.Capture(idx), m.Capture(idx+1))
}

// strGsubCaptureText is capture n of m as a replacement string shows it:
// its bytes, not copied (they are appended), or its position.
func strGsubCaptureText(L *LState, src string, m *pm.MatchData, n int) string {
	idx := strCaptureIndex(L, m, n)
	if m.IsPosCapture(idx) {
		return LNumber(m.Capture(idx)).String()
	}
	return src[m.Capture(idx):m.Capture(idx+1)]
}

// strCaptureIndex is the index in m of capture n (see strGsubCapture).
func strCaptureIndex(L *LState, m *pm.MatchData, n int) int {
	idx := 2 * n
	if idx >= m.CaptureLength() {
		if n != 1 {
			L.RaiseError("invalid capture index")
		}
		idx = 0
	}
	return idx
}

// strGsubAppend appends the replacement of match m to out.
func strGsubAppend(L *LState, out []byte, src string, m *pm.MatchData, repl LValue) []byte {
	whole := src[m.Capture(0):m.Capture(1)]
	var v LValue
	switch r := repl.(type) {
	case LString, LNumber:
		s := LVAsString(r)
		for s != "" {
			i := strings.IndexByte(s, '%')
			if i < 0 || i+1 == len(s) {
				i = len(s)
			}
			out = appendCharged(L, out, s[:i])
			if i == len(s) {
				break
			}
			c, s0 := s[i+1], s
			s = s[i+2:]
			switch {
			case c == '0':
				out = appendCharged(L, out, whole)
			case '1' <= c && c <= '9':
				out = appendCharged(L, out, strGsubCaptureText(L, src, m, int(c-'0')))
			case c == '%':
				out = appendCharged(L, out, "%")
			default: // as upstream (Lua 5.1 drops the %; 5.2 raises)
				out = appendCharged(L, out, s0[i:i+2])
			}
		}
		return out
	case *LTable:
		v = L.GetTable(r, strGsubCapture(L, src, m, 1))
	case *LFunction:
		L.Push(r)
		n := m.CaptureLength()/2 - 1
		if n == 0 {
			L.Push(L.substring(src, m.Capture(0), m.Capture(1)))
			n = 1
		} else {
			for i := 1; i <= n; i++ {
				L.Push(strGsubCapture(L, src, m, i))
			}
		}
		L.Call(n, 1)
		v = L.reg.Pop()
	}
	switch v := v.(type) {
	case *LNilType:
		return appendCharged(L, out, whole)
	case LBool:
		if !bool(v) {
			return appendCharged(L, out, whole)
		}
	case LString, LNumber:
		return appendCharged(L, out, LVAsString(v))
	}
	L.RaiseError("invalid replacement value (a %s)", v.Type().String())
	return out
}

// Patched for luamcp: gmatch finds one match per call of the iterator.
// Upstream found every match of the subject up front.
func strGmatch(L *LState) int {
	src := L.CheckString(1)
	ud := L.NewUserData()
	ud.Value = &gmatchState{src: src, pat: L.compilePattern(L.CheckString(2))}
	L.Push(L.NewClosure(strGmatchIter, ud))
	return 1
}

// gmatchState is what a gmatch iterator keeps from one call to the next. It
// lives in a userdata, the iterator's upvalue, not in variables of a Go
// closure (patched for luamcp), so that the state's owners see it: a
// baseline refuses a Go function whose upvalue holds a userdata (the
// iterator's position is mutable: a recycled state would let the next
// client go on where the last one stopped), and the budget's walk counts
// the subject and the compiled pattern an iterator keeps alive.
type gmatchState struct {
	src string
	pat *pm.Pattern
	pos int // where the next search starts; past len(src) when done
}

func (st *gmatchState) measure(w *walker) {
	w.str(st.src)
	w.size += st.pat.Size()
}

func strGmatchIter(L *LState) int {
	st := L.Get(UpvalueIndex(1)).(*LUserData).Value.(*gmatchState)
	src, pat := st.src, st.pat
	if st.pos > len(src) {
		return 0
	}
	m := L.findPattern(pat, src, st.pos)
	if m == nil {
		st.pos = len(src) + 1
		return 0
	}
	start, end := m.Capture(0), m.Capture(1)
	st.pos = end
	if end == start {
		st.pos++
	}
	if pat.MustHead() {
		st.pos = len(src) + 1
	}
	n := m.CaptureLength()/2 - 1
	if n == 0 {
		L.Push(L.substring(src, start, end))
		return 1
	}
	for i := 1; i <= n; i++ {
		L.Push(strGsubCapture(L, src, m, i))
	}
	return n
}

func strLen(L *LState) int {
	str := L.CheckString(1)
	L.Push(LNumber(len(str)))
	return 1
}

func strLower(L *LState) int {
	str := L.CheckString(1)
	L.charge(len(str)) // patched for luamcp
	L.step(len(str))
	L.Push(LString(strings.ToLower(str)))
	return 1
}

func strMatch(L *LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	offset := L.OptInt(3, 1)
	l := len(str)
	if offset < 0 {
		offset = l + offset + 1
	}
	offset--
	if offset < 0 {
		offset = 0
	}

	md := L.findPattern(L.compilePattern(pattern), str, offset) // patched for luamcp: guarded
	if md == nil {
		L.Push(LNil)
		return 0
	}
	nsubs := md.CaptureLength() / 2
	switch nsubs {
	case 1:
		L.Push(L.substring(str, md.Capture(0), md.Capture(1))) // patched for luamcp: a copy
		return 1
	default:
		for i := 2; i < md.CaptureLength(); i += 2 {
			if md.IsPosCapture(i) {
				L.Push(LNumber(md.Capture(i)))
			} else {
				L.Push(L.substring(str, md.Capture(i), md.Capture(i+1))) // patched for luamcp: a copy
			}
		}
		return nsubs - 1
	}
}

// Patched for luamcp: the result is charged before it is built, and built by
// doubling copies with cancellation checks in between.
func strRep(L *LState) int {
	str := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || str == "" {
		L.Push(emptyLString)
		return 1
	}
	size := mulSize(len(str), n)
	L.charge(size)
	out := make([]byte, size)
	done := copy(out, str)
	piece := max(stepsPerCheck-stepsPerCheck%len(str), len(str)) // whole copies of str
	for done < size {
		chunk := copy(out[done:], out[:min(done, piece)])
		done += chunk
		L.step(chunk)
	}
	L.Push(LString(unsafe.String(unsafe.SliceData(out), size)))
	return 1
}

func strReverse(L *LState) int {
	str := L.CheckString(1)
	L.charge(len(str)) // patched for luamcp: one copy, charged
	L.step(len(str))
	out := make([]byte, len(str))
	for i, j := 0, len(str)-1; j >= 0; i, j = i+1, j-1 {
		out[i] = str[j]
	}
	L.Push(LString(unsafe.String(unsafe.SliceData(out), len(out))))
	return 1
}

func strSub(L *LState) int {
	str := L.CheckString(1)
	start := luaIndex2StringIndex(str, L.CheckInt(2), true)
	end := luaIndex2StringIndex(str, L.OptInt(3, -1), false)
	l := len(str)
	if start >= l || end < start {
		L.Push(emptyLString)
	} else {
		L.Push(L.substring(str, start, end)) // patched for luamcp: a copy
	}
	return 1
}

func strUpper(L *LState) int {
	str := L.CheckString(1)
	L.charge(len(str)) // patched for luamcp
	L.step(len(str))
	L.Push(LString(strings.ToUpper(str)))
	return 1
}

func luaIndex2StringIndex(str string, i int, start bool) int {
	if start && i != 0 {
		i -= 1
	}
	l := len(str)
	if i < 0 {
		i = l + i + 1
	}
	i = intMax(0, i)
	if !start && i > l {
		i = l
	}
	return i
}

//

// Patched for luamcp: pattern searches bounded by the state's context and
// memory budget, and the bound of string.format.

// substring returns s[i:j] as a string of its own, charged, unless it is
// the whole of s. A Go substring shares the bytes of s and keeps them all
// alive, which the budget's walk cannot tell: a script keeping one byte of
// each of many large strings kept them all, past its budget. (Lua copies
// every substring too.)
func (ls *LState) substring(s string, i, j int) LString {
	switch {
	case i == 0 && j == len(s):
		return LString(s)
	case j-i == 1: // s:sub(i, i) in loops: no allocation
		return LString(byteStrings[s[i] : int(s[i])+1])
	}
	ls.charge(j - i)
	return LString(strings.Clone(s[i:j]))
}

// byteStrings holds every byte value once, for one-byte substrings.
var byteStrings = func() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}()

// compilePattern compiles a Lua pattern, raising its syntax errors. The
// compilation is charged before it starts (a pattern of megabytes took
// gigabytes to compile) and stops when the state's context is done.
func (ls *LState) compilePattern(p string) *pm.Pattern {
	ls.charge(mulSize(len(p), sizePatternByte))
	pat, err := pm.Compile(patternGuard{ls}, p)
	if err != nil {
		ls.RaiseError("%s", err.Error())
	}
	return pat
}

// findPattern returns the first match of pat in str at or after init, or nil.
// The search stops, raising, when the state's context is done or its
// backtracking would exceed the memory budget.
func (ls *LState) findPattern(pat *pm.Pattern, str string, init int) *pm.MatchData {
	mds, err := pat.Find(patternGuard{ls}, unsafeFastStringToReadOnlyBytes(str), init, 1)
	if err != nil {
		ls.RaiseError("%s", err.Error())
	}
	if len(mds) == 0 {
		return nil
	}
	return mds[0]
}

// formatSize is an upper bound of the length of string.format(f, ...) with
// the arguments on L's stack (strFormatLua formats it). Widths and
// precisions have at most two digits, as in Lua 5.1.
func formatSize(L *LState, f string) int {
	size := len(f)
	arg := 2
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
		if formatDigits(f, &i) > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
		if i < len(f) && f[i] == '.' {
			i++
			if formatDigits(f, &i) > 2 {
				L.RaiseError("invalid format (width or precision too long)")
			}
		}
		n := 512 // a number: at most 99 digits of precision, 309 of exponent
		if s, ok := L.Get(arg).(LString); ok {
			// %s prints a string whole, %q escapes it (\000 for a zero
			// byte at worst); any other verb takes it as a number.
			switch {
			case i < len(f) && f[i] == 's':
				n = max(len(s), 99)
			case i < len(f) && f[i] == 'q':
				n = addSize(mulSize(len(s), 4), 99)
			}
		}
		size = addSize(size, n)
		arg++
	}
	return size
}

// formatDigits advances *i past a run of decimal digits in s and returns its
// length.
func formatDigits(s string, i *int) int {
	start := *i
	for *i < len(s) && s[*i] >= '0' && s[*i] <= '9' {
		*i++
	}
	return *i - start
}
