package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2026-07-28 era (stateless, per request) seen by the official Go SDK
// v1.8.0 client in its default mode: it opens with server/discover at
// 2026-07-28 and stays in that era when the server answers. Every test here
// first requires that the client did NOT fall back to initialize: a route
// that does not serve the new era fails them all, loudly.

const eraVersion = "2026-07-28"

// eraExchange is one HTTP exchange of a client, as an eraRecorder saw it.
type eraExchange struct {
	HTTPMethod string
	Method     string // the Mcp-Method header
	Name       string // the Mcp-Name header
	Version    string // the MCP-Protocol-Version header
	Status     int
	Session    string // the Mcp-Session-Id the server answered with
	body       bytes.Buffer
}

// eraRecorder is an http.RoundTripper that records every exchange and what
// the client read of each response body (JSON, or an SSE stream as it came).
type eraRecorder struct {
	base *http.Transport
	mu   sync.Mutex
	log  []*eraExchange
}

func newEraRecorder() *eraRecorder { return &eraRecorder{base: &http.Transport{}} }

func (r *eraRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	ex := &eraExchange{
		HTTPMethod: req.Method,
		Method:     req.Header.Get("Mcp-Method"),
		Name:       req.Header.Get("Mcp-Name"),
		Version:    req.Header.Get("MCP-Protocol-Version"),
	}
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	r.mu.Lock()
	ex.Status = resp.StatusCode
	ex.Session = resp.Header.Get("Mcp-Session-Id")
	r.log = append(r.log, ex)
	r.mu.Unlock()
	resp.Body = &recordedBody{ReadCloser: resp.Body, rec: r, ex: ex}
	return resp, nil
}

// recordedBody copies what the client reads into its exchange.
type recordedBody struct {
	io.ReadCloser
	rec *eraRecorder
	ex  *eraExchange
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.rec.mu.Lock()
	b.ex.body.Write(p[:n])
	b.rec.mu.Unlock()
	return n, err
}

// eraSeen is a snapshot of one exchange.
type eraSeen struct {
	HTTPMethod, Method, Name, Version, Session string
	Status                                     int
	Body                                       string
}

func (s eraSeen) String() string {
	body := s.Body
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("%s Mcp-Method=%q Mcp-Name=%q version=%q -> %d session=%q %s", s.HTTPMethod, s.Method, s.Name, s.Version, s.Status, s.Session, body)
}

// exchanges returns a snapshot of every exchange so far.
func (r *eraRecorder) exchanges() []eraSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]eraSeen, len(r.log))
	for i, ex := range r.log {
		out[i] = eraSeen{ex.HTTPMethod, ex.Method, ex.Name, ex.Version, ex.Session, ex.Status, ex.body.String()}
	}
	return out
}

func (r *eraRecorder) String() string {
	var b strings.Builder
	for i, ex := range r.exchanges() {
		fmt.Fprintf(&b, "\n  %d: %s", i+1, ex)
	}
	return b.String()
}

// waitBody waits until an exchange with Mcp-Method method has read a body
// containing substr (a listen stream's acknowledgement, for one).
func (r *eraRecorder) waitBody(t *testing.T, method, substr string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		for _, ex := range r.exchanges() {
			if ex.Method == method && strings.Contains(ex.Body, substr) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s exchange read %q within %v; exchanges:%s", method, substr, waitLong, r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connectEra connects the Go SDK client with its default protocol version
// and requires the 2026-07-28 era: discover answered, no session id.
func connectEra(t *testing.T, url string, opts *sdk.ClientOptions, roots ...*sdk.Root) (*goClient, *eraRecorder) {
	t.Helper()
	rec := newEraRecorder()
	client := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-era-e2e", Version: "1.0.0"}, opts)
	client.AddRoots(roots...)
	transport := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}, MaxRetries: 2}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("Go SDK Connect(%s) in its default mode: %v\nexchanges:%s", url, err, rec)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		rec.base.CloseIdleConnections()
	})
	if v := cs.InitializeResult().ProtocolVersion; v != eraVersion {
		t.Fatalf("the Go SDK v1.8.0 client negotiated %q at %s, want %s: the route does not serve the 2026-07-28 era, "+
			"so the client fell back to initialize\nexchanges:%s", v, url, eraVersion, rec)
	}
	if cs.ID() != "" {
		t.Errorf("a 2026-07-28 connection has the session id %q: the new era has no sessions", cs.ID())
	}
	return &goClient{ClientSession: cs}, rec
}

