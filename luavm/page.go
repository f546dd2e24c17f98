package luavm

import (
	"context"
	"fmt"
	"math"

	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

// listKinds are the callback and key field of each list of mcp.Pager.
var listKinds = [...]struct {
	cb  int
	key string
}{
	mcp.ListTools:             {cbTools, "name"},
	mcp.ListResources:         {cbResources, "uri"},
	mcp.ListResourceTemplates: {cbResourceTemplates, "uri_template"},
	mcp.ListPrompts:           {cbPrompts, "name"},
}

var _ mcp.Pager = (*session)(nil)

// Page implements mcp.Pager: it runs the list callback as the list methods
// do and checks every entry, but encodes only the entries [offset,
// offset+limit), so that a page of a long list does not cost the whole list.
func (ss *session) Page(ctx context.Context, kind mcp.ListKind, offset, limit int) ([]mcp.Item, int, error) {
	if int(kind) >= len(listKinds) {
		return nil, 0, fmt.Errorf("%s: unknown list kind %d", ss.script.name, kind)
	}
	lk := listKinds[kind]
	c, err := ss.begin(ctx)
	if err != nil {
		return nil, 0, err
	}
	if !ss.v.has(lk.cb) {
		ss.end(c, nil)
		return []mcp.Item{}, 0, nil
	}
	items, total, err := ss.listPage(c, lk.cb, lk.key, offset, limit)
	ss.end(c, err)
	return items, total, err
}

// listPage runs list callback cb and returns its entries [offset,
// offset+limit) as items keyed by their key field, and the number of entries.
// Every entry must be a table with a string key; only the window is encoded.
func (ss *session) listPage(c *op, cb int, key string, offset, limit int) ([]mcp.Item, int, error) {
	name := callbackNames[cb]
	rets, err := c.call(name, ss.v.fns[cb], 1, c.live)
	if err != nil {
		return nil, 0, err
	}
	entries, err := list(rets[0], name)
	if err != nil {
		return nil, 0, c.crashf(name, "%v", err)
	}
	start := min(max(offset, 0), len(entries))
	end := start + min(max(limit, 0), len(entries)-start)
	items := make([]mcp.Item, 0, end-start)
	for i, e := range entries {
		t, ok := e.(*lua.LTable)
		if !ok {
			return nil, 0, c.crashf(name, "%s: want a table, got %s", entryRoot(name, i), describe(e))
		}
		k, ok := t.RawGetString(key).(lua.LString)
		if !ok {
			return nil, 0, c.crashf(name, "%s.%s: want a string, got %s", entryRoot(name, i), key, describe(t.RawGetString(key)))
		}
		if i < start || i >= end {
			continue
		}
		data, err := ss.v.object(t, "", nil, descriptorShapes[cb])
		if err != nil {
			// Encode again with the entry's path, for the message only.
			_, err = ss.v.object(t, entryRoot(name, i), nil, descriptorShapes[cb])
			return nil, 0, c.crashf(name, "%v", err)
		}
		items = append(items, mcp.Item{Key: string(k), JSON: data})
	}
	return items, len(entries), nil
}

// entryRoot names entry i (0-based) of a list callback's result in errors.
func entryRoot(name string, i int) string {
	return fmt.Sprintf("%s[%d]", name, i+1)
}

// wholeList is the limit that asks listPage for every entry.
const wholeList = math.MaxInt
