package bridge

import "testing"

// TestEncodeSchema: a JSON Schema written in Lua is encoded keyword by
// keyword, so that an empty table is [] where the keyword takes a list and
// {} where it takes an object or a schema, at any depth, and a property
// named like a keyword is a schema still.
func TestEncodeSchema(t *testing.T) {
	tests := []struct{ name, lua, want string }{
		{"required", `return { type = "object", properties = {}, required = {} }`,
			`{"properties":{},"required":[],"type":"object"}`},
		{"nested", `return { type = "object", properties = { tags = { type = "array", items = {}, enum = {} } } }`,
			`{"properties":{"tags":{"enum":[],"items":{},"type":"array"}},"type":"object"}`},
		{"properties named like keywords", `return { properties = { required = {}, enum = { type = "string" } } }`,
			`{"properties":{"enum":{"type":"string"},"required":{}}}`},
		{"lists of schemas", `return { anyOf = { {}, { required = {} } }, allOf = {}, prefixItems = {} }`,
			`{"allOf":[],"anyOf":[{},{"required":[]}],"prefixItems":[]}`},
		{"defs and dependentRequired", `return { ["$defs"] = { a = { required = {} } }, dependentRequired = { a = {} } }`,
			`{"$defs":{"a":{"required":[]}},"dependentRequired":{"a":[]}}`},
		{"draft-07 items list", `return { items = { { required = {} }, {} } }`,
			`{"items":[{"required":[]},{}]}`},
		{"plain values pass as written", `return { default = {}, const = {}, examples = {}, ["x-meta"] = { list = {} } }`,
			`{"const":{},"default":{},"examples":[],"x-meta":{"list":{}}}`},
		{"marks win", `return { required = mcp.object(), default = mcp.array() }`,
			`{"default":[],"required":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, c, _ := newState(t)
			got, err := c.EncodeAs(eval(t, L, tt.lua), "input_schema", Schema)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// The role ends with the schema: the next encoding is plain.
			if got := mustEncode(t, c, eval(t, L, `return { required = {} }`)); got != `{"required":{}}` {
				t.Errorf("after a schema, a plain encoding gave %s", got)
			}
		})
	}
	L, c, _ := newState(t)
	for _, bad := range []string{`return { 1, 2 }`, `return "object"`, `return mcp.array()`} {
		if _, err := c.EncodeAs(eval(t, L, bad), "input_schema", Schema); err == nil {
			t.Errorf("%s: a schema that is no object was encoded", bad)
		}
	}
}
