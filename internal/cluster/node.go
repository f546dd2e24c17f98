package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/mcp"
)

const (
	// nodesBucket is the KV bucket of node addresses: key node id, value
	// the node's advertised URL.
	nodesBucket = "luamcp_nodes"
	// nodePrefix starts the subject of one node's pushes (Notify and Log
	// for its sessions, sent by the others).
	nodePrefix = "luamcp.node."
	// leftSubject carries the id of a node that leaves ([Node.Close]), so
	// that the others forget its address at once.
	leftSubject = "luamcp.left"
	// addrCacheTTL is how long a node trusts an address it looked up
	// before it asks the bucket again: a forward costs no NATS round trip
	// then. A node that leaves says so (leftSubject); one that crashed is
	// unreachable, which answers 404 as its absence from the bucket would,
	// and is forgotten.
	addrCacheTTL = time.Second
	// DefaultHeartbeat is how often a node renews its address; the bucket
	// forgets an address after 3 heartbeats.
	DefaultHeartbeat = 5 * time.Second
	// kvTimeout bounds one KV operation.
	kvTimeout = 2 * time.Second
)

// Config says how a node joins the cluster.
type Config struct {
	// Conn is the NATS connection; the node does not close it.
	Conn *nats.Conn
	// NodeID names this node ([ValidNodeID]).
	NodeID string
	// Advertise is the URL at which the other nodes reach this node's
	// HTTP listener (http:// or https://).
	Advertise string
	// Heartbeat is how often the address is renewed (0: DefaultHeartbeat).
	Heartbeat time.Duration
	// RootCAs are the authorities an https:// node's certificate must chain
	// to when this node forwards to it; nil: the system's roots. A cluster
	// whose nodes carry certificates of a private authority sets it, rather
	// than replacing the process's roots (SSL_CERT_FILE), which the scripts'
	// http module and the oauth key fetches need.
	RootCAs *x509.CertPool
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// Key is a secret every node of the cluster holds (serve passes its
	// state key): the node signs what it publishes on NATS and its entry in
	// the bucket with a key derived from it, and ignores messages and
	// entries not signed with it (sign.go). nil: nothing signed nor checked,
	// for tests and a NATS server no one else can reach.
	Key []byte
}

// Node is one luamcp process's membership of a cluster. It implements
// [mcp.Cluster]: its address is kept in the KV bucket while it lives,
// requests for other nodes' sessions are forwarded to their addresses,
// and pushes for them go to their subjects. Its PubSub carries broadcasts.
type Node struct {
	id, advertise string
	nc            *nats.Conn
	js            jetstream.JetStream
	kvCfg         jetstream.KeyValueConfig
	kv            jetstream.KeyValue
	stream        jetstream.Stream // the bucket's, listed by Member
	ps            *PubSub
	log           *slog.Logger
	roots         *x509.CertPool // Config.RootCAs
	sig           *signer        // Config.Key; nil: none
	sub           *nats.Subscription
	count         pushCounts   // Send and receive; the PubSub counts its own
	linksOut      atomic.Int64 // links open to other nodes (Stats)
	linksIn       atomic.Int64 // links open from other nodes (Stats)

	// seenPush and seenLeft refuse the messages sub and left accepted
	// already (replays): one guard per subscription, as NATS keeps a
	// publisher's order per subscription only (replay.go).
	seenPush, seenLeft replayGuard

	// deliver hands a push from another node to the hub (Attach); nil
	// before, and pushes arriving then are dropped.
	deliver atomic.Pointer[func([]byte)]

	mu sync.Mutex
	// known holds the last address the bucket gave for each node, when,
	// and the forwarder to it: trusted for addrCacheTTL, and used after that
	// while NATS is unreachable; a node the bucket says is gone, that
	// left or that could not be reached is removed.
	known map[string]knownAddr
	// roster is the last list of the bucket's keys Member asked for, and
	// absent the nodes a lookup found no entry for, and when it was asked
	// for (members.go).
	roster *roster
	absent map[string]time.Time
	left   *nats.Subscription // leftSubject
	// sign signs the opening of links (SignLinks): peers made after it is
	// set forward POSTs and DELETEs on links.
	sign SignFunc

	stop chan struct{}  // closed by Close: ends the heartbeat
	done sync.WaitGroup // the heartbeat
	// leaving makes leaving happen once: a later Close or CloseForRestart
	// returns nil.
	leaving sync.Once

	// lookupWarn, unreachableWarn and forgottenWarn space Forward's
	// warnings, one kind each: any client can send request after request
	// with a session id naming a node that cannot be looked up (NATS down)
	// or reached (gone, a bad --advertise), and each would be a warning.
	lookupWarn, unreachableWarn, forgottenWarn logcap.Throttle
}

