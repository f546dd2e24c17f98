package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// queued waits until n requests wait in the queue of sid.
func (rt *route) queued(sid string, n int) {
	rt.t.Helper()
	eventually(rt.t, fmt.Sprintf("%d queued", n), func() bool { return mcp.QueueLen(rt.h, sid) == n })
}

func callTool(rt *route, sid string, id any, tool, args string) <-chan reply {
	return async(func() reply {
		return rt.call(sid, id, "tools/call", `{"name":"`+tool+`","arguments":`+args+`}`)
	})
}

func TestBufferedRequestsRunFIFOOneAtATime(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()

	first := callTool(rt, sid, 1, "wait", `{"tag":"first"}`)
	waitStarted(t, f, "wait")
	var later []<-chan reply
	for i, tag := range []string{"a", "b", "c"} {
		later = append(later, callTool(rt, sid, 10+i, "count", `{"tag":"`+tag+`"}`))
		rt.queued(sid, i+1)
	}
	ping := async(func() reply { return rt.call(sid, 20, "ping", "") })
	rt.queued(sid, 4) // a ping waits behind a slow tool too

	f.release <- struct{}{}
	if r := await(t, first); r.text() != "released" {
		t.Fatalf("first: %s", r.body)
	}
	for i, ch := range later {
		if r := await(t, ch); r.text() != fmt.Sprint(i+1) {
			t.Fatalf("queued call %d: %s", i, r.body)
		}
	}
	if r := await(t, ping); r.status != 200 || r.errorCode() != 0 {
		t.Fatalf("ping: %s", r.body)
	}
	if got := f.runOrder(); !slices.Equal(got, []string{"wait:first", "count:a", "count:b", "count:c"}) {
		t.Fatalf("run order %v", got)
	}
	if n := f.maxConcurrent(); n != 1 {
		t.Fatalf("%d calls ran at once on one session", n)
	}
}

func TestSessionOverloaded(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionMaxPending: 1})
	sid := rt.initialize()
	running := callTool(rt, sid, 1, "wait", `{}`)
	waitStarted(t, f, "wait")
	queued := callTool(rt, sid, 2, "count", `{}`)
	rt.queued(sid, 1)
	r := rt.call(sid, 3, "ping", "")
	if r.status != 200 || r.errorCode() != -32603 || r.errorMessage() != "Session overloaded" || r.msg["id"] != float64(3) {
		t.Fatalf("third request: %d %s", r.status, r.body)
	}
	f.release <- struct{}{}
	if r := await(t, running); r.text() != "released" {
		t.Fatalf("running: %s", r.body)
	}
	if r := await(t, queued); r.text() != "1" {
		t.Fatalf("queued: %s", r.body)
	}
}

func TestTimeoutFreesCallerAndStateLands(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, RequestTimeout: 100 * time.Millisecond})
	sid := rt.initialize()
	r := rt.call(sid, 1, "tools/call", `{"name":"slowcount","arguments":{"ms":400}}`)
	if r.status != 200 || r.errorCode() != -32603 || r.errorMessage() != "Request timed out" || r.msg["id"] != float64(1) {
		t.Fatalf("slow call: %d %s", r.status, r.body)
	}
	// The timed-out call ran on; its state landed before the next call ran.
	eventually(t, "slowcount lands", func() bool {
		return rt.call(sid, 2, "tools/call", `{"name":"count"}`).errorCode() == 0
	})
	if r := rt.call(sid, 3, "tools/call", `{"name":"count"}`); r.text() != "3" {
		t.Fatalf("count after the timed-out call: %s", r.body)
	}
}

func TestTimedOutQueuedRequestLeavesTheQueue(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, RequestTimeout: 200 * time.Millisecond, SessionMaxPending: 1})
	sid := rt.initialize()
	running := callTool(rt, sid, 1, "wait", `{}`)
	waitStarted(t, f, "wait")
	r := rt.call(sid, 2, "tools/call", `{"name":"count","arguments":{"tag":"queued"}}`)
	if r.errorMessage() != "Request timed out" {
		t.Fatalf("queued call: %s", r.body)
	}
	if n := mcp.QueueLen(rt.h, sid); n != 0 {
		t.Fatalf("%d still queued", n)
	}
	f.release <- struct{}{}
	await(t, running)
	if slices.Contains(f.runOrder(), "count:queued") {
		t.Fatal("a timed-out queued request ran")
	}
}

