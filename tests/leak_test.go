package tests

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/luavm"
)

// Leaks: a shut-down server leaves no goroutine behind, and abandoned
// sessions are reaped with everything they held. These tests do not run in
// parallel, so the goroutine count is theirs alone.

// settle waits until the process has at most want goroutines, failing with
// a dump of the ones left after waitLong.
func settle(t *testing.T, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			dump := b.String()
			if len(dump) > 30000 {
				dump = dump[:30000] + "\n..."
			}
			t.Fatalf("%s: %d goroutines after %v, want at most %d:\n%s", what, runtime.NumGoroutine(), waitLong, want, dump)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// warmUp runs one server through a whole life, so that whatever the runtime
// and net/http start lazily is running before a baseline is taken.
func warmUp(t *testing.T) {
	t.Helper()
	s := startServer(t, "session")
	sid := s.initialize(t, s.url("session"))
	s.openGET(t, s.url("session"), sid, nil).close()
	s.callTool(t, s.url("session"), sid, "count", nil)
	s.close()
}

func TestNoGoroutineLeakAfterShutdown(t *testing.T) {
	warmUp(t)
	baseline := runtime.NumGoroutine()

	s := startServer(t, "session", "concurrent", "stateless")
	u, uc := s.url("session"), s.url("concurrent")
	var running, queued []*pending
	for i := 0; i < 5; i++ {
		sid := s.initialize(t, u)
		s.poke(t, u, sid, i)              // a buffered push
		s.openGET(t, u, sid, nil)         // an attached channel
		s.streamingBlock(t, u, sid, 10+i) // a streaming call, running in the queue
		// A request queued behind it.
		queued = append(queued, s.async(t, u, call{Body: request(30+i, "ping", nil), Session: sid}))
		// A buffered call running on a snapshot (a concurrent tool).
		sidC := s.initialize(t, uc)
		running = append(running, s.async(t, uc, call{Body: toolCall(20+i, "block", nil, nil), Session: sidC}))
		waitBlock(t, s, 20+i)
	}
	s.poke(t, s.url("stateless"), "", 1) // a finished stateless call

	s.close()
	for _, p := range running {
		wantSessionEnded(t, p.wait(t), "")
	}
	for _, p := range queued {
		// Queued, or (had it not reached the server yet) refused: answered.
		if r := p.wait(t); r.Status != http.StatusNotFound {
			wantSessionEnded(t, r, "")
		}
	}
	settle(t, baseline, "after Shutdown")
}

// Shutdown also stops the calls of stateless routes, streaming or not: a
// long tool must not keep a stopping server (and its Lua state) alive.
func TestShutdownStopsStatelessCalls(t *testing.T) {
	warmUp(t)
	baseline := runtime.NumGoroutine()
	s := startServer(t, "stateless")
	u := s.url("stateless")
	st := s.streamingBlock(t, u, "", 40)
	held := s.async(t, u, call{Body: toolCall(41, "block", nil, nil)})
	waitBlock(t, s, 41)
	s.close()
	noResult(t, st.ended(), "40")
	r := held.wait(t)
	if r.Status == http.StatusOK {
		if m := r.response(t); m.Error == nil {
			t.Errorf("the blocked stateless call answered %s after Shutdown, want an error", m.Result)
		}
	}
	settle(t, baseline, "after Shutdown")
}

// stateless_disconnect_kills_worker: a client that drops a stateless stream
// stops its call; the server serves on and holds nothing for it.
func TestStatelessDisconnectKillsWorker(t *testing.T) {
	warmUp(t)
	s := startServer(t, "stateless")
	u := s.url("stateless")
	s.rpc(t, u, "", 1, "ping", nil)
	s.client.CloseIdleConnections()
	base := runtime.NumGoroutine()
	for i := 0; i < 3; i++ {
		st := s.streamingBlock(t, u, "", 50+i)
		st.close()
		<-st.done
	}
	s.rpc(t, u, "", 2, "ping", nil)
	s.client.CloseIdleConnections()
	settle(t, base, "after the streams were dropped")
}

// 1,000 sessions open a GET channel and are abandoned (the channel dropped,
// no DELETE): the idle TTL reaps every one, and their goroutines go.
func TestAbandonedSessionsReaped(t *testing.T) {
	const sessions = 1000 // each with an attached, then abandoned, GET channel
	warmUp(t)
	baseline := runtime.NumGoroutine()
	s := startServer(t, "abandon")
	u := s.url("abandon")
	s.rpc(t, u, "", 1, "initialize", initializeParams(latestVersion)) // a first session warms the pool
	s.logs.waitFor(t, "fixture terminate reason=normal", 1)
	s.client.CloseIdleConnections()
	serving := runtime.NumGoroutine()

	var failures atomic.Int32
	var firstErr atomic.Value
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	var started atomic.Int32
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				n, err := openAndAbandon(s, t, u)
				started.Add(int32(n))
				if err != nil {
					fail(err)
				}
			}
		}()
	}
	for i := 0; i < sessions; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d sessions failed; first: %v", n, sessions, firstErr.Load())
	}

	t.Logf("%d sessions started for %d attached channels", started.Load(), sessions)
	s.logs.waitFor(t, "fixture terminate reason=normal", int(started.Load())+1)
	s.client.CloseIdleConnections()
	settle(t, serving, "after the abandoned sessions were reaped")
	// Every reaped session closed its Lua state: only the warm pool is left
	// (its fresh and spare lanes hold DefaultPoolSize states each at most).
	settleStates(t, s.host, 2*luavm.DefaultPoolSize, "after the abandoned sessions were reaped")
	s.close()
	settle(t, baseline, "after Shutdown")
	settleStates(t, s.host, 0, "after Shutdown")
}

// settleStates waits (bounded) until h has at most want Lua states open.
func settleStates(t *testing.T, h *host.Host, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for h.LuaStates() > want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d Lua states open after %v, want at most %d", what, h.LuaStates(), waitLong, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openAndAbandon starts a session, attaches its GET channel, then drops it.
// A machine loaded enough to take longer than the TTL between initialize and
// GET finds the session already reaped (404): it then starts another one.
// It returns the number of sessions it started.
func openAndAbandon(s *testServer, t *testing.T, u string) (int, error) {
	for started := 1; started <= 5; started++ {
		r, err := s.send(t, u, call{Body: request(1, "initialize", initializeParams(latestVersion))})
		if err != nil {
			return started, err
		}
		sid := r.Header.Get("Mcp-Session-Id")
		if r.Status != http.StatusOK || sid == "" {
			return started, fmt.Errorf("initialize: HTTP %d, session %q", r.Status, sid)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		resp, err := s.client.Do(s.newRequest(ctx, t, u, call{Method: http.MethodGet, Session: sid}))
		if err != nil {
			cancel()
			return started, fmt.Errorf("GET: %w", err)
		}
		status := resp.StatusCode
		cancel() // the client goes away without a word
		resp.Body.Close()
		switch status {
		case http.StatusOK:
			return started, nil
		case http.StatusNotFound:
			continue
		}
		return started, fmt.Errorf("GET: HTTP %d", status)
	}
	return 5, fmt.Errorf("five sessions in a row were reaped before their GET arrived")
}
