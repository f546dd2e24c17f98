package cluster

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Embedded is a NATS server running in this process ([StartEmbedded]).
type Embedded struct {
	srv *server.Server
	dir string // JetStream storage, removed by Shutdown
}

// StartEmbedded starts a NATS server with JetStream in this process,
// listening on host:port (port 0: a random one), for a single-machine dev
// cluster and for tests. It is not the production path: run nats-server.
func StartEmbedded(host string, port int) (*Embedded, error) {
	dir, err := os.MkdirTemp("", "luamcp-nats-")
	if err != nil {
		return nil, fmt.Errorf("cluster: embedded NATS: %w", err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{
		Host: host, Port: port, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cluster: embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cluster: embedded NATS did not start within 10s")
	}
	return &Embedded{srv: srv, dir: dir}, nil
}

// URL is the client URL of the server (nats://host:port).
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Shutdown stops the server and removes its storage.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
	os.RemoveAll(e.dir)
}
