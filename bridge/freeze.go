package bridge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Freeze and Thaw keep a session state outside any Lua state, in a few
// bytes, while its session hibernates (luavm). The form is luamcp's own and
// lives only in memory: it is read back by the same binary, never stored.
//
// Layout (integers are unsigned varints unless said otherwise):
//
//	version byte (1)
//	T                          tables in the graph, numbered 0..T-1 in the order met
//	T headers                  kind byte (0 plain, 1 array marker, 2 object marker,
//	                           3 other metatable, followed by its table number),
//	                           n (array part 1..n), h (other entries)
//	root value
//	T bodies, in number order  n values, then h key/value pairs
//
// A value is a tag byte and its payload: nil, false, true, an integer
// (zigzag varint), a float (8 bytes, little endian), a new string (length,
// bytes; it gets the next string number), a string met before (its number:
// a short one by its contents, a long one by its bytes' address),
// a table (its number), mcp.null. Numbering tables and strings keeps shared
// sub-tables shared and cycles cycles, and writes a repeated key once. The
// walk is iterative: no depth limit applies.
const freezeVersion = 1

const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt
	tagFloat
	tagString
	tagStringRef
	tagTable
	tagNull
)

const (
	kindPlain byte = iota
	kindArray
	kindObject
	kindMeta
)

// maxInterned is the longest string Freeze numbers for reuse by its
// contents; a longer one is numbered by its bytes' address (longString):
// hashing it would cost as much as writing it, and the repeats that matter
// are references to one string (Lua strings are references: a megabyte
// string put in 200 places of a state holds one megabyte, and was written
// 200 times).
const maxInterned = 128

// longString identifies a string longer than maxInterned by its bytes:
// two Lua strings with the same bytes are one string.
type longString struct {
	data *byte
	n    int
}

// errCorrupt is returned by Thaw for bytes Freeze did not write.
var errCorrupt = errors.New("bridge: thaw: corrupt frozen state")

// freezer carries one Freeze. It remembers where it met every table, so that
// an error can name its path although the walk is iterative.
type freezer struct {
	c     *Codec
	max   int // the most bytes the frozen form may take (Freeze)
	ids   map[*lua.LTable]int
	nodes []freezeNode
	strs  map[string]int // short strings written, by number
	long  map[longString]int
	nstr  int // strings written (each new one gets the next number)
	ents  []entry
	body  []byte
}

type freezeNode struct {
	src      *lua.LTable
	parent   int        // the enclosing table's number, -1 for the root
	key      lua.LValue // key under the parent (metaSeg{} for a metatable)
	n        int        // src's array part is 1..n
	from, to int        // src's other entries are ents[from:to]
	kind     byte       // kindPlain, kindArray, kindObject or kindMeta
	meta     int        // kindMeta: the metatable's number
}

// Freeze returns the frozen form of v, a value of this state: what Thaw
// turns back into an equal value in any state. It keeps what CopyTo keeps
// (tables with their sharing and cycles, strings, numbers, booleans,
// mcp.null, the array and object markers, other metatables as tables) and
// refuses the same: a function, userdata, thread or channel anywhere inside
// is an *EncodeError naming its path from "state".
//
// The frozen form may take as much as the state's memory limit, no more: a
// state within its budget can still be larger frozen than live, as strings
// that share their bytes (s:sub(i) of one long s, for every i) are written
// whole each, and N of them would make N copies of the bytes outside any
// budget, and again in the state that thaws them. Past the limit Freeze
// fails, and the caller keeps the state where it is. A state without a limit
// freezes whole.
//
// Freeze only reads v.
func (c *Codec) Freeze(v lua.LValue) ([]byte, error) {
	f := freezer{c: c, max: math.MaxInt}
	if limit := c.l.MemoryLimit(); limit > 0 && limit < math.MaxInt {
		f.max = int(limit)
	}
	f.body = make([]byte, 0, 256)
	if err := f.value(v, -1, nil); err != nil {
		return nil, err.finish("state")
	}
	for i := 0; i < len(f.nodes); i++ { // nodes grows as bodies meet new tables
		if err := f.fill(i); err != nil {
			return nil, err.finish("state")
		}
	}
	size := 1 + binary.MaxVarintLen64 + 4*len(f.nodes) + len(f.body)
	if size > f.max {
		return nil, newPathError(f.outgrows()).finish("state")
	}
	out := make([]byte, 0, size)
	out = append(out, freezeVersion)
	out = binary.AppendUvarint(out, uint64(len(f.nodes)))
	for _, nd := range f.nodes {
		out = append(out, nd.kind)
		if nd.kind == kindMeta {
			out = binary.AppendUvarint(out, uint64(nd.meta))
		}
		out = binary.AppendUvarint(out, uint64(nd.n))
		out = binary.AppendUvarint(out, uint64(nd.to-nd.from))
	}
	return append(out, f.body...), nil
}

