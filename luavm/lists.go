package luavm

import (
	lua "github.com/yuin/gopher-lua"
)

// Lists and their lookups (script-api.md "Lists").
//
// tools, resources, resource_templates and prompts give a list of
// descriptors: as a function of the state, or as a table (a static list).
// The list methods (tools/list, ...) run the function every time, as they
// always did. A lookup (tools/call finding its tool, resources/read its
// resource or template, prompts/get its prompt) reuses the list it found
// last, with an index by name, while that list provably has not changed:
//
//   - a static list: while neither the table nor any of its entries was
//     written to (their Dirty flags, which the patched gopher-lua sets on
//     every write and only this cache clears);
//   - a constant function, one that reads no argument, upvalue or global and
//     calls nothing (lua.FunctionProto.Closed, checked on its bytecode): it
//     returns equal lists every time, so its first result serves as long
//     as it is not written to, as a static list;
//   - with reuse_lists = true, any function: the same, and while the state
//     it was given is the same value and, for a table, nothing reachable
//     from it changed. The session's rollback mirror (bridge.Mirror) already
//     finds every change to the state before each call: its Changes counter
//     did not move, its last Sync was of this very state, and no list
//     callback has run on the state since (op.ranList: resources(), run
//     before resource_templates() in one read, may write to the state). Only
//     session-mode states have a mirror, so a stateless request's list
//     function never gets this reuse (its state is new every time). What
//     the function reads besides its state (globals, upvalues, the clock,
//     math.random, a host module) is not tracked: reuse_lists = true is the
//     script's word that its lists depend on the state alone.
//
// Otherwise the function runs for every lookup; when it returns the table it
// returned the time before, unchanged (`return TOOLS`), the lookup still uses
// that table's index rather than a scan. reuse_lists = false turns the reuse
// of function results off (a static list is still indexed). The cache belongs to the vm, so a new version of the
// script (a new vm) never sees an old list.

// listReuse is the route option reuse_lists.
type listReuse int

const (
	reuseProven listReuse = iota // unset: static lists and constant functions
	reuseState                   // true: also any function, while its state is unchanged
	reuseNever                   // false: static lists only
)

// listKind is how a lookup may treat one list callback of a vm.
type listKind int

const (
	listRun      listKind = iota // run the function for every lookup
	listStatic                   // a table, or a constant function: reuse while unwritten
	listStateful                 // reuse while unwritten and the state is unchanged
)

// kind returns how lookups treat list callback cb.
func (v *vm) kind(cb int) listKind {
	switch {
	case v.static[cb] != nil:
		return listStatic
	case v.s.reuseLists == reuseNever:
		return listRun
	case v.constant[cb]:
		return listStatic
	case v.s.reuseLists == reuseState:
		return listStateful
	}
	return listRun
}

// constantFunction reports whether fn computes its result from constants
// alone: a Lua function without upvalues whose code reads no argument,
// upvalue or global and calls nothing.
func constantFunction(fn *lua.LFunction) bool {
	if fn.IsG || fn.Proto == nil || len(fn.Upvalues) > 0 {
		return false
	}
	closed, usesArgs := fn.Proto.Closed()
	return closed && !usesArgs
}

// isList reports whether callback cb gives a list of descriptors, which the
// module may also give as a table.
func isList(cb int) bool {
	return cb == cbTools || cb == cbResources || cb == cbResourceTemplates || cb == cbPrompts
}

// staticList records t as list callback cb's static list and returns a
// function returning it, which the list methods call like any list function.
func (v *vm) staticList(cb int, t *lua.LTable) *lua.LFunction {
	v.static[cb] = t
	return v.L.NewFunction(func(L *lua.LState) int {
		L.Push(t)
		return 1
	})
}

// A listCache is the last list a lookup found for one list callback.
type listCache struct {
	list    *lua.LTable            // the callback's result; nil: nothing cached
	entries []*lua.LTable          // the list's table entries, in order
	index   map[string]*lua.LTable // key field -> the first entry with it
	key     string                 // the key field index is built on
	last    *lua.LTable            // listRun: the list the function returned last, not kept
	state   lua.LValue             // listStateful: the state the function was given
	changes uint64                 // listStateful: the mirror's Changes when it ran
}

// reset forgets the cached list.
func (lc *listCache) reset() { *lc = listCache{} }

