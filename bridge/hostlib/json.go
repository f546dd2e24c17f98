package hostlib

import (
	"bytes"
	"encoding/json"

	lua "github.com/yuin/gopher-lua"
)

// jsonModule is `json`: JSON text <-> Lua values with the rules of
// mcp.json_encode and mcp.json_decode (script-api.md "Values between JSON and
// Lua"), but with the outcome convention of the host library: text that is
// not JSON, or a value that has no JSON form, is nil, message.
var jsonModule = module{
	funcs: []function{
		{"encode", jsonEncode},
		{"decode", jsonDecode},
		{"array", jsonArray},
		{"object", jsonObject},
	},
	extra: func(s *State, t *lua.LTable) { t.RawSetString("null", s.codec.Null()) },
}

// json.encode(v [, {indent = true}]) -> text | nil, message
func jsonEncode(s *State, L *lua.LState) int {
	opts := optTable(L, 2)
	onlyOptions(L, opts, "json.encode", "indent")
	indent := boolField(L, opts, "json.encode", "indent", false)
	b, err := s.codec.Encode(L.Get(1), "value")
	if err != nil {
		return fail(L, "json: %v", err)
	}
	if indent {
		// Indenting a deep value multiplies its size: each line repeats
		// its depth. Refuse it before building what will not fit.
		size := indentedSize(b)
		if room(L, size) < size {
			return fail(L, "%v", budgetError(L, "json.encode", size))
		}
		var out bytes.Buffer
		out.Grow(int(size))
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return fail(L, "json: %v", err)
		}
		b = out.Bytes()
	}
	// Encode checks the text against the room the budget has left, but
	// charges nothing: the string is charged here.
	if err := keep(L, "json.encode", len(b)); err != nil {
		return fail(L, "%v", err)
	}
	L.Push(lua.LString(b))
	return 1
}

// json.decode(text) -> value | nil, message
func jsonDecode(s *State, L *lua.LState) int {
	v, err := s.codec.Decode([]byte(L.CheckString(1)))
	if err != nil {
		return fail(L, "json: %v", err)
	}
	L.Push(v)
	return 1
}

// json.array([t]) marks t (or a new table) to encode as an array.
func jsonArray(s *State, L *lua.LState) int {
	L.Push(s.codec.MarkArray(tableOrNew(L)))
	return 1
}

// json.object([t]) marks t (or a new table) to encode as an object.
func jsonObject(s *State, L *lua.LState) int {
	L.Push(s.codec.MarkObject(tableOrNew(L)))
	return 1
}

func tableOrNew(L *lua.LState) *lua.LTable {
	if t := optTable(L, 1); t != nil {
		return t
	}
	return L.CreateTable(0, 0)
}

// indentedSize is an upper bound of the length of compact JSON b indented
// by json.Indent with two spaces: every bracket and comma may start a line
// indented to its depth, every colon gains a space.
func indentedSize(b []byte) int64 {
	size := int64(len(b))
	depth := int64(0)
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			size += 1 + 2*depth
		case c == '}' || c == ']':
			depth--
			size += 1 + 2*depth
		case c == ',':
			size += 1 + 2*depth
		case c == ':':
			size++
		}
	}
	return size
}
