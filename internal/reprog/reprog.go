// Package reprog sizes the program Go's regexp compiles a pattern to, from
// the parsed pattern and before the program is built. The pattern's length
// alone does not bound it: "a{1000}" is seven bytes and a thousand
// instructions, and regexp/syntax accepts programs of millions (a 16 KiB
// pattern compiled to 2 million instructions: half a GiB allocated, 100 MiB
// kept, seconds of CPU). A search takes time in the product of the
// program's size and the subject's length. Scripts write patterns (the re
// module, a tool's JSON schema), so their programs are bounded before they
// are built.
package reprog

import (
	"math"
	"regexp/syntax"
)

// Size estimates how many instructions syntax.Compile makes of re once
// simplified, as regexp/syntax's parser does for its own bound (calcSize),
// reporting limit+1 past limit (math.MaxInt cuts nothing); and counts the
// runes of its character classes, which the program shares (Simplify
// repeats a node, not its runes). The program has two instructions more
// (its fail and its match). The parser bounds re's depth, and its size to a
// few million instructions, so the counts cannot overflow.
func Size(re *syntax.Regexp, limit int) (insts, runes int) {
	over := limit
	if over < math.MaxInt { // past math.MaxInt, nothing is
		over++
	}
	var n int
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpCharClass:
		n, runes = 1, len(re.Rune)
	case syntax.OpCapture, syntax.OpStar:
		n, runes = Size(re.Sub[0], limit)
		n += 2
	case syntax.OpPlus, syntax.OpQuest:
		n, runes = Size(re.Sub[0], limit)
		n++
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			i, r := Size(sub, limit)
			n, runes = min(n+i, over), runes+r
		}
		if re.Op == syntax.OpAlternate {
			n += len(re.Sub) - 1
		}
	case syntax.OpRepeat:
		// x{2,5} is xx(x(x(x)?)?)?, x{2,} is xx+. The parser allows
		// counts up to 1000, so the products stay small.
		sub, r := Size(re.Sub[0], limit)
		runes = r
		switch {
		case re.Max == -1 && re.Min == 0:
			n = 2 + sub
		case re.Max == -1:
			n = 1 + re.Min*sub
		default:
			n = re.Max*sub + re.Max - re.Min
		}
	}
	return min(max(n, 1), over), runes
}
