package bridge

import (
	lua "github.com/yuin/gopher-lua"
)

// A Mirror keeps a deep copy of one value up to date across calls: the
// rollback backup of a session state. Sync patches the copy it made last
// time where the value changed, so a call that wrote to a few tables of a
// large state costs those tables, not a walk of the state.
//
// The copy has the shape Clone gives: every table reachable from the value
// (through values, keys and metatables) is copied, shared sub-tables stay
// shared, cycles stay cycles, and non-table values are kept by reference. A
// metatable is a table of the state like any other: kept by reference, Lua
// would write to the backup through it during a call (a rollback would not
// undo the write, and Snapshot would read a table the call is writing). Only
// the codec's array and object markers are kept, as CopyTo and Freeze keep
// them: they are the codec's, not the state's.
//
// Finding what changed relies on the write flag of the patched gopher-lua
// (LTable.Written): every write to a table sets it, and Sync clears it on the
// tables it copied. A Sync reads the flag of every table it knows (one load
// each) and compares only the written ones, plus the tables they now reach
// that it has never seen. Tables the value stopped reaching are forgotten by
// a full Sync, which compares everything it reaches and runs when the root
// table changes, when the known tables outnumber twice those reached at the
// last full Sync, and every fullSyncEvery Syncs. The flag is the Mirror's:
// nothing else may clear it on the tables of a mirrored value (luavm clears
// it only on states lent to stateless requests, which are never mirrored),
// and Go code that changes such a table behind the API (assigning its
// Metatable field) must call MarkWritten.
//
// The copy belongs to the Mirror until Release: nothing else may write to it,
// since the next Sync patches it in place. A Mirror belongs to one state and
// is used by one goroutine at a time.
type Mirror struct {
	c     *Codec
	nodes map[*lua.LTable]*mirrorNode // source table -> its copy
	// all holds the values of nodes and srcs their sources, at the same
	// indexes: the scan of written tables reads srcs, one load less per
	// table. A full Sync rebuilds both.
	all  []*mirrorNode
	srcs []*lua.LTable
	root *mirrorNode // the last Sync's root; nil when there is none
	gen  uint32      // the Sync in progress marks nodes with it
	// full is set during a Sync that compares every table it reaches (and
	// queues every known table it meets), clear during one that compares
	// only written and new tables.
	full    bool
	partial int           // Syncs since the last full one
	live    int           // tables the last full Sync reached
	changes uint64        // Syncs that changed the copy, see Changes
	changed bool          // the Sync in progress changed the copy
	todo    []*mirrorNode // tables still to compare
	ents    []entry       // scratch: the source's entries
	keys    []lua.LValue  // scratch: keys to remove from a copy
	free    []*mirrorNode // nodes to reuse
}

// fullSyncEvery bounds how long a Mirror keeps the copies of tables its value
// no longer reaches: at most this many Syncs.
const fullSyncEvery = 4096

type mirrorNode struct {
	src, dst *lua.LTable
	gen      uint32
	n        int // non-nil entries in dst
}

// NewMirror returns an empty Mirror of values of this state.
func (c *Codec) NewMirror() *Mirror {
	return &Mirror{c: c}
}

// Sync makes the copy a deep copy of v and returns it (for a non-table, v
// itself).
func (m *Mirror) Sync(v lua.LValue) lua.LValue {
	t, ok := v.(*lua.LTable)
	if !ok {
		m.Release()
		m.changes++
		return v
	}
	if m.nodes == nil {
		m.nodes = make(map[*lua.LTable]*mirrorNode)
	}
	m.gen++
	m.changed = false
	m.full = m.root == nil || m.root.src != t || m.partial >= fullSyncEvery || len(m.all) > 2*m.live+64
	if m.full {
		m.root = m.node(t)
	} else {
		m.partial++
		for i, src := range m.srcs {
			if src.Written() {
				nd := m.all[i]
				nd.gen = m.gen
				m.todo = append(m.todo, nd)
			}
		}
	}
	for len(m.todo) > 0 {
		nd := m.todo[len(m.todo)-1]
		m.todo = m.todo[:len(m.todo)-1]
		m.patch(nd)
		nd.src.ClearWritten()
	}
	clear(m.todo[:cap(m.todo)])
	if m.full {
		m.sweep()
	}
	if m.changed {
		m.changes++
	}
	return m.root.dst
}

