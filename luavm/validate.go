package luavm

import (
	"errors"
	"fmt"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/internal/jsonschema"
	"github.com/luamcp/luamcp/internal/logcap"
)

// The route options validate_arguments and validate_results. The first checks a tools/call's arguments
// against the tool's input_schema before handle_tool runs (the MCP spec has
// servers validate tool inputs): arguments that break it get a tool error
// result saying where and how (an input validation failure is a tool
// execution error, SEP-1303, so the model can correct its call), and the
// script never sees them. The second checks a successful result's
// structured_content against the tool's output_schema, and makes a result
// that breaks it a crash. jsonschema says which keywords are checked.

// maxCachedSchemas bounds the compiled schemas a version keeps, and
// maxCachedSchemaBytes their size (jsonschema.Schema.Size and their text). A
// tools() that builds its schemas from the state may make a new one per
// call; past either bound the cache starts afresh, and a schema larger than
// the bytes alone is compiled for each call. Counted alone, 256 schemas of
// 40,000 properties each, which a script's tools() made one a call, kept
// 17 MB each: gigabytes, past the process's memory ceiling.
const (
	maxCachedSchemas     = 256
	maxCachedSchemaBytes = 32 << 20
)

// schemaCache holds a version's compiled input schemas, by their JSON text.
type schemaCache struct {
	mu    sync.Mutex
	m     map[string]compiledSchema
	bytes int // the entries' sizes, summed
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
	s, err := jsonschema.Compile(text)
	cs = compiledSchema{s, err}
	size := len(text)
	if s != nil {
		size += s.Size()
	}
	if size > maxCachedSchemaBytes {
		return cs, true
	}
	if c.m == nil || len(c.m) >= maxCachedSchemas || c.bytes+size > maxCachedSchemaBytes {
		c.m = make(map[string]compiledSchema)
		c.bytes = 0
	}
	c.m[string(text)] = cs
	c.bytes += size
	return cs, true
}

// renamed is t's value under key, else under the wire's spelling of it
// (wireNames: input_schema is inputSchema on the wire, and a script may
// write either).
func renamed(t *lua.LTable, key string) lua.LValue {
	if v := t.RawGetString(key); v != lua.LNil {
		return v
	}
	if wire, ok := wireNames[key]; ok {
		return t.RawGet(wire)
	}
	return lua.LNil
}

// compileSchema compiles tool's schema under key (input_schema,
// output_schema); a tool without one has nothing to check: nil, nil. fresh
// is whether this call compiled it (not the version's cache).
func (v *vm) compileSchema(tool *lua.LTable, key string) (s *jsonschema.Schema, fresh bool, err error) {
	text, err := v.schemaText(tool, key)
	if text == nil || err != nil {
		return nil, err != nil, err
	}
	cs, fresh := v.s.schemas.get(text)
	return cs.s, fresh, cs.err
}

// schemaText is the JSON of tool's schema under key; nil, nil for a tool
// without one.
func (v *vm) schemaText(tool *lua.LTable, key string) ([]byte, error) {
	schema, ok := renamed(tool, key).(*lua.LTable)
	if !ok {
		return nil, nil
	}
	return v.codec.EncodeAs(schema, key, bridge.Schema)
}

// compileInputSchema compiles tool's input schema (compileSchema); luamcp
// check reports a tool without one.
func (v *vm) compileInputSchema(tool *lua.LTable) (*jsonschema.Schema, bool, error) {
	return v.compileSchema(tool, "input_schema")
}

// checkArguments checks args against tool's input schema. It returns "" when
// they pass, else the message of the tool error the client gets. A schema
// that does not compile refuses every call (luamcp check reports it), and
// the log says why, once per schema.
func (v *vm) checkArguments(tool *lua.LTable, name string, args []byte) string {
	schema, fresh, err := v.compileInputSchema(tool)
	if err != nil {
		if fresh {
			if ok, held := v.s.schemaWarn.Allow(time.Now(), logcap.Every); ok {
				v.s.logger.Error("route.validate_arguments: the tool's input_schema cannot be checked, so its calls are refused",
					"tool", name, "error", err, "unlogged_since_last", held)
			}
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

// checkResult checks a successful result of tool against its output_schema
// (route.validate_results): the MCP spec has a tool that declares one give
// structured content that conforms to it. It returns "" when the result
// does, else what is wrong, for the crash the caller makes of it: the
// script broke its own contract.
func (v *vm) checkResult(tool *lua.LTable, res lua.LValue) string {
	schema, _, err := v.compileSchema(tool, "output_schema")
	if err != nil {
		return fmt.Sprintf("the tool's output_schema cannot be checked: %v", err)
	}
	if schema == nil {
		return ""
	}
	var sc lua.LValue = lua.LNil
	if t, ok := res.(*lua.LTable); ok {
		sc = renamed(t, "structured_content")
	}
	if sc == lua.LNil {
		return "result: the tool declares an output_schema, so a result needs structured_content"
	}
	// Encoded as it was sent: guided by the schema (bridge.AppendEncodeGuided).
	guide, _ := renamed(tool, "output_schema").(*lua.LTable)
	text, err := v.codec.AppendEncodeGuided(nil, sc, "result.structured_content", guide)
	if err != nil {
		return err.Error()
	}
	if err := schema.Validate(text); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) && ve.Path != "" {
			return fmt.Sprintf("result.structured_content.%s does not match the output_schema: %s", ve.Path, ve.Message)
		}
		return fmt.Sprintf("result.structured_content does not match the output_schema: %v", err)
	}
	return ""
}
