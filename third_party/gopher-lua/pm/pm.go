// Lua pattern match functions for Go
package pm

import (
	"fmt"
	"unsafe"
)

const (
	EOS               = -1
	_UNKNOWN          = -2
	maxRecursionLevel = 1000000
	// maxCaptures is Lua 5.1's LUA_MAXCAPTURES (patched for luamcp): the
	// parser recurses once per nested '(' (some 250 bytes of Go stack), so
	// without a bound a pattern of a few million '(' overflowed the Go
	// stack's 1 GiB, a fatal error no recover catches.
	maxCaptures = 32
)

/* Error {{{ */

type Error struct {
	Pos     int
	Message string
}

func newError(pos int, message string, args ...interface{}) *Error {
	if len(args) == 0 {
		return &Error{pos, message}
	}
	return &Error{pos, fmt.Sprintf(message, args...)}
}

func (e *Error) Error() string {
	switch e.Pos {
	case EOS:
		return fmt.Sprintf("%s at EOS", e.Message)
	case _UNKNOWN:
		return fmt.Sprintf("%s", e.Message)
	default:
		return fmt.Sprintf("%s at %d", e.Message, e.Pos)
	}
}

/* }}} */

/* MatchData {{{ */

type MatchData struct {
	// captured positions
	// layout
	// xxxx xxxx xxxx xxx0 : caputured positions
	// xxxx xxxx xxxx xxx1 : position captured positions
	captures []uint32
}

func newMatchState() *MatchData { return &MatchData{[]uint32{}} }

func (st *MatchData) addPosCapture(s, pos int) {
	for s+1 >= len(st.captures) {
		st.captures = append(st.captures, 0)
	}
	st.captures[s] = (uint32(pos) << 1) | 1
	st.captures[s+1] = (uint32(pos) << 1) | 1
}

func (st *MatchData) setCapture(s, pos int) uint32 {
	for s >= len(st.captures) {
		st.captures = append(st.captures, 0)
	}
	v := st.captures[s]
	st.captures[s] = (uint32(pos) << 1)
	return v
}

func (st *MatchData) restoreCapture(s int, pos uint32) { st.captures[s] = pos }

func (st *MatchData) CaptureLength() int { return len(st.captures) }

func (st *MatchData) IsPosCapture(idx int) bool { return (st.captures[idx] & 1) == 1 }

func (st *MatchData) Capture(idx int) int { return int(st.captures[idx] >> 1) }

/* }}} */

/* scanner {{{ */

type scannerState struct {
	Pos     int
	started bool
}

type scanner struct {
	src   []byte
	State scannerState
	saved scannerState
	// Patched for luamcp: captures counts the captures parsed so far, and
	// tk bounds the parse (and the code generation after it) by a Guard.
	captures int
	tk       ticker
}

func newScanner(src []byte) *scanner {
	return &scanner{
		src: src,
		State: scannerState{
			Pos:     0,
			started: false,
		},
		saved: scannerState{},
	}
}

func (sc *scanner) Length() int { return len(sc.src) }

func (sc *scanner) Next() int {
	sc.tk.tick() // patched for luamcp
	if !sc.State.started {
		sc.State.started = true
		if len(sc.src) == 0 {
			sc.State.Pos = EOS
		}
	} else {
		sc.State.Pos = sc.NextPos()
	}
	if sc.State.Pos == EOS {
		return EOS
	}
	return int(sc.src[sc.State.Pos])
}

func (sc *scanner) CurrentPos() int {
	return sc.State.Pos
}

func (sc *scanner) NextPos() int {
	if sc.State.Pos == EOS || sc.State.Pos >= len(sc.src)-1 {
		return EOS
	}
	if !sc.State.started {
		return 0
	} else {
		return sc.State.Pos + 1
	}
}

func (sc *scanner) Peek() int {
	cureof := sc.State.Pos == EOS
	ch := sc.Next()
	if !cureof {
		if sc.State.Pos == EOS {
			sc.State.Pos = len(sc.src) - 1
		} else {
			sc.State.Pos--
			if sc.State.Pos < 0 {
				sc.State.Pos = 0
				sc.State.started = false
			}
		}
	}
	return ch
}

