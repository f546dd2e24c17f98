package luavm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

// TestCtxMetatable: script-api.md ("ctx") says ctx's metatable is
// protected, getmetatable(ctx) false. It is when ctx has lazy fields (the
// client declared capabilities, or the route checks tokens); a call that
// knows neither (a 2025 stateless request) gets a plain table: nil.
func TestCtxMetatable(t *testing.T) {
	s, _ := loadSource(t, "m.lua", `return {
  init = function() return { name = "m", version = "1" }, { tools = {} }, {} end,
  tools = { { name = "mt", input_schema = { type = "object" } } },
  handle_tool = function(name, args, ctx) return tostring(getmetatable(ctx)) end,
}`)
	ss, _ := open(t, s, "")
	if got := text(t, mustCall(t, ss, "mt", `{}`)); got != "nil" {
		t.Errorf("no capabilities known: getmetatable(ctx) = %s, want nil", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := testCall("")
	c.ClientCapabilities = json.RawMessage(`{"sampling":{}}`)
	res, err := ss.CallTool(ctx, c, "mt", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, string(res)); got != "false" {
		t.Errorf("capabilities known: getmetatable(ctx) = %s, want false", got)
	}
}

// TestAuthStatusOutsideErrors: script-api.md ("auth") says a number returned by auth
// rejects the request with that HTTP status. Only 400..599 do; any other
// number is logged as an unusable value and answered 500 (a 200 or a 302
// from auth never lets a request through or redirects it).
func TestAuthStatusOutsideErrors(t *testing.T) {
	s, logs := loadSource(t, "a.lua", `return {
  auth = function(request) return tonumber(request.headers["x-status"]) end,
  init = function() return { name = "a", version = "1" }, { tools = {} }, {} end,
  tools = {},
  handle_tool = function() return "" end,
}`)
	auth := s.Options().Auth
	for status, want := range map[string]int{"403": 403, "599": 599, "200": 500, "302": 500, "399": 500, "600": 500} {
		got := auth(context.Background(), &mcp.AuthRequest{Method: "POST", Path: "/mcp/a", Headers: map[string]string{"x-status": status}})
		if got != want {
			t.Errorf("auth returned %s: HTTP %d, want %d", status, got, want)
		}
	}
	contains(t, logs.String(), "auth returned an unusable value")
}

// TestRequireInitLua: require("lib.util") also finds lib/util/init.lua
// (script-api.md, "Files and routes").
func TestRequireInitLua(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lib", "util"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lib", "util", "init.lua"), []byte(`return { v = "init" }`), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `local u = require("lib.util")
return {
  init = function() return { name = "r", version = "1" }, { tools = {} }, {} end,
  tools = { { name = "v", input_schema = { type = "object" } } },
  handle_tool = function() return u.v end,
}`
	if err := os.WriteFile(filepath.Join(dir, "r.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(filepath.Join(dir, "r.lua"), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ss, _ := open(t, s, "")
	if got := text(t, mustCall(t, ss, "v", `{}`)); got != "init" {
		t.Errorf("got %q", got)
	}
}

// TestScriptAPIDocumentsMcpModule: docs/script-api.md names every
// function of the mcp module (mcp.close_stream was missing).
func TestScriptAPIDocumentsMcpModule(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "script-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := load(t, "echo.lua", nil)
	v, err := s.current().newVM(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	v.mod.Table().ForEach(func(k, val lua.LValue) {
		if _, ok := val.(*lua.LFunction); ok && !strings.Contains(string(doc), "`mcp."+k.String()+"(") {
			t.Errorf("docs/script-api.md does not document mcp.%s", k.String())
		}
	})
}
