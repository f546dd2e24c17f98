package cluster

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// TestForwardRacesForget: the entry node forgets the owner (a `left`
// message, an expired entry, a failed request: anything that closes its
// peer) while forwards for the owner's sessions are under way. The owner is
// alive and still listed in the bucket: no forward may be answered 404
// (the client would drop a session that lives); every one reaches the owner
// (its auth hook answers 403), or, forgotten at every try, gets 503.
func TestForwardRacesForget(t *testing.T) {
	pair := startOwnerPair(t, mcp.Options{}, func(context.Context, *mcp.AuthRequest) int { return http.StatusForbidden })
	if s, err := pair.post(5*time.Second, nil, pingBody); s != http.StatusForbidden {
		t.Fatalf("warm-up POST: %d %v", s, err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var total, bad atomic.Int64
	var firstBad, unavailable atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s, err := pair.post(5*time.Second, nil, pingBody)
				total.Add(1)
				if s == http.StatusServiceUnavailable {
					unavailable.Add(1) // forgotten at every try: the client may retry
				} else if s != http.StatusForbidden {
					if bad.Add(1) == 1 {
						firstBad.Store(int64(s))
						t.Logf("first wrong answer: %d %v", s, err)
					}
				}
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pair.a.forget("b") // b is alive and listed: only this node's view of it is dropped
		time.Sleep(2 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d forwards, %d answered 503", total.Load(), unavailable.Load())
	if n := bad.Load(); n > 0 {
		t.Errorf("%d of %d forwards for a live, listed owner were not answered by it (first: %d) while the entry node forgot and looked it up again", n, total.Load(), firstBad.Load())
	}
}

// TestRestartingOwnerAnswers503: while the owner restarts with its sessions
// saved (CloseForRestart), the entry node answers its sessions' requests
// 503 with Retry-After, not 404 (the client would drop a session the owner
// brings back); the owner then takes its id back. A node that leaves for
// good (Close) is gone: the entry node serves its sessions' requests as
// unknown ones, 404 (the owner's hook refuses everything, to tell them apart).
func TestRestartingOwnerAnswers503(t *testing.T) {
	ownerRefuses := func(_ context.Context, r *mcp.AuthRequest) int {
		if r.Headers["luamcp-forwarded-by"] != "" {
			return http.StatusForbidden
		}
		return 0
	}
	for _, restart := range []bool{true, false} {
		pair := startOwnerPair(t, mcp.Options{}, ownerRefuses)
		if s, err := pair.post(5*time.Second, nil, pingBody); s != http.StatusForbidden {
			t.Fatalf("warm-up POST: %d %v", s, err)
		}
		leave, want := pair.b.Close, http.StatusNotFound
		if restart {
			leave, want = pair.b.CloseForRestart, http.StatusServiceUnavailable
		}
		if err := leave(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := pair.postHead(5*time.Second, nil, pingBody)
			var s int
			if resp != nil {
				s = resp.StatusCode
			}
			if s == want {
				if restart && resp.Header.Get("Retry-After") == "" {
					t.Error("503 without Retry-After")
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("restart %v: the owner's session answered %d %v, want %d", restart, s, err, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if restart {
			// Its id is its own again once it is back, at any address.
			joinNode(t, pair.natsURL, "b", "http://127.0.0.1:2")
		}
	}
}
