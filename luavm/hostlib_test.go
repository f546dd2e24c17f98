package luavm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes src as dir/name and returns its path.
func writeFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	writeScript(t, path, src)
	return path
}

const hostScript = `
local env, fs, json = require("env"), require("fs"), require("json")
local early = { env.get("LUAMCP_TEST_VALUE") }
return {
  route = { allow = { env = { "LUAMCP_TEST_VALUE" }, read = { "data" } } },
  init = function() return { name = "h", version = "1" }, { tools = {} }, {} end,
  tools = function()
    local list = {}
    for _, name in ipairs({ "early", "env", "read", "json" }) do
      list[#list + 1] = { name = name, description = name, input_schema = { type = "object" } }
    end
    return list
  end,
  handle_tool = function(name, args)
    if name == "early" then return tostring(early[1]) .. "|" .. tostring(early[2]) end
    if name == "env" then local v, err = env.get(args.name); return tostring(v) .. "|" .. tostring(err) end
    if name == "read" then return fs.read("data/a.txt") end
    if name == "json" then return json.encode({ n = 1 }) end
  end,
}
`

func TestHostModules(t *testing.T) {
	t.Setenv("LUAMCP_TEST_VALUE", "forty-two")
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "data"), "a.txt", "file text")
	// A script module with a host module's name is shadowed by it.
	writeFile(t, dir, "json.lua", `return { encode = function() return "script module" end }`)
	logger, _ := newLogger()
	s, err := Load(writeFile(t, dir, "h.lua", hostScript), Config{Dir: dir, Logger: logger, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := s.Grants().String(), "read: data  env: LUAMCP_TEST_VALUE"; got != want {
		t.Errorf("Grants() = %q, want %q", got, want)
	}
	ss, _ := open(t, s, "")
	for _, tt := range []struct{ tool, args, want string }{
		// The grants are only known once the chunk has returned them: the
		// same in the first state of a version and in every later one.
		{"early", `{}`, "nil|env: not available while the script's main chunk runs (call it from init or a callback)"},
		{"env", `{"name":"LUAMCP_TEST_VALUE"}`, "forty-two|nil"},
		{"env", `{"name":"HOME"}`, "nil|env: HOME is not allowed (route.allow.env)"},
		{"read", `{}`, "file text"},
		{"json", `{}`, `{"n":1}`},
	} {
		for range 3 { // fresh and pooled states alike
			if got := text(t, mustCall(t, ss, tt.tool, tt.args)); got != tt.want {
				t.Errorf("%s(%s) = %q, want %q", tt.tool, tt.args, got, tt.want)
			}
		}
	}
}

func TestAllowLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ allow, want string }{
		{`{ http = { "https://api.example.com" } }`, `x.lua:2: route.allow.http[1] "https://api.example.com": write a host or host:port`},
		{`{ htp = { "a.com" } }`, `x.lua:2: route.allow has an unknown key "htp"`},
		{`{ read = { "nowhere" } }`, `x.lua:2: route.allow.read[1] "nowhere": no such folder`},
		{`{ exec = { "luamcp-no-such-program" } }`, `x.lua:2: route.allow.exec[1] "luamcp-no-such-program": program not found on PATH`},
		{`{ env = { 1 } }`, `x.lua:2: route.allow.env[1] must be a string, got 1`},
		{`"everything"`, `x.lua:2: route.allow must be a table, got a string`},
	}
	for _, tt := range tests {
		src := "local t = 1\nreturn { route = { allow = " + tt.allow + ` },
  init = function() return { name = "x", version = "1" }, { tools = {} }, {} end,
  tools = function() return {} end, handle_tool = function() end }`
		logger, _ := newLogger()
		s, err := Load(writeFile(t, dir, "x.lua", src), Config{Dir: dir, Logger: logger})
		if err == nil {
			s.Close()
			t.Errorf("allow = %s: loaded", tt.allow)
			continue
		}
		if !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("allow = %s:\n got %q\nwant %q", tt.allow, err, tt.want)
		}
	}
}

// TestArgErrorNames: in a script, an argument error of a host module's or
// the mcp module's function names it as the call does, and by its full name
// where the call gives none (pcall(f, ...)), which read '(anonymous)';
// mcp.sleep, which luavm wraps, too. The standard library keeps Lua's names.
func TestArgErrorNames(t *testing.T) {
	dir := t.TempDir()
	logger, _ := newLogger()
	src := `
local json, fs, mcp = require("json"), require("fs"), require("mcp")
local function msg(f, ...) return (select(2, pcall(f, ...)):gsub("^[^:]*:%d+: ", "")) end
return {
  route = { allow = { read = { "." } } },
  init = function() return { name = "h", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "a", description = "a", input_schema = { type = "object" } } } end,
  handle_tool = function()
    return table.concat({
      msg(function() json.decode({}) end), msg(json.decode, {}),
      msg(function() fs.read({}) end), msg(fs.read, {}),
      msg(function() mcp.sleep("x") end), msg(mcp.sleep, "x"),
      msg(function() string.rep() end),
    }, "\n")
  end,
}
`
	s, err := Load(writeFile(t, dir, "h.lua", src), Config{Dir: dir, Logger: logger, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, _ := open(t, s, "")
	got := strings.Split(text(t, mustCall(t, ss, "a", `{}`)), "\n")
	want := []string{
		"bad argument #1 to 'decode' (string expected, got table)",
		"bad argument #1 to 'json.decode' (string expected, got table)",
		"bad argument #1 to 'read' (string expected, got table)",
		"bad argument #1 to 'fs.read' (string expected, got table)",
		"bad argument #1 to 'sleep' (number expected, got string)",
		"bad argument #1 to 'mcp.sleep' (number expected, got string)",
		"bad argument #1 to 'rep' (string expected, got no value)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n got %q\nwant %q", got, want)
	}
}
