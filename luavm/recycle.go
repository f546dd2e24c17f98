package luavm

import "errors"

// Recycling. A session takes a fresh state from its pool (one that has only
// run the script's chunk) and, before this, closed it at its end: under churn
// every session paid a build (NewState, libraries, sandbox, the chunk: some
// 50 µs and 340 allocations, plus their garbage). Now a state whose session
// ended (closed, reaped, or hibernated) goes back to the pool's fresh lane
// when, and only when, no script could tell it from a state just built:
//
//   - When the pool builds a state, once the chunk has run, it records a
//     baseline (lua.LState.NewBaseline): every table, upvalue, Lua function
//     and userdata Lua can reach from the state's roots (globals, registry,
//     string metatable) and from the Lua values Go keeps and lends to Lua
//     (the server module, package.loaded, the mcp module's tables, mcp.null
//     and the array/object markers). Recording clears each table's Touched
//     flag and each upvalue's written flag; the patched gopher-lua sets them
//     on every write, and nothing else clears them (the rollback mirror and
//     the list index clear flags of their own).
//   - When the session ends, the state is pristine if no recorded table was
//     written (a global, a library or module table, a table a module-level
//     local holds, a metatable), no recorded upvalue assigned (a
//     module-level local), no environment or metatable replaced, the state
//     is idle (no Lua running, no call frame, no live ctx, no module being
//     required), and it held no coroutine when it was recorded. The check is
//     a read of a few dozen flags.
//   - Everything a session created is then unreachable from anything Lua can
//     reach: it could only be reached through a recorded table or upvalue
//     (written, so refused), the value stack (emptied) or Go (the rollback
//     mirror and the list caches, which recycling drops). So the state is,
//     to any script, the state the chunk left, and its memory budget's count
//     is put back to what it was then.
//
// Anything else closes the state, as before. A script that keeps anything at
// module level across calls (count = count + 1 on a module-level local, a
// cache table) simply has its states closed: correctness first. Host
// resources are per call (HTTP bodies, processes, files, timers all end with
// the call that made them), and subscriptions and channel membership live in
// the transport, keyed by session, not in the state.
//
// A recycled state goes back to the pool of the version that built it: after
// a reload that pool is closed, and closes it. It joins the fresh lane while
// the lane has room (its capacity, the bound of its depth); the lane's
// shrinking closes the states past its depth after a quiet spell.

// An ending is what became of the state of a session that ended.
type ending int

const (
	recycledState ending = iota // back in the fresh lane
	closedState                 // closed
	numEndings
)

// errNotRecorded is the refusal of a state built without a baseline (a
// check's or Prepare's own state before the pool took it).
var errNotRecorded = errors.New("no baseline recorded")

// errBusy is the refusal of a state with work in progress, or lent as a
// spare (its isolation snapshot is not a baseline).
var errBusy = errors.New("the state is in use, broken or was lent as a spare")

// record takes v's baseline. It runs once the state is built and granted,
// off the request path (in the pool's fillers).
func (v *vm) record() {
	roots := append(v.mod.Roots(), v.module, v.loaded)
	v.base = v.L.NewBaseline(roots...)
}

// recycle makes v fresh again for the next session if it is pristine, and
// reports why not otherwise (v is then left as it is, for close).
func (v *vm) recycle() error {
	switch {
	case v.base == nil:
		return errNotRecorded
	case v.closed || v.broken || v.globals != nil || v.run.ctx != nil ||
		len(v.loading) != 0 || !v.mod.Idle():
		return errBusy
	}
	if err := v.base.Pristine(v.L); err != nil {
		return err
	}
	v.base.Reset(v.L)
	// What Go kept for the last session: its state's rollback copy and the
	// lists its lookups found.
	v.mirror = nil
	for i := range v.lists {
		v.lists[i].reset()
	}
	return nil
}

// baselineSize reports what v's baseline recorded (tests).
func (v *vm) baselineSize() (tables, upvalues, functions int) {
	if v.base == nil {
		return 0, 0, 0
	}
	return v.base.Size()
}
