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
		{`return math.random(0)`, "bad argument #1 to random (interval is empty)"},
		{`return math.random(-3)`, "bad argument #1 to random (interval is empty)"},
		{`return math.random(5, 1)`, "bad argument #2 to random (interval is empty)"},
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
