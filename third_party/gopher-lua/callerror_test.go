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
		{`local x return x + 1`, `<string>:1: attempt to perform arithmetic on a nil value`},
		{`return 1 * {}`, `attempt to perform arithmetic on a table value`},
		{`return "10" + "a"`, `attempt to perform arithmetic on a string value`},
		{`return "1e1" + "0x10"`, ``}, // strings that read as numbers: 26
		{`return nil .. "x"`, `attempt to concatenate a nil value`},
		{`return "x" .. {}`, `attempt to concatenate a table value`},
		{`return 1 .. 2 .. false`, `attempt to concatenate a boolean value`},
		{`return {} < {}`, `attempt to compare two table values`},
		{`return 1 < "2"`, `attempt to compare number with string`},
		{`return nil >= 1`, `attempt to compare number with nil`}, // a >= b is b <= a
		{`for i = nil, 1 do end`, `'for' initial value must be a number`},
		{`for i = 1, {} do end`, `'for' limit must be a number`},
		{`for i = 1, 2, "x" do end`, `'for' step must be a number`},
		{`local t return t.x`, `attempt to index a nil value with key 'x'`},
		{`local t = {} return t.a.b`, `attempt to index a nil value with key 'b'`},
		{`local t = 5 t.x = 1`, `attempt to index a number value with key 'x'`},
	} {
		if tc.want == "" {
			L := NewState()
			if err := L.DoString(tc.code); err != nil {
				t.Errorf("%s: %v", tc.code, err)
			}
			L.Close()
			continue
		}
		L := NewState()
		err := L.DoString(tc.code)
		L.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.code, err, tc.want)
		}
	}
}
