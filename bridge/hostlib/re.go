package hostlib

import (
	"errors"
	"fmt"
	"math"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// Bounds of the `re` module. Go's RE2 engine runs in time linear in the input,
// but a call cannot be interrupted while it matches: the input bounds how long
// that is, and the pattern bounds the compiled program.
//
// The pattern's length alone does not bound its program: "a{1000}" is seven
// bytes and a thousand instructions, and a 16 KiB pattern of them compiled
// to 2 million (half a GiB allocated, 100 MiB kept, seconds of CPU, outside
// any budget and deaf to the call's context); "\pL" is three bytes and a
// table of 1,318 runes, which the parser copies for each one. So the
// program is bounded too, before it is built (newPattern). Patterns in
// ordinary use compile to a few dozen instructions, "[a-z]{1,100}" to 201,
// ".{1,1000}" to 2,001, and one without counted repetition to about one a
// byte: maxRegexpInsts is twice the longest of those, and compiles in a few
// ms.
const (
	maxRegexpLen     = 16 << 10 // bytes of a pattern
	maxRegexpInsts   = 1 << 15  // instructions of its compiled program
	maxRegexpClasses = 64       // Unicode classes (\p, \P) it names, each some 1,500 runes at most
	maxRegexpRunes   = 1 << 17  // runes of its character classes
	maxReInput       = 16 << 20 // bytes of a subject string
	maxMatches       = 100_000  // items find_all and split return at most
	reCacheSize      = 512      // compiled patterns kept, process-wide
	reCacheBytes     = 16 << 20 // their estimated size (pattern.size), process-wide
	maxQuotedPattern = 64       // bytes of a bad pattern its message quotes

	// What one item of a result list costs, as the budget counts it: its
	// slot and its string header (the bytes are a part of the subject's); a
	// list of captures is a table besides.
	sizeItem = 32
	sizeList = 96 + sizeItem
)

// reModule is `re`: regular expressions in Go's RE2 syntax
// (https://pkg.go.dev/regexp/syntax), safe on any input. A pattern that does
// not compile, or an input past the bounds, is nil, message.
var reModule = module{
	funcs: []function{
		{"match", reMatch},
		{"find_all", reFindAll},
		{"replace", reReplace},
		{"split", reSplit},
		{"test", reTest},
	},
}

// reCache holds compiled patterns; it is emptied when full, of entries or of
// bytes, which keeps it bounded without bookkeeping (a script uses a handful
// of patterns).
var reCache = struct {
	sync.Mutex
	m     map[string]*pattern
	bytes int // the patterns' sizes, summed
}{m: make(map[string]*pattern)}

// compilePattern returns the compiled pattern, from the cache when it can.
func compilePattern(src string) (*pattern, error) {
	if len(src) > maxRegexpLen {
		return nil, fmt.Errorf("re: pattern longer than %d bytes", maxRegexpLen)
	}
	reCache.Lock()
	p := reCache.m[src]
	reCache.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := newPattern(src)
	if err != nil {
		// The parser quotes the part of the pattern at fault, which may be
		// all of it ("missing closing )"): 16 KiB in a message a client
		// may see. The start of it is enough to find it.
		var se *syntax.Error
		if errors.As(err, &se) {
			expr := se.Expr
			if len(expr) > maxQuotedPattern {
				cut := maxQuotedPattern
				for cut > 0 && !utf8.RuneStart(expr[cut]) { // not mid-character
					cut--
				}
				expr = expr[:cut] + "..."
			}
			expr = strings.ToValidUTF8(expr, "\uFFFD") // a message is text
			return nil, fmt.Errorf("re: error parsing regexp: %s: `%s`", se.Code, expr)
		}
		return nil, fmt.Errorf("re: %v", err)
	}
	reCache.Lock()
	if reCache.m[src] == nil { // another call may have compiled it meanwhile
		if len(reCache.m) >= reCacheSize || reCache.bytes+p.size > reCacheBytes {
			clear(reCache.m)
			reCache.bytes = 0
		}
		reCache.m[src] = p
		reCache.bytes += p.size
	}
	reCache.Unlock()
	return p, nil
}

// reArgs reads (pattern, s) and compiles the pattern; on failure it pushes
// nil, message and returns nil.
func reArgs(L *lua.LState) (*pattern, string) {
	src, s := L.CheckString(1), L.CheckString(2)
	if len(s) > maxReInput {
		fail(L, "re: input longer than %d bytes", maxReInput)
		return nil, ""
	}
	p, err := compilePattern(src)
	if err != nil {
		fail(L, "%v", err)
		return nil, ""
	}
	return p, s
}

// limitArg reads the optional count n at argument i: -1 (all, up to
// maxMatches) when absent. A count past maxMatches is maxMatches: read as an
// int, math.huge or 2^63 would be math.MinInt64 on amd64, and raise.
func limitArg(L *lua.LState, i int) int {
	if L.Get(i) == lua.LNil {
		return -1
	}
	n := float64(L.CheckNumber(i))
	if !(n >= 0) || n != math.Trunc(n) { // NaN too
		L.ArgError(i, "an integer count >= 0 expected, got "+lua.LNumber(n).String())
	}
	return int(min(n, maxMatches))
}

// searchLimit is what regexp's FindAll and Split take for a count n from
// limitArg: one past maxMatches without a count, so that tooMany can tell;
// n clamped to maxMatches with one, as regexp would otherwise find up to n
// items, uninterrupted, however large n is.
func searchLimit(n int) int {
	if n < 0 {
		return maxMatches + 1
	}
	return min(n, maxMatches)
}

// tooMany reports whether got items found without a count are past
// maxMatches, pushing the failure (what names the items) when they are.
func tooMany(L *lua.LState, n, got int, what string) bool {
	if n < 0 && got > maxMatches {
		fail(L, "re: more than %d %s (pass n to take the first n)", maxMatches, what)
		return true
	}
	return false
}

// re.match(pattern, s) -> the captures, or the whole match when the pattern
// has no group; nil when it does not match. An unmatched group is "".
func reMatch(_ *State, L *lua.LState) int {
	p, s := reArgs(L)
	if p == nil {
		return 2
	}
	var m []string
	if p.risky(L, s) {
		m = submatches(s, p.index(L, s, 0))
	} else {
		m = p.re.FindStringSubmatch(s)
	}
	if m == nil {
		L.Push(lua.LNil)
		return 1
	}
	if len(m) == 1 {
		L.Push(lua.LString(m[0]))
		return 1
	}
	for _, c := range m[1:] {
		L.Push(lua.LString(c))
	}
	return len(m) - 1
}

// re.find_all(pattern, s [, n]) -> a list of the first n matches (all by
// default): each the whole match when the pattern has no group, else the
// list of its captures; n is at most maxMatches, and without it more than
// maxMatches matches is nil, message. The list is
// charged to the memory budget; its strings share the bytes of s. It is
// marked as an array, as a decoded JSON array is: no match encodes as [].
func reFindAll(st *State, L *lua.LState) int {
	n := limitArg(L, 3)
	p, s := reArgs(L)
	if p == nil {
		return 2
	}
	groups := p.re.NumSubexp()
	per := int64(sizeItem) // what one match costs
	if groups > 0 {
		per = sizeList + int64(groups)*sizeItem
	}
	// regexp builds every match's captures before the list is charged:
	// a pattern of a thousand empty groups matched at each of 100,000
	// places is 1.6 GB of strings. Search for no more matches than the
	// whole budget could hold, and one more to tell that they do not fit
	// (keep then charges what was found against what is left).
	limit := searchLimit(n)
	if most := L.MemoryLimit() / per; L.MemoryLimit() > 0 && most < int64(limit) {
		limit = int(most) + 1
	}
	out := st.codec.MarkArray(L.CreateTable(0, 0))
	ms := p.findAll(L, s, limit)
	if size := int64(len(ms)) * per; pastLimit(L, size) {
		return fail(L, "%v", budgetError(L, "re.find_all", size))
	}
	if tooMany(L, n, len(ms), "matches") {
		return 2
	}
	if groups == 0 {
		if err := keep(L, "re.find_all", len(ms)*sizeItem); err != nil {
			return fail(L, "%v", err)
		}
		for i, m := range ms {
			if i%checkEvery == 0 {
				checkContext(L)
			}
			out.Append(lua.LString(m[0]))
		}
	} else {
		if err := keep(L, "re.find_all", len(ms)*(sizeList+groups*sizeItem)); err != nil {
			return fail(L, "%v", err)
		}
		for i, m := range ms {
			if i%checkEvery == 0 {
				checkContext(L)
			}
			caps := L.CreateTable(len(m)-1, 0)
			for _, c := range m[1:] {
				caps.Append(lua.LString(c))
			}
			out.Append(caps)
		}
	}
	L.Push(out)
	return 1
}

// re.replace(pattern, s, repl) -> s with every match replaced by repl, in
// which $1 or ${1} (and ${name}) stand for the captures and $$ for $.
//
// The result can be far larger than s (an empty pattern matches between
// every two bytes), so a first pass bounds its size, and the result is built
// only when that fits the memory budget.
func reReplace(_ *State, L *lua.LState) int {
	repl := L.CheckString(3)
	p, s := reArgs(L)
	if p == nil {
		return 2
	}
	if size, ok := replacedSize(L, p, s, repl); !ok {
		checkContext(L)
		return fail(L, "%v", budgetError(L, "re.replace", size))
	}
	out := p.replace(L, s, repl)
	if err := keep(L, "re.replace", len(out)); err != nil {
		return fail(L, "%v", err)
	}
	L.Push(lua.LString(out))
	return 1
}

// stopSearch is the panic that ends replacedSize's search early: regexp has
// no other way to stop one.
type stopSearch struct{}

// replacedSize bounds the length of re.ReplaceAllString(s, repl): each
// match adds at most repl, with each $ standing for at most the match (a
// capture lies within it). It reports whether that fits L's memory budget,
// stopping at the match that takes it past the limit, or once the call is
// cancelled.
func replacedSize(L *lua.LState, p *pattern, s, repl string) (size int64, fits bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stopSearch); !ok {
				panic(r)
			}
			fits = false
		}
	}()
	dollars := int64(strings.Count(repl, "$"))
	size = int64(len(s))
	count := 0
	// add counts a match of n bytes, and reports whether to go on.
	add := func(n int) bool {
		size += int64(len(repl)) + dollars*int64(n)
		count++
		if pastLimit(L, size) {
			return false
		}
		if count%checkEvery == 0 {
			if ctx := L.Context(); ctx != nil && ctx.Err() != nil {
				return false
			}
		}
		return true
	}
	if p.risky(L, s) {
		fits = true
		p.each(L, s, -1, func(m []int) bool {
			fits = add(m[1] - m[0])
			return fits
		})
		return size, fits && room(L, size) >= size
	}
	p.re.ReplaceAllStringFunc(s, func(m string) string {
		if !add(len(m)) {
			panic(stopSearch{})
		}
		return ""
	})
	return size, room(L, size) >= size
}

