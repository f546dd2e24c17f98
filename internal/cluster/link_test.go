package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// linkOwner is an owner node that serves links as mcp's handler does
// (upgrades signed by testSign go to serveLink; anything else, a request
// not carried by a link, to plain), and counts the links it accepted.
type linkOwner struct {
	URL   string
	links atomic.Int32
	done  chan struct{} // mcp.Link.Done: closing it drains the links
	// served counts the links that returned from serveLink.
	served atomic.Int32
}

func startLinkOwner(t testing.TB, linked, plain http.HandlerFunc) *linkOwner {
	t.Helper()
	o := &linkOwner{done: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == mcp.LinkProtocol {
			if r.Header.Get("Test-Signature") != "ok" || r.Header.Get(mcp.ForwardedHeader) != "a" {
				w.WriteHeader(http.StatusForbidden)
				return
			}
			if plain != nil && r.URL.Path == "/old" {
				w.WriteHeader(http.StatusBadRequest) // a luamcp without links
				return
			}
			select {
			case <-o.done:
				w.WriteHeader(http.StatusServiceUnavailable) // the route shuts down (mcp's serveLink)
				return
			default:
			}
			o.links.Add(1)
			serveLink(w, r, mcp.Link{Serve: linked, MaxRequest: 1 << 20, Done: o.done}, slog.New(slog.DiscardHandler))
			o.served.Add(1)
			return
		}
		if plain == nil {
			t.Errorf("%s %s reached the owner without a link", r.Method, r.URL)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		plain(w, r)
	}))
	startClosingLinks(t, srv)
	o.URL = srv.URL
	return o
}

// testSign stands in for mcp's signature: the owner checks its header.
func testSign(h http.Header, method, path, session, client, proto string) {
	h.Set(mcp.ForwardedHeader, "a")
	h.Set(mcp.ForwardedForHeader, client)
	h.Set(mcp.ForwardedProtoHeader, proto)
	h.Set("Test-Signature", "ok")
}

// linkPeer is a peer to o that forwards POSTs and DELETEs on links.
func linkPeer(t testing.TB, o *linkOwner) *peer {
	p := mustPeer(t, o.URL)
	p.sign = testSign
	return p
}

// TestLinkRequests: many requests at once share one link, and each arrives
// whole (method, URI under the advertised path, Host, end-to-end headers
// but no hop-by-hop ones, body) and gets its own answer (status, headers,
// body, a Content-Length); GETs do not use the link.
func TestLinkRequests(t *testing.T) {
	o := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Echo-Method", r.Method)
		w.Header().Set("Echo-Uri", r.RequestURI)
		w.Header().Set("Echo-Host", r.Host)
		w.Header().Set("Echo-A", r.Header.Get("A"))
		w.Header().Set("Echo-Hop", r.Header.Get("Keep-Alive")+r.Header.Get("X-Conn-Named"))
		w.Header().Set("Echo-Length", fmt.Sprint(r.ContentLength))
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	}, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("%s reached the owner over HTTP", r.Method)
		}
		io.WriteString(w, "plain")
	})
	p := linkPeer(t, o)
	entry := entryFor(t, p, nil)

	var wg sync.WaitGroup
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				method, body := http.MethodPost, fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				if i%3 == 2 {
					method, body = http.MethodDelete, ""
				}
				req, _ := http.NewRequest(method, entry.URL+"/mcp?x=1", strings.NewReader(body))
				req.Host = "client.example"
				req.Header.Set("A", fmt.Sprint(g, i))
				req.Header.Set("Keep-Alive", "timeout=5")
				req.Header.Set("Connection", "X-Conn-Named")
				req.Header.Set("X-Conn-Named", "hop")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				h := resp.Header
				if resp.StatusCode != http.StatusCreated || string(got) != body || h.Get("Echo-Method") != method ||
					h.Get("Echo-Uri") != "/mcp?x=1" || h.Get("Echo-Host") != "client.example" || h.Get("Echo-A") != fmt.Sprint(g, i) ||
					h.Get("Echo-Hop") != "" || h.Get("Echo-Length") != fmt.Sprint(len(body)) || resp.ContentLength != int64(len(body)) {
					t.Errorf("%s: %d %q %v (length %d)", method, resp.StatusCode, got, h, resp.ContentLength)
				}
			}
		}()
	}
	wg.Wait()
	if n := o.links.Load(); n != 1 {
		t.Errorf("%d links opened, want 1", n)
	}
	resp, err := http.Get(entry.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "plain" {
		t.Errorf("GET answered %q", got)
	}
}