// cached returns the list of callback cb cached for state, or nil when there
// is none or it may have changed. moved reports that Lua ran on the state
// since the mirror last synced it (another list callback of the same call).
func (v *vm) cached(cb int, state lua.LValue, moved bool) *listCache {
	lc := &v.lists[cb]
	if lc.list == nil {
		return nil
	}
	switch v.kind(cb) {
	case listRun:
		return nil
	case listStateful:
		if moved || lc.state != state || !v.stateUnchanged(state, lc.changes) {
			return nil
		}
	}
	if !lc.unwritten() {
		return nil
	}
	return lc
}

// unwritten reports whether neither the cached list nor any of its entries
// was written to since it was kept.
func (lc *listCache) unwritten() bool {
	if lc.list.Dirty() {
		return false
	}
	for _, e := range lc.entries {
		if e.Dirty() {
			return false
		}
	}
	return true
}

// again returns the cache when a list function that must run for every
// lookup returned the table it is built from, unchanged (a module-level
// list the function hands out): its index stands. A table returned twice in
// a row is indexed; a fresh list per call never is, as indexing it would
// cost more than the scan it saves.
func (v *vm) again(cb int, list *lua.LTable, key string) *listCache {
	lc := &v.lists[cb]
	switch {
	case lc.list == list && lc.key == key && lc.unwritten():
		return lc
	case lc.last == list:
		return v.keep(cb, list, key, nil, 0)
	}
	lc.last = list
	return nil
}

// cacheable reports whether a lookup may keep callback cb's result for
// state, and the mirror's Changes to keep with it.
func (v *vm) cacheable(cb int, state lua.LValue) (uint64, bool) {
	switch v.kind(cb) {
	case listRun:
		return 0, false
	case listStatic:
		return 0, true
	}
	if t, ok := state.(*lua.LTable); ok {
		if v.mirror == nil || !v.mirror.Synced(t) {
			return 0, false
		}
		return v.mirror.Changes(), true
	}
	return 0, true
}

// stateUnchanged reports whether state is what it was when the mirror's
// Changes read changes: a non-table is a value; a table must be the one the
// mirror last synced, with nothing changed since.
func (v *vm) stateUnchanged(state lua.LValue, changes uint64) bool {
	t, ok := state.(*lua.LTable)
	if !ok {
		return true
	}
	return v.mirror != nil && v.mirror.Synced(t) && v.mirror.Changes() == changes
}

// keep caches list, the result of callback cb for state, indexed by key
// (nothing when key is ""), and returns the cache. It clears the Dirty flags
// of the list and its entries; a table another cache holds may be among
// them, and that cache would then miss the write that set the flag: it is
// dropped.
func (v *vm) keep(cb int, list *lua.LTable, key string, state lua.LValue, changes uint64) *listCache {
	lc := &v.lists[cb]
	lc.reset()
	lc.list, lc.key = list, key
	if v.kind(cb) == listStateful {
		lc.state, lc.changes = state, changes // kept only where checked: no old state outlives its use
	}
	n := list.Len()
	lc.entries = make([]*lua.LTable, 0, n)
	if key != "" {
		lc.index = make(map[string]*lua.LTable, n)
	}
	var cleared map[*lua.LTable]bool // written tables whose flag keep clears
	clearDirty := func(t *lua.LTable) {
		if t.Dirty() {
			if cleared == nil {
				cleared = make(map[*lua.LTable]bool)
			}
			cleared[t] = true
			t.ClearDirty()
		}
	}
	for i := 1; i <= n; i++ {
		t, ok := list.RawGetInt(i).(*lua.LTable)
		if !ok {
			continue
		}
		lc.entries = append(lc.entries, t)
		clearDirty(t)
		if key == "" {
			continue
		}
		if k, ok := t.RawGetString(key).(lua.LString); ok {
			if _, dup := lc.index[string(k)]; !dup {
				lc.index[string(k)] = t
			}
		}
	}
	clearDirty(list)
	if cleared != nil {
		for i := range v.lists {
			if other := &v.lists[i]; i != cb && other.holds(cleared) {
				other.reset()
			}
		}
	}
	return lc
}

// holds reports whether the cached list or one of its entries is in set.
func (lc *listCache) holds(set map[*lua.LTable]bool) bool {
	if lc.list == nil {
		return false
	}
	if set[lc.list] {
		return true
	}
	for _, e := range lc.entries {
		if set[e] {
			return true
		}
	}
	return false
}
