package mcp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// TestInlineWhere: a session call that finds its session free and is
// answered as plain JSON runs on its handler's goroutine; one that finds
// another running, or that streams, runs on the session's worker.
func TestInlineWhere(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()
	where := `{"name":"where"}`
	if r := rt.call(sid, 1, "tools/call", where); r.text() != "inline" {
		t.Fatalf("a plain call on a free session ran on the %s: %s", r.text(), r.body)
	}
	// Behind a running call it queues, and runs once that one returns.
	held := callTool(rt, sid, 2, "wait", `{}`)
	waitStarted(t, f, "wait")
	queued := async(func() reply { return rt.call(sid, 3, "tools/call", where) })
	rt.queued(sid, 1)
	f.release <- struct{}{}
	if r := await(t, held); r.text() != "released" {
		t.Fatalf("held call: %s", r.body)
	}
	if r := await(t, queued); r.text() != "queue" {
		t.Fatalf("a call queued behind another ran on the %s: %s", r.text(), r.body)
	}
	// So does a progress stream.
	evs := readStream(rt.stream(context.Background(), sid, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"where","_meta":{"progressToken":"p"}}}`))
	if len(evs) != 1 || !strings.Contains(evs[0].data, `"text":"inline"`) {
		t.Fatalf("progress stream: %+v", evs)
	}
	// And the session is free again.
	if r := rt.call(sid, 5, "tools/call", where); r.text() != "inline" {
		t.Fatalf("after the queue emptied: %s", r.body)
	}
}

// TestInlineStreams: an inline call that sends messages and returns within
// the grace has its stream written by the handler, on a connection kept
// alive; one that runs on gets them at once from a watcher, whose response
// closes its connection.
func TestInlineStreams(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initialize()

	quick := rt.stream(context.Background(), sid, progressCall("1", `"q"`, `{"steps":3}`))
	evs := readStream(quick)
	if len(evs) != 4 || !strings.Contains(evs[2].data, `"progress":3`) || !strings.Contains(evs[3].data, `"done"`) {
		t.Fatalf("quick stream: %+v", evs)
	}
	if quick.resp.Close {
		t.Fatal("a stream written by its handler closed its connection")
	}

	for _, body := range []string{
		// A progress stream, and a buffered call that logs and waits.
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"logwait","_meta":{"progressToken":"w"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"logwait"}}`,
	} {
		long := rt.stream(context.Background(), sid, body)
		if ev := long.nextEvent(); !strings.Contains(ev.data, `"waiting"`) {
			t.Fatalf("first event of a running call: %+v", ev)
		}
		f.release <- struct{}{}
		if evs := readStream(long); len(evs) != 1 || !strings.Contains(evs[0].data, `"released"`) {
			t.Fatalf("after the release: %+v", evs)
		}
		if !long.resp.Close {
			t.Fatal("a watcher's response did not ask for its connection to close")
		}
	}
	if r := rt.call(sid, 4, "tools/call", `{"name":"where"}`); r.text() != "inline" {
		t.Fatalf("after the streams: %s", r.body)
	}
}

// TestInlineHangsUp: what the watcher of an inline call writes ends when it
// must, before the call returns, as a complete response on a connection the
// headers said would close; and the call's state lands.
func TestInlineHangsUp(t *testing.T) {
	cases := []struct {
		name, tool, ctype string
		want              []string // in the body, in order
	}{
		{"JSON answer on timeout", `{"name":"slowcount","arguments":{"ms":400}}`, "application/json", []string{"Request timed out"}},
		{"stream on timeout", `{"name":"logwait"}`, "text/event-stream", []string{`"waiting"`, "Request timed out"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeServer()
			rt := newRoute(t, f, mcp.Options{Sessions: true, RequestTimeout: 100 * time.Millisecond})
			sid := rt.initialize()
			start := time.Now()
			resp := rt.open(context.Background(), http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+c.tool+`}`, "Mcp-Session-Id: "+sid)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("the response did not end cleanly: %v (%s)", err, body)
			}
			if got := resp.Header.Get("Content-Type"); got != c.ctype || !resp.Close {
				t.Fatalf("Content-Type %q, Connection: close %v", got, resp.Close)
			}
			rest := string(body)
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%q missing (in order) from %s", w, body)
				}
				rest = rest[i+len(w):]
			}
			if took >= 350*time.Millisecond {
				t.Fatalf("the answer took %v: it waited for the call", took)
			}
			// The call runs on; a later request runs on the state it left.
			if c.tool == `{"name":"logwait"}` {
				f.release <- struct{}{}
			}
			eventually(t, "the call returns", func() bool {
				return rt.call(sid, 2, "tools/call", `{"name":"count"}`).errorCode() == 0
			})
			want := "2"
			if strings.Contains(c.tool, "slowcount") {
				want = "3" // slowcount's increment landed
			}
			if r := rt.call(sid, 3, "tools/call", `{"name":"count"}`); r.text() != want {
				t.Fatalf("count after the timed-out call: %s", r.body)
			}
		})
	}
}
