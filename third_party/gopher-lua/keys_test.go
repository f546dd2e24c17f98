package lua

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
)

// A table walked with Next lists each present key once, in insertion order,
// whatever the mix of sets, removals and re-sets, with and without k2i
// (tables above and below keyScanMax), and a walk survives assignments to
// present keys (as Lua allows during traversal).
func TestKeysOrderAndRemoval(t *testing.T) {
	for _, size := range []int{1, keyScanMax, keyScanMax + 1, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(size)))
			tb := newLTable(0, 0)
			var order []LValue // model: present keys, insertion order of first set
			present := map[LValue]bool{}
			listed := map[LValue]bool{}
			key := func(i int) LValue {
				if i%3 == 0 {
					return LBool(i%2 == 0) // a dict key
				}
				if i%3 == 1 {
					return LNumber(float64(i) + 0.5) // a dict key (not an array index)
				}
				return LString(fmt.Sprint("k", i))
			}
			for step := 0; step < size*20; step++ {
				k := key(rng.Intn(size * 2))
				if rng.Intn(3) == 0 {
					tb.RawSetH(k, LNil)
					present[k] = false
				} else {
					tb.RawSetH(k, LNumber(step))
					if !listed[k] {
						listed[k] = true
						order = append(order, k)
					}
					present[k] = true
				}
				if step%7 == 0 {
					var got []LValue
					for k, v := tb.Next(LNil); k != LNil; k, v = tb.Next(k) {
						if v == LNil {
							t.Fatalf("Next gave %v with a nil value", k)
						}
						got = append(got, k)
						tb.RawSetH(k, v) // assignment during the walk
					}
					var want []LValue
					for _, k := range order {
						if present[k] {
							want = append(want, k)
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("step %d: Next walks %v, want %v", step, got, want)
					}
				}
			}
		})
	}
}

// BenchmarkSmallStringTable is the table a tool's arguments or ctx make: a
// few string keys, read, never walked.
func BenchmarkSmallStringTable(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		tb := newLTable(0, 4)
		tb.RawSetString("session_id", LString("s"))
		tb.RawSetString("request_id", LNumber(1))
		tb.RawSetString("protocol_version", LString("2025-11-25"))
		if tb.RawGetString("request_id") == LNil {
			b.Fatal("lost")
		}
	}
}

// Next only reads: goroutines may walk one table at once, the first of them
// building its key index (go test -race).
func TestNextConcurrentWalkers(t *testing.T) {
	tb := newLTable(0, 0)
	for i := range 100 {
		tb.RawSetString(fmt.Sprintf("k%d", i), LNumber(i))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for k, _ := tb.Next(LNil); k != LNil; k, _ = tb.Next(k) {
				n++
			}
			if n != 100 {
				t.Errorf("walked %d keys, want 100", n)
			}
		}()
	}
	wg.Wait()
}
