package luavm

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// validateScript has a tool whose schema the arguments are checked against
// when route.validate_arguments is set (VALIDATE), and a counter of the
// handle_tool runs.
const validateScript = `
local runs = 0
return {
  route = { sessions = true, validate_arguments = VALIDATE },
  init = function() return { name = "v", version = "1" }, { tools = {} }, {} end,
  tools = function()
    return {
      { name = "forecast", description = "the weather",
        input_schema = { type = "object", required = { "city" }, additionalProperties = false,
          properties = { city = { type = "string", minLength = 1 },
                         days = { type = "integer", minimum = 1, maximum = 7 } } } },
      { name = "runs", description = "handle_tool runs", input_schema = { type = "object" } },
      { name = "broken", description = "its schema does not compile",
        input_schema = { type = "object", properties = { a = { pattern = "(?=x)", minimun = 1 } } } },
    }
  end,
  handle_tool = function(name, args)
    runs = runs + 1
    if name == "runs" then return tostring(runs) end
    return name .. " " .. tostring(args.city) .. " " .. tostring(args.days)
  end,
}`

// With validate_arguments, arguments that break the tool's input schema get
// a tool error saying where and how, and handle_tool never runs; without it
// they reach handle_tool as before.
func TestValidateArguments(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args string
		validate         bool
		want             string // the result's text
		isError          bool
	}{
		{"valid", "forecast", `{"city":"Oslo","days":3}`, true, "forecast Oslo 3", false},
		{"no arguments for no required ones", "runs", ``, true, "1", false},
		{"missing required", "forecast", `{"days":3}`, true, `invalid arguments for "forecast": missing required property "city"`, true},
		{"wrong type", "forecast", `{"city":"Oslo","days":"3"}`, true, `invalid arguments for "forecast": days: want integer, got string`, true},
		{"out of range", "forecast", `{"city":"Oslo","days":8}`, true, `invalid arguments for "forecast": days: want at most 7, got 8`, true},
		{"unexpected property", "forecast", `{"city":"Oslo","hours":1}`, true, `invalid arguments for "forecast": unexpected property "hours"`, true},
		{"empty string", "forecast", `{"city":""}`, true, `invalid arguments for "forecast": city: want at least 1 characters, got 0`, true},
		{"broken schema", "broken", `{}`, true, `the server cannot check the arguments of "broken": its input schema is invalid`, true},
		{"off: passed through", "forecast", `{"days":"3"}`, false, "forecast nil 3", false},
		{"off: broken schema unused", "broken", `{}`, false, "broken nil nil", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, logs := loadSource(t, "v.lua", strings.Replace(validateScript, "VALIDATE", map[bool]string{true: "true", false: "false"}[tc.validate], 1))
			ss, _ := open(t, s, "sid")
			res := mustCall(t, ss, tc.tool, tc.args)
			if got := text(t, res); got != tc.want || strings.Contains(res, `"isError":true`) != tc.isError {
				t.Errorf("%s(%s): %s, want %q (isError %v)", tc.tool, tc.args, res, tc.want, tc.isError)
			}
			runs := "2" // the call, then this check
			if tc.isError {
				runs = "1" // the refused call did not run
			}
			if got := text(t, mustCall(t, ss, "runs", `{}`)); got != runs {
				t.Errorf("handle_tool ran %s times counting this check, want %s", got, runs)
			}
			if tc.name == "broken schema" {
				mustCall(t, ss, tc.tool, tc.args) // logged once per schema
				if n := strings.Count(logs.String(), "cannot be checked"); n != 1 {
					t.Errorf("the broken schema was logged %d times, want once:\n%s", n, logs)
				}
			}
		})
	}
}