// sweep ends a full Sync: the tables it did not reach are forgotten, so that
// their copies can be collected and are never shared with a new table.
func (m *Mirror) sweep() {
	kept := m.all[:0]
	for _, nd := range m.all {
		if nd.gen == m.gen {
			kept = append(kept, nd)
			continue
		}
		delete(m.nodes, nd.src)
		m.recycle(nd)
		m.changed = true
	}
	clear(m.all[len(kept):])
	m.all = kept
	m.srcs = m.srcs[:0]
	for _, nd := range kept {
		m.srcs = append(m.srcs, nd.src)
	}
	clear(m.srcs[len(kept):cap(m.srcs)])
	m.live = len(kept)
	m.partial = 0
}

// Changes counts the Syncs that had to change the copy (a table or entry
// added, changed or removed, a metatable set, a table forgotten), and every
// Sync of a non-table. Two Syncs of the same table with the same Changes
// after both saw the same value: nothing reachable from it changed between
// them, even if tables were written (to the values they held).
func (m *Mirror) Changes() uint64 { return m.changes }

// Synced reports whether the last Sync was of t and the Mirror still holds
// its copy.
func (m *Mirror) Synced(t *lua.LTable) bool { return m.root != nil && m.root.src == t }

// Release forgets the copy: the caller may keep it, and the next Sync builds
// a new one. (A rollback no longer hands the copy over: Restore.)
func (m *Mirror) Release() {
	m.root = nil
	if len(m.nodes) == 0 {
		return
	}
	m.changes++
	for _, nd := range m.all {
		m.recycle(nd)
	}
	clear(m.all)
	m.all = m.all[:0]
	clear(m.srcs)
	m.srcs = m.srcs[:0]
	if len(m.nodes) > maxKeptClones {
		m.nodes = nil
		m.all, m.srcs = nil, nil
	} else {
		clear(m.nodes)
	}
	if len(m.free) > maxKeptClones {
		clear(m.free[maxKeptClones:])
		m.free = m.free[:maxKeptClones]
	}
}

// Restore puts the value of the last Sync back in place and returns it (a
// rollback): every table the Mirror knows that was written since gets back
// the entries and metatable it had then, and the tables made since are no
// longer reached from it. The tables of the value keep their identity, so
// whatever else holds one (a module-level local, a closure, a coroutine)
// sees the rollback too; making the copy the live value instead would leave
// those holding tables that no longer belong to the value, whose writes
// would then vanish without a word. The copy stays the Mirror's, equal to
// the value again. Restore returns nil when the Mirror holds no copy (the
// last Sync was of a non-table, or Release came since).
//
// A rollback walks the copy (the tables of the value at the Sync) and
// rewrites those written since.
func (m *Mirror) Restore() lua.LValue {
	if m.root == nil {
		return nil
	}
	byCopy := make(map[*lua.LTable]*mirrorNode, len(m.all))
	for _, nd := range m.all {
		byCopy[nd.dst] = nd
	}
	// Only the tables the copy reaches are the value's: one the Mirror still
	// knows from an earlier Sync (a partial Sync forgets nothing) may be a
	// module's own table now, whose writes are not rolled back. Its write
	// flag stays, for the next Sync.
	m.gen++
	m.root.gen = m.gen
	todo := append(m.todo[:0], m.root)
	reach := func(v lua.LValue) {
		if t, ok := v.(*lua.LTable); ok {
			if nd := byCopy[t]; nd != nil && nd.gen != m.gen {
				nd.gen = m.gen
				todo = append(todo, nd)
			}
		}
	}
	for len(todo) > 0 {
		nd := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		reach(nd.dst.Metatable)
		nd.dst.ForEach(func(k, v lua.LValue) {
			reach(k)
			reach(v)
		})
		if nd.src.Written() {
			m.restore(nd, byCopy)
			nd.src.ClearWritten()
		}
	}
	clear(todo[:cap(todo)])
	m.todo = todo[:0]
	m.changes++ // what was derived from the value during the call is not of it
	return m.root.src
}

// restore gives nd.src the entries and metatable its copy holds, the copies
// of tables standing for their sources (byCopy: copy -> node).
func (m *Mirror) restore(nd *mirrorNode, byCopy map[*lua.LTable]*mirrorNode) {
	source := func(v lua.LValue) lua.LValue {
		if t, ok := v.(*lua.LTable); ok {
			if nd := byCopy[t]; nd != nil {
				return nd.src
			}
		}
		return v // not a table, or a marker
	}
	src, dst := nd.src, nd.dst
	if mt := source(dst.Metatable); src.Metatable != mt {
		src.Metatable = mt
	}
	// The keys the source gained: a table key stands for its copy, and a
	// table the Mirror does not know is new since the Sync.
	m.keys = m.keys[:0]
	src.ForEach(func(k, _ lua.LValue) {
		ck := k
		if kt, ok := k.(*lua.LTable); ok {
			kn := m.nodes[kt]
			if kn == nil {
				m.keys = append(m.keys, k)
				return
			}
			ck = kn.dst
		}
		if dst.RawGet(ck) == lua.LNil {
			m.keys = append(m.keys, k)
		}
	})
	for _, k := range m.keys {
		src.RawSet(k, lua.LNil)
	}
	clear(m.keys)
	dst.ForEach(func(k, v lua.LValue) {
		sk, sv := source(k), source(v)
		if src.RawGet(sk) != sv {
			src.RawSet(sk, sv)
		}
	})
}