// TestLinkStream: an answer the owner flushes reaches the client as it is
// flushed (the second event is written only once the client has the
// first), and one the owner ends early (EndResponse: mcp's inline calls)
// is complete for the client while the owner's handler runs on.
func TestLinkStream(t *testing.T) {
	first, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	o := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-first:
		case <-release:
			return
		}
		io.WriteString(w, "data: 2\n\n")
		w.(interface{ EndResponse() }).EndResponse()
		if _, err := io.WriteString(w, "data: 3\n\n"); err == nil {
			t.Error("a write after EndResponse succeeded")
		}
		<-release
	}, nil)
	entry := entryFor(t, linkPeer(t, o), nil)
	resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: 1\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	close(first)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "\ndata: 2\n\n" {
		t.Fatalf("the rest of the stream: %q, %v", rest, err)
	}
}

// TestLinkCancel: a client that leaves cancels its request on the owner,
// and nothing is left running once the link is closed.
func TestLinkCancel(t *testing.T) {
	ended := make(chan struct{})
	o := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(ended)
		case <-time.After(10 * time.Second):
		}
	}, nil)
	before := runtime.NumGoroutine()
	p := linkPeer(t, o)
	errs := make(chan error, 1)
	entry := entryFor(t, p, errs)
	if err := leaveMidStream(t, entry.URL+"/mcp", "POST", ended, errs); err != nil {
		t.Errorf("forward: %v", err)
	}
	entry.Close()
	p.close()
	waitGoroutines(t, before, func() bool { return o.served.Load() == 1 })
}

// TestLinkAbort: an answer the owner cuts short (its handler aborts or
// panics) is not passed on as complete, and the link goes on serving.
func TestLinkAbort(t *testing.T) {
	o := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, `{"cut`)
		w.(http.Flusher).Flush()
		switch r.Header.Get("Mode") {
		case "abort":
			panic(http.ErrAbortHandler)
		case "panic":
			panic("a bug")
		}
		io.WriteString(w, strings.Repeat(" ", 95))
	}, nil)
	entry := entryFor(t, linkPeer(t, o), nil)
	post := func(mode string) (*http.Response, error) {
		req, _ := http.NewRequest("POST", entry.URL+"/mcp", strings.NewReader("{}"))
		req.Header.Set("Mode", mode)
		return http.DefaultClient.Do(req)
	}
	for _, mode := range []string{"abort", "panic"} {
		resp, err := post(mode)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				t.Errorf("%s: a cut answer passed on as complete: %q", mode, b)
			}
		}
	}
	resp, err := post("whole")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(b) != 100 {
		t.Errorf("after the aborts: %q, %v", b, err)
	}
	if n := o.links.Load(); n != 1 {
		t.Errorf("%d links, want 1: an aborted answer ends its stream, not the link", n)
	}
}

// TestLinkFails: a link that fails before an answer fails the forward
// (Node.Forward answers 404); the next forward opens a new link.
func TestLinkFails(t *testing.T) {
	var conns sync.Map
	o := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mode") == "die" {
			conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	}, nil)
	p := linkPeer(t, o)
	errs := make(chan error, 10)
	entry := entryFor(t, p, errs)
	if resp, err := http.Post(entry.URL+"/a", "application/json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	<-errs
	p.mu.Lock()
	for _, s := range p.links {
		conns.Store(s.l.w.conn, true)
	}
	p.mu.Unlock()
	req, _ := http.NewRequest("POST", entry.URL+"/a", strings.NewReader("{}"))
	req.Header.Set("Mode", "die")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a link that failed before its answer: %d, want 404", resp.StatusCode)
	}
	if err := <-errs; err == nil {
		t.Error("forward reported no error for a link that failed")
	}
	resp, err = http.Post(entry.URL+"/a", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("after the failed link: %d %q", resp.StatusCode, b)
	}
	if n := o.links.Load(); n != 2 {
		t.Errorf("%d links opened, want 2", n)
	}
}

