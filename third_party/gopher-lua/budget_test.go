package lua

// Patched for luamcp: tests of budget.go.

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/yuin/gopher-lua/pm"
)

const testLimit = 16 << 20

func budgetState(t *testing.T, limit int64) *LState {
	t.Helper()
	L := NewState(Options{RegistrySize: 256, RegistryMaxSize: 64 << 10, RegistryGrowStep: 2048, CallStackSize: 200, MinimizeStackMemory: true})
	t.Cleanup(L.Close)
	L.SetMemoryLimit(limit)
	return L
}

// totalAlloc returns the bytes the process has allocated so far.
func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// Each attack fails with "memory limit exceeded" without allocating much more
// than the budget, and the state stays usable.
func TestBudgetRefusesAttacks(t *testing.T) {
	attacks := []struct{ name, src string }{
		{"concat doubling", `local s = string.rep("z", 8*1024*1024-1) for i = 1, 5 do s = s .. s end`},
		{"concat many", `local t = {} for i = 1, 1e6 do t[i] = ("x"):rep(100) .. i end`},
		{"rep", `return string.rep("x", 2^40)`},
		{"rep pieces", `local t = {} for i = 1, 1e4 do t[i] = string.rep("y", 1e4) .. i end`},
		{"sparse index", `local t = {} t[67108863] = 1`},
		{"array growth", `local t = {} for i = 1, 1e8 do t[i] = i end`},
		{"hash growth", `local t = {} for i = 1, 1e8 do t["k" .. i] = true end`},
		{"tables", `local t = {} for i = 1, 1e8 do t[i] = {} end`},
		{"nested tables", `local t = {} for i = 1, 1e8 do t = {t, t} end`},
		{"closures", `local t = {} for i = 1, 1e8 do t[i] = function() return i end end`},
		{"coroutines", `local t = {} for i = 1, 1e8 do t[i] = coroutine.create(function() end) end`},
		{"coroutine stacks", `
			local t = {}
			local big = {} for i = 1, 30000 do big[i] = i end
			for i = 1, 1e6 do
				t[i] = coroutine.create(function() coroutine.yield(unpack(big)) end)
				coroutine.resume(t[i])
			end`},
		{"table.insert", `local t = {} for i = 1, 1e8 do table.insert(t, i) end`},
		{"table.concat", `local t = {} for i = 1, 100 do t[i] = string.rep("x", 1e6) end return table.concat(t)`},
		{"gsub", `return (string.rep("x", 4096):gsub(".", string.rep("y", 65536)))`},
		{"format", `return string.format("%s%s%s", string.rep("x", 6e6), string.rep("x", 6e6), string.rep("x", 6e6))`},
		{"upper", `local s = string.rep("x", 6e6) local t = {} for i = 1, 10 do t[i] = s:upper() end`},
		{"reverse", `local s = string.rep("x", 6e6) local t = {} for i = 1, 10 do t[i] = s:reverse() end`},
		{"os.date", `return os.date(string.rep("%c", 3e6))`},
		{"varargs in table", `local t = {} for i = 1, 1e8 do t[i] = {1, 2, 3, 4, 5, 6, 7, 8} end`},
		{"rawset", `local t = {} for i = 1, 1e8 do rawset(t, i, i) end`},
		{"pattern backtracking", `return string.find(string.rep("a", 1e7), ".*b")`},
		{"prefixes met first", `
			keep = {}
			for i = 1, 128 do
				local big = string.rep("x", 1024 * 1024) .. i
				keep[#keep + 1] = big:sub(1, 256)
				keep[#keep + 1] = big
			end`},
		{"gmatch subjects", `keep = {} for i = 1, 128 do keep[i] = string.gmatch(string.rep("x", 1024 * 1024) .. i, "x") end`},
		{"gmatch patterns", `keep = {} for i = 1, 200 do keep[i] = string.gmatch("", string.rep("a", 1e4) .. i) end`},
	}
	for _, tt := range attacks {
		t.Run(tt.name, func(t *testing.T) {
			L := budgetState(t, testLimit)
			before := totalAlloc()
			err := L.DoString(tt.src)
			if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
				t.Fatalf("want memory limit exceeded, got %v", err)
			}
			// Garbage is allowed (each refused attempt measured first), one
			// huge allocation is not.
			if got := totalAlloc() - before; got > 40*testLimit {
				t.Errorf("allocated %d MiB under a %d MiB budget", got>>20, testLimit>>20)
			}
			if err := L.DoString(`local t = {} for i = 1, 100 do t[i] = ("x"):rep(100) end`); err != nil {
				t.Errorf("the state no longer works: %v", err)
			}
		})
	}
}

