package bridge

import (
	lua "github.com/yuin/gopher-lua"
)

// A Mirror keeps a deep copy of one value up to date across calls: the
// rollback backup of a session state. Sync compares the value with the copy it
// made last time and patches only what differs, so a state that a call left
// mostly unchanged costs one read of it and almost no allocation, where Clone
// rebuilds every table.
//
// The copy has the shape Clone gives: every table reachable from the value
// (through values and keys) is copied, shared sub-tables stay shared, cycles
// stay cycles, and metatables and non-table values are kept by reference.
//
// The copy belongs to the Mirror until Release: nothing else may write to it,
// since the next Sync patches it in place. A Mirror belongs to one state and
// is used by one goroutine at a time.
type Mirror struct {
	c     *Codec
	nodes map[*lua.LTable]*mirrorNode // source table -> its copy
	gen   uint32                      // the Sync in progress marks nodes with it
	todo  []*mirrorNode               // tables still to compare
	ents  []entry                     // scratch: the source's entries
	keys  []lua.LValue                // scratch: keys to remove from a copy
	free  []*mirrorNode               // nodes to reuse
}

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
		return v
	}
	if m.nodes == nil {
		m.nodes = make(map[*lua.LTable]*mirrorNode)
	}
	m.gen++
	visited := 0
	root := m.node(t)
	for len(m.todo) > 0 {
		nd := m.todo[len(m.todo)-1]
		m.todo = m.todo[:len(m.todo)-1]
		m.patch(nd)
		visited++
	}
	if visited < len(m.nodes) {
		// Tables the value no longer reaches: forget them, so that their
		// copies can be collected and are never shared with a new table.
		for src, nd := range m.nodes {
			if nd.gen != m.gen {
				delete(m.nodes, src)
				m.recycle(nd)
			}
		}
	}
	clear(m.todo[:cap(m.todo)])
	return root.dst
}

// Release forgets the copy: the caller now owns it (a rollback made it the
// live state), and the next Sync builds a new one.
func (m *Mirror) Release() {
	if len(m.nodes) == 0 {
		return
	}
	for _, nd := range m.nodes {
		m.recycle(nd)
	}
	if len(m.nodes) > maxKeptClones {
		m.nodes = nil
	} else {
		clear(m.nodes)
	}
	if len(m.free) > maxKeptClones {
		clear(m.free[maxKeptClones:])
		m.free = m.free[:maxKeptClones]
	}
}

func (m *Mirror) recycle(nd *mirrorNode) {
	*nd = mirrorNode{}
	m.free = append(m.free, nd)
}

// node returns the copy's node of src, marked for this Sync and queued for
// comparison on first sight; a table seen for the first time gets a new,
// empty copy.
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

// patch makes nd.dst hold the copies of nd.src's entries, and nothing else.
func (m *Mirror) patch(nd *mirrorNode) {
	src, dst := nd.src, nd.dst
	if dst.Metatable != src.Metatable {
		dst.Metatable = src.Metatable
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
	}
	clear(m.keys)
}