// warnThrottled logs a warning of Forward through t: the first failure at
// once, then one line per logcap.Every saying how many went unlogged since.
func (n *Node) warnThrottled(t *logcap.Throttle, msg string, args ...any) {
	if ok, held := t.Allow(time.Now(), logcap.Every); ok {
		n.log.Warn(msg, append(args, "unlogged_since_last", held)...)
	}
}

// Join registers this node's address and starts its heartbeat, pushes
// subscription and PubSub. It sets the connection's disconnect and reconnect
// handlers, to log them. Close leaves.
func Join(ctx context.Context, cfg Config) (*Node, error) {
	if err := ValidNodeID(cfg.NodeID); err != nil {
		return nil, err
	}
	if u, err := url.Parse(cfg.Advertise); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cluster: the advertised address must be an http:// or https:// URL, not %q", cfg.Advertise)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("cluster: JetStream: %w", err)
	}
	kvCfg := jetstream.KeyValueConfig{Bucket: nodesBucket, Description: "luamcp node addresses", TTL: 3 * cfg.Heartbeat}
	kv, err := js.CreateOrUpdateKeyValue(ctx, kvCfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: the %s bucket (the NATS server needs JetStream): %w", nodesBucket, err)
	}
	n := &Node{
		id: cfg.NodeID, advertise: cfg.Advertise, nc: cfg.Conn, js: js, kvCfg: kvCfg, kv: kv, log: cfg.Logger, roots: cfg.RootCAs, sig: newSigner(cfg.Key, cfg.NodeID),
		known: make(map[string]knownAddr), absent: make(map[string]time.Time), stop: make(chan struct{}),
	}
	if n.stream, err = js.Stream(ctx, nodesStream); err != nil {
		return nil, fmt.Errorf("cluster: the %s bucket's stream: %w", nodesBucket, err)
	}
	if err := n.register(ctx); err != nil {
		return nil, err
	}
	registered := time.Now()
	if n.ps, err = newPubSub(cfg.Conn, n.id, n.log, n.sig); err != nil {
		_ = kv.Delete(ctx, n.id)
		return nil, err
	}
	if n.sub, err = cfg.Conn.Subscribe(nodePrefix+n.id, n.receive); err != nil {
		_ = kv.Delete(ctx, n.id)
		n.ps.Close()
		return nil, fmt.Errorf("cluster: subscribing to %s: %w", nodePrefix+n.id, err)
	}
	if n.left, err = cfg.Conn.Subscribe(leftSubject, func(m *nats.Msg) {
		if n.sig.checked(m, &n.seenLeft, n.log, n.id) {
			n.forget(string(m.Data))
		}
	}); err != nil {
		_ = kv.Delete(ctx, n.id)
		n.sub.Unsubscribe()
		n.ps.Close()
		return nil, fmt.Errorf("cluster: subscribing to %s: %w", leftSubject, err)
	}
	cfg.Conn.SetErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		n.log.Warn("cluster: NATS error: pushes from other nodes may be lost", "node", n.id, "subject", subject, "err", err)
	})
	cfg.Conn.SetDisconnectErrHandler(func(nc *nats.Conn, err error) {
		if nc.IsClosed() {
			return // closed on purpose, at shutdown
		}
		n.log.Warn("cluster: NATS disconnected: pushes reach this node's sessions only until it returns", "node", n.id, "err", err)
	})
	cfg.Conn.SetReconnectHandler(func(nc *nats.Conn) {
		n.count.warned.Store(false)
		n.ps.count.warned.Store(false)
		n.log.Info("cluster: NATS reconnected", "node", n.id, "url", nc.ConnectedUrlRedacted())
	})
	// Once Join returns the other nodes can reach this one: the server
	// has its subscriptions.
	if err := cfg.Conn.FlushTimeout(kvTimeout); err != nil {
		n.log.Warn("cluster: NATS did not confirm this node's subscriptions", "node", n.id, "err", err)
	}
	// No session id naming this node exists before memberSettle has passed
	// since its entry was stored: the other nodes rely on it to share one
	// list of the nodes among the requests of that span (Member).
	time.Sleep(time.Until(registered.Add(memberSettle)))
	n.done.Add(1)
	go n.heartbeat(cfg.Heartbeat)
	return n, nil
}