// Small allocations caught one by one cannot creep past the limit by the
// slack again and again.
func TestBudgetSlackDoesNotCreep(t *testing.T) {
	L := budgetState(t, testLimit)
	err := L.DoString(`
		kept = {}
		local function add(i) kept[#kept + 1] = string.rep("x", 1e5) .. i end
		for i = 1, 1e4 do pcall(add, i) end`)
	if err != nil {
		t.Fatal(err)
	}
	if got := L.MemoryUsage(); got > testLimit+testLimit/8+1<<20 {
		t.Errorf("the state holds %d MiB under a %d MiB budget", got>>20, testLimit>>20)
	}
}

// Garbage, shared strings and data within the budget never count against it.
func TestBudgetAllowsLegitWork(t *testing.T) {
	for _, src := range []string{
		`for i = 1, 200 do local s = string.rep("x", 1e6) .. i end`,
		`local s = string.rep("x", 1e6) local t = {} for i = 1, 10000 do t[i] = s end`,
		`local s = "" for i = 1, 3000 do s = s .. "0123456789" end assert(#s == 30000)`,
		`local t = {} for i = 1, 1e4 do t[i] = {id = i, name = "n" .. i} end`,
		`local t = {} for i = 1, 1e5 do t[i] = i end table.sort(t, function(a, b) return a > b end)`,
		`local s = string.rep("a", 3e5) assert(s:find("a*$")) assert(#s:gsub("a", "b") == 3e5)`,
		`for _, n in ipairs({1, 2, 3, 7, 1000, 65537, 100003}) do
			for _, p in ipairs({"a", "ab", "abc", "abcdefg"}) do
				local s = p:rep(n)
				local rest, count = s:gsub(p, "")
				assert(#s == #p * n and rest == "" and count == n)
			end
		end`,
		`local n = 0 for w in string.rep("ab ", 1e5):gmatch("%a+") do n = n + 1 end assert(n == 1e5)`,
		`local n = 0 for w in ("one two"):gfind("%a+") do n = n + 1 end assert(n == 2)`,
	} {
		L := budgetState(t, testLimit)
		if err := L.DoString(src); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// The measure follows what the state holds, within a factor of two of the
// heap it takes.
func TestBudgetMeasure(t *testing.T) {
	for _, src := range []string{
		`big = {} for i = 1, 1e5 do big[i] = i + 0.5 end`,
		`big = {} for i = 1, 2e4 do big[i] = {a = i, b = "x" .. i} end`,
		`big = {} for i = 1, 2e4 do big["k" .. i] = {} end`,
		`big = {} for i = 1, 1e3 do big[i] = string.rep("x", 1000) .. i end`,
		`big = {} for i = 1, 2e4 do local x = i big[i] = function() return x end end`,
	} {
		L := budgetState(t, 0)
		base := L.MemoryUsage()
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.GC() // objects with finalizers (earlier tests' states) go in the second cycle
		runtime.ReadMemStats(&m0)
		if err := L.DoString(src); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		heap := float64(m1.HeapAlloc) - float64(m0.HeapAlloc)
		got := float64(L.MemoryUsage() - base)
		if got < heap/2 || got > heap*2 {
			t.Errorf("%s: measured %.0f KiB, the heap grew by %.0f KiB", src, got/1024, heap/1024)
		}
	}
}

// TestBudgetMemoryRoot: a value the host keeps outside Lua counts in the
// measure once it is the state's memory root (patched for luamcp), and no
// longer once forgotten or once a baseline Reset the state.
func TestBudgetMemoryRoot(t *testing.T) {
	L := budgetState(t, 0)
	if err := L.DoString(`function build() local t = {} for i = 1, 1e3 do t[i] = string.rep("x", 1000) .. i end return t end`); err != nil {
		t.Fatal(err)
	}
	base := L.NewBaseline()
	empty := L.MemoryUsage()
	if err := L.CallByParam(P{Fn: L.GetGlobal("build"), NRet: 1}); err != nil {
		t.Fatal(err)
	}
	kept := L.Get(-1)
	L.Pop(1) // only Go holds it now
	if got := L.MemoryUsage(); got-empty > 100<<10 {
		t.Fatalf("a value only Go holds measured %d bytes", got-empty)
	}
	L.SetMemoryRoot(kept)
	if got := L.MemoryUsage(); got-empty < 1e6 {
		t.Errorf("the memory root measured %d bytes, want 1 MB and more", got-empty)
	}
	L.SetMemoryRoot(LNil)
	if got := L.MemoryUsage(); got-empty > 100<<10 {
		t.Errorf("a forgotten memory root measured %d bytes", got-empty)
	}
	L.SetMemoryRoot(kept)
	base.Reset(L)
	if got := L.MemoryUsage(); got-empty > 100<<10 {
		t.Errorf("after Reset the memory root measured %d bytes", got-empty)
	}
}

// Pattern matching, sorting and the other library loops stop when the
// state's context is cancelled.
func TestLibraryLoopsHonourCancellation(t *testing.T) {
	for _, src := range []string{
		`return string.find(string.rep("a", 40), string.rep("a*", 40) .. "b")`,
		`return string.match(string.rep("(", 1e6), "%b()")`,
		`return string.find(string.rep("a", 1e6), ".-b")`,
		`return string.gsub(string.rep("a", 40), string.rep("a*", 40) .. "b", "")`,
		`for w in string.gmatch(string.rep("a", 40), string.rep("a*", 40) .. "b") do end`,
		`local t = {} for i = 1, 3e5 do t[i] = {} end table.sort(t, function(a, b) return false end)`,
		`return string.match("", string.rep("a", 4e6))`, // compiling the pattern (patched for luamcp: find searches a pattern without specials as text, as Lua 5.1)
	} {
		L := budgetState(t, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		L.SetContext(ctx)
		start := time.Now()
		err := L.DoString(src)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
			t.Errorf("%s: want the context's error, got %v", src, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: stopped after %v", src, d)
		}
	}
}

// The pattern matcher backtracks on the heap, within the budget, instead of
// the Go stack.
func TestPatternBacktrackingIsCharged(t *testing.T) {
	L := budgetState(t, testLimit)
	if err := L.DoString(`assert(string.find(string.rep("a", 1e5), "^a*$"))`); err != nil {
		t.Fatal(err)
	}
	L = budgetState(t, 1<<20)
	err := L.DoString(`local s = string.rep("a", 1e5) return string.find(s, "^a*$")`)
	if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Fatalf("want memory limit exceeded, got %v", err)
	}
}

// Go code outside a call is never interrupted by the budget: it counts.
func TestBudgetOutsideCalls(t *testing.T) {
	L := budgetState(t, 1<<20)
	tb := L.CreateTable(0, 0)
	for i := 1; i <= 1e5; i++ {
		L.RawSetInt(tb, i, LNumber(i))
		L.SetField(tb, "x", LTrue)
	}
	if err := L.ReserveMemory(2 << 20); err != ErrMemoryLimit {
		t.Errorf("ReserveMemory past the limit: %v", err)
	}
	if err := L.ReserveMemory(1 << 10); err != nil {
		t.Errorf("ReserveMemory within the limit: %v", err)
	}
	if L.MemoryLimit() != 1<<20 {
		t.Errorf("MemoryLimit() = %d", L.MemoryLimit())
	}
	L.SetMemoryLimit(0)
	if L.MemoryLimit() != 0 {
		t.Errorf("MemoryLimit() = %d after removing it", L.MemoryLimit())
	}
}

// sizePatternByte bounds what compiling a pattern allocates per byte of it,
// whatever the pattern's items and length.
func TestPatternCompileCost(t *testing.T) {
	worst := 0
	for _, unit := range []string{"a", "%a", "a*", ".-", "a+", "[a-z]", "[^%s,]*", "%b()", "(a)", "()", "%1"} {
		for _, n := range []int{1e3, 1e4, 1e5} {
			p := strings.Repeat(unit, n/len(unit))
			if strings.Contains(unit, "(") && unit != "%b()" {
				p = unit + strings.Repeat("a", n) // at most 32 captures
			} else if unit == "%1" {
				p = "(a)" + p
			}
			runtime.GC()
			before := totalAlloc()
			if _, err := pm.Compile(nil, p); err != nil {
				t.Fatalf("%q: %v", unit, err)
			}
			per := int(totalAlloc()-before) / len(p)
			worst = max(worst, per)
			if per > sizePatternByte {
				t.Errorf("compiling %d bytes of %q: %d bytes per byte, sizePatternByte is %d", len(p), unit, per, sizePatternByte)
			}
		}
	}
	t.Logf("worst: %d bytes per byte (sizePatternByte %d)", worst, sizePatternByte)
}

// A pattern is charged before it is compiled: a long one fails with the
// memory error instead of taking gigabytes, and ordinary ones still work.
func TestPatternCompileIsCharged(t *testing.T) {
	L := budgetState(t, testLimit)
	if err := L.DoString(`p = string.rep("a", 4e6)`); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before := totalAlloc()
	err := L.DoString(`return string.match("", p)`) // patched for luamcp: find searches a pattern without specials as text
	if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
		t.Errorf("want memory limit exceeded, got %v", err)
	}
	if got := totalAlloc() - before; got > testLimit {
		t.Errorf("allocated %d MiB under a %d MiB budget", got>>20, testLimit>>20)
	}
	if err := L.DoString(`
		assert(select(3, ("key=value"):find("(%w+)=(%w+)")) == "key")
		local n = 0 for w in ("one two three"):gmatch("%a+") do n = n + 1 end assert(n == 3)
		assert(select(2, string.rep("ab", 1e4):gsub(string.rep("ab", 1e3), "")) == 10)`); err != nil {
		t.Fatal(err)
	}
}

// The measure counts the bytes of strings that share them once, at the
// longest length seen from each start, whichever it meets first.
func TestMeasureCountsSharedBytes(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name   string
		values []string
		want   int // bytes of string data the measure should count
	}{
		{"one", []string{big}, len(big)},
		{"copies", []string{big, big, big}, len(big)},
		{"prefix first", []string{big[:256], big}, len(big)},
		{"prefix last", []string{big, big[:256]}, len(big)},
		{"growing prefixes", []string{big[:256], big[:1024], big[:4096]}, 4096},
		// A string starting further in is counted whole: an over-count.
		{"suffix", []string{big, big[1:]}, 2*len(big) - 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := budgetState(t, 0)
			base := L.MemoryUsage()
			tb := L.CreateTable(len(c.values), 0)
			for _, v := range c.values {
				tb.Append(LString(v))
			}
			L.SetGlobal("t", tb)
			got := int(L.MemoryUsage() - base)
			if got < c.want || got > c.want+1024 {
				t.Errorf("measured %d bytes, want %d and a table", got, c.want)
			}
		})
	}
}

