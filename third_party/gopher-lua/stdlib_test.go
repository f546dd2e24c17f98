package lua

import (
	"strings"
	"testing"
)

// math.random's arguments: an empty interval is Lua 5.1's argument error (it
// was rand.Intn's panic message), and every value stays in its interval,
// whatever its width.
func TestMathRandomIntervals(t *testing.T) {
	for _, tc := range []struct{ code, err string }{
		// patched for luamcp: the function name is quoted, as in Lua 5.1
		{`return math.random(0)`, "bad argument #1 to 'random' (interval is empty)"},
		{`return math.random(-3)`, "bad argument #1 to 'random' (interval is empty)"},
		{`return math.random(5, 1)`, "bad argument #2 to 'random' (interval is empty)"},
		{`for i = 1, 200 do local x = math.random(3) assert(x >= 1 and x <= 3 and x == math.floor(x)) end`, ""},
		{`for i = 1, 200 do local x = math.random(-2, 2) assert(x >= -2 and x <= 2) end`, ""},
		{`for i = 1, 200 do assert(math.random(7, 7) == 7) end`, ""},
		{`for i = 1, 200 do local x = math.random(-2^62, 2^62) assert(x >= -2^62 and x <= 2^62) end`, ""},
		{`for i = 1, 200 do local x = math.random() assert(x >= 0 and x < 1) end`, ""},
	} {
		L := NewState()
		err := L.DoString(tc.code)
		L.Close()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.code, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want %q", tc.code, err, tc.err)
		}
	}
}

// os.time of a table needs its day, month and year, as in Lua 5.1.
func TestOSTimeRequiredFields(t *testing.T) {
	for _, tc := range []struct{ code, err string }{
		{`return os.time({})`, "field 'day' missing in date table"},
		{`return os.time({day = 1, year = 2026})`, "field 'month' missing in date table"},
		{`return os.time({day = 1, month = 1})`, "field 'year' missing in date table"},
		{`assert(os.time({day = 2, month = 1, year = 1970, hour = 0}) - os.time({day = 1, month = 1, year = 1970, hour = 0}) == 86400)`, ""},
	} {
		L := NewState()
		err := L.DoString(tc.code)
		L.Close()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.code, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want %q", tc.code, err, tc.err)
		}
	}
}

// Strings read as numbers as Lua reads them (luaO_str2d): tonumber, the
// arithmetic on strings and numeric literals share one conversion, and
// tonumber with a base reads as Lua 5.2's.
func TestStringToNumber(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{`return tonumber("1e5")`, "100000"},
		{`return tonumber(" 10\r\n")`, "10"},
		{`return tonumber("\t-0x10 ")`, "-16"},
		{`return tonumber("0x1p4")`, "16"},
		{`return tonumber("0xA.8")`, "10.5"},
		{`return tonumber(".5"), tonumber("5."), tonumber("+5")`, "0.5 5 5"},
		{`return tonumber("123456789012345678901234") == 1.2345678901234568e23`, "true"},
		{`return tonumber("1e400") == 1/0`, "true"},
		{`return tonumber("017"), "017" + 0, 017`, "17 17 17"},
		{`return tonumber("0b101"), tonumber("0o17"), tonumber("1_000")`, "nil nil nil"},
		{`return tonumber("inf"), tonumber("nan"), tonumber("Infinity")`, "nil nil nil"},
		{`return tonumber(""), tonumber(" "), tonumber("0x"), tonumber("1e"), tonumber("- 1"), tonumber(".")`, "nil nil nil nil nil nil"},
		{`return tonumber("1 2"), tonumber("1.5.2"), tonumber("0x1g")`, "nil nil nil"},
		{`return tonumber({}), tonumber(nil), tonumber(true)`, "nil nil nil"},
		{`return tonumber(42), tonumber("42", 10)`, "42 42"},
		{`return tonumber("ff", 16), tonumber("FF", 16), tonumber(" -z ", 36), tonumber("101", 2)`, "255 255 -35 5"},
		{`return tonumber("1.5", 16), tonumber("2", 2), tonumber("0x10", 16), tonumber("", 16)`, "nil nil nil nil"},
		{`return tonumber(255, 16)`, "597"}, // a number's text, "255", in base 16
		{`return pcall(function() return tonumber("1", 1) end)`, "false <string>:1: bad argument #2 to 'tonumber' (base out of range)"},
		{`return pcall(function() return tonumber("1", 37) end)`, "false <string>:1: bad argument #2 to 'tonumber' (base out of range)"},
		{`return pcall(function() return "1_000" + 0 end)`, "false <string>:1: attempt to perform arithmetic on a string value"},
		{`return pcall(function() return "0b101" * 1 end)`, "false <string>:1: attempt to perform arithmetic on a string value"},
		{`return " 0x10 " + 0, "2e1" * 1, -"3"`, "16 20 -3"},
	} {
		L := NewState()
		if err := L.DoString(tc.code); err != nil {
			t.Errorf("%s: %v", tc.code, err)
			L.Close()
			continue
		}
		var got []string
		for i := 1; i <= L.GetTop(); i++ {
			got = append(got, L.ToStringMeta(L.Get(i)).String())
		}
		L.Close()
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s: got %q, want %q", tc.code, g, tc.want)
		}
	}
}

// math.huge is infinity, as Lua's HUGE_VAL, and tostring writes infinities
// and NaN as C's printf does.
func TestInfinityAndNaN(t *testing.T) {
	L := NewState()
	defer L.Close()
	code := `return math.huge == 1/0, -math.huge == -1/0, math.huge > 1.7976931348623157e308,
		tostring(math.huge), tostring(-math.huge), tostring(-(0/0)), math.huge .. "", tostring(2^63), tostring(-2^63)`
	if err := L.DoString(code); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 1; i <= L.GetTop(); i++ {
		got = append(got, L.ToStringMeta(L.Get(i)).String())
	}
	want := "true true true inf -inf nan inf 9.223372036854776e+18 -9223372036854775808"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("got %q, want %q", g, want)
	}
}
