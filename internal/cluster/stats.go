package cluster

import (
	"log/slog"
	"sync/atomic"
)

// Stats is what a node did on NATS since it joined, and the state of its
// connection ([Node.Stats]): the figures of `serve --metrics-addr`.
type Stats struct {
	// PushesSent counts the messages this node published for the others:
	// broadcasts, resource updates and list_changed ([PubSub]), and
	// Notify/Log for their sessions ([Node.Send]). Published is not
	// delivered: NATS may drop them (at most once).
	PushesSent uint64
	// PushesReceived counts the messages of other nodes this node got
	// (its own echoes excluded; those of channels none of its sessions
	// joined included).
	PushesReceived uint64
	// PushesUnsent counts the pushes for the other nodes that could not be
	// published: NATS was unreachable (they are dropped at once, see
	// [ConnectOptions]).
	PushesUnsent uint64
	// Connected reports whether the NATS connection is up now.
	Connected bool
	// Reconnects counts the times the connection came back.
	Reconnects uint64
	// LinksOut counts the links open from this node to others (it forwards
	// POSTs and DELETEs on them), LinksIn those open from others to it.
	LinksOut, LinksIn int64
}

// pushCounts are the push counters of a PubSub or a Node.
type pushCounts struct {
	sent, received, unsent atomic.Uint64
	// warned is set once an unsent push was logged, until NATS returns:
	// one warning per outage, not one per push.
	warned atomic.Bool
}

// failed counts a push that could not be published, and logs the first of
// an outage.
func (c *pushCounts) failed(log *slog.Logger, msg string, args ...any) {
	c.unsent.Add(1)
	if !c.warned.Swap(true) {
		log.Warn(msg+" (further ones are counted, not logged, until NATS returns)", args...)
	}
}
