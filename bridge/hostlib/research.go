package hostlib

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/internal/reprog"
)

// Searches that stop with their call. Go's regexp runs in time linear in the
// subject, but the factor is the number of threads its program runs at
// once, up to the program's size, and a search cannot be interrupted: "a?"
// 4,000 times then "b" runs 8,000 threads on each byte of a run of a's, and
// took 16 s on a quarter MiB (the module accepts 16 MiB: about 17 minutes
// of a CPU, past any deadline). A search whose worst case is long reads its
// subject through a reader that checks the call's context, and ends the
// search by ending the input once the call is done.

// riskyWork is the product of a program's size and a subject's length past
// which a search reads through the context: about 0.1 s of the worst case
// (8 ns an instruction and a byte, measured). A typical pattern of 30
// instructions searches half a MiB the direct way.
var riskyWork = 1 << 24 // a variable for the tests of both paths

// checkWork is about how many instruction steps a checking reader lets
// pass between two looks at the context: a few ms of the worst case.
const checkWork = 1 << 20

// pattern is a compiled pattern of the re module.
type pattern struct {
	re    *regexp.Regexp
	src   string
	insts int // the program's size: the most threads one step can run
	size  int // bytes it keeps, about, its search-after form included (reCache)

	// after is `(?s:.)(src)`, compiled on first need (afterPattern): a
	// search resumed at pos > 0 reads from the rune before pos, so that
	// src's assertions (^, \b, (?m)^) see the text before pos, and the
	// leading `.` keeps the match from starting before pos. inner is src as
	// it goes in the group: src itself, or, when src may hold a \Q that
	// runs to its end (and would quote the group's ")"), the parsed
	// pattern written back without it.
	inner     string
	afterOnce sync.Once
	after     *regexp.Regexp
	afterErr  error
}

// errRegexpTooLarge refuses a pattern whose program is past the bounds.
var errRegexpTooLarge = fmt.Errorf("pattern too large: its program passes %d instructions (x{n} is n copies of x), %d runes of character classes or %d Unicode classes",
	maxRegexpInsts, maxRegexpRunes, maxRegexpClasses)

// Rough sizes, in bytes, of a compiled program: an instruction (a
// syntax.Inst, and its share of the slices regexp keeps), and a rune of a
// character class.
const (
	sizeInst = 48
	sizeRune = 4
)

