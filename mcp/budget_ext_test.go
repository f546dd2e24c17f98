package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// TestReplayBudgetBoundsTheProcess: events kept for clients that do not
// read (GET channels never opened, resumable POST streams whose client went
// away) stay within the hub's replay budget, beyond one event per stream,
// whatever each session's own bounds allow; a session whose events were
// kept before the others grew still replays them all; and ended sessions
// give every byte back.
func TestReplayBudgetBoundsTheProcess(t *testing.T) {
	const budget, sessions, notes = 64 << 10, 20, 40
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true, ConcurrentTools: []string{"flood"}})
	rt.hub.SetReplayBudget(budget)
	note := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("p", 1000)))
	}
	first := rt.initialize()
	for i := range 10 {
		rt.push().Notify(first, "notifications/note", note(i))
	}
	kept := rt.hub.ReplayBytes()
	if kept < 10*1000 || kept > budget {
		t.Fatalf("10 notes of 1 KiB count %d bytes", kept)
	}
	// Each session's own bound (4 MiB) would let the others keep 800 KiB.
	var sids []string
	for range sessions {
		sid := rt.initialize()
		sids = append(sids, sid)
		for i := range notes {
			rt.push().Notify(sid, "notifications/note", note(i))
		}
	}
	const perStream = 1200 // one framed note, the most any stream keeps past the budget
	if n := rt.hub.ReplayBytes(); n > budget+sessions*perStream {
		t.Errorf("%d sessions that never read keep %d bytes; the budget is %d", sessions, n, budget)
	}
	// The first session's events were kept before the others pushed: the
	// budget took from the streams that grew.
	ch := newSSE(t, rt.openGet(context.Background(), first, "Last-Event-ID: 0"))
	for i := range 10 {
		if ev := ch.next(); !strings.Contains(ev.data, fmt.Sprintf(`"i":%d,`, i)) {
			t.Fatalf("replayed event %d of the first session: %+v", i, ev)
		}
	}
	ch.close()

	// Resumable POST streams whose client left, flooding 64 KiB a
	// millisecond each: the budget is spent at once.
	flooder := rt.initializeWith(resumableInit)
	for i := range 4 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"flood","arguments":{"close":true}}}`, i+1)
		readStream(rt.stream(context.Background(), flooder, body))
	}
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		if n := rt.hub.ReplayBytes(); n > budget+sessions*perStream+4*(65<<10) {
			t.Fatalf("flooding streams keep %d bytes; the budget is %d", n, budget)
		}
	}
	for _, sid := range append(sids, first, flooder) {
		if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != http.StatusNoContent {
			t.Fatalf("DELETE: %d", r.status)
		}
	}
	eventually(t, "ended sessions give their kept bytes back", func() bool { return rt.hub.ReplayBytes() == 0 })
}

// TestBroadcastKeptOnce: a broadcast is kept for replay by every session it
// reached, and all of them keep the one copy of its bytes: a client that
// sends a large message to a channel of hundreds of sessions (a chat
// script's shout) costs its size once, not once a session.
func TestBroadcastKeptOnce(t *testing.T) {
	const sessions, size = 64, 1 << 20
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	for range sessions {
		rt.initialize()
	}
	before := heapInUse()
	params := json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", size)))
	rt.push().Broadcast("fixture", "notifications/shout", params)
	params = nil
	if kept := rt.hub.ReplayBytes(); kept < sessions*size {
		t.Fatalf("the broadcast is kept for replay as %d bytes, want each of the %d sessions to keep it", kept, sessions)
	}
	// One copy, and a few more for the encoding: not 64.
	if grew := heapInUse() - before; grew > 16*size {
		t.Errorf("a broadcast of %d bytes to %d sessions grew the heap by %d bytes", size, sessions, grew)
	}
}