// checkEraWire requires that every POST a new-era client made carried the
// 2026-07-28 header, that none was initialize, and that no answer minted a
// session.
func checkEraWire(t *testing.T, rec *eraRecorder) {
	t.Helper()
	for _, ex := range rec.exchanges() {
		if ex.Session != "" {
			t.Errorf("the server minted session %q for a 2026-07-28 request: %s", ex.Session, ex)
		}
		if ex.HTTPMethod == http.MethodPost && (ex.Version != eraVersion || ex.Method == "initialize") {
			t.Errorf("a new-era client sent %s", ex)
		}
	}
}

// wantRPCCode checks that err carries a JSON-RPC error with code, and returns
// it.
func wantRPCCode(t *testing.T, err error, code int64) *jsonrpc.Error {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("error %v, want a JSON-RPC error %d", err, code)
	}
	if werr.Code != code {
		t.Errorf("error %d %q, want code %d", werr.Code, werr.Message, code)
	}
	return werr
}

// TestEraGoSDKEveryMethod runs every method the new era keeps on the fixture,
// in session mode and stateless: a session-mode script serves the new era from
// a fresh init per request, so its counter never passes 1.
func TestEraGoSDKEveryMethod(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			c, rec := connectEra(t, s.url(variant), nil)
			ctx := goCtx(t)
			init := c.InitializeResult()
			if init.ServerInfo == nil || init.ServerInfo.Name != "luamcp-test-fixture" || init.Capabilities == nil ||
				init.Capabilities.Tools == nil || init.Capabilities.Resources == nil || init.Capabilities.Prompts == nil ||
				init.Capabilities.Completions == nil {
				t.Errorf("server/discover result = %+v", init)
			}
			names := listed(t, "Tools", c.Tools(ctx, nil), func(tool *sdk.Tool) string { return tool.Name })
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
			c.wantText(t, "count", nil, "1")
			c.wantText(t, "count", nil, "1") // a fresh init per request, sessions or not

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
			if werr := (*jsonrpc.Error)(nil); !errors.As(err, &werr) || werr.Message != "locked" {
				t.Errorf("ReadResource mem://locked: %v, want the script's error \"locked\"", err)
			}
			// Not found is -32602 with data.uri in the new era (-32002 is gone).
			_, err = c.ReadResource(ctx, &sdk.ReadResourceParams{URI: "mem://nope"})
			if werr := wantRPCCode(t, err, -32602); werr != nil {
				var data struct{ URI string }
				if json.Unmarshal(werr.Data, &data) != nil || data.URI != "mem://nope" {
					t.Errorf("not found data = %s, want {\"uri\": \"mem://nope\"}", werr.Data)
				}
			}
			templates := listed(t, "ResourceTemplates", c.ResourceTemplates(ctx, nil), func(tmpl *sdk.ResourceTemplate) string { return tmpl.URITemplate })
			if !reflect.DeepEqual(templates, []string{"mem://user/{id}"}) {
				t.Errorf("templates = %v", templates)
			}

			prompts := listed(t, "Prompts", c.Prompts(ctx, nil), func(p *sdk.Prompt) string { return p.Name })
			if !reflect.DeepEqual(prompts, []string{"greet", "deny", "count"}) {
				t.Errorf("prompts = %v", prompts)
			}
			gp, err := c.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
			if err != nil || len(gp.Messages) != 1 {
				t.Fatalf("GetPrompt greet = %+v, %v", gp, err)
			}
			if tc, ok := gp.Messages[0].Content.(*sdk.TextContent); !ok || tc.Text != "Hello, Ada" {
				t.Errorf("greet message = %#v, want text \"Hello, Ada\"", gp.Messages[0].Content)
			}
			_, err = c.GetPrompt(ctx, &sdk.GetPromptParams{Name: "deny"})
			wantRPCError(t, err, -32602, "denied")
			comp, err := c.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "greet"},
				Argument: sdk.CompleteParamsArgument{Name: "who", Value: "Ad"}})
			if err != nil || !reflect.DeepEqual(comp.Completion.Values, []string{"Ada", "Adam"}) {
				t.Errorf("Complete = %+v, %v, want [Ada Adam]", comp, err)
			}
			checkEraWire(t, rec)
		})
	}
}

// TestEraDiscoverNoExtraRoundTrip: a dual-era client pays nothing for asking.
// The Go SDK's default connect is one exchange, server/discover, answered at
// once with both eras' versions; the first call is the second exchange.
func TestEraDiscoverNoExtraRoundTrip(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			c, rec := connectEra(t, s.url(variant), nil)
			checkDiscoverOnly(t, rec, "private") // the default of cache_scope
			c.wantText(t, "add", map[string]any{"a": 1, "b": 2}, "3")
			if ex := rec.exchanges(); len(ex) != 2 || ex[1].Method != "tools/call" || ex[1].Name != "add" {
				t.Errorf("the first call was not the second exchange:%s", rec)
			}
		})
	}
}

