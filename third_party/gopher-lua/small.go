package lua

// patched for luamcp: small string-key tables without maps.
//
// Most tables a host makes and drops (a call's arguments, ctx, results,
// decoded JSON objects, `{ name = "x", version = "1" }`) hold a few string
// keys and nothing else in their hash part. Upstream gave each of them a Go
// map (a header and a group of slots: two allocations, about 300 bytes) plus
// the key list. Here such a table keeps its string keys and values as pairs
// in keys itself: keys[2i] is a key (an LString), keys[2i+1] its value. It
// switches to the maps (strdict, dict, keys listing keys only) when it gets
// a key that is not a string or its smallMax+1-th string key, and never
// switches back.
//
// The table is small exactly when it has keys but neither map:
// strdict == nil && dict == nil && keys != nil. A table with no hash part has
// none of the three. As in the maps (keys.go), a removed key stays with the
// value nil, so that a key set again keeps its place and is listed once; the
// switch to the maps drops such keys (it happens only when a new key is set,
// which a traversal may not do).
//
// Lookups scan at most smallMax keys, comparing strings: cheaper than
// hashing for keys this short. Pairs keep insertion order, which Next and
// ForEach follow.

// smallMax is the most string keys a small table holds.
const smallMax = keyScanMax

// isSmall reports whether tb keeps its hash part as pairs.
func (tb *LTable) isSmall() bool {
	return tb.strdict == nil && tb.dict == nil && tb.keys != nil
}

// smallFind returns the index in keys of key's pair, or -1.
func (tb *LTable) smallFind(key string) int {
	kv := tb.keys
	for i := 0; i < len(kv); i += 2 {
		if string(kv[i].(LString)) == key {
			return i
		}
	}
	return -1
}

// smallGet returns key's value in a small table (LNil when absent).
func (tb *LTable) smallGet(key string) LValue {
	if i := tb.smallFind(key); i >= 0 {
		return tb.keys[i+1]
	}
	return LNil
}

// smallSet sets key in a table that is small or has no hash part; it
// reports false, changing nothing, when the key is new and the table is
// full (the caller switches it to the maps).
func (tb *LTable) smallSet(key string, value LValue) bool {
	if i := tb.smallFind(key); i >= 0 {
		tb.keys[i+1] = value
		return true
	}
	if value == LNil {
		return true
	}
	if len(tb.keys) == 2*smallMax {
		return false
	}
	if tb.keys == nil {
		tb.keys = make([]LValue, 0, 2*max(min(tb.hint(), smallMax), 1))
	}
	tb.keys = append(tb.keys, LString(key), value)
	return true
}

// toMaps switches a small table to the maps, dropping removed keys.
func (tb *LTable) toMaps() {
	kv := tb.keys
	n := 0
	for i := 1; i < len(kv); i += 2 {
		if kv[i] != LNil {
			n++
		}
	}
	tb.keys = nil
	if n == 0 {
		return // no hash part left: the caller's set makes what it needs
	}
	tb.strdict = make(map[string]LValue, max(n+1, lazyHashCap))
	tb.addHint(max(n+1, lazyHashCap))
	tb.keys = make([]LValue, 0, n+1)
	for i := 0; i < len(kv); i += 2 {
		if v := kv[i+1]; v != LNil {
			tb.strdict[string(kv[i].(LString))] = v
			tb.keys = append(tb.keys, kv[i])
		}
	}
}

// smallNext returns the first pair at or after pair index i (in pairs, not
// in keys) whose value is not nil.
func (tb *LTable) smallNext(i int) (LValue, LValue) {
	kv := tb.keys
	for j := 2 * i; j < len(kv); j += 2 {
		if v := kv[j+1]; v != LNil {
			return kv[j], v
		}
	}
	return LNil, LNil
}

// smallKeys is the number of keys a small table lists (removed ones
// included, as len(keys) counts them in the maps).
func (tb *LTable) smallKeys() int { return len(tb.keys) / 2 }

// eachStored calls key with every string key tb stores and value with every
// other key and every value, removed keys' nils included: the whole of
// what the table holds, in whichever form (array, pairs, maps), for the
// walks of the object graph (budget.go, baseline.go). key may be nil.
func (tb *LTable) eachStored(key func(string), value func(LValue)) {
	for _, e := range tb.array {
		value(e)
	}
	if tb.isSmall() {
		for i := 0; i < len(tb.keys); i += 2 {
			if key != nil {
				key(string(tb.keys[i].(LString)))
			}
			value(tb.keys[i+1])
		}
	}
	for k, e := range tb.strdict {
		if key != nil {
			key(k)
		}
		value(e)
	}
	for k, e := range tb.dict {
		value(k)
		value(e)
	}
}
