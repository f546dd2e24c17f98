package tests

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// TestHTTP3StalledStream: a client that stops reading an HTTP/3 stream
// (its flow-control window never opens past 64 bytes) has the stream reset
// once a write has waited the write timeout, on a connection that stays
// up, and the handler is gone. Not parallel: it counts goroutines.
func TestHTTP3StalledStream(t *testing.T) {
	s := startTLSWith(t, true, serveFront, shortWrites, "stateless")
	// A first client brings up what the server starts with its first
	// HTTP/3 connection (quic-go's transport) before the count.
	warm := s.h3Transport()
	if r, err := (&http.Client{Transport: warm}).Post(s.url("stateless"), "application/json", strings.NewReader(`{}`)); err == nil {
		r.Body.Close()
	}
	warm.Close()
	time.Sleep(100 * time.Millisecond)
	baseline := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	qc, err := quic.DialAddr(ctx, s.srv.Addr().String(), &tls.Config{RootCAs: s.ca.pool, NextProtos: []string{http3.NextProtoH3}},
		&quic.Config{InitialStreamReceiveWindow: 64, MaxStreamReceiveWindow: 64})
	if err != nil {
		t.Fatal(err)
	}
	cc := (&http3.Transport{}).NewClientConn(qc)
	post := func(body any) *http.Response {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url("stateless"), bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
		req.Header.Set("MCP-Protocol-Version", latestVersion)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := post(request(1, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"pad": strings.Repeat("x", 200<<10)}}))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/call: %s", resp.Status)
	}
	time.Sleep(time.Second) // nothing read meanwhile: shortWrites gives a write 150 ms
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	t.Logf("the stalled stream read afterwards: %d of %d bytes, %v", n, resp.ContentLength, err)
	if err == nil || n >= resp.ContentLength {
		t.Errorf("the stalled stream read afterwards: %d of %d bytes, %v; want it reset", n, resp.ContentLength, err)
	}
	if qc.Context().Err() != nil {
		t.Fatalf("the connection closed (%v): only the stalled stream should end", context.Cause(qc.Context()))
	}
	r := post(request(2, "ping", nil))
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("a ping on the same connection afterwards: %s", r.Status)
	}
	qc.CloseWithError(0, "")
	settle(t, baseline+2, "after the stalled client left")
}
