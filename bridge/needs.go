package bridge

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Content blocks, resource contents and messages are objects the MCP schema
// gives required fields: a text block needs its text, an image its data and
// mimeType. A script that leaves one out (or writes a block of no known
// type) would have its result refused by a client that checks the schema,
// so the places that send them check them first: luavm's results (a tool's
// content, a prompt's messages, a resource's contents) and mcp.sample's
// messages. Only what the schema requires is checked: the fields it names
// as required, and their JSON types; annotations, _meta and keys of its own
// are a block's business.

// A want is what a required field must hold.
type want uint8

const (
	anyValue   want = iota // anything (mcp.null too): the field is there
	aString                // a string
	aNumber                // a number
	aToken                 // a progress token: a string or an integer
	anObject               // a table that is not a list
	aLevel                 // a log level (logLevels)
	aContents              // resource contents (checkContents)
	someBlocks             // a list of content blocks, those of a result
)

// A need is a field an object must have, under its name on the wire.
type need struct {
	key  string
	want want
}

// blockSet says where a kind of content block may appear.
type blockSet uint8

const (
	// resultBlocks are the MCP schema's ContentBlock: a tool result's
	// content, a prompt message's, a tool_result block's.
	resultBlocks blockSet = 1 << iota
	// samplingBlocks are its SamplingMessageContentBlock: a sampling
	// message's content.
	samplingBlocks
)

// blockKinds are the kinds of content block, by their type, with where
// each may appear and the fields the MCP schema (2025-11-25, 2026-07-28)
// requires of it besides type.
var blockKinds = [...]struct {
	typ   string
	in    blockSet
	needs []need
}{
	{"text", resultBlocks | samplingBlocks, []need{{"text", aString}}},
	{"image", resultBlocks | samplingBlocks, []need{{"data", aString}, {"mimeType", aString}}},
	{"audio", resultBlocks | samplingBlocks, []need{{"data", aString}, {"mimeType", aString}}},
	{"resource_link", resultBlocks, []need{{"uri", aString}, {"name", aString}}},
	{"resource", resultBlocks, []need{{"resource", aContents}}},
	{"tool_use", samplingBlocks, []need{{"id", aString}, {"name", aString}, {"input", anObject}}},
	{"tool_result", samplingBlocks, []need{{"toolUseId", aString}, {"content", someBlocks}}},
}

