package tests

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official Go SDK client (github.com/modelcontextprotocol/go-sdk/mcp)
// against the fixture, in both modes.

// getWatcher is an http.RoundTripper that reports when a GET (the SDK's
// standalone SSE channel) has been answered 200: pushes sent before the
// channel attaches are not replayed to a fresh GET, so tests wait for it.
type getWatcher struct {
	base   *http.Transport
	opened chan struct{}
	once   sync.Once
}

func newGetWatcher() *getWatcher {
	return &getWatcher{base: &http.Transport{}, opened: make(chan struct{})}
}

func (w *getWatcher) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		w.once.Do(func() { close(w.opened) })
	}
	return resp, err
}

func (w *getWatcher) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.opened:
	case <-time.After(waitLong):
		t.Fatalf("the SDK's GET channel did not open within %v", waitLong)
	}
}

// goClient is a connected Go SDK session.
type goClient struct {
	*sdk.ClientSession
	watch *getWatcher
}

// connectGo connects the Go SDK client at protocol version; version ""
// leaves the SDK's own default (it opens with a 2026-07-28 server/discover,
// and falls back to initialize on a server that does not answer it).
func connectGo(t *testing.T, url string, opts *sdk.ClientOptions, version string, roots ...*sdk.Root) *goClient {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-e2e", Version: "1.0.0"}, opts)
	if len(roots) > 0 {
		client.AddRoots(roots...)
	}
	watch := newGetWatcher()
	transport := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: watch}, MaxRetries: 2}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	var sessOpts *sdk.ClientSessionOptions
	if version != "" {
		sessOpts = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, transport, sessOpts)
	if err != nil {
		t.Fatalf("Go SDK Connect(%s): %v", url, err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		watch.base.CloseIdleConnections()
	})
	return &goClient{ClientSession: cs, watch: watch}
}

func goCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// goText returns the single text block of a Go SDK tool result.
func goText(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content = %v, want one block", res.Content)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T, want text", res.Content[0])
	}
	return tc.Text
}

func (c *goClient) call(t *testing.T, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := c.CallTool(goCtx(t), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

func (c *goClient) wantText(t *testing.T, name string, args map[string]any, want string) {
	t.Helper()
	res := c.call(t, name, args)
	if got := goText(t, res); got != want || res.IsError {
		t.Errorf("%s = %q (isError %v), want %q", name, got, res.IsError, want)
	}
}

// wantRPCError checks that err carries a JSON-RPC error with code.
func wantRPCError(t *testing.T, err error, code int64, msg string) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("error %v, want a JSON-RPC error %d", err, code)
	}
	if werr.Code != code || werr.Message != msg {
		t.Errorf("error %d %q, want %d %q", werr.Code, werr.Message, code, msg)
	}
}

