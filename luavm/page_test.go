package luavm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
