package bridge

import (
	lua "github.com/yuin/gopher-lua"
)

// maxKeptClones bounds the identity map a Codec keeps for the next Clone.
const maxKeptClones = 1024

// Clone returns a deep copy of v inside this state, fully independent of v:
// every table reachable from v (values, keys and nothing else) is copied.
// Shared sub-tables stay shared and cycles stay cycles, so a backup restores
// exactly the shape it copied. A metatable is copied like any other table,
// but the array and object markers; functions, userdata (mcp.null included)
// and threads are copied by reference. Non-table values are
// returned as they are. The walk is iterative: no depth limit applies.
//
// The error is always nil today; it is kept so that a size limit can be added
// without changing callers.
func (c *Codec) Clone(v lua.LValue) (lua.LValue, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return v, nil
	}
	if c.clones == nil {
		c.clones = make(map[*lua.LTable]*lua.LTable)
	}
	root := c.cloneTable(t)
	for len(c.work) > 0 {
		w := c.work[len(c.work)-1]
		c.work = c.work[:len(c.work)-1]
		dst := c.clones[w.src]
		if mt, ok := w.src.Metatable.(*lua.LTable); ok && mt != c.arrayMeta && mt != c.objectMeta {
			dst.Metatable = c.cloneTable(mt) // a table of the value: a write through it must not reach src
		}
		for i := 1; i <= w.n; i++ {
			if v := w.src.RawGetInt(i); v != lua.LNil {
				dst.RawSetInt(i, c.cloneValue(v))
			}
		}
		for i := w.from; i < w.to; i++ {
			e := c.ents[i] // cloneValue may grow c.ents: index it afresh
			dst.RawSet(c.cloneValue(e.k), c.cloneValue(e.v))
		}
	}
	clear(c.ents)
	c.ents = c.ents[:0]
	clear(c.work[:cap(c.work)])
	if len(c.clones) > maxKeptClones {
		c.clones = nil
	} else {
		clear(c.clones)
	}
	return root, nil
}

// cloneWork is a copied table still to fill: its array part 1..n and its
// other entries c.ents[from:to].
type cloneWork struct {
	src      *lua.LTable
	n        int
	from, to int
}

func (c *Codec) cloneValue(v lua.LValue) lua.LValue {
	if t, ok := v.(*lua.LTable); ok {
		return c.cloneTable(t)
	}
	return v
}

// cloneTable returns the copy of src, creating it (sized, empty, queued for
// filling) on first sight.
func (c *Codec) cloneTable(src *lua.LTable) *lua.LTable {
	if dst, ok := c.clones[src]; ok {
		return dst
	}
	n := src.MaxN()
	from := len(c.ents)
	c.ents = appendHash(c.ents, src, n)
	dst := c.l.CreateTable(n, len(c.ents)-from)
	c.clones[src] = dst
	c.work = append(c.work, cloneWork{src: src, n: n, from: from, to: len(c.ents)})
	dst.Metatable = src.Metatable // a plain metatable is copied as dst is filled
	return dst
}

// CopyTo returns a deep copy of v built in dst's state, for a snapshot that
// another goroutine runs with. Tables are rebuilt (shared sub-tables stay
// shared, cycles stay cycles); this state's mcp.null becomes dst's, array and
// object markers become dst's markers, and any other metatable is copied like
// a table. A function, userdata, thread or channel anywhere inside is an
// *EncodeError naming its path from "state".
//
// CopyTo only reads v and this Codec, so it may run while other goroutines
// read them too; it must not run while anything writes to v.
func (c *Codec) CopyTo(dst *Codec, v lua.LValue) (lua.LValue, error) {
	cp := copier{from: c, to: dst}
	out, err := cp.value(v, -1, nil)
	for err == nil && len(cp.todo) > 0 {
		i := cp.todo[len(cp.todo)-1]
		cp.todo = cp.todo[:len(cp.todo)-1]
		err = cp.fill(i)
	}
	if err != nil {
		return nil, err.finish("state")
	}
	return out, nil
}

// copier carries one CopyTo. It remembers where it met every table, so that
// an error can name its path although the walk is iterative.
type copier struct {
	from, to *Codec
	copies   map[*lua.LTable]*lua.LTable
	nodes    []copyNode
	todo     []int // indexes into nodes of tables still to fill
	ents     []entry
}

type copyNode struct {
	src, dst *lua.LTable
	parent   int        // index of the enclosing table in nodes, -1 for the root
	key      lua.LValue // key under the parent (metaSeg{} for a metatable)
	n        int        // src's array part is 1..n
	from, to int        // src's other entries are ents[from:to]
}

func (cp *copier) value(v lua.LValue, parent int, key lua.LValue) (lua.LValue, *pathError) {
	switch v := v.(type) {
	case lua.LString, lua.LNumber, lua.LBool, *lua.LNilType:
		return v, nil
	case *lua.LTable:
		return cp.table(v, parent, key), nil
	case *lua.LUserData:
		if v == cp.from.null {
			return cp.to.null, nil
		}
	}
	return nil, cp.fail(parent, key, "a state copied to a fresh Lua state (a hot reload, a concurrent_tools call) cannot hold a "+typeName(v))
}

func (cp *copier) table(src *lua.LTable, parent int, key lua.LValue) *lua.LTable {
	if dst, ok := cp.copies[src]; ok {
		return dst
	}
	if cp.copies == nil {
		cp.copies = make(map[*lua.LTable]*lua.LTable)
	}
	n := src.MaxN()
	from := len(cp.ents)
	cp.ents = appendHash(cp.ents, src, n)
	dst := cp.to.l.CreateTable(n, len(cp.ents)-from)
	cp.copies[src] = dst
	cp.nodes = append(cp.nodes, copyNode{src: src, dst: dst, parent: parent, key: key, n: n, from: from, to: len(cp.ents)})
	cp.todo = append(cp.todo, len(cp.nodes)-1)
	return dst
}

func (cp *copier) fill(i int) *pathError {
	node := cp.nodes[i]
	src, dst := node.src, node.dst
	if mt, ok := src.Metatable.(*lua.LTable); ok {
		switch {
		case mt == cp.from.arrayMeta || markOf(src) == markArray:
			dst.Metatable = cp.to.arrayMeta
		case mt == cp.from.objectMeta || markOf(src) == markObject:
			dst.Metatable = cp.to.objectMeta
		default:
			dst.Metatable = cp.table(mt, i, metaSeg{})
		}
	}
	for j := 1; j <= node.n; j++ {
		v := src.RawGetInt(j)
		if v == lua.LNil {
			continue
		}
		cv, err := cp.value(v, i, lua.LNumber(j))
		if err != nil {
			return err
		}
		dst.RawSetInt(j, cv)
	}
	for j := node.from; j < node.to; j++ {
		e := cp.ents[j] // cp.value may grow cp.ents: index it afresh
		ck, err := cp.value(e.k, i, e.k)
		if err != nil {
			return err
		}
		cv, err := cp.value(e.v, i, e.k)
		if err != nil {
			return err
		}
		dst.RawSet(ck, cv)
	}
	return nil
}

// fail builds the error for the value under key in node parent.
func (cp *copier) fail(parent int, key lua.LValue, msg string) *pathError {
	err := newPathError(msg)
	if key != nil {
		err.under(key)
	}
	for p := parent; p >= 0; p = cp.nodes[p].parent {
		if k := cp.nodes[p].key; k != nil {
			err.under(k)
		}
	}
	return err
}