func (f *freezer) value(v lua.LValue, parent int, key lua.LValue) *pathError {
	switch v := v.(type) {
	case *lua.LNilType:
		f.body = append(f.body, tagNil)
	case lua.LBool:
		if v {
			f.body = append(f.body, tagTrue)
		} else {
			f.body = append(f.body, tagFalse)
		}
	case lua.LNumber:
		x := float64(v)
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 && !(x == 0 && math.Signbit(x)) {
			f.body = append(f.body, tagInt)
			f.body = binary.AppendVarint(f.body, int64(x))
		} else {
			f.body = append(f.body, tagFloat)
			f.body = binary.LittleEndian.AppendUint64(f.body, math.Float64bits(x))
		}
	case lua.LString:
		s := string(v)
		if id, ok := f.stringID(s); ok {
			f.body = append(f.body, tagStringRef)
			f.body = binary.AppendUvarint(f.body, uint64(id))
			return nil
		}
		if len(s) > f.max-len(f.body) {
			if k, ok := key.(lua.LString); ok && string(k) == s {
				key = nil // s is the key: name the table, not s
			}
			return f.fail(parent, key, f.outgrows())
		}
		f.nstr++ // Thaw numbers every new string alike
		f.grow(1 + binary.MaxVarintLen64 + len(s))
		f.body = append(f.body, tagString)
		f.body = binary.AppendUvarint(f.body, uint64(len(s)))
		f.body = append(f.body, s...)
	case *lua.LTable:
		f.body = append(f.body, tagTable)
		f.body = binary.AppendUvarint(f.body, uint64(f.table(v, parent, key)))
	case *lua.LUserData:
		if v == f.c.null {
			f.body = append(f.body, tagNull)
			return nil
		}
		return f.fail(parent, key, "a hibernating session's state cannot hold a "+typeName(v))
	default:
		return f.fail(parent, key, "a hibernating session's state cannot hold a "+typeName(v))
	}
	return nil
}

// stringID returns the number of s when it was written before; otherwise
// it gives s the next number (f.nstr) and reports false.
func (f *freezer) stringID(s string) (int, bool) {
	if len(s) <= maxInterned {
		return number(&f.strs, s, f.nstr)
	}
	return number(&f.long, longString{unsafe.StringData(s), len(s)}, f.nstr)
}

// number returns the number *m gave k, or gives k the number next (making
// the map on first use) and reports false.
func number[K comparable](m *map[K]int, k K, next int) (int, bool) {
	id, ok := (*m)[k]
	if !ok {
		if *m == nil {
			*m = make(map[K]int)
		}
		(*m)[k] = next
	}
	return id, ok
}

// table returns the number of src, numbering it (and its metatable) on first
// sight.
func (f *freezer) table(src *lua.LTable, parent int, key lua.LValue) int {
	if id, ok := f.ids[src]; ok {
		return id
	}
	if f.ids == nil {
		f.ids = make(map[*lua.LTable]int)
	}
	id := len(f.nodes)
	f.ids[src] = id
	n := src.MaxN()
	from := len(f.ents)
	f.ents = appendHash(f.ents, src, n)
	f.nodes = append(f.nodes, freezeNode{src: src, parent: parent, key: key, n: n, from: from, to: len(f.ents)})
	if mt, ok := src.Metatable.(*lua.LTable); ok {
		switch {
		case mt == f.c.arrayMeta || markOf(src) == markArray:
			f.nodes[id].kind = kindArray
		case mt == f.c.objectMeta || markOf(src) == markObject:
			f.nodes[id].kind = kindObject
		default:
			meta := f.table(mt, id, metaSeg{})
			f.nodes[id].kind, f.nodes[id].meta = kindMeta, meta
		}
	}
	return id
}

