package luavm

import (
	"fmt"
	"sync"

	"github.com/luamcp/luamcp/internal/jsonschema"
	lua "github.com/yuin/gopher-lua"
)

// The route option validate_arguments checks a tools/call's arguments
// against the tool's input_schema before handle_tool runs (the MCP spec has
// servers validate tool inputs): arguments that break it get a tool error
// result saying where and how (an input validation failure is a tool
// execution error, SEP-1303, so the model can correct its call), and the
// script never sees them. jsonschema says which keywords are checked.

// maxCachedSchemas bounds the compiled schemas a version keeps. A tools()
// that builds its schemas from the state may make a new one per call; past
// the bound the cache starts afresh.
const maxCachedSchemas = 256

// schemaCache holds a version's compiled input schemas, by their JSON text.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]compiledSchema
}

type compiledSchema struct {
	s   *jsonschema.Schema
	err error // why the schema does not compile
}

// get returns the compiled schema of text, compiling it the first time
// (fresh).
func (c *schemaCache) get(text []byte) (cs compiledSchema, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, ok := c.m[string(text)]; ok {
		return cs, false
	}
	if c.m == nil || len(c.m) >= maxCachedSchemas {
		c.m = make(map[string]compiledSchema)
	}
	s, err := jsonschema.Compile(text)
	cs = compiledSchema{s, err}
	c.m[string(text)] = cs
	return cs, true
}

// inputSchema is the input schema of a tool descriptor (input_schema, or the
// wire's inputSchema), nil when it has none.
func inputSchema(tool *lua.LTable) *lua.LTable {
	schema := tool.RawGetString("input_schema")
	if schema == lua.LNil {
		schema = tool.RawGetString("inputSchema")
	}
	t, _ := schema.(*lua.LTable)
	return t
}

// compileInputSchema compiles tool's input schema; a tool without one
// (which luamcp check reports) has nothing to check: nil, nil. fresh is
// whether this call compiled it (not the version's cache).
func (v *vm) compileInputSchema(tool *lua.LTable) (s *jsonschema.Schema, fresh bool, err error) {
	schema := inputSchema(tool)
	if schema == nil {
		return nil, false, nil
	}
	text, err := v.codec.Encode(schema, "input_schema")
	if err != nil {
		return nil, true, err
	}
	cs, fresh := v.s.schemas.get(text)
	return cs.s, fresh, cs.err
}

// checkArguments checks args against tool's input schema. It returns "" when
// they pass, else the message of the tool error the client gets. A schema
// that does not compile refuses every call (luamcp check reports it), and
// the log says why, once per schema.
func (v *vm) checkArguments(tool *lua.LTable, name string, args []byte) string {
	schema, fresh, err := v.compileInputSchema(tool)
	if err != nil {
		if fresh {
			v.s.logger.Error("route.validate_arguments: the tool's input_schema cannot be checked, so its calls are refused",
				"script", v.s.name, "tool", name, "error", err)
		}
		return fmt.Sprintf("the server cannot check the arguments of %q: its input schema is invalid", name)
	}
	if schema == nil {
		return ""
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	if err := schema.Validate(args); err != nil {
		return fmt.Sprintf("invalid arguments for %q: %v", name, err)
	}
	return ""
}