// NodeID implements [mcp.Cluster].
func (n *Node) NodeID() string { return n.id }

// PubSub is the node's [mcp.PubSub].
func (n *Node) PubSub() *PubSub { return n.ps }

// Attach implements [mcp.Cluster].
func (n *Node) Attach(deliver func(push []byte)) { n.deliver.Store(&deliver) }

// Send implements [mcp.Cluster].
func (n *Node) Send(node string, push []byte) {
	m := &nats.Msg{Subject: nodePrefix + node, Data: push}
	n.sig.sign(m)
	if err := n.nc.PublishMsg(m); err != nil {
		n.count.failed(n.log, "cluster: push for another node's session not sent", "node", n.id, "to", node, "err", err)
		return
	}
	n.count.sent.Add(1)
}

func (n *Node) receive(m *nats.Msg) {
	if !n.sig.checked(m, &n.seenPush, n.log, n.id) {
		return
	}
	n.count.received.Add(1)
	if d := n.deliver.Load(); d != nil {
		(*d)(m.Data)
	}
}

// heartbeat renews the address until Close.
func (n *Node) heartbeat(every time.Duration) {
	defer n.done.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		err := n.renew()
		switch {
		case err != nil && !failing:
			n.log.Warn("cluster: cannot renew this node's address: other nodes will answer 404 for its sessions once it expires", "err", err)
		case err == nil && failing:
			n.log.Info("cluster: node address renewed again")
		}
		failing = err != nil
	}
}

// register claims the node id in the bucket. An id another address holds is
// refused: two nodes with one id would take each other's sessions. The same
// address may hold it already (the node restarted before its entry expired),
// or the marker of its restart (CloseForRestart).
func (n *Node) register(ctx context.Context) error {
	_, err := n.kv.Create(ctx, n.id, n.sig.entry(n.id, n.advertise))
	if !errors.Is(err, jetstream.ErrKeyExists) {
		if err != nil {
			return fmt.Errorf("cluster: registering node %s: %w", n.id, err)
		}
		return nil
	}
	e, err := n.kv.Get(ctx, n.id)
	var addr string
	signed := false
	if err == nil {
		addr, signed = n.sig.address(n.id, e.Value())
		if !signed {
			// Not written by a node of this cluster: taken over.
			n.log.Warn("cluster: this node's entry in the bucket was not signed by a node of this cluster: replaced", "node", n.id)
		}
	}
	switch {
	case err == nil && signed && addr != n.advertise && addr != restartingAddr: // the id's own restart is taken over
		return fmt.Errorf("cluster: node id %s is in use by the node at %s: give each node its own id", n.id, addr)
	case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
		return fmt.Errorf("cluster: registering node %s: %w", n.id, err)
	}
	if _, err := n.kv.Put(ctx, n.id, n.sig.entry(n.id, n.advertise)); err != nil {
		return fmt.Errorf("cluster: registering node %s: %w", n.id, err)
	}
	return nil
}

// renew puts this node's address again. A NATS server restarted without
// its storage has lost the bucket: renew creates it again (the KeyValue handle
// names the bucket, so it works again too).
func (n *Node) renew() error {
	ctx, cancel := context.WithTimeout(context.Background(), kvTimeout)
	defer cancel()
	_, err := n.kv.Put(ctx, n.id, n.sig.entry(n.id, n.advertise))
	if err == nil || n.nc.Status() != nats.CONNECTED {
		return err
	}
	if _, cerr := n.js.CreateOrUpdateKeyValue(ctx, n.kvCfg); cerr != nil {
		return errors.Join(err, cerr)
	}
	_, err = n.kv.Put(ctx, n.id, n.sig.entry(n.id, n.advertise))
	return err
}

