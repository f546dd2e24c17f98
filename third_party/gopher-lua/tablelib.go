package lua

import (
	"sort"
	"strings"
)

func OpenTable(L *LState) int {
	tabmod := L.RegisterModule(TabLibName, tableFuncs)
	L.Push(tabmod)
	return 1
}

var tableFuncs = map[string]LGFunction{
	"getn":   tableGetN,
	"concat": tableConcat,
	"insert": tableInsert,
	"maxn":   tableMaxN,
	"remove": tableRemove,
	"sort":   tableSort,
}

func tableSort(L *LState) int {
	tbl := L.CheckTable(1)
	sorter := lValueArraySorter{L, nil, tbl.array}
	tbl.written() // patched for luamcp: written.go
	if L.GetTop() != 1 {
		sorter.Fn = L.CheckFunction(2)
	}
	sort.Sort(sorter)
	return 0
}

func tableGetN(L *LState) int {
	L.Push(LNumber(L.CheckTable(1).Len()))
	return 1
}

func tableMaxN(L *LState) int {
	L.Push(LNumber(L.CheckTable(1).MaxN()))
	return 1
}

func tableRemove(L *LState) int {
	tbl := L.CheckTable(1)
	if L.GetTop() == 1 {
		L.Push(tbl.Remove(-1))
	} else {
		L.Push(tbl.Remove(L.CheckInt(2)))
	}
	return 1
}

func tableConcat(L *LState) int {
	tbl := L.CheckTable(1)
	sep := LString(L.OptString(2, ""))
	i := L.OptInt(3, 1)
	j := L.OptInt(4, tbl.Len())
	if L.GetTop() == 3 {
		if i > tbl.Len() || i < 1 {
			L.Push(emptyLString)
			return 1
		}
	}
	i = intMax(intMin(i, tbl.Len()), 1)
	j = intMin(intMin(j, tbl.Len()), tbl.Len())
	if i > j {
		L.Push(emptyLString)
		return 1
	}
	// Patched for luamcp: the result is measured and charged, then built
	// directly (upstream pushed every piece on the stack, which overflows it
	// past a few thousand elements), with cancellation checks.
	size := 0
	for k := i; k <= j; k++ {
		v := tbl.RawGetInt(k)
		switch v := v.(type) {
		case LString:
			size = addSize(size, len(v))
		case LNumber:
			size = addSize(size, 24)
		default:
			L.RaiseError("invalid value (%s) at index %d in table for concat", v.Type().String(), k)
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
		s := LVAsString(tbl.RawGetInt(k))
		b.WriteString(s)
		if k != j {
			b.WriteString(string(sep))
		}
		L.step(len(s) + len(sep))
	}
	L.Push(LString(b.String()))
	return 1
}

func tableInsert(L *LState) int {
	tbl := L.CheckTable(1)
	nargs := L.GetTop()
	if nargs == 1 {
		L.RaiseError("wrong number of arguments")
	}

	// Patched for luamcp: the table's growth is charged.
	before := tableCost(tbl)
	var pre int
	if L.GetTop() == 2 {
		pre = arrayGrowth(tbl, len(tbl.array)+1)
		L.charge(pre)
		tbl.Append(L.Get(2))
	} else {
		pos, v := int(L.CheckInt(2)), L.CheckAny(3)
		pre = arrayGrowth(tbl, max(pos, len(tbl.array)+1))
		L.charge(pre)
		tbl.Insert(pos, v)
		L.step(len(tbl.array))
	}
	if d := tableCost(tbl) - before - pre; d > 0 {
		L.charge(d)
	}
	return 0
}

//
