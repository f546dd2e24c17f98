// Package bridge is the one seam between Go and Lua values: a JSON codec that
// reads and writes gopher-lua values directly (no map[string]any on the way),
// deep copies of Lua values within and across states, and the `mcp` Lua
// module that scripts require.
//
// Every Codec and Module belongs to one *lua.LState and, like the state, is
// used by one goroutine at a time. The single exception is CopyTo, which only
// reads its source and may run while another goroutine reads the same values.
//
// JSON and Lua meet as the script contract says ("Values between JSON and
// Lua"):
//
//   - object <-> table with string keys; array <-> sequence 1..n;
//   - null <-> mcp.null, a userdata unique to the state (never a hole);
//   - numbers <-> numbers: integers are exact up to 2^53, larger ones become
//     the nearest float64 (as in JavaScript); integral values below 1e21
//     encode as plain integers with their exact digits (-0 as 0), others in
//     the shortest form that reads back to the same float64;
//   - decoded arrays and objects carry the state's array/object marker
//     metatable, so an empty [] or {} encodes back as it came;
//   - an unmarked table encodes as an array when its keys are exactly 1..n,
//     as an object when they are all strings, and as {} when it is empty.
package bridge

import (
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/internal/logcap"
)

// MaxDepth bounds the nesting of arrays and objects, in both directions, so
// that hostile input cannot exhaust the Go stack. The root container is at
// depth 1.
const MaxDepth = 200

// markerField is the metatable field that tells encoders which JSON kind a
// table stands for. It makes a marker recognisable without its Codec (IsArray).
const markerField = "__jsontype"

// Codec converts between JSON text and the Lua values of one LState.
type Codec struct {
	l          *lua.LState
	null       *lua.LUserData
	arrayMeta  *lua.LTable
	objectMeta *lua.LTable

	// Scratch space, reused between calls by the owning goroutine only.
	stack  []lua.LValue          // decode: values of the containers being read
	text   []byte                // decode: unescaped string bytes
	intern map[string]lua.LValue // decode: boxed object keys seen recently
	buf    []byte                // encode: output buffer of Encode
	ents   []entry               // encode: pending object entries
	seen   []*lua.LTable         // encode: tables on the current path (cycle check)
	room   budget                // encode: what the output may take (budget.go)
	tables int                   // encode: tables written, for context checks
	// next is the role (schema.go) of the table appendValue writes next:
	// set by the one writing its container, taken by appendTable.
	next role
	// guide is the schema AppendEncodeGuided follows (guide.go); its next
	// is taken by appendTable, as next is.
	guide  guide
	clones map[*lua.LTable]*lua.LTable // Clone: source table -> copy
	work   []cloneWork                 // Clone: tables still to fill
}

// entry is one key/value pair of a table; s is the key as a JSON object key.
type entry struct {
	k, v lua.LValue
	s    string
}

// NewCodec returns the codec of L, with L's own mcp.null and array/object
// markers.
func NewCodec(L *lua.LState) *Codec {
	c := &Codec{l: L}
	nullMeta := L.CreateTable(0, 2)
	nullMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("null"))
		return 1
	}))
	nullMeta.RawSetString(markerField, lua.LString("null"))
	c.null = &lua.LUserData{Metatable: nullMeta}
	c.arrayMeta = L.CreateTable(0, 1)
	c.arrayMeta.RawSetString(markerField, lua.LString("array"))
	c.objectMeta = L.CreateTable(0, 1)
	c.objectMeta.RawSetString(markerField, lua.LString("object"))
	return c
}

// Null returns this state's mcp.null, the value JSON null decodes to.
func (c *Codec) Null() *lua.LUserData { return c.null }

// IsNull reports whether v is this state's mcp.null.
func (c *Codec) IsNull(v lua.LValue) bool { return v == lua.LValue(c.null) }

// MarkArray gives t this state's array marker, so that it encodes as a JSON
// array even when empty, and returns t.
func (c *Codec) MarkArray(t *lua.LTable) *lua.LTable {
	t.Metatable = c.arrayMeta
	t.MarkWritten() // the change must show to a Mirror (mcp.array on a state table)
	return t
}

// MarkObject gives t this state's object marker, so that it encodes as a JSON
// object even when empty (integer keys become strings), and returns t.
func (c *Codec) MarkObject(t *lua.LTable) *lua.LTable {
	t.Metatable = c.objectMeta
	t.MarkWritten() // the change must show to a Mirror (mcp.object on a state table)
	return t
}

// IsArray reports whether t carries an array marker (mcp.array, or a decoded
// JSON array) of any state.
func IsArray(t *lua.LTable) bool { return markOf(t) == markArray }

// IsObject reports whether t carries an object marker (mcp.object, or a
// decoded JSON object) of any state.
func IsObject(t *lua.LTable) bool { return markOf(t) == markObject }

type mark uint8

