package bridge

import "testing"

// TestEncodeProtocol: the values the MCP schema defines are written with its
// roles, so that an empty table where the schema has a list (an annotation's
// audience, an icon's sizes, a model preference's hints) is [], at any depth
// the schema nests them; what the script nests under keys of its own
// (_meta, a tool's input, structured content) is written as it wrote it.
func TestEncodeProtocol(t *testing.T) {
	tests := []struct {
		name, lua string
		shape     Shape
		want      string
	}{
		{"content annotations", `return { { type = "text", text = "hi", annotations = { audience = {} } } }`, List,
			`[{"annotations":{"audience":[]},"text":"hi","type":"text"}]`},
		{"resource link icons", `return { { type = "resource_link", uri = "a:b", name = "b", icons = { { src = "a:i", sizes = {} } } } }`, List,
			`[{"icons":[{"sizes":[],"src":"a:i"}],"name":"b","type":"resource_link","uri":"a:b"}]`},
		{"empty icons inside an item", `return { { type = "resource_link", uri = "a:b", name = "b", icons = {} } }`, List,
			`[{"icons":[],"name":"b","type":"resource_link","uri":"a:b"}]`},
		{"embedded resource", `return { { type = "resource", resource = { uri = "a:b", text = "", annotations = { audience = {} } } } }`, List,
			`[{"resource":{"annotations":{"audience":[]},"text":"","uri":"a:b"},"type":"resource"}]`},
		{"prompt message", `return { { role = "user", content = { type = "text", text = "x", annotations = { audience = {} } } } }`, List,
			`[{"content":{"annotations":{"audience":[]},"text":"x","type":"text"},"role":"user"}]`},
		{"request params", `return { messages = {}, modelPreferences = { hints = {} }, stopSequences = {}, metadata = { hints = {} } }`, Protocol,
			`{"messages":[],"metadata":{"hints":{}},"modelPreferences":{"hints":[]},"stopSequences":[]}`},
		{"tool result in a sampling message", `return { { role = "user", content = { { type = "tool_result", toolUseId = "1", content = {} } } } }`, List,
			`[{"content":[{"content":[],"toolUseId":"1","type":"tool_result"}],"role":"user"}]`},
		{"schemas inside", `return { tools = { { name = "t", inputSchema = { type = "object", required = {} } } } }`, Protocol,
			`{"tools":[{"inputSchema":{"required":[],"type":"object"},"name":"t"}]}`},
		{"the script's own keys pass as written", `return { { type = "text", text = "", _meta = { audience = {}, content = {} } } }`, List,
			`[{"_meta":{"audience":{},"content":{}},"text":"","type":"text"}]`},
		{"marks win", `return { { type = "text", text = "", annotations = { audience = mcp.object() } } }`, List,
			`[{"annotations":{"audience":{}},"text":"","type":"text"}]`},
		{"an object of the script's own", `return { annotations = { audience = {} }, icons = {} }`, Object,
			`{"annotations":{"audience":{}},"icons":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, c, _ := newState(t)
			got, err := c.EncodeAs(eval(t, L, tt.lua), "result", tt.shape)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// The roles end with the value: the next encoding is plain.
			if got := mustEncode(t, c, eval(t, L, `return { annotations = { audience = {} } }`)); got != `{"annotations":{"audience":{}}}` {
				t.Errorf("after a protocol value, a plain encoding gave %s", got)
			}
		})
	}
}