func (sc *scanner) Save() { sc.saved = sc.State }

func (sc *scanner) Restore() { sc.State = sc.saved }

/* }}} */

/* bytecode {{{ */

type opCode int

const (
	opChar opCode = iota
	opMatch
	opTailMatch
	opJmp
	opSplit
	opSave
	opPSave
	opBrace
	opNumber
	opFrontier // patched for luamcp: %f[set]
)

type inst struct {
	OpCode   opCode
	Class    class
	Operand1 int
	Operand2 int
}

/* }}} */

/* classes {{{ */

type class interface {
	Matches(ch int) bool
}

type dotClass struct{}

func (pn *dotClass) Matches(ch int) bool { return true }

type charClass struct {
	Ch int
}

func (pn *charClass) Matches(ch int) bool { return pn.Ch == ch }

type singleClass struct {
	Class int
}

func (pn *singleClass) Matches(ch int) bool {
	ret := false
	switch pn.Class {
	case 'a', 'A':
		ret = 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z'
	case 'c', 'C':
		ret = (0x00 <= ch && ch <= 0x1F) || ch == 0x7F
	case 'd', 'D':
		ret = '0' <= ch && ch <= '9'
	case 'l', 'L':
		ret = 'a' <= ch && ch <= 'z'
	case 'p', 'P':
		ret = (0x21 <= ch && ch <= 0x2f) || (0x3a <= ch && ch <= 0x40) || (0x5b <= ch && ch <= 0x60) || (0x7b <= ch && ch <= 0x7e)
	case 's', 'S':
		switch ch {
		case ' ', '\f', '\n', '\r', '\t', '\v':
			ret = true
		}
	case 'u', 'U':
		ret = 'A' <= ch && ch <= 'Z'
	case 'w', 'W':
		ret = '0' <= ch && ch <= '9' || 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z'
	case 'x', 'X':
		ret = '0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F'
	case 'z', 'Z':
		ret = ch == 0
	default:
		return ch == pn.Class
	}
	if 'A' <= pn.Class && pn.Class <= 'Z' {
		return !ret
	}
	return ret
}

type setClass struct {
	IsNot   bool
	Classes []class
}

func (pn *setClass) Matches(ch int) bool {
	for _, class := range pn.Classes {
		if class.Matches(ch) {
			return !pn.IsNot
		}
	}
	return pn.IsNot
}

type rangeClass struct {
	Begin class
	End   class
}

func (pn *rangeClass) Matches(ch int) bool {
	switch begin := pn.Begin.(type) {
	case *charClass:
		end, ok := pn.End.(*charClass)
		if !ok {
			return false
		}
		return begin.Ch <= ch && ch <= end.Ch
	}
	return false
}

// }}}

// patterns {{{

type pattern interface{}

type singlePattern struct {
	Class class
}

type seqPattern struct {
	MustHead bool
	MustTail bool
	Patterns []pattern
}

type repeatPattern struct {
	Type  int
	Class class
}

type posCapPattern struct{}

type capPattern struct {
	Pattern pattern
}

type numberPattern struct {
	N int
}

type bracePattern struct {
	Begin int
	End   int
}

// frontierPattern is %f[set] (patched for luamcp), which Lua 5.1 implements
// (undocumented in its manual, documented in 5.2's): the empty string where
// the byte before (NUL at the start) is not in the set and the byte at the
// position (NUL at the end) is. Upstream read "%f" as a plain "f".
type frontierPattern struct {
	Set class
}

// }}}

/* parse {{{ */

func parseClass(sc *scanner, allowset bool) class {
	ch := sc.Next()
	switch ch {
	case '%':
		c := sc.Next()
		if c == EOS { // patched for luamcp: Lua 5.1's error (upstream matched nothing)
			panic(newError(_UNKNOWN, "%s", "malformed pattern (ends with '%')"))
		}
		return &singleClass{c}
	case '.':
		if allowset {
			return &dotClass{}
		}
		return &charClass{ch}
	case '[':
		if allowset {
			return parseClassSet(sc)
		}
		return &charClass{ch}
	//case '^' '$', '(', ')', ']', '*', '+', '-', '?':
	//	panic(newError(sc.CurrentPos(), "invalid %c", ch))
	case EOS:
		panic(newError(sc.CurrentPos(), "unexpected EOS"))
	default:
		return &charClass{ch}
	}
}

