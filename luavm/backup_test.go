package luavm

import "testing"

// TestBackupAcrossCalls interleaves calls that keep their changes with
// crashes, so that the backup is patched between calls (bridge.Mirror) and
// rebuilt after each rollback: every crash must restore the state the call
// before it left.
func TestBackupAcrossCalls(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	steps := []struct {
		tool, args string
		crash      bool
		want       string // the state afterwards
	}{
		{"inc", `{}`, false, `{"count":1,"nested":{"items":[1,2]},"session":"sid"}`},
		{"inc", `{"n":2}`, false, `{"count":3,"nested":{"items":[1,2]},"session":"sid"}`},
		{"crash", `{}`, true, `{"count":3,"nested":{"items":[1,2]},"session":"sid"}`},
		{"inc", `{}`, false, `{"count":4,"nested":{"items":[1,2]},"session":"sid"}`},
		{"set", `{"n":7}`, false, `{"count":7,"nested":{"items":{}}}`},
		{"crash", `{}`, true, `{"count":7,"nested":{"items":{}}}`},
		{"crash", `{}`, true, `{"count":7,"nested":{"items":{}}}`},
		{"inc", `{}`, false, `{"count":8,"nested":{"items":{}}}`},
		{"fail", `{}`, false, `{"count":9,"nested":{"items":{}}}`},
		{"crash", `{}`, true, `{"count":9,"nested":{"items":{}}}`},
		{"inc", `{}`, false, `{"count":10,"nested":{"items":{}}}`},
	}
	for i, st := range steps {
		_, err := call(t, ss, st.tool, st.args)
		if st.crash != isCrash(err) {
			t.Fatalf("step %d (%s): crash %v, got %v", i+1, st.tool, st.crash, err)
		}
		jsonEqual(t, state(t, ss), st.want)
	}
}

// TestRollbackRestoresMetatable: a crash leaves the state as it was before
// the call, metatables included. A metatable that is a table of the state is
// backed up like any other: the write to it is undone, and the table stays
// the metatable of the object that had it (getmetatable(state.obj) is still
// state.mt).
func TestRollbackRestoresMetatable(t *testing.T) {
	src := `
return {
  init = function() return { name = "a", version = "1" }, { tools = {} }, { mt = { n = 0 } } end,
  tools = function() return { { name = "bump" } } end,
  handle_tool = function(name, args, ctx, state)
    if not state.obj then state.obj = setmetatable({}, state.mt) return "set" end
    local mt = getmetatable(state.obj)
    mt.n = mt.n + 1
    if args.crash then error("boom") end
    return tostring(mt.n) .. " same=" .. tostring(mt == state.mt)
  end,
}`
	s, _ := loadSource(t, "a.lua", src)
	ss, _ := open(t, s, "sid")
	mustCall(t, ss, "bump", `{}`)
	if got := text(t, mustCall(t, ss, "bump", `{}`)); got != "1 same=true" {
		t.Fatalf("got %q, want %q", got, "1 same=true")
	}
	if _, err := call(t, ss, "bump", `{"crash":true}`); !isCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	if got := text(t, mustCall(t, ss, "bump", `{}`)); got != "2 same=true" {
		t.Errorf("after a crash that was rolled back: got %q, want %q", got, "2 same=true")
	}
}

// TestRollbackKeepsStateTables: a crash rolls the state back in its own
// tables. A script that keeps a table of its session state in a module-level
// local (or a closure, or a coroutine) must see the rollback through it, and
// its writes through it must reach the state afterwards. Before, the backup
// copy became the state: the local held an orphan carrying the crashed call's
// half-done change, and every later write through it vanished silently.
func TestRollbackKeepsStateTables(t *testing.T) {
	src := `
local held, items
local co
return {
  init = function() return { name = "a", version = "1" }, { tools = {} }, { n = 0, items = { 1 } } end,
  tools = function() return { { name = "hold" }, { name = "bump" }, { name = "get" } } end,
  handle_tool = function(name, args, ctx, state)
    if name == "hold" then
      held, items = state, state.items
      co = coroutine.wrap(function() while true do held.n = held.n + 10; coroutine.yield() end end)
      return "held"
    elseif name == "bump" then
      held.n = held.n + 1
      items[#items + 1] = held.n
      if args.crash then state.items = { "new" }; error("boom") end
      if args.co then co() end
      return "ok"
    end
    return tostring(state.n) .. " " .. table.concat(state.items, ",") ..
      " same=" .. tostring(rawequal(held, state) and rawequal(items, state.items))
  end,
}`
	s, _ := loadSource(t, "a.lua", src)
	ss, _ := open(t, s, "sid")
	mustCall(t, ss, "hold", `{}`)
	mustCall(t, ss, "bump", `{}`)
	for _, args := range []string{`{"crash":true}`, `{"crash":true}`} {
		if _, err := call(t, ss, "bump", args); !isCrash(err) {
			t.Fatalf("want a crash, got %v", err)
		}
	}
	const afterCrash = "1 1,1 same=true"
	if got := text(t, mustCall(t, ss, "get", `{}`)); got != afterCrash {
		t.Fatalf("after the crashes: %q, want %q", got, afterCrash)
	}
	mustCall(t, ss, "bump", `{"co":true}`)
	if got, want := text(t, mustCall(t, ss, "get", `{}`)), "12 1,1,2 same=true"; got != want {
		t.Errorf("writes through the held tables after a rollback: %q, want %q", got, want)
	}
}
