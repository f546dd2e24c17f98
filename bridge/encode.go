package bridge

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/internal/jsontext"
)

// maxKeptBuffer is the largest output buffer a Codec keeps between calls; a
// rare huge answer should not pin its memory to the state for good.
const maxKeptBuffer = 64 << 10

// Encode converts v to JSON text. Errors are *EncodeError values naming the
// path from root, e.g. `result.content[2].data: cannot encode a function`.
//
// Tables: one marked as an array (mcp.array, decoded arrays) encodes as an
// array of its items 1..n, and one marked as an object (mcp.object, decoded
// objects) as an object whose number keys become strings. An unmarked table
// is an array when its keys are exactly 1..n, an object when they are all
// strings, {} when empty, and an error otherwise. Object keys are sorted.
// Functions, userdata other than mcp.null, threads, channels, NaN, infinities,
// strings that are not valid UTF-8, cycles and nesting deeper than MaxDepth are
// errors. Lua nil (only possible at the root) encodes as null.
func (c *Codec) Encode(v lua.LValue, root string) ([]byte, error) {
	return c.keep(c.AppendEncode(c.buf[:0], v, root))
}

// EncodeAs is Encode for a value of a fixed shape (AppendEncodeAs).
func (c *Codec) EncodeAs(v lua.LValue, root string, want Shape) ([]byte, error) {
	return c.keep(c.AppendEncodeAs(c.buf[:0], v, root, want))
}

// keep returns a copy of buf, the output an encoding appended to c.buf, and
// keeps buf for the next unless it grew large.
func (c *Codec) keep(buf []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(buf)
	if cap(buf) <= maxKeptBuffer {
		c.buf = buf[:0]
	} else {
		c.buf = nil
	}
	return out, nil
}

// AppendEncode is Encode appending to dst. On error it returns dst unchanged
// (same length) and the error. The whole of dst counts against the room the
// state's memory budget leaves (budget.go): a text built by several calls is
// bounded as one.
func (c *Codec) AppendEncode(dst []byte, v lua.LValue, root string) ([]byte, error) {
	n := len(dst)
	c.room, c.tables = newBudget(c.l), 0
	out, err := c.appendValue(dst, v, 0)
	c.next = roleNone // a root that is no table leaves it set
	if err != nil {
		clear(c.seen)
		c.seen = c.seen[:0]
		clear(c.ents)
		c.ents = c.ents[:0]
		return dst[:n], err.finish(root)
	}
	return out, nil
}

// A Shape is the JSON type the protocol fixes for a value: a result's
// content is a list, its structuredContent an object.
type Shape int

const (
	// List is a JSON array of values the MCP schema defines (content
	// blocks, resource contents, messages, icons): an empty table encodes
	// as [], and a table with a string key, or marked with mcp.object, is
	// refused. Inside its items, the members the schema types as lists
	// are [] when empty (protocol.go).
	List Shape = iota + 1
	// Object is a JSON object of the script's own (structuredContent, a
	// notification's params): an empty table encodes as {}, and a list
	// (keys 1..n, or marked with mcp.array) is refused.
	Object
	// Schema is an Object that is a JSON Schema: an empty table under a
	// keyword that takes a list (required = {}) is [] (schema.go).
	Schema
	// Protocol is an Object the MCP schema defines (annotations, a
	// request's params): the members it types as lists are [] when empty
	// (protocol.go).
	Protocol
)

// role is the role of a value of shape s: how the tables inside it are
// read when they are empty.
func (s Shape) role() role {
	switch s {
	case List:
		return roleMCPs
	case Schema:
		return roleSchema
	case Protocol:
		return roleMCP
	}
	return roleNone
}

// AppendEncodeAs is AppendEncode for a value of a fixed shape. An empty
// table is ambiguous in Lua, and a value of the other shape would reach the
// client against the protocol's schema: both are settled here, where the
// table's mark is known. Anything but a table is an error.
func (c *Codec) AppendEncodeAs(dst []byte, v lua.LValue, root string, want Shape) ([]byte, error) {
	emptyList, err := c.checkShape(v, root, want)
	if err != nil {
		return dst, err
	}
	if emptyList {
		return append(dst, "[]"...), nil
	}
	c.next = want.role()
	return c.AppendEncode(dst, v, root)
}

