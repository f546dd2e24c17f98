package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// listsScript is a server whose lists are static tables or functions
// (TOOLS, RESOURCES, TEMPLATES, PROMPTS are replaced), with a counter of
// the runs of its tools function that the tool "runs" reports.
const listsScript = `
local runs = 0
local calls = 0
local STATIC = { { name = "runs" }, { name = "grow" }, { name = "rename" } }
local function tools(state)
  runs = runs + 1
  local out = { { name = "runs" }, { name = "unlock" }, { name = "lock" }, { name = "bump" }, { name = "crash" }, { name = "touch" } }
  if state and state.unlocked then out[#out + 1] = { name = "secret" } end
  return out
end
local RES = { { uri = "mem://a", name = "a" } }
local E = { name = "shared" }
return {
  route = { sessions = SESSIONS, reuse_lists = REUSE },
  init = function()
    local caps = { tools = {}, resources = (RESOURCES) and {} or nil, prompts = (PROMPTS) and {} or nil }
    return { name = "l", version = "1" }, caps, { unlocked = false, n = 0 }
  end,
  tools = TOOLS,
  handle_tool = function(name, args, ctx, state)
    if name == "runs" then return tostring(runs) end
    if name == "unlock" then state.unlocked = true end
    if name == "lock" then state.unlocked = false end
    if name == "bump" then state.n = state.n + 1 end
    if name == "grow" then STATIC[#STATIC + 1] = { name = "grown" } end
    if name == "rename" then STATIC[1].name = "renamed" end
    if name == "crash" then state.unlocked = true error("boom") end
    if name == "rename_shared" then E.name = "moved" end
    if name == "touch" then RES[1].name = "a" end
    return name
  end,
  resources = RESOURCES,
  resource_templates = TEMPLATES,
  read_resource = function(uri, state, vars) return "read " .. uri .. (vars.id or "") end,
  prompts = PROMPTS,
  get_prompt = function(name) return { messages = {}, description = name } end,
}
`

