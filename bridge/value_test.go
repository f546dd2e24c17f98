package bridge

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// newState returns a fresh state with the mcp module preloaded, and its codec.
func newState(t testing.TB) (*lua.LState, *Codec, *Module) {
	t.Helper()
	L := lua.NewState()
	t.Cleanup(L.Close)
	c := NewCodec(L)
	m := NewModule(c, nil, nil)
	L.PreloadModule("mcp", m.Loader)
	return L, c, m
}

// eval runs a Lua chunk (with `mcp` in scope) and returns its first result.
func eval(t testing.TB, L *lua.LState, chunk string) lua.LValue {
	t.Helper()
	fn, err := L.LoadString("local mcp = require('mcp')\n" + chunk)
	if err != nil {
		t.Fatalf("load %q: %v", chunk, err)
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		t.Fatalf("run %q: %v", chunk, err)
	}
	v := L.Get(-1)
	L.Pop(1)
	return v
}

func mustEncode(t testing.TB, c *Codec, v lua.LValue) string {
	t.Helper()
	out, err := c.Encode(v, "value")
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return string(out)
}

func TestDecodeEncode(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" means: same as in
	}{
		{"null", `null`, ``},
		{"true", `true`, ``},
		{"false", `false`, ``},
		{"zero", `0`, ``},
		{"minus one", `-1`, ``},
		{"small int", `42`, ``},
		{"2^53", `9007199254740992`, ``},
		{"2^53+1 rounds to nearest float64", `9007199254740993`, `9007199254740992`},
		{"-2^53", `-9007199254740992`, ``},
		{"18 digits", `123456789012345678`, `123456789012345680`},
		{"1e20 as integer", `1e20`, `100000000000000000000`},
		{"1e21 keeps exponent", `1e21`, `1e+21`},
		{"huge integer", `123456789012345678901234567890`, `1.2345678901234568e+29`},
		{"fraction", `1.5`, ``},
		{"negative fraction", `-0.25`, ``},
		{"tenth", `0.1`, ``},
		{"minus zero", `-0`, `0`},
		{"minus zero float", `-0.0`, `0`},
		{"exponent", `1E2`, `100`},
		{"small exponent", `1e-7`, ``},
		{"tiny", `5e-324`, ``},
		{"underflow to zero", `1e-400`, `0`},
		{"max float", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"string", `"hello"`, ``},
		{"empty string", `""`, ``},
		{"escapes", `"a\"b\\c\/d\b\f\n\r\t"`, `"a\"b\\c/d\b\f\n\r\t"`},
		{"control escape", `"\u0001\u001f"`, ``},
		{"unicode escape", `"\u00e9\u4e2d"`, `"é中"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"lone high surrogate", `"\ud800x"`, `"` + "\uFFFD" + `x"`},
		{"lone low surrogate", `"\udc00"`, `"` + "\uFFFD" + `"`},
		{"high then non-low", `"\ud800\u0041"`, `"` + "\uFFFD" + `A"`},
		{"two high surrogates", `"\ud800\ud83d\ude00"`, `"` + "\uFFFD" + `😀"`},
		{"raw utf-8", `"héllo 中文 😀"`, ``},
		{"escapes between raw runs", `"é\n中文\t😀 end"`, ``},
		{"escape first", `"\"quoted\" text"`, ``},
		{"line separators escaped", "\"\u2028\u2029\"", `"\u2028\u2029"`},
		{"html not escaped", `"<a href='x'>&</a>"`, ``},
		{"del not escaped", "\"\x7f\"", ``},
		{"empty array", `[]`, ``},
		{"empty object", `{}`, ``},
		{"nested empties", `[[],{},[{}],{"a":[]}]`, ``},
		{"nulls in array", `[null,1,null,null]`, ``},
		{"only nulls", `[null]`, ``},
		{"object", `{"a":1,"b":"x","c":true,"d":null}`, ``},
		{"keys sorted", `{"b":1,"a":2,"A":3,"aa":4,"":5}`, `{"":5,"A":3,"a":2,"aa":4,"b":1}`},
		{"duplicate key keeps last", `{"a":1,"a":2}`, `{"a":2}`},
		{"numeric keys stay strings", `{"1":"x","2":"y"}`, ``},
		{"whitespace", " \t\r\n{ \"a\" : [ 1 , 2 ] } \n", `{"a":[1,2]}`},
		{"escaped key", `{"a\nb":1}`, ``},
		{"mixed", `{"content":[{"type":"text","text":"hi"}],"isError":false}`, `{"content":[{"text":"hi","type":"text"}],"isError":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c, _ := newState(t)
			v, err := c.Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode(%q): %v", tt.in, err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got := mustEncode(t, c, v); got != want {
				t.Errorf("Encode(Decode(%q)) = %s, want %s", tt.in, got, want)
			}
		})
	}
}