const (
	markNone mark = iota
	markArray
	markObject
)

func markOf(t *lua.LTable) mark {
	mt, ok := t.Metatable.(*lua.LTable)
	if !ok {
		return markNone
	}
	switch mt.RawGetString(markerField) {
	case lua.LString("array"):
		return markArray
	case lua.LString("object"):
		return markObject
	}
	return markNone
}

// mark is markOf with a fast path for this codec's own markers.
func (c *Codec) mark(t *lua.LTable) mark {
	switch t.Metatable {
	case lua.LNil:
		return markNone
	case c.arrayMeta:
		return markArray
	case c.objectMeta:
		return markObject
	}
	return markOf(t)
}

// isArrayIndex reports whether gopher-lua keeps key k in a table's array part.
func isArrayIndex(k lua.LValue) bool {
	n, ok := k.(lua.LNumber)
	return ok && n >= 1 && n < lua.LNumber(lua.MaxArrayIndex) && n == lua.LNumber(int64(n))
}

// appendHash appends to ents every entry of t outside its array part 1..n
// (n = t.MaxN()), without modifying t.
func appendHash(ents []entry, t *lua.LTable, n int) []entry {
	start := len(ents)
	var k lua.LValue = lua.LNil
	if n > 0 {
		k = boxInt(n)
	}
	for {
		var v lua.LValue
		k, v = t.Next(k)
		if k == lua.LNil {
			return ents
		}
		if isArrayIndex(k) {
			// Only Go code (RawSetH) can put such a key in the hash part, where
			// Lua never sees it and Next cannot step past it. Walk the table
			// the slow way instead.
			return appendHashSlow(ents[:start], t)
		}
		ents = append(ents, entry{k: k, v: v})
	}
}

func appendHashSlow(ents []entry, t *lua.LTable) []entry {
	t.ForEach(func(k, v lua.LValue) {
		if !isArrayIndex(k) {
			ents = append(ents, entry{k: k, v: v})
		}
	})
	return ents
}

// An EncodeError reports a Lua value that has no JSON form (or no copy in
// another state), and where it sits.
type EncodeError struct {
	Path string // from the root given to Encode, e.g. result.content[2].data
	Msg  string
}

func (e *EncodeError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// pathError is an EncodeError under construction: segments are collected
// innermost first while the recursion unwinds, so that the success path pays
// nothing for paths.
type pathError struct {
	segs []lua.LValue // keys, innermost first; metaSeg{} for a metatable
	msg  string
}

func (e *pathError) Error() string { return e.msg }

// metaSeg is the path segment standing for a table's metatable. Its own type
// keeps it apart from every real key.
type metaSeg struct{}

func (metaSeg) String() string       { return "<metatable>" }
func (metaSeg) Type() lua.LValueType { return lua.LTNil }

func newPathError(format string, args ...any) *pathError {
	if len(args) > 0 {
		format = fmt.Sprintf(format, args...)
	}
	return &pathError{msg: format}
}

func (e *pathError) under(key lua.LValue) *pathError {
	e.segs = append(e.segs, key)
	return e
}

func (e *pathError) finish(root string) *EncodeError {
	var b strings.Builder
	b.WriteString(root)
	for i := len(e.segs) - 1; i >= 0; i-- {
		writeSeg(&b, e.segs[i])
	}
	p := b.String()
	if root == "" {
		p = strings.TrimPrefix(p, ".")
	}
	return &EncodeError{Path: p, Msg: e.msg}
}

// writeSeg writes one path step the way Lua code would spell it.
func writeSeg(b *strings.Builder, k lua.LValue) {
	switch k := k.(type) {
	case metaSeg:
		b.WriteString("<metatable>")
	case lua.LString:
		if len(k) <= maxPathKey && isIdentifier(string(k)) {
			b.WriteByte('.')
			b.WriteString(string(k))
			return
		}
		b.WriteByte('[')
		if len(k) <= maxPathKey {
			b.WriteString(strconv.Quote(string(k)))
		} else {
			// A key of a MiB would make a message of up to four,
			// nested ones more: its start names it well enough.
			b.WriteString(strconv.Quote(logcap.Prefix(string(k), maxPathKey)))
			b.WriteString("...")
		}
		b.WriteByte(']')
	case lua.LNumber:
		b.WriteByte('[')
		b.WriteString(k.String())
		b.WriteByte(']')
	default:
		b.WriteString("[<")
		b.WriteString(k.Type().String())
		b.WriteString(">]")
	}
}

// maxPathKey is the longest key a path shows whole.
const maxPathKey = 64

var luaKeywords = map[string]bool{
	"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true,
	"false": true, "for": true, "function": true, "goto": true, "if": true, "in": true,
	"local": true, "nil": true, "not": true, "or": true, "repeat": true, "return": true,
	"then": true, "true": true, "until": true, "while": true,
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return !luaKeywords[s]
}
