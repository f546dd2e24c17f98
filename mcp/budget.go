package mcp

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
)

// DefaultReplayBudget is the bytes of kept events a Hub starts with (see
// [Hub.SetReplayBudget]).
const DefaultReplayBudget = 256 << 20

// replayBudget bounds the bytes that the replay buffers of every route of a
// hub keep at once: GET channels, subscriptions/listen streams and resumable
// POST streams. Each buffer has bounds of its own (SessionBufferMax,
// SessionBufferBytes), but they multiply: at the default caps 10,000
// sessions could each keep 4 MiB of unread channel events and 4 MiB of POST
// streams, and 10,000 listens 4 MiB each. The budget bounds the sum.
//
// Past it, the buffer that is growing gives way, never another: a push
// evicts its own stream's oldest events (a POST stream first forgets its
// session's older streams, as past SessionBufferBytes), down to its newest
// event, which is always kept so that a live reader can send it. The sum
// may therefore exceed max by one event per stream. Only the stream that
// pushes takes a lock: the count is atomic, so no push waits for another
// stream's.
type replayBudget struct {
	// n is the bytes kept now: a push stream's ring charges what it keeps
	// and evicts (eventRing.budget), a session what its POST streams keep
	// (keptGrew, forgetStreamLocked); each gives everything back when it
	// ends.
	n atomic.Int64
	// max bounds n; 0 means no bound.
	max atomic.Int64
	// log and warned report, at most once per logcap.Every, that the
	// budget made a stream give events up.
	log    *slog.Logger
	warned logcap.Throttle
}

// charge counts n more bytes kept (fewer when negative). A nil budget
// counts nothing.
func (b *replayBudget) charge(n int) {
	if b != nil && n != 0 {
		b.n.Add(int64(n))
	}
}

// over reports whether the bytes kept exceed the budget.
func (b *replayBudget) over() bool {
	if b == nil {
		return false
	}
	m := b.max.Load()
	return m > 0 && b.n.Load() > m
}

// gaveWay logs, throttled, that a stream gave up kept events to the budget.
func (b *replayBudget) gaveWay() {
	if ok, held := b.warned.Allow(time.Now(), logcap.Every); ok {
		b.log.Warn("mcp: the replay budget is spent: streams pushed to give up their oldest kept events, which resuming clients miss",
			"budget_bytes", b.max.Load(), "kept_bytes", b.n.Load(), "unlogged_since_last", held)
	}
}

// SetReplayBudget bounds the bytes of the events that every route served
// with this hub keeps for clients to read or resume (GET channels,
// subscriptions/listen streams, resumable POST streams),
// [DefaultReplayBudget] at first; n <= 0 means no bound. Past it a stream
// that is pushed to evicts its own oldest events first; events of other
// streams stay. Events kept past a lowered budget stay until their streams
// push again.
func (h *Hub) SetReplayBudget(n int64) { h.replay.max.Store(max(n, 0)) }

// ReplayBytes returns the bytes of the events the routes served with this
// hub keep now, under the budget of [Hub.SetReplayBudget].
func (h *Hub) ReplayBytes() int64 { return h.replay.n.Load() }

// ReplayBudget returns the bound of [Hub.SetReplayBudget]; 0 means none.
func (h *Hub) ReplayBudget() int64 { return h.replay.max.Load() }
