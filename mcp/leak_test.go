package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// TestNoGoroutineLeakAfterShutdown drives every kind of goroutine the
// transport starts (session workers, streams, GET channels, resumable streams,
// waits for the client, stateless calls, tasks) and checks that Shutdown
// leaves none behind.
func TestNoGoroutineLeakAfterShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		f := newFakeServer()
		h := mcp.NewHandler(f, mcp.Options{Sessions: true, SessionKeepAlive: 20 * time.Millisecond}, mcp.NewHub(quietLogger()), quietLogger())
		srv := httptest.NewServer(h)
		defer srv.Close()
		rt := &route{t: t, f: f, h: h, hub: mcp.NewHub(quietLogger()), srv: srv, url: srv.URL}

		a := rt.initialize()
		b := rt.initializeWith(resumableInit)
		get := newSSE(t, rt.openGet(context.Background(), a))
		held := callTool(rt, a, 1, "block", `{}`)
		waitStarted(t, f, "block")
		queued := callTool(rt, a, 2, "count", `{}`)
		rt.queued(a, 1)
		stream := rt.stream(context.Background(), b, progressCall("3", `"t"`, `{"block":true}`))
		stream.nextEvent()
		// A resumable stream closed early, its call still waiting (on another
		// session: b's queue is held by its stream).
		d := rt.initializeWith(resumableInit)
		closed := readStream(rt.stream(context.Background(), d, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"closestream"}}`))
		if len(closed) != 2 {
			t.Fatalf("closestream: %+v", closed)
		}
		// A call waiting for the client's answer.
		c := rt.initializeWith(clientWithCaps)
		elicit := rt.stream(context.Background(), c, elicitBody("5", "elicitation/create"))
		elicit.nextEvent()

		// The 2026-07-28 era: a listen stream, one its client closed, and a
		// call in flight.
		listenParams := `{"notifications":{"toolsListChanged":true}}`
		listenBody := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":` + withMeta(listenParams, metaAll) + `}`
		listen := rt.stream(context.Background(), "", listenBody, modernHeaders("subscriptions/listen", listenParams)...)
		listen.nextEvent()
		lctx, lcancel := context.WithCancel(context.Background())
		left := rt.stream(lctx, "", listenBody, modernHeaders("subscriptions/listen", listenParams)...)
		left.nextEvent()
		lcancel()
		readStream(left)
		modern := async(func() reply { return rt.modern("tools/call", `{"name":"block"}`) })
		waitStarted(t, f, "block")
		// Tasks: one running, one waiting for tasks/update, one over (its
		// expiry timer armed).
		rt.startTask(`{"support":"optional","wait":true}`)
		parked := rt.startTask(`{"support":"optional","keys":["q"]}`)
		rt.pollTask(parked, "input_required")
		rt.pollTask(rt.startTask(`{"support":"optional"}`), "completed")

		ctx, cancel := context.WithTimeout(context.Background(), liveness)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if c := h.TaskCounts(); c != [5]int{} {
			t.Errorf("tasks kept after Shutdown: %v", c)
		}
		readStream(listen)
		if r := await(t, modern); r.errorCode() != -32603 {
			t.Errorf("2026-07-28 call at shutdown: %s", r.body)
		}
		await(t, held)
		await(t, queued)
		readStream(stream)
		readStream(elicit)
		get.nextEvent()
		if n := len(f.closeReasons()); n != 4 {
			t.Fatalf("%d sessions closed", n)
		}
		srv.CloseClientConnections()
	}()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(liveness)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			var ours []string
			for _, g := range strings.Split(string(buf), "\n\n") {
				if strings.Contains(g, "luamcp/mcp.") && !strings.Contains(g, "TestNoGoroutineLeak") {
					ours = append(ours, g)
				}
			}
			t.Fatalf("%d goroutines before, %d after Shutdown; transport goroutines:\n%s", before, n, strings.Join(ours, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
