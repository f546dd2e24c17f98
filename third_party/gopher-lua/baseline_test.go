package lua

import "testing"

// baselineState opens the libraries a recycling host opens (no io, debug or
// channel: see baseline.go) and runs chunk on a new state.
func baselineState(t testing.TB, chunk string) *LState {
	t.Helper()
	L := NewState(Options{SkipOpenLibs: true})
	for _, open := range []LGFunction{OpenBase, OpenPackage, OpenTable, OpenString, OpenMath, OpenCoroutine} {
		L.Push(L.NewFunction(open))
		L.Call(0, 0)
	}
	if err := L.DoString(chunk); err != nil {
		t.Fatal(err)
	}
	return L
}

const baselineChunk = `
local count = 0
local cache = {}
M = {cache = cache, list = {3, 1, 2}}
function M.bump() count = count + 1 end
function M.nested() return function() count = 1 end end
function M.put(k) cache[k] = true end
function M.read() return count, cache.x, #M.list end
`

// Every way Lua code can leave a mark on what the chunk built makes the state
// not pristine; work on values of its own does not.
func TestBaselinePristine(t *testing.T) {
	cases := []struct {
		name     string
		code     string
		pristine bool
	}{
		{"reads", `local a, b, c = M.read(); local s = ("x"):upper(); for k, v in pairs(M) do end`, true},
		{"own tables and closures", `local t = {}; t.x = 1; setmetatable(t, {}); local y = 0; local f = function() y = y + 1 end; f()`, true},
		{"own coroutine", `local co = coroutine.create(function() coroutine.yield(1) end); coroutine.resume(co)`, true},
		{"global", `x = 1`, false},
		{"global set to its value", `M = M`, false},
		{"library field", `string.x = 1`, false},
		{"string metatable", `getmetatable("").__index = {}`, false},
		{"table held by an upvalue", `M.put("y")`, false},
		{"upvalue", `M.bump()`, false},
		{"upvalue from a nested closure", `M.nested()()`, false},
		{"upvalue from a coroutine", `coroutine.wrap(function() M.bump() end)()`, false},
		{"rawset", `rawset(M, "k", 1)`, false},
		{"table.insert", `table.insert(M.list, 4)`, false},
		{"table.remove", `table.remove(M.list)`, false},
		{"table.sort", `table.sort(M.list)`, false},
		{"setmetatable", `setmetatable(M, {})`, false},
		{"package.loaded", `package.loaded.x = {}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			L := baselineState(t, baselineChunk)
			defer L.Close()
			b := L.NewBaseline()
			if err := b.Pristine(L); err != nil {
				t.Fatalf("right after the baseline: %v", err)
			}
			if err := L.DoString(c.code); err != nil {
				t.Fatal(err)
			}
			err := b.Pristine(L)
			if (err == nil) != c.pristine {
				t.Fatalf("Pristine() = %v, want pristine %v", err, c.pristine)
			}
		})
	}
}

// Clearing Written and Dirty (the other observers' flags) hides nothing from
// a baseline.
func TestBaselineOtherFlags(t *testing.T) {
	L := baselineState(t, baselineChunk)
	defer L.Close()
	b := L.NewBaseline()
	M := L.GetGlobal("M").(*LTable)
	M.RawSetString("x", LTrue)
	M.ClearWritten()
	M.ClearDirty()
	if b.Pristine(L) == nil {
		t.Fatal("a write hidden by ClearWritten and ClearDirty went unseen")
	}
}

// The Go API's upvalue writes are seen too.
func TestBaselineSetUpvalue(t *testing.T) {
	L := baselineState(t, baselineChunk)
	defer L.Close()
	b := L.NewBaseline()
	fn := L.GetGlobal("M").(*LTable).RawGetString("bump").(*LFunction)
	if name := L.SetUpvalue(fn, 1, LNumber(5)); name != "count" {
		t.Fatalf("SetUpvalue set %q", name)
	}
	if err := b.Pristine(L); err != errBaselineUpvalue {
		t.Fatalf("Pristine() = %v, want %v", err, errBaselineUpvalue)
	}
}

// A state holding a coroutine, or a Go closure over a table, never is.
func TestBaselineRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(L *LState)
		want  error
	}{
		{"coroutine", func(L *LState) {
			if err := L.DoString(`CO = coroutine.create(function() end)`); err != nil {
				t.Fatal(err)
			}
		}, errBaselineThread},
		{"coroutine.wrap", func(L *LState) {
			if err := L.DoString(`W = coroutine.wrap(function() end)`); err != nil {
				t.Fatal(err)
			}
		}, errBaselineThread},
		{"Go closure over a table", func(L *LState) {
			L.SetGlobal("g", L.NewClosure(func(*LState) int { return 0 }, L.NewTable()))
		}, errBaselineGoUpval},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := baselineState(t, baselineChunk)
			defer L.Close()
			c.setup(L)
			if err := L.NewBaseline().Pristine(L); err != c.want {
				t.Fatalf("Pristine() = %v, want %v", err, c.want)
			}
		})
	}
}

// Host roots are recorded: a table only the host holds is watched too.
func TestBaselineRoots(t *testing.T) {
	L := baselineState(t, baselineChunk)
	defer L.Close()
	held := L.NewTable()
	b := L.NewBaseline(held)
	held.RawSetString("x", LTrue)
	if b.Pristine(L) == nil {
		t.Fatal("a write to a host root went unseen")
	}
}

// Reset empties the stack, shrinks a grown value stack and puts the budget's
// count back.
func TestBaselineReset(t *testing.T) {
	L := baselineState(t, baselineChunk)
	defer L.Close()
	b := L.NewBaseline()
	used := L.G.budget.used
	if err := L.DoString(`local t = {} for i = 1, 1000 do t[i] = {i} end
local function deep(n) if n > 0 then return 1 + deep(n - 1) end return 0 end
deep(150)`); err != nil {
		t.Fatal(err)
	}
	L.Push(LTrue)
	if L.G.budget.used <= used {
		t.Fatal("the work charged nothing")
	}
	if err := b.Pristine(L); err != nil {
		t.Fatal(err)
	}
	b.Reset(L)
	if L.GetTop() != 0 || cap(L.reg.array) != b.regCap || L.G.budget.used != used || L.MemoryAccounted() != used {
		t.Fatalf("after Reset: top %d, stack %d (want %d), used %d (want %d)", L.GetTop(), cap(L.reg.array), b.regCap, L.G.budget.used, used)
	}
	if err := L.DoString(`M.read()`); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkBaseline is the record of a state with the standard libraries.
func BenchmarkBaseline(b *testing.B) {
	L := baselineState(b, baselineChunk)
	defer L.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		L.NewBaseline()
	}
}

// BenchmarkBaselinePristine is the check of such a state.
func BenchmarkBaselinePristine(b *testing.B) {
	L := baselineState(b, baselineChunk)
	defer L.Close()
	bl := L.NewBaseline()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if bl.Pristine(L) != nil {
			b.Fatal("not pristine")
		}
	}
}

// A gmatch iterator keeps its position where no write to a table or an
// upvalue shows it: a state holding one is never pristine, so that no client
// of a recycled state goes on with an iteration a former client began.
// Iterators keeping their state in Lua values (ipairs, pairs) do not count.
func TestBaselineIterators(t *testing.T) {
	for _, c := range []struct {
		name, chunk string
		want        error
	}{
		{"gmatch in a global", `W = string.gmatch("first second", "%a+") function nextword() return W() end`, errBaselineGoUpval},
		{"gmatch in an upvalue", `local w = string.gmatch("first second", "%a+") function nextword() return w() end`, errBaselineGoUpval},
		{"gfind", `local w = string.gfind("first second", "%a+") function nextword() return w() end`, errBaselineGoUpval},
		{"gmatch in a table", `local t = {string.gmatch("first second", "(%a+)")} function nextword() return t[1]() end`, errBaselineGoUpval},
		{"ipairs", `local f, s, i = ipairs({"first", "second"}) function nextword() i = f(s, i) return s[i] end`, errBaselineUpvalue},
		{"pairs", `local f, s = pairs({first = 1}) function nextword() return (f(s)) end`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			L := baselineState(t, c.chunk)
			defer L.Close()
			b := L.NewBaseline()
			if err := L.DoString(`assert(nextword() == "first")`); err != nil {
				t.Fatal(err)
			}
			if err := b.Pristine(L); err != c.want {
				t.Fatalf("Pristine() = %v, want %v", err, c.want)
			}
		})
	}
}

// TestBaselineResetsRandom: a state reset to its baseline draws as it did
// when the baseline was recorded: a session that seeded math.random leaves
// the next session no sequence to continue (and one seeded by the chunk
// keeps the chunk's).
func TestBaselineResetsRandom(t *testing.T) {
	draw := func(L *LState) LValue {
		if err := L.DoString("return math.random(1e9)"); err != nil {
			t.Fatal(err)
		}
		defer L.Pop(1)
		return L.Get(-1)
	}
	L := NewState()
	defer L.Close()
	b := L.NewBaseline()
	if err := L.DoString("math.randomseed(1)"); err != nil {
		t.Fatal(err)
	}
	b.Reset(L)
	if L.RandomState() != (RandomState{}) {
		t.Error("after Reset the state still draws from the generator seeded after its baseline")
	}
	if err := L.DoString("math.randomseed(5)"); err != nil {
		t.Fatal(err)
	}
	b = L.NewBaseline()
	first := draw(L)
	b.Reset(L)
	if again := draw(L); again != first {
		t.Errorf("after Reset the chunk's seed drew %v first, before %v", again, first)
	}
}
