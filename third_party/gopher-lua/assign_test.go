package lua

import (
	"strings"
	"testing"
)

// An assignment to a field of a constant ((0).A = 1, ("s").x = v) indexes
// that constant: the compiler propagated it as a constant index, which
// SETTABLE read as a register, so the store went to whatever that register
// held, or to a register never written, a Go nil the VM dereferenced
// (FuzzChunk's fourth finding: `t=setmetatable({},{})getmetatabl,(0).A=A0`).
func TestAssignToConstantField(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`(0).A = 1`, "index a number value with key 'A'"},
		{`a, (0).A = 1`, "index a number value with key 'A'"},
		{`t=setmetatable({},{})getmetatabl,(0).A=A0`, "index a number value with key 'A'"},
		{`a, (0)[1] = 1, 2`, "index a number value with key '1'"},
		{`local x; x, (2.5).y, ("s").z = 1, 2, 3`, "index a string value with key 'z'"},
		{`getmetatable("").__newindex = function(s, k, v) assert(s == "s" and k == "k" and v == 1) error("ok") end
		  ("s").k = 1`, "ok"},
		{`getmetatable("").__newindex = function(s, k, v) assert(s == "s" and k == "k" and v == 2) error("ok") end
		  local a; a, ("s").k = 1, 2`, "ok"},
	} {
		L := NewState()
		err := L.DoString(c.src)
		L.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "runtime error") {
			t.Errorf("%s: %v, want an error with %q", c.src, err, c.want)
		}
	}
}
