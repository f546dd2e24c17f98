package cluster

import "sync/atomic"

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
	// Connected reports whether the NATS connection is up now.
	Connected bool
	// Reconnects counts the times the connection came back.
	Reconnects uint64
}

// pushCounts are the push counters of a PubSub or a Node.
type pushCounts struct {
	sent, received atomic.Uint64
}
