package reprog

import (
	"math"
	"regexp/syntax"
	"strings"
	"testing"
)

// parse parses a pattern as the callers do (syntax.Perl).
func parse(t testing.TB, src string) *syntax.Regexp {
	t.Helper()
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return re
}

// compiled is the length of the program regexp builds of re.
func compiled(t testing.TB, re *syntax.Regexp) int {
	t.Helper()
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		t.Fatalf("compile %v: %v", re, err)
	}
	return len(prog.Inst)
}

// progOverhead is what syntax.Compile adds to any pattern's instructions:
// its fail instruction and its match.
const progOverhead = 2

// sizeCases are patterns with the size Size gives them under a limit that
// does not cut it, one or more per kind of node.
var sizeCases = []struct {
	src          string
	insts, runes int
}{
	{``, 1, 0},         // an empty match is one instruction
	{`^$\b\A\z`, 5, 0}, // an empty-width assertion each
	{`.`, 1, 0},
	{`(?s).`, 1, 0},
	{`a`, 1, 0},
	{`abc`, 3, 0}, // a literal is a rune an instruction
	{`(?i)abc`, 3, 0},
	{`\Qa.b\E`, 3, 0},
	{`[a-z]`, 1, 2}, // a class is one instruction; its runes are range bounds
	{`[a-z0-9_]`, 1, 6},
	{`[^a]`, 1, 4},
	{`\d`, 1, 2},
	{`a|b`, 1, 2}, // the parser makes a class of it
	{`\pL`, 1, 1318},
	{`(a)`, 3, 0}, // a capture: two instructions around its inside
	{`(?:a)`, 1, 0},
	{`a*`, 3, 0}, // pessimistic, as the parser's calcSize: 1 or 2
	{`a*?`, 3, 0},
	{`a+`, 2, 0},
	{`a?`, 2, 0},
	{`ab|cd`, 5, 0}, // the branches and a split between each two
	{`ab|cd|ef`, 8, 0},
	{`a{0}`, 1, 0},
	{`a{1}`, 1, 0},
	{`a{3}`, 3, 0},
	{`a{2,5}`, 8, 0}, // aa(a(a(a)?)?)?
	{`a{0,}`, 3, 0},  // a*
	{`a{2,}`, 3, 0},  // aa+
	{`(abc){2,4}`, 22, 0},
	{`[ab]{1000}`, 1000, 2}, // a class's runes are shared by its copies
	{`a{1000}`, 1000, 0},
	{`(a|b)*c`, 6, 2},
	{`x(?:a|b){3,}`, 5, 2},
	{`(?:a{0,2}){0,2}`, 10, 0},
	{`[a-c]x|[d-f]y`, 5, 4},
}

// TestSize checks Size's count of each kind of node, under a limit that
// does not cut it, and that the program regexp builds is no larger than it
// says (but for the two instructions every program has): the callers'
// bound holds before the program is built.
func TestSize(t *testing.T) {
	for _, tt := range sizeCases {
		re := parse(t, tt.src)
		insts, runes := Size(re, 1<<20)
		if insts != tt.insts || runes != tt.runes {
			t.Errorf("Size(%q) = %d, %d; want %d, %d", tt.src, insts, runes, tt.insts, tt.runes)
		}
		if n := compiled(t, re); n > insts+progOverhead {
			t.Errorf("%q compiles to %d instructions, more than Size's %d + %d", tt.src, n, insts, progOverhead)
		}
	}
}