func TestGoSDKEveryMethod(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			c := connectGo(t, s.url(variant), nil, latestVersion)
			ctx := goCtx(t)
			if (c.ID() != "") != (variant == "session") {
				t.Errorf("session id %q in %s mode", c.ID(), variant)
			}
			init := c.InitializeResult()
			if init.ProtocolVersion != latestVersion || init.ServerInfo.Name != "luamcp-test-fixture" ||
				init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || !init.Capabilities.Resources.Subscribe ||
				init.Capabilities.Prompts == nil || init.Capabilities.Logging == nil || init.Capabilities.Completions == nil {
				t.Errorf("initialize result = %+v", init)
			}
			if err := c.Ping(ctx, nil); err != nil {
				t.Errorf("Ping: %v", err)
			}
			var names []string
			for tool, err := range c.Tools(ctx, nil) {
				if err != nil {
					t.Fatalf("Tools: %v", err)
				}
				names = append(names, tool.Name)
				if tool.Name == "echo" && tool.Title != "Echo" {
					t.Errorf("echo title %q", tool.Title)
				}
			}
			if !reflect.DeepEqual(names, fixtureTools) {
				t.Errorf("tools = %v, want %v", names, fixtureTools)
			}
			c.wantText(t, "add", map[string]any{"a": 2, "b": 3}, "5")
			if res := c.call(t, "boom", nil); !res.IsError || goText(t, res) != "kaboom" {
				t.Errorf("boom = %+v, want isError kaboom", res)
			}
			_, err := c.CallTool(ctx, &sdk.CallToolParams{Name: "crash"})
			wantRPCError(t, err, -32603, "Internal error")
			_, err = c.CallTool(ctx, &sdk.CallToolParams{Name: "nope"})
			wantRPCError(t, err, -32602, "Unknown tool: nope")
			echo := c.call(t, "echo", map[string]any{"x": "y"})
			if sc, ok := echo.StructuredContent.(map[string]any); !ok || sc["x"] != "y" {
				t.Errorf("echo structuredContent = %#v, want {x: y}", echo.StructuredContent)
			}

			uris := listed(t, "Resources", c.Resources(ctx, nil), func(r *sdk.Resource) string { return r.URI })
			if want := []string{"mem://greeting", "mem://locked", "mem://structured", "mem://counter"}; !reflect.DeepEqual(uris, want) {
				t.Errorf("resources = %v, want %v", uris, want)
			}
			rr, err := c.ReadResource(ctx, &sdk.ReadResourceParams{URI: "mem://greeting"})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello" {
				t.Errorf("ReadResource greeting = %+v, %v", rr, err)
			}
			rr, err = c.ReadResource(ctx, &sdk.ReadResourceParams{URI: "mem://user/7"})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "user 7" {
				t.Errorf("ReadResource mem://user/7 = %+v, %v", rr, err)
			}
			_, err = c.ReadResource(ctx, &sdk.ReadResourceParams{URI: "mem://locked"})
			wantRPCError(t, err, -32002, "locked")
			templates := listed(t, "ResourceTemplates", c.ResourceTemplates(ctx, nil), func(tmpl *sdk.ResourceTemplate) string { return tmpl.URITemplate })
			if !reflect.DeepEqual(templates, []string{"mem://user/{id}"}) {
				t.Errorf("templates = %v", templates)
			}

			prompts := listed(t, "Prompts", c.Prompts(ctx, nil), func(p *sdk.Prompt) string { return p.Name })
			if !reflect.DeepEqual(prompts, []string{"greet", "deny", "count"}) {
				t.Errorf("prompts = %v", prompts)
			}
			gp, err := c.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
			if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Role != "user" {
				t.Fatalf("GetPrompt greet = %+v, %v", gp, err)
			}
			if tc, ok := gp.Messages[0].Content.(*sdk.TextContent); !ok || tc.Text != "Hello, Ada" {
				t.Errorf("greet message = %#v, want text \"Hello, Ada\"", gp.Messages[0].Content)
			}
			_, err = c.GetPrompt(ctx, &sdk.GetPromptParams{Name: "deny"})
			wantRPCError(t, err, -32602, "denied")

			comp, err := c.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "greet"},
				Argument: sdk.CompleteParamsArgument{Name: "who", Value: "Ad"}})
			if err != nil || !reflect.DeepEqual(comp.Completion.Values, []string{"Ada", "Adam"}) || comp.Completion.HasMore || comp.Completion.Total != 2 {
				t.Errorf("Complete = %+v, %v, want [Ada Adam] total 2", comp, err)
			}
			if err := c.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "warning"}); err != nil {
				t.Errorf("SetLoggingLevel: %v", err)
			}
			if err := c.Subscribe(ctx, &sdk.SubscribeParams{URI: "mem://greeting"}); err != nil {
				t.Errorf("Subscribe: %v", err)
			}
			if err := c.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "mem://greeting"}); err != nil {
				t.Errorf("Unsubscribe: %v", err)
			}
		})
	}
}

// A user of the Go SDK who sets no protocol version gets its default: a
// 2026-07-28 server/discover, which luamcp answers, so the client stays in
// that era (era_go_test.go has the rest).
func TestGoSDKDefaultConnect(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			c := connectGo(t, s.url(variant), nil, "")
			if v := c.InitializeResult().ProtocolVersion; v != eraVersion {
				t.Errorf("negotiated %q, want %q", v, eraVersion)
			}
			c.wantText(t, "add", map[string]any{"a": 1, "b": 2}, "3")
		})
	}
}

func TestGoSDKStateThreading(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	t.Run("session", func(t *testing.T) {
		c := connectGo(t, s.url("session"), nil, latestVersion)
		c.wantText(t, "count", nil, "1")
		c.wantText(t, "count", nil, "2")
		if res := c.call(t, "count", map[string]any{"fail": true}); !res.IsError || goText(t, res) != "count failed at 3" {
			t.Errorf("count fail = %+v", res)
		}
		_, err := c.CallTool(goCtx(t), &sdk.CallToolParams{Name: "count", Arguments: map[string]any{"crash": true}})
		wantRPCError(t, err, -32603, "Internal error")
		c.wantText(t, "count", nil, "4") // the error kept its state, the crash did not
	})
	t.Run("stateless", func(t *testing.T) {
		c := connectGo(t, s.url("stateless"), nil, latestVersion)
		c.wantText(t, "count", nil, "1")
		c.wantText(t, "count", nil, "1")
	})
}

