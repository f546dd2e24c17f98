package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The 2026-07-28 client against a server that speaks that era: the official
// Go SDK with Stateless: true, in JSON and in SSE answers. A wrong text, and
// a server that answers only the 2025 era, fail the checks.
func TestModernEcho(t *testing.T) {
	for _, jsonResponse := range []bool{true, false} {
		server := mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1"}, nil)
		type in struct {
			Text string `json:"text"`
		}
		mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			text := a.Text
			if text == "wrong" {
				text = "other"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonResponse})
		srv := httptest.NewServer(h)
		c := New(strings.TrimPrefix(srv.URL, "http://"), "/", 5*time.Second)
		if err := c.Discover(); err != nil {
			t.Fatalf("json=%v: Discover: %v", jsonResponse, err)
		}
		for _, text := range []string{"a-1", "a-2"} {
			if err := c.EchoModern([]byte(text)); err != nil {
				t.Errorf("json=%v: EchoModern(%s): %v", jsonResponse, text, err)
			}
		}
		if err := c.EchoModern([]byte("wrong")); err == nil {
			t.Errorf("json=%v: a wrong echo passed the check", jsonResponse)
		}
		c.Close()
		srv.Close()
	}

	// A 2025-only server: discover fails the check.
	legacy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Unsupported protocol version"}}`))
	}))
	defer legacy.Close()
	c := New(strings.TrimPrefix(legacy.URL, "http://"), "/", 5*time.Second)
	defer c.Close()
	if err := c.Discover(); err == nil {
		t.Errorf("Discover passed on a 2025-only server")
	}
}