// TestSizeLimit checks the bound: a size within the limit is counted, one
// past it is limit+1 however far past it goes (a concatenation or an
// alternation of parts each within it), and the runes are counted all the
// same.
func TestSizeLimit(t *testing.T) {
	for _, tt := range []struct {
		src          string
		limit        int
		insts, runes int
	}{
		{`a{1000}`, 1000, 1000, 0}, // at the limit: within
		{`a{1000}`, 999, 1000, 0},  // one past
		{`a{1000}`, 1, 2, 0},
		{`a`, 1, 1, 0},
		{`a`, 0, 1, 0}, // every program passes a limit of 0
		{``, 0, 1, 0},
		{`a{1000}b{1000}c{1000}`, 1500, 1501, 0},
		{`a{1000}|b{1000}`, 1000, 1001, 0}, // the branches fit, with the split they do not
		{`a{1000}|b{1000}`, 2001, 2001, 0},
		{`a{1000}|b{1000}`, 2000, 2001, 0},
		{`(?:[ab]{1000}){0,1}`, 500, 501, 2},
		{`(?:[a-z]{500})+`, 499, 500, 2},
		{`(?:a{1000}){0}`, 10, 1, 0}, // nothing of what is repeated 0 times
		{`(a{1000})`, 1000, 1001, 0},
		{`(a{999})`, 1001, 1001, 0},
		{`\pL{1000}`, 10, 11, 1318},
	} {
		re := parse(t, tt.src)
		insts, runes := Size(re, tt.limit)
		if insts != tt.insts || runes != tt.runes {
			t.Errorf("Size(%q, %d) = %d, %d; want %d, %d", tt.src, tt.limit, insts, runes, tt.insts, tt.runes)
		}
	}
}

// TestSizeLargestLimit: a limit of math.MaxInt cuts nothing. limit+1
// overflowed to math.MinInt, which every pattern's size then was.
func TestSizeLargestLimit(t *testing.T) {
	for _, tt := range sizeCases {
		if insts, _ := Size(parse(t, tt.src), math.MaxInt); insts != tt.insts {
			t.Errorf("Size(%q, math.MaxInt) = %d, want %d", tt.src, insts, tt.insts)
		}
	}
}

// TestSizeLargest checks a pattern near regexp/syntax's own bound (its
// calcSize, the same count, past some 3.3 million instructions; nested
// repeats are refused past a product of 1000): counted without overflow,
// the same under any limit at or above it, cut under a lower one.
func TestSizeLargest(t *testing.T) {
	src := strings.Repeat(`a{1000}`, 3000)
	re := parse(t, src)
	const want = 3_000_000
	for _, limit := range []int{want, want + 1, math.MaxInt / 2, math.MaxInt - 1, math.MaxInt} {
		if insts, _ := Size(re, limit); insts != want {
			t.Errorf("Size(3000 × a{1000}, %d) = %d, want %d", limit, insts, want)
		}
	}
	if insts, _ := Size(re, 1<<15); insts != 1<<15+1 {
		t.Errorf("Size(3000 × a{1000}, 1<<15) = %d, want %d", insts, 1<<15+1)
	}
	if _, err := syntax.Parse(strings.Repeat(`a{1000}`, 4000), syntax.Perl); err == nil {
		t.Log("regexp/syntax takes 4000 × a{1000}: its bound moved")
	}
}

// FuzzSize: for any pattern the parser takes and any limit, Size is from 1
// to limit+1; within the limit it is the size any higher limit gives, and
// the program regexp builds has no more instructions (but for the two of
// every program).
func FuzzSize(f *testing.F) {
	for _, tt := range sizeCases {
		f.Add(tt.src, uint16(1<<15))
	}
	f.Add(`a{1000}|b{1000}`, uint16(1000))
	f.Add(`(?:[ab]{1000}){0,1}`, uint16(0))
	f.Fuzz(func(t *testing.T, src string, limit16 uint16) {
		re, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			return
		}
		limit := int(limit16)
		insts, runes := Size(re, limit)
		if insts < 1 || insts > limit+1 || runes < 0 {
			t.Fatalf("Size(%q, %d) = %d, %d", src, limit, insts, runes)
		}
		if insts > limit {
			return
		}
		if again, againRunes := Size(re, math.MaxInt); again != insts || againRunes != runes {
			t.Fatalf("Size(%q) = %d, %d under %d, %d, %d unbounded", src, insts, runes, limit, again, againRunes)
		}
		if n := compiled(t, re); n > insts+progOverhead {
			t.Fatalf("%q compiles to %d instructions, more than Size's %d + %d", src, n, insts, progOverhead)
		}
	})
}
