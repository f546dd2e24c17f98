package bridge

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// A tool that declares an output_schema promises structured content that
// conforms to it, and a client that checks the promise (the official
// TypeScript SDK does) refuses the whole result when it is broken. Lua
// cannot tell an empty list from an empty object, so `items = {}` where the
// schema says `type = "array"` went out as {} and the result was refused:
// a tool that found nothing failed. When such content is encoded, the
// schema guides it: an unmarked empty table is [] where the schema's type
// is "array" (alone, or with others but "object"). The guide follows
// properties, additionalProperties, items, prefixItems and local $refs
// (#/$defs/..., #/definitions/...); elsewhere, and for a table marked with
// mcp.array or mcp.object, nothing changes.

// maxRefHops bounds the $ref chain resolve follows (a cycle of refs ends).
const maxRefHops = 8

// guide is the schema the encoder follows, or nil: set on the Codec for one
// AppendEncodeGuided.
type guide struct {
	root *lua.LTable // the whole schema, for $refs
	next *lua.LTable // the schema of the value appendValue writes next
}

// AppendEncodeGuided is AppendEncodeAs(dst, v, root, Object), with schema
// (a JSON Schema, as a Lua table) deciding what an unmarked empty table
// inside v is (see the file comment). A nil schema guides nothing.
func (c *Codec) AppendEncodeGuided(dst []byte, v lua.LValue, root string, schema *lua.LTable) ([]byte, error) {
	if schema == nil {
		return c.AppendEncodeAs(dst, v, root, Object)
	}
	c.guide = guide{root: schema, next: schema}
	defer func() { c.guide = guide{} }()
	return c.AppendEncodeAs(dst, v, root, Object)
}

// takeGuide returns the schema of the table being written and clears it,
// as appendTable takes next.
func (c *Codec) takeGuide() *lua.LTable {
	g := c.guide.next
	c.guide.next = nil
	return c.resolve(g)
}

// resolve follows g's local $ref, if it has one.
func (c *Codec) resolve(g *lua.LTable) *lua.LTable {
	for range maxRefHops {
		if g == nil {
			return nil
		}
		ref, ok := g.RawGetString("$ref").(lua.LString)
		if !ok {
			return g
		}
		g = c.lookup(string(ref))
	}
	return nil
}

// defsKeywords are the keywords a local $ref may name definitions under:
// 2020-12's and draft-07's.
var defsKeywords = [...]string{"$defs", "definitions"}

// lookup finds a local reference (#/$defs/name, #/definitions/name, or #)
// in the root schema.
func (c *Codec) lookup(ref string) *lua.LTable {
	if ref == "#" {
		return c.guide.root
	}
	for _, kw := range defsKeywords {
		name, ok := strings.CutPrefix(ref, "#/"+kw+"/")
		if !ok || strings.Contains(name, "/") {
			continue
		}
		defs, _ := c.guide.root.RawGetString(kw).(*lua.LTable)
		if defs == nil {
			return nil
		}
		t, _ := defs.RawGetString(name).(*lua.LTable)
		return t
	}
	return nil
}

// wantsArray reports whether schema g types its value as an array and not
// as an object: type = "array", or a list of types with "array" and without
// "object".
func wantsArray(g *lua.LTable) bool {
	if g == nil {
		return false
	}
	switch t := g.RawGetString("type").(type) {
	case lua.LString:
		return t == "array"
	case *lua.LTable:
		array := false
		for i := 1; i <= t.Len(); i++ {
			switch t.RawGetInt(i) {
			case lua.LString("array"):
				array = true
			case lua.LString("object"):
				return false
			}
		}
		return array
	}
	return false
}

// memberGuide is the schema of g's member key: its properties entry, else
// additionalProperties when that is a schema.
func memberGuide(g *lua.LTable, key string) *lua.LTable {
	if g == nil {
		return nil
	}
	if props, ok := g.RawGetString("properties").(*lua.LTable); ok {
		if p, ok := props.RawGetString(key).(*lua.LTable); ok {
			return p
		}
	}
	ap, _ := g.RawGetString("additionalProperties").(*lua.LTable)
	return ap
}

// itemGuide is the schema of g's item i (from 1): prefixItems' entry, else
// items when that is a schema (a list of them is draft-04's tuple form).
func itemGuide(g *lua.LTable, i int) *lua.LTable {
	if g == nil {
		return nil
	}
	if pre, ok := g.RawGetString("prefixItems").(*lua.LTable); ok && i <= pre.Len() {
		t, _ := pre.RawGetInt(i).(*lua.LTable)
		return t
	}
	items, ok := g.RawGetString("items").(*lua.LTable)
	if !ok {
		return nil
	}
	if items.Len() > 0 { // tuple form
		t, _ := items.RawGetInt(i).(*lua.LTable)
		return t
	}
	return items
}