// TestListLookups drives tools/call, resources/read and prompts/get through
// sequences of steps on static and function lists: a lookup must see every
// change a call made to the list or to the state it depends on, and must not
// run the function again while neither changed.
func TestListLookups(t *testing.T) {
	type step struct{ kind, name, want string } // want "!" + code: that error
	tool := func(name, want string) step { return step{"tool", name, want} }
	read := func(uri, want string) step { return step{"read", uri, want} }
	prompt := func(name, want string) step { return step{"prompt", name, want} }
	// cached: the tools list the lookups hold is the one the last cached
	// step saw ("same"), another ("new") or none ("none").
	cached := func(want string) step { return step{"cached", "", want} }
	constant := `function(state) local out = {} for i = 1, 3 do out[i] = { name = "t" .. i } end out[4] = { name = "runs" } return out end`
	static := map[string]string{"TOOLS": "STATIC"}
	fn := map[string]string{"TOOLS": "tools"}
	tests := []struct {
		name  string
		vars  map[string]string
		steps []step
	}{
		{"static table", static, []step{
			tool("runs", "0"), tool("grown", "!unknown"), tool("grow", "grow"), tool("grown", "grown"),
			tool("rename", "rename"), tool("runs", "!unknown"), tool("renamed", "renamed"), tool("runs", "!unknown"),
		}},
		{"function, state unchanged", fn, []step{
			tool("runs", "1"), tool("runs", "1"), tool("runs", "1"), tool("bump", "bump"), tool("runs", "2"), tool("runs", "2"),
		}},
		{"function reading state a call changed", fn, []step{
			tool("secret", "!unknown"), tool("unlock", "unlock"), tool("secret", "secret"), tool("secret", "secret"),
			tool("lock", "lock"), tool("secret", "!unknown"), tool("unlock", "unlock"), tool("secret", "secret"),
		}},
		{"a crash rolls the state back, the list with it", fn, []step{
			tool("runs", "1"), tool("crash", "!crash"), tool("secret", "!unknown"), tool("unlock", "unlock"), tool("secret", "secret"),
		}},
		{"reuse_lists = false", map[string]string{"TOOLS": "tools", "REUSE": "false"}, []step{
			tool("runs", "1"), tool("runs", "2"), tool("runs", "3"),
		}},
		{"unset: a function reading an upvalue runs every time", map[string]string{"TOOLS": "tools", "REUSE": "nil"}, []step{
			tool("runs", "1"), tool("runs", "2"), tool("bump", "bump"), tool("runs", "4"),
		}},
		{"unset: a constant function is reused across state changes", map[string]string{"TOOLS": constant, "REUSE": "nil"}, []step{
			tool("t2", "t2"), cached("new"), tool("t3", "t3"), cached("same"), tool("bump", "!unknown"), cached("same"),
			tool("runs", "0"), cached("same"), tool("t4", "!unknown"), cached("same"),
		}},
		{"unset: a function handing out a module-level table runs every time, its index reused", map[string]string{
			"TOOLS": "function() runs = runs + 1 return STATIC end", "REUSE": "nil"}, []step{
			tool("runs", "1"), cached("none"), tool("runs", "2"), cached("new"), tool("runs", "3"), cached("same"),
			tool("grow", "grow"), tool("grown", "grown"), tool("grown", "grown"), tool("runs", "7"), cached("same"),
			tool("rename", "rename"), tool("runs", "!unknown"), tool("renamed", "renamed"),
		}},
		{"reuse_lists = false: a constant function runs every time", map[string]string{"TOOLS": constant, "REUSE": "false"}, []step{
			tool("t2", "t2"), cached("none"), tool("t3", "t3"), cached("none"),
		}},
		{"stateless: the function runs for every lookup", map[string]string{"TOOLS": "tools", "SESSIONS": "false"}, []step{
			tool("runs", "1"), tool("runs", "2"), tool("unlock", "unlock"), tool("secret", "secret"), tool("runs", "5"),
		}},
		{"static resources and prompts", map[string]string{
			"TOOLS": "STATIC", "RESOURCES": "RES", "TEMPLATES": `{ { uri_template = "mem://item/{id}", name = "item" } }`,
			"PROMPTS": `{ { name = "p" } }`,
		}, []step{
			read("mem://a", "read mem://a"), read("mem://a", "read mem://a"), read("mem://item/7", "read mem://item/77"),
			read("mem://b", "!notfound"), prompt("p", "p"), prompt("q", "!unknown"), prompt("p", "p"),
		}},
		{"an entry in two static lists", map[string]string{"TOOLS": `{ E, { name = "rename_shared" } }`, "PROMPTS": "{ E }"}, []step{
			tool("shared", "shared"), prompt("shared", "shared"), tool("rename_shared", "rename_shared"),
			prompt("moved", "moved"), tool("moved", "moved"), tool("shared", "!unknown"), prompt("shared", "!unknown"),
		}},
		{"reuse_lists = true: a list callback that changed the state in the same call", map[string]string{
			"TOOLS": "tools", "RESOURCES": "function(s) calls = calls + 1 if calls == 2 then s.flip = true end return RES end",
			"TEMPLATES": `function(s) return { { uri_template = s.flip and "mem://flip/{id}" or "mem://item/{id}", name = "t" } } end`,
		}, []step{
			// The second read reuses both lists; touch writes the resources
			// list, so the third runs resources again, which flips the state
			// before the templates are looked up.
			read("mem://item/7", "read mem://item/77"), read("mem://item/8", "read mem://item/88"),
			tool("touch", "touch"), read("mem://item/9", "!notfound"), read("mem://flip/1", "read mem://flip/11"),
		}},
		{"resource and prompt functions", map[string]string{
			"TOOLS": "tools", "RESOURCES": "function() return RES end", "TEMPLATES": `function(s) return { { uri_template = "mem://item/{id}", name = "item" } } end`,
			"PROMPTS": `function(s) return { { name = s.unlocked and "open" or "p" } } end`,
		}, []step{
			read("mem://a", "read mem://a"), read("mem://item/7", "read mem://item/77"), prompt("p", "p"),
			tool("unlock", "unlock"), prompt("p", "!unknown"), prompt("open", "open"), read("mem://item/8", "read mem://item/88"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"SESSIONS": "true", "REUSE": "true", "RESOURCES": "nil", "TEMPLATES": "nil", "PROMPTS": "nil"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			src := listsScript
			for k, v := range vars {
				src = strings.ReplaceAll(src, k, v)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "lists.lua")
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			logger, _ := newLogger()
			s, err := Load(file, Config{Dir: dir, Logger: logger, PoolSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			id := "sid"
			if vars["SESSIONS"] == "false" {
				id = ""
			}
			ss, _ := open(t, s, id)
			ctx := context.Background()
			var seen any
			for i, st := range tt.steps {
				if st.kind == "cached" {
					list := ss.(*session).v.lists[cbTools].list
					got := "new"
					switch {
					case list == nil:
						got = "none"
					case list == seen:
						got = "same"
					}
					seen = list
					if got != st.want {
						t.Fatalf("step %d: the cached list is %s, want %s", i, got, st.want)
					}
					continue
				}
				var res json.RawMessage
				var err error
				var got string
				switch st.kind {
				case "tool":
					if res, err = ss.CallTool(ctx, testCall(id), st.name, json.RawMessage(`{}`)); err == nil {
						got = text(t, string(res))
					}
				case "read":
					if res, err = ss.ReadResource(ctx, testCall(id), st.name); err == nil {
						var r struct{ Contents []struct{ Text string } }
						if jerr := json.Unmarshal(res, &r); jerr != nil || len(r.Contents) != 1 {
							t.Fatalf("step %d: %s", i, res)
						}
						got = r.Contents[0].Text
					}
				case "prompt":
					if res, err = ss.GetPrompt(ctx, testCall(id), st.name, nil); err == nil {
						var r struct{ Description string }
						if jerr := json.Unmarshal(res, &r); jerr != nil {
							t.Fatalf("step %d: %s", i, res)
						}
						got = r.Description
					}
				}
				if err != nil {
					got = "!" + errorKind(err)
				}
				if got != st.want {
					t.Fatalf("step %d (%s %s): got %q, want %q (err %v)", i, st.kind, st.name, got, st.want, err)
				}
			}
		})
	}
}

// errorKind names an error of a lookup step.
func errorKind(err error) string {
	var merr *mcp.Error
	switch {
	case isCrash(err):
		return "crash"
	case errors.As(err, &merr) && merr.Code == mcp.CodeResourceNotFound:
		return "notfound"
	case errors.As(err, &merr) && strings.HasPrefix(merr.Message, "Unknown "):
		return "unknown"
	}
	return err.Error()
}

// TestListLookupsReload: a reload that changes the tools list reaches the
// next lookup of a live session (the cache belongs to the old state).
func TestListLookupsReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.lua")
	writeScript(t, file, counterV1)
	logger, _ := newLogger()
	s, err := Load(file, Config{Dir: dir, Logger: logger, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, _ := open(t, s, "sid")
	for range 2 {
		if got := text(t, mustCall(t, ss, "bump", `{}`)); !strings.HasPrefix(got, "v1 ") {
			t.Fatalf("bump = %q", got)
		}
	}
	if _, err := call(t, ss, "peek", `{}`); err == nil {
		t.Fatal("peek found before the reload")
	}
	writeScript(t, file, counterV2)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := text(t, mustCall(t, ss, "peek", `{}`)); got != "v2 peek 2" {
		t.Fatalf("peek after the reload = %q, want %q", got, "v2 peek 2")
	}
	if _, err := call(t, ss, "slow", `{"ms":1}`); err == nil {
		t.Fatal("slow, gone in v2, still found")
	}
}