// parseClassSet parses a set, the scanner at its '[' (patched for luamcp):
// as Lua 5.1's classEnd and matchbracketclass read it. The set ends at the
// first ']' after at least one byte ("[]]" and "[^]]" hold ']'), '%' escapes
// the byte after it, and a range is a byte, '-' and a byte before that end:
// "[%a-z]" is letters, '-' and 'z', "[a-]" is 'a' and '-'. Upstream's
// parser made a range of anything around a '-' (the range of "%a" to "z"
// matched nothing) and refused "[]" ("unexpected EOS").
func parseClassSet(sc *scanner) class {
	src := sc.src
	set := &setClass{false, []class{}}
	p := sc.CurrentPos() + 1
	if p < len(src) && src[p] == '^' {
		set.IsNot = true
		p++
	}
	ec := p // the closing ']'
	for {
		sc.tk.tick()
		if ec >= len(src) {
			panic(newError(_UNKNOWN, "malformed pattern (missing ']')"))
		}
		c := src[ec]
		ec++
		if c == '%' && ec < len(src) {
			ec++
		}
		if ec < len(src) && src[ec] == ']' {
			break
		}
	}
	for i := p; i < ec; i++ {
		sc.tk.tick()
		switch c := src[i]; {
		case c == '%':
			i++
			set.Classes = append(set.Classes, &singleClass{int(src[i])})
		case src[i+1] == '-' && i+2 < ec:
			set.Classes = append(set.Classes, &rangeClass{&charClass{int(c)}, &charClass{int(src[i+2])}})
			i += 2
		default:
			set.Classes = append(set.Classes, &charClass{int(c)})
		}
	}
	sc.State.Pos = ec
	return set
}

func parsePattern(sc *scanner, toplevel bool) *seqPattern {
	pat := &seqPattern{}
	if toplevel {
		if sc.Peek() == '^' {
			sc.Next()
			pat.MustHead = true
		}
	}
	for {
		ch := sc.Peek()
		switch ch {
		case '%':
			sc.Save()
			sc.Next()
			switch sc.Peek() {
			case '0':
				panic(newError(_UNKNOWN, "invalid capture index")) // patched for luamcp: Lua's message, no position
			case '1', '2', '3', '4', '5', '6', '7', '8', '9':
				pat.Patterns = append(pat.Patterns, &numberPattern{sc.Next() - 48})
			case 'b':
				sc.Next()
				b, e := sc.Next(), sc.Next()
				if b == EOS || e == EOS { // patched for luamcp: Lua 5.1's error (upstream matched nothing)
					panic(newError(_UNKNOWN, "unbalanced pattern"))
				}
				pat.Patterns = append(pat.Patterns, &bracePattern{b, e})
			case 'f': // patched for luamcp: frontiers, as Lua 5.1
				sc.Next()
				if sc.Peek() != '[' {
					panic(newError(_UNKNOWN, "%s", "missing '[' after '%f' in pattern"))
				}
				sc.Next()
				pat.Patterns = append(pat.Patterns, &frontierPattern{parseClassSet(sc)})
			default:
				sc.Restore()
				pat.Patterns = append(pat.Patterns, &singlePattern{parseClass(sc, true)})
			}
		case '.', '[', ']':
			pat.Patterns = append(pat.Patterns, &singlePattern{parseClass(sc, true)})
		//case ']':
		//	panic(newError(sc.CurrentPos(), "invalid ']'"))
		case ')':
			if toplevel {
				panic(newError(_UNKNOWN, "invalid pattern capture")) // patched for luamcp: Lua's message
			}
			return pat
		case '(':
			// Patched for luamcp: bounded before the recursion below, as Lua
			// bounds captures (it checks while matching).
			if sc.captures++; sc.captures > maxCaptures {
				panic(newError(_UNKNOWN, "too many captures"))
			}
			sc.Next()
			if sc.Peek() == ')' {
				sc.Next()
				pat.Patterns = append(pat.Patterns, &posCapPattern{})
			} else {
				ret := &capPattern{parsePattern(sc, false)}
				if sc.Peek() != ')' {
					panic(newError(_UNKNOWN, "unfinished capture")) // patched for luamcp: Lua's message, no position
				}
				sc.Next()
				pat.Patterns = append(pat.Patterns, ret)
			}
		case '*', '+', '-', '?':
			sc.Next()
			if len(pat.Patterns) > 0 {
				spat, ok := pat.Patterns[len(pat.Patterns)-1].(*singlePattern)
				if ok {
					pat.Patterns = pat.Patterns[0 : len(pat.Patterns)-1]
					pat.Patterns = append(pat.Patterns, &repeatPattern{ch, spat.Class})
					continue
				}
			}
			pat.Patterns = append(pat.Patterns, &singlePattern{&charClass{ch}})
		case '$':
			if toplevel && (sc.NextPos() == sc.Length()-1 || sc.NextPos() == EOS) {
				pat.MustTail = true
			} else {
				pat.Patterns = append(pat.Patterns, &singlePattern{&charClass{ch}})
			}
			sc.Next()
		case EOS:
			sc.Next()
			goto exit
		default:
			sc.Next()
			pat.Patterns = append(pat.Patterns, &singlePattern{&charClass{ch}})
		}
	}
exit:
	return pat
}