// fill writes the body of table i.
func (f *freezer) fill(i int) *pathError {
	node := f.nodes[i] // f.value may grow f.nodes: copy the node out
	for j := 1; j <= node.n; j++ {
		if err := f.value(node.src.RawGetInt(j), i, lua.LNumber(j)); err != nil {
			return err
		}
	}
	for j := node.from; j < node.to; j++ {
		e := f.ents[j] // f.value may grow f.ents: index it afresh
		if err := f.value(e.k, i, e.k); err != nil {
			return err
		}
		if err := f.value(e.v, i, e.k); err != nil {
			return err
		}
	}
	return nil
}

// grow makes room for n more bytes in f.body, doubling it (up to f.max):
// append grows a large slice by a quarter at a time, which allocates some
// four times the final size for a body of long strings.
func (f *freezer) grow(n int) {
	if n <= cap(f.body)-len(f.body) {
		return
	}
	c := max(len(f.body)+n, min(2*cap(f.body), f.max))
	f.body = append(make([]byte, 0, c), f.body...)
}

// outgrows is the message of a frozen form past f.max.
func (f *freezer) outgrows() string {
	return fmt.Sprintf("%v (frozen, the state outgrows its memory limit of %d MiB: strings that share their bytes are written whole each)",
		lua.ErrMemoryLimit, f.max>>20)
}

// fail builds the error for the value under key in table parent.
func (f *freezer) fail(parent int, key lua.LValue, msg string) *pathError {
	err := newPathError(msg)
	if key != nil {
		err.under(key)
	}
	for p := parent; p >= 0; p = f.nodes[p].parent {
		if k := f.nodes[p].key; k != nil {
			err.under(k)
		}
	}
	return err
}

// thawer reads one frozen form. With c nil it only checks it (CheckFrozen):
// it builds no table, and stands a placeholder for mcp.null.
type thawer struct {
	c      *Codec
	b      []byte
	tables []*lua.LTable
	strs   []lua.LString
	sizes  [][2]int // each table's n and h
}

// Thaw builds in this state the value frozen in b (by Freeze, in any state):
// mcp.null and the markers become this state's. Bytes Freeze did not write
// are an error, never a panic.
func (c *Codec) Thaw(b []byte) (lua.LValue, error) {
	t := thawer{c: c, b: b}
	return t.thaw()
}

// CheckFrozen reports whether Thaw would take b, without a Lua state: a
// frozen form read from outside the process (a saved session) is checked
// before anything relies on it.
func CheckFrozen(b []byte) error {
	t := thawer{b: b}
	_, err := t.thaw()
	return err
}

