package luavm

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestEditorStubs keeps the LuaLS stubs in types/ in step with the code: every
// function of the mcp module, every callback and every route option is
// annotated, and nothing annotated is missing from the code.
func TestEditorStubs(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "types", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	mcpStub, serverStub := read("mcp.lua"), read("server.lua")

	s, _ := load(t, "echo.lua", nil)
	v, err := s.current().newVM(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer v.close()
	module := map[string]bool{}
	v.mod.Table().ForEach(func(k, val lua.LValue) {
		name := k.String()
		module[name] = true
		if _, ok := val.(*lua.LFunction); ok && !strings.Contains(mcpStub, "function mcp."+name+"(") {
			t.Errorf("types/mcp.lua does not annotate mcp.%s", name)
		}
	})
	if !strings.Contains(mcpStub, "---@field null mcp.Null") {
		t.Error("types/mcp.lua does not annotate mcp.null")
	}
	for _, m := range regexp.MustCompile(`function mcp\.(\w+)\(`).FindAllStringSubmatch(mcpStub, -1) {
		if !module[m[1]] {
			t.Errorf("types/mcp.lua annotates mcp.%s, which the module lacks", m[1])
		}
	}

	server := section(t, serverStub, "---@class luamcp.Server\n")
	for _, name := range append(callbackNames[:], "route", "auth") {
		if !strings.Contains(server, "---@field "+name+" ") {
			t.Errorf("types/server.lua: luamcp.Server does not annotate %s", name)
		}
	}
	routeStub := section(t, serverStub, "---@class luamcp.Route\n")
	fields := regexp.MustCompile(`---@field (\w+) `).FindAllStringSubmatch(routeStub, -1)
	src, err := os.ReadFile("route.go")
	if err != nil {
		t.Fatal(err)
	}
	options := regexp.MustCompile(`case "(\w+)":`).FindAllStringSubmatch(string(src), -1)
	if len(fields) != len(options) {
		t.Errorf("types/server.lua annotates %d route options, route.go reads %d", len(fields), len(options))
	}
	for _, f := range fields {
		var o routeOptions
		if err := setOption(&o, f[1], sample(f[1])); err != nil && strings.Contains(err.Error(), "unknown option") {
			t.Errorf("types/server.lua annotates route.%s, which luavm does not know", f[1])
		}
	}
}

// section returns the text of one ---@class block.
func section(t *testing.T, src, head string) string {
	t.Helper()
	i := strings.Index(src, head)
	if i < 0 {
		t.Fatalf("no %q", head)
	}
	rest := src[i+len(head):]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func sample(option string) lua.LValue {
	switch option {
	case "path":
		return lua.LString("/x")
	case "sessions", "allow_remote_access":
		return lua.LTrue
	case "origins", "concurrent_tools":
		return &lua.LTable{}
	}
	return lua.LNumber(1)
}
