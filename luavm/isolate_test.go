package luavm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// isoScript is a stateless server whose load adds to the libraries and keeps
// tables in globals; its poison tool changes what its kind says, its probe
// tool reports what a request sees.
const isoScript = `local mcp = require("mcp")
local hits = 0 -- a module-level local: lives as long as the pooled state
string.trim = function(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end
CONFIG = { mode = "safe" }
local poisons = {
  global = function() x = "leak"; _G.y = "leak" end,
  string_meta = function() getmetatable("").__index = function() return function() return "pwned" end end end,
  string_format = function() string.format = function() return "pwned" end end,
  remove = function() print = nil; string.rep = nil; table.concat = nil end,
  loaded = function()
    package.loaded["lib.m"] = { greet = function() return "pwned" end }
    package.loaded.evil = {}
  end,
  module_field = function() require("lib.m").greet = function() return "pwned" end end,
  config = function() CONFIG.mode = "unsafe"; CONFIG.extra = true end,
  metatable = function() setmetatable(_G, { __index = function() return "pwned" end }) end,
  numeric = function() _G[1] = "x"; string[5] = 1; math[true] = 1 end,
  many = function() for i = 1, 1000 do _G["g" .. i] = i end end,
  trim = function() string.trim = nil end,
  seed = function() math.randomseed(1) end,
  markers = function()
    getmetatable(mcp.array({})).__jsontype = "object"
    getmetatable(mcp.object({})).__index = function() return "pwned" end
    getmetatable(mcp.null).__tostring = function() return "pwned" end
  end,
}
return {
  init = function() return { name = "iso", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "poison" }, { name = "probe" } } end,
  handle_tool = function(name, args)
    hits = hits + 1
    if name == "poison" then poisons[args.kind]() return "done" end
    return mcp.json_encode({
      hits = hits, x = tostring(x), y = tostring(rawget(_G, "y")), upper = ("a"):upper(),
      fmt = string.format("%d", 1), trim = string.trim("  a "), print = type(print),
      rep = type(string.rep), concat = type(table.concat), greet = require("lib.m").greet(),
      evil = tostring(package.loaded.evil), mode = CONFIG.mode, extra = tostring(CONFIG.extra),
      undefined = tostring(undefined_global), one = tostring(rawget(_G, 1)), s5 = tostring(string[5]),
      mtrue = tostring(math[true]), g1 = tostring(rawget(_G, "g1")), meta = tostring(getmetatable(_G)),
      r = math.random(1e9),
      array = mcp.json_encode(mcp.array({})), field = tostring(mcp.object({}).any), null = tostring(mcp.null),
    })
  end,
}
`

// TestStatelessIsolation: a stateless request starts on its pooled state
// with the globals and library tables as the script's load left them,
// whatever the request before did to them.
func TestStatelessIsolation(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"iso.lua":   isoScript,
		"lib/m.lua": `return { greet = function() return "hi" end }`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	probe := func(t *testing.T, s *Script) map[string]any {
		t.Helper()
		ss, _ := open(t, s, "")
		var got map[string]any
		if err := json.Unmarshal([]byte(text(t, mustCall(t, ss, "probe", `{}`))), &got); err != nil {
			t.Fatal(err)
		}
		ss.Close("")
		return got
	}
	for _, kind := range []string{
		"global", "string_meta", "string_format", "remove", "loaded", "module_field",
		"config", "metatable", "numeric", "many", "trim", "markers", "seed",
	} {
		t.Run(kind, func(t *testing.T) {
			logger, _ := newLogger()
			s, err := Load(filepath.Join(dir, "iso.lua"), Config{Dir: dir, Logger: logger, PoolSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			want := probe(t, s)
			if want["trim"] != "a" || want["greet"] != "hi" || want["mode"] != "safe" {
				t.Fatalf("the load's own additions are missing: %v", want)
			}
			ss, _ := open(t, s, "")
			mustCall(t, ss, "poison", `{"kind":"`+kind+`"}`)
			ss.Close("")
			got := probe(t, s)
			// The module-level local tells whether the same state served:
			// 1 probe, 2 poison, 3 probe. A state whose changes were too
			// many to undo is closed: the probe runs on a new one.
			wantHits := 3.0
			if kind == "many" || kind == "numeric" {
				wantHits = 1
			}
			if got["hits"] != wantHits {
				t.Errorf("hits = %v, want %v", got["hits"], wantHits)
			}
			// A seeded generator is put back too: the next request does
			// not continue the sequence seed 1 starts.
			if kind == "seed" && got["r"] == seededFirst(t) {
				t.Errorf("after math.randomseed(1), the next request drew %v: seed 1's first number", got["r"])
			}
			delete(got, "hits")
			delete(want, "hits")
			delete(got, "r")
			delete(want, "r")
			for k, w := range want {
				if got[k] != w {
					t.Errorf("after poison %q: %s = %v, want %v", kind, k, got[k], w)
				}
			}
		})
	}
}

// seededFirst is math.random(1e9) right after math.randomseed(1).
func seededFirst(t *testing.T) float64 {
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString("math.randomseed(1) return math.random(1e9)"); err != nil {
		t.Fatal(err)
	}
	return float64(L.Get(-1).(lua.LNumber))
}

// BenchmarkIsolate is the check a clean stateless request's state gets when
// it goes back to the pool: what isolation costs every request.
func BenchmarkIsolate(b *testing.B) {
	s, _ := load(b, "echo.lua", nil)
	v, err := s.current().pool.getSpare(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer v.close()
	n := 0
	for _, t := range v.globals.tables {
		n += len(t.strs) + len(t.others)
	}
	for b.Loop() {
		if !v.isolate() {
			b.Fatal("a clean state failed its check")
		}
	}
	b.ReportMetric(float64(n), "entries")
}