// TestBrokenSchemaLogThrottled: a tools() that makes a new broken schema
// for every call (here: its title counts) made one error line per call, a
// flood any client could drive; the lines are throttled as crashes are.
func TestBrokenSchemaLogThrottled(t *testing.T) {
	s, logs := loadSource(t, "v.lua", `
local n = 0
return {
  route = { sessions = true, validate_arguments = true },
  init = function() return { name = "v", version = "1" }, { tools = {} }, {} end,
  tools = function()
    n = n + 1
    return { { name = "broken", input_schema = { type = "object", title = "v" .. n, properties = { a = { pattern = "(?=x)" } } } } }
  end,
  handle_tool = function() return "ran" end,
}`)
	ss, _ := open(t, s, "sid")
	for range 20 {
		if got := text(t, mustCall(t, ss, "broken", `{}`)); !strings.Contains(got, "its input schema is invalid") {
			t.Fatalf("broken: %s", got)
		}
	}
	if n := strings.Count(logs.String(), "cannot be checked"); n != 1 {
		t.Errorf("20 calls, each with a new broken schema, logged %d lines, want 1:\n%s", n, logs)
	}
}

// luamcp check reports an input schema validate_arguments cannot read, and
// warns of its keywords that read like checks but are none.
func TestCheckValidateArguments(t *testing.T) {
	for _, validate := range []string{"true", "false"} {
		dir := t.TempDir()
		path := dir + "/v.lua"
		writeScript(t, path, strings.Replace(validateScript, "VALIDATE", validate, 1))
		_, problems := Check(path, Config{Dir: dir})
		var found, warned []string
		for _, p := range problems {
			if p.Warning {
				warned = append(warned, p.Message)
			} else {
				found = append(found, p.Message)
			}
		}
		all := strings.Join(found, "\n")
		if want := validate == "true"; strings.Contains(all, "tools[3].input_schema (route.validate_arguments)") != want {
			t.Errorf("validate_arguments = %s: problems %q", validate, found)
		}
		want := []string{"tools[3].input_schema: #/properties/a/minimun is not checked: no such keyword; minimum?"}
		if validate == "false" {
			want = nil
		}
		if strings.Join(warned, "\n") != strings.Join(want, "\n") {
			t.Errorf("validate_arguments = %s: warnings %q, want %q", validate, warned, want)
		}
	}
}

// resultScript's tool declares an output schema; its argument says what
// structured content it returns, and every call counts in the state.
const resultScript = `
return {
  route = { sessions = true, validate_results = VALIDATE },
  init = function() return { name = "r", version = "1" }, { tools = {} }, { calls = 0 } end,
  tools = function()
    return {
      { name = "temp", description = "a temperature", input_schema = { type = "object" },
        output_schema = { type = "object", required = { "celsius" },
          properties = { celsius = { type = "number", minimum = -273.15 } } } },
      { name = "calls", description = "calls so far", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    state.calls = state.calls + 1
    if name == "calls" then return tostring(state.calls), state end
    if args.give == "none" then return "21 C", state end
    if args.give == "error" then return nil, "no sensor", state end
    return { content = { { type = "text", text = "t" } }, structured_content = { celsius = args.celsius } }, state
  end,
}`

// With validate_results, a successful result of a tool that declares an
// output_schema must carry structured_content that fits it; one that does
// not is a crash (the script broke its contract): the client gets an
// internal error, the log says where, and the state rolls back. Tool errors
// need no structured content.
func TestValidateResults(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		validate   bool
		crash      string // "" when the call succeeds; else a substring of the log
	}{
		{"fits", `{"celsius":21.5}`, true, ""},
		{"breaks the schema", `{"celsius":-300}`, true, "result.structured_content.celsius does not match the output_schema: want at least -273.15, got -300"},
		{"missing property", `{}`, true, "result.structured_content does not match the output_schema: missing required property"},
		{"no structured content", `{"give":"none"}`, true, "a result needs structured_content"},
		{"a tool error needs none", `{"give":"error"}`, true, ""},
		{"off", `{"celsius":-300}`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, logs := loadSource(t, "r.lua", strings.Replace(resultScript, "VALIDATE", map[bool]string{true: "true", false: "false"}[tc.validate], 1))
			ss, _ := open(t, s, "sid")
			_, err := call(t, ss, "temp", tc.args)
			calls := "2"
			if tc.crash == "" {
				if err != nil {
					t.Fatalf("temp(%s): %v", tc.args, err)
				}
			} else {
				if !isCrash(err) {
					t.Fatalf("temp(%s): %v, want a crash", tc.args, err)
				}
				if !strings.Contains(logs.String(), tc.crash) {
					t.Errorf("the log lacks %q:\n%s", tc.crash, logs)
				}
				calls = "1" // rolled back
			}
			if got := text(t, mustCall(t, ss, "calls", `{}`)); got != calls {
				t.Errorf("state.calls = %s after the call, want %s", got, calls)
			}
		})
	}
}

