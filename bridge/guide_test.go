package bridge

import (
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestEncodeGuided checks that a tool's output_schema decides what an empty
// table in its structured content is: [] where the schema says array.
// Without the guide each of these went out as {} and a checking client
// (the TypeScript SDK) refused the result.
func TestEncodeGuided(t *testing.T) {
	tests := []struct {
		name, schema, value, want string
	}{
		{"property", `{ type = "object", properties = { items = { type = "array" } } }`,
			`{ items = {}, other = {} }`, `{"items":[],"other":{}}`},
		{"type list", `{ properties = { a = { type = { "array", "null" } }, b = { type = { "array", "object" } } } }`,
			`{ a = {}, b = {} }`, `{"a":[],"b":{}}`},
		{"nested items", `{ properties = { rows = { type = "array", items = { type = "object", properties = { tags = { type = "array" } } } } } }`,
			`{ rows = { { tags = {} }, { tags = { "x" } } } }`, `{"rows":[{"tags":[]},{"tags":["x"]}]}`},
		{"array of arrays", `{ properties = { m = { type = "array", items = { type = "array" } } } }`,
			`{ m = { {}, { 1 } } }`, `{"m":[[],[1]]}`},
		{"prefixItems", `{ properties = { p = { type = "array", prefixItems = { { type = "object" }, { type = "array" } } } } }`,
			`{ p = { {}, {} } }`, `{"p":[{},[]]}`},
		{"additionalProperties", `{ type = "object", additionalProperties = { type = "array" } }`,
			`{ x = {}, y = { 1 } }`, `{"x":[],"y":[1]}`},
		{"$defs ref", `{ properties = { l = { ["$ref"] = "#/$defs/list" } }, ["$defs"] = { list = { type = "array" } } }`,
			`{ l = {} }`, `{"l":[]}`},
		{"definitions ref", `{ properties = { l = { ["$ref"] = "#/definitions/list" } }, definitions = { list = { type = "array" } } }`,
			`{ l = {} }`, `{"l":[]}`},
		{"ref cycle ends", `{ properties = { l = { ["$ref"] = "#/$defs/a" } }, ["$defs"] = { a = { ["$ref"] = "#/$defs/a" } } }`,
			`{ l = {} }`, `{"l":{}}`},
		{"root ref", `{ type = "object", properties = { kids = { type = "array", items = { ["$ref"] = "#" } }, more = { type = "array" } } }`,
			`{ kids = { { kids = {}, more = {} } } }`, `{"kids":[{"kids":[],"more":[]}]}`},
		{"marks win", `{ properties = { a = { type = "array" } } }`,
			`{ a = mcp.object() }`, `{"a":{}}`},
		{"unknown keys stay", `{ properties = { a = { type = "array" } } }`,
			`{ b = {}, a = { {} } }`, `{"a":[{}],"b":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, c, _ := newState(t)
			schema := eval(t, L, "return "+tt.schema).(*lua.LTable)
			got, err := c.AppendEncodeGuided(nil, eval(t, L, "return "+tt.value), "structured_content", schema)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// The guide ends with the value: the next encoding is plain.
			if got := mustEncode(t, c, eval(t, L, `return { items = {}, a = {} }`)); got != `{"a":{},"items":{}}` {
				t.Errorf("after a guided value, a plain encoding gave %s", got)
			}
		})
	}
}
