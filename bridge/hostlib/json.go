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
	indent := boolField(L, opts, "json.encode", "indent", false)
	b, err := s.codec.Encode(L.Get(1), "value")
	if err != nil {
		return fail(L, "json: %v", err)
	}
	if indent {
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return fail(L, "json: %v", err)
		}
		b = out.Bytes()
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