// newPattern compiles src within the bounds of its program (maxRegexpInsts
// and the others): it parses src, sizes the program from the parsed tree, in
// which x{1000} is one node, refuses it past the bounds, and only then
// builds it, once to read its size, which regexp does not export, and once
// with regexp.
func newPattern(src string) (*pattern, error) {
	// The parser copies a Unicode class's table for each \p or \P, before
	// anything can be counted: 5,000 \pL took 200 ms and 70 MB to parse.
	// (An escaped backslash before a p counts too: a bound, not a parser.)
	if strings.Count(src, `\p`)+strings.Count(src, `\P`) > maxRegexpClasses {
		return nil, errRegexpTooLarge
	}
	parsed, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	insts, runes := reprog.Size(parsed, maxRegexpInsts)
	if insts > maxRegexpInsts || runes > maxRegexpRunes {
		return nil, errRegexpTooLarge
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > maxRegexpInsts {
		return nil, errRegexpTooLarge
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	inner := src
	if strings.Contains(src, `\Q`) {
		inner = parsed.String()
	}
	size := 2 * (len(prog.Inst)*sizeInst + runes*sizeRune)
	return &pattern{re: re, src: src, inner: inner, insts: len(prog.Inst), size: size}, nil
}

// risky reports whether a search of s may run long enough that it must
// watch L's context.
func (p *pattern) risky(L *lua.LState, s string) bool {
	return L.Context() != nil && p.insts*len(s) > riskyWork
}

func (p *pattern) afterPattern() (*regexp.Regexp, error) {
	p.afterOnce.Do(func() { p.after, p.afterErr = regexp.Compile(`(?s:.)(` + p.inner + `)`) })
	return p.after, p.afterErr
}

// index returns the submatch indices of the leftmost match of p in s that
// starts at pos or after, s before pos counting for its assertions (what
// regexp's FindAll functions search for at each step), or nil. It reads s
// through L's context and raises its error once the call is done.
func (p *pattern) index(L *lua.LState, s string, pos int) []int {
	ctx := L.Context()
	rd := &ctxReader{ctx: ctx, every: max(1, checkWork/max(p.insts, 1))}
	if pos == 0 {
		rd.s = s
		m := p.re.FindReaderSubmatchIndex(rd)
		rd.raise(L)
		return m
	}
	after, err := p.afterPattern()
	if err != nil { // src compiled alone: a group around it cannot fail
		L.RaiseError("re: %v", err)
	}
	_, w := utf8.DecodeLastRuneInString(s[:pos])
	base := pos - w
	rd.s = s[base:]
	m := after.FindReaderSubmatchIndex(rd)
	rd.raise(L)
	if m == nil {
		return nil
	}
	m = m[2:] // group 1 is src's whole match
	for i, v := range m {
		if v >= 0 {
			m[i] = v + base
		}
	}
	return m
}

// each calls fn with the submatch indices of the successive matches of p in
// s, at most n of them (n < 0: all), the matches regexp's FindAll functions
// return (an empty match right after a match does not count), until fn
// returns false. Each search watches L's context (index).
func (p *pattern) each(L *lua.LState, s string, n int, fn func(m []int) bool) {
	prevEnd := -1
	for pos, i := 0, 0; (n < 0 || i < n) && pos <= len(s); {
		m := p.index(L, s, pos)
		if m == nil {
			return
		}
		accept := true
		if m[1] == pos { // empty: step over a rune, or past the end
			accept = m[0] != prevEnd
			if pos < len(s) {
				_, w := utf8.DecodeRuneInString(s[pos:])
				pos += w
			} else {
				pos++
			}
		} else {
			pos = m[1]
		}
		prevEnd = m[1]
		if accept {
			i++
			if !fn(m) {
				return
			}
		}
	}
}

// ctxReader is a subject read rune by rune, every runes looking at ctx; once
// ctx is done it ends the input (regexp has no other way to stop a search)
// and remembers it, so that the search's result is thrown away.
type ctxReader struct {
	s       string
	i       int
	ctx     context.Context
	every   int // runes between two looks at ctx
	n       int
	stopped bool
}

// ReadRune returns the next rune as regexp's own string input decodes it.
func (r *ctxReader) ReadRune() (rune, int, error) {
	if r.i >= len(r.s) || r.stopped {
		return 0, 0, io.EOF
	}
	if r.n++; r.n >= r.every {
		r.n = 0
		if r.ctx != nil && r.ctx.Err() != nil {
			r.stopped = true
			return 0, 0, io.EOF
		}
	}
	if c := r.s[r.i]; c < utf8.RuneSelf {
		r.i++
		return rune(c), 1, nil
	}
	c, w := utf8.DecodeRuneInString(r.s[r.i:])
	r.i += w
	return c, w, nil
}

// raise raises the context's error when the reader ended the input for it.
func (r *ctxReader) raise(L *lua.LState) {
	if r.stopped {
		checkContext(L)
	}
}

// submatches returns the strings of s that the indices m delimit, "" for a
// group that did not take part; nil for no match.
func submatches(s string, m []int) []string {
	if m == nil {
		return nil
	}
	out := make([]string, len(m)/2)
	for i := range out {
		if a, b := m[2*i], m[2*i+1]; a >= 0 {
			out[i] = s[a:b]
		}
	}
	return out
}

// findAll is regexp's FindAllStringSubmatch(s, n), watching L's context when
// the search is risky.
func (p *pattern) findAll(L *lua.LState, s string, n int) [][]string {
	if !p.risky(L, s) {
		return p.re.FindAllStringSubmatch(s, n)
	}
	var out [][]string
	p.each(L, s, n, func(m []int) bool {
		out = append(out, submatches(s, m))
		return true
	})
	return out
}

// split is regexp's Split(s, n), watching L's context when the search is
// risky.
func (p *pattern) split(L *lua.LState, s string, n int) []string {
	if !p.risky(L, s) {
		return p.re.Split(s, n)
	}
	if n == 0 {
		return nil
	}
	if p.src != "" && s == "" {
		return []string{""}
	}
	var out []string
	beg, end := 0, 0
	p.each(L, s, n, func(m []int) bool {
		if n > 0 && len(out) == n-1 {
			return false
		}
		end = m[0]
		if m[1] != 0 {
			out = append(out, s[beg:end])
		}
		beg = m[1]
		return true
	})
	if end != len(s) {
		out = append(out, s[beg:])
	}
	return out
}

// replace is regexp's ReplaceAllString(s, repl), watching L's context when
// the search is risky. Its matches are each's: regexp's replace loop skips
// the same empty matches its FindAll loop does.
func (p *pattern) replace(L *lua.LState, s, repl string) string {
	if !p.risky(L, s) {
		return p.re.ReplaceAllString(s, repl)
	}
	var out []byte
	last := 0
	p.each(L, s, -1, func(m []int) bool {
		out = append(out, s[last:m[0]]...)
		out = p.re.ExpandString(out, repl, s, m)
		last = m[1]
		return true
	})
	return string(append(out, s[last:]...))
}