// Patched for luamcp: the program is allocated once, at its exact size
// (upstream grew it by appending, which allocated some five times its size
// for a long pattern), and its generation is bounded by the parser's Guard.

type iptr struct {
	insts   []inst
	capture int
	tk      *ticker
	// closed has bit n set once capture n is closed (patched for luamcp):
	// a back-reference %n to a capture not closed before it reads a capture
	// whose end is unset or left from another attempt.
	closed uint64
	// position has bit n set when capture n is a position capture, "()"
	// (patched for luamcp): a back-reference to one never matches.
	position uint64
}

// compile generates the program of a parsed pattern.
func compile(seq *seqPattern, tk *ticker) []inst {
	n := 3 + instCount(seq) // opSave 0 before, opSave 1 and opMatch after
	if seq.MustTail {
		n += 2
	}
	ptr := &iptr{insts: make([]inst, 0, n), capture: 2, tk: tk}
	ptr.insts = append(ptr.insts, inst{opSave, nil, 0, -1})
	compilePattern(seq, ptr)
	if seq.MustTail {
		ptr.insts = append(ptr.insts, inst{opSave, nil, 1, -1}, inst{opTailMatch, nil, -1, -1})
	}
	return append(ptr.insts, inst{opSave, nil, 1, -1}, inst{opMatch, nil, -1, -1})
}

// instCount is the number of instructions compilePattern emits for p.
func instCount(p pattern) int {
	switch pat := p.(type) {
	case *seqPattern:
		n := 0
		for _, cp := range pat.Patterns {
			n += instCount(cp)
		}
		return n
	case *repeatPattern:
		if pat.Type == '*' || pat.Type == '-' {
			return 3
		}
		return 2
	case *capPattern:
		return 2 + instCount(pat.Pattern)
	default:
		return 1
	}
}

