package luavm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzChunk runs arbitrary Lua source as a tool's body, in the sandbox a
// script's code runs in (testdata/fuzzchunk.lua loads it with load and
// calls it), under a 4 MiB budget and a 100 ms call timeout; it also
// compiles the source as a script file is compiled. A Lua error, a syntax
// error, a timeout or "memory limit exceeded" are all fine outcomes. What
// must never happen, and fails the target:
//
//   - the process dies (a Go panic past every recover, a fatal error such
//     as a Go stack past its maximum or concurrent map writes): the fuzzing
//     engine reports the worker's death;
//   - a Go panic that gopher-lua recovered into a Lua error ("runtime
//     error: ..."), whether it reached the host or a pcall of the chunk;
//   - the heap growing far past the budget during the call (fuzzHeapSlack);
//   - the call returning long after its timeout (fuzzLate).
func FuzzChunk(f *testing.F) {
	for _, seed := range chunkSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		runChunk(t, src)
	})
}

const (
	// fuzzHeapSlack is how far the heap may grow past its size before the
	// call: 64 times the 4 MiB budget, room for the garbage a collection
	// cycle lets pile up, far below what an allocation the budget missed
	// (string.rep's gigabytes) takes.
	fuzzHeapSlack = 256 << 20
	// fuzzLate bounds how long after its 100 ms timeout a call may return,
	// on a loaded machine.
	fuzzLate = 3 * time.Second
	// fuzzMaxStack lowers the Go stack's bound for the fuzzing process, from
	// 1 GB: a recursion no bound stops dies sooner and costs less memory.
	// Nothing legitimate comes near it (maxFileDepth's compile takes a few
	// MiB).
	fuzzMaxStack = 256 << 20
)

// fuzzServer is the script FuzzChunk runs chunks on, loaded once per
// process, and the first Go panic its log reported.
var fuzzServer = sync.OnceValues(func() (*Script, *panicLog) {
	debug.SetMaxStack(fuzzMaxStack)
	log := &panicLog{}
	s, err := Load(filepath.Join("testdata", "fuzzchunk.lua"), Config{
		Dir:         "testdata",
		Logger:      slog.New(slog.NewTextHandler(log, nil)),
		PoolSize:    1,
		MemoryLimit: -1, // no heap watchdog: the budget alone must hold
	})
	if err != nil {
		panic(err)
	}
	return s, log
})

// panicLog is a log that keeps the first line fuzzchunk.lua printed about a
// Go panic.
type panicLog struct {
	found atomic.Pointer[string]
}

func (l *panicLog) Write(p []byte) (int, error) {
	if i := bytes.Index(p, []byte("GOPANIC ")); i >= 0 && l.found.Load() == nil {
		s := string(p[i:])
		l.found.Store(&s)
	}
	return len(p), nil
}

// runChunk runs src in a new session of fuzzServer and fails t on what
// FuzzChunk must never see.
func runChunk(t *testing.T, src string) {
	if _, err := compile([]byte(src), "chunk.lua", maxFileDepth, nil); err != nil {
		checkNoGoPanic(t, "compile", err.Error())
	}
	s, log := fuzzServer()
	log.found.Store(nil)
	ss, _ := open(t, s, "sid")
	args, _ := json.Marshal(map[string]string{"src": base64.StdEncoding.EncodeToString([]byte(src))})

	sample := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	peak := peakHeap(before)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := ss.CallTool(ctx, testCall(""), "run", args)
	took := time.Since(start)
	grown := peak() - before

	if err != nil {
		checkNoGoPanic(t, "call", err.Error())
	}
	if p := log.found.Load(); p != nil {
		t.Errorf("a Go panic reached Lua: %s", *p)
	}
	if grown > fuzzHeapSlack {
		t.Errorf("the heap grew by %d MiB during a call under a 4 MiB budget (%v)", grown>>20, err)
	}
	if took > 100*time.Millisecond+fuzzLate {
		t.Errorf("the call returned after %v, its timeout is 100ms (%v)", took, err)
	}
}

// checkNoGoPanic fails t when msg is a Go panic gopher-lua recovered.
func checkNoGoPanic(t *testing.T, what, msg string) {
	t.Helper()
	for _, sign := range []string{"runtime error: ", "interface conversion: "} {
		if strings.Contains(msg, sign) {
			t.Errorf("%s: a Go panic: %.400s", what, msg)
		}
	}
}

