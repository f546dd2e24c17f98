package lua

import (
	"strings"
	"testing"
)

// string.format formats as C's printf does for Lua 5.1 (expected values
// printed by glibc's snprintf with the same conversions, integers cast to
// long), and refuses what Lua refuses: Go's own verbs, missing and mistyped
// arguments. Upstream passed the format to Go's fmt.Sprintf.
func TestStringFormat(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{`string.format("%d|%5d|%-5d|%05d|%+d|% d", 42, 42, 42, -42, 42, 42)`, "42|   42|42   |-0042|+42| 42"},
		{`string.format("%.3d|%.0d|%i|%d|%d", 7, 0, -0, 3.9, -3.9)`, "007||0|3|-3"},
		{`string.format("%x|%X|%#x|%#o|%o|%x|%u", 255, 255, 255, 8, -1, -1, 3)`, "ff|FF|0xff|010|1777777777777777777777|ffffffffffffffff|3"},
		{`string.format("%c%c%c", 76, 117, 97)`, "Lua"},
		{`string.format("%e|%.2e|%E", 12345.6789, 0, 1e-300)`, "1.234568e+04|0.00e+00|1.000000E-300"},
		{`string.format("%f|%.0f|%#.0f|%10.3f|%010.3f", 3.14159, 2.5, 3, -3.14159, -3.14159)`, "3.141590|2|3.|    -3.142|-00003.142"},
		{`string.format("%g|%g|%g|%g|%g|%g", 0.1, 100000, 1000000, 1e-5, 0.0001, 0)`, "0.1|100000|1e+06|1e-05|0.0001|0"},
		{`string.format("%.3g|%#g|%G|%g|%.14g|%g|%.10g", 3.14159, 1, 1e-10, 2^53, 0.1, 123456789, 123456789)`, "3.14|1.00000|1E-10|9.0072e+15|0.1|1.23457e+08|123456789"},
		{`string.format("%g", 0.1 + 0.2)`, "0.3"},
		{`string.format("%f|%f|%5.1f|%E", 1/0, -1/0, 1/0, -1/0)`, "inf|-inf|  inf|-INF"},
		{`string.format("%d", 2^63)`, "-9223372036854775808"},
		{`string.format("%s|%10s|%-10s|%.2s|%5.2s", "hello", "hi", "hi", "hello", 1)`, "hello|        hi|hi        |he|    1"},
		{`string.format("%5s|", "héllo")`, "héllo|"}, // widths count bytes
		{`string.format("%s %s %s", 1.5, true, nil)`, "1.5 true nil"},
		{`string.format("%s", setmetatable({}, {__tostring = function() return "obj" end}))`, "obj"},
		{`string.format("%q", 'a"b\\c\nd\re\0f')`, "\"a\\\"b\\\\c\\\nd\\re\\000f\""},
		{`loadstring("return " .. string.format("%q", "x\0\n\r\"\\y\255"))() == "x\0\n\r\"\\y\255"`, "true"},
		{`string.format("%%|%5%%d", 1)`, ""}, // "%5%" is an invalid option, as in Lua 5.1
		{`string.format("%d", "10")`, "10"},  // a numeric string converts
		// patched for luamcp: the function name is quoted, as in Lua 5.1
		{`string.format("%d")`, "bad argument #2 to 'format' (no value)"}, // patched for luamcp: Lua 5.1's "no value"
		{`string.format("%d", "x")`, "bad argument #2 to 'format' (number expected, got string)"},
		{`string.format("%d %s", 1)`, "bad argument #3 to 'format' (no value)"},
		{`string.format("%q", {})`, "bad argument #2 to 'format' (string expected, got table)"},
		{`string.format("%s", setmetatable({}, {__tostring = function() return {} end}))`, "'__tostring' must return a string"},
		{`string.format("%v", {})`, "invalid option '%v' to 'format'"},
		{`string.format("%T", 1)`, "invalid option '%T' to 'format'"},
		{`string.format("%#v", {})`, "invalid option '%#v' to 'format'"},
		{`string.format("%p", {})`, "invalid option '%p' to 'format'"},
		{`string.format("%", 1)`, "invalid option '%' to 'format'"},
		{`string.format("%-", 1)`, "invalid option '%-' to 'format'"},
		{`string.format("%*d", 5, 1)`, "invalid option '%*' to 'format'"},
		{`string.format("%100d", 1)`, "invalid format (width or precision too long)"},
	} {
		L := NewState()
		err := L.DoString("r = tostring(" + tc.code + ")")
		got := L.GetGlobal("r").String()
		L.Close()
		if tc.code == `string.format("%%|%5%%d", 1)` {
			if err == nil || !strings.Contains(err.Error(), "invalid option '%5%' to 'format'") {
				t.Errorf("%s: got %v", tc.code, err)
			}
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) || tc.want == "" {
				t.Errorf("%s: error %v, want %q", tc.code, err, tc.want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %q, want %q", tc.code, got, tc.want)
		}
	}
}
