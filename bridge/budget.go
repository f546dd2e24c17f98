package bridge

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The encoder and the decoder build values for a state in Go, out of reach of
// its memory budget's measure (gopher-lua's budget.go) until they are done:
// one decode or encode may use what the budget has left, no more. They also
// honour the state's context inside their loops.

// Rough sizes, in bytes, of decoded values, after what the budget counts for
// them (third_party/gopher-lua/budget.go); they bound a decode, the state's
// own measure stays the authority.
const (
	sizeTable    = 96  // a table, array part aside
	sizeHashPart = 256 // the maps of an object
	sizeSlot     = 16  // an array item
	sizeKey      = 160 // an object key
	sizeString   = 16  // a string, its bytes aside
)

// checkEvery is how many values an encode or a decode handles between two
// checks of the state's context.
const checkEvery = 1 << 10

// budget is the room one encode or decode has in its state's memory budget.
type budget struct {
	l        *lua.LState
	room     int // bytes; math.MaxInt when the state has no limit
	measured bool
}

func newBudget(L *lua.LState) budget {
	limit := L.MemoryLimit()
	if limit == 0 {
		return budget{l: L, room: math.MaxInt}
	}
	return budget{l: L, room: int(max(limit-L.MemoryAccounted(), 0))}
}

// fits reports whether n bytes fit in the room. The accounted size counts
// garbage too: the state is measured once before the answer is no.
func (b *budget) fits(n int) bool {
	if n <= b.room {
		return true
	}
	if b.measured || b.room == math.MaxInt {
		return false
	}
	b.measured = true
	b.room = int(max(b.l.MemoryLimit()-b.l.MemoryUsage(), 0))
	return n <= b.room
}

// contextErr returns the error of L's context once it is done.
func contextErr(L *lua.LState) error {
	ctx := L.Context()
	if ctx == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}
