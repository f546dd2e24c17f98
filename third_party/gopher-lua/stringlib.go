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

// patched for luamcp: positions as Lua 5.1's str_byte (posrelat, then
// clamped to the string), the end defaulting to the start. Upstream read a
// start of 0 or before the string as nothing when no end was given
// (("abc"):byte(0) was nothing, (""):byte(-10, 10) too, Lua gives 97 for
// ("abc"):byte(-10, 1)).
func strByte(L *LState) int {
	str := L.CheckString(1)
	l := int64(len(str))
	posi := posrelat(L.OptInt64(2, 1), len(str))
	pose := posrelat(L.OptInt64(3, posi), len(str))
	if posi <= 0 {
		posi = 1
	}
	if pose > l {
		pose = l
	}
	if posi > pose {
		return 0
	}
	for i := posi - 1; i < pose; i++ {
		L.Push(LNumber(str[i]))
	}
	return int(pose - posi + 1)
}

// posrelat is Lua 5.1's relative string position (patched for luamcp): a
// negative position counts back from the end, and one before the start is 0.
func posrelat(pos int64, l int) int64 {
	if pos < 0 {
		pos += int64(l) + 1
	}
	if pos >= 0 {
		return pos
	}
	return 0
}

func strChar(L *LState) int {
	top := L.GetTop()
	L.charge(top) // patched for luamcp
	bytes := make([]byte, L.GetTop())
	for i := 1; i <= top; i++ {
		c := L.CheckInt(i)
		if c < 0 || c > 255 { // patched for luamcp: as Lua 5.1 (upstream wrapped: char(256) was "\0")
			L.ArgError(i, "invalid value")
		}
		bytes[i-1] = uint8(c)
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
	// patched for luamcp: the start as Lua 5.1's str_find_aux (init), and a
	// pattern without special characters searched for as plain text, as Lua
	// 5.1 does. Upstream found an empty pattern at 1 whatever the start
	// (("abc"):find("", 10) is 4, 3 in Lua), and sliced the subject at a
	// start past its end under plain = true (a Go panic).
	init := strInit(L, str, 3)
	plain := LVAsBool(L.Get(4)) || strings.IndexAny(pattern, luaPatternSpecials) < 0

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

// luaPatternSpecials are the bytes that make string.find match a pattern
// rather than search for plain text (Lua 5.1's SPECIALS; patched for luamcp).
const luaPatternSpecials = "^$*+?.([%-"

// strInit is the start of a search, argument n (default 1), as Lua 5.1's
// str_find_aux computes it (patched for luamcp): relative to the end when
// negative, then clamped to [0, len(str)] as a 0-based offset.
func strInit(L *LState, str string, n int) int {
	init := posrelat(L.OptInt64(n, 1), len(str)) - 1
	if init < 0 {
		return 0
	}
	if init > int64(len(str)) {
		return len(str)
	}
	return int(init)
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
	repl := L.Get(3)
	// patched for luamcp: at most n replacements, none when n <= 0, as Lua
	// 5.1 (upstream replaced every match when n was negative). n is read
	// before the replacement is checked, with 5.1's message.
	limit := L.OptInt(4, len(src)+1)
	switch repl.Type() {
	case LTString, LTNumber, LTTable, LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	var out []byte
	pos, count := 0, 0
	for count < limit && pos <= len(src) {
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
			if i < 0 {
				i = len(s)
			}
			out = appendCharged(L, out, s[:i])
			if i == len(s) {
				break
			}
			// patched for luamcp: a '%' ending the replacement is Lua
			// 5.2's error (Lua 5.1 appended the C string's terminating
			// NUL byte; upstream kept the '%').
			if i+1 == len(s) {
				L.RaiseError("%s", "invalid use of '%' in replacement string")
			}
			c := s[i+1]
			s = s[i+2:]
			switch {
			case c == '0':
				out = appendCharged(L, out, whole)
			case '1' <= c && c <= '9':
				out = appendCharged(L, out, strGsubCaptureText(L, src, m, int(c-'0')))
			default: // patched for luamcp: '%' then any other byte is that byte, as Lua 5.1 (upstream kept "%x")
				out = appendCharged(L, out, byteStrings[c:int(c)+1])
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
	// patched for luamcp: a '^' starting the pattern is a plain '^' in
	// gmatch, as in Lua 5.1 (whose gmatch has no anchor); upstream anchored
	// it, finding at most one match at the start.
	p := L.CheckString(2)
	if strings.HasPrefix(p, "^") {
		p = "%" + p
	}
	ud.Value = &gmatchState{src: src, pat: L.compilePattern(p)}
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
	L.Push(LString(asciiCase(str, 'A', 'Z', 'a'))) // patched for luamcp: bytes, as C's tolower
	return 1
}

func strMatch(L *LState) int {
	str := L.CheckString(1)
	pattern := L.CheckString(2)
	offset := strInit(L, str, 3) // patched for luamcp: clamped as Lua 5.1's

	md := L.findPattern(L.compilePattern(pattern), str, offset) // patched for luamcp: guarded
	if md == nil {
		L.Push(LNil)
		return 1 // patched for luamcp: one nil, as Lua 5.1 (upstream returned nothing)
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

// patched for luamcp: positions as Lua 5.1's str_sub (posrelat, then
// clamped). Upstream's arithmetic overflowed on the least integer, which a
// NaN or -math.huge converts to: ("abc"):sub(-math.huge, 2) was "", "ab" in
// Lua 5.1.
func strSub(L *LState) int {
	str := L.CheckString(1)
	l := int64(len(str))
	start := posrelat(L.CheckInt64(2), len(str))
	end := posrelat(L.OptInt64(3, -1), len(str))
	if start < 1 {
		start = 1
	}
	if end > l {
		end = l
	}
	if start > end {
		L.Push(emptyLString)
	} else {
		L.Push(L.substring(str, int(start-1), int(end))) // patched for luamcp: a copy
	}
	return 1
}

func strUpper(L *LState) int {
	str := L.CheckString(1)
	L.charge(len(str)) // patched for luamcp
	L.step(len(str))
	L.Push(LString(asciiCase(str, 'a', 'z', 'A'))) // patched for luamcp: bytes, as C's toupper
	return 1
}

// asciiCase maps the bytes from lo to hi of s to those from to on, leaving every
// other byte alone: Lua 5.1's upper and lower in the C locale (patched for
// luamcp). Upstream used strings.ToUpper and ToLower, which map Unicode
// letters ("é" became "É"), rewrite invalid UTF-8 as U+FFFD and change a
// string's length ("İ" lowered is 3 bytes).
func asciiCase(s string, lo, hi, to byte) string {
	i := 0
	for i < len(s) && (s[i] < lo || s[i] > hi) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, len(s))
	copy(b, s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if lo <= c && c <= hi {
			c = c - lo + to
		}
		b[i] = c
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
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
		flags := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		if i-flags > 5 {
			// patched for luamcp: Lua 5.1's scanformat takes at most as
			// many flag characters as there are flags.
			L.RaiseError("invalid format (repeated flags)")
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
