package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// liveness bounds every wait in the tests; it is never a performance
// assertion.
const liveness = 10 * time.Second

// quietLogger discards the transport's log lines.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// route is a Handler under test behind a real loopback HTTP server.
type route struct {
	t   *testing.T
	f   *fakeServer
	h   *mcp.Handler
	hub *mcp.Hub
	srv *httptest.Server
	url string
}

// push returns the pushes of the route's server (the hub's view of "/mcp").
func (rt *route) push() *mcp.RoutePushes { return rt.hub.Route("/mcp") }

// newRoute serves a fake server with opts (Path "/mcp" unless set).
func newRoute(t *testing.T, f *fakeServer, opts mcp.Options) *route {
	t.Helper()
	return newRouteOver(t, f, f, opts)
}

// newRouteOver is newRoute serving srv, a server built over f.
func newRouteOver(t *testing.T, srv mcp.Server, f *fakeServer, opts mcp.Options) *route {
	t.Helper()
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	hub := mcp.NewHub(quietLogger())
	h := mcp.NewHandler(srv, opts, hub, quietLogger())
	mux := http.NewServeMux()
	mux.Handle(opts.Path, h)
	hs := httptest.NewServer(mux)
	rt := &route{t: t, f: f, h: h, hub: hub, srv: hs, url: hs.URL + opts.Path}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), liveness)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.CloseClientConnections()
		hs.Close()
		// Every stream gives its kept events back to the replay budget
		// when it ends: whatever the test did, nothing stays counted.
		for n := hub.ReplayBytes(); n != 0; n = hub.ReplayBytes() {
			if ctx.Err() != nil {
				t.Errorf("after Shutdown the hub still counts %d bytes of kept events", n)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		// So does every request to the body budget.
		for n := hub.BodyBytes(); n != 0; n = hub.BodyBytes() {
			if ctx.Err() != nil {
				t.Errorf("after Shutdown the hub still counts %d bytes of requests and bodies", n)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	return rt
}

// reply is a decoded HTTP answer.
type reply struct {
	status int
	header http.Header
	body   string
	msg    map[string]any // the JSON body, when there is one
}

// errorCode returns error.code of the JSON-RPC answer, or 0.
func (r reply) errorCode() int {
	e, _ := r.msg["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func (r reply) errorMessage() string {
	e, _ := r.msg["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func (r reply) result() map[string]any {
	res, _ := r.msg["result"].(map[string]any)
	return res
}

// text returns result.content[0].text.
func (r reply) text() string {
	c, _ := r.result()["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	m, _ := c[0].(map[string]any)
	s, _ := m["text"].(string)
	return s
}

// do sends a request with headers given as "Name: value" strings.
func (rt *route) do(method, body string, headers ...string) reply {
	rt.t.Helper()
	resp := rt.open(context.Background(), method, body, headers...)
	defer resp.Body.Close()
	return readReply(rt.t, resp)
}

// open sends a request and returns the response unread.
func (rt *route) open(ctx context.Context, method, body string, headers ...string) *http.Response {
	rt.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, rt.url, strings.NewReader(body))
	if err != nil {
		rt.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		v = strings.TrimSpace(v)
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rt.t.Fatal(err)
	}
	return resp
}

func readReply(t *testing.T, resp *http.Response) reply {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(b) > 0 {
		if err := json.Unmarshal(b, &r.msg); err != nil {
			t.Fatalf("body is not JSON: %v: %s", err, b)
		}
	}
	return r
}

// post sends one JSON-RPC message.
func (rt *route) post(body string, headers ...string) reply {
	rt.t.Helper()
	return rt.do(http.MethodPost, body, headers...)
}

// initialize opens a session and returns its id.
func (rt *route) initialize(extra ...string) string {
	rt.t.Helper()
	r := rt.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, extra...)
	if r.status != 200 {
		rt.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if sid == "" {
		rt.t.Fatal("initialize: no Mcp-Session-Id")
	}
	return sid
}

// initializeWith opens a session with the given initialize params.
func (rt *route) initializeWith(params string) string {
	rt.t.Helper()
	r := rt.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + params + `}`)
	if r.status != 200 {
		rt.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	return r.header.Get("Mcp-Session-Id")
}

// call sends a request on session sid.
func (rt *route) call(sid string, id any, method, params string, headers ...string) reply {
	rt.t.Helper()
	idb, _ := json.Marshal(id)
	body := `{"jsonrpc":"2.0","id":` + string(idb) + `,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	body += "}"
	if sid != "" {
		headers = append(headers, "Mcp-Session-Id: "+sid)
	}
	return rt.post(body, headers...)
}

// notify sends a notification on session sid.
func (rt *route) notify(sid, method, params string) reply {
	rt.t.Helper()
	body := `{"jsonrpc":"2.0","method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	return rt.post(body+"}", "Mcp-Session-Id: "+sid)
}

// async runs fn in a goroutine and returns a channel with its reply.
func async(fn func() reply) <-chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- fn() }()
	return ch
}

// await returns the reply from ch, failing after the liveness bound.
func await(t *testing.T, ch <-chan reply) reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(liveness):
		t.Fatal("no reply")
		return reply{}
	}
}

// waitStarted waits until the fake reports that tool name started.
func waitStarted(t *testing.T, f *fakeServer, name string) {
	t.Helper()
	deadline := time.After(liveness)
	for {
		select {
		case got := <-f.started:
			if got == name {
				return
			}
		case <-deadline:
			t.Fatalf("tool %s never started", name)
		}
	}
}

// eventually polls cond until it holds, failing after the liveness bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sse reads events from an SSE response body.
type sse struct {
	t    *testing.T
	resp *http.Response
	ch   chan event
}

// event is one SSE event, or a comment (":" lines), or the end of stream.
type event struct {
	id, name, data, retry, comment string
	hasID, eof                     bool
}

func (e event) msg() map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(e.data), &m)
	return m
}

