// Command luamcp serves the benchmark routes the way the product does: the
// Lua scripts in bench/scripts, mounted by package host. Only the churn
// route is mounted again outside the host, so that the harness can set its
// idle TTL (-ttl) without editing the script.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/luavm"
	"github.com/luamcp/luamcp/mcp"

	"github.com/luamcp/luamcp/bench/internal/serve"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

func main() {
	f := serve.RegisterFlags(flag.CommandLine)
	scripts := flag.String("scripts", "scripts", "folder of the benchmark's Lua scripts")
	pool := flag.Int("pool", 0, "warm Lua states kept per script (0: luamcp's default)")
	flag.Parse()
	if err := run(f, *scripts, *pool); err != nil {
		fmt.Fprintln(os.Stderr, "luamcp:", err)
		os.Exit(1)
	}
}

// maxSessions caps the churn route's sessions: above the idle scenario's.
const maxSessions = 1 << 20

func run(f *serve.Flags, scripts string, pool int) error {
	logger := serve.Logger()
	// fetch.lua reads the upstream's URL from the environment; its route
	// grants that host through "$BENCH_UPSTREAM".
	// Without -upstream the fetch route is not mounted, but the script must
	// still load: it is granted the discard port.
	upstream := f.Upstream
	if upstream == "" {
		upstream = "127.0.0.1:9"
	}
	if err := os.Setenv(spec.UpstreamEnv, "http://"+upstream); err != nil {
		return err
	}
	h, err := host.New(host.Config{Dir: scripts, Logger: logger, PoolSize: pool})
	if err != nil {
		return err
	}
	if errs := h.LoadErrors(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	routes := map[string]http.Handler{}
	for _, r := range h.Routes() {
		if r.Path != spec.PathFetch || f.Upstream != "" {
			routes[r.Path] = h.Handler()
		}
	}

	hub := mcp.NewHub(logger)
	hub.SetMaxSessions(maxSessions) // the idle scenario opens 200,000
	churn, err := luavm.Load(filepath.Join(scripts, "churn.lua"), luavm.Config{Dir: scripts, Logger: logger, Pushes: func(path string) bridge.Pushes { return hub.Route(path) }, PoolSize: pool})
	if err != nil {
		return err
	}
	opts := churn.Options()
	opts.SessionTTL = f.TTL
	ch := mcp.NewHandler(churn, opts, hub, logger)
	routes[spec.PathChurn] = ch

	return serve.Run(serve.Server{
		Name:          "luamcp",
		TLS:           true, // the h2 and h3 scenarios
		Routes:        routes,
		ChurnSessions: ch.SessionCount,
		Close: func(ctx context.Context) error {
			err := errors.Join(ch.Shutdown(ctx), h.Shutdown(ctx))
			churn.Close()
			return err
		},
	}, f.Addr)
}