// re.split(pattern, s [, n]) -> the pieces of s between matches; with n, at
// most n pieces (the last is the unsplit rest); n is at most maxMatches, and
// without it more than maxMatches pieces is nil, message. The list is marked
// as an array: with n = 0 it is empty, and encodes as [].
func reSplit(st *State, L *lua.LState) int {
	n := limitArg(L, 3)
	p, s := reArgs(L)
	if p == nil {
		return 2
	}
	parts := p.split(L, s, searchLimit(n))
	if tooMany(L, n, len(parts), "pieces") {
		return 2
	}
	if err := keep(L, "re.split", len(parts)*sizeItem); err != nil {
		return fail(L, "%v", err)
	}
	out := st.codec.MarkArray(L.CreateTable(len(parts), 0))
	for i, p := range parts {
		if i%checkEvery == 0 {
			checkContext(L)
		}
		out.Append(lua.LString(p))
	}
	L.Push(out)
	return 1
}

// re.test(pattern, s) -> whether s has a match.
func reTest(_ *State, L *lua.LState) int {
	p, s := reArgs(L)
	if p == nil {
		return 2
	}
	if p.risky(L, s) {
		L.Push(lua.LBool(p.index(L, s, 0) != nil))
	} else {
		L.Push(lua.LBool(p.re.MatchString(s)))
	}
	return 1
}
