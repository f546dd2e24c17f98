package lua

import (
	"strings"
	"testing"
)

// TestClosed classifies functions by what they can observe.
func TestClosed(t *testing.T) {
	cases := []struct {
		code             string
		closed, usesArgs bool
	}{
		{`return function() return { { name = "echo", input_schema = { type = "object" } } } end`, true, false},
		{`return function(state) local out = {} for i = 1, 100 do out[i] = { name = "tool" .. i, n = i * 2 % 7 } end return out end`, true, false},
		{`return function(state) local t = {1, 2, 3} if #t > 2 and not t[4] then t.x = -t[1] end return t end`, true, false},
		{`return function(state) return { big = { ` + manyFields(25600) + ` } } end`, true, false},
		{`return function(state) return state.tools end`, true, true},
		{`return function(state) if state.unlocked then return { 1 } end return {} end`, true, true},
		{`return function(a, b) local x = b return { x } end`, true, true},
		{`local T = {} return function() return T end`, false, false},
		{`return function() return TOOLS end`, false, false},
		{`return function() return { t = os.time() } end`, false, false},
		{`return function() local t = {} for k, v in pairs({1}) do t[k] = v end return t end`, false, false},
		{`return function() return { f = function() end } end`, false, false},
		{`return function(...) return { ... } end`, false, false},
		{`return function() local s = "x" return { s:upper() } end`, false, false},
		{`local n = 0 return function() n = n + 1 return {} end`, false, false},
	}
	for _, c := range cases {
		L := NewState()
		if err := L.DoString(c.code); err != nil {
			t.Fatalf("%.100s: %v", c.code, err)
		}
		fn := L.Get(-1).(*LFunction)
		closed, uses := fn.Proto.Closed()
		if closed != c.closed || (closed && uses != c.usesArgs) {
			t.Errorf("%.100s: Closed() = %v, %v; want %v, %v", c.code, closed, uses, c.closed, c.usesArgs)
		}
		L.Close()
	}
}

// manyFields is a table constructor body long enough for SETLIST to carry
// its C in an extra word (past 511 flushes of 50).
func manyFields(n int) string {
	return strings.Repeat("1, ", n)
}
