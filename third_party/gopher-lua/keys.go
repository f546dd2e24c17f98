package lua

// patched for luamcp: the iteration order of a table's hash part.
//
// Upstream keeps, for every table with a hash part, the keys in insertion
// order (keys, what Next walks) and their positions (k2i, a map keyed by
// interface values), both made on the first string key and both updated on
// every new key. Most tables are never walked with next/pairs after they are
// built, or only have a few keys: the k2i map cost a third of a small table's
// allocations. Here k2i is made only when Next is asked for the key after one
// of a table with more than keyScanMax keys, and kept up to date from then
// on; smaller tables find the key by scanning keys.
//
// Next only reads the table, as upstream's does: goroutines may walk one
// table at once while none writes to it (luamcp copies a session's state for
// a snapshot while its owner walks it). So the index Next builds is made
// whole and then published (k2i is an atomic pointer); two walkers may both
// build one, and one wins. Only a write, which has the table to itself,
// updates the published index in place.
//
// A removed key stays in strdict or dict with the value nil, as it stays in
// keys (upstream left it in keys and k2i), so that a key set again is not
// listed twice: "strdict/dict has the key" and "keys lists it" are one fact.

// keyScanMax is the largest number of keys Next finds by scanning.
const keyScanMax = 8

// firstKeysCap bounds the capacity of a table's first keys slice: the
// table's capacity hint, up to this. Upstream grew it from nothing (three
// allocations for four keys).
const firstKeysCap = 4

// appendKey lists a new key of the hash part.
func (tb *LTable) appendKey(key LValue) {
	if tb.keys == nil {
		tb.keys = make([]LValue, 0, max(min(tb.hint(), firstKeysCap), 1))
	}
	if m := tb.k2i.Load(); m != nil {
		(*m)[key] = len(tb.keys)
	}
	tb.keys = append(tb.keys, key)
}

// keyIndex returns the position of key in keys; 0 for a key it does not
// list, as upstream's k2i lookup gave.
func (tb *LTable) keyIndex(key LValue) int {
	m := tb.k2i.Load()
	if m == nil {
		if len(tb.keys) <= keyScanMax {
			for i, k := range tb.keys {
				if k == key {
					return i
				}
			}
			return 0
		}
		index := make(map[LValue]int, len(tb.keys))
		for i, k := range tb.keys {
			index[k] = i
		}
		tb.k2i.CompareAndSwap(nil, &index)
		m = tb.k2i.Load()
	}
	return (*m)[key]
}

// holdsKey reports whether Next can go on from key: nil, a position of the
// array part, or a key the hash part lists (a removed key included: a
// traversal may clear the fields it visits), as Lua 5.1's findindex.
// Patched for luamcp: next(t, k) of a key t does not hold is an error.
func (tb *LTable) holdsKey(key LValue) bool {
	if key == LNil {
		return true
	}
	switch k := key.(type) {
	case LNumber:
		if i := int(k); LNumber(i) == k && i >= 1 && i <= len(tb.array) {
			return true
		}
	case LString:
		if tb.isSmall() {
			return tb.smallFind(string(k)) >= 0
		}
	}
	if tb.isSmall() || len(tb.keys) == 0 {
		return false
	}
	i := tb.keyIndex(key)
	return i < len(tb.keys) && tb.keys[i] == key
}
