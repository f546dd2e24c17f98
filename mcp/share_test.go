package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// Clients that take every place of a process-wide cap: one client (an auth
// hook's credential, or a token subject) may hold only its share, so that
// another one still gets in.

// acceptAll is an auth hook that lets every request in: the credential it
// sees names the client.
func acceptAll(context.Context, *mcp.AuthRequest) int { return 0 }

// TestListenShareLeavesRoomForOthers: one client opening listen streams
// until refused must leave places under --max-listens to another.
func TestListenShareLeavesRoomForOthers(t *testing.T) {
	const cap = 16
	rt := newRoute(t, newFakeServer(), mcp.Options{Auth: acceptAll})
	rt.hub.SetMaxListens(cap)
	params := `{"notifications":{"toolsListChanged":true}}`
	body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":` + withMeta(params, metaAll) + `}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := func(credential string) *http.Response {
		return rt.open(ctx, http.MethodPost, body, append(modernHeaders("subscriptions/listen", params), "Authorization: Bearer "+credential)...)
	}
	held := 0
	for range cap + 1 {
		resp := listen("greedy")
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			break
		}
		s := newSSE(t, resp)
		defer s.close()
		s.nextEvent() // the acknowledgement: the stream is open
		held++
	}
	resp := listen("other")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("one client holds %d listen streams of %d; another's gets HTTP %d", held, cap, resp.StatusCode)
	}
}

// TestSessionShareLeavesRoomForOthers: one client initializing sessions
// until refused must leave places under --max-sessions to another.
func TestSessionShareLeavesRoomForOthers(t *testing.T) {
	const cap = 16
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, Auth: acceptAll})
	rt.hub.SetMaxSessions(cap)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	var held []string
	for range cap + 1 {
		r := rt.post(initBody, "Authorization: Bearer greedy")
		if r.status != http.StatusOK {
			break
		}
		held = append(held, r.header.Get("Mcp-Session-Id"))
	}
	if r := rt.post(initBody, "Authorization: Bearer other"); r.status != http.StatusOK {
		t.Fatalf("one client holds %d sessions of %d; another's initialize gets HTTP %d %s", len(held), cap, r.status, r.body)
	}
	// A session's end gives its client's place back.
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+held[0], "Authorization: Bearer greedy"); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.status)
	}
	if r := rt.post(initBody, "Authorization: Bearer greedy"); r.status != http.StatusOK {
		t.Fatalf("initialize after its client ended a session: %d %s", r.status, r.body)
	}
}

// TestUncheckedCredentialHasNoShare: on a route without an auth hook or
// oauth nothing checks the Authorization header, so it names no client: a
// gateway that sends one fixed header for all its users may take every place.
func TestUncheckedCredentialHasNoShare(t *testing.T) {
	const cap = 16
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	rt.hub.SetMaxSessions(cap)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for i := range cap {
		if r := rt.post(initBody, "Authorization: Bearer gateway"); r.status != http.StatusOK {
			t.Fatalf("session %d of %d: HTTP %d %s", i+1, cap, r.status, r.body)
		}
	}
}

// TestStatelessShareLeavesRoomForOthers: one client holding requests open
// (slow tools) until refused must leave places under --max-stateless to
// another.
func TestStatelessShareLeavesRoomForOthers(t *testing.T) {
	const cap = 16
	rt := newRoute(t, newFakeServer(), mcp.Options{Auth: acceptAll})
	rt.hub.SetMaxStateless(cap)
	var waiting []<-chan reply
	for range cap + 1 {
		ch := async(func() reply {
			return rt.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`, "Authorization: Bearer greedy")
		})
		select {
		case <-rt.f.started:
			waiting = append(waiting, ch)
			continue
		case r := <-ch:
			if r.status != http.StatusServiceUnavailable {
				t.Fatalf("greedy request: %d %s", r.status, r.body)
			}
		}
		break
	}
	r := rt.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count"}}`, "Authorization: Bearer other")
	for range waiting {
		rt.f.release <- struct{}{}
	}
	for _, ch := range waiting {
		await(t, ch)
	}
	if r.status != http.StatusOK || r.errorCode() != 0 {
		t.Fatalf("one client holds %d requests of %d; another's gets HTTP %d %s", len(waiting), cap, r.status, r.body)
	}
}

// TestLongStreamsKeepNoHeaders: a listen stream or a GET channel stays open
// for hours; it must not keep the request headers it came with (up to
// net/http's 1 MiB each: 10,000 listens could hold 10 GB). The clients are
// raw connections: the test keeps one copy of the headers, before it
// measures, whatever the number of streams.
func TestLongStreamsKeepNoHeaders(t *testing.T) {
	const streams, pad = 16, 900 << 10
	padding := "X-Pad: " + strings.Repeat("p", pad)
	t.Run("listen", func(t *testing.T) {
		rt := newRoute(t, newFakeServer(), mcp.Options{})
		params := `{"notifications":{"toolsListChanged":true}}`
		body := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":` + withMeta(params, metaAll) + `}`
		headers := append(modernHeaders("subscriptions/listen", params), "Content-Type: application/json",
			"Accept: application/json, text/event-stream", fmt.Sprintf("Content-Length: %d", len(body)), padding)
		before := heapInUse()
		for range streams {
			rc := dialRaw(t, rt)
			rc.send("POST", "/mcp", headers, body)
			if resp := rc.response(); resp.StatusCode != http.StatusOK {
				t.Fatalf("listen: %d", resp.StatusCode)
			}
		}
		if grown := heapInUse() - before; grown > streams*pad/4 {
			t.Errorf("%d open listen streams hold %d MiB; their headers were %d MiB", streams, grown>>20, streams*pad>>20)
		}
	})
	t.Run("get", func(t *testing.T) {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, SessionKeepAlive: -1})
		sids := make([]string, streams)
		for i := range sids {
			sids[i] = rt.initialize()
		}
		before := heapInUse()
		for _, sid := range sids {
			rc := dialRaw(t, rt)
			rc.send("GET", "/mcp", []string{"Accept: text/event-stream", "Mcp-Session-Id: " + sid, padding}, "")
			if resp := rc.response(); resp.StatusCode != http.StatusOK {
				t.Fatalf("GET: %d", resp.StatusCode)
			}
		}
		if grown := heapInUse() - before; grown > streams*pad/4 {
			t.Errorf("%d open GET channels hold %d MiB; their headers were %d MiB", streams, grown>>20, streams*pad>>20)
		}
	})
}
