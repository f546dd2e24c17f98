package bridge

import (
	"math/rand/v2"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// mirrorOps is a Lua function op(code, a, b, c) that applies one random
// mutation to a pool P of tables, one of which is the state s: keys set and
// removed (strings, integers, tables, booleans), tables moved between
// parents, shared and made cyclic, metatables and markers set and removed,
// table.insert/remove/sort, the root replaced. The codes and operands come
// from a fuzzer or a seeded generator.
const mirrorOps = `
local mcp = require('mcp')
P = {{}, {}, {}, {}, {}}
s = P[1]
local function T(i) return P[i % #P + 1] end
local keys = {"x", "y", "z", 1, 2, 3, 4, true}
local function K(i, j)
  if i % 9 == 8 then return T(j) end
  return keys[i % 8 + 1]
end
local function V(i, j)
  local n = i % 8
  if n == 0 then return nil end
  if n == 1 then return i end
  if n == 2 then return "s" .. i end
  if n == 3 then return mcp.null end
  if n == 4 then local t = {} P[#P + 1] = t return t end
  return T(j)
end
return function(code, a, b, c)
  local op = code % 14
  local t = T(a)
  if op <= 3 then t[K(b, c)] = V(c, b)
  elseif op == 4 then t[K(b, c)] = nil
  elseif op == 5 then rawset(t, K(b, c), V(c, a))
  elseif op == 6 then local from = T(b); local k = K(c, a); t.moved = from[k]; from[k] = nil
  elseif op == 7 then setmetatable(t, (b % 3 == 0) and nil or T(c))
  elseif op == 8 then if b % 2 == 0 then mcp.array(t) else mcp.object(t) end
  elseif op == 9 then table.insert(t, 1, V(b, c) or 0)
  elseif op == 10 then table.remove(t, 1)
  elseif op == 11 then local n = {} for i = 1, b % 5 do n[i] = (c * i) % 7 end; t.list = n; pcall(table.sort, n)
  elseif op == 12 then t.self = t; T(b).back = t
  elseif op == 13 then if b % 4 == 0 then s = T(c) end
  end
end
`

// mirrorRun applies ops (4 bytes each) and syncs every few ops, checking
// that the patched copy is a faithful deep copy of the state each time, as a
// full Clone would be.
func mirrorRun(t *testing.T, L *lua.LState, c *Codec, ops []byte) {
	t.Helper()
	fn := eval(t, L, mirrorOps).(*lua.LFunction)
	m := c.NewMirror()
	var ref *Mirror // a full copy of the state at m's last Sync
	var refCopy lua.LValue
	check := func(step int) {
		s := L.GetGlobal("s")
		cp := m.Sync(s)
		if d := isomorphic(s, cp, m.copyOf); d != "" {
			t.Fatalf("after op %d: %s", step, d)
		}
		// The same check of a full copy, made from scratch: a failure of
		// both is the checker's, not the Mirror's.
		ref = c.NewMirror()
		refCopy = ref.Sync(s)
		if d := isomorphic(s, refCopy, ref.copyOf); d != "" {
			t.Fatalf("after op %d: the full copy: %s", step, d)
		}
	}
	check(0)
	for i := 0; i+4 <= len(ops); i += 4 {
		code, a, b, cc := ops[i], ops[i+1], ops[i+2], ops[i+3]
		if code == 255 { // the copy is handed over, the next Sync starts afresh
			m.Release()
			continue
		}
		if code == 254 { // a rollback in place: the state is what the last Sync saw
			if r := m.Restore(); r != nil {
				L.SetGlobal("s", r)
				if d := isomorphic(r, refCopy, ref.copyOf); d != "" {
					t.Fatalf("after the rollback at op %d: %s", i/4, d)
				}
			}
			continue
		}
		if err := L.CallByParam(lua.P{Fn: fn, Protect: true}, lua.LNumber(code), lua.LNumber(a), lua.LNumber(b), lua.LNumber(cc)); err != nil {
			t.Fatalf("op %d: %v", i/4, err)
		}
		if a%3 == 0 {
			check(i/4 + 1)
		}
	}
	check(len(ops) / 4)
}

// TestMirrorRandom compares the incremental Mirror with a deep copy after
// seeded random mutation sequences.
func TestMirrorRandom(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 14))
		ops := make([]byte, 4*(20+r.IntN(200)))
		for i := range ops {
			ops[i] = byte(r.IntN(256))
			if i%4 == 0 && r.IntN(12) == 0 {
				ops[i] = 254 // a rollback: rare in uniform bytes
			}
		}
		L, c, _ := newState(t)
		mirrorRun(t, L, c, ops)
	}
}

// FuzzMirror: whatever the mutations, the patched copy is a deep copy.
func FuzzMirror(f *testing.F) {
	f.Add([]byte{0, 3, 4, 5, 4, 0, 1, 2, 6, 3, 3, 3, 13, 3, 4, 5})
	f.Add([]byte{12, 0, 1, 2, 7, 3, 1, 2, 255, 0, 0, 0, 8, 3, 1, 0, 9, 3, 4, 4, 10, 3, 0, 0})
	f.Add([]byte{0, 3, 4, 5, 12, 0, 1, 2, 7, 1, 1, 2, 254, 0, 0, 0, 13, 1, 4, 4, 254, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4096 {
			return
		}
		L, c, _ := newState(t)
		mirrorRun(t, L, c, ops)
	})
}