// checkShape reports whether v has the shape want, as AppendEncodeAs
// encodes it, and whether it is an unmarked empty table that a List encodes
// as [].
func (c *Codec) checkShape(v lua.LValue, root string, want Shape) (emptyList bool, err error) {
	t, ok := v.(*lua.LTable)
	name := "a list"
	if want != List {
		want, name = Object, "an object (a table with string keys)"
	}
	if !ok {
		return false, &EncodeError{Path: root, Msg: "want " + name + ", got " + describeValue(v)}
	}
	m, n := c.mark(t), t.MaxN()
	base := len(c.ents)
	c.ents = appendHash(c.ents, t, n)
	var key lua.LValue
	if len(c.ents) > base {
		key = c.ents[base].k
	}
	clear(c.ents[base:])
	c.ents = c.ents[:base]
	switch {
	case want == List && m == markObject, want == Object && m == markArray:
		return false, &EncodeError{Path: root, Msg: "want " + name + ", got a table marked as the other kind"}
	case want == List && m == markNone && key != nil:
		return false, &EncodeError{Path: root, Msg: "want " + name + ", got a table with the key " + keyName(key)}
	case want == List && m == markNone && n == 0:
		return true, nil
	case want == Object && m == markNone && n > 0 && key == nil:
		return false, &EncodeError{Path: root, Msg: "want " + name + ", got a list"}
	}
	return false, nil
}

// describeValue names a value's type for an error, with a string's or
// number's text.
func describeValue(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LString:
		return "the string " + strconv.Quote(string(v))
	case lua.LNumber:
		return "the number " + v.String()
	}
	return typeName(v)
}

// appendValue appends v; depth counts the tables around it.
func (c *Codec) appendValue(buf []byte, v lua.LValue, depth int) ([]byte, *pathError) {
	switch v := v.(type) {
	case lua.LString:
		if !c.fitsString(buf, string(v)) {
			return buf, errOutgrows()
		}
		if out, ok := appendString(buf, string(v)); ok {
			return out, nil
		}
		return buf, newPathError("string is not valid UTF-8")
	case lua.LNumber:
		return appendNumber(buf, float64(v))
	case lua.LBool:
		if v {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case *lua.LTable:
		return c.appendTable(buf, v, depth+1)
	case *lua.LNilType:
		return append(buf, "null"...), nil
	case *lua.LUserData:
		if v == c.null {
			return append(buf, "null"...), nil
		}
	}
	return buf, newPathError("cannot encode a %s", typeName(v))
}

// typeName names a Lua type the way a script author knows it.
func typeName(v lua.LValue) string {
	switch v.(type) {
	case *lua.LState:
		return "thread (coroutine)"
	case lua.LChannel:
		return "channel"
	}
	return v.Type().String()
}

func (c *Codec) appendTable(buf []byte, t *lua.LTable, depth int) ([]byte, *pathError) {
	for _, s := range c.seen {
		if s == t {
			return buf, newPathError("cannot encode a cycle (a table that contains itself)")
		}
	}
	if depth > MaxDepth {
		return buf, newPathError("nesting deeper than %d levels", MaxDepth)
	}
	if !c.room.fits(len(buf)) {
		return buf, errOutgrows()
	}
	if c.tables++; c.tables%checkEvery == 0 {
		if err := contextErr(c.l); err != nil {
			return buf, newPathError("%v", err)
		}
	}
	c.seen = append(c.seen, t)
	r := c.next
	c.next = roleNone
	var g *lua.LTable
	if c.guide.root != nil {
		g = c.takeGuide()
	}
	buf, err := c.appendTableBody(buf, t, depth, r, g)
	c.seen[len(c.seen)-1] = nil
	c.seen = c.seen[:len(c.seen)-1]
	return buf, err
}

// appendTableBody writes t in role r; g is the schema guiding it, or nil
// (guide.go).
func (c *Codec) appendTableBody(buf []byte, t *lua.LTable, depth int, r role, g *lua.LTable) ([]byte, *pathError) {
	m := c.mark(t)
	n := t.MaxN()
	base := len(c.ents)
	c.ents = appendHash(c.ents, t, n)
	hash := len(c.ents) > base
	switch {
	case m == markObject:
		return c.appendObject(buf, t, n, base, depth, true, r, g)
	case m == markArray && hash:
		return buf, newPathError("array (mcp.array) has the non-index key %s", keyName(c.ents[base].k))
	case m == markArray:
		return c.appendArray(buf, t, n, depth, r, g)
	case n == 0 && !hash && (r.emptyIsList() || wantsArray(g)):
		return append(buf, "[]"...), nil
	case n == 0:
		return c.appendObject(buf, t, 0, base, depth, false, r, g)
	case hash:
		return buf, newPathError("table mixes list items with the key %s (mark it with mcp.object to encode an object)",
			keyName(c.ents[base].k))
	}
	return c.appendArray(buf, t, n, depth, r, g)
}

// errOutgrows is the error of a JSON text larger than the room its state's
// memory budget leaves.
func errOutgrows() *pathError {
	return newPathError("%v (the JSON text outgrows the state's memory budget)", lua.ErrMemoryLimit)
}

// keyName shows a table key in an error message.
func keyName(k lua.LValue) string {
	switch k := k.(type) {
	case lua.LString:
		return strconv.Quote(string(k))
	case lua.LNumber:
		return k.String()
	}
	return "of type " + typeName(k)
}

func (c *Codec) appendArray(buf []byte, t *lua.LTable, n, depth int, r role, g *lua.LTable) ([]byte, *pathError) {
	buf = append(buf, '[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			buf = append(buf, ',')
		}
		v := t.RawGetInt(i)
		if v == lua.LNil {
			return buf, newPathError("nil inside an array (use mcp.null for a JSON null)").under(lua.LNumber(i))
		}
		var err *pathError
		c.next = r.item()
		c.guide.next = itemGuide(g, i) // nil unless guided
		if buf, err = c.appendValue(buf, v, depth); err != nil {
			return buf, err.under(lua.LNumber(i))
		}
	}
	return append(buf, ']'), nil
}

