package hostlib

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"
)

// The modules that read from the world (http bodies, files, a child's
// output) read into Go memory first, where the state's memory budget cannot
// see them. So each reader clamps what it reads to the room the budget has
// left, and charges what it hands to Lua: under a 64 MiB route limit a
// script cannot make the host read a 1 GiB body for it, whatever its
// max_bytes says.

// room returns how many more bytes, up to want, L's memory budget holds;
// want when the state has no limit. The accounting may count garbage, so
// when it shows less than want the state is measured (a walk of what it
// holds). It runs on L's goroutine.
func room(L *lua.LState, want int64) int64 {
	limit := L.MemoryLimit()
	if limit == 0 {
		return want
	}
	free := limit - L.MemoryAccounted()
	if free < want {
		free = limit - L.MemoryUsage()
	}
	return min(max(free, 0), want)
}

// keep charges n bytes that are about to become a Lua value of L. Past the
// budget it returns an error naming the module and the limit, which the
// caller returns to the script as its message (nil, message): the script
// may ask again for less.
func keep(L *lua.LState, module string, n int) error {
	if L.ReserveMemory(n) != nil {
		return budgetError(L, module, int64(n))
	}
	return nil
}

// sizeKey is what one key of a table's hash part costs, as the budget counts
// it (sizeHashKey in gopher-lua's budget.go), besides its bytes and value:
// tables filled from Go with RawSetString are not charged for their keys.
const sizeKey = 160

// keepString charges s, built for L, and pushes it. Past the budget it
// raises: for the functions that have no failure result.
func keepString(L *lua.LState, module, s string) {
	if err := keep(L, module, len(s)); err != nil {
		L.RaiseError("%v", err)
	}
	L.Push(lua.LString(s))
}

// budgetError is the message of a read the budget refused.
func budgetError(L *lua.LState, module string, n int64) error {
	return fmt.Errorf("%s: %d bytes would exceed the script's memory limit (%d MiB)", module, n, L.MemoryLimit()>>20)
}

// A share is room of a state's memory budget (see room) that bodies read in
// Go draw on as they arrive: the requests of one http.request_all run at
// once, and together must not hold more than the budget had left, whatever
// each one's max_bytes says. A body that fails gives its bytes back.
type share struct{ n atomic.Int64 }

func newShare(n int64) *share {
	s := new(share)
	s.n.Store(n)
	return s
}

// left is what the share still holds.
func (s *share) left() int64 { return s.n.Load() }

// take draws n bytes from the share; false, drawing nothing, when fewer
// are left.
func (s *share) take(n int64) bool {
	for {
		left := s.n.Load()
		if n > left {
			return false
		}
		if s.n.CompareAndSwap(left, left-n) {
			return true
		}
	}
}

// give returns n bytes drawn before.
func (s *share) give(n int64) { s.n.Add(n) }

// Why readBody stopped short.
var (
	errTooLarge = errors.New("larger than its max_bytes")
	errNoRoom   = errors.New("past the memory budget")
)

// readChunk is the most readBody reads before drawing on its share again.
const readChunk = 32 << 10

// readBody reads r whole, at most limit bytes, drawing them from room: a
// body of known size (size >= 0) draws it at once, into a buffer of that
// size; one of unknown size draws each part as it arrives, into a buffer
// that grows by doubling (as io.ReadAll's, so it holds at most twice what
// was drawn). On an error it gives back what it drew and returns
// errTooLarge, errNoRoom or the read's error.
func readBody(r io.Reader, size, limit int64, room *share) (b []byte, err error) {
	var drawn int64
	defer func() {
		if err != nil {
			room.give(drawn)
			b = nil
		}
	}()
	switch {
	case size > limit:
		return nil, errTooLarge
	case size >= 0:
		if !room.take(size) {
			return nil, errNoRoom
		}
		drawn = size
		b = make([]byte, 0, size+1) // +1: the read that finds the end
	default:
		b = make([]byte, 0, min(512, limit+1))
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, rerr := r.Read(b[len(b):min(cap(b), len(b)+readChunk)])
		if n > 0 {
			total := int64(len(b) + n)
			if total > limit {
				return b, errTooLarge
			}
			if total > drawn {
				if !room.take(total - drawn) {
					return b, errNoRoom
				}
				drawn = total
			}
			b = b[:len(b)+n]
		}
		if rerr == io.EOF {
			return b, nil
		}
		if rerr != nil {
			return b, rerr
		}
	}
}

// checkEvery is how many items a loop that builds a result from a script's
// values handles between two checks of the call's context: the VM checks it
// only between instructions, and one such call can run for seconds.
const checkEvery = 4096

// checkContext raises the error of L's context once the call is cancelled
// (timeout, client gone, shutdown), as the patched string library does.
func checkContext(L *lua.LState) {
	if ctx := L.Context(); ctx != nil {
		if err := ctx.Err(); err != nil {
			L.RaiseError("%s", err.Error())
		}
	}
}

// pastLimit reports whether n bytes could never fit in L's budget, whatever
// it holds: a loop adding up the size of a result stops there, before a
// walk of the state (room) is worth it.
func pastLimit(L *lua.LState, n int64) bool {
	limit := L.MemoryLimit()
	return limit > 0 && n > limit
}
