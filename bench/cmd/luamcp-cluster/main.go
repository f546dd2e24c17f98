// Command luamcp-cluster serves the benchmark's broadcast and echo routes
// from a luamcp cluster in one process (issue 13): an embedded NATS server,
// three nodes joined to it (package localcluster, as the end-to-end tests
// build theirs), each on its own 127.0.0.1 port serving bench/scripts, and a
// round-robin proxy without stickiness on the address the harness is given.
// Its ready line lists the nodes' own addresses, which the cluster
// scenarios use to place sessions and to send requests to a node that does
// not own them.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/cluster"
	"github.com/luamcp/luamcp/internal/cluster/localcluster"

	"github.com/luamcp/luamcp/bench/internal/serve"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

func main() {
	f := serve.RegisterFlags(flag.CommandLine)
	scripts := flag.String("scripts", "scripts", "folder of the benchmark's Lua scripts")
	nodes := flag.Int("nodes", 3, "nodes in the cluster")
	flag.Parse()
	if err := run(f, *scripts, *nodes); err != nil {
		fmt.Fprintln(os.Stderr, "luamcp-cluster:", err)
		os.Exit(1)
	}
}

func run(f *serve.Flags, scripts string, count int) error {
	if count < 2 {
		return fmt.Errorf("-nodes %d: a cluster needs two nodes", count)
	}
	logger := serve.Logger()
	// fetch.lua reads the upstream's URL from the environment (it is not
	// mounted here, but must load): the discard port.
	if err := os.Setenv(spec.UpstreamEnv, "http://127.0.0.1:9"); err != nil {
		return err
	}
	nats, err := cluster.StartEmbedded("127.0.0.1", 0)
	if err != nil {
		return err
	}
	defer nats.Shutdown()
	key := make([]byte, 32) // requestState key, shared by the nodes
	rand.Read(key)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		nodes []*localcluster.Node
		urls  []string
		addrs []string
	)
	stopAll := func(ctx context.Context) error {
		var errs []error
		for _, n := range nodes {
			errs = append(errs, n.Stop(ctx))
		}
		return errors.Join(errs...)
	}
	for i := 1; i <= count; i++ {
		id := fmt.Sprintf("n%d", i)
		n, err := localcluster.StartNode(ctx, localcluster.NodeConfig{
			NATSURL: nats.URL(), ID: id,
			Host: host.Config{Dir: scripts, Logger: logger.With("node", id), StateKey: key},
		})
		if err != nil {
			stopAll(ctx)
			return err
		}
		if errs := n.Host.LoadErrors(); len(errs) > 0 {
			nodes = append(nodes, n)
			stopAll(ctx)
			return errors.Join(errs...)
		}
		nodes = append(nodes, n)
		urls = append(urls, n.URL)
		addrs = append(addrs, n.Addr())
	}
	proxy, err := localcluster.NewRoundRobin(urls...)
	if err != nil {
		stopAll(ctx)
		return err
	}
	return serve.Run(serve.Server{
		Name:   "luamcp-cluster",
		Routes: map[string]http.Handler{spec.PathBroadcast: proxy, spec.PathEcho: proxy},
		Nodes:  addrs,
		Close:  stopAll,
	}, f.Addr)
}