func (m *Mirror) recycle(nd *mirrorNode) {
	*nd = mirrorNode{}
	m.free = append(m.free, nd)
}

// node returns the copy's node of src. A table seen for the first time gets
// a new, empty copy, queued to be filled; during a full Sync, a known table
// is queued for comparison on its first sight in this Sync.
func (m *Mirror) node(src *lua.LTable) *mirrorNode {
	nd := m.nodes[src]
	if nd == nil {
		if k := len(m.free); k > 0 {
			nd = m.free[k-1]
			m.free[k-1] = nil
			m.free = m.free[:k-1]
		} else {
			nd = new(mirrorNode)
		}
		// Size the copy; patch may be walking m.ents, so count past its end.
		n, start := src.MaxN(), len(m.ents)
		m.ents = appendHash(m.ents, src, n)
		hash := len(m.ents) - start
		clear(m.ents[start:])
		m.ents = m.ents[:start]
		*nd = mirrorNode{src: src, dst: m.c.l.CreateTable(n, hash)}
		m.nodes[src] = nd
		m.all = append(m.all, nd)
		m.srcs = append(m.srcs, src)
		m.changed = true
	} else if !m.full {
		return nd
	}
	if nd.gen != m.gen {
		nd.gen = m.gen
		m.todo = append(m.todo, nd)
	}
	return nd
}

// value is the copy of v: its table's copy, or v itself.
func (m *Mirror) value(v lua.LValue) lua.LValue {
	if t, ok := v.(*lua.LTable); ok {
		return m.node(t).dst
	}
	return v
}

// meta is the copy's metatable for a source table's metatable mt: the copy
// of mt, or mt itself when it is one of the codec's markers or not a table.
// The write flag covers a metatable as any table: a write to mt marks mt, and
// setmetatable marks the table it changes.
func (m *Mirror) meta(mt lua.LValue) lua.LValue {
	if t, ok := mt.(*lua.LTable); ok && t != m.c.arrayMeta && t != m.c.objectMeta {
		return m.node(t).dst
	}
	return mt
}

// patch makes nd.dst hold the copies of nd.src's entries, and nothing else.
func (m *Mirror) patch(nd *mirrorNode) {
	src, dst := nd.src, nd.dst
	if want := m.meta(src.Metatable); dst.Metatable != want {
		dst.Metatable = want
		m.changed = true
	}
	count := 0
	n := src.MaxN()
	for i := 1; i <= n; i++ {
		v := src.RawGetInt(i)
		if v == lua.LNil {
			continue
		}
		count++
		want := m.value(v)
		if have := dst.RawGetInt(i); have != want {
			if have == lua.LNil {
				nd.n++
			}
			dst.RawSetInt(i, want)
			m.changed = true
		}
	}
	m.ents = appendHash(m.ents[:0], src, n)
	for i := range m.ents {
		e := m.ents[i] // m.value may grow m.ents: index it afresh
		count++
		k, want := m.value(e.k), m.value(e.v)
		if have := dst.RawGet(k); have != want {
			if have == lua.LNil {
				nd.n++
			}
			dst.RawSet(k, want)
			m.changed = true
		}
	}
	clear(m.ents)
	if nd.n > count {
		m.prune(nd)
	}
}

// prune removes from nd.dst the keys nd.src no longer has. A table key of
// the copy stands for the source table whose copy it is.
func (m *Mirror) prune(nd *mirrorNode) {
	var orig map[*lua.LTable]*lua.LTable // copy -> source, built on demand
	m.keys = m.keys[:0]
	for k, _ := nd.dst.Next(lua.LNil); k != lua.LNil; k, _ = nd.dst.Next(k) {
		sk := k
		if kt, ok := k.(*lua.LTable); ok {
			if orig == nil {
				orig = make(map[*lua.LTable]*lua.LTable, len(m.nodes))
				for src, other := range m.nodes {
					orig[other.dst] = src
				}
			}
			if s, ok := orig[kt]; ok {
				sk = s
			}
		}
		if nd.src.RawGet(sk) == lua.LNil {
			m.keys = append(m.keys, k)
		}
	}
	for _, k := range m.keys {
		nd.dst.RawSet(k, lua.LNil)
		nd.n--
		m.changed = true
	}
	clear(m.keys)
}
