package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lists given as tables, built by constant functions or read from the state
// (script-api.md "Lists"), through the official Go SDK client: tools/call
// must find what tools/list shows at that moment, whatever luamcp reuses.

const listsStatic = `
local TOOLS = {
  { name = "echo", description = "echo", input_schema = { type = "object", properties = { text = { type = "string" } } } },
  { name = "add", description = "add a tool", input_schema = { type = "object" } },
}
return {
  route = { sessions = true },
  init = function() return { name = "static", version = "1" }, { tools = {}, prompts = {} }, {} end,
  tools = TOOLS,
  handle_tool = function(name, args, ctx, state)
    if name == "add" then
      TOOLS[#TOOLS + 1] = { name = "added", description = "added", input_schema = { type = "object" } }
      return "ok"
    end
    return name .. ":" .. tostring(args.text)
  end,
  prompts = { { name = "greet", description = "a greeting" } },
  get_prompt = function(name) return { messages = { { role = "user", content = { type = "text", text = "hello" } } } } end,
}
`

const listsState = `
return {
  route = { sessions = true, reuse_lists = true },
  init = function() return { name = "state", version = "1" }, { tools = {} }, { unlocked = false } end,
  tools = function(state)
    local out = {
      { name = "unlock", description = "unlock", input_schema = { type = "object" } },
      { name = "lock", description = "lock", input_schema = { type = "object" } },
    }
    if state.unlocked then
      out[#out + 1] = { name = "secret", description = "secret", input_schema = { type = "object" } }
    end
    return out
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "unlock" then state.unlocked = true end
    if name == "lock" then state.unlocked = false end
    return name
  end,
}
`

const listsBuilt = `
return {
  route = { sessions = true, page_size = 30 },
  init = function() return { name = "built", version = "1" }, { tools = {} }, { n = 0 } end,
  tools = function(state)
    local out = {}
    for i = 1, 100 do
      out[i] = { name = "tool" .. i, description = "Tool " .. i, input_schema = { type = "object" } }
    end
    return out
  end,
  handle_tool = function(name, args, ctx, state)
    state.n = state.n + 1
    return name .. " " .. state.n
  end,
}
`

func TestListsGoSDK(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"static": listsStatic, "state": listsState, "built": listsBuilt} {
		if err := os.WriteFile(filepath.Join(dir, name+".lua"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := startHost(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	toolNames := func(c *goClient) []string {
		return listed(t, "Tools", c.Tools(ctx, nil), func(tool *sdk.Tool) string { return tool.Name })
	}
	call := func(c *goClient, name string) (string, error) {
		res, err := c.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			return "", err
		}
		return goText(t, res), nil
	}
	mustCall := func(c *goClient, name, want string) {
		t.Helper()
		got, err := call(c, name)
		if err != nil || got != want {
			t.Fatalf("tools/call %s = %q, %v; want %q", name, got, err, want)
		}
	}
	mustFail := func(c *goClient, name string) {
		t.Helper()
		if got, err := call(c, name); err == nil {
			t.Fatalf("tools/call %s = %q, want an unknown-tool error", name, got)
		}
	}

	t.Run("static table", func(t *testing.T) {
		c := connectGo(t, srv.url("static"), nil, "2025-11-25")
		if got := toolNames(c); !slices.Equal(got, []string{"echo", "add"}) {
			t.Fatalf("tools/list = %v", got)
		}
		mustCall(c, "echo", "echo:hi")
		mustFail(c, "added")
		mustCall(c, "add", "ok")
		mustCall(c, "added", "added:hi")
		if got := toolNames(c); !slices.Equal(got, []string{"echo", "add", "added"}) {
			t.Fatalf("tools/list after add = %v", got)
		}
		if _, err := c.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet"}); err != nil {
			t.Fatalf("prompts/get greet: %v", err)
		}
		if _, err := c.GetPrompt(ctx, &sdk.GetPromptParams{Name: "nope"}); err == nil {
			t.Fatal("prompts/get nope succeeded")
		}
	})

	t.Run("function of the state", func(t *testing.T) {
		c := connectGo(t, srv.url("state"), nil, "2025-11-25")
		mustFail(c, "secret")
		mustCall(c, "unlock", "unlock")
		mustCall(c, "secret", "secret")
		if got := toolNames(c); !slices.Contains(got, "secret") {
			t.Fatalf("tools/list after unlock = %v", got)
		}
		mustCall(c, "lock", "lock")
		mustFail(c, "secret")
		// Another session has its own state, and so its own list.
		other := connectGo(t, srv.url("state"), nil, "2025-11-25")
		mustCall(c, "unlock", "unlock")
		mustFail(other, "secret")
		mustCall(c, "secret", "secret")
	})

	t.Run("100 tools built in tools()", func(t *testing.T) {
		c := connectGo(t, srv.url("built"), nil, "2025-11-25")
		want := make([]string, 100)
		for i := range want {
			want[i] = fmt.Sprintf("tool%d", i+1)
		}
		// Pages of 30, in the script's order, before and after calls.
		if got := toolNames(c); !slices.Equal(got, want) {
			t.Fatalf("tools/list = %v", got)
		}
		for i, name := range []string{"tool100", "tool1", "tool57", "tool100"} {
			mustCall(c, name, fmt.Sprintf("%s %d", name, i+1))
		}
		mustFail(c, "tool101")
		if got := toolNames(c); !slices.Equal(got, want) {
			t.Fatalf("tools/list after calls = %v", got)
		}
		page, err := c.ListTools(ctx, &sdk.ListToolsParams{})
		if err != nil || len(page.Tools) != 30 || page.NextCursor == "" || !strings.HasPrefix(page.Tools[0].Name, "tool1") {
			t.Fatalf("first page: %d tools, cursor %q, %v", len(page.Tools), page.NextCursor, err)
		}
	})
}