func compilePattern(p pattern, ptr *iptr) {
	switch pat := p.(type) {
	case *singlePattern:
		ptr.insts = append(ptr.insts, inst{opChar, pat.Class, -1, -1})
	case *seqPattern:
		for _, cp := range pat.Patterns {
			ptr.tk.tick()
			compilePattern(cp, ptr)
		}
	case *repeatPattern:
		idx := len(ptr.insts)
		switch pat.Type {
		case '*':
			ptr.insts = append(ptr.insts,
				inst{opSplit, nil, idx + 1, idx + 3},
				inst{opChar, pat.Class, -1, -1},
				inst{opJmp, nil, idx, -1})
		case '+':
			ptr.insts = append(ptr.insts,
				inst{opChar, pat.Class, -1, -1},
				inst{opSplit, nil, idx, idx + 2})
		case '-':
			ptr.insts = append(ptr.insts,
				inst{opSplit, nil, idx + 3, idx + 1},
				inst{opChar, pat.Class, -1, -1},
				inst{opJmp, nil, idx, -1})
		case '?':
			ptr.insts = append(ptr.insts,
				inst{opSplit, nil, idx + 1, idx + 2},
				inst{opChar, pat.Class, -1, -1})
		}
	case *posCapPattern:
		ptr.insts = append(ptr.insts, inst{opPSave, nil, ptr.capture, -1})
		ptr.closed |= 1 << (ptr.capture / 2)
		ptr.position |= 1 << (ptr.capture / 2)
		ptr.capture += 2
	case *capPattern:
		c0, c1 := ptr.capture, ptr.capture+1
		ptr.capture += 2
		ptr.insts = append(ptr.insts, inst{opSave, nil, c0, -1})
		compilePattern(pat.Pattern, ptr)
		ptr.insts = append(ptr.insts, inst{opSave, nil, c1, -1})
		ptr.closed |= 1 << (c0 / 2)
	case *bracePattern:
		ptr.insts = append(ptr.insts, inst{opBrace, nil, pat.Begin, pat.End})
	case *frontierPattern: // patched for luamcp
		ptr.insts = append(ptr.insts, inst{opFrontier, pat.Set, -1, -1})
	case *numberPattern:
		// Patched for luamcp: Operand2 is 1 when capture N is not closed
		// before the back-reference (one still open, as in "((%1))", or one
		// that comes after it): matching it raises "invalid capture index",
		// as Lua 5.1 does when a match reaches it. The matcher read
		// src[start:end] with an end left from another attempt or unset, a
		// slice out of range (a Go panic).
		// Operand2 is 2 when capture N is a position capture: Lua 5.1's
		// match_capture compares as many bytes as its length, CAP_POSITION
		// (-2) as a size_t, which no subject holds, so it never matches.
		// The matcher read src[start:end] with the end unset (a slice out
		// of range, or a match of an empty capture).
		unclosed := -1
		if ptr.closed&(1<<pat.N) == 0 {
			unclosed = 1
		} else if ptr.position&(1<<pat.N) != 0 {
			unclosed = 2
		}
		ptr.insts = append(ptr.insts, inst{opNumber, nil, pat.N, unclosed})
	}
}

/* }}} parse */

/* VM {{{ */

// The matcher is a backtracking virtual machine based on "Regular Expression
// Matching: the Virtual Machine Approach"
// (https://swtch.com/~rsc/regexp/regexp2.html).
//
// Patched for luamcp (see PATCHES.md): upstream recursed on the Go stack for
// every split and save, which takes 256 MiB of stack to match "a*" against a
// 1 MB subject and cannot be stopped. Here the pending branches live on an
// explicit stack whose growth is reported to a Guard, and the Guard is
// consulted every few thousand steps, so that a search can be bounded and
// cancelled. The order in which branches are tried is unchanged.

// A Guard bounds a search.
type Guard interface {
	// Err is called every few thousand steps of a search; a non-nil error
	// ends the search with that error.
	Err() error
	// Reserve is called before the search's backtracking stack grows by n
	// bytes; a non-nil error ends the search with that error.
	Reserve(n int) error
}

// stepsPerCheck is how many steps a search takes between two calls of
// Guard.Err (a power of two).
const stepsPerCheck = 1 << 12

// backtrack is an entry of the backtracking stack: a branch to resume at pc
// and sp or, when capture >= 0, a capture to restore to old before failing
// further. Positions fit in 32 bits, as in MatchData.
type backtrack struct {
	pc, sp  int32
	capture int32
	old     uint32
}

const backtrackSize = int(unsafe.Sizeof(backtrack{}))

// guardError carries a Guard's error out of a search or a compilation.
type guardError struct{ err error }

// ticker consults a Guard every stepsPerCheck ticks (patched for luamcp:
// compiling a pattern of megabytes takes seconds).
type ticker struct {
	guard Guard
	n     int
}

func (t *ticker) tick() {
	if t.n++; t.n%stepsPerCheck == 0 && t.guard != nil {
		if err := t.guard.Err(); err != nil {
			panic(guardError{err})
		}
	}
}