func (t *thawer) thaw() (lua.LValue, error) {
	c := t.c
	if len(t.b) == 0 || t.b[0] != freezeVersion {
		return nil, errCorrupt
	}
	t.b = t.b[1:]
	n, ok := t.uvarint()
	if !ok || n > uint64(len(t.b)) { // every table takes 3 bytes at least
		return nil, errCorrupt
	}
	t.tables = make([]*lua.LTable, n)
	t.sizes = make([][2]int, n)
	metas := make([]int, 0, 4) // pairs: table, its metatable
	// slots counts the values the tables announce: each takes a byte at
	// least, so a form whose tables announce more than its length is
	// corrupt, and is refused before its sizes are allocated (a few bytes
	// announcing a million tables of a million slots each).
	slots := uint64(0)
	for i := range t.tables {
		kind, ok := t.byte()
		if !ok {
			return nil, errCorrupt
		}
		meta := uint64(0)
		if kind == kindMeta {
			if meta, ok = t.uvarint(); !ok || meta >= n {
				return nil, errCorrupt
			}
		}
		na, ok1 := t.uvarint()
		nh, ok2 := t.uvarint()
		if !ok1 || !ok2 || na > uint64(len(t.b)) || nh > uint64(len(t.b)) {
			return nil, errCorrupt
		}
		if slots += na + 2*nh; slots > uint64(len(t.b)) {
			return nil, errCorrupt
		}
		var tab *lua.LTable
		if c != nil {
			tab = c.l.CreateTable(int(na), int(nh))
		}
		switch kind {
		case kindPlain:
		case kindArray:
			if c != nil {
				tab.Metatable = c.arrayMeta
			}
		case kindObject:
			if c != nil {
				tab.Metatable = c.objectMeta
			}
		case kindMeta:
			metas = append(metas, i, int(meta))
		default:
			return nil, errCorrupt
		}
		t.tables[i] = tab
		t.sizes[i] = [2]int{int(na), int(nh)}
	}
	for i := 0; c != nil && i < len(metas); i += 2 {
		t.tables[metas[i]].Metatable = t.tables[metas[i+1]]
	}
	root, err := t.value()
	if err != nil {
		return nil, err
	}
	for i, tab := range t.tables {
		na, nh := t.sizes[i][0], t.sizes[i][1]
		for j := 1; j <= na; j++ {
			v, err := t.value()
			if err != nil {
				return nil, err
			}
			if v != lua.LNil && c != nil {
				tab.RawSetInt(j, v)
			}
		}
		for range nh {
			k, err := t.value()
			if err != nil {
				return nil, err
			}
			v, err := t.value()
			if err != nil {
				return nil, err
			}
			// Freeze writes no array index among the hash entries (they are
			// the array part's), and setting one here would grow the array
			// part up to it: a few bytes announcing a table of millions of
			// slots, past the check of the sizes above.
			if k == lua.LNil || isArrayIndex(k) {
				return nil, errCorrupt
			}
			if c != nil {
				tab.RawSet(k, v)
			}
		}
	}
	if len(t.b) != 0 {
		return nil, errCorrupt
	}
	return root, nil
}

func (t *thawer) byte() (byte, bool) {
	if len(t.b) == 0 {
		return 0, false
	}
	x := t.b[0]
	t.b = t.b[1:]
	return x, true
}

func (t *thawer) uvarint() (uint64, bool) {
	x, n := binary.Uvarint(t.b)
	if n <= 0 {
		return 0, false
	}
	t.b = t.b[n:]
	return x, true
}

func (t *thawer) value() (lua.LValue, error) {
	tag, ok := t.byte()
	if !ok {
		return nil, errCorrupt
	}
	switch tag {
	case tagNil:
		return lua.LNil, nil
	case tagFalse:
		return lua.LFalse, nil
	case tagTrue:
		return lua.LTrue, nil
	case tagInt:
		x, n := binary.Varint(t.b)
		if n <= 0 {
			return nil, errCorrupt
		}
		t.b = t.b[n:]
		return boxInt(int(x)), nil
	case tagFloat:
		if len(t.b) < 8 {
			return nil, errCorrupt
		}
		x := math.Float64frombits(binary.LittleEndian.Uint64(t.b))
		t.b = t.b[8:]
		return lua.LNumber(x), nil
	case tagString:
		n, ok := t.uvarint()
		if !ok || n > uint64(len(t.b)) {
			return nil, errCorrupt
		}
		s := lua.LString(t.b[:n])
		t.b = t.b[n:]
		t.strs = append(t.strs, s)
		return s, nil
	case tagStringRef:
		id, ok := t.uvarint()
		if !ok || id >= uint64(len(t.strs)) {
			return nil, errCorrupt
		}
		return t.strs[id], nil
	case tagTable:
		id, ok := t.uvarint()
		if !ok || id >= uint64(len(t.tables)) {
			return nil, errCorrupt
		}
		return t.tables[id], nil
	case tagNull:
		if t.c == nil {
			return lua.LTrue, nil // a placeholder: not nil, as null is not
		}
		return t.c.null, nil
	}
	return nil, errCorrupt
}