func TestCancelRunningRequest(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	held := callTool(rt, sid, 7, "slowcount", `{"ms":60000}`)
	waitStarted(t, f, "slowcount")

	// Ids compare as raw JSON: "7" is not 7.
	if r := rt.notify(sid, "notifications/cancelled", `{"requestId":"7"}`); r.status != 202 {
		t.Fatalf("cancel: %d", r.status)
	}
	if r := rt.notify(sid, "notifications/cancelled", `{"requestId":12345}`); r.status != 202 {
		t.Fatalf("cancel unknown: %d", r.status)
	}
	select {
	case r := <-held:
		t.Fatalf("a cancel of another id ended the call: %s", r.body)
	case <-time.After(50 * time.Millisecond):
	}
	rt.notify(sid, "notifications/cancelled", `{"requestId":7,"reason":"user"}`)
	r := await(t, held)
	if r.status != 200 || r.errorCode() != -32603 || r.errorMessage() != "Request cancelled" || r.msg["id"] != float64(7) {
		t.Fatalf("cancelled call: %d %s", r.status, r.body)
	}
	// The session still serves, and the interrupted call left no state.
	if r := rt.call(sid, 8, "tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("count after cancel: %s", r.body)
	}
}

func TestCancelQueuedRequest(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	running := callTool(rt, sid, 1, "wait", `{}`)
	waitStarted(t, f, "wait")
	queued := callTool(rt, sid, "q", "count", `{"tag":"q"}`)
	rt.queued(sid, 1)
	rt.notify(sid, "notifications/cancelled", `{"requestId":"q"}`)
	if r := await(t, queued); r.errorCode() != -32603 || r.errorMessage() != "Request cancelled" || r.msg["id"] != "q" {
		t.Fatalf("queued: %s", r.body)
	}
	if n := mcp.QueueLen(rt.h, sid); n != 0 {
		t.Fatalf("%d still queued", n)
	}
	f.release <- struct{}{}
	if r := await(t, running); r.text() != "released" {
		t.Fatalf("running: %s", r.body)
	}
	if slices.Contains(f.runOrder(), "count:q") {
		t.Fatal("a cancelled queued request ran")
	}
}

func TestIdleTTL(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionTTL: 100 * time.Millisecond})
	sid := rt.initialize()
	if r := <-waitClose(t, f); r != "normal" {
		t.Fatalf("reason %q", r)
	}
	if rt.h.SessionCount() != 0 {
		t.Fatal("expired session still registered")
	}
	if r := rt.call(sid, 1, "ping", ""); r.status != 404 {
		t.Fatalf("expired session: %d", r.status)
	}
}

// waitClose returns a channel with the next session Close reason.
func waitClose(t *testing.T, f *fakeServer) <-chan string {
	t.Helper()
	select {
	case r := <-f.closed:
		ch := make(chan string, 1)
		ch <- r
		return ch
	case <-time.After(liveness):
		t.Fatal("no session closed")
		return nil
	}
}

func TestRunningCallHoldsSession(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionTTL: 100 * time.Millisecond})
	sid := rt.initialize()
	r := rt.call(sid, 1, "tools/call", `{"name":"slowcount","arguments":{"ms":300}}`)
	if r.text() != "1" {
		t.Fatalf("a call longer than the TTL: %s", r.body)
	}
	if reason := <-waitClose(t, f); reason != "normal" {
		t.Fatalf("reason %q", reason)
	}
}

func TestChannelHoldsSessionAndDetachRearmsTTL(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionTTL: 100 * time.Millisecond})
	sid := rt.initialize()
	ctx, cancel := context.WithCancel(context.Background())
	get := newSSE(t, rt.openGet(ctx, sid))
	time.Sleep(300 * time.Millisecond)
	if rt.h.SessionCount() != 1 {
		t.Fatal("a session with a channel expired")
	}
	rt.push().Notify(sid, "notifications/x", nil)
	if ev := get.nextEvent(); ev.id != "1" {
		t.Fatalf("event %+v", ev)
	}
	cancel()
	get.close()
	if reason := <-waitClose(t, f); reason != "normal" {
		t.Fatalf("reason %q", reason)
	}
}

func TestBlockedCallDoesNotWedgeSession(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionTTL: 100 * time.Millisecond})
	sid := rt.initialize()
	held := callTool(rt, sid, 1, "block", `{}`)
	waitStarted(t, f, "block")
	time.Sleep(200 * time.Millisecond)
	if rt.h.SessionCount() != 1 {
		t.Fatal("session expired under a running call")
	}
	rt.notify(sid, "notifications/cancelled", `{"requestId":1}`)
	if r := await(t, held); r.errorMessage() != "Request cancelled" {
		t.Fatalf("blocked call: %s", r.body)
	}
	if reason := <-waitClose(t, f); reason != "normal" {
		t.Fatalf("reason %q", reason)
	}
}

func TestDeleteSession(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != 204 {
		t.Fatalf("DELETE: %d", r.status)
	}
	if r := rt.call(sid, 1, "ping", ""); r.status != 404 || r.errorMessage() != "Unknown or expired session" {
		t.Fatalf("after DELETE: %d %s", r.status, r.body)
	}
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != 404 {
		t.Fatalf("second DELETE: %d", r.status)
	}
	if got := f.closeReasons(); !slices.Equal(got, []string{"normal"}) {
		t.Fatalf("Close reasons %v", got)
	}
}

