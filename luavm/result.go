package luavm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/luamcp/luamcp/bridge"
	lua "github.com/yuin/gopher-lua"
)

// wireNames are bridge.WireNames as Lua strings (boxed once): the keys
// renamed at the top level of descriptors and results.
var wireNames = func() map[string]lua.LValue {
	m := make(map[string]lua.LValue, len(bridge.WireNames))
	for k, w := range bridge.WireNames {
		m[k] = lua.LString(w)
	}
	return m
}()

// resultShapes are the top-level keys of results whose JSON type the MCP
// schema fixes (script-api.md "Results"): `content = {}` is an empty list,
// not {}, and a structured_content that is not an object is refused rather
// than sent against the schema.
var resultShapes = map[string]bridge.Shape{
	"content":            bridge.List,
	"contents":           bridge.List,
	"messages":           bridge.List,
	"structured_content": bridge.Object,
	"structuredContent":  bridge.Object,
}

// descriptorShapes are, per list callback, the top-level keys of its entries
// whose JSON type the MCP schema fixes: a prompt's arguments and every
// icons are lists, so `arguments = {}` is [], not {} (which a client that
// checks the schema refuses, with the whole list), and so are an icon's
// sizes; annotations are an object whose audience is a list; a schema is an
// object, whose keywords that take lists are lists (required = {} is []).
// luamcp check encodes the entries the same way.
var descriptorShapes = map[int]map[string]bridge.Shape{
	cbTools: {
		"annotations":   bridge.Protocol,
		"icons":         bridge.List,
		"input_schema":  bridge.Schema,
		"inputSchema":   bridge.Schema,
		"output_schema": bridge.Schema,
		"outputSchema":  bridge.Schema,
	},
	cbResources:         {"annotations": bridge.Protocol, "icons": bridge.List},
	cbResourceTemplates: {"annotations": bridge.Protocol, "icons": bridge.List},
	cbPrompts:           {"arguments": bridge.List, "icons": bridge.List},
}

// serverInfoShapes are those of init's server_info.
var serverInfoShapes = map[string]bridge.Shape{"icons": bridge.List}

// field is one top-level key of an object being written.
type field struct {
	name string     // key on the wire
	wire lua.LValue // the same, as a Lua string (boxed once)
	key  string     // key in Lua, for error paths
	val  lua.LValue
}

// appendFields appends the entries of t as JSON object members ("k":v,...,
// without braces), keys renamed by wireNames and sorted. Keys for which skip
// reports true are left out, and those in shapes are encoded in their shape
// (bridge.Codec.AppendEncodeAs). root names t in errors. guide, when not
// nil, is the tool's output_schema: it guides structured_content
// (bridge.Codec.AppendEncodeGuided).
func (v *vm) appendFields(buf []byte, t *lua.LTable, root string, skip func(string) bool, shapes map[string]bridge.Shape, guide *lua.LTable) ([]byte, error) {
	fields := v.fields[:0]
	var bad lua.LValue
	t.ForEach(func(k, val lua.LValue) {
		ks, ok := k.(lua.LString)
		if !ok {
			if bad == nil {
				bad = k
			}
			return
		}
		if skip != nil && skip(string(ks)) {
			return
		}
		f := field{name: string(ks), wire: k, key: string(ks), val: val}
		if w, ok := wireNames[f.key]; ok {
			f.name, f.wire = string(w.(lua.LString)), w
		}
		fields = append(fields, f)
	})
	defer func() {
		clear(fields)
		v.fields = fields[:0]
	}()
	if bad != nil {
		return buf, fmt.Errorf("%s: must be an object with string keys, found the key %s", root, bad)
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.name, b.name) })
	for i := range fields {
		f := &fields[i]
		if i > 0 {
			if f.name == fields[i-1].name {
				return buf, fmt.Errorf("%s: has both %s and %s", root, fields[i-1].key, f.key)
			}
			buf = append(buf, ',')
		}
		var err error
		if buf, err = v.codec.AppendEncode(buf, f.wire, root); err != nil {
			return buf, err
		}
		buf = append(buf, ':')
		shape, fixed := shapes[f.key]
		switch {
		case fixed && guide != nil && f.name == "structuredContent":
			buf, err = v.codec.AppendEncodeGuided(buf, f.val, "", guide)
		case fixed:
			buf, err = v.codec.AppendEncodeAs(buf, f.val, "", shape)
		default:
			buf, err = v.codec.AppendEncode(buf, f.val, "")
		}
		if err != nil {
			return buf, under(err, root, f.key)
		}
	}
	return buf, nil
}