// peerTo returns the forwarder to node's advertised address, nil when the
// cluster says it is gone. While NATS is unreachable it uses the last
// address it knew.
func (n *Node) peerTo(ctx context.Context, node string) (*peer, error) {
	n.mu.Lock()
	k, ok := n.known[node]
	n.mu.Unlock()
	if ok && time.Since(k.at) < addrCacheTTL {
		return k.peer, nil
	}
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	e, err := n.kv.Get(ctx, node)
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case err == nil:
		addr, signed := n.sig.address(node, e.Value())
		if !signed {
			// Written by a NATS client without the cluster's key: this
			// node would send its clients' requests (their tokens) there.
			if n.sig.shouldWarn() {
				n.log.Warn("cluster: a node's entry in the bucket is not signed by a node of this cluster: ignored, as if the node were gone (another NATS client writes the bucket, or the node has another state key)", "node", node)
			}
			n.forgetLocked(node)
			return nil, nil
		}
		if addr == restartingAddr {
			n.forgetLocked(node)
			return nil, errRestarting
		}
		k := n.known[node]
		if k.peer == nil || k.url != addr {
			p, err := newPeer(node, addr, n.roots)
			if p != nil {
				p.sign, p.log, p.linksOpen = n.sign, n.log, &n.linksOut
			}
			if err != nil {
				n.log.Warn("cluster: node has a bad address", "node", node, "addr", addr, "err", err)
				n.forgetLocked(node)
				return nil, nil
			}
			if k.peer != nil {
				k.peer.close() // the node moved
			}
			k = knownAddr{url: addr, peer: p}
		}
		k.at = time.Now()
		n.known[node] = k
		return k.peer, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		n.forgetLocked(node)
		return nil, nil
	}
	if k, ok := n.known[node]; ok {
		return k.peer, nil
	}
	return nil, fmt.Errorf("cluster: looking up node %s: %w", node, err)
}

// restartingAddr stands in the bucket for the address of a node that
// restarts (CloseForRestart): it saved its sessions and brings them back
// when it is up again, so the others answer 503 for them meanwhile, not 404
// (a client drops a session it is told is gone). The entry expires like an
// address that is not renewed: a node that does not come back within the
// bucket's TTL is gone. A URL has no such form.
const restartingAddr = "restarting"

// errRestarting is the lookup of a node that restarts.
var errRestarting = errors.New("cluster: the node restarts")

// knownAddr is an address the bucket gave, when, and the forwarder to it.
type knownAddr struct {
	url  string
	at   time.Time
	peer *peer
}

// forget drops the address of node and closes its idle connections: it
// left, or could not be reached; the next forward asks the bucket.
func (n *Node) forget(node string) {
	n.mu.Lock()
	n.forgetLocked(node)
	n.mu.Unlock()
}

// forgetPeer forgets node when p is still its forwarder: a request that
// failed on a peer already replaced (the node was looked up again since)
// does not close the new one, with the requests starting on it.
func (n *Node) forgetPeer(node string, p *peer) {
	n.mu.Lock()
	if k, ok := n.known[node]; ok && k.peer == p {
		n.forgetLocked(node)
	}
	n.mu.Unlock()
}

func (n *Node) forgetLocked(node string) {
	if k, ok := n.known[node]; ok {
		k.peer.close()
		delete(n.known, node)
	}
}

