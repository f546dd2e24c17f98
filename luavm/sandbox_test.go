package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

func TestSandboxGlobals(t *testing.T) {
	s, _ := load(t, "sandbox.lua", nil)
	ss, _ := open(t, s, "")
	var got map[string]string
	if err := json.Unmarshal([]byte(text(t, mustCall(t, ss, "probe", `{}`))), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"io": "nil", "debug": "nil", "channel": "nil",
		"dofile": "nil", "loadfile": "nil", "collectgarbage": "nil", "gcinfo": "nil", "getfenv": "nil", "setfenv": "nil",
		"module": "nil", "newproxy": "nil",
		"os_execute": "nil", "os_exit": "nil", "os_getenv": "nil", "os_remove": "nil",
		"os_time": "function", "os_clock": "function", "os_date": "function",
		"string": "table", "table": "table", "math": "table", "coroutine": "table",
		"load": "function", "loadstring": "function", "pcall": "function",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("type(%s) = %q, want %q", k, got[k], w)
		}
	}
}

func TestRequire(t *testing.T) {
	s, _ := load(t, "sandbox.lua", nil)
	ss, _ := open(t, s, "")
	tests := []struct {
		name string
		want string // the result text
		fail string // part of the in-band error
	}{
		{name: "lib.util", want: "hello, lua"},
		{name: "lib.util", want: "hello, lua"}, // cached in the state
		{name: "mcp", want: "table"},
		{name: "string", want: "table"},
		{name: "../x", fail: `invalid module name "../x"`},
		{name: "/etc/passwd", fail: `invalid module name "/etc/passwd"`},
		{name: "lib/util", fail: "invalid module name"},
		{name: "lib..util", fail: "invalid module name"},
		{name: "", fail: "invalid module name"},
		// A long name is quoted by its start (a message of the name's
		// size each time, or four times it, otherwise).
		{name: strings.Repeat("a", 201), fail: `invalid module name "` + strings.Repeat("a", 200) + `"... (201 bytes): modules`},
		{name: strings.Repeat("€", 334), fail: `invalid module name "` + strings.Repeat("€", 66) + `"... (1002 bytes): modules`}, // cut on a rune
		{name: "nope", fail: at(t, "sandbox.lua", "pcall(require") + " module 'nope' not found in the script folder"},
	}
	for _, tt := range tests {
		res := text(t, mustCall(t, ss, "require", `{"name":`+quote(tt.name)+`}`))
		if tt.fail != "" {
			contains(t, res, tt.fail)
			if len(res) > 600 {
				t.Errorf("require of a %d-byte name: a message of %d bytes", len(tt.name), len(res))
			}
			continue
		}
		if res != tt.want {
			t.Errorf("require(%q) = %q, want %q", tt.name, res, tt.want)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A symbolic link out of the script folder is refused.
func TestRequireSymlinkEscape(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.lua"), []byte(`return "secret"`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "lib")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/sandbox.lua")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sandbox.lua"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger()
	s, err := Load(filepath.Join(dir, "sandbox.lua"), Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, _, err := s.Init(context.Background(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close("")
	res := text(t, mustCall(t, ss, "require", `{"name":"lib.secret"}`))
	if strings.Contains(res, "secret\"") || !strings.Contains(res, "module 'lib.secret'") {
		t.Errorf("require through a symlink out of the folder: %q", res)
	}
}

func TestPrint(t *testing.T) {
	s, logs := load(t, "sandbox.lua", nil)
	ss, _ := open(t, s, "")
	mustCall(t, ss, "print", `{}`)
	contains(t, logs.String(), `level=INFO msg=print script=sandbox text="hello from\tlua\t42"`)
}

// TestPrintRate: a script printing in a loop logged 110 MB a second; its
// lines are metered, the drops reported once with their count, and the meter
// refills with time.
func TestPrintRate(t *testing.T) {
	s, logs := loadSource(t, "flood.lua", `
return {
  init = function() return { name = "flood", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "any" } } end,
  handle_tool = function(name, args)
    local line = string.rep("x", 8000)
    for i = 1, args.n do print(line) end
    return "printed"
  end,
}`)
	ss, _ := open(t, s, "")
	start := time.Now()
	mustCall(t, ss, "any", `{"n":2000}`) // 16 MB
	elapsed := time.Since(start)
	out := logs.String()
	printed := strings.Count(out, "msg=print ")
	most := int((printBurst+elapsed.Seconds()*printRate)/(8000+printLineCost)) + 1
	if printed < 100 || printed > most {
		t.Errorf("%d of 2000 lines of 8000 bytes logged in %v, want 100 to %d", printed, elapsed, most)
	}
	if n := strings.Count(out, `msg="print: lines dropped, past the rate a script may log" script=flood dropped=1 `); n != 1 {
		t.Errorf("%d warnings of one dropped line, want 1 (%d lines logged)", n, printed)
	}

	var p printLog
	now := time.Now()
	for range printBurst / (1000 + printLineCost) {
		if !p.allow(1000, now) {
			t.Fatal("the burst was refused")
		}
	}
	if p.allow(1000, now) {
		t.Error("a line past the burst was allowed")
	}
	if !p.allow(1000, now.Add(time.Second/printRate*(1000+printLineCost)*2)) {
		t.Error("a line was refused after the meter refilled")
	}
}

func TestLoadFunction(t *testing.T) {
	s, _ := load(t, "sandbox.lua", nil)
	ss, _ := open(t, s, "")
	tests := []struct{ code, want string }{
		{"return 1 + 1", "2"},
		{"return = 1", `[string "return = 1"]:1: syntax error near '='`},
		{"return io", "nil"},
		{strings.Repeat("do ", 300) + strings.Repeat("end ", 300), `..."]:1: chunk nests deeper than 200 levels`},
		{"return " + strings.Repeat("{", 300) + strings.Repeat("}", 300), "nests deeper"},
		// A megabyte of nesting is refused as it is read, not after seconds
		// of parsing into hundreds of MiB.
		{"return " + strings.Repeat("(", maxLoadSize-10), `..."]:1: chunk nests deeper than 200 levels`},
		{"return " + strings.Repeat("a .. ", maxLoadSize/5-10) + "a", "nests deeper"},
		{"return " + strings.Repeat("{", maxLoadSize-10), "nests deeper"},
		{strings.Repeat(" ", maxLoadSize+1), "chunk too large"},
	}
	for _, tt := range tests {
		got := text(t, mustCall(t, ss, "load", `{"code":`+quote(tt.code)+`}`))
		if !strings.Contains(got, tt.want) {
			t.Errorf("load(%.20q...) = %q, want %q", tt.code, got, tt.want)
		}
	}
}

// TestLoadReaderStopsAtTheLimit pins that load with a reader function stops
// calling it once the pieces pass maxLoadSize: a reader that never ends
// makes at most maxLoadSize of Go memory, not whatever the compile-time
// check would find later. TestLoadFunction only passes strings.
func TestLoadReaderStopsAtTheLimit(t *testing.T) {
	const piece = 64 << 10
	s, _ := loadSource(t, "a.lua", `
return {
  init = function() return { name = "a", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "reader" } } end,
  handle_tool = function()
    local calls = 0
    local f, err = load(function() calls = calls + 1; return string.rep(" ", `+strconv.Itoa(piece)+`) end)
    return tostring(f) .. " " .. tostring(err) .. " " .. calls
  end,
}`)
	ss, _ := open(t, s, "")
	want := fmt.Sprintf("nil chunk too large (at most %d KiB) %d", maxLoadSize>>10, maxLoadSize/piece+1)
	if got := text(t, mustCall(t, ss, "reader", `{}`)); got != want {
		t.Fatalf("load(reader) = %q, want %q", got, want)
	}
}

// TestLoadWithinItsBounds: load parses under the call's context and charges
// the parse tree to the memory budget. A flat megabyte of code parses for
// about a second, beyond the reach of the VM's checks between instructions,
// and its tree is tens of MiB of Go memory.
func TestLoadWithinItsBounds(t *testing.T) {
	s, _ := loadSource(t, "a.lua", `
return {
  route = { memory_limit_mb = 16 },
  init = function() return { name = "a", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "load" } } end,
  handle_tool = function(_, args)
    local fn, err = load(string.rep("x = 1 ", args.n))
    return tostring(fn ~= nil) .. " " .. tostring(err)
  end,
}`)
	ss, _ := open(t, s, "")
	if got := text(t, mustCall(t, ss, "load", `{"n":1000}`)); got != "true nil" {
		t.Errorf("a small chunk: %q", got)
	}
	if got := text(t, mustCall(t, ss, "load", `{"n":170000}`)); got != "false not enough memory to compile the chunk" {
		t.Errorf("a megabyte under a budget of 16 MiB: %q", got)
	}

	calls := 0
	interrupt := func() error {
		if calls++; calls == 2 {
			return context.DeadlineExceeded
		}
		return nil
	}
	_, err := compile([]byte(strings.Repeat("x = 1 ", 170000)), "x", maxLoadDepth, interrupt)
	if !errors.Is(err, context.DeadlineExceeded) || calls != 2 {
		t.Errorf("an interrupted parse: %v after %d checks, want the interrupt's error after 2", err, calls)
	}
}

// The guarded library functions still do their job.
func TestLibraryFunctions(t *testing.T) {
	dir := t.TempDir()
	script := `
local checks = {
  { ("abc"):rep(3), "abcabcabc" },
  { string.rep("x", 0), "" },
  { select(1, ("hello world"):gsub("o", "0")), "hell0 w0rld" },
  { select(2, ("hello world"):gsub("o", "0")), 2 },
  { (("hello world"):gsub("(%w+)", "<%1>")), "<hello> <world>" },
  { (("hello world"):gsub("%w+", "%0 %0", 1)), "hello hello world" },
  { (("abc"):gsub("%w*", "x")), "xx" },
  { (("abc"):gsub("", "-")), "-a-b-c-" },
  { (("hello"):gsub("^h", "H")), "Hello" },
  { (("a=1, b=2"):gsub("(%w+)=(%w+)", "%2=%1")), "1=a, 2=b" },
  { (("$name is $age"):gsub("%$(%w+)", { name = "Ann", age = 7 })), "Ann is 7" },
  { (("abc"):gsub("%w", function(c) return c:upper() .. "." end)), "A.B.C." },
  { (("abc"):gsub("b", false and "" or function() return nil end)), "abc" },
  { (("x y"):gsub("()", "%1")), "1x2 3y4" },
  { table.concat({ 1, 2, 3 }, ", "), "1, 2, 3" },
  { string.format("%5.2f|%-3s|%d", 3.14159, "a", 7), " 3.14|a  |7" },
  { os.date("!%Y", 0), "1970" },
}
local words = {}
for w in ("one two  three"):gmatch("%a+") do words[#words + 1] = w end
checks[#checks + 1] = { table.concat(words, ","), "one,two,three" }
local pairs_ = {}
for k, v in ("a=1 b=2"):gmatch("(%w)=(%w)") do pairs_[#pairs_ + 1] = k .. v end
checks[#checks + 1] = { table.concat(pairs_, ","), "a1,b2" }
local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1); return b * 2 end)
checks[#checks + 1] = { co(1), 2 }
checks[#checks + 1] = { co(5), 10 }
local ok, err = pcall(co)
checks[#checks + 1] = { ok, false }

return {
  init = function() return { name = "libs", version = "1" }, {}, {} end,
  tools = function() return { { name = "check" } } end,
  handle_tool = function()
    for i, c in ipairs(checks) do
      if c[1] ~= c[2] then
        return nil, string.format("check %d: got %s, want %s", i, tostring(c[1]), tostring(c[2]))
      end
    end
    return "ok"
  end,
}
`
	if err := os.WriteFile(filepath.Join(dir, "libs.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger()
	s, err := Load(filepath.Join(dir, "libs.lua"), Config{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, _, err := s.Init(context.Background(), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close("")
	res, err := ss.CallTool(context.Background(), &mcp.Call{Out: out{}}, "check", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, string(res)); got != "ok" {
		t.Error(got)
	}
}

// TestCoroutinesNestedTooDeep: a resumed coroutine runs on its resumer's Go
// stack, and the call stack limit counts each coroutine alone, so coroutines
// nested in coroutines, each holding nested pcalls, grew the Go stack past
// its maximum and killed the process. The resume that would nest too deep
// fails instead: coroutine.resume returns false and the message, a wrapped
// coroutine raises it. Nesting a few levels, each with a deep stack, works.
func TestCoroutinesNestedTooDeep(t *testing.T) {
	src := `
local deep
local maxn = 0
local function dive(n, wrap)
  if n > maxn then maxn = n end
  local body = function() return deep(20, n, wrap) end
  if wrap then return coroutine.wrap(body)() end
  local ok, r = coroutine.resume(coroutine.create(body))
  if not ok then error(r, 0) end
  return r
end
deep = function(k, n, wrap)
  if k == 0 then return dive(n + 1, wrap) end
  local ok, r = pcall(deep, k - 1, n, wrap)
  if not ok then error(r, 0) end
  return r
end
return {
  route = { memory_limit_mb = 8 },
  init = function() return { name = "a", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "d" } } end,
  handle_tool = function(name, args, ctx, state)
    maxn = 0
    local ok, err = pcall(dive, 1, args.wrap)
    return tostring(ok) .. " " .. tostring(err) .. " at depth " .. maxn
  end,
}`
	s, _ := loadSource(t, "a.lua", src)
	ss, _ := open(t, s, "sid")
	for _, args := range []string{`{}`, `{"wrap":true}`} {
		got := text(t, mustCall(t, ss, "d", args))
		// A wrapped coroutine's error gains a position at each level it
		// crosses, as any error raised with level 1.
		i := strings.LastIndex(got, "coroutines nested too deep at depth ")
		var depth int
		if _, err := fmt.Sscanf(got[max(i, 0):], "coroutines nested too deep at depth %d", &depth); i < 0 || err != nil || !strings.HasPrefix(got, "false ") {
			t.Fatalf("%s: got %q, want the resume refused", args, got)
		}
		t.Logf("%s: refused at depth %d", args, depth)
		if depth < 4 {
			t.Errorf("%s: refused at depth %d: nesting a few coroutines must work", args, depth)
		}
	}
}

// TestDeepFile: a script file or module nested millions of levels deep
// (which would overflow the stack of the goroutine that parses it: a fatal
// error, the process gone) is refused as it is read; nesting any person or
// generator writes loads.
func TestDeepFile(t *testing.T) {
	deep := "return " + strings.Repeat("f(", 3_000_000) + "1" + strings.Repeat(")", 3_000_000)
	for _, tc := range []struct{ name, src, want string }{
		{"deep.lua", deep, "deep.lua:1: chunk nests deeper than 10000 levels"},
		{"ok.lua", strings.Repeat("do ", 1000) + strings.Repeat("end ", 1000) + "\nreturn 1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile([]byte(tc.src), tc.name, maxFileDepth, nil)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("compile: %v, want %q", err, tc.want)
			}
		})
	}
	// As a script: the host refuses to mount it, with that error.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deep.lua"), []byte(deep), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger()
	if _, err := Load(filepath.Join(dir, "deep.lua"), Config{Dir: dir, Logger: logger}); err == nil || !strings.Contains(err.Error(), "nests deeper") {
		t.Errorf("Load: %v", err)
	}
}

// TestChunkNames: chunks a script compiles are named in errors as Lua 5.1
// names them (luaO_chunkid), whatever name a script passes.
func TestChunkNames(t *testing.T) {
	s, _ := loadSource(t, "names.lua", `
local function err(f) local ok, e = pcall(f); return e end
return {
  init = function() return { name = "n", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "names" } } end,
  handle_tool = function()
    local pieces = { "error('x')" }
    return table.concat({
      err(loadstring("error('x')")),
      err(loadstring("error('x')", "=mine")),
      err(loadstring("error('x')", "@lib/a.lua")),
      err(load("\nerror('x')")),
      err(load(function() return table.remove(pieces) end)),
      select(2, loadstring("x = ", string.rep("n", 1000))),
    }, "|")
  end,
}`)
	ss, _ := open(t, s, "")
	want := `[string "error('x')"]:1: x|mine:1: x|lib/a.lua:1: x|[string "..."]:2: x|(load):1: x|` +
		`[string "` + strings.Repeat("n", 43) + `..."]:1: syntax error`
	if got := text(t, mustCall(t, ss, "names", `{}`)); !strings.HasPrefix(got, want) {
		t.Errorf("chunk names:\n got %s\nwant %s...", got, want)
	}
}

func TestModulePath(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{"lib/util.lua", true},
		{"lib/util/init.lua", true},
		{"lib", true},
		{"lib/my-mod_2.lua", true},
		{"notes.txt", false},
		{"lib/util.lua~", false},
		{"lib.old/util.lua", false},
		{"lib/util.lua.bak", false},
		{"lib/#util.lua#", false},
		{"lib/a b.lua", false},
		{"", false},
		{strings.Repeat("a", 201) + ".lua", false},
	}
	for _, tt := range tests {
		if got := ModulePath(tt.rel); got != tt.want {
			t.Errorf("ModulePath(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}
