package hostlib

import (
	"fmt"

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

// budgetError is the message of a read the budget refused.
func budgetError(L *lua.LState, module string, n int64) error {
	return fmt.Errorf("%s: %d bytes would exceed the script's memory limit (%d MiB)", module, n, L.MemoryLimit()>>20)
}