// blockTypes lists the types of the blocks in set, for an error.
func blockTypes(set blockSet) string {
	var names []string
	for _, k := range blockKinds {
		if k.in&set != 0 {
			names = append(names, k.typ)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// CheckContent checks the content blocks of a tool result's content list,
// as the MCP schema has them; the error names the place under root, e.g.
// `result.content[2]: a text block needs text`.
func (c *Codec) CheckContent(content *lua.LTable, root string) error {
	if err := c.checkBlocks(content, resultBlocks); err != nil {
		return err.under(lua.LString("content")).finish(root)
	}
	return nil
}

// CheckResourceContents checks the entries of a resource's contents list:
// each has a uri, and text or blob.
func (c *Codec) CheckResourceContents(contents *lua.LTable, root string) error {
	if err := eachItem(contents, c.checkContents); err != nil {
		return err.under(lua.LString("contents")).finish(root)
	}
	return nil
}

// eachItem runs check on the items of list, 1..#list, and returns the first
// error, placed under its index.
func eachItem(list *lua.LTable, check func(lua.LValue) *pathError) *pathError {
	for i, n := 1, list.Len(); i <= n; i++ {
		if err := check(list.RawGetInt(i)); err != nil {
			return err.under(lua.LNumber(i))
		}
	}
	return nil
}

// CheckPromptMessages checks a prompt's messages: each has a role, user or
// assistant, and a content block as its content (one, not a list).
func (c *Codec) CheckPromptMessages(messages *lua.LTable, root string) error {
	if err := c.checkMessages(messages, resultBlocks); err != nil {
		return err.under(lua.LString("messages")).finish(root)
	}
	return nil
}

// checkMessages checks a list of messages whose blocks are of set: a
// sampling message's content may also be a list of blocks.
func (c *Codec) checkMessages(messages *lua.LTable, set blockSet) *pathError {
	return eachItem(messages, func(v lua.LValue) *pathError { return c.checkMessage(v, set) })
}

func (c *Codec) checkMessage(v lua.LValue, set blockSet) *pathError {
	m, ok := v.(*lua.LTable)
	if !ok {
		return newPathError("want a message (a table with role and content), got %s", describeValue(v))
	}
	if role := m.RawGetString("role"); role != lua.LString("user") && role != lua.LString("assistant") {
		return newPathError(`want "user" or "assistant", got %s`, describeValue(role)).under(lua.LString("role"))
	}
	content := m.RawGetString("content")
	if content == lua.LNil {
		return newPathError("a message needs content")
	}
	var err *pathError
	if t, ok := content.(*lua.LTable); ok && set == samplingBlocks && isBlockList(c, t) {
		err = c.checkBlocks(t, set)
	} else {
		err = c.checkBlock(content, set)
	}
	if err != nil {
		return err.under(lua.LString("content"))
	}
	return nil
}

// isBlockList reports whether t, a sampling message's content, is a list of
// blocks rather than one: it has no type and is not an empty unmarked table
// (which would be written {}, neither a block nor a list).
func isBlockList(c *Codec, t *lua.LTable) bool {
	if t.RawGetString("type") != lua.LNil {
		return false
	}
	return c.mark(t) == markArray || t.RawGetInt(1) != lua.LNil
}

// checkBlocks checks the items of a list of content blocks of set.
func (c *Codec) checkBlocks(list *lua.LTable, set blockSet) *pathError {
	return eachItem(list, func(v lua.LValue) *pathError { return c.checkBlock(v, set) })
}

// checkBlock checks one content block of set: a table whose type is one of
// set's, with the fields its kind requires.
func (c *Codec) checkBlock(v lua.LValue, set blockSet) *pathError {
	b, ok := v.(*lua.LTable)
	if !ok {
		return newPathError("want a content block (a table with type), got %s", describeValue(v))
	}
	typ := b.RawGetString("type")
	if typ == lua.LNil {
		if b.RawGetInt(1) != lua.LNil {
			return newPathError("want a content block (a table with type), got a list")
		}
		return newPathError("a content block needs type (%s)", blockTypes(set))
	}
	s, _ := typ.(lua.LString)
	for i := range blockKinds {
		k := &blockKinds[i]
		if k.typ != string(s) || k.in&set == 0 {
			continue
		}
		for _, nd := range k.needs {
			if err := c.checkField(b, nd); err != nil {
				if err.missing {
					return newPathError("%s %s block needs %s", article(k.typ), k.typ, nd.key)
				}
				return err.pathError
			}
		}
		return nil
	}
	return newPathError("want %s, got %s", blockTypes(set), describeValue(typ)).under(lua.LString("type"))
}

// article is "a" or "an" before word.
func article(word string) string {
	if word != "" && strings.IndexByte("aeiou", word[0]) >= 0 {
		return "an"
	}
	return "a"
}

// checkContents checks resource contents: a table with a string uri, and a
// string text or blob.
func (c *Codec) checkContents(v lua.LValue) *pathError {
	t, ok := v.(*lua.LTable)
	if !ok {
		return newPathError("want resource contents (a table with uri and text or blob), got %s", describeValue(v))
	}
	if err := c.checkField(t, need{"uri", aString}); err != nil {
		if err.missing {
			return newPathError("resource contents need uri")
		}
		return err.pathError
	}
	text, blob := t.RawGetString("text"), t.RawGetString("blob")
	if text == lua.LNil && blob == lua.LNil {
		return newPathError("resource contents need text or blob")
	}
	if text != lua.LNil {
		if err := c.checkField(t, need{"text", aString}); err != nil {
			return err.pathError
		}
	}
	if blob != lua.LNil {
		if err := c.checkField(t, need{"blob", aString}); err != nil {
			return err.pathError
		}
	}
	return nil
}

// fieldError is a field that is missing (missing), or holds what it should
// not (pathError, under the field's key).
type fieldError struct {
	*pathError
	missing bool
}

// checkField checks the field nd of t.
func (c *Codec) checkField(t *lua.LTable, nd need) *fieldError {
	v := t.RawGetString(nd.key)
	if v == lua.LNil {
		return &fieldError{pathError: newPathError("missing"), missing: true}
	}
	if err := c.checkValue(v, nd.want); err != nil {
		return &fieldError{pathError: err.under(lua.LString(nd.key))}
	}
	return nil
}

// checkValue checks that v holds what w says.
func (c *Codec) checkValue(v lua.LValue, w want) *pathError {
	switch w {
	case aString:
		if _, ok := v.(lua.LString); ok {
			return nil
		}
		return newPathError("want a string, got %s", describeValue(v))
	case aNumber:
		if _, ok := v.(lua.LNumber); ok {
			return nil
		}
		return newPathError("want a number, got %s", describeValue(v))
	case aToken:
		switch v := v.(type) {
		case lua.LString:
			return nil
		case lua.LNumber:
			if f := float64(v); f == math.Trunc(f) && !math.IsInf(f, 0) {
				return nil
			}
		}
		return newPathError("want a string or an integer, got %s", describeValue(v))
	case anObject:
		if _, err := c.checkShape(v, "", Object); err != nil {
			return newPathError("%s", err.(*EncodeError).Msg)
		}
	case aLevel:
		if s, ok := v.(lua.LString); !ok || !validLevel(string(s)) {
			return newPathError("want a log level (%s), got %s", strings.Join(logLevels[:], ", "), describeValue(v))
		}
	case aContents:
		return c.checkContents(v)
	case someBlocks:
		t, ok := v.(*lua.LTable)
		if !ok {
			return newPathError("want a list of content blocks, got %s", describeValue(v))
		}
		if t.RawGetString("type") != lua.LNil {
			return newPathError("want a list of content blocks, got one block (put it in a list: { block })")
		}
		return c.checkBlocks(t, resultBlocks)
	}
	return nil
}

// notificationNeeds are, by method, the params fields the MCP schema
// requires of the notifications it defines that a server sends
// (ServerNotification, 2025-11-25 and 2026-07-28). mcp.notify and
// mcp.broadcast refuse such a notification without them, as they refuse
// params with no JSON form. notifications/cancelled is not here: its
// requestId is required by 2026-07-28 only.
var notificationNeeds = map[string][]need{
	"notifications/message":              {{"level", aLevel}, {"data", anyValue}},
	"notifications/progress":             {{"progressToken", aToken}, {"progress", aNumber}},
	"notifications/resources/updated":    {{"uri", aString}},
	"notifications/elicitation/complete": {{"elicitationId", aString}},
	"notifications/tasks/status": {
		{"taskId", aString}, {"status", aString}, {"createdAt", aString},
		{"lastUpdatedAt", aString}, {"ttl", anyValue},
	},
	"notifications/subscriptions/acknowledged": {{"notifications", anObject}},
}

// checkNotification checks params (nil for none) against what the MCP
// schema requires of method's.
func (c *Codec) checkNotification(method string, params lua.LValue) error {
	needs := notificationNeeds[method]
	if len(needs) == 0 {
		return nil
	}
	t, _ := params.(*lua.LTable)
	for _, nd := range needs {
		if t == nil {
			return &EncodeError{Path: "params", Msg: method + " needs params with " + nd.key}
		}
		if err := c.checkField(t, nd); err != nil {
			if err.missing {
				return &EncodeError{Path: "params", Msg: method + " needs " + nd.key}
			}
			return err.finish("params")
		}
	}
	return nil
}