// under prefixes the path of an encoding error with root.key.
func under(err error, root, key string) error {
	var eerr *bridge.EncodeError
	if !errors.As(err, &eerr) {
		return fmt.Errorf("%s.%s: %w", root, key, err)
	}
	path := root + "." + key
	switch {
	case eerr.Path == "":
	case strings.HasPrefix(eerr.Path, "["):
		path += eerr.Path
	default:
		path += "." + eerr.Path
	}
	return &bridge.EncodeError{Path: path, Msg: eerr.Msg}
}

// object encodes t as a JSON object with wireNames applied to its top level
// (and shapes, as appendFields).
func (v *vm) object(t *lua.LTable, root string, skip func(string) bool, shapes map[string]bridge.Shape) (json.RawMessage, error) {
	buf := append(v.buf[:0], '{')
	buf, err := v.appendFields(buf, t, root, skip, shapes, nil)
	if err != nil {
		return nil, err
	}
	return v.done(append(buf, '}')), nil
}

// done returns a copy of buf, the scratch buffer, and keeps buf for reuse
// unless it grew large.
func (v *vm) done(buf []byte) json.RawMessage {
	out := bytes.Clone(buf)
	if cap(buf) <= 64<<10 {
		v.buf = buf[:0]
	} else {
		v.buf = nil
	}
	return out
}

func skipIsError(k string) bool { return k == "isError" || k == "is_error" }

// toolResult encodes what handle_tool produced (script-api.md "Results"):
// a string (or number) is one text block; a table with content is sent with
// its other keys (structured_content becomes structuredContent); nothing at
// all is an empty content list. isError is set by the outcome, never by the
// table. guide is the tool's output_schema, or nil (appendFields).
func (v *vm) toolResult(res lua.LValue, isError bool, root string, guide *lua.LTable) (json.RawMessage, error) {
	buf := v.buf[:0]
	var err error
	switch r := res.(type) {
	case *lua.LNilType:
		buf = append(buf, `{"content":[]`...)
	case lua.LString:
		buf = append(buf, `{"content":[{"type":"text","text":`...)
		if buf, err = v.codec.AppendEncode(buf, res, root); err != nil {
			return nil, err
		}
		buf = append(buf, "}]"...)
	case lua.LNumber:
		buf = append(buf, `{"content":[{"type":"text","text":`...)
		buf, _ = v.codec.AppendEncode(buf, lua.LString(r.String()), root)
		buf = append(buf, "}]"...)
	case *lua.LTable:
		content, ok := r.RawGetString("content").(*lua.LTable)
		if !ok {
			return nil, fmt.Errorf("%s: a table result needs content (a list of content blocks)", root)
		}
		buf = append(buf, '{')
		if buf, err = v.appendFields(buf, r, root, skipIsError, resultShapes, guide); err != nil {
			return nil, err
		}
		if err = v.codec.CheckContent(content, root); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: want a string or a table with content, got %s", root, describe(res))
	}
	if isError {
		buf = append(buf, `,"isError":true}`...)
	} else {
		buf = append(buf, `,"isError":false}`...)
	}
	return v.done(buf), nil
}