type matcher struct {
	src   []byte
	insts []inst
	guard Guard
	steps int // steps taken; the guard is consulted when it reaches check
	check int
	// The backtracking stack: its first entries in small (in the frame of
	// Find, not charged), the others in stack.
	small  [32]backtrack
	nsmall int
	stack  []backtrack
}

// step counts n steps and consults the guard every stepsPerCheck of them.
func (mt *matcher) step(n int) {
	if mt.steps += n; mt.steps >= mt.check {
		mt.consult()
	}
}

func (mt *matcher) consult() {
	mt.check = mt.steps + stepsPerCheck
	if mt.guard != nil {
		if err := mt.guard.Err(); err != nil {
			panic(guardError{err})
		}
	}
}

func (mt *matcher) push(b backtrack) {
	if mt.nsmall < len(mt.small) {
		mt.small[mt.nsmall] = b
		mt.nsmall++
		return
	}
	if mt.nsmall+len(mt.stack) >= maxRecursionLevel {
		panic(newError(_UNKNOWN, "pattern/input too complex"))
	}
	if len(mt.stack) == cap(mt.stack) {
		n := min(max(2*cap(mt.stack), 32), maxRecursionLevel)
		if mt.guard != nil {
			if err := mt.guard.Reserve((n - cap(mt.stack)) * backtrackSize); err != nil {
				panic(guardError{err})
			}
		}
		stack := make([]backtrack, len(mt.stack), n)
		copy(stack, mt.stack)
		mt.stack = stack
	}
	mt.stack = append(mt.stack, b)
}

// pop removes the top of the stack; false when it is empty.
func (mt *matcher) pop() (backtrack, bool) {
	if n := len(mt.stack); n > 0 {
		b := mt.stack[n-1]
		mt.stack = mt.stack[:n-1]
		return b, true
	}
	if mt.nsmall == 0 {
		return backtrack{}, false
	}
	mt.nsmall--
	return mt.small[mt.nsmall], true
}

// match runs the program from pc at sp; it reports whether it matched, where
// the match ends, and its captures.
func (mt *matcher) match(pc, sp int) (bool, int, *MatchData) {
	src, insts := mt.src, mt.insts
	m := newMatchState()
	mt.nsmall, mt.stack = 0, mt.stack[:0]
	for {
		mt.step(1)
		inst := insts[pc]
		ok := true
		switch inst.OpCode {
		case opChar:
			if sp >= len(src) || !inst.Class.Matches(int(src[sp])) {
				ok = false
				break
			}
			pc++
			sp++
		case opMatch:
			return true, sp, m
		case opTailMatch:
			if sp >= len(src) {
				return true, sp, m
			}
			ok = false
		case opJmp:
			pc = inst.Operand1
		case opSplit:
			mt.push(backtrack{pc: int32(inst.Operand2), sp: int32(sp), capture: -1})
			pc = inst.Operand1
		case opSave:
			old := m.setCapture(inst.Operand1, sp)
			mt.push(backtrack{capture: int32(inst.Operand1), old: old})
			pc++
		case opPSave:
			m.addPosCapture(inst.Operand1, sp+1)
			pc++
		case opBrace:
			if sp >= len(src) || int(src[sp]) != inst.Operand1 {
				ok = false
				break
			}
			ok = false
			count := 1
			start := sp
			for sp = sp + 1; sp < len(src); sp++ {
				if int(src[sp]) == inst.Operand2 {
					count--
				}
				if count == 0 {
					pc++
					sp++
					ok = true
					break
				}
				if int(src[sp]) == inst.Operand1 {
					count++
				}
			}
			mt.step(sp - start)
		case opNumber:
			idx := inst.Operand1 * 2
			if inst.Operand2 == 1 || idx >= m.CaptureLength()-1 {
				panic(newError(_UNKNOWN, "invalid capture index"))
			}
			if inst.Operand2 == 2 { // patched for luamcp: a position capture
				ok = false
				break
			}
			capture := src[m.Capture(idx):m.Capture(idx+1)]
			mt.step(len(capture))
			for i := 0; i < len(capture); i++ {
				if i+sp >= len(src) || capture[i] != src[i+sp] {
					ok = false
					break
				}
			}
			if ok {
				pc++
				sp += len(capture)
			}
		case opFrontier: // patched for luamcp: %f[set]
			prev, cur := 0, 0
			if sp > 0 {
				prev = int(src[sp-1])
			}
			if sp < len(src) {
				cur = int(src[sp])
			}
			if inst.Class.Matches(prev) || !inst.Class.Matches(cur) {
				ok = false
				break
			}
			pc++
		default:
			panic("should not reach here")
		}
		for !ok {
			b, more := mt.pop()
			if !more {
				return false, sp, m
			}
			if b.capture >= 0 {
				m.restoreCapture(int(b.capture), b.old)
				continue
			}
			pc, sp, ok = int(b.pc), int(b.sp), true
		}
	}
}

