package luavm

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
)

// escape is a session-mode script whose tool "keep" holds on to memory in a
// way the budget's charges or its measure might miss, args.n times 4 MiB
// over the calls of a session, under a budget of 16 MiB.
const escape = `local mcp = require("mcp")
local kept = {}
local ways = {
  -- Error messages are new strings (the position prefix, a quoted argument):
  -- pcall hands them to the script.
  error = function(big) return select(2, pcall(error, big)) end,
  select = function(big) return select(2, pcall(select, big)) end,
  require = function(big) return select(2, pcall(require, big)) end,
}
-- Tables only Go holds on to, which Lua reaches again in a later call.
local stashes = {
  array = function() return getmetatable(mcp.array({})) end,
  loaded = function() return require("stash") end,
}
return {
  route = { memory_limit_mb = 16 },
  init = function()
    return { name = "escape", version = "1" }, { tools = {} }, {}
  end,
  tools = function() return { { name = "keep" } } end,
  handle_tool = function(_, args)
    local way = ways[args.way]
    if way then
      local big = string.rep("\128", 4 * 1024 * 1024)
      for i = 1, args.n do kept[i] = way(big) end
      local total = 0
      for i = 1, args.n do total = total + #kept[i] end
      kept = {}
      return tostring(total)
    end
    if args.way == "loaded" and package then
      package.loaded.stash = {}
      package = nil -- package.loaded is now reachable through require alone
    end
    -- Built first, stashed after: while the 4 MiB string is allocated the
    -- call holds no reference to the stash.
    local s = string.rep("x", 4 * 1024 * 1024) .. args.n
    local t = stashes[args.way]()
    t[#t + 1] = s
    return tostring(#t)
  end,
}`

// The error messages gopher-lua builds (a position prefix and the script's
// string, a bad argument quoted) are new strings that pcall hands to the
// script: they count against the budget like any string. Uncharged, 8 of
// them held 32 MiB (error, select) or 128 MiB (require's %q) under a 16 MiB
// budget, and any number could be kept. (require now quotes only the start
// of a long name: TestRequire.)
func TestBudgetChargesErrorMessages(t *testing.T) {
	s, _ := loadSource(t, "escape.lua", escape)
	for _, way := range []string{"error", "select", "require"} {
		t.Run(way, func(t *testing.T) {
			ss, _ := open(t, s, "sid")
			// Past the budget the message is "memory limit exceeded", or the
			// call fails.
			res, err := call(t, ss, "keep", `{"way":"`+way+`","n":8}`)
			if err != nil {
				contains(t, err.Error(), "memory limit exceeded")
				return
			}
			if kept, _ := numberAfter("", text(t, res)); kept > 16<<20 {
				t.Errorf("kept %d bytes of error messages under a 16 MiB budget", kept)
			}
		})
	}
}

// Tables only Go holds on to, which Lua reaches again through Go (the array
// marker's metatable, package.loaded once the script dropped package), are
// walked by the budget's measure: what a script stashes there counts. Out of
// its reach, a 16 MiB state held 80 MiB after 20 calls (and any amount
// after more), which the process's heap watchdog, choosing the call whose
// state accounts the most, could not tell from an innocent state.
func TestBudgetCountsTablesGoHolds(t *testing.T) {
	s, _ := loadSource(t, "escape.lua", escape)
	for _, way := range []string{"array", "loaded"} {
		t.Run(way, func(t *testing.T) {
			ss, _ := open(t, s, "sid")
			for i := 1; i <= 20; i++ {
				res, err := call(t, ss, "keep", `{"way":"`+way+`","n":`+itoa(i)+`}`)
				if err != nil {
					if !strings.Contains(err.Error(), "memory limit exceeded") {
						t.Fatalf("call %d: %v", i, err)
					}
					if i > 5 {
						t.Errorf("refused only at call %d: %d MiB held by a 16 MiB state", i, 4*(i-1))
					}
					return
				}
				if got := text(t, res); got != itoa(i) {
					t.Fatalf("call %d: %s strings stashed", i, got)
				}
			}
			t.Errorf("a 16 MiB state holds 20 strings of 4 MiB (80 MiB) in the %s stash", way)
		})
	}
}

// callbacks is a script each of whose callbacks keeps 6 MiB in an upvalue
// of its own, which no other callback reaches.
const callbacks = `local a, b, c
return {
  route = { memory_limit_mb = 16 },
  init = function()
    return { name = "callbacks", version = "1" }, { tools = {}, prompts = {} }, {}
  end,
  tools = function()
    a = a or string.rep("a", 6 * 1024 * 1024)
    return { { name = "keep" } }
  end,
  handle_tool = function()
    b = b or string.rep("b", 6 * 1024 * 1024)
    return "ok"
  end,
  prompts = function()
    c = c or string.rep("c", 6 * 1024 * 1024)
    return { { name = "p" } }
  end,
  get_prompt = function() return { messages = {} } end,
}`

// The module's callbacks are walked by the measure whichever of them runs:
// walked only from the running callback, each callback's upvalues could
// hold a budget of their own (3 callbacks, 18 MiB under 16).
func TestBudgetCountsEveryCallback(t *testing.T) {
	s, _ := loadSource(t, "callbacks.lua", callbacks)
	ss, _ := open(t, s, "sid")
	_, err1 := ss.Tools(context.Background())
	_, err2 := call(t, ss, "keep", `{}`)
	_, err3 := ss.Prompts(context.Background())
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			contains(t, err.Error(), "memory limit exceeded")
			return
		}
	}
	t.Error("three callbacks kept 6 MiB each (18 MiB) under a 16 MiB budget")
}

// The functions load returns count what they hold. gopher-lua's compiler
// left each prototype's code and line numbers in slices of 1024-entry
// buffers (and its other slices at their initial capacity): a `return 1`
// held some 17 KB, counted as a few hundred bytes, and 20,000 of them held
// 330 MiB under a 16 MiB budget, measured at 7.
func TestBudgetCountsLoadedFunctions(t *testing.T) {
	s, _ := loadSource(t, "loads.lua", `local kept = {}
return {
  route = { memory_limit_mb = 16 },
  init = function() return { name = "loads", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "keep" } } end,
  handle_tool = function(_, args)
    for i = 1, args.n do kept[i] = load("return " .. i) end
    return tostring(#kept)
  end,
}`)
	ss, _ := open(t, s, "sid")
	sample := []metrics.Sample{{Name: heapMetric}}
	runtime.GC()
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	res, err := call(t, ss, "keep", `{"n":20000}`)
	runtime.GC()
	metrics.Read(sample)
	grown := int64(sample[0].Value.Uint64()) - int64(before)
	if err != nil {
		contains(t, err.Error(), "memory limit exceeded")
	}
	if grown > 48<<20 {
		t.Errorf("a state under a 16 MiB budget grew the heap by %d MiB (call: %.60s, %v)", grown>>20, res, err)
	}
}
