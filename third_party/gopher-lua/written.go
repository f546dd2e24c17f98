package lua

// Patched for luamcp: table write tracking.
//
// A host that lends one state to many short borrowers (luamcp's stateless
// requests) must find the globals and library tables as it left them. Before
// this patch it could only compare every key of every such table after each
// borrower, a few hundred map lookups per request. Every write to a table
// now sets a flag the host can test and clear, so the comparison runs only
// for the tables a borrower wrote to.
//
// There are three flags, set together by every write and cleared apart, for
// three observers of one state that must not clear each other's records:
// Written for the rollback backup and the stateless isolation (one of them
// per state), Dirty for caches of values derived from tables (luamcp's tool
// list index), Touched for a Baseline (baseline.go), which must see every
// write since it was recorded whatever the other two cleared.
//
// The flags live in the top bits of LTable.hcap, whose low bits keep the
// capacity hint of the table's maps (budget.go), so no table grows.

const (
	// tableWritten is set in hcap by every change to the table: a key set
	// or removed, an element inserted, removed or moved by table.sort, its
	// metatable set through the API.
	tableWritten = 1 << 30
	// tableDirty is set with tableWritten and cleared on its own.
	tableDirty = 1 << 29
	// tableTouched is set with tableWritten and cleared only by a Baseline
	// (baseline.go), which exports no way to clear it: no other observer can
	// hide a write from it.
	tableTouched = 1 << 28
	// hcapMask keeps the capacity hint.
	hcapMask = tableTouched - 1
)

// written records a change to tb.
func (tb *LTable) written() { tb.hcap |= tableWritten | tableDirty | tableTouched }

// hint returns the capacity hint tb's maps were made with.
func (tb *LTable) hint() int { return int(tb.hcap & hcapMask) }

// addHint adds n to the capacity hint, saturating below the flags.
func (tb *LTable) addHint(n int) {
	h := min(tb.hint()+n, hcapMask)
	tb.hcap = tb.hcap&^hcapMask | int32(h)
}

// Written reports whether tb changed since the last ClearWritten (or since
// it was made): a key set or removed, even to the value it had, an element
// inserted, removed or sorted, its metatable set with SetMetatable or
// setmetatable. Go code that assigns Metatable directly is not seen.
func (tb *LTable) Written() bool { return tb.hcap&tableWritten != 0 }

// ClearWritten clears the flag Written reports.
func (tb *LTable) ClearWritten() { tb.hcap &^= tableWritten }

// MarkWritten sets every flag (Written, Dirty and Baseline's), for Go code that changes a table without the
// API, such as assigning its Metatable field.
func (tb *LTable) MarkWritten() { tb.written() }

// Dirty is Written's twin: set by the same writes, cleared only by
// ClearDirty, so that two observers can each track the table's writes.
func (tb *LTable) Dirty() bool { return tb.hcap&tableDirty != 0 }

// ClearDirty clears the flag Dirty reports; Written is untouched.
func (tb *LTable) ClearDirty() { tb.hcap &^= tableDirty }

// Touched reports whether tb changed since a Baseline recorded it (or since
// it was made): the third flag, set by the same writes as Written and
// cleared only when a Baseline records tb.
func (tb *LTable) Touched() bool { return tb.hcap&tableTouched != 0 }
