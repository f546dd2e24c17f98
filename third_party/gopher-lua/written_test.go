package lua

import "testing"

// Every way Lua code can change a table sets its written flag; reading it
// does not.
func TestWritten(t *testing.T) {
	cases := []struct {
		code    string
		written bool
	}{
		{`local x = t.a; x = t[1]; x = #t; for k, v in pairs(t) do end; for i, v in ipairs(t) do end; x = getmetatable(t)`, false},
		{`t.a = 2`, true},
		{`t.a = 1`, true}, // the same value is still a write
		{`t.a = nil`, true},
		{`t.new = true`, true},
		{`t[1] = 5`, true},
		{`t[3] = 5`, true},
		{`t[2.5] = 5`, true},
		{`rawset(t, "a", 3)`, true},
		{`table.insert(t, 9)`, true},
		{`table.insert(t, 1, 9)`, true},
		{`table.remove(t)`, true},
		{`table.sort(t)`, true},
		{`setmetatable(t, {})`, true},
	}
	for _, c := range cases {
		L := NewState()
		tb := L.NewTable()
		if err := L.DoString(`return function(t) t.a = 1; t[1] = 2; t[2] = 1 end`); err != nil {
			t.Fatal(err)
		}
		if err := L.CallByParam(P{Fn: L.Get(-1), NRet: 0, Protect: true}, tb); err != nil {
			t.Fatal(err)
		}
		if !tb.Written() {
			t.Fatal("setting up the table did not flag it")
		}
		tb.ClearWritten()
		tb.ClearDirty()
		L.SetGlobal("t", tb)
		tb.ClearWritten()
		tb.ClearDirty()
		tb.hcap &^= tableTouched
		if err := L.DoString(c.code); err != nil {
			t.Fatalf("%s: %v", c.code, err)
		}
		if tb.Written() != c.written || tb.Dirty() != c.written || tb.Touched() != c.written {
			t.Errorf("%s: Written() = %v, Dirty() = %v, Touched() = %v, want %v", c.code, tb.Written(), tb.Dirty(), tb.Touched(), c.written)
		}
		if tb.ClearWritten(); tb.Dirty() != c.written {
			t.Errorf("%s: ClearWritten cleared Dirty", c.code)
		}
		if tb.ClearDirty(); tb.Touched() != c.written {
			t.Errorf("%s: ClearWritten or ClearDirty cleared Touched", c.code)
		}
		if tb.hcap&^tableTouched != int32(tb.hint()) || tb.hint() < defaultHashCap {
			t.Errorf("%s: hcap %#x mixes the flag and the capacity hint", c.code, tb.hcap)
		}
		L.Close()
	}
}

// The flags are set together and cleared apart; MarkWritten sets them all.
func TestDirtyIndependent(t *testing.T) {
	tb := newLTable(0, 4)
	tb.RawSetString("a", LTrue)
	tb.ClearDirty()
	if !tb.Written() || tb.Dirty() {
		t.Fatalf("after ClearDirty: Written %v Dirty %v, want true false", tb.Written(), tb.Dirty())
	}
	tb.ClearWritten()
	tb.MarkWritten()
	if !tb.Written() || !tb.Dirty() {
		t.Fatalf("after MarkWritten: Written %v Dirty %v, want both", tb.Written(), tb.Dirty())
	}
	if !tb.Touched() {
		t.Fatal("MarkWritten did not set Touched")
	}
	tb.ClearWritten()
	tb.ClearDirty()
	tb.hcap &^= tableTouched
	if tb.hint() != 4 || tb.hcap != 4 {
		t.Fatalf("hint %d after clearing both flags, want 4", tb.hint())
	}
}

// BenchmarkTableWrite is a plain table write from Lua (t.x = i, t[i] = i in
// the array part): what the write flags cost, one OR per write.
func BenchmarkTableWrite(b *testing.B) {
	L := NewState()
	defer L.Close()
	if err := L.DoString(`t = {x = 0, 1, 2, 3, 4}
function w(n) for i = 1, n do t.x = i; t[(i % 4) + 1] = i end end`); err != nil {
		b.Fatal(err)
	}
	w := L.GetGlobal("w")
	b.ResetTimer()
	if err := L.CallByParam(P{Fn: w, Protect: true}, LNumber(b.N)); err != nil {
		b.Fatal(err)
	}
}
