package luavm

import lua "github.com/yuin/gopher-lua"

// Isolation of stateless requests. A pooled state serves one short borrower
// after another (stateless requests, auth checks, Describe): each must find
// the globals and the library tables exactly as the script's load left them,
// whatever the one before did: set a global, replace string.format, poison
// the string metatable (getmetatable("").__index, which is the string table),
// put something in package.loaded.
//
// When a state first becomes a spare, a snapshot records the watched tables:
// _G, package.loaded, and every table that is a value of one of them when the
// snapshot is taken, which covers the libraries (string, table, math, os,
// coroutine, package, mcp), the modules the script required and the tables
// it keeps in globals; and the metatables of mcp.null and of the array and
// object markers, which every request can reach. Each is recorded shallowly: its metatable and its
// key/value pairs. When the state comes back, a check compares them (a few
// hundred map lookups for the standard libraries, only for the tables the
// patched gopher-lua saw written to), and a change is undone.
//
// The depth is one level: a field of a watched table is put back, but a
// change inside a table that a watched table holds (mymodule.cache.x = 1) is
// not seen, and neither are upvalues: a module-level `local` of the script
// still lives as long as the pooled state (script-api.md says so). A table a
// global holds that has more than maxWatched entries is data, not watched.
//
// A state whose changes are too many to undo cheaply is closed instead, and
// the pool builds a fresh one.

// maxRestore bounds the keys one restore may delete, and maxDead those
// deleted over a state's life: gopher-lua keeps a deleted key in the table's
// insertion-order list, which every later check walks past.
const (
	maxRestore = 64
	maxDead    = 256
	maxWatched = 1024
)

// globals is the snapshot of one state's watched tables.
type globals struct {
	tables []tableShot
	dead   int // keys deleted by restores so far
	// random is the generator math.randomseed made, as the snapshot found
	// it: a request that seeded it leaves the next one no sequence to
	// predict or continue.
	random lua.RandomState
}

// tableShot is one watched table as the snapshot found it.
type tableShot struct {
	t      *lua.LTable
	meta   lua.LValue
	strs   []strEntry // the string keys, with their values
	others []anyEntry // the other keys
	// last is the last key Next returned: a key added later comes after it
	// in gopher-lua's iteration order (LNil when the table was empty). Next
	// cannot resume after a number key of the hash part of a table without
	// an array part (it starts over): such a table is checked by counting
	// its keys instead (count >= 0).
	last  lua.LValue
	count int
}

type strEntry struct {
	key string
	val lua.LValue
}

type anyEntry struct {
	key, val lua.LValue
}

// snapshotGlobals records the watched tables of v.
func (v *vm) snapshotGlobals() *globals {
	g := &globals{random: v.L.RandomState()}
	seen := make(map[*lua.LTable]bool)
	watch := func(t *lua.LTable) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		g.tables = append(g.tables, shoot(t))
		t.ClearWritten()
	}
	roots := []*lua.LTable{v.L.G.Global, v.loaded}
	for _, r := range roots {
		watch(r)
	}
	for _, r := range roots {
		r.ForEach(func(_, val lua.LValue) {
			if t, ok := val.(*lua.LTable); ok && small(t) {
				watch(t)
			}
		})
	}
	if mt, ok := v.L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		watch(mt)
	}
	// The tables Go lends to every request: the metatables of mcp.null and
	// of the array and object markers (getmetatable reaches them), and ctx's.
	for _, r := range v.mod.Roots() {
		switch r := r.(type) {
		case *lua.LTable:
			watch(r)
		case *lua.LUserData:
			if mt, ok := r.Metatable.(*lua.LTable); ok {
				watch(mt)
			}
		}
	}
	return g
}

// small reports whether a table a global holds is small enough to watch: a
// large one is data (a lookup table built at load), which a check on every
// request would make expensive.
func small(t *lua.LTable) bool {
	n := 0
	t.ForEach(func(lua.LValue, lua.LValue) { n++ })
	return n <= maxWatched
}

func shoot(t *lua.LTable) tableShot {
	s := tableShot{t: t, meta: t.Metatable, last: lua.LNil, count: -1}
	n := 0
	t.ForEach(func(k, val lua.LValue) {
		if ks, ok := k.(lua.LString); ok {
			s.strs = append(s.strs, strEntry{string(ks), val})
		} else {
			s.others = append(s.others, anyEntry{k, val})
		}
		n++
	})
	if len(s.others) > 0 {
		s.count = n
		return s
	}
	// Only string keys: Next walks them in insertion order.
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		s.last = k
	}
	return s
}

// changed reports whether t differs from the snapshot.
func (s *tableShot) changed() bool {
	t := s.t
	if t.Metatable != s.meta {
		return true
	}
	for i := range s.strs {
		if t.RawGetString(s.strs[i].key) != s.strs[i].val {
			return true
		}
	}
	for _, e := range s.others {
		if t.RawGet(e.key) != e.val {
			return true
		}
	}
	if s.count >= 0 {
		n := 0
		t.ForEach(func(lua.LValue, lua.LValue) { n++ })
		return n != s.count
	}
	// Next walks the hash part only: the array part had nothing.
	k, _ := t.Next(s.last)
	return k != lua.LNil || t.Len() > 0
}

// restore puts t back as the snapshot found it. It returns the number of
// keys it deleted, or false when there were more than maxRestore, or when
// it would leave an array part behind in a table that had none (a check
// would walk its nils every time).
func (s *tableShot) restore() (int, bool) {
	t := s.t
	if s.count < 0 && t.Len() > 0 {
		return 0, false
	}
	had := make(map[lua.LValue]bool, len(s.strs)+len(s.others))
	for _, e := range s.strs {
		had[lua.LString(e.key)] = true
	}
	for _, e := range s.others {
		had[e.key] = true
	}
	// The keys added since: collected first, as deleting keys while
	// iterating is not safe.
	var added []lua.LValue
	t.ForEach(func(k, _ lua.LValue) {
		if !had[k] {
			added = append(added, k)
		}
	})
	if len(added) > maxRestore {
		return 0, false
	}
	for _, k := range added {
		t.RawSet(k, lua.LNil)
	}
	t.Metatable = s.meta
	for _, e := range s.strs {
		if t.RawGetString(e.key) != e.val {
			t.RawSetString(e.key, e.val)
		}
	}
	for _, e := range s.others {
		if t.RawGet(e.key) != e.val {
			t.RawSet(e.key, e.val)
		}
	}
	return len(added), true
}

// isolate puts the watched tables of a borrowed state back as its snapshot
// found them. It reports false when the state cannot be reused: its changes
// were too many, or did not undo.
func (v *vm) isolate() bool {
	g := v.globals
	if g == nil {
		return true
	}
	v.L.SetRandomState(g.random)
	for i := range g.tables {
		s := &g.tables[i]
		// Most borrowers write to none of the watched tables: the patched
		// gopher-lua flags each table written to (written.go), and only
		// those are compared.
		if !s.t.Written() {
			continue
		}
		s.t.ClearWritten()
		if !s.changed() {
			continue
		}
		n, ok := s.restore()
		s.t.ClearWritten()
		g.dead += n
		if !ok || g.dead > maxDead || s.changed() {
			return false
		}
	}
	return true
}
