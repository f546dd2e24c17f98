package bridge

import (
	"fmt"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// isomorphic reports how a differs from b, "" when b is a faithful deep copy
// of a: the same non-table values, the same markers, a distinct table for
// every table of a (plain metatables included), and the same sharing (one
// copy per source table).
// keyCopy finds the copy of a table used as a key.
func isomorphic(a, b lua.LValue, keyCopy func(*lua.LTable) *lua.LTable) string {
	pairs := map[*lua.LTable]*lua.LTable{}
	seen := map[*lua.LTable]bool{}
	var walk func(a, b lua.LValue, path string) string
	walk = func(a, b lua.LValue, path string) string {
		ta, ok := a.(*lua.LTable)
		if !ok {
			if a != b && !(a.Type() == lua.LTNumber && a.String() == "nan" && b.String() == "nan") {
				return fmt.Sprintf("%s: %v != %v", path, a, b)
			}
			return ""
		}
		tb, ok := b.(*lua.LTable)
		if !ok {
			return fmt.Sprintf("%s: table copied as %v", path, b)
		}
		if ta == tb {
			return path + ": not copied"
		}
		if p, ok := pairs[ta]; ok {
			if p != tb {
				return path + ": sharing lost"
			}
			return ""
		}
		if seen[tb] {
			return path + ": two tables share one copy"
		}
		pairs[ta], seen[tb] = tb, true
		if ma, ok := ta.Metatable.(*lua.LTable); ok && ma.RawGetString(markerField) == lua.LNil {
			// A plain metatable is a table of the value: copied too.
			if d := walk(ma, tb.Metatable, path+".<metatable>"); d != "" {
				return d
			}
		} else if ta.Metatable != tb.Metatable {
			return path + ": metatable differs"
		}
		na, nb := 0, 0
		tb.ForEach(func(lua.LValue, lua.LValue) { nb++ })
		var diff string
		ta.ForEach(func(k, v lua.LValue) {
			na++
			if diff != "" {
				return
			}
			bk := k
			if kt, ok := k.(*lua.LTable); ok {
				kc := keyCopy(kt)
				if kc == nil {
					diff = path + ": table key not copied"
					return
				}
				if diff = walk(kt, kc, path+".<key>"); diff != "" {
					return
				}
				bk = kc
			}
			diff = walk(v, tb.RawGet(bk), fmt.Sprintf("%s[%v]", path, k))
		})
		if diff == "" && na != nb {
			diff = fmt.Sprintf("%s: %d entries, copy has %d", path, na, nb)
		}
		return diff
	}
	return walk(a, b, "state")
}

// copyOf is the copy of source table t, or nil.
func (m *Mirror) copyOf(t *lua.LTable) *lua.LTable {
	if nd := m.nodes[t]; nd != nil {
		return nd.dst
	}
	return nil
}

func TestMirror(t *testing.T) {
	// Each case builds a state, syncs, mutates it in ways, and syncs again:
	// every copy must be a faithful deep copy of the state at its Sync, and
	// the earlier copy must not have changed with the state.
	tests := []struct {
		name  string
		build string
		steps []string // each mutates the global s (and may replace it)
	}{
		{"scalars", `s = {a = 1, b = "x", c = true}`, []string{
			`s.a = 2`, `s.b = nil`, `s.d = 4; s.c = false`, ``,
		}},
		{"arrays", `s = {1, 2, 3, {4}}`, []string{
			`table.insert(s, 5)`, `table.remove(s, 1)`, `s[2] = nil`, `s[10] = "far"`, `for i = 1, 20 do s[i] = i end`,
			`for i = 20, 1, -1 do s[i] = nil end`,
		}},
		{"nested", `s = {user = {name = "ada", tags = {"a", "b"}}, list = {}}`, []string{
			`s.user.tags[3] = "c"`, `s.user = {name = "bob"}`, `s.list[1] = s.user`, `s.user.name = "eve"`,
			`s.list = nil`, `s.user.tags = {x = {y = {z = 1}}}`,
		}},
		{"sharing and cycles", `local sh = {n = 1}; s = {a = sh, b = sh}; s.self = s`, []string{
			`s.a.n = 2`, `s.b = {n = 3}`, `s.c = s.a; s.a = nil`, `s.self = nil; s.loop = {s}`,
		}},
		{"table keys", `local k = {id = 1}; s = {}; s[k] = "one"; s.key = k`, []string{
			`s.key.id = 2`, `s[s.key] = nil`, `local k2 = {}; s[k2] = k2`, `for k in pairs(s) do if type(k) == "table" then s[k] = nil end end`,
		}},
		{"metatables and markers", `s = mcp.object {list = mcp.array(), n = mcp.null}`, []string{
			`setmetatable(s.list, nil)`, `s.list = mcp.object {}`, `setmetatable(s, {__index = function() return 1 end})`,
			`s.n = nil`, `s.f = print`,
		}},
		{"plain metatables", `local mt = {n = 0}; s = {a = setmetatable({}, mt), b = setmetatable({}, mt), mt = mt}`, []string{
			`s.mt.n = 1`, `getmetatable(s.a).x = {1}`, `setmetatable(s.a, {y = 1})`, `setmetatable(s.mt, s.mt)`,
			`s.mt = nil`, `getmetatable(s.b).n = 2`, `setmetatable(s.b, nil)`,
		}},
		{"replaced root", `s = {a = {1}, b = {2}}`, []string{
			`s = {a = s.a, c = {3}}`, `s = {}`, `s = {x = {y = {}}}`,
		}},
		{"many", `s = {} for i = 1, 300 do s["k" .. i] = {id = i, tags = {i}} end`, []string{
			`for i = 1, 300, 7 do s["k" .. i] = nil end`, `for i = 1, 300, 5 do s["k" .. i] = {id = -i} end`,
			`s.k2.tags[1] = 0`, `for k in pairs(s) do s[k] = nil end`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, c, _ := newState(t)
			m := c.NewMirror()
			eval(t, L, tt.build)
			for i, step := range append([]string{""}, tt.steps...) {
				if step != "" {
					eval(t, L, step)
				}
				s := L.GetGlobal("s")
				cp := m.Sync(s)
				if d := isomorphic(s, cp, m.copyOf); d != "" {
					t.Fatalf("after step %d (%q): %s", i, step, d)
				}
			}
		})
	}
}

// TestMirrorIndependent checks that the copy does not move with the state
// until the next Sync, and that Release hands the copy over.
func TestMirrorIndependent(t *testing.T) {
	L, c, _ := newState(t)
	m := c.NewMirror()
	s := eval(t, L, `s = {count = 1, list = {1, 2, {x = 1}}} return s`)
	cp := m.Sync(s)
	before := mustEncode(t, c, cp)
	eval(t, L, `s.count = 5; s.list[3].x = 2; s.list[4] = "new"; s.added = {}`)
	if after := mustEncode(t, c, cp); after != before {
		t.Fatalf("copy changed with the state:\nbefore %s\n after %s", before, after)
	}
	cp2 := m.Sync(s)
	if cp2 != cp {
		t.Errorf("Sync did not patch the copy in place")
	}
	if d := isomorphic(s, cp2, m.copyOf); d != "" {
		t.Fatal(d)
	}
	// After Release, the copy is the caller's: a new Sync must not touch it.
	m.Release()
	kept := mustEncode(t, c, cp2)
	eval(t, L, `s.count = 9`)
	cp3 := m.Sync(s)
	if cp3 == cp2 {
		t.Fatal("Sync after Release reused the released copy")
	}
	if got := mustEncode(t, c, cp2); got != kept {
		t.Errorf("released copy changed: %s, want %s", got, kept)
	}
	if d := isomorphic(s, cp3, m.copyOf); d != "" {
		t.Fatal(d)
	}
	if v := m.Sync(lua.LString("x")); v != lua.LString("x") {
		t.Errorf("Sync of a string = %v", v)
	}
}

// TestMirrorMetatableNotShared checks that the copy shares no metatable with
// the state: the copy is the rollback backup, which a rollback makes the
// state again and which Snapshot reads while a call writes to the state. A
// write through a shared metatable would escape the rollback, and race with
// the Snapshot.
func TestMirrorMetatableNotShared(t *testing.T) {
	L, c, _ := newState(t)
	m := c.NewMirror()
	s := eval(t, L, `local mt = {n = 1}; s = {obj = setmetatable({}, mt), mt = mt, list = mcp.array()} return s`).(*lua.LTable)
	cp := m.Sync(s).(*lua.LTable)
	obj, mt := cp.RawGetString("obj").(*lua.LTable), cp.RawGetString("mt").(*lua.LTable)
	if obj.Metatable == s.RawGetString("obj").(*lua.LTable).Metatable {
		t.Fatal("the copy shares its metatable with the state")
	}
	if obj.Metatable != mt {
		t.Fatal("the copy's metatable is not the copy of state.mt: identity lost")
	}
	if list := cp.RawGetString("list").(*lua.LTable); list.Metatable != c.arrayMeta {
		t.Error("the array marker was not kept")
	}
	eval(t, L, `getmetatable(s.obj).n = 2`)
	if n := mt.RawGetString("n"); n != lua.LNumber(1) {
		t.Fatalf("a write to the state's metatable reached the copy: n = %v", n)
	}
	if m.Sync(s); mt.RawGetString("n") != lua.LNumber(2) {
		t.Fatalf("Sync missed a write to a metatable: n = %v", mt.RawGetString("n"))
	}
}

// BenchmarkMirrorSync is the per-call backup of a state that a call changed
// in one place (one key of the root table), against a full Clone: a small
// state like the echo script's, 10,000 tables (the Sync reads their write
// flags, compares the root), and one table of 10,000 keys (the Sync compares
// the written table whole). Every fullSyncEvery-th Sync is a full one, so the
// mean includes its share. "unchanged" syncs a state no call touched: the
// scan of the write flags alone.
func BenchmarkMirrorSync(b *testing.B) {
	for _, bc := range []struct{ name, code string }{
		{"small", `s = {count = 0, items = {}} return s`},
		{"flat10k", `s = {} for i = 1, 10000 do s["k" .. i] = i end return s`},
		{"tables10k", `s = {count = 0, items = {}} for i = 1, 10000 do s.items["k" .. i] = {id = i, name = "item " .. i} end return s`},
	} {
		b.Run(bc.name+"/sync", func(b *testing.B) {
			L, c, _ := newState(b)
			s := eval(b, L, bc.code)
			m := c.NewMirror()
			m.Sync(s)
			bump := eval(b, L, `return function() s.k1 = (s.k1 or 0) + 1 end`).(*lua.LFunction)
			b.ReportAllocs()
			for b.Loop() {
				L.Push(bump)
				L.Call(0, 0)
				m.Sync(s)
			}
		})
		b.Run(bc.name+"/unchanged", func(b *testing.B) {
			L, c, _ := newState(b)
			s := eval(b, L, bc.code)
			m := c.NewMirror()
			m.Sync(s)
			b.ReportAllocs()
			for b.Loop() {
				m.Sync(s)
			}
		})
		b.Run(bc.name+"/clone", func(b *testing.B) {
			L, c, _ := newState(b)
			s := eval(b, L, bc.code)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Clone(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMirrorRestore checks the rollback: after a step that changes the state
// in place, Restore gives the state back the entries and metatables it had at
// the Sync, in its own tables. Whatever held a table of the state before the
// step (the global held, as a module-level local would) holds one of the
// restored state, not an orphan whose later writes the state would never see.
func TestMirrorRestore(t *testing.T) {
	tests := []struct {
		name  string
		build string // sets s, and held to tables of s
		step  string
		check string // true when held holds the tables of the restored s
	}{
		{"scalars", `s = {a = 1, b = "x"}; held = {s}`, `s.a = 2; s.b = nil; s.c = true`, `held[1] == s`},
		{"nested", `s = {user = {name = "ada", tags = {"a", "b"}}}; held = {s, s.user, s.user.tags}`,
			`s.user.name = "bob"; s.user.tags[3] = "c"; table.remove(s.user.tags, 1); s.user = {name = "new"}`,
			`held[1] == s and held[2] == s.user and held[3] == s.user.tags and held[2].name == "ada"`},
		{"sharing and cycles", `local sh = {n = 1}; s = {a = sh, b = sh}; s.self = s; held = {s, sh}`,
			`s.a.n = 2; s.b = {n = 3}; s.self = nil; s.loop = {s}`,
			`s.self == s and s.a == held[2] and s.b == held[2] and held[2].n == 1`},
		{"table keys", `local k = {id = 1}; s = {}; s[k] = "one"; s.key = k; held = {s, k}`,
			`s[s.key] = nil; s.key.id = 2; local k2 = {}; s[k2] = k2`,
			`s.key == held[2] and s[held[2]] == "one" and held[2].id == 1`},
		{"metatables", `local mt = {n = 0}; s = {a = setmetatable({}, mt), mt = mt, list = mcp.array({1})}; held = {s, mt, s.a}`,
			`s.mt.n = 1; setmetatable(s.a, {y = 1}); setmetatable(s.list, nil); setmetatable(s, {__index = function() end})`,
			`getmetatable(s) == nil and getmetatable(s.a) == held[2] and s.a == held[3] and held[2].n == 0 and getmetatable(s.list) ~= nil`},
		{"arrays", `s = {1, 2, 3, [10] = 10}; held = {s}`, `for i = 1, 20 do s[i] = -i end; s[2] = nil`, `held[1] == s and s[2] == 2 and s[11] == nil and s[10] == 10`},
		{"replaced root", `s = {a = {1}}; held = {s, s.a}`, `s.a[1] = 2; s = {a = s.a, b = {}}`, `held[1] == s and held[2] == s.a and s.a[1] == 1 and s.b == nil`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, c, _ := newState(t)
			m := c.NewMirror()
			eval(t, L, tt.build)
			orig := L.GetGlobal("s")
			cp := m.Sync(orig)
			eval(t, L, tt.step)
			got := m.Restore()
			if got != orig {
				t.Fatalf("Restore returned %v, not the state's own table %v", got, orig)
			}
			if d := isomorphic(got, cp, m.copyOf); d != "" {
				t.Fatalf("restored state differs from the state at the Sync: %s", d)
			}
			// The held tables are still tables of the state: a write through
			// one is a write to the state.
			L.SetGlobal("s", got)
			if v := eval(t, L, "return "+tt.check); v != lua.LTrue {
				t.Errorf("%s is false after Restore", tt.check)
			}
			// The mirror still follows the state.
			if again := m.Sync(got); again != cp {
				t.Errorf("Sync after Restore made a new copy")
			}
			eval(t, L, `for _, h in ipairs(held) do if type(h) == "table" then rawset(h, "after", true) end end`)
			if d := isomorphic(got, m.Sync(got), m.copyOf); d != "" {
				t.Fatalf("Sync after Restore and a write: %s", d)
			}
		})
	}
	t.Run("a table no longer in the state", func(t *testing.T) {
		// c left the state at the second Sync; the Mirror still knows it
		// (a partial Sync forgets nothing), but it is a module's table now:
		// a crash must not undo what the call wrote to it.
		L, c, _ := newState(t)
		m := c.NewMirror()
		eval(t, L, `local c = {x = 1}; s = {c = c, n = 0}; held = {s, c}`)
		s := L.GetGlobal("s")
		m.Sync(s)
		eval(t, L, `s.c = nil`)
		m.Sync(s)
		eval(t, L, `held[2].y = 2; s.n = 1`)
		if m.Restore() != s {
			t.Fatal("Restore did not return the state")
		}
		if v := eval(t, L, `return held[2].y == 2 and s.n == 0 and s.c == nil`); v != lua.LTrue {
			t.Error("Restore undid a write to a table that left the state, or missed the state's")
		}
		eval(t, L, `held[2].z = 3; s.c = held[2]`)
		if d := isomorphic(s, m.Sync(s), m.copyOf); d != "" {
			t.Fatalf("Sync after Restore: %s", d)
		}
	})
	t.Run("nothing synced", func(t *testing.T) {
		_, c, _ := newState(t)
		m := c.NewMirror()
		if v := m.Restore(); v != nil {
			t.Errorf("Restore before any Sync = %v", v)
		}
		m.Sync(lua.LString("x"))
		if v := m.Restore(); v != nil {
			t.Errorf("Restore after a Sync of a string = %v", v)
		}
	})
}
