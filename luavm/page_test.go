package luavm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// TestPage checks that every window of every list is the matching slice of
// the whole list, with the whole list's length.
func TestPage(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	ctx := context.Background()
	p := ss.(mcp.Pager)
	for kind, whole := range map[mcp.ListKind]func(context.Context) ([]mcp.Item, error){
		mcp.ListTools:             ss.Tools,
		mcp.ListResources:         ss.Resources,
		mcp.ListResourceTemplates: ss.ResourceTemplates,
		mcp.ListPrompts:           ss.Prompts,
	} {
		all, err := whole(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range [][2]int{{0, 1}, {0, 2}, {1, 2}, {0, 100}, {2, 100}, {len(all), 5}, {len(all) + 10, 5}} {
			items, total, err := p.Page(ctx, kind, w[0], w[1])
			if err != nil {
				t.Fatalf("kind %d window %v: %v", kind, w, err)
			}
			want := all[min(w[0], len(all)):min(w[0]+w[1], len(all))]
			if total != len(all) || len(items) != len(want) {
				t.Fatalf("kind %d window %v: %d items of %d, want %d of %d", kind, w, len(items), total, len(want), len(all))
			}
			for i := range want {
				if items[i].Key != want[i].Key || string(items[i].JSON) != string(want[i].JSON) {
					t.Fatalf("kind %d window %v item %d: %s %s, want %s %s", kind, w, i, items[i].Key, items[i].JSON, want[i].Key, want[i].JSON)
				}
			}
		}
	}
}

// TestPageBadEntries: an entry without its key field is a crash on every
// page; one that cannot be encoded is a crash on its page, named by its path.
func TestPageBadEntries(t *testing.T) {
	dir := t.TempDir()
	src := `return {
  init = function() return { name = "bad", version = "1" }, { tools = {} }, {} end,
  tools = function(state)
    local list = {}
    for i = 1, 10 do list[i] = { name = "t" .. i, input_schema = { type = "object" } } end
    if state.nokey then list[8] = { description = "no name" } end
    if state.fn then list[8].input_schema.f = print end
    return list
  end,
  -- t1 sets the state from its arguments.
  handle_tool = function(name, args, ctx, state)
    return "ok", { nokey = args.nokey, fn = args.fn }
  end,
}`
	if err := os.WriteFile(filepath.Join(dir, "bad.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger()
	s, err := Load(filepath.Join(dir, "bad.lua"), Config{Dir: dir, Logger: logger, PoolSize: 1, Pushes: everywhere(newPushes())})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, _ := open(t, s, "sid")
	ctx := context.Background()
	p := ss.(mcp.Pager)
	set := func(args string) {
		t.Helper()
		if _, err := ss.CallTool(ctx, testCall("sid"), "t1", json.RawMessage(args)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(offset int, want string) {
		t.Helper()
		_, total, err := p.Page(ctx, mcp.ListTools, offset, 5)
		switch {
		case want == "" && (err != nil || total != 10):
			t.Fatalf("page at %d: %d, %v", offset, total, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Fatalf("page at %d: %v, want an error with %q", offset, err, want)
		}
	}
	check(0, "")
	check(5, "")
	set(`{"nokey":true}`)
	check(0, "tools[8].name: want a string")
	check(5, "tools[8].name: want a string")
	set(`{"fn":true}`)
	check(0, "")
	check(5, "tools[8].input_schema.f")
}

// TestDescriptorShapes: the list entries reach the wire in the shapes the
// MCP schema gives them, whatever the script's tables look like: a prompt
// with arguments = {} was sent "arguments":{} and a tool with icons = {}
// "icons":{}, both refused by a client that checks the schema (with the
// whole list); an empty table there is now [], a schema is an object, and a
// value of the other kind is a crash naming it. luamcp check reports the
// same, and server_info's icons are a list too.
func TestDescriptorShapes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		kind  mcp.ListKind
		entry string // the Lua entry, in a list of its kind
		want  string // its JSON; "" for a crash
		crash string
	}{
		{"prompt empty arguments", mcp.ListPrompts, `{ name = "p", arguments = {} }`, `{"arguments":[],"name":"p"}`, ""},
		{"prompt arguments", mcp.ListPrompts, `{ name = "p", arguments = { { name = "a" } } }`, `{"arguments":[{"name":"a"}],"name":"p"}`, ""},
		{"prompt arguments object", mcp.ListPrompts, `{ name = "p", arguments = { name = "a" } }`, "", `prompts[1].arguments: want a list, got a table with the key "name"`},
		{"prompt empty icons", mcp.ListPrompts, `{ name = "p", icons = {} }`, `{"icons":[],"name":"p"}`, ""},
		{"tool empty icons", mcp.ListTools, `{ name = "t", input_schema = { type = "object" }, icons = {} }`, `{"icons":[],"inputSchema":{"type":"object"},"name":"t"}`, ""},
		{"tool marked icons", mcp.ListTools, `{ name = "t", input_schema = { type = "object" }, icons = mcp.object({}) }`, "", "tools[1].icons: want a list, got a table marked as the other kind"},
		{"tool schema", mcp.ListTools, `{ name = "t", input_schema = { type = "object", properties = {} } }`, `{"inputSchema":{"properties":{},"type":"object"},"name":"t"}`, ""},
		{"tool schema empty required", mcp.ListTools, `{ name = "t", input_schema = { type = "object", properties = {}, required = {} } }`, `{"inputSchema":{"properties":{},"required":[],"type":"object"},"name":"t"}`, ""},
		{"tool schema list", mcp.ListTools, `{ name = "t", input_schema = { "object" } }`, "", "tools[1].input_schema: want an object (a table with string keys), got a list"},
		{"tool output schema string", mcp.ListTools, `{ name = "t", input_schema = { type = "object" }, outputSchema = "x" }`, "", `tools[1].outputSchema: want an object (a table with string keys), got the string "x"`},
		{"resource empty icons", mcp.ListResources, `{ uri = "r://x", name = "x", icons = {} }`, `{"icons":[],"name":"x","uri":"r://x"}`, ""},
		{"template empty icons", mcp.ListResourceTemplates, `{ uri_template = "r://{x}", name = "x", icons = {} }`, `{"icons":[],"name":"x","uriTemplate":"r://{x}"}`, ""},
		// inside an entry, the lists of the MCP schema are lists at any depth,
		// and the script's own keys pass as written (script-api.md "Descriptors")
		{"nested audience", mcp.ListResources, `{ uri = "r://x", name = "x", annotations = { audience = {} } }`, `{"annotations":{"audience":[]},"name":"x","uri":"r://x"}`, ""},
		{"icon sizes", mcp.ListPrompts, `{ name = "p", icons = { { src = "https://x/i.png", sizes = {} } } }`, `{"icons":[{"sizes":[],"src":"https://x/i.png"}],"name":"p"}`, ""},
		{"own keys as written", mcp.ListResources, `{ uri = "r://x", name = "x", _meta = { audience = {} } }`, `{"_meta":{"audience":{}},"name":"x","uri":"r://x"}`, ""},
		{"annotations a list", mcp.ListTools, `{ name = "t", input_schema = { type = "object" }, annotations = { "readOnlyHint" } }`, "", "annotations: want an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lists := map[mcp.ListKind]string{mcp.ListTools: "{}", mcp.ListResources: "{}", mcp.ListResourceTemplates: "{}", mcp.ListPrompts: "{}"}
			lists[tt.kind] = "{ " + tt.entry + " }"
			src := `local mcp = require("mcp")
return {
  init = function() return { name = "shapes", version = "1", icons = {} }, { tools = {}, resources = {}, prompts = {} }, {} end,
  tools = function() return ` + lists[mcp.ListTools] + ` end,
  handle_tool = function() return "ok" end,
  resources = function() return ` + lists[mcp.ListResources] + ` end,
  resource_templates = function() return ` + lists[mcp.ListResourceTemplates] + ` end,
  read_resource = function() return "x" end,
  prompts = function() return ` + lists[mcp.ListPrompts] + ` end,
  get_prompt = function() return { messages = {} } end,
}`
			dir := t.TempDir()
			path := filepath.Join(dir, "shapes.lua")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			logger, _ := newLogger()
			s, err := Load(path, Config{Dir: dir, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ss, res := open(t, s, "sid")
			jsonEqual(t, string(res.ServerInfo), `{"icons":[],"name":"shapes","version":"1"}`)
			items, _, err := ss.(mcp.Pager).Page(context.Background(), tt.kind, 0, 10)
			_, problems := Check(path, Config{Dir: dir, Logger: logger})
			if tt.crash != "" {
				if !isCrash(err) {
					t.Fatalf("want a crash, got %v, %v", items, err)
				}
				contains(t, err.Error(), tt.crash)
				if !slices.ContainsFunc(problems, func(p Problem) bool { return strings.Contains(p.Message, tt.crash) }) {
					t.Errorf("check: %v, want a problem with %q", problems, tt.crash)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != 0 {
				t.Errorf("check: %v, want none", problems)
			}
			if len(items) != 1 {
				t.Fatalf("%d items, want 1", len(items))
			}
			jsonEqual(t, string(items[0].JSON), tt.want)
		})
	}
}