// checkDiscoverOnly requires that the connection so far was one exchange:
// server/discover, answered 200 with a complete result naming both eras'
// versions and the cache hints, with cacheScope scope.
func checkDiscoverOnly(t *testing.T, rec *eraRecorder, scope string) {
	t.Helper()
	ex := rec.exchanges()
	if len(ex) != 1 || ex[0].Method != "server/discover" || ex[0].Status != http.StatusOK {
		t.Fatalf("connect took %d exchanges, want exactly one server/discover answered 200:%s", len(ex), rec)
	}
	var disc struct {
		Result struct {
			ResultType        string   `json:"resultType"`
			SupportedVersions []string `json:"supportedVersions"`
			TTLMs             *int64   `json:"ttlMs"`
			CacheScope        string   `json:"cacheScope"`
		} `json:"result"`
	}
	body := ex[0].Body
	if i := strings.Index(body, "data: "); i >= 0 { // an SSE answer: its one event
		body, _, _ = strings.Cut(body[i+len("data: "):], "\n")
	}
	if err := json.Unmarshal([]byte(body), &disc); err != nil {
		t.Fatalf("server/discover answer is not JSON-RPC: %v\n%s", err, ex[0].Body)
	}
	r := disc.Result
	if r.ResultType != "complete" || !slices.Contains(r.SupportedVersions, eraVersion) ||
		!slices.Contains(r.SupportedVersions, latestVersion) || r.TTLMs == nil || r.CacheScope != scope {
		t.Errorf("server/discover result = %+v, want complete, both eras' versions, ttlMs, cacheScope %s", r, scope)
	}
}

// checkInputRequiredRound requires that the recorded tools/call exchanges
// were exactly one input_required round: an answer carrying an
// inputRequests entry of method and a requestState, then the retry's
// complete result.
func checkInputRequiredRound(t *testing.T, rec *eraRecorder, method string) {
	t.Helper()
	var calls []eraSeen
	for _, ex := range rec.exchanges() {
		if ex.Method == "tools/call" {
			calls = append(calls, ex)
		}
	}
	if len(calls) != 2 || !strings.Contains(calls[0].Body, `"input_required"`) || !strings.Contains(calls[0].Body, `"requestState"`) ||
		!strings.Contains(calls[0].Body, `"`+method+`"`) || !strings.Contains(calls[1].Body, `"complete"`) {
		t.Errorf("the call took %d tools/call exchanges, want 2: input_required with a %s request and a requestState, then complete:%s", len(calls), method, rec)
	}
}

// TestEraGoSDKElicitationAndSampling: mcp.elicit, mcp.sample and
// mcp.list_roots, unchanged in the scripts, reach the new-era client through
// input_required rounds, which the SDK fulfils and retries.
func TestEraGoSDKElicitationAndSampling(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			c, rec := connectEra(t, s.url(variant), answeringClient())
			c.wantText(t, "elicit", map[string]any{"message": "accept"}, "action=accept name=Ada")
			checkInputRequiredRound(t, rec, "elicitation/create")
			c.wantText(t, "elicit", map[string]any{"message": "decline"}, "action=decline name=-")
			c.wantText(t, "elicit", map[string]any{"message": "cancel"}, "action=cancel name=-")
			c.wantText(t, "sample", map[string]any{"prompt": "hi"}, "model=test-model text=echo: hi")
			checkEraWire(t, rec)
		})
	}
}

// TestEraGoSDKRoots: roots/list through input_required.
func TestEraGoSDKRoots(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			c, rec := connectEra(t, s.url(variant), nil, &sdk.Root{URI: "file:///work/a", Name: "a"})
			c.wantText(t, "roots", nil, "roots=file:///work/a")
			checkInputRequiredRound(t, rec, "roots/list")
			checkEraWire(t, rec)
		})
	}
}

func TestEraGoSDKProgress(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			c, rec := connectEra(t, s.url(variant), &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
					mu.Lock()
					got = append(got, req.Params.Message)
					mu.Unlock()
				},
			})
			params := &sdk.CallToolParams{Name: "progress"}
			params.SetProgressToken("era-progress")
			res, err := c.CallTool(goCtx(t), params)
			if err != nil || goText(t, res) != "done" {
				t.Fatalf("progress = %+v, %v", res, err)
			}
			deadline := time.Now().Add(waitShort) // the SDK runs handlers asynchronously
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
			checkEraWire(t, rec)
		})
	}
}