func TestSessionEndReleasesWaitingCallers(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	running := callTool(rt, sid, 1, "block", `{}`)
	waitStarted(t, f, "block")
	queued := callTool(rt, sid, 2, "count", `{}`)
	rt.queued(sid, 1)
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != 204 {
		t.Fatalf("DELETE: %d", r.status)
	}
	for _, ch := range []<-chan reply{running, queued} {
		if r := await(t, ch); r.status != 200 || r.errorCode() != -32603 || r.errorMessage() != "Session ended" {
			t.Fatalf("waiting caller: %d %s", r.status, r.body)
		}
	}
	if got := f.closeReasons(); !slices.Equal(got, []string{"normal"}) {
		t.Fatalf("Close reasons %v", got)
	}
}

func TestShutdown(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	a, b := rt.initialize(), rt.initialize()
	held := callTool(rt, a, 1, "block", `{}`)
	waitStarted(t, f, "block")
	get := newSSE(t, rt.openGet(context.Background(), b))
	stream := rt.stream(context.Background(), b, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"progress","arguments":{"block":true},"_meta":{"progressToken":"t"}}}`)
	if ev := stream.nextEvent(); ev.msg()["method"] != "notifications/progress" {
		t.Fatalf("stream event %+v", ev)
	}

	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	if err := rt.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.closeReasons(); len(got) != 2 || got[0] != "shutdown" || got[1] != "shutdown" {
		t.Fatalf("Close reasons %v", got)
	}
	if r := await(t, held); r.errorMessage() != "Session ended" {
		t.Fatalf("held call: %s", r.body)
	}
	if ev := get.nextEvent(); !ev.eof {
		t.Fatalf("GET channel: %+v", ev)
	}
	for ev := stream.nextEvent(); !ev.eof; ev = stream.nextEvent() {
		if ev.msg()["id"] != nil {
			t.Fatalf("the stream got a result: %+v", ev)
		}
	}
	if rt.h.SessionCount() != 0 {
		t.Fatal("sessions left after Shutdown")
	}
	if r := rt.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`); r.status != 503 {
		t.Fatalf("initialize after Shutdown: %d", r.status)
	}
}

func TestTerminateRunsOnceUnderRaces(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, SessionTTL: 50 * time.Millisecond})
	sid := rt.initialize()
	done := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func() {
			rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid)
			done <- struct{}{}
		}()
	}
	for i := 0; i < 4; i++ {
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	_ = rt.h.Shutdown(ctx)
	time.Sleep(100 * time.Millisecond) // past the TTL
	if got := f.closeReasons(); len(got) != 1 {
		t.Fatalf("Close reasons %v", got)
	}
}

func TestShutdownStopsStatelessCalls(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{})
	held := callTool(rt, "", 1, "block", `{}`)
	waitStarted(t, f, "block")
	stream := rt.stream(context.Background(), "", progressCall("2", `"t"`, `{"block":true}`))
	stream.nextEvent()
	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	if err := rt.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if f.activeCalls() != 0 {
		t.Fatal("Shutdown returned with stateless calls running")
	}
	if r := await(t, held); r.errorCode() != -32603 || r.errorMessage() != "Server shutting down" {
		t.Fatalf("held call: %s", r.body)
	}
	for _, ev := range readStream(stream) {
		if ev.msg()["id"] != nil {
			t.Fatalf("stream got a result: %+v", ev)
		}
	}
	if r := rt.call("", 3, "ping", ""); r.errorMessage() != "Server shutting down" {
		t.Fatalf("after Shutdown: %s", r.body)
	}
}

// TestQueueThatNeverEmpties: a session whose queue always holds a call (a
// client that keeps calls in flight) gives the slots of the served ones
// back: its queue does not grow with every call.
func TestQueueThatNeverEmpties(t *testing.T) {
	const rounds = 300
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	pending := []<-chan reply{callTool(rt, sid, 0, "wait", `{}`)}
	waitStarted(t, f, "wait")
	pending = append(pending, callTool(rt, sid, 1, "wait", `{}`))
	rt.queued(sid, 1)
	for i := 2; i < rounds; i++ {
		pending = append(pending, callTool(rt, sid, i, "wait", `{}`))
		rt.queued(sid, 2)
		f.release <- struct{}{} // the running call ends; the worker takes the next
		rt.queued(sid, 1)
	}
	if n, c := mcp.QueueBacking(rt.h, sid); n > 64 {
		t.Errorf("after %d calls with one waiting, the queue holds %d slots (capacity %d)", rounds, n, c)
	}
	for range 2 {
		f.release <- struct{}{}
	}
	for _, ch := range pending {
		await(t, ch)
	}
}