func TestDecodeLuaValues(t *testing.T) {
	L, c, _ := newState(t)
	v, err := c.Decode([]byte(`{"n":[1,null,3],"i":7,"f":2.5,"s":"x","b":false,"z":null,"e":{},"a":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("v", v)
	got := eval(t, L, `
		local n = v.n
		assert(#n == 3, "length with a null inside")
		assert(n[2] == mcp.null, "null decodes to mcp.null")
		assert(v.z == mcp.null)
		assert(v.i == 7 and v.f == 2.5 and v.s == "x" and v.b == false)
		assert(next(v.e) == nil and next(v.a) == nil)
		return "ok"`)
	if got != lua.LString("ok") {
		t.Fatalf("got %v", got)
	}
	tbl := v.(*lua.LTable)
	if !IsObject(tbl) || IsArray(tbl) {
		t.Error("decoded object is not marked as an object")
	}
	if a := tbl.RawGetString("a").(*lua.LTable); !IsArray(a) || IsObject(a) {
		t.Error("decoded array is not marked as an array")
	}
	if tbl.RawGetString("z") != lua.LValue(c.Null()) || !c.IsNull(tbl.RawGetString("z")) {
		t.Error("null is not the codec's Null")
	}
	if n, ok := tbl.RawGetString("i").(lua.LNumber); !ok || n != 7 {
		t.Errorf("integer decodes to %#v", tbl.RawGetString("i"))
	}
}

func TestDecodeErrors(t *testing.T) {
	deep := func(n int, open, close string) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, `invalid JSON at byte 0: unexpected end of input, expecting a value`},
		{"blank", `  `, `invalid JSON at byte 2: unexpected end of input, expecting a value`},
		{"trailing garbage", `{} x`, `invalid JSON at byte 3: unexpected 'x' after the value`},
		{"two values", `1 2`, `invalid JSON at byte 2: unexpected '2' after the value`},
		{"leading zero", `01`, `invalid JSON at byte 1: unexpected '1' after the value`},
		{"trailing comma array", `[1,]`, `invalid JSON at byte 3: unexpected ']', expecting a value`},
		{"trailing comma object", `{"a":1,}`, `invalid JSON at byte 7: unexpected '}' in an object, expecting a string key`},
		{"unquoted key", `{a:1}`, `invalid JSON at byte 1: unexpected 'a' in an object, expecting a string key`},
		{"missing colon", `{"a" 1}`, `invalid JSON at byte 5: unexpected '1' after an object key, expecting ':'`},
		{"missing value", `{"a"}`, `invalid JSON at byte 4: unexpected '}' after an object key, expecting ':'`},
		{"unclosed array", `[1`, `invalid JSON at byte 2: unexpected end of input in an array`},
		{"unclosed object", `{"a":1`, `invalid JSON at byte 6: unexpected end of input in an object`},
		{"array separator", `[1 2]`, `invalid JSON at byte 3: unexpected '2' in an array, expecting ',' or ']'`},
		{"bad literal", `tru`, `invalid JSON at byte 0: invalid literal, expecting true`},
		{"bad null", `nul`, `invalid JSON at byte 0: invalid literal, expecting null`},
		{"unclosed string", `"abc`, `invalid JSON at byte 4: unexpected end of input in a string`},
		{"raw control char", "\"a\x01\"", `invalid JSON at byte 2: control character 0x01 in a string (escape it)`},
		{"raw newline", "\"a\n\"", `invalid JSON at byte 2: control character 0x0a in a string (escape it)`},
		{"bad escape", `"\x"`, `invalid JSON at byte 1: invalid escape sequence in a string`},
		{"short unicode escape", `"\u12"`, `invalid JSON at byte 5: invalid \u escape in a string`},
		{"truncated unicode escape", `"\u12`, `invalid JSON at byte 5: unexpected end of input in a \u escape`},
		{"bad hex", `"\u12g4"`, `invalid JSON at byte 5: invalid \u escape in a string`},
		{"invalid UTF-8", "\"\xff\"", `invalid JSON at byte 1: invalid UTF-8 in a string (byte 0xff)`},
		{"invalid UTF-8 after valid", "\"ab\u00e9\xff\"", `invalid JSON at byte 5: invalid UTF-8 in a string (byte 0xff)`},
		{"invalid UTF-8 after escape", "\"\\n\xc3\"", `invalid JSON at byte 3: invalid UTF-8 in a string (byte 0xc3)`},
		{"invalid UTF-8 between escapes", "\"\\u00e9\xc3\\u00e9\"", `invalid JSON at byte 7: invalid UTF-8 in a string (byte 0xc3)`},
		{"invalid UTF-8 in key", "{\"\xed\xa0\x80\":1}", `invalid JSON at byte 2: invalid UTF-8 in a string (byte 0xed)`},
		{"out of range", `1e400`, `invalid JSON at byte 0: number is out of range`},
		{"negative out of range", `[-1e400]`, `invalid JSON at byte 1: number is out of range`},
		{"lone minus", `-`, `invalid JSON at byte 1: invalid number, expecting a digit`},
		{"minus letter", `-a`, `invalid JSON at byte 1: invalid number, expecting a digit`},
		{"dot without digits", `1.`, `invalid JSON at byte 2: invalid number, expecting a digit after '.'`},
		{"exponent without digits", `1e+`, `invalid JSON at byte 3: invalid number, expecting a digit in the exponent`},
		{"plus sign", `+1`, `invalid JSON at byte 0: unexpected '+', expecting a value`},
		{"NaN literal", `NaN`, `invalid JSON at byte 0: unexpected 'N', expecting a value`},
		{"single quotes", `'a'`, `invalid JSON at byte 0: unexpected '\'', expecting a value`},
		{"binary", "\x00", `invalid JSON at byte 0: unexpected byte 0x00, expecting a value`},
		{"too deep arrays", deep(MaxDepth+1, "[", "]"), `invalid JSON at byte 200: nesting deeper than 200 levels`},
		{"too deep objects", strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
			`invalid JSON at byte 1000: nesting deeper than 200 levels`},
		{"very deep", deep(100000, "[", "]"), `invalid JSON at byte 200: nesting deeper than 200 levels`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c, _ := newState(t)
			v, err := c.Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode(%q) = %v, want error", tt.in, v)
			}
			if err.Error() != tt.want {
				t.Errorf("Decode(%q) error\n got %s\nwant %s", tt.in, err, tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Errorf("error is %T, want *DecodeError", err)
			}
			// The codec stays usable after an error.
			if _, err := c.Decode([]byte(`[1,{"a":2}]`)); err != nil {
				t.Errorf("Decode after an error: %v", err)
			}
			if len(c.stack) != 0 {
				t.Errorf("value stack not reset: %d left", len(c.stack))
			}
		})
	}
}

func TestNestingLimitBothWays(t *testing.T) {
	L, c, _ := newState(t)
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	v, err := c.Decode([]byte(ok))
	if err != nil {
		t.Fatalf("Decode at the limit: %v", err)
	}
	if got := mustEncode(t, c, v); got != ok {
		t.Errorf("round trip at the limit differs")
	}
	// One more level, built in Lua.
	L.SetGlobal("v", v)
	deeper := eval(t, L, `return { v }`)
	_, err = c.Encode(deeper, "value")
	want := "value" + strings.Repeat("[1]", MaxDepth) + ": nesting deeper than 200 levels"
	if err == nil || err.Error() != want {
		t.Errorf("Encode past the limit: %v, want %s", err, want)
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name, lua, want string
	}{
		{"nil", `return nil`, `null`},
		{"empty table is an object", `return {}`, `{}`},
		{"marked empty array", `return mcp.array()`, `[]`},
		{"marked empty array from table", `return mcp.array({})`, `[]`},
		{"marked empty object", `return mcp.object()`, `{}`},
		{"sequence", `return {1, 2, 3}`, `[1,2,3]`},
		{"sequence of strings", `return {"a", "b"}`, `["a","b"]`},
		{"nulls in a sequence", `return {"x", mcp.null, "y", mcp.null}`, `["x",null,"y",null]`},
		{"object", `return {a = 1, b = {c = true}}`, `{"a":1,"b":{"c":true}}`},
		{"sorted keys", `return {b = 1, a = 2, ["a b"] = 3, B = 4}`, `{"B":4,"a":2,"a b":3,"b":1}`},
		{"object with numeric keys", `return mcp.object({"x", "y", [10] = "z", k = 1})`, `{"1":"x","10":"z","2":"y","k":1}`},
		{"object with negative key", `return mcp.object({[-3] = 1, [0] = 2})`, `{"-3":1,"0":2}`},
		{"array marker on a sequence", `return mcp.array({1, {}})`, `[1,{}]`},
		{"decoded array stays an array", `local t = mcp.json_decode("[]"); t[1] = 5; return t`, `[5]`},
		{"decoded object stays an object", `local t = mcp.json_decode("{}"); t[1] = 5; return t`, `{"1":5}`},
		{"shared subtable is not a cycle", `local s = {1}; return {a = s, b = s}`, `{"a":[1],"b":[1]}`},
		{"trailing nil removed", `local t = {1, 2, 3}; t[3] = nil; return t`, `[1,2]`},
		{"all removed", `local t = {1}; t[1] = nil; return t`, `{}`},
		{"removed key", `local t = {a = 1, b = 2}; t.a = nil; return t`, `{"b":2}`},
		{"integer", `return 2^53`, `9007199254740992`},
		{"2^53+1 is already 2^53 in Lua", `return 2^53 + 1`, `9007199254740992`},
		{"1e20", `return 1e20`, `100000000000000000000`},
		{"2^53+2", `return 2^53 + 2`, `9007199254740994`},
		{"2^63", `return 2^63`, `9223372036854775808`},
		{"large integral float is exact", `return 58623783269793928`, `58623783269793928`},
		{"-2^63", `return -2^63`, `-9223372036854775808`},
		{"1e21", `return 1e21`, `1e+21`},
		{"1e300", `return 1e300`, `1e+300`},
		{"minus zero", `return 0 / -1`, `0`},
		{"fraction", `return 1.5`, `1.5`},
		{"third", `return 1 / 3`, `0.3333333333333333`},
		{"tiny", `return 1e-7`, `1e-7`},
		{"small", `return 0.000001`, `0.000001`},
		{"negative tiny", `return -1.5e-10`, `-1.5e-10`},
		{"string escapes", `return "q\"b\\s/\n\r\t\b\f\1\31"`, `"q\"b\\s/\n\r\t\b\f\u0001\u001f"`},
		{"U+2028 and U+2029", `return "a\226\128\168b\226\128\169"`, `"a\u2028b\u2029"`},
		{"html", `return "<&>"`, `"<&>"`},
		{"utf-8", `return "héllo 😀"`, `"héllo 😀"`},
		{"booleans", `return {true, false}`, `[true,false]`},
		{"null at root", `return mcp.null`, `null`},
		{"identifier-like keys", `return {_a1 = 1}`, `{"_a1":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, c, _ := newState(t)
			v := eval(t, L, tt.lua)
			if got := mustEncode(t, c, v); got != tt.want {
				t.Errorf("Encode(%s) = %s, want %s", tt.lua, got, tt.want)
			}
			// json_encode from Lua gives the same text.
			L.SetGlobal("v", v)
			if got := eval(t, L, `return mcp.json_encode(v)`); got != lua.LString(tt.want) {
				t.Errorf("mcp.json_encode = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name, root, lua, want string
	}{
		{"function in content", "result", `return {content = {{type = "text"}, {data = function() end}}}`,
			`result.content[2].data: cannot encode a function`},
		{"function at root", "result", `return print`, `result: cannot encode a function`},
		{"nested function", "result", `return {a = {function() end}}`, `result.a[1]: cannot encode a function`},
		{"non-identifier key", "result", `return {["a-b"] = {f = print}}`, `result["a-b"].f: cannot encode a function`},
		{"keyword key", "result", `return {["end"] = print}`, `result["end"]: cannot encode a function`},
		{"digit key", "result", `return {["1x"] = print}`, `result["1x"]: cannot encode a function`},
		{"empty key", "result", `return {[""] = print}`, `result[""]: cannot encode a function`},
		{"marked object integer key", "result", `return mcp.object({[3] = print})`, `result[3]: cannot encode a function`},
		{"NaN", "result", `return {x = 0/0}`, `result.x: cannot encode NaN`},
		{"inf", "result", `return {1/0}`, `result[1]: cannot encode inf`},
		{"-inf", "result", `return {n = {-1/0}}`, `result.n[1]: cannot encode -inf`},
		{"cycle", "state", `local t = {}; t.self = t; return t`, `state.self: cannot encode a cycle (a table that contains itself)`},
		{"deep cycle", "state", `local t = {a = {b = {}}}; t.a.b[1] = t.a; return t`,
			`state.a.b[1]: cannot encode a cycle (a table that contains itself)`},
		{"thread", "result", `return {co = coroutine.create(function() end)}`, `result.co: cannot encode a thread (coroutine)`},
		{"channel", "result", `return {ch = channel.make()}`, `result.ch: cannot encode a channel`},
		{"invalid UTF-8 string", "result", `return {s = "ok\255"}`, `result.s: string is not valid UTF-8`},
		{"invalid UTF-8 key", "result", `return {["\255"] = 1}`, `result["\xff"]: key is not valid UTF-8`},
		{"truncated UTF-8", "result", `return {"\226\128"}`, `result[1]: string is not valid UTF-8`},
		{"hole", "result", `return {1, nil, 3}`, `result[2]: nil inside an array (use mcp.null for a JSON null)`},
		{"hole in marked array", "result", `local t = mcp.array(); t[2] = 1; return t`,
			`result[1]: nil inside an array (use mcp.null for a JSON null)`},
		{"mixed keys", "result", `return {1, 2, x = 3}`,
			`result: table mixes list items with the key "x" (mark it with mcp.object to encode an object)`},
		{"number key", "result", `return {[0] = "a"}`,
			`result: cannot encode a table with the number key 0 (mark it with mcp.object to make number keys strings)`},
		{"float key", "result", `return {[1.5] = "a"}`,
			`result: cannot encode a table with the number key 1.5 (mark it with mcp.object to make number keys strings)`},
		{"float key in object", "result", `return mcp.object({[1.5] = "a"})`,
			`result: cannot use the number key 1.5 as an object key (only integers become strings)`},
		{"boolean key", "result", `return {[true] = 1}`, `result: cannot encode a table key of type boolean`},
		{"table key", "result", `return {[{}] = 1}`, `result: cannot encode a table key of type table`},
		{"duplicate key", "result", `return mcp.object({"a", ["1"] = "b"})`,
			`result: object has the key "1" twice (as a number and as a string)`},
		{"array with a key", "result", `return mcp.array({1, x = 2})`, `result: array (mcp.array) has the non-index key "x"`},
		{"empty root", "", `return {a = {b = print}}`, `a.b: cannot encode a function`},
		{"empty root at root", "", `return print`, `cannot encode a function`},
		{"empty root index", "", `return {print}`, `[1]: cannot encode a function`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, c, _ := newState(t)
			v := eval(t, L, tt.lua)
			prefix := []byte("keep")
			out, err := c.AppendEncode(prefix, v, tt.root)
			if err == nil {
				t.Fatalf("Encode = %s, want error %s", out, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
			var ee *EncodeError
			if !errors.As(err, &ee) {
				t.Errorf("error is %T, want *EncodeError", err)
			}
			if string(out) != "keep" {
				t.Errorf("AppendEncode returned %q on error, want the prefix unchanged", out)
			}
			// The codec stays usable.
			if got := mustEncode(t, c, eval(t, L, `return {a = {1, 2}}`)); got != `{"a":[1,2]}` {
				t.Errorf("Encode after an error = %s", got)
			}
		})
	}
}

func TestEncodeUserdata(t *testing.T) {
	L, c, _ := newState(t)
	other := NewCodec(L) // another codec's null is just a userdata here
	tbl := L.NewTable()
	tbl.RawSetString("u", L.NewUserData())
	if _, err := c.Encode(tbl, "result"); err == nil || err.Error() != "result.u: cannot encode a userdata" {
		t.Errorf("userdata: %v", err)
	}
	tbl.RawSetString("u", other.Null())
	if _, err := c.Encode(tbl, "result"); err == nil || err.Error() != "result.u: cannot encode a userdata" {
		t.Errorf("foreign null: %v", err)
	}
}

func TestAppendEncode(t *testing.T) {
	L, c, _ := newState(t)
	out, err := c.AppendEncode([]byte(`{"result":`), eval(t, L, `return {ok = true}`), "result")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"result":{"ok":true}` {
		t.Errorf("got %s", out)
	}
}

// Encode must not return its scratch buffer: results of successive calls stay
// intact.
func TestEncodeResultsAreIndependent(t *testing.T) {
	L, c, _ := newState(t)
	a := mustEncode(t, c, eval(t, L, `return {"first"}`))
	b, _ := c.Encode(eval(t, L, `return {"second"}`), "v")
	if a != `["first"]` || string(b) != `["second"]` {
		t.Errorf("got %s and %s", a, b)
	}
}

// Numbers are written the way encoding/json writes float64 (which is how
// JavaScript does), except that -0 is 0 and integral values below 1e21 are
// written exactly; all read back to the same float64.
func TestNumbersMatchEncodingJSON(t *testing.T) {
	_, c, _ := newState(t)
	r := rand.New(rand.NewPCG(1, 2))
	values := []float64{1, -1, 0.5, 1e-6, 9.99999e-7, 1e21, 999999999999999900000, 1 << 53, 1<<53 + 2,
		math.MaxFloat64, math.SmallestNonzeroFloat64, -math.MaxFloat64, 123456.789, 1e-300}
	for range 20000 {
		values = append(values, math.Float64frombits(r.Uint64()), r.NormFloat64()*1e6, float64(r.Int64N(1<<60)-1<<59))
	}
	for _, f := range values {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		got, perr := appendNumber(nil, f)
		if perr != nil {
			t.Fatalf("appendNumber(%v): %v", f, perr)
		}
		want, _ := json.Marshal(f)
		if f == math.Trunc(f) && math.Abs(f) < 1e21 {
			want = []byte(strconv.FormatFloat(f, 'f', 0, 64))
		}
		if string(got) != string(want) {
			t.Fatalf("appendNumber(%v) = %s, encoding/json says %s", f, got, want)
		}
		v, err := c.Decode(got)
		if err != nil {
			t.Fatalf("Decode(%s): %v", got, err)
		}
		if float64(v.(lua.LNumber)) != f {
			t.Fatalf("Decode(%s) = %v, want %v", got, v, f)
		}
		// Also read the %g form, which takes the strconv path.
		g := strconv.FormatFloat(f, 'g', -1, 64)
		if v, err := c.Decode([]byte(g)); err != nil || float64(v.(lua.LNumber)) != f {
			t.Fatalf("Decode(%s) = %v, %v", g, v, err)
		}
	}
}

func TestMarkers(t *testing.T) {
	L, c, _ := newState(t)
	v := eval(t, L, `
		local a = {}
		assert(mcp.array(a) == a, "mcp.array returns its argument")
		local o = {}
		assert(mcp.object(o) == o, "mcp.object returns its argument")
		return {a = a, o = o, fresh = mcp.array(), plain = {}, re = mcp.object(mcp.array({}))}`)
	tbl := v.(*lua.LTable)
	get := func(k string) *lua.LTable { return tbl.RawGetString(k).(*lua.LTable) }
	if !IsArray(get("a")) || !IsArray(get("fresh")) || IsArray(get("plain")) || IsArray(get("o")) {
		t.Error("IsArray")
	}
	if !IsObject(get("o")) || IsObject(get("plain")) || IsObject(get("a")) || !IsObject(get("re")) {
		t.Error("IsObject")
	}
	if got := mustEncode(t, c, v); got != `{"a":[],"fresh":[],"o":{},"plain":{},"re":{}}` {
		t.Errorf("got %s", got)
	}
	// A marker from another state's codec is recognised too.
	other := NewCodec(lua.NewState())
	foreign := other.MarkArray(L.NewTable())
	if !IsArray(foreign) {
		t.Error("IsArray of a foreign marker")
	}
	if got := mustEncode(t, c, foreign); got != `[]` {
		t.Errorf("foreign marker encodes as %s", got)
	}
	// A user metatable is not a marker.
	user := eval(t, L, `return setmetatable({}, {__index = {}})`).(*lua.LTable)
	if IsArray(user) || IsObject(user) {
		t.Error("user metatable taken for a marker")
	}
	if ok := eval(t, L, `return (pcall(mcp.array, 5))`); ok != lua.LFalse {
		t.Error("mcp.array(5) did not raise")
	}
}

// Tables where Go code put an array-range key in the hash part (Lua never
// does) must not make the iteration loop forever.
func TestHashPartWithArrayKey(t *testing.T) {
	L, c, _ := newState(t)
	tbl := L.NewTable()
	tbl.RawSetString("a", lua.LNumber(1))
	tbl.RawSetH(lua.LNumber(2), lua.LString("hidden")) // invisible to Lua's t[2]
	tbl.RawSetString("b", lua.LNumber(2))
	if got := mustEncode(t, c, tbl); got != `{"a":1,"b":2}` {
		t.Errorf("got %s", got)
	}
	cl, _ := c.Clone(tbl)
	if got := mustEncode(t, c, cl); got != `{"a":1,"b":2}` {
		t.Errorf("clone encodes as %s", got)
	}
}

func TestInternCacheBounded(t *testing.T) {
	_, c, _ := newState(t)
	var b strings.Builder
	b.WriteString("{")
	for i := range 3 * maxInternEntries {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	b.WriteString("}")
	v, err := c.Decode([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.intern); n > maxInternEntries {
		t.Errorf("intern cache holds %d entries", n)
	}
	if got := v.(*lua.LTable).RawGetString("k700"); got != lua.LNumber(1) {
		t.Errorf("k700 = %v", got)
	}
}