func TestGoSDKPagination(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	c := connectGo(t, s.url("session"), nil, latestVersion)
	first, err := c.ListTools(goCtx(t), nil)
	if err != nil || len(first.Tools) != 2 || first.NextCursor == "" {
		t.Fatalf("first page = %+v, %v, want 2 tools and a cursor", first, err)
	}
	second, err := c.ListTools(goCtx(t), &sdk.ListToolsParams{Cursor: first.NextCursor})
	if err != nil || len(second.Tools) != 2 || second.Tools[0].Name != fixtureTools[2] {
		t.Errorf("second page = %+v, %v, want %v", second, err, fixtureTools[2:4])
	}
}

func TestGoSDKProgress(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			c := connectGo(t, s.url(variant), &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
					mu.Lock()
					got = append(got, req.Params.Message)
					mu.Unlock()
				},
			}, latestVersion)
			params := &sdk.CallToolParams{Name: "progress"}
			params.SetProgressToken("go-progress")
			res, err := c.CallTool(goCtx(t), params)
			if err != nil || goText(t, res) != "done" {
				t.Fatalf("progress = %+v, %v", res, err)
			}
			// The SDK runs notification handlers asynchronously: wait for them.
			deadline := time.Now().Add(waitShort)
			for {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n >= 2 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(got, []string{"step 1/2", "step 2/2"}) {
				t.Errorf("progress messages = %q, want [step 1/2 step 2/2]", got)
			}
		})
	}
}

// A call with a progress token runs on the session's state like any other,
// and keeps its changes.
func TestGoSDKStreamingKeepsState(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	c := connectGo(t, s.url("session"), &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {},
	}, latestVersion)
	c.wantText(t, "count", nil, "1")
	params := &sdk.CallToolParams{Name: "count"}
	params.SetProgressToken(99)
	res, err := c.CallTool(goCtx(t), params)
	if err != nil || goText(t, res) != "2" {
		t.Fatalf("streaming count = %+v, %v, want 2", res, err)
	}
	c.wantText(t, "count", nil, "3")
}

// logSink collects notifications/message.
type logSink struct {
	mu   sync.Mutex
	msgs []string
	ch   chan struct{}
}

func newLogSink() *logSink { return &logSink{ch: make(chan struct{}, 100)} }

func (l *logSink) handle(_ context.Context, req *sdk.LoggingMessageRequest) {
	l.mu.Lock()
	l.msgs = append(l.msgs, string(req.Params.Level)+":"+toString(req.Params.Data))
	l.mu.Unlock()
	l.ch <- struct{}{}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "?"
}

// next waits for the next message.
func (l *logSink) next(t *testing.T) string {
	t.Helper()
	select {
	case <-l.ch:
	case <-time.After(waitLong):
		t.Fatalf("no log message within %v", waitLong)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msgs[0]
	l.msgs = l.msgs[1:]
	return m
}

func TestGoSDKLogging(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	sink := newLogSink()
	c := connectGo(t, s.url("session"), &sdk.ClientOptions{LoggingMessageHandler: sink.handle}, latestVersion)
	c.watch.wait(t)
	// On the session's GET channel: the default level is info.
	c.wantText(t, "log", map[string]any{"level": "debug"}, "logged")
	c.wantText(t, "log", map[string]any{"level": "info"}, "logged")
	if m := sink.next(t); m != "info:log at info" {
		t.Errorf("first log = %q, want info (debug is below the default)", m)
	}
	if err := c.SetLoggingLevel(goCtx(t), &sdk.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	c.wantText(t, "log", map[string]any{"level": "warning"}, "logged")
	c.wantText(t, "log", map[string]any{"level": "critical"}, "logged")
	if m := sink.next(t); m != "critical:log at critical" {
		t.Errorf("log after setLevel error = %q, want critical", m)
	}
	// On the call's own stream (the SDK hands notifications to handlers
	// asynchronously, so the order against the result is not checked here;
	// TestLogOnCallStream checks the wire).
	c.wantText(t, "log", map[string]any{"level": "alert", "on": "call"}, "logged")
	if m := sink.next(t); m != "alert:log at alert" {
		t.Errorf("call log = %q, want alert", m)
	}
}

func TestGoSDKNotifications(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	updated := make(chan string, 10)
	changed := make(chan struct{}, 10)
	a := connectGo(t, s.url("session"), &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}, latestVersion)
	a.watch.wait(t)
	b := connectGo(t, s.url("session"), nil, latestVersion)
	if err := a.Subscribe(goCtx(t), &sdk.SubscribeParams{URI: "mem://greeting"}); err != nil {
		t.Fatal(err)
	}
	b.wantText(t, "touch", map[string]any{"uri": "mem://greeting"}, "touched")
	select {
	case uri := <-updated:
		if uri != "mem://greeting" {
			t.Errorf("updated %q", uri)
		}
	case <-time.After(waitLong):
		t.Fatalf("no resources/updated within %v", waitLong)
	}
	b.wantText(t, "broadcast", nil, "broadcast")
	select {
	case <-changed:
	case <-time.After(waitLong):
		t.Fatalf("no tools/list_changed within %v", waitLong)
	}
}

// answeringClient answers elicitation by the message the tool sent, and
// sampling with an echo of the prompt.
func answeringClient() *sdk.ClientOptions {
	return &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			switch req.Params.Message {
			case "accept":
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			case "decline":
				return &sdk.ElicitResult{Action: "decline"}, nil
			case "cancel":
				return &sdk.ElicitResult{Action: "cancel"}, nil
			}
			return nil, errors.New("unexpected elicitation " + req.Params.Message)
		},
		CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			prompt := "?"
			if len(req.Params.Messages) == 1 {
				if tc, ok := req.Params.Messages[0].Content.(*sdk.TextContent); ok {
					prompt = tc.Text
				}
			}
			if req.Params.MaxTokens != 50 {
				return nil, errors.New("maxTokens is not 50")
			}
			return &sdk.CreateMessageResult{Model: "test-model", Role: "assistant",
				Content: &sdk.TextContent{Text: "echo: " + prompt}}, nil
		},
	}
}