// TestLinkRefused: a node that refuses links (a luamcp without them, or a
// proxy in between) gets its forwards over HTTP/1.1, signed.
func TestLinkRefused(t *testing.T) {
	var plainPosts atomic.Int32
	o := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("a request reached a node that refused links over a link")
	}, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Test-Signature") != "ok" {
			t.Error("a forward over HTTP was not signed")
		}
		body, _ := io.ReadAll(r.Body)
		plainPosts.Add(1)
		w.Write(body)
	})
	p := linkPeer(t, o)
	entry := entryFor(t, p, nil)
	for range 3 {
		resp, err := http.Post(entry.URL+"/old", "application/json", strings.NewReader(`{"x":1}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != `{"x":1}` {
			t.Errorf("answer %q", b)
		}
	}
	if plainPosts.Load() != 3 {
		t.Errorf("%d POSTs over HTTP, want 3", plainPosts.Load())
	}
	p.mu.Lock()
	retry := p.noLinkUntil
	p.mu.Unlock()
	if time.Until(retry) < noLinkRetry/2 {
		t.Errorf("no pause before the next link attempt (%v)", time.Until(retry))
	}
}

// TestLinkDrain: when the owner's route shuts down (Done), the request in
// flight is answered, a request made meanwhile does not wait for it (the
// owner's go-away stops new requests on the link: this one goes over
// HTTP/1.1 and gets the owner's 503), then the link closes.
func TestLinkDrain(t *testing.T) {
	h := newHeldRequest()
	defer h.release() // a failed test must not leave the owner's handler waiting
	o := startLinkOwner(t, h.serve, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	p := linkPeer(t, o)
	entry := entryFor(t, p, nil)
	h.send(entry.URL + "/mcp")
	l := onlyLink(t, p)
	close(o.done)
	deadline := time.Now().Add(10 * time.Second)
	for l.alive() {
		if time.Now().After(deadline) {
			t.Fatal("the owner's go-away did not retire the link")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a request during the drain: %d, want the owner's 503", resp.StatusCode)
	}
	if o.served.Load() != 0 {
		t.Fatal("the link closed with a request in flight")
	}
	h.release()
	if s := <-h.got; s != "finished" {
		t.Errorf("the request in flight got %q", s)
	}
	for o.served.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the link did not close after draining")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLinkRetire: a node forgotten (one of its requests failed, it moved,
// this node leaves) has its links retired, not cut: the requests in flight
// on them are answered, then the links close.
func TestLinkRetire(t *testing.T) {
	h := newHeldRequest()
	defer h.release() // a failed test must not leave the owner's handler waiting
	o := startLinkOwner(t, h.serve, nil)
	p := linkPeer(t, o)
	entry := entryFor(t, p, nil)
	h.send(entry.URL + "/mcp")
	l := onlyLink(t, p)
	p.close()
	if l.alive() {
		t.Error("a retired link takes new requests")
	}
	h.release()
	if s := <-h.got; s != "finished" {
		t.Errorf("the request in flight got %q", s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for o.served.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a retired link did not close after its last answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// heldRequest is a POST through an entry node whose owner holds it in its
// handler (serve) until release: the request in flight of a drain or a
// retirement.
type heldRequest struct {
	started chan struct{} // closed when the owner's handler has the request
	finish  chan struct{}
	release func()      // lets the handler answer "finished"
	got     chan string // what the client read, or its error
}

func newHeldRequest() *heldRequest {
	h := &heldRequest{started: make(chan struct{}), finish: make(chan struct{}), got: make(chan string, 1)}
	h.release = sync.OnceFunc(func() { close(h.finish) })
	return h
}

func (h *heldRequest) serve(w http.ResponseWriter, r *http.Request) {
	close(h.started)
	<-h.finish
	io.WriteString(w, "finished")
}

// send posts to url in the background and returns once the owner holds
// the request.
func (h *heldRequest) send(url string) {
	go func() {
		resp, err := http.Post(url, "application/json", strings.NewReader("{}"))
		if err != nil {
			h.got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.got <- string(b)
	}()
	<-h.started
}

// onlyLink returns p's one link.
func onlyLink(t *testing.T, p *peer) *clientLink {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.links) != 1 {
		t.Fatalf("%d links, want 1", len(p.links))
	}
	for _, s := range p.links {
		<-s.ready
		return s.l
	}
	return nil
}

// TestLinkSlowClient: a client that stops reading its answer has its
// request cancelled once the forwarder holds maxStreamBuffered of it; the
// link serves the others meanwhile.
func TestLinkSlowClient(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of MiB")
	}
	cancelled := make(chan struct{})
	o := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mode") != "flood" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := "data: " + strings.Repeat("x", 64<<10) + "\n\n"
		for i := 0; i < 1000; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				close(cancelled)
				return
			}
		}
		<-r.Context().Done()
		close(cancelled)
	}, nil)
	entry := entryFor(t, linkPeer(t, o), nil)
	conn, err := net.Dial("tcp", entry.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nMode: flood\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	// The client reads nothing.
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the owner kept writing to a client that reads nothing")
	}
	resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" || o.links.Load() != 1 {
		t.Errorf("beside the slow client: %q on %d links", b, o.links.Load())
	}
}

// TestLinkFrames: malformed frames end the link, never the process.
func TestLinkFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"unknown type", appendFrame(nil, 99, 1)},
		{"answer type from a forwarder", appendFrame(nil, frameHead, 1, 0, 200, 0, 0)},
		{"short request", appendFrame(nil, frameRequest, 1, 4, 'P', 'O')},
		{"bad URI", appendFrame(nil, frameRequest, 1, append(append([]byte{4}, "POST"...), 0, 2, 'x', 'y', 0, 0, 0, 0)...)},
		{"too long", []byte{frameRequest, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := readLinkFrames(tc.frame); err == nil {
				t.Error("a malformed frame was accepted")
			}
		})
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// readLinkFrames runs an owner's link reader over b.
func readLinkFrames(b []byte) error {
	a, c := net.Pipe()
	defer a.Close()
	defer c.Close()
	go io.Copy(io.Discard, c)
	s := &serverLink{w: newLinkWriter(a), link: mcp.Link{Serve: func(w http.ResponseWriter, r *http.Request) {}, MaxRequest: 1 << 16},
		log: slog.New(slog.DiscardHandler), base: context.Background(), inflight: map[uint32]context.CancelFunc{},
		work: make(chan linkJob), closed: make(chan struct{})}
	defer s.w.close(errLinkClosed, false)
	err := s.read(bufio.NewReader(strings.NewReader(string(b))))
	s.wg.Wait()
	close(s.closed)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// FuzzLinkFrames: whatever a link carries, its reader returns (an error or
// the end of input) without panicking, and the requests it decodes are
// served.
func FuzzLinkFrames(f *testing.F) {
	req := &http.Request{Method: "POST", URL: mustURL("/mcp"), Host: "h", Header: http.Header{"A": {"b"}}, Body: io.NopCloser(strings.NewReader("{}")), ContentLength: 2}
	good, _ := appendRequestFrame(nil, 1, req, "/mcp?x")
	f.Add(good)
	f.Add(append(good, appendFrame(nil, frameCancel, 1)...))
	f.Add(appendFrame(nil, frameRequest, 7))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = readLinkFrames(b)
	})
}

// TestLinkTLS: a link to an https:// node is TLS, negotiated as HTTP/1.1
// although the node offers h2 (an upgrade needs HTTP/1.1).
func TestLinkTLS(t *testing.T) {
	var links atomic.Int32
	owner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != mcp.LinkProtocol {
			t.Errorf("%s %s reached the owner without a link", r.Method, r.Proto)
			return
		}
		links.Add(1)
		serveLink(w, r, mcp.Link{Serve: func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.Proto+" "+r.Host)
		}, MaxRequest: 1 << 20}, slog.New(slog.DiscardHandler))
	}))
	owner.EnableHTTP2 = true
	owner.StartTLS()
	defer owner.Close()
	p, err := newPeer("b", owner.URL, owner.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs)
	if err != nil {
		t.Fatal(err)
	}
	p.sign = testSign
	defer p.close()
	entry := entryFor(t, p, nil)
	for range 3 {
		resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "HTTP/1.1 " + strings.TrimPrefix(entry.URL, "http://"); string(b) != want {
			t.Errorf("answer %d %q, want %q", resp.StatusCode, b, want)
		}
	}
	if links.Load() != 1 {
		t.Errorf("%d links, want 1", links.Load())
	}
}

// TestLinkPing: while answers are awaited and nothing arrives, the
// forwarder pings the owner: a live owner that takes its time (a long tool
// call) keeps its link, and one that stopped answering altogether (its
// machine gone, no reset) fails the link, and the request gets 404, rather
// than waiting for TCP keep-alive.
func TestLinkPing(t *testing.T) {
	pingOverride.Store(int64(50 * time.Millisecond))
	t.Cleanup(func() { pingOverride.Store(0) })
	client := &http.Client{Timeout: 10 * time.Second}

	slow := startLinkOwner(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(8 * pingEvery())
		io.WriteString(w, "slow")
	}, nil)
	entry := entryFor(t, linkPeer(t, slow), nil)
	resp, err := client.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "slow" {
		t.Errorf("a slow owner's answer: %d %q", resp.StatusCode, b)
	}

	// A silent owner: it takes the link, then neither answers nor closes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+mcp.LinkProtocol+"\r\n\r\n")
		io.Copy(io.Discard, br) // reads everything, answers nothing
	}()
	p := mustPeer(t, "http://"+ln.Addr().String())
	p.sign = testSign
	errs := make(chan error, 1)
	entry = entryFor(t, p, errs)
	resp, err = client.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("through a silent owner: %d, want 404", resp.StatusCode)
	}
	if err := <-errs; err == nil || !strings.Contains(err.Error(), "ping") {
		t.Errorf("forward: %v, want the unanswered ping", err)
	}
}

// startClosingLinks starts srv, whose links are hijacked connections: Close
// does not end them, so the test's cleanup closes them too, through the
// server's ConnState.
func startClosingLinks(t testing.TB, srv *httptest.Server) {
	t.Helper()
	var mu sync.Mutex
	hijacked := map[net.Conn]bool{}
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateHijacked {
			mu.Lock()
			hijacked[c] = true
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		for c := range hijacked {
			c.Close()
		}
		mu.Unlock()
	})
}
