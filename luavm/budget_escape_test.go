package luavm

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/mcp"
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

// grower is a session-mode script whose tool "grow" adds 1,000 strings of
// 4 KB to its state, about 4 MiB a call, under a budget of MB MiB (16 in
// TestBudgetCountsBuiltStates).
const grower = `return {
  route = { sessions = true, session_hibernate_ms = HIB, memory_limit_mb = MB },
  init = function() return { name = "grower", version = "1" }, { tools = {} }, { blobs = {} } end,
  tools = { { name = "grow", description = "grow", input_schema = { type = "object" } } },
  handle_tool = function(_, _, _, state)
    local n = #state.blobs
    for i = n + 1, n + 1000 do state.blobs[i] = string.rep("x", 4000) .. i end
    return tostring(#state.blobs)
  end,
}`

// A session state the host built from Go (thawed when a hibernated session
// wakes, copied into the new version's state at a reload) counts against
// the budget as in full: the budget counted its tables as they were made,
// not its strings, so after each wake or move the session could grow by its
// whole limit again (20 MiB and more under 16). The state outgrows its
// budget at the same call however it got there.
func TestBudgetCountsBuiltStates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hib   int
		after func(t *testing.T, s *Script, sess mcp.Session, file string)
	}{
		{"awake", 0, nil},
		{"woken", 20, func(t *testing.T, _ *Script, sess mcp.Session, _ string) {
			eventually(t, "hibernation", func() bool { return isAsleep(sess) })
		}},
		{"moved", 0, func(t *testing.T, s *Script, _ mcp.Session, file string) {
			writeScript(t, file, growerSource(0, 16)+" -- edited")
			if err := s.Reload(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "grower.lua")
			writeScript(t, file, growerSource(tc.hib, 16))
			logger, _ := newLogger()
			s, err := Load(file, Config{Dir: filepath.Dir(file), Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			sess, _ := open(t, s, "a")
			for i := 1; i <= 8; i++ {
				if _, err := call(t, sess, "grow", `{}`); err != nil {
					if i != 5 || !strings.Contains(err.Error(), "memory limit exceeded") {
						t.Fatalf("call %d: %v, want memory limit exceeded at call 5", i, err)
					}
					return
				}
				if tc.after != nil {
					tc.after(t, s, sess, file)
				}
			}
			t.Fatal("the state grew to 32 MiB under a budget of 16")
		})
	}
}

func growerSource(hib, mb int) string {
	return strings.NewReplacer("HIB", strconv.Itoa(hib), "MB", strconv.Itoa(mb)).Replace(grower)
}

// A reload that lowers memory_limit_mb below a hibernated session's state:
// the session wakes with a warning and its calls fail with "memory limit
// exceeded"; nothing of its state is lost, and a reload that gives the
// limit back lets it go on where it was.
func TestBudgetLoweredUnderState(t *testing.T) {
	file := filepath.Join(t.TempDir(), "grower.lua")
	writeScript(t, file, growerSource(20, 64))
	logger, logs := newLogger()
	s, err := Load(file, Config{Dir: filepath.Dir(file), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	sess, _ := open(t, s, "a")
	for range 3 {
		mustCall(t, sess, "grow", `{}`)
	}
	reload := func(mb int) {
		t.Helper()
		writeScript(t, file, growerSource(20, mb))
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "hibernation", func() bool { return isAsleep(sess) })
	reload(8)
	if _, err := call(t, sess, "grow", `{}`); err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Fatalf("a call of a 12 MiB state under 8 MiB: %v, want memory limit exceeded\n%s", err, logs)
	}
	contains(t, logs.String(), `the session's state is larger than memory_limit_mb`)
	reload(64) // awake now: its frozen form outgrows 8 MiB
	if got := text(t, mustCall(t, sess, "grow", `{}`)); got != "4000" {
		t.Errorf("grow once the limit is back = %q, want 4000", got)
	}
}

// keeper keeps every text its tool "keep" is given in its state, under a
// budget of 16 MiB: the natural notes tool.
const keeper = `return {
  route = { sessions = true, memory_limit_mb = 16 },
  init = function() return { name = "keeper", version = "1" }, { tools = {} }, { notes = {} } end,
  tools = { { name = "keep", description = "keep", input_schema = { type = "object" } } },
  handle_tool = function(_, args, _, state)
    state.notes[#state.notes + 1] = args.text
    return tostring(#state.notes)
  end,
}`

// A measure taken between two calls counts the session's state, which Go
// holds then: the decode of a call's arguments measures the state when they
// need more room than the budget has left, and that measure left the state
// out, so the count restarted from an empty state at every such call, and
// a client sending large arguments to a tool that keeps them grew the state
// without bound (30 MiB and more under 16).
func TestBudgetCountsStateBetweenCalls(t *testing.T) {
	s, _ := loadSource(t, "keeper.lua", keeper)
	sess, _ := open(t, s, "a")
	args := `{"text":"` + strings.Repeat("x", 3<<19) + `"}` // 1.5 MiB
	for i := 1; i <= 20; i++ {
		if _, err := call(t, sess, "keep", args); err != nil {
			if !strings.Contains(err.Error(), "memory limit exceeded") || i > 12 {
				t.Fatalf("call %d: %v, want memory limit exceeded by call 12 (16 MiB of 1.5 MiB notes)", i, err)
			}
			return
		}
	}
	t.Fatal("the state grew to 30 MiB under a budget of 16")
}
