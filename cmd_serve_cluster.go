package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/urfave/cli/v2"

	"github.com/luamcp/luamcp/internal/cluster"
	"github.com/luamcp/luamcp/mcp"
)

// embeddedNATS is the --nats value that runs a NATS server in the process,
// on 127.0.0.1:4222 (NATS's own port, where the other nodes of a dev cluster
// find it), or on 127.0.0.1:PORT with "embedded:PORT" (0: a free one).
const (
	embeddedNATS     = "embedded"
	embeddedNATSPort = 4222
)

// embeddedPort returns the port of an "embedded[:PORT]" --nats value; false
// when the value names a NATS URL instead.
func embeddedPort(v string) (port int, ok bool, err error) {
	if v == embeddedNATS {
		return embeddedNATSPort, true, nil
	}
	p, found := strings.CutPrefix(v, embeddedNATS+":")
	if !found {
		return 0, false, nil
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return 0, true, fmt.Errorf("--nats %s: the port must be a number from 0 to 65535", v)
	}
	return port, true, nil
}

// clusterFlags are serve's --nats, --node-id, --advertise and --cluster-ca.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "nats", Usage: "join the nodes of a cluster through this NATS server (nats://host:4222), or \"" + embeddedNATS + "\" to run one in the process on 127.0.0.1:4222 (\"" + embeddedNATS + ":PORT\": another port; a single-machine dev cluster); default: no cluster"},
		&cli.StringFlag{Name: "node-id", Usage: "this node's id in the cluster (letters, digits, '_', '-'; at most 64); default: the host name and a random suffix"},
		&cli.StringFlag{Name: "advertise", Usage: "the URL other nodes reach this node's listener at (http://10.0.0.5:8750); default: the listener's own URL"},
		&cli.StringFlag{Name: "cluster-ca", Usage: "PEM file of the authorities that sign the nodes' certificates (https:// --advertise addresses) and a tls:// NATS server's; default: the system's roots"},
	}
}

// clusterNode is this process's membership of a cluster. A nil *clusterNode
// is "no cluster", and its methods do nothing.
type clusterNode struct {
	id        string
	advertise string
	embedded  *cluster.Embedded // nil unless --nats embedded
	nc        *nats.Conn
	node      *cluster.Node
}

// joinCluster connects to NATS when --nats is set; nil, nil otherwise.
// listenURL is the listener's URL, the default of --advertise. Cluster mode
// needs a shared state key: a 2026-07-28 request's next round may land on
// another node.
func joinCluster(c *cli.Context, stateKey []byte, listenURL string, logger *slog.Logger) (*clusterNode, error) {
	natsURL := c.String("nats")
	if natsURL == "" {
		for _, f := range []string{"node-id", "advertise", "cluster-ca"} {
			if c.IsSet(f) {
				return nil, fmt.Errorf("--%s needs --nats", f)
			}
		}
		return nil, nil
	}
	if stateKey == nil {
		return nil, fmt.Errorf("--nats: every node of a cluster needs the same state key: set --state-key-file or $%s", stateKeyEnv)
	}
	n := &clusterNode{id: c.String("node-id"), advertise: c.String("advertise")}
	if n.id == "" {
		n.id = cluster.DefaultNodeID()
	}
	if err := cluster.ValidNodeID(n.id); err != nil {
		return nil, fmt.Errorf("--node-id: %w", err)
	}
	if n.advertise == "" {
		n.advertise = listenURL
	}
	u, err := url.Parse(n.advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--advertise must be an http:// or https:// URL, not %q", n.advertise)
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		return nil, fmt.Errorf("--advertise: other nodes cannot reach %s: listening on every address, name this node's reachable one (--advertise http://10.0.0.5:8750)", n.advertise)
	}
	roots, err := loadClusterCA(c.String("cluster-ca"))
	if err != nil {
		return nil, err
	}
	port, embedded, err := embeddedPort(natsURL)
	if err != nil {
		return nil, err
	}
	if embedded {
		e, err := cluster.StartEmbedded("127.0.0.1", port)
		if err != nil {
			return nil, fmt.Errorf("--nats %s: %w", natsURL, err)
		}
		n.embedded = e
		natsURL = e.URL()
		logger.Warn("running an embedded NATS server: for a dev cluster on one machine only", "url", natsURL)
	}
	opts := cluster.ConnectOptions(n.id)
	if roots != nil && natsTLS(natsURL) {
		// Only for tls:// URLs: nats.go asks for TLS whenever it has a TLS
		// configuration, which a plain NATS server would refuse.
		opts = append(opts, func(o *nats.Options) error {
			o.TLSConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			return nil
		})
	}
	nc, err := nats.Connect(natsURL, opts...) // cluster.Join logs disconnects and reconnects
	if err != nil {
		n.close(false)
		return nil, fmt.Errorf("--nats %s: %w", redactedURLs(natsURL), err)
	}
	n.nc = nc
	if n.node, err = cluster.Join(c.Context, cluster.Config{Conn: nc, NodeID: n.id, Advertise: n.advertise, RootCAs: roots, Logger: logger, Key: stateKey}); err != nil {
		n.close(false)
		return nil, fmt.Errorf("--nats: %w", err)
	}
	logger.Info("joined the cluster", "node", n.id, "advertise", n.advertise, "nats", nc.ConnectedUrlRedacted())
	return n, nil
}

// loadClusterCA reads --cluster-ca: nil, nil when it is not set (the
// system's roots).
func loadClusterCA(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--cluster-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--cluster-ca %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// natsTLS reports whether a --nats value (URLs separated by commas) names
// a server over TLS.
func natsTLS(urls string) bool {
	for _, u := range strings.Split(urls, ",") {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), "tls://") {
			return true
		}
	}
	return false
}

// pubsub is the host's PubSub: nil (in-process) without a cluster.
func (n *clusterNode) pubsub() mcp.PubSub {
	if n == nil {
		return nil
	}
	return n.node.PubSub()
}

// cluster is the host's Cluster: nil without one.
func (n *clusterNode) cluster() mcp.Cluster {
	if n == nil {
		return nil
	}
	return n.node
}

// close leaves the cluster: after the host's shutdown, so that the last
// pushes still go out. A node that saved its sessions (restarting: serve
// --sessions-file) says that it restarts, so that the others answer 503
// for its sessions until it is back, not 404.
func (n *clusterNode) close(restarting bool) error {
	if n == nil {
		return nil
	}
	var err error
	switch {
	case n.node != nil && restarting:
		err = n.node.CloseForRestart()
	case n.node != nil:
		err = n.node.Close()
	}
	if n.nc != nil {
		if ferr := n.nc.FlushTimeout(2 * time.Second); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
			err = errors.Join(err, fmt.Errorf("cluster: the last pushes may not have left: %w", ferr))
		}
		n.nc.Close()
	}
	if n.embedded != nil {
		n.embedded.Shutdown()
	}
	return err
}

// redactedURLs is a --nats value (one URL or a comma-separated list) fit
// for a message: each URL's user information, which may hold a password or
// a token, is shown as "redacted", as nats.go's ConnectedUrlRedacted does.
func redactedURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = url.User("redacted")
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}
