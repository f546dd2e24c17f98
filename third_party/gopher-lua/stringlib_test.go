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