// appendObject writes t as an object. The entries outside the array part are
// already in c.ents[base:]; the array part 1..n is added here (marked objects
// only: an unmarked table reaches here with n == 0).
func (c *Codec) appendObject(buf []byte, t *lua.LTable, n, base, depth int, marked bool, r role, g *lua.LTable) ([]byte, *pathError) {
	for i := 1; i <= n; i++ {
		if v := t.RawGetInt(i); v != lua.LNil {
			c.ents = append(c.ents, entry{k: lua.LNumber(i), v: v})
		}
	}
	ents := c.ents[base:]
	numbers := false
	for i := range ents {
		switch k := ents[i].k.(type) {
		case lua.LString:
			ents[i].s = string(k)
		case lua.LNumber:
			if !marked {
				return buf, newPathError("cannot encode a table with the number key %s (mark it with mcp.object to make number keys strings)", k)
			}
			if f := float64(k); f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
				return buf, newPathError("cannot use the number key %s as an object key (only integers become strings)", k)
			}
			ents[i].s = strconv.FormatInt(int64(k), 10)
			numbers = true
		default:
			return buf, newPathError("cannot encode a table key of type %s", typeName(k))
		}
	}
	if len(ents) > 1 {
		slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.s, b.s) })
		if numbers {
			for i := 1; i < len(ents); i++ {
				if ents[i].s == ents[i-1].s {
					return buf, newPathError("object has the key %q twice (as a number and as a string)", ents[i].s)
				}
			}
		}
	}
	buf = append(buf, '{')
	for i := range len(ents) {
		e := c.ents[base+i] // children may grow c.ents: index it afresh
		if i > 0 {
			buf = append(buf, ',')
		}
		if !c.fitsString(buf, e.s) {
			return buf, errOutgrows()
		}
		var ok bool
		if buf, ok = appendString(buf, e.s); !ok {
			return buf, newPathError("key is not valid UTF-8").under(e.k)
		}
		buf = append(buf, ':')
		var err *pathError
		c.next = r.member(e.s)
		c.guide.next = memberGuide(g, e.s) // nil unless guided
		if buf, err = c.appendValue(buf, e.v, depth); err != nil {
			return buf, err.under(e.k)
		}
	}
	clear(c.ents[base:])
	c.ents = c.ents[:base]
	return append(buf, '}'), nil
}

// fitsString reports whether s, written as a JSON string after buf, fits in
// the room. Escaped, it may be six times its length ("\u0001" for each
// byte): when that much may not fit, its written length is counted.
func (c *Codec) fitsString(buf []byte, s string) bool {
	if len(buf)+6*len(s)+2 <= c.room.room {
		return true
	}
	return c.room.fits(len(buf) + jsontext.Len(s))
}

// appendString appends s as a JSON string. It reports false if s is not valid
// UTF-8 (the encoder refuses such strings rather than repair them).
func appendString(buf []byte, s string) ([]byte, bool) {
	return jsontext.AppendString(buf, s)
}

// appendNumber writes f much as JavaScript (and encoding/json) would: integral
// values below 1e21 as plain integers (with their exact digits, so that
// 2^63 is 9223372036854775808), others in the shortest form that reads back
// as f, with an exponent only below 1e-6 or from 1e21 up. -0 is 0.
func appendNumber(buf []byte, f float64) ([]byte, *pathError) {
	switch {
	case f != f:
		return buf, newPathError("cannot encode NaN")
	case math.IsInf(f, 1):
		return buf, newPathError("cannot encode inf")
	case math.IsInf(f, -1):
		return buf, newPathError("cannot encode -inf")
	case f == 0:
		return append(buf, '0'), nil
	}
	abs := math.Abs(f)
	if f == math.Trunc(f) && abs < 1e21 {
		if abs < 1<<63 {
			return strconv.AppendInt(buf, int64(f), 10), nil
		}
		return strconv.AppendFloat(buf, f, 'f', 0, 64), nil // exact digits
	}
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(buf, f, 'f', -1, 64), nil
	}
	buf = strconv.AppendFloat(buf, f, 'e', -1, 64)
	// strconv pads the exponent to two digits (1e-07); JavaScript does not.
	if n := len(buf); n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
		buf[n-2] = buf[n-1]
		buf = buf[:n-1]
	}
	return buf, nil
}
