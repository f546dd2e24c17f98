package luavm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// marker is a session-mode script whose tool "act" does what its argument
// names, each a way of leaving a mark on what the chunk built (or, for
// "clean", none), and whose tool "probe" shows every such value.
const marker = `local mcp = require("mcp")
local json = require("json")
local count = 0
local cache = {}
local list = {3, 1, 2}
local plain = {x = 1}
CONFIG = {n = 1}
local M
local function bump() count = count + 1 end
local actions = {
  clean = function(state)
    local t = {} t.x = 1 setmetatable(t, {}) rawset(t, "y", 2)
    local y = 0 local f = function() y = y + 1 end f()
    local co = coroutine.create(function() y = y + 1 coroutine.yield() end) coroutine.resume(co)
    table.insert(list == nil and {} or {}, 1)
    state.n = (state.n or 0) + 1
    mcp.array(state)
    local s = ("x"):rep(10) .. json.encode({a = 1})
    return s
  end,
  global = function() leak = 1 end,
  global_same = function() CONFIG = CONFIG end,
  string_field = function() string.leak = 1 end,
  string_meta = function() getmetatable("").leak = 1 end,
  upvalue_table = function() cache.x = 1 end,
  upvalue = function() count = count + 1 end,
  upvalue_nested = function() local f = function() bump() end f() end,
  upvalue_coroutine = function() coroutine.wrap(function() count = count + 1 end)() end,
  loaded = function() package.loaded.leak = 1 end,
  loaded_module = function() package.loaded.json.leak = 1 end,
  setmetatable = function() setmetatable(plain, {}) end,
  array_marker = function() mcp.array(plain) end,
  marker_meta = function() getmetatable(mcp.array()).leak = 1 end,
  null_meta = function() getmetatable(mcp.null).leak = 1 end,
  rawset = function() rawset(CONFIG, "n", 2) end,
  insert = function() table.insert(list, 4) end,
  remove = function() table.remove(list) end,
  sort = function() table.sort(list) end,
  global_table = function() CONFIG.n = 2 end,
  module = function() M.leak = 1 end,
  mcp_module = function() mcp.leak = 1 end,
}
local TOOLS = {
  { name = "act", description = "", input_schema = { type = "object" } },
  { name = "probe", description = "", input_schema = { type = "object" } },
}
M = {
  route = { sessions = true, session_hibernate_ms = HIB },
  init = function(params) return { name = "m", version = "1" }, { tools = {} }, {} end,
  tools = function() return TOOLS end,
  handle_tool = function(name, args, ctx, state)
    if name == "act" then
      return actions[args.what](state) or "done", state
    end
    return table.concat({count, tostring(cache.x), table.concat(list, ","), tostring(rawget(_G, "leak")),
      tostring(string.leak), tostring(getmetatable("").leak), tostring(package.loaded.leak),
      tostring(package.loaded.json.leak), tostring(getmetatable(plain)), CONFIG.n, tostring(M.leak),
      tostring(mcp.leak), tostring(getmetatable(mcp.array()).leak), tostring(getmetatable(mcp.null).leak)}, " ")
  end,
}
return M
`

// fresh is what probe shows on a state just built.
const fresh = "0 nil 3,1,2 nil nil nil nil nil nil 1 nil nil nil nil"

