//go:build eraproof

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The proof of the new-era harnesses against a peer that already speaks
// 2026-07-28: the official Go SDK's server with Stateless: true, serving a
// few of the fixture's tools with the fixture's answers. It is not part of
// `make test` (luamcp is what the suite judges); run it when a harness
// changes:
//
//	cd tests && go test -tags eraproof -race -count=1 -run TestEraProof -v .

// startPeer serves the peer at /mcp and returns its URL and server (whose
// AddTool announces tools/list_changed).
func startPeer(t *testing.T) (string, *sdk.Server) {
	t.Helper()
	server := sdk.NewServer(&sdk.Implementation{Name: "go-sdk-peer", Version: "1.0.0"}, nil)
	object := map[string]any{"type": "object"}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	server.AddTool(&sdk.Tool{Name: "add", InputSchema: object}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ A, B float64 }
		if err := unmarshalArgs(req, &in); err != nil {
			return nil, err
		}
		return text(fmt.Sprint(in.A + in.B)), nil
	})
	server.AddTool(&sdk.Tool{Name: "count", InputSchema: object}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("1"), nil
	})
	server.AddTool(&sdk.Tool{Name: "progress", InputSchema: object}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		for i := 1; i <= 2; i++ {
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(),
				Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d/2", i)}); err != nil {
				return nil, err
			}
		}
		return text("done"), nil
	})
	server.AddTool(&sdk.Tool{Name: "elicit", InputSchema: object}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Message string }
		if err := unmarshalArgs(req, &in); err != nil {
			return nil, err
		}
		if r, ok := req.Params.InputResponses["1"].(*sdk.ElicitResult); ok {
			name := "-"
			if n, ok := r.Content["name"].(string); ok {
				name = n
			}
			return text("action=" + r.Action + " name=" + name), nil
		}
		return &sdk.CallToolResult{RequestState: "peer", InputRequests: sdk.InputRequestMap{"1": &sdk.ElicitParams{
			Message: in.Message,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
				"required": []string{"name"}},
		}}}, nil
	})
	server.AddTool(&sdk.Tool{Name: "sample", InputSchema: object}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Prompt string }
		if err := unmarshalArgs(req, &in); err != nil {
			return nil, err
		}
		switch r := req.Params.InputResponses["1"].(type) {
		case *sdk.CreateMessageResult:
			tc, _ := r.Content.(*sdk.TextContent)
			return text("model=" + r.Model + " text=" + tc.Text), nil
		case *sdk.CreateMessageWithToolsResult:
			tc, _ := r.Content[0].(*sdk.TextContent)
			return text("model=" + r.Model + " text=" + tc.Text), nil
		case nil:
		default:
			return nil, fmt.Errorf("sampling answer %T", r)
		}
		return &sdk.CallToolResult{RequestState: "peer", InputRequests: sdk.InputRequestMap{"1": &sdk.CreateMessageParams{
			MaxTokens: 50, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: in.Prompt}}},
		}}}, nil
	})
	server.AddTool(&sdk.Tool{Name: "where", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
		"count":  map[string]any{"type": "integer", "x-mcp-header": "Count"},
	}}}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct {
			Region *string
			Count  *int
		}
		if err := unmarshalArgs(req, &in); err != nil {
			return nil, err
		}
		region, count := "nil", "nil"
		if in.Region != nil {
			region = *in.Region
		}
		if in.Count != nil {
			count = fmt.Sprint(*in.Count)
		}
		return text(region + " " + count), nil
	})
	var added atomic.Int64
	server.AddTool(&sdk.Tool{Name: "broadcast", InputSchema: object}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		// The SDK announces tools/list_changed to every session when a tool
		// is added.
		server.AddTool(&sdk.Tool{Name: fmt.Sprint("added", added.Add(1)), InputSchema: object},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("added"), nil })
		return text("broadcast"), nil
	})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", server
}

func unmarshalArgs(req *sdk.CallToolRequest, v any) error {
	if len(req.Params.Arguments) == 0 {
		return nil
	}
	return json.Unmarshal(req.Params.Arguments, v)
}

// TestEraProofGoHarness runs the Go harness of era_go_test.go on the peer.
func TestEraProofGoHarness(t *testing.T) {
	url, server := startPeer(t)
	c, rec := connectEra(t, url, answeringClient())
	checkDiscoverOnly(t, rec, "public") // the SDK's choice
	c.wantText(t, "add", map[string]any{"a": 2, "b": 3}, "5")
	c.wantText(t, "elicit", map[string]any{"message": "accept"}, "action=accept name=Ada")
	checkEraWire(t, rec)

	c2, rec2 := connectEra(t, url, answeringClient())
	c2.wantText(t, "elicit", map[string]any{"message": "decline"}, "action=decline name=-")
	checkInputRequiredRound(t, rec2, "elicitation/create")
	c2.wantText(t, "sample", map[string]any{"prompt": "hi"}, "model=test-model text=echo: hi")

	// The listen stream: acknowledged, then list_changed when a tool is added.
	changed := make(chan struct{}, 10)
	l, lrec := connectEra(t, url, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	lrec.waitBody(t, "subscriptions/listen", "notifications/subscriptions/acknowledged")
	server.AddTool(&sdk.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	select {
	case <-changed:
	case <-time.After(waitLong):
		t.Fatalf("no tools/list_changed on the peer's listen stream:%s", lrec)
	}
	checkEraWire(t, lrec)
	_ = l

	// Progress on the call's stream.
	var got []string
	var mu sync.Mutex
	p, _ := connectEra(t, url, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params.Message)
		mu.Unlock()
	}})
	params := &sdk.CallToolParams{Name: "progress"}
	params.SetProgressToken("peer")
	if res, err := p.CallTool(goCtx(t), params); err != nil || goText(t, res) != "done" {
		t.Fatalf("progress = %+v, %v", res, err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Errorf("progress messages %q", got)
	}
}

// TestEraProofTSHarness runs the scenarios of node/era.mjs that need no
// fixture-only tool on the peer, pinned and in auto mode.
func TestEraProofTSHarness(t *testing.T) {
	url, _ := startPeer(t)
	for _, scenario := range []string{"core-pinned", "core-auto", "listen-broadcast"} {
		t.Run(scenario, func(t *testing.T) { tsRun(t, "era.mjs", scenario, url) })
	}
}

// TestEraProofRawRejects runs the refusals of era_raw_test.go on the peer:
// all but the fixture's resources, and -32021 (the peer's handler does not
// check the client's capabilities; luamcp's transport does).
func TestEraProofRawRejects(t *testing.T) {
	url, _ := startPeer(t)
	s := &testServer{t: t, client: &http.Client{}}
	for _, tt := range eraRejects() {
		if tt.name == "resource not found" || tt.name == "missing client capability" {
			continue
		}
		t.Run(tt.name, func(t *testing.T) { tt.run(t, s, url) })
	}
}

// TestEraProofParamHeaders runs the Mcp-Param-* checks on the peer.
func TestEraProofParamHeaders(t *testing.T) {
	url, _ := startPeer(t)
	checkParamHeaders(t, &testServer{t: t, client: &http.Client{}}, url)
}

// TestEraProofInputRequiredWire runs the input_required round of
// era_raw_test.go on the peer, without the integrity checks (the peer's
// requestState is a constant).
func TestEraProofInputRequiredWire(t *testing.T) {
	url, _ := startPeer(t)
	checkInputRequiredWire(t, &testServer{t: t, client: &http.Client{}}, url, false)
}
