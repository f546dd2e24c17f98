// Command luamcp-go serves the benchmark routes with luamcp's transport
// (package mcp) and a server written in Go instead of Lua: the difference
// between this and the luamcp command is what Lua costs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"strconv"

	"github.com/luamcp/luamcp/mcp"

	"github.com/luamcp/luamcp/bench/internal/serve"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

func main() {
	f := serve.RegisterFlags(flag.CommandLine)
	flag.Parse()
	logger := serve.Logger()
	hub := mcp.NewHub(logger)
	hub.SetMaxSessions(1 << 20) // the idle scenario opens 200,000

	routes := map[string]http.Handler{}
	var handlers []*mcp.Handler
	mount := func(s *server, opts mcp.Options) *mcp.Handler {
		h := mcp.NewHandler(s, opts, hub, logger)
		routes[opts.Path] = h
		handlers = append(handlers, h)
		return h
	}
	mount(echoServer(), mcp.Options{Path: spec.PathEcho, Sessions: true})
	mount(echoServer(), mcp.Options{Path: spec.PathStateless})
	mount(echoServer(), mcp.Options{Path: spec.PathModern}) // the transport serves both eras on every route
	churn := mount(echoServer(), mcp.Options{Path: spec.PathChurn, Sessions: true, SessionTTL: f.TTL})
	mount(toolsServer(), mcp.Options{Path: spec.PathTools, Sessions: true, PageSize: spec.PageSize})
	mount(progressServer(), mcp.Options{Path: spec.PathProgress, Sessions: true})
	mount(broadcastServer(hub), mcp.Options{Path: spec.PathBroadcast, Sessions: true})
	mount(builtServer(1), mcp.Options{Path: spec.PathBuilt1, Sessions: true})
	mount(builtServer(spec.BuiltTools), mcp.Options{Path: spec.PathBuilt100, Sessions: true})

	serve.Main(serve.Server{
		Name:          "luamcp-go",
		Routes:        routes,
		ChurnSessions: churn.SessionCount,
		Close: func(ctx context.Context) error {
			var errs []error
			for _, h := range handlers {
				errs = append(errs, h.Shutdown(ctx))
			}
			return errors.Join(errs...)
		},
	}, f.Addr)
}

// server is a stateless Go server: one value serves as the Server and as
// every Session, since there is no state to keep apart.
type server struct {
	init     *mcp.InitResult
	tools    []mcp.Item
	channels []string
	call     func(ctx context.Context, call *mcp.Call, args json.RawMessage) (json.RawMessage, error)
}

func newServer(logging bool, tools ...mcp.Item) *server {
	s := &server{
		init: &mcp.InitResult{
			ServerInfo:   json.RawMessage(`{"name":"luamcp-go-bench","version":"1.0.0"}`),
			Capabilities: json.RawMessage(`{"tools":{}}`),
			Has:          mcp.Capabilities{Tools: true},
		},
		tools: tools,
	}
	if logging {
		s.init.Capabilities = json.RawMessage(`{"tools":{},"logging":{}}`)
		s.init.Has.Logging = true
	}
	return s
}

func tool(name, description, schema string) mcp.Item {
	d, _ := json.Marshal(map[string]any{"name": name, "description": description, "inputSchema": json.RawMessage(schema)})
	return mcp.Item{Key: name, JSON: d}
}

// text encodes a CallToolResult of one text block.
func text(s string) json.RawMessage {
	b := append([]byte(`{"content":[{"type":"text","text":`), strconv.Quote(s)...)
	return append(b, `}],"isError":false}`...)
}

func echoServer() *server {
	s := newServer(false, tool(spec.EchoTool, "Echo the text back",
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	s.call = func(_ context.Context, _ *mcp.Call, args json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "arguments: " + err.Error()}
		}
		return text(in.Text), nil
	}
	return s
}

// builtServer serves n tools, each echoing its text: spec.BuiltToolName(1)
// to (n-1), then spec.EchoTool.
func builtServer(n int) *server {
	s := echoServer()
	echo := s.tools[0]
	s.tools = s.tools[:0]
	for i := 1; i < n; i++ {
		s.tools = append(s.tools, tool(spec.BuiltToolName(i), "Tool number "+strconv.Itoa(i),
			`{"type":"object","properties":{"text":{"type":"string"}}}`))
	}
	s.tools = append(s.tools, echo)
	return s
}