func loadMarker(t *testing.T, src string, hibernateMS int) *Script {
	t.Helper()
	file := filepath.Join(t.TempDir(), "m.lua")
	writeScript(t, file, strings.ReplaceAll(src, "HIB", itoa(hibernateMS)))
	logger, _ := newLogger()
	s, err := Load(file, Config{Dir: filepath.Dir(file), Logger: logger, PoolSize: 2, Pushes: everywhere(newPushes())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if n := s.LiveStates(); n != 0 {
			t.Errorf("%d Lua states still open after Close", n)
		}
	})
	return s
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// takeState opens sessions until one runs on v (a recycled state queued
// behind others in the fresh lane), and closes the others.
func takeState(t *testing.T, s *Script, v *vm) mcp.Session {
	t.Helper()
	var others []mcp.Session
	defer func() {
		for _, o := range others {
			o.Close("normal")
		}
	}()
	for range cap(s.current().pool.fresh) + 2 {
		ss, _ := open(t, s, "sid")
		if ss.(*session).v == v {
			return ss
		}
		others = append(others, ss)
	}
	t.Fatal("the recycled state never came out of the pool")
	return nil
}

// Every way a script can leave a mark makes its state non-recyclable; a clean
// session's state is recycled, and the next session on it sees exactly the
// values a fresh state has.
func TestRecycle(t *testing.T) {
	s := loadMarker(t, marker, 0)
	for _, what := range []string{
		"clean", "global", "global_same", "string_field", "string_meta", "upvalue_table", "upvalue",
		"upvalue_nested", "upvalue_coroutine", "loaded", "loaded_module", "setmetatable", "array_marker",
		"marker_meta", "null_meta", "rawset", "insert", "remove", "sort", "global_table", "module", "mcp_module",
	} {
		t.Run(what, func(t *testing.T) {
			ss, _ := open(t, s, "sid")
			if got := text(t, mustCall(t, ss, "probe", `{}`)); got != fresh {
				t.Fatalf("a new session sees %q, want %q", got, fresh)
			}
			mustCall(t, ss, "act", `{"what":"`+what+`"}`)
			v := ss.(*session).v
			recycled, discarded := recycledOf(s), closedOf(s)
			ss.Close("normal")
			if what != "clean" {
				if recycledOf(s) != recycled || closedOf(s) != discarded+1 {
					t.Fatalf("the state was recycled after %s", what)
				}
				if !v.closed {
					t.Fatal("a marked state was not closed")
				}
				return
			}
			if recycledOf(s) != recycled+1 || closedOf(s) != discarded {
				t.Fatal("a clean state was not recycled")
			}
			next := takeState(t, s, v)
			defer next.Close("normal")
			if got := text(t, mustCall(t, next, "probe", `{}`)); got != fresh {
				t.Errorf("the session on a recycled state sees %q, want %q", got, fresh)
			}
			if got := text(t, mustCall(t, next, "act", `{"what":"clean"}`)); got != "xxxxxxxxxx{\"a\":1}" {
				t.Errorf("clean on a recycled state = %q", got)
			}
		})
	}
}

// A state that held a coroutine when it was built is never recycled: a
// coroutine resumed and suspended again looks as it did.
func TestRecycleRefusesCoroutines(t *testing.T) {
	for _, co := range []string{
		`CO = coroutine.create(function() end)`,
		`local co = coroutine.wrap(function() end) function KEEP() return co end`,
	} {
		s := loadMarker(t, co+"\n"+marker, 0)
		ss, _ := open(t, s, "sid")
		mustCall(t, ss, "act", `{"what":"clean"}`)
		ss.Close("normal")
		if recycledOf(s) != 0 || closedOf(s) != 1 {
			t.Errorf("%s: recycled %d, discarded %d, want 0 and 1", co, recycledOf(s), closedOf(s))
		}
	}
}

// A crashed or interrupted call leaves the state unrecyclable, even when it
// changed nothing the baseline records.
func TestRecycleRefusesBroken(t *testing.T) {
	s := loadMarker(t, strings.Replace(marker, `clean = function(state)`, `crash = function() error("boom") end,
  clean = function(state)`, 1), 0)
	ss, _ := open(t, s, "sid")
	if _, err := call(t, ss, "act", `{"what":"crash"}`); !isCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	ss.Close("normal")
	if recycledOf(s) != 0 || closedOf(s) != 1 {
		t.Errorf("recycled %d, discarded %d, want 0 and 1", recycledOf(s), closedOf(s))
	}
}

// A hibernating session's state is recycled when pristine.
func TestRecycleOnHibernation(t *testing.T) {
	s := loadMarker(t, marker, 20)
	ss, _ := open(t, s, "sid")
	defer ss.Close("normal")
	mustCall(t, ss, "act", `{"what":"clean"}`)
	eventually(t, "hibernation", func() bool { return isAsleep(ss) })
	// The sweeper marks the session asleep, then gives its state back: the
	// count follows the phase by a moment.
	eventually(t, "the sleeping session's state recycled", func() bool { return recycledOf(s) == 1 })
	if n := recycledOf(s); n != 1 {
		t.Fatalf("recycled %d states, want 1", n)
	}
	// It wakes with its state, on a fresh (maybe recycled) state.
	if got := text(t, mustCall(t, ss, "act", `{"what":"clean"}`)); got != "xxxxxxxxxx{\"a\":1}" {
		t.Errorf("clean after waking = %q", got)
	}
	if got := text(t, mustCall(t, ss, "probe", `{}`)); got != fresh {
		t.Errorf("probe after waking = %q, want %q", got, fresh)
	}
}

// A state of a version that a reload replaced is closed, never handed to a
// session of the new version.
func TestRecycleAcrossReload(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.lua")
	src := strings.ReplaceAll(marker, "HIB", "0")
	writeScript(t, file, src)
	logger, _ := newLogger()
	s, err := Load(file, Config{Dir: filepath.Dir(file), Logger: logger, PoolSize: 2, Pushes: everywhere(newPushes())})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Close()
		if n := s.LiveStates(); n != 0 {
			t.Errorf("%d Lua states still open after Close", n)
		}
	}()
	ss, _ := open(t, s, "sid")
	mustCall(t, ss, "act", `{"what":"clean"}`)
	v := ss.(*session).v
	writeScript(t, file, strings.Replace(src, `CONFIG = {n = 1}`, `CONFIG = {n = 2}`, 1))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	ss.Close("normal")
	if !v.closed {
		t.Error("a state of the replaced version was not closed")
	}
	for range cap(s.current().pool.fresh) + 2 {
		next, _ := open(t, s, "sid")
		if next.(*session).v.s != s.current() {
			t.Fatal("a session of the new version got a state of the old one")
		}
		next.Close("normal")
	}
}

// A recycled state beyond the fresh lane's capacity is closed, and the
// surplus past the lane's depth is closed after surplusAfter without a take.
func TestRecycleBounded(t *testing.T) {
	s := loadMarker(t, marker, 0)
	p := s.current().pool
	var sessions []mcp.Session
	for range cap(p.fresh) + 3 {
		ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid")
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, ss)
	}
	for _, ss := range sessions {
		ss.Close("normal")
	}
	// Whatever the fillers had put in the lane meanwhile, at least the 3
	// states past its capacity found it full.
	if len(p.fresh) != cap(p.fresh) || closedOf(s) < 3 {
		t.Errorf("fresh lane %d of %d, %d discarded: want it full and the surplus closed", len(p.fresh), cap(p.fresh), closedOf(s))
	}
	eventually(t, "the surplus trimmed to the lane's depth", func() bool {
		return len(p.fresh) <= int(p.depth.Load())
	})
}

func recycledOf(s *Script) int64 { r, _ := s.EndedStates(); return r }

func closedOf(s *Script) int64 { _, c := s.EndedStates(); return c }