// TestStructuredContentGuided: a tool whose output_schema types a member as
// an array, returning it as an empty table (the natural way to say "found
// nothing"), sends [], which the schema (and validate_results, and a client
// that checks it) accepts; a tool without an output_schema sends {} as
// before. Without the guide the first went out as {"items":{}} and the
// TypeScript SDK refused the result.
func TestStructuredContentGuided(t *testing.T) {
	s, _ := loadSource(t, "g.lua", `
return {
  route = { sessions = true, validate_results = true },
  init = function() return { name = "g", version = "1" }, { tools = {} }, {} end,
  tools = {
    { name = "search", input_schema = { type = "object" },
      output_schema = { type = "object", required = { "items" },
        properties = { items = { type = "array", items = { ["$ref"] = "#/$defs/item" } } },
        ["$defs"] = { item = { type = "object", properties = { tags = { type = "array" } } } } } },
    { name = "plain", input_schema = { type = "object" } },
  },
  handle_tool = function(name, args)
    if name == "plain" then return { content = {}, structured_content = { items = {} } } end
    local items = {}
    if args.one then items[1] = { tags = {} } end
    return { content = {}, structured_content = { items = items } }
  end,
}`)
	ss, _ := open(t, s, "sid")
	for _, tc := range []struct{ tool, args, want string }{
		{"search", `{}`, `"structuredContent":{"items":[]}`},
		{"search", `{"one":true}`, `"structuredContent":{"items":[{"tags":[]}]}`},
		{"plain", `{}`, `"structuredContent":{"items":{}}`},
	} {
		out, err := call(t, ss, tc.tool, tc.args)
		if err != nil {
			t.Fatalf("%s(%s): %v", tc.tool, tc.args, err)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%s(%s) = %s, want it to contain %s", tc.tool, tc.args, out, tc.want)
		}
	}
}

// TestSchemaCacheBounded: a tools() may build a new schema for each call,
// and the compiled schemas a version keeps are bounded by their size, not
// only their count: 256 schemas of 40,000 properties, which a script's
// tools() made one a call, kept 17 MB each, past the process's memory
// ceiling.
func TestSchemaCacheBounded(t *testing.T) {
	schema := func(i int) []byte {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for k := range 20000 {
			fmt.Fprintf(&b, `"k%d":{"type":"string"},`, k)
		}
		fmt.Fprintf(&b, `"n%d":{}}}`, i)
		return []byte(b.String())
	}
	var c schemaCache
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 12 {
		if cs, fresh := c.get(schema(i)); cs.err != nil || !fresh {
			t.Fatalf("schema %d: fresh %v, %v", i, fresh, cs.err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d schemas cached, counted as %d MiB, the heap grew %d MiB", len(c.m), c.bytes>>20, grown>>20)
	const most = 64 << 20 // 12 schemas keep 156 MiB
	if c.bytes > most || grown > most {
		t.Errorf("the cache counts %d MiB and keeps %d MiB, want at most %d", c.bytes>>20, grown>>20, most>>20)
	}
	text := schema(100)
	c.get(text)
	if _, fresh := c.get(text); fresh {
		t.Error("a schema was compiled again right after it was cached")
	}
}
