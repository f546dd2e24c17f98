package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const (
	// nodesStream is the JetStream stream behind the nodes bucket, and
	// nodesSubjectPrefix starts the subject of each of its keys.
	nodesStream        = "KV_" + nodesBucket
	nodesSubjectPrefix = "$KV." + nodesBucket + "."

	// memberSettle is how long Join waits, once this node's entry is
	// stored, before it returns and the node mints session ids. So a list
	// of the bucket's keys, or a lookup that found no entry, asked for no
	// earlier than memberSettle before a request arrived, covers every node
	// that could have minted the request's session id: Member shares one
	// list among the requests of that span, and remembers a missing node
	// for as long. Clients can name a new made-up node in every request; this
	// bounds the NATS requests they cause to about one list per
	// memberSettle, instead of one lookup each.
	memberSettle = 100 * time.Millisecond

	// maxAbsent bounds the nodes remembered as missing (Node.absent). Only
	// nodes the bucket lists (real ones, recently left) get there.
	maxAbsent = 256
)

// roster is one list of the keys in the nodes bucket: a node's entry, the
// marker of a node that restarts, or the marker of one that left (until it
// expires with the bucket's TTL).
type roster struct {
	start time.Time     // when it was asked for
	done  chan struct{} // closed once keys or err is set
	keys  map[string]struct{}
	err   error
}

// Member implements [mcp.MemberCluster]: false when node is certainly not in
// the cluster, which a client naming made-up nodes gets without a lookup per
// request. It is true for a node this node forwards to already (known),
// and for one the bucket holds an entry for; false for one the bucket does
// not list, or lists without an entry (it left), in a list or a lookup
// asked for within memberSettle before now (see memberSettle: the node would
// have been in it). When the bucket cannot be read it is true, and Forward
// answers as it does while NATS is unreachable.
func (n *Node) Member(ctx context.Context, node string) bool {
	now := time.Now()
	n.mu.Lock()
	_, known := n.known[node]
	at, absent := n.absent[node]
	n.mu.Unlock()
	if known {
		return true
	}
	if absent && now.Sub(at) < memberSettle {
		return false
	}
	listed, err := n.listed(ctx, node, now)
	if err != nil {
		if ctx.Err() == nil {
			n.warnThrottled(&n.lookupWarn, "cluster: cannot list the nodes: a request naming a node not known is forwarded as before", "node", node, "err", err)
		}
		return true
	}
	if !listed {
		return false
	}
	asked := time.Now()
	p, err := n.peerTo(ctx, node)
	if p == nil && err == nil { // no entry, or one Forward would answer 404 for
		n.markAbsent(node, asked)
		return false
	}
	return true
}

// listed reports whether the bucket lists node, in a list asked for no
// earlier than memberSettle before now: the last one, or a new one (which
// the requests arriving meanwhile share).
func (n *Node) listed(ctx context.Context, node string, now time.Time) (bool, error) {
	n.mu.Lock()
	r := n.roster
	mine := r == nil || now.Sub(r.start) >= memberSettle
	if mine {
		r = &roster{start: time.Now(), done: make(chan struct{})}
		n.roster = r
	}
	n.mu.Unlock()
	if mine {
		// Taken whatever this request's client does: other requests wait
		// for it.
		n.takeRoster(r)
	} else {
		select {
		case <-r.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if r.err != nil {
		return false, r.err
	}
	_, ok := r.keys[node]
	return ok, nil
}

// takeRoster asks the bucket's stream for its keys: one request.
func (n *Node) takeRoster(r *roster) {
	defer close(r.done)
	ctx, cancel := context.WithTimeout(context.Background(), kvTimeout)
	defer cancel()
	info, err := n.stream.Info(ctx, jetstream.WithSubjectFilter(nodesSubjectPrefix+">"))
	if err != nil {
		r.err = fmt.Errorf("cluster: listing the nodes: %w", err)
		return
	}
	r.keys = make(map[string]struct{}, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		r.keys[strings.TrimPrefix(subject, nodesSubjectPrefix)] = struct{}{}
	}
}

// markAbsent remembers that a lookup of node asked for at found no entry.
func (n *Node) markAbsent(node string, at time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.absent) >= maxAbsent {
		for k, t := range n.absent {
			if time.Since(t) >= memberSettle {
				delete(n.absent, k)
			}
		}
		if len(n.absent) >= maxAbsent {
			return
		}
	}
	n.absent[node] = at
}
