package cluster

import (
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions are the options of a node's NATS connection (`serve
// --nats`, and the tests' nodes): named after the node, reconnecting
// forever, once a second.
//
// A push published while NATS is unreachable is dropped at once
// (ReconnectBufSize -1: an unsent push is counted in [Stats.PushesUnsent]
// and the first of an outage logged), rather than kept in nats.go's 8 MiB
// reconnect buffer and sent when the connection returns. That buffer
// would not deliver them late so much as sometimes: it is flushed as soon
// as this node reconnects, when the other nodes may not have their
// subscriptions back yet, so each buffered push would reach some nodes and
// not others, minutes late, after pushes made since. Dropping keeps the
// rule one sentence long: pushes made while NATS is down reach this node's
// sessions only. Clients learn the state again by reading it (the pushes
// are notifications: list_changed, resources/updated, messages), and each
// node sends its own list_changed (hot reload is per node).
func ConnectOptions(nodeID string) []nats.Option {
	return []nats.Option{
		nats.Name("luamcp " + nodeID),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ReconnectBufSize(-1),
	}
}
