package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// leanServer is a minimal Go server for benchmarks: the transport's cost,
// not the fake's bookkeeping, is what they measure.
type leanServer struct{ ir *mcp.InitResult }

type leanSession struct{ mcp.Session }

var leanResult = json.RawMessage(`{"content":[{"type":"text","text":"5"}],"isError":false}`)

func newLeanServer() *leanServer {
	return &leanServer{ir: &mcp.InitResult{
		ServerInfo:   json.RawMessage(`{"name":"lean","version":"1"}`),
		Capabilities: json.RawMessage(`{"tools":{}}`),
		Has:          mcp.Capabilities{Tools: true},
	}}
}

func (l *leanServer) Init(context.Context, json.RawMessage, string) (mcp.Session, *mcp.InitResult, error) {
	return leanSession{}, l.ir, nil
}

func (leanSession) CallTool(ctx context.Context, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	if name != "add" {
		return nil, mcp.ErrUnknownTool(name)
	}
	return leanResult, nil
}

// Tools lists the one tool, without x-mcp-header: the route checks a
// 2026-07-28 call's headers until it has seen a listing.
func (leanSession) Tools(context.Context) ([]mcp.Item, error) {
	return []mcp.Item{{Key: "add", JSON: json.RawMessage(`{"name":"add","inputSchema":{"type":"object"}}`)}}, nil
}

func (leanSession) Channels(context.Context) ([]string, error) { return nil, nil }
func (leanSession) Close(string)                               {}

// benchCall posts body to url over client and checks the status.
func benchCall(b *testing.B, client *http.Client, url, sid string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["Accept"] = []string{"application/json, text/event-stream"}
	if sid != "" {
		req.Header["Mcp-Session-Id"] = []string{sid}
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// benchRoute serves the fake on a real loopback listener. allocs/op counts
// the HTTP client too.
func benchRoute(b *testing.B, sessions bool) (url, sid string, client *http.Client) {
	h := mcp.NewHandler(newLeanServer(), mcp.Options{Sessions: sessions, SessionMaxPending: 1 << 16}, nil, quietLogger())
	srv := httptest.NewServer(h)
	b.Cleanup(func() {
		_ = h.Shutdown(context.Background())
		srv.Close()
	})
	client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	if sessions {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid = resp.Header.Get("Mcp-Session-Id")
	}
	return srv.URL, sid, client
}

var addCall = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`)

// BenchmarkToolsCall measures one buffered tools/call round trip on a
// session, over a real loopback connection.
func BenchmarkToolsCall(b *testing.B) {
	url, sid, client := benchRoute(b, true)
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, client, url, sid, addCall)
	}
}

// BenchmarkToolsCallStateless is the same call on a stateless route.
func BenchmarkToolsCallStateless(b *testing.B) {
	url, _, client := benchRoute(b, false)
	b.ReportAllocs()
	for b.Loop() {
		benchCall(b, client, url, "", addCall)
	}
}

// BenchmarkToolsCallParallel measures throughput with concurrent clients,
// each on its own session.
func BenchmarkToolsCallParallel(b *testing.B) {
	url, _, client := benchRoute(b, true)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		for pb.Next() {
			benchCall(b, client, url, sid, addCall)
		}
	})
}

// benchInproc measures ServeHTTP alone (no network): request decoding,
// dispatch and encoding.
func benchInproc(b *testing.B, sessions bool) {
	h := mcp.NewHandler(newLeanServer(), mcp.Options{Sessions: sessions}, nil, quietLogger())
	sid := ""
	if sessions {
		r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = "127.0.0.1:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		sid = w.Header().Get("Mcp-Session-Id")
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", bytes.NewReader(addCall))
		r.Header["Content-Type"] = []string{"application/json"}
		r.Header["Mcp-Session-Id"] = []string{sid}
		r.RemoteAddr = "127.0.0.1:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkServeHTTPSession is one buffered tools/call through ServeHTTP on a session.
func BenchmarkServeHTTPSession(b *testing.B) { benchInproc(b, true) }

// BenchmarkServeHTTPStateless is the same on a stateless route.
func BenchmarkServeHTTPStateless(b *testing.B) { benchInproc(b, false) }

// BenchmarkServeHTTPStatelessEra is the same call in the 2026-07-28 era
// (per-request _meta and headers, a fresh Session), on a session route.
func BenchmarkServeHTTPStatelessEra(b *testing.B) {
	h := mcp.NewHandler(newLeanServer(), mcp.Options{Sessions: true}, nil, quietLogger())
	body := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", bytes.NewReader(body))
		r.Header["Content-Type"] = []string{"application/json"}
		r.Header["Mcp-Protocol-Version"] = []string{"2026-07-28"}
		r.Header["Mcp-Method"] = []string{"tools/call"}
		r.Header["Mcp-Name"] = []string{"add"}
		r.RemoteAddr = "127.0.0.1:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"resultType":"complete"`)) {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}
