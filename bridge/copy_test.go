package bridge

import (
	"sync"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

func TestCloneIndependent(t *testing.T) {
	L, c, _ := newState(t)
	state := eval(t, L, `return mcp.object {
		count = 1,
		list = {1, 2, {x = 1}},
		empty = mcp.array(),
		obj = mcp.object(),
		none = mcp.null,
		[7] = "seven",
	}`)
	before := mustEncode(t, c, state)
	cl, err := c.Clone(state)
	if err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("s", state)
	L.SetGlobal("c", cl)
	eval(t, L, `
		s.count = 5
		s.list[3].x = 2
		s.list[4] = "new"
		table.insert(s.empty, 1)
		s.obj.k = true
		s.none = nil
		s[7] = nil
		s.added = {}
		assert(c.none == mcp.null, "null kept by reference")
		assert(getmetatable(c.empty) == getmetatable(mcp.array()), "array marker kept")
		assert(getmetatable(c.obj) == getmetatable(mcp.object()), "object marker kept")
		assert(c.list ~= s.list and c.list[3] ~= s.list[3], "nested tables copied")
		assert(getmetatable(c) == getmetatable(mcp.object()))
	`)
	if after := mustEncode(t, c, cl); after != before {
		t.Errorf("clone changed with the original:\nbefore %s\n after %s", before, after)
	}
}

func TestCloneSharingAndCycles(t *testing.T) {
	L, c, _ := newState(t)
	v := eval(t, L, `
		local shared = {n = 1}
		local t = {a = shared, b = shared, f = print}
		t.self = t
		local mt = {n = 0}
		t.obj = setmetatable({}, mt)
		t.mt = mt
		t.list = {shared, t}
		t[shared] = "table key"
		return t`)
	cl, err := c.Clone(v)
	if err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("t", v)
	L.SetGlobal("c", cl)
	if got := eval(t, L, `
		assert(c ~= t)
		assert(c.a == c.b, "sharing kept")
		assert(c.a ~= t.a, "shared table copied")
		assert(c.self == c, "cycle kept")
		assert(c.list[1] == c.a and c.list[2] == c, "inner references kept")
		assert(c[c.a] == "table key", "table keys copied through the same map")
		assert(c[t.a] == nil)
		assert(c.f == print, "functions by reference")
		t.a.n = 2
		assert(c.a.n == 1)
		-- A metatable is a table of the value like any other: copied, and
		-- shared where it was.
		assert(getmetatable(c.obj) ~= t.mt and getmetatable(c.obj) == c.mt, "metatable copied")
		getmetatable(c.obj).n = 1
		assert(t.mt.n == 0)
		return "ok"`); got != lua.LString("ok") {
		t.Fatal(got)
	}
	if len(c.clones) != 0 || len(c.work) != 0 {
		t.Errorf("scratch not reset: %d clones, %d work", len(c.clones), len(c.work))
	}
}

func TestCloneScalarsAndDeepLists(t *testing.T) {
	L, c, _ := newState(t)
	for _, v := range []lua.LValue{lua.LNil, lua.LNumber(3), lua.LString("s"), lua.LTrue, c.Null()} {
		if got, err := c.Clone(v); err != nil || got != v {
			t.Errorf("Clone(%v) = %v, %v", v, got, err)
		}
	}
	// A linked list far deeper than MaxDepth: Clone has no depth limit.
	v := eval(t, L, `
		local head = {}
		for i = 1, 20000 do head = {next = head, i = i} end
		return head`)
	cl, err := c.Clone(v)
	if err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("c", cl)
	if got := eval(t, L, `
		local n, p = 0, c
		while p.next do n = n + 1; p = p.next end
		return n`); got != lua.LNumber(20000) {
		t.Errorf("cloned list has %v nodes", got)
	}
}

func newPair(t *testing.T) (src, dst *lua.LState, sc, dc *Codec) {
	src, sc, _ = newState(t)
	dst, dc, _ = newState(t)
	return
}

func TestCopyToMapsNullAndMarkers(t *testing.T) {
	src, dst, sc, dc := newPair(t)
	v := eval(t, src, `
		local shared = {1}
		local t = {
			n = mcp.null,
			list = {mcp.null, 2, "x"},
			arr = mcp.array(),
			obj = mcp.object(),
			decoded = mcp.json_decode('{"a":[],"b":{},"c":null}'),
			s1 = shared, s2 = shared,
			[3] = true,
		}
		t.self = t
		return t`)
	cp, err := sc.CopyTo(dc, v)
	if err != nil {
		t.Fatal(err)
	}
	dst.SetGlobal("c", cp)
	if got := eval(t, dst, `
		assert(c.n == mcp.null, "null mapped to the destination's null")
		assert(c.list[1] == mcp.null and #c.list == 3)
		assert(getmetatable(c.arr) == getmetatable(mcp.array()), "array marker mapped")
		assert(getmetatable(c.obj) == getmetatable(mcp.object()), "object marker mapped")
		assert(getmetatable(c.decoded.a) == getmetatable(mcp.array()))
		assert(getmetatable(c.decoded.b) == getmetatable(mcp.object()))
		assert(c.decoded.c == mcp.null)
		assert(c.s1 == c.s2, "sharing kept")
		assert(c.self == c, "cycle kept")
		assert(c[3] == true)
		c.self = nil
		return mcp.json_encode(mcp.object(c))`); got != lua.LString(
		`{"3":true,"arr":[],"decoded":{"a":[],"b":{},"c":null},"list":[null,2,"x"],"n":null,"obj":{},"s1":[1],"s2":[1]}`) {
		t.Errorf("copy encodes as %s", got)
	}
	if src.GetGlobal("c") != lua.LNil {
		t.Error("source state touched")
	}
}

func TestCopyToRejects(t *testing.T) {
	tests := []struct {
		name, lua, want string
	}{
		{"function", `return {cb = function() end}`, `state.cb: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a function`},
		{"nested function", `return {list = {1, {f = print}}}`, `state.list[2].f: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a function`},
		{"root function", `return print`, `state: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a function`},
		{"thread", `return {co = coroutine.create(print)}`, `state.co: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a thread (coroutine)`},
		{"channel", `return {ch = channel.make()}`, `state.ch: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a channel`},
		{"function key", `return {[print] = 1}`, `state[<function>]: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a function`},
		{"odd key", `return {["a b"] = {print}}`, `state["a b"][1]: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a function`},
		{"metatable with a method", `return {obj = setmetatable({}, {__index = function() end})}`,
			`state.obj<metatable>.__index: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a function`},
		{"path through shared table", `local s = {f = print}; return {a = {b = s}}`,
			`state.a.b.f: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a function`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, _, sc, dc := newPair(t)
			v := eval(t, src, tt.lua)
			cp, err := sc.CopyTo(dc, v)
			if err == nil {
				t.Fatalf("CopyTo = %v, want error", cp)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
	t.Run("userdata", func(t *testing.T) {
		src, _, sc, dc := newPair(t)
		tbl := src.NewTable()
		tbl.RawSetString("u", src.NewUserData())
		if _, err := sc.CopyTo(dc, tbl); err == nil || err.Error() != `state.u: a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a userdata` {
			t.Errorf("got %v", err)
		}
	})
}

func TestCopyToDataMetatable(t *testing.T) {
	src, dst, sc, dc := newPair(t)
	v := eval(t, src, `return {p = setmetatable({}, {__index = {x = 1}})}`)
	cp, err := sc.CopyTo(dc, v)
	if err != nil {
		t.Fatal(err)
	}
	dst.SetGlobal("c", cp)
	if got := eval(t, dst, `return c.p.x`); got != lua.LNumber(1) {
		t.Errorf("metatable not copied: c.p.x = %v", got)
	}
}

// CopyTo only reads its source: several copies may run at once (under -race).
func TestCopyToConcurrentReaders(t *testing.T) {
	src, sc, _ := newState(t)
	v := eval(t, src, `
		local t = {list = {}, m = mcp.object(), n = mcp.null}
		for i = 1, 200 do t.list[i] = {i = i, s = "v" .. i} end
		return t`)
	want := mustEncode(t, sc, v)
	var wg sync.WaitGroup
	// The owner keeps encoding (reading) the source meanwhile.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			if out, err := sc.Encode(v, "state"); err != nil || string(out) != want {
				t.Errorf("owner encode: %s, %v", out, err)
				return
			}
		}
	}()
	for range 4 {
		_, dc, _ := newState(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp, err := sc.CopyTo(dc, v)
			if err != nil {
				t.Error(err)
				return
			}
			out, err := dc.Encode(cp, "state")
			if err != nil || string(out) != want {
				t.Errorf("copy encodes as %s, %v", out, err)
			}
		}()
	}
	wg.Wait()
}
