package lua

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// patched for luamcp: small.go. A table of string keys only behaves the
// same below, at and above smallMax keys (where it switches to the maps):
// every lookup, Next in insertion order, ForEach, removals and re-sets
// (a re-set key keeps its place), and a key of another type switching it.
func TestSmallTable(t *testing.T) {
	for _, keys := range []int{1, 3, smallMax, smallMax + 1, 20} {
		for _, hint := range []int{0, 2, smallMax, smallMax + 1} {
			t.Run(fmt.Sprintf("keys=%d,hint=%d", keys, hint), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(keys*100 + hint)))
				tb := newLTable(0, hint)
				model := map[string]LValue{}
				var order []string // first sets, in order
				removed := false
				check := func(step int) {
					t.Helper()
					for i := 0; i < keys; i++ {
						k := fmt.Sprint("k", i)
						want, ok := model[k]
						if !ok {
							want = LNil
						}
						if got := tb.RawGetString(k); got != want {
							t.Fatalf("step %d: RawGetString(%s) = %v, want %v", step, k, got, want)
						}
						if got := tb.RawGet(LString(k)); got != want {
							t.Fatalf("step %d: RawGet(%s) = %v, want %v", step, k, got, want)
						}
						if got := tb.RawGetH(LString(k)); got != want {
							t.Fatalf("step %d: RawGetH(%s) = %v, want %v", step, k, got, want)
						}
					}
					var walked []string
					for k, v := tb.Next(LNil); k != LNil; k, v = tb.Next(k) {
						if v == LNil || model[string(k.(LString))] != v {
							t.Fatalf("step %d: Next gave %v = %v", step, k, v)
						}
						walked = append(walked, string(k.(LString)))
					}
					var want []string
					for _, k := range order {
						if _, ok := model[k]; ok {
							want = append(want, k)
						}
					}
					// Insertion order until a key is removed; then each
					// present key once (a removed key set again after the
					// switch to the maps is a new key there).
					if !removed && fmt.Sprint(walked) != fmt.Sprint(want) {
						t.Fatalf("step %d: Next walks %v, want %v", step, walked, want)
					}
					slices.Sort(walked)
					slices.Sort(want)
					if fmt.Sprint(walked) != fmt.Sprint(want) {
						t.Fatalf("step %d: Next walks %v, want %v", step, walked, want)
					}
					n := 0
					tb.ForEach(func(k, v LValue) {
						n++
						if model[string(k.(LString))] != v {
							t.Fatalf("step %d: ForEach gave %v = %v", step, k, v)
						}
					})
					if n != len(model) {
						t.Fatalf("step %d: ForEach gave %d pairs, want %d", step, n, len(model))
					}
				}
				listed := map[string]bool{}
				for step := 0; step < keys*30; step++ {
					k := fmt.Sprint("k", rng.Intn(keys))
					if rng.Intn(4) == 0 && step > keys {
						tb.RawSetString(k, LNil)
						delete(model, k)
						removed = true
					} else {
						v := LNumber(step)
						tb.RawSetString(k, v)
						model[k] = v
						if !listed[k] {
							listed[k] = true
							order = append(order, k)
						}
					}
					check(step)
				}
				// A key of another type switches a small table to the maps
				// and loses nothing.
				tb.RawSetH(LTrue, LNumber(-1))
				if got := tb.RawGetH(LTrue); got != LNumber(-1) {
					t.Fatalf("RawGetH(true) = %v", got)
				}
				tb.RawSetH(LTrue, LNil)
				check(-1)
			})
		}
	}
}

// Setting keys of a small table again and again charges nothing after the
// first sets: the charge follows what is allocated.
func TestSmallTableCharges(t *testing.T) {
	L := NewState()
	defer L.Close()
	L.SetMemoryLimit(64 << 20)
	tb := L.NewTable()
	L.SetGlobal("t", tb)
	before := L.G.budget.used
	if err := L.DoString(`for i = 1, 100000 do t.a = i; t.b = i; t.c = nil end`); err != nil {
		t.Fatal(err)
	}
	if d := L.G.budget.used - before; d > 4<<10 {
		t.Errorf("200,000 sets of two keys charged %d bytes", d)
	}
}

// BenchmarkSmallTableGet is a lookup in a table of a call's ctx size.
func BenchmarkSmallTableGet(b *testing.B) {
	tb := newLTable(0, 4)
	for _, k := range []string{"session_id", "request_id", "progress_token", "protocol_version"} {
		tb.RawSetString(k, LString(k))
	}
	b.ReportAllocs()
	for b.Loop() {
		if tb.RawGetString("protocol_version") == LNil {
			b.Fatal("lost")
		}
	}
}