// A substring a library returns keeps none of its source's bytes alive (a Go
// substring would keep them all, unseen by the measure): a script keeping
// two bytes of each of many large strings keeps a few bytes each.
func TestSubstringsOwnTheirBytes(t *testing.T) {
	const big = `local big = string.rep("x", 1024 * 1024) .. i `
	for _, c := range []struct{ name, keep string }{
		{"sub", `keep[i] = big:sub(1, 2)`},
		{"sub of one byte", `keep[i] = big:sub(2, 2)`},
		{"sub from the end", `keep[i] = big:sub(-2)`},
		{"find capture", `keep[i] = select(3, big:find("^(xx)"))`},
		{"match", `keep[i] = big:match("^xx")`},
		{"match capture", `keep[i] = big:match("^(xx)")`},
		{"gmatch", `keep[i] = big:gmatch("xx")()`},
		{"gmatch capture", `keep[i] = big:gmatch("(xx)")()`},
		{"gsub function", `big:gsub("^xx", function(s) keep[i] = s end)`},
		{"gsub table", `big:gsub("^(xx)", setmetatable({}, {__index = function(_, s) keep[i] = s end}))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := budgetState(t, testLimit)
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			if err := L.DoString(`keep = {} for i = 1, 64 do ` + big + c.keep + ` end
				assert(#keep == 64 and #keep[1] <= 2)`); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			if grew := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); grew > 8<<20 {
				t.Errorf("the heap holds %d MiB more for 64 strings of two bytes", grew>>20)
			}
			runtime.KeepAlive(L)
		})
	}
}

