package cluster

import (
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/luamcp/luamcp/mcp"
)

// originHeader names the node that published a message, so that it is not
// delivered twice on that node (once locally, once from the bus). With a key
// every signed message carries it: it is the signer whose sequence numbers
// the receivers track (replay.go).
const originHeader = "Luamcp-Node"

// PubSub is an [mcp.PubSub] spanning every node connected to one NATS
// system. Subscribers stay local: Publish delivers to this node's
// subscribers at once and sends the message to the other nodes, which
// deliver it to theirs. It never echoes a node's own publish back to it.
type PubSub struct {
	local *mcp.LocalPubSub
	nc    *nats.Conn
	node  string
	log   *slog.Logger
	sub   *nats.Subscription
	count pushCounts
	sig   *signer // nil: messages neither signed nor checked
	// seen refuses the messages sub accepted already (replays).
	seen replayGuard
}

// NewPubSub returns a PubSub for node on nc. Every node receives every
// channel's messages (one wildcard subscription) and drops those of
// channels none of its sessions joined: pushes fan out to every node anyway,
// and a subscription made once, before any session, cannot miss a push that
// follows a session's subscribe (a per-channel NATS subscription could: the
// server learns of it asynchronously). Close it before nc.
func NewPubSub(nc *nats.Conn, node string, logger *slog.Logger) (*PubSub, error) {
	return newPubSub(nc, node, logger, nil)
}

// newPubSub is NewPubSub whose messages are signed and checked with sig (a
// [Node]'s).
func newPubSub(nc *nats.Conn, node string, logger *slog.Logger, sig *signer) (*PubSub, error) {
	if err := ValidNodeID(node); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	p := &PubSub{local: mcp.NewLocalPubSub(), nc: nc, node: node, log: logger, sig: sig}
	sub, err := nc.Subscribe(pubsubPrefix+">", p.receive)
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribing to the pubsub subjects: %w", err)
	}
	p.sub = sub
	return p, nil
}

// Subscribe implements [mcp.PubSub].
func (p *PubSub) Subscribe(channel string, s mcp.Subscriber) { p.local.Subscribe(channel, s) }

// Unsubscribe implements [mcp.PubSub].
func (p *PubSub) Unsubscribe(channel string, s mcp.Subscriber) { p.local.Unsubscribe(channel, s) }

// Publish implements [mcp.PubSub]. When NATS is unreachable the message still
// reaches this node's subscribers; the other nodes miss it (at most once;
// with [ConnectOptions] it is not kept for later).
func (p *PubSub) Publish(channel string, msg []byte) {
	p.local.Publish(channel, msg)
	m := &nats.Msg{Subject: channelSubject(channel), Data: msg, Header: nats.Header{originHeader: []string{p.node}}}
	p.sig.sign(m)
	if err := p.nc.PublishMsg(m); err != nil {
		p.count.failed(p.log, "cluster: push not sent to the other nodes", "node", p.node, "err", err)
		return
	}
	p.count.sent.Add(1)
}

// receive delivers a message of another node to this node's subscribers.
func (p *PubSub) receive(m *nats.Msg) {
	if m.Header.Get(originHeader) == p.node {
		return
	}
	if !p.sig.checked(m, &p.seen, p.log, p.node) {
		return
	}
	p.count.received.Add(1)
	channel, err := subjectChannel(m.Subject)
	if err != nil {
		p.log.Warn("cluster: message dropped", "err", err)
		return
	}
	p.local.Publish(channel, m.Data)
}

// Close stops receiving the other nodes' messages.
func (p *PubSub) Close() error {
	if err := p.sub.Unsubscribe(); err != nil && err != nats.ErrConnectionClosed {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}
