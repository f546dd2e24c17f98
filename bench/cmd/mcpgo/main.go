// Command mcpgo serves the benchmark routes with github.com/mark3labs/mcp-go,
// configured the way its documentation shows. Session routes use its
// stateful session manager, so that unknown sessions are rejected as the
// other servers do.
package main

import (
	"context"
	"flag"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/luamcp/luamcp/bench/internal/serve"
	"github.com/luamcp/luamcp/bench/internal/spec"
	"github.com/luamcp/luamcp/bench/internal/upstream"
)

func newServer(opts ...server.ServerOption) *server.MCPServer {
	return server.NewMCPServer("mcp-go-bench", "1.0.0", append(opts, server.WithToolCapabilities(false))...)
}

func echoServer() *server.MCPServer {
	s := newServer()
	s.AddTool(mcp.NewTool(spec.EchoTool,
		mcp.WithDescription("Echo the text back"),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to echo"))),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	return s
}

// builtServer serves n tools, each echoing its text: spec.BuiltToolName(1)
// to (n-1), then spec.EchoTool.
func builtServer(n int) *server.MCPServer {
	s := newServer()
	echo := func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	}
	for i := 1; i < n; i++ {
		s.AddTool(mcp.NewTool(spec.BuiltToolName(i), mcp.WithDescription("Tool number "+strconv.Itoa(i)), mcp.WithString("text")), echo)
	}
	s.AddTool(mcp.NewTool(spec.EchoTool, mcp.WithDescription("Echo the text back"),
		mcp.WithString("text", mcp.Required(), mcp.Description("the text to echo"))), echo)
	return s
}

func toolsServer() *server.MCPServer {
	s := newServer(server.WithPaginationLimit(spec.PageSize))
	for i := 1; i <= spec.ToolCount; i++ {
		s.AddTool(mcp.NewTool(spec.ToolName(i), mcp.WithDescription("Tool "+spec.ToolName(i)), mcp.WithString("text")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
	}
	return s
}

func progressServer() *server.MCPServer {
	s := newServer()
	s.AddTool(mcp.NewTool(spec.ProgressTool, mcp.WithDescription("Report progress, then finish")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			srv := server.ServerFromContext(ctx)
			for i := 1; i <= spec.ProgressSteps; i++ {
				err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token, "progress": i, "total": spec.ProgressSteps})
				if err != nil {
					return nil, err
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	return s
}

func broadcastServer() *server.MCPServer {
	s := newServer(server.WithLogging())
	s.AddTool(mcp.NewTool(spec.BroadcastTool, mcp.WithDescription("Push a message to every session"),
		mcp.WithString("marker", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.SendNotificationToAllClients("notifications/message", map[string]any{
				"level": "info", "data": map[string]any{"marker": req.GetString("marker", "")}})
			return mcp.NewToolResultText("ok"), nil
		})
	return s
}

// fetchServer's tool makes one request to the upstream per call, through one
// client that keeps connections alive (as luamcp's http module does).
func fetchServer(addr string) *server.MCPServer {
	s := newServer()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	base := "http://" + addr + spec.UpstreamItem + "?text="
	s.AddTool(mcp.NewTool(spec.FetchTool, mcp.WithDescription("Fetch an item from the upstream API"),
		mcp.WithString("text", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := upstream.Fetch(ctx, client, base+url.QueryEscape(req.GetString("text", "")))
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(text), nil
		})
	return s
}

// counting wraps the stateful session manager to count live sessions.
type counting struct {
	server.InsecureStatefulSessionIdManager
	live sync.Map
	n    atomic.Int64
}

func (c *counting) Generate() string {
	id := c.InsecureStatefulSessionIdManager.Generate()
	c.live.Store(id, true)
	c.n.Add(1)
	return id
}

func (c *counting) Terminate(id string) (bool, error) {
	if _, ok := c.live.LoadAndDelete(id); ok {
		c.n.Add(-1)
	}
	return c.InsecureStatefulSessionIdManager.Terminate(id)
}

func main() {
	f := serve.RegisterFlags(flag.CommandLine)
	flag.Parse()
	logger := server.WithStreamableHTTPLogger(serve.Logger())
	stateful := server.WithStateful(true)
	churnIDs := &counting{}
	serve.Main(serve.Server{
		Name: "mcp-go",
		TLS:  true, // h2 and h3 rows through the same TLS front as luamcp
		Routes: map[string]http.Handler{
			spec.PathEcho:      server.NewStreamableHTTPServer(echoServer(), logger, stateful),
			spec.PathStateless: server.NewStreamableHTTPServer(echoServer(), logger, server.WithStateLess(true)),
			spec.PathChurn: server.NewStreamableHTTPServer(echoServer(), logger,
				server.WithSessionIdManager(churnIDs), server.WithSessionIdleTTL(f.TTL)),
			spec.PathTools:     server.NewStreamableHTTPServer(toolsServer(), logger, stateful),
			spec.PathProgress:  server.NewStreamableHTTPServer(progressServer(), logger, stateful),
			spec.PathBroadcast: server.NewStreamableHTTPServer(broadcastServer(), logger, stateful),
			spec.PathFetch:     server.NewStreamableHTTPServer(fetchServer(f.Upstream), logger, stateful),
			spec.PathBuilt1:    server.NewStreamableHTTPServer(builtServer(1), logger, stateful),
			spec.PathBuilt100:  server.NewStreamableHTTPServer(builtServer(spec.BuiltTools), logger, stateful),
		},
		ChurnSessions: func() int { return int(churnIDs.n.Load()) },
	}, f.Addr)
}
