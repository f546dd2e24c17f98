package lua

import (
	"strings"
)

func OpenTable(L *LState) int {
	tabmod := L.RegisterModule(TabLibName, tableFuncs)
	L.Push(tabmod)
	return 1
}

var tableFuncs = map[string]LGFunction{
	"getn":     tableGetN,
	"concat":   tableConcat,
	"foreach":  tableForeach,  // patched for luamcp
	"foreachi": tableForeachi, // patched for luamcp
	"insert":   tableInsert,
	"maxn":     tableMaxN,
	"remove":   tableRemove,
	"setn":     tableSetn, // patched for luamcp
	"sort":     tableSort,
}

// patched for luamcp: table.sort is Lua 5.1's (ltablib.c's auxsort, a
// quicksort with a median of three): it sorts t[1] to t[#t], puts elements
// that compare equal in the order Lua 5.1 does (a script sorting records by
// one field gets the order it gets from Lua), and raises "invalid order
// function for sorting" when the order function is inconsistent. Upstream ran
// Go's sort.Sort over the table's array part, trailing nils included
// ({3, 1, 2, 4} with t[4] = nil was "attempt to compare nil with number"),
// and accepted any order function.
func tableSort(L *LState) int {
	tbl := L.CheckTable(1)
	n := tbl.Len()
	s := luaSorter{L: L, t: tbl}
	if L.Get(2) != LNil {
		s.fn = L.CheckFunction(2)
	}
	tbl.written() // patched for luamcp: written.go
	s.sort(1, n)
	return 0
}

// luaSorter is Lua 5.1's auxsort over t[l..u], reading and writing the table
// raw, as Lua does (an order function may look at the table meanwhile).
type luaSorter struct {
	L  *LState
	t  *LTable
	fn *LFunction
}

// less is sort_comp: the order function's verdict on a < b, or Lua's <.
func (s *luaSorter) less(a, b LValue) bool {
	s.L.step(1) // sorting honours cancellation
	if s.fn == nil {
		return lessThan(s.L, a, b)
	}
	s.L.Push(s.fn)
	s.L.Push(a)
	s.L.Push(b)
	s.L.Call(2, 1)
	return LVAsBool(s.L.reg.Pop())
}

func (s *luaSorter) get(i int) LValue    { return s.t.RawGetInt(i) }
func (s *luaSorter) set(i int, v LValue) { s.t.RawSetInt(i, v) }
func (s *luaSorter) swap(i, j int) {
	vi, vj := s.get(i), s.get(j)
	s.set(i, vj)
	s.set(j, vi)
}

func (s *luaSorter) sort(l, u int) {
	for l < u {
		// sort a[l], a[(l+u)/2] and a[u]
		if s.less(s.get(u), s.get(l)) {
			s.swap(l, u)
		}
		if u-l == 1 {
			break
		}
		i := l + (u-l)/2
		if s.less(s.get(i), s.get(l)) {
			s.swap(i, l)
		} else if s.less(s.get(u), s.get(i)) {
			s.swap(i, u)
		}
		if u-l == 2 {
			break
		}
		p := s.get(i) // the pivot
		s.swap(i, u-1)
		// a[l] <= P == a[u-1] <= a[u]: only l+1 to u-2 remain
		i, j := l, u-1
		for {
			for i++; s.less(s.get(i), p); i++ {
				if i > u {
					s.L.RaiseError("invalid order function for sorting")
				}
			}
			for j--; s.less(p, s.get(j)); j-- {
				if j < l {
					s.L.RaiseError("invalid order function for sorting")
				}
			}
			if j < i {
				break
			}
			s.swap(i, j)
		}
		s.swap(u-1, i)
		// a[l..i-1] <= a[i] == P <= a[i+1..u]: recurse into the smaller
		// half, loop on the larger one
		if i-l < u-i {
			s.sort(l, i-1)
			l = i + 1
		} else {
			s.sort(i+1, u)
			u = i - 1
		}
	}
}

func tableGetN(L *LState) int {
	L.Push(LNumber(L.CheckTable(1).Len()))
	return 1
}

// patched for luamcp: Lua 5.0's foreach, foreachi and setn, which Lua 5.1.5
// keeps (ltablib.c; upstream had none of them).

// tableForeach calls f(k, v) for each key of t, in next's order, and returns
// the first result of f that is not nil.
func tableForeach(L *LState) int {
	tbl := L.CheckTable(1)
	fn := L.CheckFunction(2)
	var k LValue = LNil
	for {
		if !tbl.holdsKey(k) { // f removed k and added keys: as next
			L.RaiseError("invalid key to 'next'")
		}
		key, v := tbl.Next(k)
		if key == LNil {
			return 0
		}
		L.Push(fn)
		L.Push(key)
		L.Push(v)
		L.Call(2, 1)
		if L.Get(-1) != LNil {
			return 1
		}
		L.Pop(1)
		k = key
		L.step(1)
	}
}

// tableForeachi calls f(i, t[i]) for i from 1 to #t (as #t was before the
// first call), and returns the first result of f that is not nil.
func tableForeachi(L *LState) int {
	tbl := L.CheckTable(1)
	n := tbl.Len()
	fn := L.CheckFunction(2)
	for i := 1; i <= n; i++ {
		L.Push(fn)
		L.Push(LNumber(i))
		L.Push(rawGetInt(tbl, i))
		L.Call(2, 1)
		if L.Get(-1) != LNil {
			return 1
		}
		L.Pop(1)
		L.step(1)
	}
	return 0
}