// peakHeap samples the heap every millisecond until the function it returns
// is called, which returns the largest size seen (at least floor).
func peakHeap(floor uint64) func() uint64 {
	stop := make(chan struct{})
	done := make(chan uint64)
	go func() {
		peak := floor
		sample := []metrics.Sample{{Name: heapMetric}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return <-done
	}
}

// chunkSeeds are the attacks FuzzChunk starts from: allocation bombs,
// recursion of every kind, the error machinery, metatables, deep nesting
// the parser must refuse, and the libraries' edge cases.
func chunkSeeds() []string {
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	return []string{
		// Allocation bombs.
		`return #string.rep("x", 2^40)`,
		`local s = ("x"):rep(1e6) for i = 1, 30 do s = s .. s end return #s`,
		`local t = {} for i = 1, 1e9 do t[i] = i end`,
		`local t = {} t[2^31] = 1 t[2^53] = 2 return #t`,
		`local t = {} while true do t[#t+1] = {} end`,
		`return table.concat(setmetatable({}, {__index = function() return ("x"):rep(1e5) end}), "", 1, 1e6)`,
		`return #table.concat({("x"):rep(1e6), ("y"):rep(1e6)}, ("z"):rep(1e6))`,
		`return select("#", unpack({}, 1, 1e8))`,
		`return select("#", string.byte(("x"):rep(1e7), 1, -1))`,
		`return ("x"):rep(1e5):gsub(".", ("y"):rep(1e5))`,
		`return os.date(("%c"):rep(1e6))`,
		`return string.format(("%s"):rep(200), unpack((function() local t = {} for i = 1, 200 do t[i] = ("x"):rep(1e5) end return t end)()))`,
		`local t = {} for i = 1, 1e6 do t["k" .. i] = i end`,
		`local fs = {} for i = 1, 1e7 do fs[i] = function() return i end end`,
		`local c = {} for i = 1, 1e6 do c[i] = coroutine.create(function() end) end`,
		`local t = {} for i = 1, 1e5 do t[i] = load("return " .. i) end`,
		`local s = "" for i = 1, 1e6 do s = s .. tostring(i) end`,
		`local t = {string.rep("x", 1e6):byte(1, 60000)} return #t`,
		`local t = {} for i = 1, 1e6 do t[i] = select(2, pcall(error, ("e"):rep(1000))) end`,
		`local t = {} for i = 1, 1e6 do t[i] = ("x"):rep(100):upper() .. i end`,
		// Recursion.
		`local function f() return f() end return f()`,
		`local function f() return 1 + f() end return f()`,
		`local function f(...) return f(1, ...) end return f()`,
		`local function f(...) return f(..., ...) end return f(1)`,
		`local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x`,
		`local t = setmetatable({}, {}) getmetatable(t).__index = t return t.x`,
		`local a, b = {}, {} setmetatable(a, {__index = b}) setmetatable(b, {__index = a}) return a.x`,
		`local a = {} setmetatable(a, {__newindex = a}) a.x = 1`,
		`local t = setmetatable({}, {__call = function(self, ...) return self(...) end}) return t()`,
		`local t = setmetatable({}, {__concat = function(a, b) return a .. b end}) return t .. "x"`,
		`local t = setmetatable({}, {__eq = function(a, b) return a == b end}) local u = setmetatable({}, getmetatable(t)) return t == u`,
		`local m = {} m.__lt = function(a, b) return a < b end m.__le = function(a, b) return a <= b end local a, b = setmetatable({}, m), setmetatable({}, m) return a < b, a <= b`,
		`local m = {__unm = function(a) return -a end, __len = function(a) return #a end} local a = setmetatable({}, m) return -a, #a`,
		`local m = {__tostring = function(a) return tostring(a) end} return tostring(setmetatable({}, m))`,
		`local m = {__gc = function() while true do end end} setmetatable({}, m) return 1`,
		`local m = {__tostring = function() error(setmetatable({}, {__tostring = function() error("again") end})) end} error(setmetatable({}, m))`,
		`local m = {} m.__tostring = function(e) return e end error(setmetatable({}, m))`,
		`error(setmetatable({}, {__tostring = function() return 42 end}))`,
		`error(setmetatable({}, {__index = function() error("x") end}))`,
		`local function f(n) if n == 0 then error({}) end return pcall(f, n - 1) end return f(1e6)`,
		`local function f() return xpcall(f, f) end return f()`,
		`local function h(e) return h(e) end return xpcall(error, h)`,
		`return xpcall(function() local function r() return 1 + r() end return r() end, function(e) return debug and debug.traceback(e) or e end)`,
		`local function f(n) return coroutine.wrap(function() return pcall(f, n + 1) end)() end return f(1)`,
		`local function f() local co = coroutine.create(f) return coroutine.resume(co) end return f()`,
		`local co = coroutine.create(function() return pcall(function() coroutine.yield(1) error("after") end) end) return coroutine.resume(co), coroutine.resume(co), coroutine.resume(co)`,
		`local co co = coroutine.create(function() return coroutine.resume(co) end) return coroutine.resume(co)`,
		`local a, b a = coroutine.create(function() return coroutine.resume(b) end) b = coroutine.create(function() return coroutine.resume(a) end) return coroutine.resume(a)`,
		`local co = coroutine.wrap(function() while true do coroutine.yield(pcall(coroutine.yield)) end end) for i = 1, 1e6 do co() end`,
		`return coroutine.yield()`,
		`return pcall(coroutine.yield, 1)`,
		`local t = {} for i = 1, 190 do t[i] = pcall end return pcall(unpack(t))`,
		`return pcall(pcall, pcall, pcall, error, {})`,
		`return error()`,
		`return error(nil)`,
		`error("x", 1e9)`,
		`error("x", -1)`,
		`return select(-1)`,
		`return select(0, 1)`,
		`return select(2^31, 1)`,
		`return tostring(nil) .. tostring(print)`,
		`return setmetatable({}, {__metatable = 1}), getmetatable("").__index`,
		`getmetatable("").__index = function(s, k) return s[k] end return ("x").y`,
		`getmetatable("").__index = nil return ("x"):upper()`,
		`rawset(_G, "x", nil) rawequal() return rawget(_G)`,
		`return next({}, "nope")`,
		`local t = {1, 2, 3} for k in pairs(t) do t[k] = nil t[k + 10] = 1 end`,
		`return ipairs(nil)`,
		`return table.sort({3, 2, 1}, function(a, b) return true end)`,
		`local t = {} for i = 1, 1e5 do t[i] = i end table.sort(t, function(a, b) error("x") end)`,
		`local t = {} for i = 1, 100 do t[i] = i end table.sort(t, function(a, b) t[a] = nil return a > b end)`,
		`return table.insert({}, 2^53, 1), table.insert({}, -1, 1), table.remove({}, 1e9)`,
		`return table.concat({1, {}, 3})`,
		`return table.maxn({[1e308] = 1, [-1] = 2})`,
		`return unpack({1, 2}, -2^31, 2^31)`,
		`return unpack({}, 1e9, 1e9 + 1e5)`,
		`return unpack({1}, 2^53, 2^53 + 2)`,
		// Numbers.
		`return 0/0, -(0/0), math.huge, -math.huge, -0, tostring(-0), 1/0 - 1/0`,
		`return 2^63, -2^63, 2^64, 2^1024, math.floor(2^62) % 7, 5 % 0, 5 % -0, -5 % math.huge`,
		`return string.format("%d %i %x %X %o %c %u", 2^63, -2^63, 2^64, 0/0, math.huge, 1e300, -1)`,
		`return string.format("%5.2s|%-5d|%+d|% d|%#x|%05.1f|%e|%g|%G|%a", "abc", 3, 4, 5, 255, 1.25, 1e300, 0/0, -math.huge, 1)`,
		`return string.format("%99d%99.99f", 1, 1), string.format("%100d", 1)`,
		`return string.format("%q", "\0\1\n\r\"\\" .. string.char(255)), string.format("%q", 1/0)`,
		`return string.format("%", 1), string.format("%z", 1), string.format("%d"), string.format("%s", setmetatable({}, {__tostring = function() return {} end}))`,
		`return string.format("%.99f", 2^1023), string.format("%099.99e", -2^-1074)`,
		`return math.fmod(1, 0), math.fmod(-2^63, -1), math.mod and math.mod(1, 0), math.ldexp(1, 2^31), math.frexp(0/0)`,
		`return math.random(2^53), math.random(-2^31, 2^31), math.random(0), math.random(3, 1), math.randomseed(0/0)`,
		`return math.max(), math.min(0/0, 1), math.floor(-0), math.ceil(2^1024), math.abs(-2^63), math.pow(-8, 1/3)`,
		`return tonumber("0x"), tonumber("0x1p4"), tonumber("1e400"), tonumber("  0x7fffffffffffffff  "), tonumber("z", 36), tonumber("10", 1), tonumber("10", 37), tonumber("1", 2^31)`,
		`return tonumber(("9"):rep(1e5)), tonumber("-" .. ("0"):rep(1e5) .. "1", 16)`,
		`for i = 1, 0/0 do end for i = math.huge, 1, -math.huge do end for i = 1, 2, 0 do break end for i = 2^53, 2^53 + 2 do end`,
		`local x = 0 for i = -2^63, -2^63 + 3 do x = x + 1 end return x`,
		`return ("x"):rep(-1), ("x"):rep(0/0), ("x"):rep(2^63), ("x"):rep(1.5)`,
		`return ("abc"):sub(2^63, -2^63), ("abc"):sub(0/0), ("abc"):byte(-2^31, 2^31), string.char(256), string.char(-1), string.char(0/0)`,
		`return #string.char(unpack((function() local t = {} for i = 1, 60000 do t[i] = i % 256 end return t end)()))`,
		// Patterns.
		`return string.find(("a"):rep(40), ("a*"):rep(40) .. "b")`,
		`return ("("):rep(1e6):match("%b()")`,
		`return string.find("", ("("):rep(1e5))`,
		`return string.find("x", "(()"), string.find("x", "%"), string.find("x", "[a"), string.find("x", "[%"), string.find("x", "(%1)"), string.find("x", "%f[%w]"), string.find("x", "%bx")`,
		`return string.find("abc", "b", -2^31), string.find("abc", "", 2^31), string.find("abc", "", 4), string.find("", "", 0)`,
		`return ("x"):gsub("", "%0%0"), ("x"):gsub("x", "%9"), ("x"):gsub("x", "%"), ("x"):gsub("(x)", {x = {}}), ("x"):gsub("x", function() return {} end)`,
		`return ("abc"):gsub("%w", "%1", -1), ("abc"):gsub(".", "x", 0/0), ("abc"):gsub(".", "x", 2^63)`,
		`for a, b, c in ("a=b, c=d"):gmatch("((%w+)=(%w+))") do end for x in (""):gmatch("") do end`,
		`local it = ("x"):rep(1e6):gmatch(".-") for i = 1, 1e7 do it() end`,
		`return string.match(("x"):rep(1e6), (".-"):rep(30) .. "y")`,
		`return string.find(("a"):rep(1e6), "a-a-a-a-a-a-a-b")`,
		`return string.rep("[", 1e5):find("[[]")`,
		`return string.find("x", string.rep("%", 1e5))`,
		`return string.find(("x"):rep(1e5), ("[^y]"):rep(1e4))`,
		`return ("x"):gsub(".", setmetatable({}, {__index = function(t, k) return ("y"):rep(1e6) end}))`,
		// load and the parser.
		`return load(("("):rep(1e5) .. "1" .. (")"):rep(1e5))`,
		`return load("return " .. ("{"):rep(1e5) .. ("}"):rep(1e5))`,
		`return load("return " .. ("-"):rep(1e5) .. "1")`,
		`return load("return " .. ("not "):rep(1e5) .. "1")`,
		`return load("return a" .. (".b"):rep(1e5))`,
		`return load("return a" .. ("[1]"):rep(1e5))`,
		`return load("return f" .. ("()"):rep(1e5))`,
		`return load("return 1" .. (" .. 1"):rep(1e5))`,
		`return load("return 1" .. (" + 1"):rep(1e5))`,
		`return load(("do "):rep(1e5) .. ("end "):rep(1e5))`,
		`return load(("if x then "):rep(1e4) .. ("end "):rep(1e4))`,
		`return load("if x then" .. (" elseif x then"):rep(1e5) .. " end")`,
		`return load(("function f() "):rep(1e4) .. ("end "):rep(1e4))`,
		`return load("local " .. ("a, "):rep(300) .. "a = 1")`,
		`return load("return " .. ("1, "):rep(1e5) .. "1")`,
		`return load("return {" .. ("1, "):rep(1e5) .. "}")`,
		`return load("local t = {" .. ("x = 1, "):rep(1e5) .. "}")`,
		`local n = 0 return load(function() n = n + 1 if n < 1e6 then return "(" end end)`,
		`return load(function() return ("x"):rep(1e6) end)`,
		`return load(function() return {} end)`,
		`return load(function() error("in reader") end)`,
		`return load(function() coroutine.yield() end)`,
		`return load("\27Lua")`,
		`return loadstring("goto x ::x::")`,
		`return load("::a:: ::a:: goto a")`,
		`return load("return ...")(1, 2, 3)`,
		`return load("return [==[" .. ("]"):rep(1e5) .. "]==]")`,
		`return load("--[==[" .. ("x"):rep(1e5))`,
		`return load("return '" .. ("\\"):rep(1e5) .. "'")`,
		`return load("return '\\999\\xff\\z\\u{110000}'")`,
		`return load("return 0x" .. ("f"):rep(1e4) .. ", 1e" .. ("9"):rep(1e4))`,
		`return load(string.rep("a=1;", 1e5))`,
		`return load(string.char(0, 255, 128, 10, 13))`,
		deep("(", "1", ")", 12000),
		"return " + deep("{", "", "}", 12000),
		"return " + strings.Repeat("-(", 12000) + "1" + strings.Repeat(")", 12000),
		"return a" + strings.Repeat(".b", 12000),
		"return " + strings.Repeat("not ", 12000) + "1",
		"return " + strings.Repeat("#", 12000) + "x",
		"x = " + strings.Repeat("1 .. ", 50000) + "1",
		strings.Repeat("do ", 20000) + strings.Repeat("end ", 20000),
		strings.Repeat("local function f() ", 5000) + strings.Repeat("end ", 5000),
		"return {" + strings.Repeat("{1, 2, x = {}}, ", 20000) + "}",
		"local x = 1 " + strings.Repeat("x = x + 1 ", 50000) + "return x",
		// The host: JSON, the result's encoding, the module's functions.
		`local t = {} t[1] = t return t`,
		`local t = {} t.x = t return nil, t`,
		`local t = {1} for i = 1, 40 do t = {t, t} end return t`,
		`return setmetatable({}, {__index = function() error("x") end, __pairs = function() error("y") end})`,
		`return {content = {{type = "text", text = setmetatable({}, {__tostring = function() return "x" end})}}}`,
		`return "ok", {x = coroutine.create(print), y = print}`,
		`local json = require("json") return json.encode(setmetatable({}, {__index = function(t, k) return t end}))`,
		`local json = require("json") return json.decode(("["):rep(1e5))`,
		`local json = require("json") return json.decode('{"a":' .. ("1"):rep(1e5) .. '}'), json.decode("1e400"), json.decode('"\\ud800"')`,
		`local mcp = require("mcp") return mcp.array(mcp.array(mcp.object({})))`,
		`local mcp = require("mcp") mcp.sleep(1e9)`,
		`local mcp = require("mcp") return mcp.json_encode(0/0), mcp.json_encode({[1.5] = 1}), mcp.json_encode({[true] = 1})`,
		`require("base64").decode(("A"):rep(1e7))`,
		`return require("time").format(1e300, ("2006"):rep(1e5)), require("time").parse(("x"):rep(1e5), "2006")`,
		`return require("crypto").hmac_sha256(("k"):rep(1e6), ("x"):rep(1e6)), require("crypto").random_bytes(2^31)`,
		`return require(("a."):rep(1e4) .. "b")`,
		`return require("")`,
		`package.loaded.json = nil return require("json")`,
		`_G = nil string = nil return ("x"):upper()`,
		`print(("x"):rep(1e6), unpack({}, 1, 60000))`,
		`print(setmetatable({}, {__tostring = function() return ("x"):rep(1e7) end}))`,
		`return os.time({year = 2^53, month = -2^31, day = 0/0}), os.time({}), os.date("*t", 2^60), os.date("!%c", -2^60), os.date("%Ez%Q%")`,
		`return os.clock(), os.time() + 0`,
	}
}
