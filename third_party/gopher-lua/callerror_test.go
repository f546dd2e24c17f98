package lua

import (
	"strings"
	"testing"
)

// The runtime errors a script author meets most name what failed, as Lua's
// do: the function a call named, the type of the value.
func TestRuntimeErrorMessages(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{`undefined_function()`, `<string>:1: attempt to call 'undefined_function' (a nil value)`},
		{`local t = {} t.handler(1)`, `attempt to call 'handler' (a nil value)`},
		{`local s = "x" s:nomethod()`, `attempt to call 'nomethod' (a nil value)`},
		{`local n = 5 n()`, `attempt to call 'n' (a number value)`},
		{`local function f() return missing() end f()`, `attempt to call 'missing' (a nil value)`}, // a tail call
		{`local a, b; (a or b)()`, `attempt to call a nil value`},
		{`pcall(nil) error(select(2, pcall(nil)))`, `attempt to call a nil value`},
		{`return #nil`, `attempt to get length of a nil value`},
		{`return -{}`, `attempt to perform arithmetic on a table value`},
		{`return -"x"`, `attempt to perform arithmetic on a string value`},
	} {
		L := NewState()
		err := L.DoString(tc.code)
		L.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.code, err, tc.want)
		}
	}
}
