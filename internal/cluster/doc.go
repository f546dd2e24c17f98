// Package cluster joins luamcp processes ("nodes") through NATS: an
// [mcp.PubSub] whose publishes reach every node ([PubSub]), node ids
// ([ValidNodeID], [DefaultNodeID]), and an embedded NATS server for a
// single-machine dev cluster ([StartEmbedded]).
//
// Delivery on the bus is at most once: a node that is disconnected from NATS
// keeps delivering its own publishes to its own sessions and logs a warning;
// Last-Event-ID replay stays in the owning node's ring.
package cluster
