package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// TestLinkRequestHeadTooLarge: a request whose head net/http let in but a
// link frame would not carry (a header of just over 1 MiB) goes over
// HTTP/1.1: the owner would fail the whole link, cancelling every other
// client's request on it.
func TestLinkRequestHeadTooLarge(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	heldCtxErr := make(chan error, 1)
	pair := startOwnerPair(t, mcp.Options{MaxBodyBytes: 64 << 10}, func(ctx context.Context, r *mcp.AuthRequest) int {
		if r.Headers["x-hold"] != "" {
			entered <- struct{}{}
			<-release
			heldCtxErr <- ctx.Err()
		}
		return http.StatusForbidden
	})
	victim1 := make(chan string, 1)
	go func() {
		s, err := pair.post(20*time.Second, http.Header{"X-Hold": {"1"}}, pingBody)
		victim1 <- fmt.Sprint(s, " ", err)
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the victim's request did not reach the owner")
	}

	pad := strings.Repeat("a", 1<<20+1500)
	body := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"p":"` + strings.Repeat("x", 64<<10-64) + `"}}`
	s, err := pair.post(10*time.Second, http.Header{"X-Pad": {pad}}, body)
	t.Logf("the large request (head %d bytes, body %d bytes): %d %v", len(pad), len(body), s, err)

	// A request sent after it, while the first still waits on the link:
	// answered (a failed link answers 404 once its last request ended).
	if s, err := pair.post(10*time.Second, nil, pingBody); s != http.StatusForbidden {
		t.Errorf("a request sent after the large one: %d %v, want the owner hook's 403", s, err)
	}
	releaseOnce.Do(func() { close(release) })
	if err := <-heldCtxErr; err != nil {
		t.Errorf("a request in flight on the link was cancelled on the owner (%v) by another client's request", err)
	}
	if got := <-victim1; got != "403 <nil>" {
		t.Errorf("the request in flight: got %s, want the owner hook's 403", got)
	}
}
