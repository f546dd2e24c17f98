package tests

import (
	"os"
	"path/filepath"
	"testing"
)

// structuredScript's tool declares an output_schema whose members are
// arrays, and returns them as Lua tables, empty when it found nothing: the
// natural way to write it.
const structuredScript = `
return {
  init = function() return { name = "search", version = "1" }, { tools = {} }, {} end,
  tools = {
    { name = "search", description = "finds things", input_schema = { type = "object" },
      output_schema = {
        type = "object", required = { "items", "total" },
        properties = {
          items = { type = "array", items = { ["$ref"] = "#/$defs/item" } },
          total = { type = "integer" },
        },
        ["$defs"] = { item = { type = "object", properties = { name = { type = "string" }, tags = { type = "array" } } } },
      } },
  },
  handle_tool = function(name, args)
    local items = {}
    if args.one then items[1] = { name = "a", tags = {} } end
    return { content = { { type = "text", text = #items .. " found" } }, structured_content = { items = items, total = #items } }
  end,
}`

// TestTSSDKStructuredEmptyList: the official TypeScript SDK validates a
// result's structuredContent against the tool's output schema. An empty
// table where the schema says array went out as {} and the SDK refused the
// call (-32602 "Structured content does not match the tool's output
// schema"); the schema now guides the encoding ([]).
func TestTSSDKStructuredEmptyList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "search.lua"), []byte(structuredScript), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startHost(t, dir)
	tsScenario(t, "structured", s.url("search"))
}
