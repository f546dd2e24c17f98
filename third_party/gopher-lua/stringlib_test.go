package lua

// Patched for luamcp: tests of the string library's bounds.

import (
	"testing"
	"time"
)

// A pattern holds at most 32 captures, as in Lua 5.1; a megabyte of '('
// fails as fast as 33 of them (the compiler recursed once per '(': past a few
// million, a fatal stack overflow). No memory limit: it would refuse the
// megabyte before its compilation begins.
func TestPatternCaptureLimit(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"32 captures", `assert(string.find("a", string.rep("(", 32) .. "a" .. string.rep(")", 32)) == 1)`},
		{"33 captures", `local ok, err = pcall(string.find, "a", string.rep("(", 33) .. "a" .. string.rep(")", 33))
			assert(not ok and err:find("too many captures"), err)`},
		{"33 position captures", `local ok, err = pcall(string.gsub, "a", string.rep("()", 33), "")
			assert(not ok and err:find("too many captures"), err)`},
		{"a million '('", `local ok, err = pcall(string.find, "", string.rep("(", 1e6))
			assert(not ok and err:find("too many captures"), err)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := budgetState(t, 0)
			start := time.Now()
			if err := L.DoString(c.src); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// A back-reference to a capture not closed before it ("((%1))", "%1(x)")
// raises "invalid capture index" when a match reaches it, as in Lua 5.1;
// one to a closed capture matches its text. The matcher sliced the subject
// from the capture's start to an end left from another attempt or unset: a
// Go panic (FuzzChunk's third finding, `("0 0"):gmatch("((%1))")`).
func TestBackReferenceToOpenCapture(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"open", `local ok, err = pcall(string.find, "0 0", "((%1))")
			assert(not ok and err:find("invalid capture index"), err)`},
		{"gmatch", `local ok, err = pcall(function() for a in ("0 0"):gmatch("((%1))") do end end)
			assert(not ok and err:find("invalid capture index"), err)`},
		{"later", `local ok, err = pcall(string.match, "xx", "%1(x)")
			assert(not ok and err:find("invalid capture index"), err)`},
		{"position inside", `local ok, err = pcall(string.find, "ab", "(()%1)")
			assert(not ok and err:find("invalid capture index"), err)`},
		{"second open", `local ok, err = pcall(string.gsub, "aab", "(a)(%2)", "")
			assert(not ok and err:find("invalid capture index"), err)`},
		{"never reached", `assert(string.find("x", "y(%1)") == nil)`},
		{"closed", `assert(string.find("xaab", "(a)%1") == 2) assert(string.match("abab", "((a)b)%1") == "ab")`},
		{"nested closed", `assert(select(3, string.find("aaaa", "((a)%2)%1")) == "aa")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := budgetState(t, 0)
			if err := L.DoString(c.src); err != nil {
				t.Fatal(err)
			}
		})
	}
}
