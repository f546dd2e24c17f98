// Command gosdk serves the benchmark routes with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), configured the way its
// documentation shows: typed tool handlers, JSON responses where nothing
// streams, SSE for the progress route.
package main

import (
	"context"
	"flag"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/luamcp/luamcp/bench/internal/serve"
	"github.com/luamcp/luamcp/bench/internal/spec"
	"github.com/luamcp/luamcp/bench/internal/upstream"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return text(in.Text), nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer(opts *mcp.ServerOptions) *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "go-sdk-bench", Version: "1.0.0"}, opts)
}

func echoServer() *mcp.Server {
	s := newServer(nil)
	mcp.AddTool(s, &mcp.Tool{Name: spec.EchoTool, Description: "Echo the text back"}, echo)
	return s
}

// builtServer serves n tools, each echoing its text: spec.BuiltToolName(1)
// to (n-1), then spec.EchoTool.
func builtServer(n int) *mcp.Server {
	s := newServer(nil)
	for i := 1; i < n; i++ {
		mcp.AddTool(s, &mcp.Tool{Name: spec.BuiltToolName(i), Description: "Tool number " + strconv.Itoa(i)}, echo)
	}
	mcp.AddTool(s, &mcp.Tool{Name: spec.EchoTool, Description: "Echo the text back"}, echo)
	return s
}

func toolsServer() *mcp.Server {
	s := newServer(&mcp.ServerOptions{PageSize: spec.PageSize})
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	for i := 1; i <= spec.ToolCount; i++ {
		s.AddTool(&mcp.Tool{Name: spec.ToolName(i), Description: "Tool " + spec.ToolName(i), InputSchema: schema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	}
	return s
}

func progressServer() *mcp.Server {
	s := newServer(nil)
	mcp.AddTool(s, &mcp.Tool{Name: spec.ProgressTool, Description: "Report progress, then finish"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= spec.ProgressSteps; i++ {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: spec.ProgressSteps})
				if err != nil {
					return nil, nil, err
				}
			}
			return text("done"), nil, nil
		})
	return s
}

type broadcastIn struct {
	Marker string `json:"marker"`
}

// broadcastServer pushes a log message to every session: the SDK has no
// pubsub, so the tool walks Server.Sessions.
func broadcastServer() *mcp.Server {
	s := newServer(nil)
	mcp.AddTool(s, &mcp.Tool{Name: spec.BroadcastTool, Description: "Push a message to every session"},
		func(ctx context.Context, req *mcp.CallToolRequest, in broadcastIn) (*mcp.CallToolResult, any, error) {
			params := &mcp.LoggingMessageParams{Level: "info", Data: map[string]any{"marker": in.Marker}}
			for ss := range s.Sessions() {
				// Not ctx: that would tie the push to this request's stream.
				ss.Log(context.Background(), params)
			}
			return text("ok"), nil, nil
		})
	return s
}

// fetchServer's tool makes one request to the upstream per call, through one
// client that keeps connections alive (as luamcp's http module does).
func fetchServer(addr string) *mcp.Server {
	s := newServer(nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	base := "http://" + addr + spec.UpstreamItem + "?text="
	mcp.AddTool(s, &mcp.Tool{Name: spec.FetchTool, Description: "Fetch an item from the upstream API"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			item, err := upstream.Fetch(ctx, client, base+url.QueryEscape(in.Text))
			if err != nil {
				return nil, nil, err
			}
			return text(item), nil, nil
		})
	return s
}

func handler(s *mcp.Server, opts mcp.StreamableHTTPOptions) http.Handler {
	opts.Logger = serve.Logger()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &opts)
}

func main() {
	f := serve.RegisterFlags(flag.CommandLine)
	flag.Parse()
	churn := echoServer()
	serve.Main(serve.Server{
		Name: "go-sdk",
		TLS:  true, // h2 and h3 rows through the same TLS front as luamcp
		Routes: map[string]http.Handler{
			spec.PathEcho:      handler(echoServer(), mcp.StreamableHTTPOptions{JSONResponse: true}),
			spec.PathStateless: handler(echoServer(), mcp.StreamableHTTPOptions{JSONResponse: true, Stateless: true}),
			// The SDK serves 2026-07-28 only with Stateless: true.
			spec.PathModern:    handler(echoServer(), mcp.StreamableHTTPOptions{JSONResponse: true, Stateless: true}),
			spec.PathChurn:     handler(churn, mcp.StreamableHTTPOptions{JSONResponse: true, SessionTimeout: f.TTL}),
			spec.PathTools:     handler(toolsServer(), mcp.StreamableHTTPOptions{JSONResponse: true}),
			spec.PathProgress:  handler(progressServer(), mcp.StreamableHTTPOptions{}),
			spec.PathBroadcast: handler(broadcastServer(), mcp.StreamableHTTPOptions{JSONResponse: true}),
			spec.PathFetch:     handler(fetchServer(f.Upstream), mcp.StreamableHTTPOptions{JSONResponse: true}),
			spec.PathBuilt1:    handler(builtServer(1), mcp.StreamableHTTPOptions{JSONResponse: true}),
			spec.PathBuilt100:  handler(builtServer(spec.BuiltTools), mcp.StreamableHTTPOptions{JSONResponse: true}),
		},
		ChurnSessions: func() int {
			n := 0
			for range churn.Sessions() {
				n++
			}
			return n
		},
	}, f.Addr)
}