// resourceResult encodes what read_resource produced: a string becomes
// {"contents":[{"uri","text","mimeType"?}]}, a table with contents is sent as
// it is, but for the uri of an entry without one: the uri read (the MCP
// schema requires it). Each entry needs text or blob.
func (v *vm) resourceResult(res lua.LValue, uri string, mime lua.LValue) (json.RawMessage, error) {
	switch r := res.(type) {
	case lua.LString:
		buf := append(v.buf[:0], `{"contents":[{"uri":`...)
		buf, err := v.codec.AppendEncode(buf, lua.LString(uri), "uri")
		if err != nil {
			return nil, err
		}
		buf = append(buf, `,"text":`...)
		if buf, err = v.codec.AppendEncode(buf, res, "result"); err != nil {
			return nil, err
		}
		if _, ok := mime.(lua.LString); ok {
			buf = append(buf, `,"mimeType":`...)
			if buf, err = v.codec.AppendEncode(buf, mime, "mime_type"); err != nil {
				return nil, err
			}
		}
		return v.done(append(buf, "}]}"...)), nil
	case *lua.LTable:
		contents, ok := r.RawGetString("contents").(*lua.LTable)
		if !ok {
			return nil, errors.New("result: a table result needs contents (a list of resource contents)")
		}
		if filled := v.withURI(contents, uri); filled != contents {
			contents = filled
			r = shallowCopy(v.L, r)
			r.RawSetString("contents", contents)
		}
		out, err := v.object(r, "result", nil, resultShapes)
		if err != nil {
			return nil, err
		}
		if err := v.codec.CheckResourceContents(contents, "result"); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("result: want a string or a table with contents, got %s", describe(res))
}

// withURI returns contents itself when every entry has a uri, else a copy
// in which each entry without one is a copy with uri: the script's tables
// stay as they were.
func (v *vm) withURI(contents *lua.LTable, uri string) *lua.LTable {
	cp := contents
	for i, n := 1, contents.Len(); i <= n; i++ {
		if e, ok := contents.RawGetInt(i).(*lua.LTable); ok && e.RawGetString("uri") == lua.LNil {
			if cp == contents {
				cp = shallowCopy(v.L, contents)
			}
			e = shallowCopy(v.L, e)
			e.RawSetString("uri", lua.LString(uri))
			cp.RawSetInt(i, e)
		}
	}
	return cp
}

// shallowCopy returns a new table with t's entries and metatable (which
// holds its array or object mark).
func shallowCopy(L *lua.LState, t *lua.LTable) *lua.LTable {
	cp := L.CreateTable(t.Len(), 0)
	t.ForEach(cp.RawSet)
	cp.Metatable = t.Metatable
	return cp
}

// promptResult encodes what get_prompt produced: {messages, description?}.
// Each message has a role, user or assistant, and one content block.
func (v *vm) promptResult(res lua.LValue) (json.RawMessage, error) {
	t, ok := res.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("result: want a table with messages, got %s", describe(res))
	}
	messages, ok := t.RawGetString("messages").(*lua.LTable)
	if !ok {
		return nil, errors.New("result: a prompt needs messages (a list)")
	}
	out, err := v.object(t, "result", nil, resultShapes)
	if err != nil {
		return nil, err
	}
	if err := v.codec.CheckPromptMessages(messages, "result"); err != nil {
		return nil, err
	}
	return out, nil
}

// message returns the text of an in-band failure (`nil, message`).
func message(v lua.LValue) (string, bool) {
	switch m := v.(type) {
	case lua.LString:
		return string(m), true
	case lua.LNumber:
		return m.String(), true
	}
	return "", false
}

// list returns the items 1..n of a callback's list result; nil is an empty
// list.
func list(v lua.LValue, root string) ([]lua.LValue, error) {
	switch t := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case *lua.LTable:
		n := t.Len()
		items := make([]lua.LValue, n)
		for i := range n {
			items[i] = t.RawGetInt(i + 1)
		}
		return items, nil
	}
	return nil, fmt.Errorf("%s: want a list, got %s", root, describe(v))
}

// stringsOf returns a callback's list of strings.
func stringsOf(v lua.LValue, root string) ([]string, error) {
	items, err := list(v, root)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, ok := it.(lua.LString)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: want a string, got %s", root, i+1, describe(it))
		}
		out[i] = string(s)
	}
	return out, nil
}
