package luavm

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/luamcp/luamcp/internal/jsonschema"
	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

// Problem is one thing Check found wrong with a script.
type Problem struct {
	File    string `json:"file"`           // the script or module, relative to Config.Dir
	Line    int    `json:"line,omitempty"` // 0 when unknown
	Message string `json:"message"`
	// Warning marks something that works but likely not as meant: the
	// script serves as it is.
	Warning bool `json:"warning,omitempty"`
}

// String reads "file:line: message", or "file:line: warning: message".
func (p Problem) String() string {
	msg := p.Message
	if p.Warning {
		msg = "warning: " + msg
	}
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, msg)
	}
	return p.File + ": " + msg
}

// checkTimeout bounds each callback Check runs.
const checkTimeout = 10 * time.Second

// toolName is the MCP spec's rule for tool names.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Check loads the script at path as serve would and runs init({}) and the
// list callbacks (tools, resources, resource_templates, prompts) on a fresh
// state. It reports syntax and load errors, missing callbacks, capabilities
// advertised without their callbacks, invalid route options, tool
// descriptors that break the MCP spec, and errors the callbacks raise; and,
// as warnings, the keywords that look like checks but are none in the
// schemas route.validate_arguments and validate_results check values
// against. It returns the tool names it saw, and no problems for a script
// that is fine.
func Check(path string, cfg Config) (tools []string, problems []Problem) {
	s, err := Load(path, cfg)
	if err != nil {
		name := path
		if cfg.Dir != "" {
			name = chunkName(path, cfg.Dir)
		}
		return nil, []Problem{problem(err.Error(), name, 0)}
	}
	defer s.Close()
	c := &checker{ver: s.current()}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	v, err := c.ver.newVM(ctx)
	if err != nil {
		return nil, []Problem{problem(err.Error(), s.chunk, 0)}
	}
	defer v.close()
	c.v = v
	tools = c.run()
	return tools, c.problems
}

type checker struct {
	ver      *Version
	v        *vm
	problems []Problem
}

func (c *checker) add(line int, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: c.ver.chunk, Line: line, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) warn(line int, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: c.ver.chunk, Line: line, Message: fmt.Sprintf(format, args...), Warning: true})
}

// line returns the line where callback cb is defined.
func (c *checker) line(cb int) int {
	if fn := c.v.fns[cb]; fn != nil && fn.Proto != nil {
		return fn.Proto.LineDefined
	}
	return c.ver.retLine
}

// call runs callback cb quietly; a failure becomes a problem.
func (c *checker) call(cb, nret int, args ...lua.LValue) ([3]lua.LValue, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	name := callbackNames[cb]
	var rets [3]lua.LValue
	r, err := c.v.begin(ctx)
	if err == nil {
		r.quiet = true
		rets, err = r.call(name, c.v.fns[cb], nret, args...)
		r.end()
	}
	if err != nil {
		p := problem(err.Error(), c.ver.chunk, c.line(cb))
		p.Message = name + ": " + p.Message
		c.problems = append(c.problems, p)
		return rets, false
	}
	return rets, true
}

func (c *checker) run() []string {
	v := c.v
	rets, ok := c.call(cbInit, 3, v.codec.MarkObject(v.L.CreateTable(0, 0)))
	if !ok {
		return nil
	}
	res, err := v.initResult(rets[0], rets[1], true)
	if err != nil {
		c.add(c.line(cbInit), "init: %v", err)
		return nil
	}
	if err := v.checkCapabilities(res.Has); err != nil {
		c.add(c.ver.retLine, "init %v", err)
	}
	state := rets[2]
	tools := c.list(cbTools, state, "name", c.tool)
	c.toolScopes(tools)
	c.oauthAudience()
	if v.has(cbResources) {
		c.list(cbResources, state, "uri", c.named(cbResources))
	}
	if v.has(cbResourceTemplates) {
		c.list(cbResourceTemplates, state, "uri_template", c.named(cbResourceTemplates))
	}
	if v.has(cbPrompts) {
		c.list(cbPrompts, state, "name", nil)
	}
	return tools
}

// list runs a list callback and checks each entry has a string key, unique
// within the list, and a JSON form; each (optional) checks an entry further.
func (c *checker) list(cb int, state lua.LValue, key string, each func(root string, t *lua.LTable)) []string {
	name := callbackNames[cb]
	rets, ok := c.call(cb, 1, state)
	if !ok {
		return nil
	}
	line := c.line(cb)
	entries, err := list(rets[0], name)
	if err != nil {
		c.add(line, "%v", err)
		return nil
	}
	var keys []string
	seen := make(map[string]bool)
	for i, e := range entries {
		root := name + "[" + strconv.Itoa(i+1) + "]"
		t, ok := e.(*lua.LTable)
		if !ok {
			c.add(line, "%s: want a table, got %s", root, describe(e))
			continue
		}
		k, ok := t.RawGetString(key).(lua.LString)
		if !ok {
			c.add(line, "%s.%s: want a string, got %s", root, key, describe(t.RawGetString(key)))
			continue
		}
		if seen[string(k)] {
			c.add(line, "%s.%s: duplicate %q", root, key, string(k))
		}
		seen[string(k)] = true
		keys = append(keys, string(k))
		if _, err := c.v.object(t, root, nil, descriptorShapes[cb]); err != nil {
			c.add(line, "%v", err)
		}
		if each != nil {
			each(root, t)
		}
	}
	return keys
}

