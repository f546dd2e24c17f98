package host

import "github.com/luamcp/luamcp/mcp"

// This file is what a Host tells of itself for metrics: the reports of an
// Observer as things happen, and the gauges of RouteStats when asked. The
// host knows nothing of Prometheus (package internal/metrics does).

// An Observer is told what the routes of a Host do (mcp.Observer, through
// the host's mcp.Hub) and what its hot reload does. Its methods must be safe
// for concurrent use, fast, and never block.
type Observer interface {
	mcp.Observer
	// Reloaded reports a change applied to a mounted script (an edit, or a
	// module it requires): ok is false when the new code failed and the
	// running version stays. route is the script's path (the new one when
	// a remount moved it).
	Reloaded(route string, ok bool)
}

// RouteStats are the gauges of one mounted route, read when asked.
type RouteStats struct {
	// Path is the route's mount path.
	Path string
	// Sessions is the route's live sessions.
	Sessions int
	// LuaStates is the Lua states of the route's script open now: pooled,
	// owned by sessions, or lent to a request.
	LuaStates int
	// Running is the script's Lua calls holding a slot of the host's
	// scheduler (--max-running); Queued those waiting for one.
	Running, Queued int
	// StatesRecycled and StatesClosed count the Lua states of the script's
	// ended sessions since it was mounted: given back to its pool as
	// pristine, or closed (luavm.Script.EndedStates).
	StatesRecycled, StatesClosed int64
	// Tasks counts the route's tasks (2026-07-28 tasks extension) by
	// status, in the order of mcp.TaskStatuses: the running ones and those
	// whose results wait for their client.
	Tasks [5]int
}

// Stats returns the gauges of every mounted route, sorted by path. It takes
// the host's lock briefly and never waits for Lua.
func (h *Host) Stats() []RouteStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	mounts := h.sorted()
	stats := make([]RouteStats, len(mounts))
	for i, m := range mounts {
		running, queued := m.script.Calls()
		recycled, closed := m.script.EndedStates()
		stats[i] = RouteStats{
			Path: m.opts.Path, Sessions: m.handler.SessionCount(),
			LuaStates: m.script.LiveStates(), Running: running, Queued: queued,
			StatesRecycled: recycled, StatesClosed: closed, Tasks: m.handler.TaskCounts(),
		}
	}
	return stats
}

// Replay returns the bytes of the events all routes keep for clients to
// read or resume, and the budget that bounds them (0: none; see
// [Config.ReplayBudget]).
func (h *Host) Replay() (kept, budget int64) { return h.hub.ReplayBytes(), h.hub.ReplayBudget() }

// reloaded reports a reload of the script served on route to the observer.
func (h *Host) reloaded(route string, ok bool) {
	if h.cfg.Observer != nil {
		h.cfg.Observer.Reloaded(route, ok)
	}
}