// Forward implements [mcp.Cluster]: it sends r to node and copies the answer
// back as it arrives (event streams flushed at every read), over a pool of
// kept-alive connections to that node ([peer.forward]). A node the bucket no
// longer lists, or that cannot be reached, is gone: 404, and the client
// initializes a new session, as the spec says. A POST's body is expected
// read already (mcp's handler bounds it and hands it over in memory): it
// goes in the same write as the request's head.
func (n *Node) Forward(w http.ResponseWriter, r *http.Request, node string, stop <-chan struct{}) {
	var p *peer
	var err error
	// A peer closed under this forward (the node forgotten meanwhile) sent
	// nothing: look the node up again, a few times, rather than answer 404
	// for a node the bucket may still list (TestForwardRacesForget).
	for try := 0; ; try++ {
		p, err = n.peerTo(r.Context(), node)
		if errors.Is(err, errRestarting) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err != nil {
			n.warnThrottled(&n.lookupWarn, "cluster: request not forwarded", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if p == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		err = p.forward(w, r, stop)
		if !errors.Is(err, errPeerClosed) || try == 2 || r.Context().Err() != nil || closed(stop) {
			break
		}
	}
	switch {
	case err == nil, r.Context().Err() != nil: // answered, or the client left
	case closed(stop):
		w.WriteHeader(http.StatusServiceUnavailable) // this node stops before the owner answered
	case errors.Is(err, errBadRequest):
		w.WriteHeader(http.StatusBadRequest)
	case errors.Is(err, errPeerClosed):
		// Forgotten again and again while this request waited: the node
		// comes and goes; it may hold the session still.
		n.warnThrottled(&n.forgottenWarn, "cluster: the node owning a session was forgotten while a request waited for it: answering 503", "node", node, "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		n.forgetPeer(node, p)
		n.warnThrottled(&n.unreachableWarn, "cluster: the node owning a session cannot be reached: answering 404", "node", node, "err", err)
		w.WriteHeader(http.StatusNotFound)
	}
}

// closed reports whether c is closed (nil: never).
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Stats reports the node's pushes and its NATS connection.
func (n *Node) Stats() Stats {
	return Stats{
		PushesSent:     n.count.sent.Load() + n.ps.count.sent.Load(),
		PushesReceived: n.count.received.Load() + n.ps.count.received.Load(),
		PushesUnsent:   n.count.unsent.Load() + n.ps.count.unsent.Load(),
		Connected:      n.nc.IsConnected(),
		Reconnects:     n.nc.Stats().Reconnects,
		LinksOut:       n.linksOut.Load(),
		LinksIn:        n.linksIn.Load(),
	}
}

// Close leaves the cluster: the heartbeat stops, the address is removed (the
// other nodes answer 404 for this node's sessions at once), and no more
// messages are received. It does not close the NATS connection.
func (n *Node) Close() error { return n.leave(false) }

// CloseForRestart is Close for a node that saved its sessions and will
// bring them back (serve --sessions-file): its entry in the bucket says it
// restarts (restartingAddr), and the other nodes answer 503 for its sessions
// until it is back or the entry expires, rather than 404.
func (n *Node) CloseForRestart() error { return n.leave(true) }

func (n *Node) leave(restarting bool) (err error) {
	n.leaving.Do(func() { err = n.leaveOnce(restarting) })
	return err
}

func (n *Node) leaveOnce(restarting bool) error {
	close(n.stop)
	n.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), kvTimeout)
	defer cancel()
	var err error
	if restarting {
		if _, err = n.kv.Put(ctx, n.id, n.sig.entry(n.id, restartingAddr)); err != nil {
			err = fmt.Errorf("cluster: marking node %s as restarting: %w", n.id, err)
		}
	} else if err = n.kv.Delete(ctx, n.id); err != nil {
		err = fmt.Errorf("cluster: removing node %s: %w", n.id, err)
	}
	// The others may hold the address for addrCacheTTL: tell them.
	left := &nats.Msg{Subject: leftSubject, Data: []byte(n.id)}
	n.sig.sign(left)
	if perr := n.nc.PublishMsg(left); perr != nil && !errors.Is(perr, nats.ErrConnectionClosed) {
		err = errors.Join(err, fmt.Errorf("cluster: announcing that node %s leaves: %w", n.id, perr))
	}
	for _, sub := range []*nats.Subscription{n.sub, n.left} {
		if uerr := sub.Unsubscribe(); uerr != nil && !errors.Is(uerr, nats.ErrConnectionClosed) {
			err = errors.Join(err, uerr)
		}
	}
	n.mu.Lock()
	for node := range n.known {
		n.forgetLocked(node)
	}
	n.mu.Unlock()
	return errors.Join(err, n.ps.Close())
}

var _ mcp.Cluster = (*Node)(nil)