// named checks that an entry of list callback cb has a name, which the MCP
// schema requires of resources and templates besides their key (a client
// that checks the schema refuses the whole list otherwise).
func (c *checker) named(cb int) func(root string, t *lua.LTable) {
	return func(root string, t *lua.LTable) {
		if _, ok := t.RawGetString("name").(lua.LString); !ok {
			c.add(c.line(cb), "%s.name: want a string (the MCP schema requires a name), got %s", root, describe(t.RawGetString("name")))
		}
	}
}

// tool checks one tool descriptor against the MCP spec.
func (c *checker) tool(root string, t *lua.LTable) {
	line := c.line(cbTools)
	name := string(t.RawGetString("name").(lua.LString))
	if !toolName.MatchString(name) {
		c.add(line, "%s.name %q: a tool name is 1 to 128 characters of A-Z a-z 0-9 _ - .", root, name)
	}
	schema := renamed(t, "input_schema")
	// A misspelt taskSupport would make the tool a never-task silently.
	if exec := t.RawGetString("execution"); exec != lua.LNil {
		et, ok := exec.(*lua.LTable)
		if !ok {
			c.add(line, "%s.execution: want a table such as { taskSupport = \"optional\" }, got %s", root, describe(exec))
		} else if ts := et.RawGetString("taskSupport"); ts != lua.LNil {
			if s, _ := ts.(lua.LString); s != "forbidden" && s != "optional" && s != "required" {
				c.add(line, "%s.execution.taskSupport: want \"forbidden\", \"optional\" or \"required\", got %s", root, describe(ts))
			}
		}
	}
	st, ok := schema.(*lua.LTable)
	if !ok {
		c.add(line, "%s.input_schema: want a JSON Schema table with type = \"object\", got %s", root, describe(schema))
		return
	}
	if typ, _ := st.RawGetString("type").(lua.LString); typ != "object" {
		c.add(line, "%s.input_schema.type: the root of an input schema must be type = \"object\", got %s", root, describe(st.RawGetString("type")))
	}
	// The MCP schema (2025-11-25) requires the same of an output schema
	// (one that is no table is reported where the entry is encoded).
	if out, ok := renamed(t, "output_schema").(*lua.LTable); ok {
		if typ, _ := out.RawGetString("type").(lua.LString); typ != "object" {
			c.add(line, "%s.output_schema.type: the root of an output schema must be type = \"object\", got %s", root, describe(out.RawGetString("type")))
		}
	}
	// With validate_arguments, a schema the checker cannot read refuses
	// every call of its tool.
	if c.ver.validateArgs {
		if _, _, err := c.v.compileInputSchema(t); err != nil {
			c.add(line, "%s.input_schema (route.validate_arguments): %v", root, err)
		}
		c.ignoredKeywords(line, root, t, "input_schema")
	}
	if c.ver.validateResults {
		if _, _, err := c.v.compileSchema(t, "output_schema"); err != nil {
			c.add(line, "%s.output_schema (route.validate_results): %v", root, err)
		}
		c.ignoredKeywords(line, root, t, "output_schema")
	}
}

// ignoredKeywords warns of the keywords of tool's schema under key that
// read like checks the validator does not make (jsonschema.IgnoredKeywords):
// a misspelt minimum lets through the values it was meant to refuse.
func (c *checker) ignoredKeywords(line int, root string, tool *lua.LTable, key string) {
	text, err := c.v.schemaText(tool, key)
	if text == nil || err != nil {
		return // no schema, or the error above says why
	}
	ignored, err := jsonschema.IgnoredKeywords(text)
	if err != nil {
		return
	}
	for _, ig := range ignored {
		c.warn(line, "%s.%s: #%s is not checked: %s", root, key, ig.Pointer, ig.Why)
	}
}

// toolScopes reports the tools route.oauth.tool_scopes names that tools()
// does not list: a misspelt name leaves its tool without the scopes meant
// for it.
func (c *checker) toolScopes(tools []string) {
	o := c.ver.opts.OAuth
	if o == nil || tools == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(o.ToolScopes)) {
		if !slices.Contains(tools, name) {
			c.add(c.ver.retLine, "route.oauth.tool_scopes names %q, which tools() does not list", name)
		}
	}
}

// oauthAudience warns when route.oauth.audience names another path than the
// route's. A client takes the audience for the URL it reaches the route at
// (the official TypeScript SDK refuses metadata whose resource is not a
// prefix of it), while luamcp names the metadata document under the route's
// own path: they differ only behind a proxy that rewrites paths, which must
// then map both the route and its metadata.
func (c *checker) oauthAudience() {
	o := c.ver.opts.OAuth
	if o == nil {
		return
	}
	u, err := url.Parse(o.Audience)
	if err != nil {
		return
	}
	if strings.TrimSuffix(u.Path, "/") != strings.TrimSuffix(c.ver.opts.Path, "/") {
		c.warn(c.ver.retLine, "route.oauth.audience's path %q is not the route's path %q: clients reach the route at the audience, and its metadata is served at %s; unless a proxy maps the one path to the other, make them the same",
			u.Path, c.ver.opts.Path, mcp.MetadataPath(c.ver.opts.Path))
	}
}

// problem splits a "file:line: message" error text; without a position it
// falls back to file and line.
func problem(msg, file string, line int) Problem {
	if pos := position(msg); pos != "" {
		head := strings.TrimSuffix(pos, ": ")
		i := strings.LastIndexByte(head, ':')
		if n, err := strconv.Atoi(head[i+1:]); err == nil {
			return Problem{File: head[:i], Line: n, Message: msg[len(pos):]}
		}
	}
	msg = strings.TrimPrefix(msg, file+": ")
	return Problem{File: file, Line: line, Message: msg}
}
