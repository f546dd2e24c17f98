package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/edge"
	"github.com/luamcp/luamcp/internal/metrics"
)

const (
	// metricsWriteTimeout bounds one scrape's answer: /metrics is never a
	// stream.
	metricsWriteTimeout = 30 * time.Second
	// metricsMaxConnections caps the metrics listener's open connections:
	// scrapers are few, and a flood of connections to it must not take the
	// descriptors the MCP listener leaves for everything else
	// (--max-connections); past it, new ones wait.
	metricsMaxConnections = 64
)

// metricsFlag is serve's --metrics-addr.
func metricsFlag() cli.Flag {
	return &cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus metrics at http://ADDR/metrics, on a listener of their own (e.g. 127.0.0.1:9464); default: none"}
}

// metricsServer serves /metrics on its own listener, apart from the MCP
// routes: none of their gates (remote access, Origin, auth) applies to it,
// and a scraper never shares their connections. A nil *metricsServer is
// "no metrics", and its methods do nothing.
type metricsServer struct {
	m   *metrics.Metrics
	ln  net.Listener
	srv *http.Server
}

// listenMetrics binds addr for the metrics; nil, nil when addr is "".
// Binding before the host is built means a wrong address fails serve before
// any script loads.
func listenMetrics(addr string, logger *slog.Logger) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		logger.Warn("metrics listen on a non-loopback address: whoever reaches it reads the route paths, tool names and counts", "addr", ln.Addr().String())
	}
	m := metrics.New()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	ln = edge.LimitListener(ln, metricsMaxConnections, logger)
	return &metricsServer{m: m, ln: ln, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}}, nil
}

// observer is what the host reports to; nil without metrics.
func (s *metricsServer) observer() host.Observer {
	if s == nil {
		return nil
	}
	return s.m
}

// serve reads the gauges from h and serves the metrics in the background,
// and says where on w.
func (s *metricsServer) serve(h *host.Host, w io.Writer) {
	if s == nil {
		return
	}
	s.m.SetStats(h.Stats)
	s.m.SetReplay(h.Replay)
	go func() { _ = s.srv.Serve(s.ln) }() // ends with close
	fmt.Fprintf(w, "metrics at http://%s/metrics\n", s.ln.Addr())
}

// cluster reads the cluster's series (pushes over NATS, its connection)
// from n; nothing without metrics or outside a cluster. Forwarded requests
// are reported by the routes, as the observer.
func (s *metricsServer) cluster(n *clusterNode) {
	if s == nil || n == nil {
		return
	}
	s.m.SetCluster(n.node.Stats)
}

// close stops the metrics listener (a scrape in flight is cut).
func (s *metricsServer) close() {
	if s == nil {
		return
	}
	_ = s.srv.Close()
	_ = s.ln.Close() // when serve never ran
}
