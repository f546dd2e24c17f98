package bridge

import (
	"encoding/binary"
	"math"
	"runtime"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// thawed freezes v in sc and thaws it in dc.
func thawed(t testing.TB, sc, dc *Codec, v lua.LValue) lua.LValue {
	t.Helper()
	b, err := sc.Freeze(v)
	if err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	out, err := dc.Thaw(b)
	if err != nil {
		t.Fatalf("Thaw: %v", err)
	}
	return out
}

func TestFreezeThawShape(t *testing.T) {
	src, dst, sc, dc := newPair(t)
	v := eval(t, src, `
		local shared = {1}
		local t = {
			n = mcp.null,
			list = {mcp.null, 2, "x", nil, 5},
			arr = mcp.array(),
			obj = mcp.object(),
			decoded = mcp.json_decode('{"a":[],"b":{},"c":null}'),
			s1 = shared, s2 = shared,
			[3] = true,
			[2.5] = "float key",
			[shared] = "table key",
			p = setmetatable({}, {__index = {x = 1}}),
			rows = {},
		}
		for i = 1, 50 do t.rows[i] = {id = i, name = "row"} end
		t.self = t
		return t`)
	c := thawed(t, sc, dc, v)
	dst.SetGlobal("c", c)
	if got := eval(t, dst, `
		assert(c.n == mcp.null, "null mapped to the destination's null")
		assert(c.list[1] == mcp.null and c.list[3] == "x" and c.list[4] == nil and c.list[5] == 5)
		assert(getmetatable(c.arr) == getmetatable(mcp.array()), "array marker mapped")
		assert(getmetatable(c.obj) == getmetatable(mcp.object()), "object marker mapped")
		assert(getmetatable(c.decoded.a) == getmetatable(mcp.array()))
		assert(getmetatable(c.decoded.b) == getmetatable(mcp.object()))
		assert(c.decoded.c == mcp.null)
		assert(c.s1 == c.s2, "sharing kept")
		assert(c[c.s1] == "table key", "table keys keep their identity")
		assert(c.self == c, "cycle kept")
		assert(c[3] == true and c[2.5] == "float key")
		assert(c.p.x == 1, "data metatable kept")
		assert(#c.rows == 50 and c.rows[50].id == 50 and c.rows[7].name == "row")
		c.self = nil
		c[c.s1] = nil
		c.p = nil
		c.rows = nil
		c[2.5] = nil
		c.list = nil
		return mcp.json_encode(mcp.object(c))`); got != lua.LString(
		`{"3":true,"arr":[],"decoded":{"a":[],"b":{},"c":null},"n":null,"obj":{},"s1":[1],"s2":[1]}`) {
		t.Errorf("thawed value encodes as %s", got)
	}
}

func TestFreezeThawScalars(t *testing.T) {
	_, _, sc, dc := newPair(t)
	long := strings.Repeat("x", 1000)
	for _, v := range []lua.LValue{
		lua.LNil, lua.LTrue, lua.LFalse, lua.LString(""), lua.LString("s"), lua.LString(long),
		lua.LNumber(0), lua.LNumber(-1), lua.LNumber(1 << 52), lua.LNumber(-(1 << 60)), lua.LNumber(1e300),
		lua.LNumber(0.1), lua.LNumber(math.Inf(1)), lua.LNumber(math.Inf(-1)), lua.LNumber(math.Copysign(0, -1)),
	} {
		got := thawed(t, sc, dc, v)
		if got.Type() != v.Type() || got.String() != v.String() {
			t.Errorf("%v came back as %v", v, got)
		}
		if n, ok := v.(lua.LNumber); ok && math.Signbit(float64(n)) != math.Signbit(float64(got.(lua.LNumber))) {
			t.Errorf("%v lost its sign", v)
		}
	}
	if got := thawed(t, sc, dc, lua.LNumber(math.NaN())); !math.IsNaN(float64(got.(lua.LNumber))) {
		t.Errorf("NaN came back as %v", got)
	}
	if got := thawed(t, sc, dc, sc.Null()); got != dc.Null() {
		t.Errorf("null came back as %v", got)
	}
}

// Repeated strings are written once; long ones are numbered like short ones,
// so that later references still resolve.
func TestFreezeStrings(t *testing.T) {
	src, dst, sc, dc := newPair(t)
	v := eval(t, src, `
		local long = string.rep("L", 300)
		local t = {}
		for i = 1, 100 do t[i] = {name = "same", long = long, after = "x" .. (i % 3)} end
		return t`)
	b, err := sc.Freeze(v)
	if err != nil {
		t.Fatal(err)
	}
	// One long string in 100 places is written once; 100 long strings and
	// 100 "name"/"same" written in full would be > 30 KB.
	if len(b) > 2000+300 {
		t.Errorf("frozen form is %d bytes", len(b))
	}
	c, err := dc.Thaw(b)
	if err != nil {
		t.Fatal(err)
	}
	dst.SetGlobal("c", c)
	if got := eval(t, dst, `
		for i = 1, 100 do
			local r = c[i]
			assert(r.name == "same" and #r.long == 300 and r.after == "x" .. (i % 3), i)
		end
		return "ok"`); got != lua.LString("ok") {
		t.Fatal(got)
	}
}

// TestFreezeSharedLongString: a megabyte string in 200 places of a state is
// one string in the state, and is frozen once (it was frozen 200 times: a
// hibernating session held 200 MiB for a state of one).
func TestFreezeSharedLongString(t *testing.T) {
	src, dst, sc, dc := newPair(t)
	v := eval(t, src, `
		local big = string.rep("B", 1024 * 1024)
		local t = {}
		for i = 1, 200 do t[i] = { big, i } end
		t.other = string.rep("B", 1024 * 1024) -- equal bytes, another string: written again
		return t`)
	b, err := sc.Freeze(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2<<20+8<<10 {
		t.Errorf("frozen form is %d KiB, want about 2 MiB", len(b)>>10)
	}
	c, err := dc.Thaw(b)
	if err != nil {
		t.Fatal(err)
	}
	dst.SetGlobal("c", c)
	if got := eval(t, dst, `
		for i = 1, 200 do assert(#c[i][1] == 1024 * 1024 and c[i][2] == i, i) end
		assert(c.other == c[1][1])
		return "ok"`); got != lua.LString("ok") {
		t.Fatal(got)
	}
}

// TestFreezeWithinMemoryLimit: the frozen form of a state takes at most its
// memory limit. 128 substrings of one 1 MiB string hold 1 MiB in the state
// and were frozen to 127 MiB (allocating 800 MiB) under a 16 MiB limit;
// Freeze now fails early, allocating little, and the state is untouched.
// What fits, a long string shared 200 times among others, still freezes.
func TestFreezeWithinMemoryLimit(t *testing.T) {
	const limit = 16 << 20
	tests := []struct {
		name, lua string
		wantErr   string // "" for a state that freezes
		check     string // Lua run on the thawed value c
	}{
		{name: "substrings", lua: `
			local big = string.rep("x", 1024 * 1024)
			local t = {}
			for i = 1, 128 do t[i] = big:sub(i) end
			return t`, wantErr: "state[17]: memory limit exceeded"},
		{name: "substring keys", lua: `
			local big = string.rep("k", 1024 * 1024)
			local t = {}
			for i = 1, 32 do t.keys = t.keys or {}; t.keys[big:sub(i)] = i end
			return t`, wantErr: "state.keys: memory limit exceeded"},
		{name: "one string past the limit", lua: `return {s = string.rep("y", 17 * 1024 * 1024)}`,
			wantErr: "state.s: memory limit exceeded"},
		{name: "shared string", lua: `
			local big = string.rep("B", 1024 * 1024)
			local t = {other = string.rep("o", 4 * 1024 * 1024)}
			for i = 1, 200 do t[i] = {big, i, big:sub(1, 100)} end
			return t`, check: `
			for i = 1, 200 do assert(#c[i][1] == 1024 * 1024 and c[i][2] == i and c[i][3] == ("B"):rep(100), i) end
			assert(#c.other == 4 * 1024 * 1024)`},
		{name: "one string within the limit", lua: `return {s = string.rep("y", 15 * 1024 * 1024)}`,
			check: `assert(#c.s == 15 * 1024 * 1024)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst, sc, dc := newPair(t)
			v := eval(t, src, tt.lua)
			src.SetMemoryLimit(limit)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b, err := sc.Freeze(v)
			runtime.ReadMemStats(&after)
			if mib := (after.TotalAlloc - before.TotalAlloc) >> 20; mib > 3*limit>>20 {
				t.Errorf("Freeze allocated %d MiB for a state of a %d MiB limit", mib, limit>>20)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Freeze = %d MiB, %.200v; want error %q", len(b)>>20, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Freeze: %v", err)
			}
			if len(b) > limit {
				t.Errorf("frozen form is %d MiB", len(b)>>20)
			}
			c, err := dc.Thaw(b)
			if err != nil {
				t.Fatalf("Thaw: %v", err)
			}
			dst.SetGlobal("c", c)
			eval(t, dst, tt.check)
		})
	}
}

func TestFreezeDeepList(t *testing.T) {
	src, dst, sc, dc := newPair(t)
	v := eval(t, src, `
		local head = {}
		local p = head
		for i = 1, 20000 do p.next = {}; p = p.next end
		return head`)
	dst.SetGlobal("c", thawed(t, sc, dc, v))
	if got := eval(t, dst, `
		local n, p = 0, c
		while p.next do n = n + 1; p = p.next end
		return n`); got != lua.LNumber(20000) {
		t.Errorf("thawed list has %v nodes", got)
	}
}

func TestFreezeRejects(t *testing.T) {
	const cannot = "a hibernating session's state cannot hold a "
	tests := []struct {
		name, lua, want string
	}{
		{"function", `return {cb = function() end}`, `state.cb: ` + cannot + `function`},
		{"nested function", `return {list = {1, {f = print}}}`, `state.list[2].f: ` + cannot + `function`},
		{"root function", `return print`, `state: ` + cannot + `function`},
		{"thread", `return {co = coroutine.create(print)}`, `state.co: ` + cannot + `thread (coroutine)`},
		{"channel", `return {ch = channel.make()}`, `state.ch: ` + cannot + `channel`},
		{"function key", `return {[print] = 1}`, `state[<function>]: ` + cannot + `function`},
		{"metatable with a method", `return {obj = setmetatable({}, {__index = function() end})}`,
			`state.obj<metatable>.__index: ` + cannot + `function`},
		{"path through shared table", `local s = {f = print}; return {a = {b = s}}`,
			`state.a.b.f: ` + cannot + `function`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, sc, _ := newState(t)
			v := eval(t, src, tt.lua)
			b, err := sc.Freeze(v)
			if err == nil {
				t.Fatalf("Freeze = %d bytes, want error", len(b))
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// Bytes Freeze did not write are an error, never a panic nor a hang.
func TestThawCorrupt(t *testing.T) {
	src, _, sc, dc := newPair(t)
	v := eval(t, src, `
		local t = {a = {1, 2.5, "s", mcp.null}, b = mcp.array(), c = setmetatable({}, {x = true})}
		t.self = t
		t.again = "s"
		return t`)
	b, err := sc.Freeze(v)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(b) {
		if _, err := dc.Thaw(b[:n]); err == nil {
			t.Errorf("Thaw of the first %d of %d bytes succeeded", n, len(b))
		}
	}
	if _, err := dc.Thaw(append(b[:len(b):len(b)], 0)); err == nil {
		t.Error("Thaw with a trailing byte succeeded")
	}
	for i := range b {
		for _, x := range []byte{0, 1, 7, 0x7f, 0x80, 0xff} {
			m := append([]byte(nil), b...)
			m[i] = x
			_, _ = dc.Thaw(m) // must not panic
		}
	}
}

func BenchmarkFreeze(b *testing.B) {
	for _, bc := range []struct{ name, lua string }{
		{"small", `return {count = 3, user = {name = "ada", tags = {"a", "b"}}}`},
		{"10k", `local t = {items = {}}; for i = 1, 10000 do t.items["k" .. i] = {id = i, name = "item " .. i} end; return t`},
	} {
		src, sc, _ := newState(b)
		_, dc, _ := newState(b)
		v := eval(b, src, bc.lua)
		frozen, err := sc.Freeze(v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("freeze/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.ReportMetric(float64(len(frozen)), "bytes")
			for b.Loop() {
				if _, err := sc.Freeze(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("thaw/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dc.Thaw(frozen); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestThawRefusesAnnouncedSizes: a short corrupt form that announces many
// large tables is refused before their sizes are allocated: a frozen state
// may now come from a file (a saved session).
func TestThawRefusesAnnouncedSizes(t *testing.T) {
	const tables, slots = 1000, 4000
	b := []byte{freezeVersion}
	b = binary.AppendUvarint(b, tables)
	for range tables {
		b = append(b, kindPlain)
		b = binary.AppendUvarint(b, slots)
		b = binary.AppendUvarint(b, 0)
	}
	b = append(b, make([]byte, slots)...) // room enough for one table's slots
	_, _, _, dc := newPair(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := dc.Thaw(b)
	runtime.ReadMemStats(&after)
	if err == nil || CheckFrozen(b) == nil {
		t.Fatalf("Thaw: %v; a form announcing %d slots in %d bytes thawed", err, tables*slots, len(b))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing it allocated %d KiB", grew>>10)
	}
}

// TestThawRefusesArrayIndexInHash: an array index among a table's hash
// entries, which Freeze never writes, is refused, by CheckFrozen too: set,
// it would grow the table's array part up to it (13 bytes announcing 8
// million slots).
func TestThawRefusesArrayIndexInHash(t *testing.T) {
	for _, key := range []int64{1, 8_000_000} {
		b := []byte{freezeVersion, 1, kindPlain, 0, 1, tagTable, 0, tagInt}
		b = binary.AppendVarint(b, key)
		b = append(b, tagTrue)
		if err := CheckFrozen(b); err == nil {
			t.Errorf("CheckFrozen took the key %d among the hash entries", key)
		}
		_, _, _, dc := newPair(t)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := dc.Thaw(b)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("Thaw took the key %d among the hash entries", key)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("refusing the key %d allocated %d KiB", key, grew>>10)
		}
	}
	// What Freeze writes of the same keys, in the array part or not, thaws.
	src, _, sc, dc := newPair(t)
	v := eval(t, src, `local t = {true} t[0] = 1 t[-3] = 2 t[2.5] = 3 t[2^40] = 4 return t`)
	b, err := sc.Freeze(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Thaw(b); err != nil {
		t.Errorf("Thaw of what Freeze wrote: %v", err)
	}
}