func toolsServer() *server {
	tools := make([]mcp.Item, spec.ToolCount)
	for i := range tools {
		name := spec.ToolName(i + 1)
		tools[i] = tool(name, "Tool "+name, `{"type":"object","properties":{"text":{"type":"string"}}}`)
	}
	s := newServer(false, tools...)
	s.call = func(context.Context, *mcp.Call, json.RawMessage) (json.RawMessage, error) { return text("ok"), nil }
	return s
}

func progressServer() *server {
	s := newServer(false, tool(spec.ProgressTool, "Report progress, then finish", `{"type":"object"}`))
	s.call = func(ctx context.Context, call *mcp.Call, _ json.RawMessage) (json.RawMessage, error) {
		for i := 1; i <= spec.ProgressSteps && call.ProgressToken != nil; i++ {
			p := append([]byte(`{"progressToken":`), call.ProgressToken...)
			p = append(p, `,"progress":`...)
			p = strconv.AppendInt(p, int64(i), 10)
			p = append(p, `,"total":`...)
			p = strconv.AppendInt(p, spec.ProgressSteps, 10)
			if err := call.Out.Progress(append(p, '}')); err != nil {
				return nil, err
			}
		}
		return text("done"), nil
	}
	return s
}

func broadcastServer(hub *mcp.Hub) *server {
	s := newServer(true, tool(spec.BroadcastTool, "Push a message to every session",
		`{"type":"object","properties":{"marker":{"type":"string"}},"required":["marker"]}`))
	s.channels = []string{spec.BroadcastChannel}
	s.call = func(_ context.Context, _ *mcp.Call, args json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Marker string `json:"marker"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "arguments: " + err.Error()}
		}
		params, _ := json.Marshal(map[string]any{"level": "info", "data": map[string]string{"marker": in.Marker}})
		hub.Route(spec.PathBroadcast).Broadcast(spec.BroadcastChannel, "notifications/message", params)
		return text("ok"), nil
	}
	return s
}

// Init implements mcp.Server.
func (s *server) Init(context.Context, json.RawMessage, string) (mcp.Session, *mcp.InitResult, error) {
	return s, s.init, nil
}

// The mcp.Session methods.

func (s *server) Tools(context.Context) ([]mcp.Item, error) { return s.tools, nil }

// Page implements mcp.Pager: only tools are listed.
func (s *server) Page(_ context.Context, kind mcp.ListKind, offset, limit int) ([]mcp.Item, int, error) {
	if kind != mcp.ListTools {
		return []mcp.Item{}, 0, nil
	}
	n := len(s.tools)
	return s.tools[min(offset, n):min(offset+limit, n)], n, nil
}

func (s *server) CallTool(ctx context.Context, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	for _, t := range s.tools {
		if t.Key == name {
			return s.call(ctx, call, args)
		}
	}
	return nil, mcp.ErrUnknownTool(name)
}

func (s *server) Resources(context.Context) ([]mcp.Item, error)         { return nil, nil }
func (s *server) ResourceTemplates(context.Context) ([]mcp.Item, error) { return nil, nil }
func (s *server) ReadResource(_ context.Context, _ *mcp.Call, uri string) (json.RawMessage, error) {
	return nil, mcp.ErrResourceNotFound(uri)
}
func (s *server) Prompts(context.Context) ([]mcp.Item, error) { return nil, nil }
func (s *server) GetPrompt(_ context.Context, _ *mcp.Call, name string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, mcp.ErrUnknownPrompt(name)
}
func (s *server) Complete(context.Context, json.RawMessage, json.RawMessage, json.RawMessage) ([]string, error) {
	return nil, nil
}
func (s *server) Channels(context.Context) ([]string, error)    { return s.channels, nil }
func (s *server) Snapshot(context.Context) (mcp.Session, error) { return s, nil }
func (s *server) Close(string)                                  {}