func newSSE(t *testing.T, resp *http.Response) *sse {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("not an SSE response: %d %q %s", resp.StatusCode, ct, b)
	}
	s := &sse{t: t, resp: resp, ch: make(chan event, 100)}
	go func() {
		defer close(s.ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20) // events as large as a body (a listen's acknowledgement)
		var ev event
		fields := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if fields {
					s.ch <- ev
				}
				ev, fields = event{}, false
			case strings.HasPrefix(line, ":"):
				s.ch <- event{comment: strings.TrimSpace(line[1:])}
			default:
				k, v, _ := strings.Cut(line, ":")
				v = strings.TrimPrefix(v, " ")
				fields = true
				switch k {
				case "id":
					ev.id, ev.hasID = v, true
				case "event":
					ev.name = v
				case "data":
					ev.data = v
				case "retry":
					ev.retry = v
				}
			}
		}
		s.ch <- event{eof: true}
	}()
	return s
}

// next returns the next event or comment.
func (s *sse) next() event {
	s.t.Helper()
	select {
	case ev, ok := <-s.ch:
		if !ok {
			return event{eof: true}
		}
		return ev
	case <-time.After(liveness):
		s.t.Fatal("no SSE event")
		return event{}
	}
}

// nextEvent skips comments and returns the next event.
func (s *sse) nextEvent() event {
	s.t.Helper()
	for {
		if ev := s.next(); ev.comment == "" {
			return ev
		}
	}
}

// none asserts that nothing arrives for d (used to show a filtered message
// was dropped; the positive case of the same test bounds it).
func (s *sse) none(d time.Duration) {
	s.t.Helper()
	select {
	case ev := <-s.ch:
		if ev.comment == "" && !ev.eof {
			s.t.Fatalf("unexpected event %+v", ev)
		}
	case <-time.After(d):
	}
}

func (s *sse) close() { s.resp.Body.Close() }

// openGet opens the GET channel of sid.
func (rt *route) openGet(ctx context.Context, sid string, headers ...string) *http.Response {
	rt.t.Helper()
	return rt.open(ctx, http.MethodGet, "", append(headers, "Mcp-Session-Id: "+sid, "Accept: text/event-stream")...)
}

// stream opens a POST whose answer is read as SSE.
func (rt *route) stream(ctx context.Context, sid string, body string, headers ...string) *sse {
	rt.t.Helper()
	if sid != "" {
		headers = append(headers, "Mcp-Session-Id: "+sid)
	}
	return newSSE(rt.t, rt.open(ctx, http.MethodPost, body, headers...))
}

// heapInUse returns the bytes of the heap's live objects, after collecting
// what is not (twice: sync.Pools keep what they held until a second
// collection).
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