func TestGoSDKElicitationAndSampling(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			c := connectGo(t, s.url(variant), answeringClient(), latestVersion, &sdk.Root{URI: "file:///work/a", Name: "a"})
			c.wantText(t, "elicit", map[string]any{"message": "accept"}, "action=accept name=Ada")
			c.wantText(t, "elicit", map[string]any{"message": "decline"}, "action=decline name=-")
			c.wantText(t, "elicit", map[string]any{"message": "cancel"}, "action=cancel name=-")
			c.wantText(t, "sample", map[string]any{"prompt": "hi"}, "model=test-model text=echo: hi")
			c.wantText(t, "roots", nil, "roots=file:///work/a")
			// A JSON-RPC error from the client reaches the tool in-band.
			res := c.call(t, "elicit", map[string]any{"message": "other"})
			if !res.IsError || !strings.HasPrefix(goText(t, res), "elicitation failed: ") {
				t.Errorf("elicit answered with an error = %+v, want an in-band error", res)
			}
		})
	}
}

// A client that did not declare a capability gets no request: the tool
// fails in-band. (In stateless mode the server cannot know the client's
// capabilities: there the client's own refusal reaches the tool in-band,
// which the Go SDK gives for elicitation and sampling without a handler; it
// always answers roots/list.)
func TestGoSDKMissingCapability(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	tests := map[string]map[string]string{
		"session":   {"elicit": "elicitation failed: ", "sample": "sampling failed: ", "roots": "roots failed: "},
		"stateless": {"elicit": "elicitation failed: ", "sample": "sampling failed: "},
	}
	for variant, tools := range tests {
		t.Run(variant, func(t *testing.T) {
			c := connectGo(t, s.url(variant), &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}, latestVersion)
			for tool, prefix := range tools {
				res := c.call(t, tool, map[string]any{"message": "accept"})
				if !res.IsError || !strings.HasPrefix(goText(t, res), prefix) {
					t.Errorf("%s = %+v, want an in-band error %q...", tool, res, prefix)
				}
			}
		})
	}
}

// SSE polling: the server closes the call's stream early; the SDK resumes it
// with GET + Last-Event-ID and gets the result.
func TestGoSDKReconnect(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	sink := newLogSink()
	c := connectGo(t, s.url("session"), &sdk.ClientOptions{LoggingMessageHandler: sink.handle}, latestVersion)
	c.wantText(t, "reconnect", nil, "reconnected")
	if m := sink.next(t); m != "info:after reconnect" {
		t.Errorf("log = %q, want the message sent after the stream closed", m)
	}
}

// listed returns key(item) for every item of an SDK listing, in order,
// failing the test on an error.
func listed[T any](t *testing.T, what string, seq iter.Seq2[T, error], key func(T) string) []string {
	t.Helper()
	var out []string
	for item, err := range seq {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, key(item))
	}
	return out
}
