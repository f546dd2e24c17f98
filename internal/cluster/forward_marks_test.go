package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// noServer is an mcp.Server whose Init is never reached: the auth hook ends
// every request first.
type noServer struct{}

func (noServer) Init(context.Context, json.RawMessage, string) (mcp.Session, *mcp.InitResult, error) {
	return nil, nil, errors.New("not used")
}

// TestForwardKeepsMarks: a client that names the forward marks in its
// Connection header (fields for this hop only, which a proxy drops) does not
// strip them: the owner's auth hook sees the client's address, forwarded by
// the entry node, over HTTP (a GET) and over a link (a POST).
func TestForwardKeepsMarks(t *testing.T) {
	type seen struct{ remote, forwardedBy string }
	var mu sync.Mutex
	var got []seen
	entry := startOwnerPair(t, mcp.Options{}, func(_ context.Context, r *mcp.AuthRequest) int {
		mu.Lock()
		got = append(got, seen{r.RemoteAddr, r.Headers["luamcp-forwarded-by"]})
		mu.Unlock()
		return http.StatusForbidden
	}).entry

	get := func(connection string) (clientAddr string) {
		req, _ := http.NewRequest(http.MethodGet, entry.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", ownerSID)
		req.Header.Set("Accept", "text/event-stream")
		if connection != "" {
			req.Header.Set("Connection", connection)
		}
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { clientAddr = i.Conn.LocalAddr().String() }}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want the owner hook's 403", resp.StatusCode)
		}
		return clientAddr
	}

	post := func(connection string) {
		req, _ := http.NewRequest(http.MethodPost, entry.URL+"/mcp", strings.NewReader(pingBody))
		req.Header.Set("Mcp-Session-Id", ownerSID)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Connection", connection)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	honest := get("")
	smuggled := get("Luamcp-Forwarded-By")
	post("Luamcp-Forwarded-For") // carried on a link
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("owner hook ran %d times, want 3", len(got))
	}
	if got[2].remote == "" {
		t.Errorf("a linked POST with `Connection: Luamcp-Forwarded-For`: the owner's hook saw no client address")
	}
	if got[0].remote != honest {
		t.Errorf("a GET: the owner's hook saw %s, want the client's %s", got[0].remote, honest)
	}
	if got[1].remote != smuggled || got[1].forwardedBy == "" {
		t.Errorf("a GET with `Connection: Luamcp-Forwarded-By`: the owner's hook saw %s (forwarded by %q), want the client's %s forwarded by a", got[1].remote, got[1].forwardedBy, smuggled)
	}
}
