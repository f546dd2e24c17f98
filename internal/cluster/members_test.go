package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// unknownSessionAnswer is what a POST of pingBody naming a session its
// node does not have gets (behaviour.md: 404, -32600).
const unknownSessionAnswer = `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Unknown or expired session"}}`

// TestSessionIDFlood: a client sends request after request with session ids
// of made-up nodes (a new one each time), of a live node that does not have
// them, and of a node that left. Each gets the answer an unknown session
// gets, and none costs a NATS request of its own: the entry node lists the
// nodes once per memberSettle, and looks a known node up once per
// addrCacheTTL. Before, each made-up or departed node cost a lookup in the
// bucket (one NATS request per client request: 300 here) and was answered
// an empty 404. Nothing grows with the flood.
func TestSessionIDFlood(t *testing.T) {
	pair := startOwnerPair(t, mcp.Options{}, nil)
	const flood = 300
	post := func(sid string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, pair.entry.URL+"/mcp", strings.NewReader(pingBody))
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	hex := func(i int) string { return fmt.Sprintf("%032x", i) }
	post("b." + hex(0)) // the owner looked up and linked to before counting
	for _, tc := range []struct {
		name  string
		sid   func(i int) string
		every time.Duration // at most one NATS request per span
		leave bool          // b leaves first
	}{
		{"made-up nodes", func(i int) string { return fmt.Sprintf("n%d-x.%s", i, hex(i)) }, memberSettle, false},
		{"live node", func(i int) string { return "b." + hex(i) }, addrCacheTTL, false},
		{"node that left", func(i int) string { return "b." + hex(i) }, memberSettle, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.leave {
				if err := pair.b.Close(); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 5*time.Second, "a forgets b", func() bool { return !pair.a.Member(context.Background(), "b") })
			}
			goroutines := runtime.NumGoroutine()
			before := pair.a.nc.Stats().OutMsgs
			start := time.Now()
			wrong := 0
			for i := range flood {
				if status, body := post(tc.sid(i)); status != http.StatusNotFound || body != unknownSessionAnswer {
					if wrong++; wrong == 1 {
						t.Errorf("request %d: %d %q, want 404 %s", i, status, body, unknownSessionAnswer)
					}
				}
			}
			if wrong > 1 {
				t.Errorf("and %d more", wrong-1)
			}
			// One list, and one lookup of a node it lists, per span; and
			// maybe a heartbeat.
			requests := pair.a.nc.Stats().OutMsgs - before
			if most := 2*(uint64(time.Since(start)/tc.every)+1) + 1; requests > most {
				t.Errorf("%d requests cost %d NATS requests in %v, want at most %d", flood, requests, time.Since(start), most)
			}
			pair.a.mu.Lock()
			known, absent := len(pair.a.known), len(pair.a.absent)
			pair.a.mu.Unlock()
			if known > 1 || absent > 1 {
				t.Errorf("the entry node remembers %d nodes and %d missing ones after the flood, want at most b", known, absent)
			}
			waitGoroutines(t, goroutines, func() bool { return true })
		})
	}
}

// TestMemberJoinRace: a node that joins just after another listed the nodes
// is a member as soon as its Join returns (before it can mint a session id),
// and so is one that left and comes back: Join waits memberSettle, so the
// list and the lookup that did not have it are too old to be used.
func TestMemberJoinRace(t *testing.T) {
	e := startNATS(t)
	a := joinNode(t, e.URL(), "a", "http://127.0.0.1:1")
	ctx := context.Background()
	for _, id := range []string{"c", "c", "d"} {
		if a.Member(ctx, id) {
			t.Fatalf("%s: a member before it joined", id)
		}
		n := joinNode(t, e.URL(), id, "http://127.0.0.1:2")
		if !a.Member(ctx, id) {
			t.Fatalf("%s: not a member right after it joined", id)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, id+" leaves", func() bool { return !a.Member(ctx, id) })
	}
}