/* }}} */

/* API {{{ */

// Pattern is a compiled Lua pattern (patched for luamcp: compiled once, used
// for many searches). It keeps its backtracking stack from one search to the
// next: it is not safe for concurrent use.
type Pattern struct {
	insts    []inst
	mustHead bool
	stack    []backtrack
	size     int // bytes of insts and the classes they refer to
}

// Compile parses a Lua pattern. A non-nil guard bounds the compilation: its
// Err is consulted every few thousand steps, and its error ends the
// compilation and is returned. (Reserve is not called: the compilation's
// memory is proportional to the pattern's length, which the caller can
// charge before.)
func Compile(guard Guard, p string) (pat *Pattern, err error) {
	defer func() {
		if v := recover(); v != nil {
			switch perr := v.(type) {
			case *Error:
				err = perr
			case guardError:
				err = perr.err
			default:
				panic(v)
			}
		}
	}()
	sc := newScanner([]byte(p))
	sc.tk.guard = guard
	seq := parsePattern(sc, true)
	insts := compile(seq, &sc.tk)
	size := cap(insts) * int(unsafe.Sizeof(inst{}))
	for _, in := range insts {
		size += classSize(in.Class)
	}
	return &Pattern{insts: insts, mustHead: seq.MustHead, size: size}, nil
}

// Size is an estimate of the bytes pat keeps: its program, the classes it
// refers to and its backtracking stack (patched for luamcp: a memory budget
// counts the patterns that outlive a search, such as gmatch's).
func (pat *Pattern) Size() int { return pat.size + cap(pat.stack)*backtrackSize }

// classSize is the size of c and the classes it holds.
func classSize(c class) int {
	switch c := c.(type) {
	case *charClass, *singleClass:
		return 8
	case *setClass:
		n := int(unsafe.Sizeof(*c)) + cap(c.Classes)*16
		for _, m := range c.Classes {
			n += classSize(m)
		}
		return n
	case *rangeClass:
		return int(unsafe.Sizeof(*c)) + classSize(c.Begin) + classSize(c.End)
	}
	return 0
}

// MustHead reports whether the pattern is anchored at the start ("^").
func (pat *Pattern) MustHead() bool { return pat.mustHead }

// Find returns the first limit matches (every match when limit < 0) of the
// pattern p in src at or after offset.
func Find(p string, src []byte, offset, limit int) (matches []*MatchData, err error) {
	pat, err := Compile(nil, p)
	if err != nil {
		return nil, err
	}
	return pat.Find(nil, src, offset, limit)
}

// Find returns the first limit matches (every match when limit < 0) of pat in
// src at or after offset. A non-nil guard bounds the search: its error ends
// it, and is returned.
func (pat *Pattern) Find(guard Guard, src []byte, offset, limit int) (matches []*MatchData, err error) {
	mt := &matcher{src: src, insts: pat.insts, guard: guard, check: stepsPerCheck, stack: pat.stack}
	defer func() {
		pat.stack = mt.stack[:0]
		if v := recover(); v != nil {
			switch perr := v.(type) {
			case *Error:
				err = perr
			case guardError:
				err = perr.err
			default:
				panic(v)
			}
		}
	}()
	matches = []*MatchData{}
	for sp := offset; sp <= len(src); {
		mt.step(1)
		ok, nsp, ms := mt.match(0, sp)
		sp++
		if ok {
			if sp < nsp {
				sp = nsp
			}
			matches = append(matches, ms)
		}
		if len(matches) == limit || pat.mustHead {
			break
		}
	}
	return
}

/* }}} */
