// Package localcluster runs luamcp nodes joined by NATS inside one process,
// each on its own 127.0.0.1 listener, and a round-robin proxy without
// stickiness to put in front of them. The end-to-end tests (tests/) and the
// benchmark harness (bench/) build their clusters with it; it is not used by
// `luamcp serve`.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/cluster"
)

// NodeConfig says how to start one node.
type NodeConfig struct {
	// NATSURL is the NATS server the node joins.
	NATSURL string
	// ID is the node id ([cluster.ValidNodeID]).
	ID string
	// Host configures the node's host; Logger, PubSub and Cluster are set
	// by StartNode (StateKey must be the cluster's shared key).
	Host host.Config
	// Heartbeat of the node's address (0: cluster.DefaultHeartbeat).
	Heartbeat time.Duration
	// Wrap, when set, wraps the node's HTTP handler (to count requests).
	Wrap func(http.Handler) http.Handler
}

// Node is one running node: a host joined to the cluster, served on
// 127.0.0.1.
type Node struct {
	// ID is the node id; URL its listener (http://127.0.0.1:PORT), which it
	// advertises.
	ID, URL string
	Host    *host.Host
	Member  *cluster.Node
	Conn    *nats.Conn

	srv    *http.Server
	served chan struct{} // closed when Serve has returned
	// hijacked are the connections the server handed over (cluster
	// links): http.Server.Close does not close them.
	hijackedMu sync.Mutex
	hijacked   map[net.Conn]struct{}
	stopOnce   sync.Once
	stopErr    error
}

// StartNode listens on a free port of 127.0.0.1, joins the cluster and
// serves cfg.Host.Dir. Stop ends it.
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("localcluster: node %s: %w", cfg.ID, err)
	}
	n := &Node{ID: cfg.ID, URL: "http://" + ln.Addr().String(), served: make(chan struct{})}
	logger := cfg.Host.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// As `serve --nats` connects, but reconnecting faster (tests stop NATS).
	n.Conn, err = nats.Connect(cfg.NATSURL, append(cluster.ConnectOptions(cfg.ID), nats.ReconnectWait(100*time.Millisecond))...)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("localcluster: node %s: connecting to NATS: %w", cfg.ID, err)
	}
	n.Member, err = cluster.Join(ctx, cluster.Config{
		Conn: n.Conn, NodeID: cfg.ID, Advertise: n.URL, Logger: logger, Heartbeat: cfg.Heartbeat, Key: cfg.Host.StateKey,
	})
	if err != nil {
		n.Conn.Close()
		ln.Close()
		return nil, fmt.Errorf("localcluster: node %s: %w", cfg.ID, err)
	}
	hc := cfg.Host
	hc.Logger, hc.PubSub, hc.Cluster = logger, n.Member.PubSub(), n.Member
	if n.Host, err = host.New(hc); err != nil {
		n.Member.Close()
		n.Conn.Close()
		ln.Close()
		return nil, fmt.Errorf("localcluster: node %s: %w", cfg.ID, err)
	}
	h := n.Host.Handler()
	if cfg.Wrap != nil {
		h = cfg.Wrap(h)
	}
	n.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ConnState: n.track}
	go func() {
		defer close(n.served)
		_ = n.srv.Serve(ln)
	}()
	return n, nil
}

// Addr is the node's listener address (127.0.0.1:PORT).
func (n *Node) Addr() string { return n.URL[len("http://"):] }

// CloseListener closes the node's listener and every connection on it
// (the links other nodes opened included), as if its process had crashed:
// the host, the NATS connection and the heartbeat live on (so the bucket
// still lists the node).
func (n *Node) CloseListener() {
	_ = n.srv.Close()
	<-n.served
	n.hijackedMu.Lock()
	for c := range n.hijacked {
		c.Close()
	}
	n.hijacked = nil
	n.hijackedMu.Unlock()
}

// track notes the connections the server hands over.
func (n *Node) track(c net.Conn, s http.ConnState) {
	if s != http.StateHijacked {
		return
	}
	n.hijackedMu.Lock()
	if n.hijacked == nil {
		n.hijacked = map[net.Conn]struct{}{}
	}
	n.hijacked[c] = struct{}{}
	n.hijackedMu.Unlock()
}

// Stop ends the node as `luamcp serve` does: its sessions (ctx bounds
// them), then its membership, then its listener. It is safe to call twice.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		var errs []error
		if err := n.Host.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("node %s: host.Shutdown: %w", n.ID, err))
		}
		if err := n.Member.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: leaving the cluster: %w", n.ID, err))
		}
		// As serve does: the last pushes and the leaving notice go out.
		if err := n.Conn.FlushTimeout(2 * time.Second); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, fmt.Errorf("node %s: flushing NATS: %w", n.ID, err))
		}
		n.Conn.Close()
		n.CloseListener()
		n.stopErr = errors.Join(errs...)
	})
	return n.stopErr
}

// RoundRobin is a load balancer without stickiness: each request goes to
// the next node of its list, with the client's Host kept and SSE streamed
// through.
type RoundRobin struct {
	mu      sync.Mutex
	targets []*url.URL
	proxies map[*url.URL]*httputil.ReverseProxy
	next    int
}

// NewRoundRobin balances over the nodes at urls (http://host:port).
func NewRoundRobin(urls ...string) (*RoundRobin, error) {
	p := &RoundRobin{proxies: make(map[*url.URL]*httputil.ReverseProxy)}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("localcluster: node URL %q: %w", s, err)
		}
		p.targets = append(p.targets, u)
		p.proxies[u] = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Host = pr.In.Host
			},
			FlushInterval: -1,
		}
	}
	return p, nil
}

func (p *RoundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if len(p.targets) == 0 {
		p.mu.Unlock()
		http.Error(w, "no node", http.StatusBadGateway)
		return
	}
	rp := p.proxies[p.targets[p.next%len(p.targets)]]
	p.next++
	p.mu.Unlock()
	rp.ServeHTTP(w, r)
}

// Remove takes the node at nodeURL out of the rotation (a health check
// noticed it died).
func (p *RoundRobin) Remove(nodeURL string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, u := range p.targets {
		if u.String() == nodeURL {
			p.targets = append(p.targets[:i:i], p.targets[i+1:]...)
			return
		}
	}
}