// A chunk's name is kept by its prototypes: a long one counts, once. A
// script names chunks with strings of its own (and loadstring's default name
// is the chunk's text): 64 chunks named by strings of 1 MiB held 64 MiB under
// a 16 MiB budget.
func TestChunkNamesAreCounted(t *testing.T) {
	const big = `string.rep("x", 1024 * 1024) .. i`
	for _, c := range []struct{ name, keep string }{
		{"loadstring name", `keep[i] = loadstring("return function() end", ` + big + `)`},
		{"loadstring text", `keep[i] = loadstring("return 1 --" .. ` + big + `)`},
		{"load name", `local done keep[i] = load(function() if not done then done = true return "return 1" end end, ` + big + `)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := budgetState(t, testLimit)
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			err := L.DoString(`keep = {} for i = 1, 64 do ` + c.keep + ` end`)
			if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
				t.Errorf("64 chunks named by strings of 1 MiB under a 16 MiB budget: %v", err)
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			if grew := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); grew > 32<<20 {
				t.Errorf("the heap holds %d MiB more", grew>>20)
			}
			runtime.KeepAlive(L)
		})
	}
	// A host's name: the same string for every prototype, counted once.
	L := budgetState(t, 0)
	name := strings.Repeat("n", 1<<20)
	fn, err := L.Load(strings.NewReader("return function() return function() end end"), name)
	if err != nil {
		t.Fatal(err)
	}
	L.SetGlobal("f", fn)
	if n := L.MemoryUsage(); n < 1<<20 || n > 2<<20 {
		t.Errorf("a chunk named by 1 MiB measures %d bytes", n)
	}
}