// TestEraGoSDKLogging: in the new era a call's log messages go on its own
// stream, at the level its _meta names, and nowhere when it names none.
func TestEraGoSDKLogging(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	sink := newLogSink()
	c, _ := connectEra(t, s.url("session"), &sdk.ClientOptions{LoggingMessageHandler: sink.handle})
	logAt := func(level, meta string) {
		params := &sdk.CallToolParams{Name: "log", Arguments: map[string]any{"level": level, "on": "call"}}
		if meta != "" {
			params.Meta = sdk.Meta{"io.modelcontextprotocol/logLevel": meta}
		}
		res, err := c.CallTool(goCtx(t), params)
		if err != nil || goText(t, res) != "logged" {
			t.Fatalf("log %s (logLevel %q) = %+v, %v", level, meta, res, err)
		}
	}
	logAt("critical", "")     // no logLevel: no message
	logAt("info", "warning")  // below the level: no message
	logAt("error", "warning") // sent
	if m := sink.next(t); m != "error:log at error" {
		t.Errorf("first log = %q, want error (nothing without a logLevel, nothing below it)", m)
	}
	logAt("debug", "debug") // sent
	if m := sink.next(t); m != "debug:log at debug" {
		t.Errorf("second log = %q, want debug", m)
	}
}

// TestEraGoSDKListen: subscriptions/listen streams get list_changed from
// another client's broadcast (a 2025 session on the same URL) and
// resources/updated for a subscribed URI.
func TestEraGoSDKListen(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	updated := make(chan string, 10)
	changed := make(chan struct{}, 10)
	a, rec := connectEra(t, s.url("session"), &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	rec.waitBody(t, "subscriptions/listen", "notifications/subscriptions/acknowledged")
	if err := a.Subscribe(goCtx(t), &sdk.SubscribeParams{URI: "mem://greeting"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLong)
	for {
		n := 0
		for _, ex := range rec.exchanges() {
			if ex.Method == "subscriptions/listen" && strings.Contains(ex.Body, "notifications/subscriptions/acknowledged") {
				n++
			}
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resource subscription's listen stream was not acknowledged:%s", rec)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := connectGo(t, s.url("session"), nil, latestVersion) // a 2025 session beside it
	b.wantText(t, "touch", map[string]any{"uri": "mem://greeting"}, "touched")
	select {
	case uri := <-updated:
		if uri != "mem://greeting" {
			t.Errorf("updated %q", uri)
		}
	case <-time.After(waitLong):
		t.Fatalf("no resources/updated on the listen stream within %v:%s", waitLong, rec)
	}
	b.wantText(t, "broadcast", nil, "broadcast")
	select {
	case <-changed:
	case <-time.After(waitLong):
		t.Fatalf("no tools/list_changed on the listen stream within %v:%s", waitLong, rec)
	}
	for _, ex := range rec.exchanges() {
		if ex.Method == "subscriptions/listen" && !strings.Contains(ex.Body, "io.modelcontextprotocol/subscriptionId") {
			t.Errorf("a listen stream's messages lack _meta subscriptionId: %s", ex)
		}
	}
	checkEraWire(t, rec)
}

// TestEraGoSDKListenHotReload: an edit of a script on disk reaches the
// listen stream of a new-era client as tools/list_changed, and the next
// tools/list shows the new tool.
func TestEraGoSDKListenHotReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "reload", "lib"), filepath.Join(dir, "lib"))
	copyFile(t, filepath.Join("testdata", "reload", "counter.lua"), filepath.Join(dir, "counter.lua"))
	logs := newLogRecorder()
	h, err := host.New(host.Config{Dir: dir, Logger: slog.New(logs), Watch: true, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("host.Shutdown: %v", err)
		}
		srv.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.dump())
		}
	})
	changed := make(chan struct{}, 10)
	c, rec := connectEra(t, srv.URL+"/mcp/counter", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	rec.waitBody(t, "subscriptions/listen", "notifications/subscriptions/acknowledged")
	// A 2025 session on the same route at the same time keeps its state.
	old := connectGo(t, srv.URL+"/mcp/counter", nil, latestVersion)
	old.wantText(t, "increment", nil, "count 1")

	replace(t, filepath.Join(dir, "counter.lua"), readFile(t, filepath.Join("testdata", "reload", "counter_v2.lua")))
	select {
	case <-changed:
	case <-time.After(waitLong):
		t.Fatalf("no tools/list_changed on the listen stream within %v of the edit:%s", waitLong, rec)
	}
	res, err := c.ListTools(goCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !reflect.DeepEqual(names, []string{"double", "get", "increment"}) {
		t.Errorf("tools after the reload = %v, want [double get increment]", names)
	}
	old.wantText(t, "get", nil, "count 1")
	checkEraWire(t, rec)
}

// TestEraBothErasAtOnce: 2025 sessions and new-era clients on the same URLs
// at the same time, interleaved: each 2025 session keeps its own count, each
// new-era call starts from a fresh init.
func TestEraBothErasAtOnce(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	const rounds = 20
	// Connected here, on the test's goroutine; the calls then interleave.
	olds := []*goClient{connectGo(t, s.url("session"), nil, latestVersion), connectGo(t, s.url("session"), nil, latestVersion)}
	era := map[string]*goClient{}
	var recs []*eraRecorder
	for _, variant := range []string{"session", "stateless"} {
		c, rec := connectEra(t, s.url(variant), nil)
		era[variant] = c
		recs = append(recs, rec)
	}
	// text calls a tool and returns its text, or describes what went wrong.
	text := func(c *goClient, name string, args map[string]any) (string, error) {
		res, err := c.CallTool(goCtx(t), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return "", err
		}
		if len(res.Content) != 1 || res.IsError {
			return "", fmt.Errorf("result %+v", res)
		}
		tc, ok := res.Content[0].(*sdk.TextContent)
		if !ok {
			return "", fmt.Errorf("content %T", res.Content[0])
		}
		return tc.Text, nil
	}
	var wg sync.WaitGroup
	for i, old := range olds {
		wg.Go(func() {
			for n := 1; n <= rounds; n++ {
				if got, err := text(old, "count", nil); got != fmt.Sprint(n) || err != nil {
					t.Errorf("2025 session %d: count = %q, %v, want %d", i, got, err, n)
					return
				}
			}
		})
	}
	for variant, c := range era {
		wg.Go(func() {
			for range rounds {
				if got, err := text(c, "count", nil); got != "1" || err != nil {
					t.Errorf("new era on %s: count = %q, %v, want 1", variant, got, err)
					return
				}
				if got, err := text(c, "add", map[string]any{"a": 20, "b": 22}); got != "42" || err != nil {
					t.Errorf("new era on %s: add = %q, %v, want 42", variant, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, rec := range recs {
		checkEraWire(t, rec)
	}
}

// TestEraGoSDKBundledScripts: the tutorials of scripts/ in the new era, as
// written for sessions: each request runs on a fresh init, so the counter
// and the notebook start over on every call, and live.lua's question reaches
// the user through input_required.
func TestEraGoSDKBundledScripts(t *testing.T) {
	t.Parallel()
	s := startScripts(t, "hello", "counter", "notes", "live")
	opts := &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {},
	}
	calls := map[string][]struct {
		tool string
		args map[string]any
		want string
	}{
		"hello":   {{"add", map[string]any{"a": 2, "b": 3}, "5"}},
		"counter": {{"increment", nil, "1"}, {"increment", nil, "1"}, {"get", nil, "0"}},
		"notes":   {{"add_note", map[string]any{"title": "Groceries", "text": "milk"}, "1"}, {"add_note", map[string]any{"title": "Todo", "text": "call Ada"}, "1"}},
		"live":    {{"ask_name", nil, "Nice to meet you, Ada!"}, {"report", map[string]any{"seconds": 0}, "Report ready after 0 seconds"}},
	}
	for script, steps := range calls {
		t.Run(script, func(t *testing.T) {
			c, rec := connectEra(t, s.url(script), opts)
			if res, err := c.ListTools(goCtx(t), nil); err != nil || len(res.Tools) == 0 {
				t.Fatalf("tools/list = %+v, %v", res, err)
			}
			for _, st := range steps {
				c.wantText(t, st.tool, st.args, st.want)
			}
			checkEraWire(t, rec)
		})
	}
	// A progress token on live.lua's countdown: the progress arrives on
	// the call's stream, then the result.
	var mu sync.Mutex
	var got []string
	c, _ := connectEra(t, s.url("live"), &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params.Message)
			mu.Unlock()
		},
	})
	params := &sdk.CallToolParams{Name: "countdown", Arguments: map[string]any{"from": 1}}
	params.SetProgressToken("countdown")
	if res, err := c.CallTool(goCtx(t), params); err != nil || goText(t, res) != "Liftoff!" {
		t.Fatalf("countdown = %+v, %v", res, err)
	}
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
	if !reflect.DeepEqual(got, []string{"1...", "liftoff"}) {
		t.Errorf("countdown progress = %q, want [1... liftoff]", got)
	}
}
