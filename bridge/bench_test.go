package bridge

import (
	"encoding/json"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// benchArgs is a typical tools/call arguments object.
var benchArgs = []byte(`{"city":"Paris","units":"metric","days":3,` +
	`"include":["temperature","wind","humidity"],"options":{"verbose":false,"lang":"en"}}`)

// benchResult is a typical tool result as a script builds it.
const benchResult = `return {
	content = {{type = "text", text = "Paris: 21.5°C, sunny, wind 12 km/h from the west. Tomorrow: 19°C, light rain."}},
	structuredContent = {
		temperature = 21.5, conditions = "sunny",
		wind = {speed = 12, direction = "W"},
		forecast = {{day = 1, high = 19, low = 12}, {day = 2, high = 22, low = 14}},
	},
	isError = false,
}`

func BenchmarkDecode(b *testing.B) {
	_, c, _ := newState(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(benchArgs)))
	for b.Loop() {
		if _, err := c.Decode(benchArgs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	L, c, _ := newState(b)
	v := eval(b, L, benchResult)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(v, "result"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEncode is Encode into a caller's buffer (no result copy).
func BenchmarkAppendEncode(b *testing.B) {
	L, c, _ := newState(b)
	v := eval(b, L, benchResult)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = c.AppendEncode(buf[:0], v, "result"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckContent is the check of a tool result's content blocks
// (CheckContent): benchResult's one text block, and five blocks of the
// five kinds, encoded against it (AppendEncode of the same list).
func BenchmarkCheckContent(b *testing.B) {
	L, c, _ := newState(b)
	one := eval(b, L, benchResult).(*lua.LTable).RawGetString("content").(*lua.LTable)
	five := eval(b, L, `return {
		{type = "text", text = "hello"},
		{type = "image", data = "aGVsbG8=", mimeType = "image/png"},
		{type = "audio", data = "aGVsbG8=", mimeType = "audio/wav"},
		{type = "resource_link", uri = "mem://x", name = "x"},
		{type = "resource", resource = {uri = "mem://x", text = "hello"}},
	}`).(*lua.LTable)
	for _, bc := range []struct {
		name string
		list *lua.LTable
	}{{"blocks=1", one}, {"blocks=5", five}} {
		b.Run(bc.name+"/check", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.CheckContent(bc.list, "result"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/encode", func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = c.AppendEncode(buf[:0], bc.list, "result"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClone is the per-call backup of a small session state.
func BenchmarkClone(b *testing.B) {
	L, c, _ := newState(b)
	v := eval(b, L, `return {count = 3, user = {name = "ada", tags = {"a", "b"}}, history = {1, 2, 3, 4}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Clone(v); err != nil {
			b.Fatal(err)
		}
	}
}

// The standard library on the same data, for scale (it builds Go values, not
// Lua ones).
func BenchmarkStdlibDecode(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchArgs)))
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(benchArgs, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdlibEncode(b *testing.B) {
	v := map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "Paris: 21.5°C, sunny, wind 12 km/h from the west. Tomorrow: 19°C, light rain."}},
		"structuredContent": map[string]any{
			"temperature": 21.5, "conditions": "sunny",
			"wind":     map[string]any{"speed": 12, "direction": "W"},
			"forecast": []any{map[string]any{"day": 1, "high": 19, "low": 12}, map[string]any{"day": 2, "high": 22, "low": 14}},
		},
		"isError": false,
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}