// tableSetn is Lua 5.1's setn without LUA_COMPAT_GETN: an error.
func tableSetn(L *LState) int {
	L.CheckTable(1)
	L.RaiseError("'setn' is obsolete")
	return 0
}

// patched for luamcp: as Lua 5.1's maxn, the largest positive number key,
// wherever it is stored and whether or not it is an integer (upstream looked
// at the array part only: table.maxn({[1.5] = 1}) was 0).
func tableMaxN(L *LState) int {
	tbl := L.CheckTable(1)
	max := LNumber(tbl.MaxN())
	tbl.ForEach(func(k, v LValue) {
		L.step(1)
		if n, ok := k.(LNumber); ok && n > max {
			max = n
		}
	})
	L.Push(max)
	return 1
}

// patched for luamcp: as Lua 5.1's tremove, the position defaults to #t and
// one outside 1..#t removes and returns nothing. Upstream removed the last
// element of the array part for a position of 0 or below
// (table.remove(t, 0)), and that element even when it was a nil past #t
// ({1, 2, 3, 4} with t[4] = nil: table.remove(t) returned nil and left 3).
func tableRemove(L *LState) int {
	tbl := L.CheckTable(1)
	n := tbl.Len()
	pos := int(int32(L.OptInt(2, n))) // luaL_optint: a C int
	if pos < 1 || pos > n {
		return 0
	}
	L.Push(tbl.Remove(pos))
	return 1
}

func tableConcat(L *LState) int {
	tbl := L.CheckTable(1)
	sep := LString(L.OptString(2, ""))
	// patched for luamcp: t[i] to t[j] as given, as Lua 5.1's tconcat:
	// a nil or other value that is not a string or number in that range is
	// an error. Upstream clamped i and j to #t, so table.concat(t, ",", 1, 5)
	// of a three-element t joined three.
	i := L.OptInt(3, 1)
	j := L.OptInt(4, tbl.Len())
	if i > j {
		L.Push(emptyLString)
		return 1
	}
	// Patched for luamcp: the result is measured and charged, then built
	// directly (upstream pushed every piece on the stack, which overflows it
	// past a few thousand elements), with cancellation checks.
	size := 0
	for k := i; k <= j; k++ {
		v := rawGetInt(tbl, k) // patched for luamcp: t[0] too
		switch v := v.(type) {
		case LString:
			size = addSize(size, len(v))
		case LNumber:
			size = addSize(size, 24)
		default:
			L.RaiseError("invalid value (%s) at index %d in table for 'concat'", v.Type().String(), k) // patched for luamcp: quoted, as Lua
		}
		if k != j {
			size = addSize(size, len(sep))
		}
		L.step(1)
	}
	L.charge(size)
	var b strings.Builder
	b.Grow(size)
	for k := i; k <= j; k++ {
		s := LVAsString(rawGetInt(tbl, k))
		b.WriteString(s)
		if k != j {
			b.WriteString(string(sep))
		}
		L.step(len(s) + len(sep))
	}
	L.Push(LString(b.String()))
	return 1
}

// patched for luamcp: as Lua 5.1's tinsert, the elements t[pos..#t] move up
// by one and t[pos] is set, wherever pos is: a pos past #t+1 sets that key
// alone, one of 0 or below moves t[pos..#t] up through the keys below 1
// (table.insert(t, 0, v) of {1, 2, 3} is {[0] = v, nil, 1, 2, 3}); pos is
// read as a C int (luaL_checkint). Upstream moved the whole array part,
// trailing nils included, and set t[pos] alone for pos <= 0.
func tableInsert(L *LState) int {
	tbl := L.CheckTable(1)
	e := tbl.Len() + 1 // the first empty element
	var pos int
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = int(int32(L.CheckInt(2)))
		e = max(e, pos)
	default: // patched for luamcp: Lua 5.1's check and message (upstream took table.insert(t, 1, 2, 3))
		L.RaiseError("wrong number of arguments to 'insert'")
	}
	v := L.Get(L.GetTop())
	if pos < 1 || e > len(tbl.array)+1 {
		// The general case: key by key, as Lua 5.1, each set charged.
		for i := e; i > pos; i-- {
			L.tableSet(tbl, LNumber(i), rawGetInt(tbl, i-1))
			L.step(1)
		}
		L.tableSet(tbl, LNumber(pos), v)
		return 0
	}
	// Within the array part, or appending to it (e <= len+1: t[e] is nil or
	// past the end): one copy. The growth is charged before.
	if v == LNil && pos == e {
		return 0
	}
	before := tableCost(tbl)
	pre := arrayGrowth(tbl, e)
	L.charge(pre)
	tbl.written() // patched for luamcp: written.go
	if tbl.array == nil {
		tbl.array = make([]LValue, 0, defaultArrayCap)
	}
	if e > len(tbl.array) {
		tbl.array = append(tbl.array, LNil)
	}
	copy(tbl.array[pos:e], tbl.array[pos-1:e-1])
	tbl.array[pos-1] = v
	L.step(e - pos)
	if d := tableCost(tbl) - before - pre; d > 0 {
		L.charge(d)
	}
	return 0
}

//

// rawGetInt is t[i] wherever t keeps it: LTable.RawGetInt reads the array
// part only, which holds no key below 1. Patched for luamcp.
func rawGetInt(tb *LTable, i int) LValue {
	if i >= 1 && i < MaxArrayIndex {
		return tb.RawGetInt(i)
	}
	return tb.RawGetH(LNumber(i))
}
