package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rawOwner is an owner node at the wire level: it parses each request on a
// kept-alive connection and writes the raw answer reply gives. It counts the
// connections it accepted (the forwarder's dials).
type rawOwner struct {
	URL      string
	dials    atomic.Int32
	requests chan *ownerRequest
}

// ownerRequest is a request as the owner received it.
type ownerRequest struct {
	*http.Request
	body []byte
	conn net.Conn
}

// ownerReply is the owner's behaviour for one request: the raw answer, and
// what it does to the connection afterwards.
type ownerReply struct {
	raw   string
	after func(net.Conn) // nil: keep the connection
}

func startRawOwner(t *testing.T, reply func(*ownerRequest) ownerReply) *rawOwner {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &rawOwner{URL: "http://" + ln.Addr().String(), requests: make(chan *ownerRequest, 100)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.dials.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, err := io.ReadAll(req.Body)
					if err != nil {
						return
					}
					or := &ownerRequest{Request: req, body: body, conn: c}
					o.requests <- or
					rep := reply(or)
					if _, err := io.WriteString(c, rep.raw); err != nil {
						return
					}
					if rep.after != nil {
						rep.after(c)
						return
					}
				}
			}()
		}
	}()
	return o
}

// next returns the next request the owner received.
func (o *rawOwner) next(t *testing.T) *ownerRequest {
	t.Helper()
	select {
	case r := <-o.requests:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the owner received no request")
		return nil
	}
}

func (o *rawOwner) none(t *testing.T) {
	t.Helper()
	select {
	case r := <-o.requests:
		t.Errorf("the owner received %s %s, want no request", r.Method, r.URL)
	default:
	}
}

// entryFor serves forwards to p, answering 404 when forward fails before
// answering (as Node.Forward does); its last error goes to errs.
func entryFor(t *testing.T, p *peer, errs chan<- error) *httptest.Server {
	t.Helper()
	entry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := p.forward(w, r, nil)
		if errs != nil {
			errs <- err
		}
		if err != nil && r.Context().Err() == nil {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(entry.Close)
	return entry
}

func mustPeer(t testing.TB, addr string) *peer {
	t.Helper()
	p, err := newPeer("b", addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

const okJSON = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

// TestForwardRequest: what the owner receives of a forwarded request: the
// client's Host, the path under the advertised URL's path, the query, the
// end-to-end headers, the body with its length; not the hop-by-hop headers
// (RFC 9110 §7.6.1), nor those the Connection header names.
func TestForwardRequest(t *testing.T) {
	o := startRawOwner(t, func(*ownerRequest) ownerReply { return ownerReply{raw: okJSON} })
	tests := []struct {
		name     string
		method   string
		path     string
		header   http.Header
		body     string
		chunked  bool // the client sends the body without a length
		wantURI  string
		keep     []string
		drop     []string
		wantBody string
	}{
		{
			name: "post", method: "POST", path: "/mcp/echo?x=1",
			header: http.Header{
				"Mcp-Session-Id":           {"b.0123"},
				"Luamcp-Forwarded-By":      {"a"},
				"Luamcp-Forward-Signature": {"1.sig"},
				"Last-Event-Id":            {"7"},
				"X-Forwarded-For":          {"10.0.0.1"},
				"Accept":                   {"application/json, text/event-stream"},
			},
			body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, wantURI: "/base/mcp/echo?x=1",
			keep:     []string{"Mcp-Session-Id", "Luamcp-Forwarded-By", "Luamcp-Forward-Signature", "Last-Event-Id", "X-Forwarded-For", "Accept"},
			wantBody: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		},
		{
			name: "hop by hop", method: "GET", path: "/mcp/echo",
			header: http.Header{
				"Connection":          {"keep-alive, X-Hop"},
				"X-Hop":               {"1"},
				"Keep-Alive":          {"timeout=5"},
				"Proxy-Authorization": {"Basic x"},
				"Proxy-Connection":    {"keep-alive"},
				"Te":                  {"trailers"},
				"Trailer":             {"X-T"},
				"Upgrade":             {"h2c"},
				"X-End":               {"2"},
			},
			wantURI: "/base/mcp/echo",
			keep:    []string{"X-End"},
			drop:    []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Upgrade"},
		},
		{
			name: "chunked body", method: "POST", path: "/mcp/echo", chunked: true,
			body: strings.Repeat("a", 100<<10), wantURI: "/base/mcp/echo", wantBody: strings.Repeat("a", 100<<10),
		},
		{
			name: "large body", method: "POST", path: "/mcp/echo",
			body: strings.Repeat("b", inlineBody+1), wantURI: "/base/mcp/echo", wantBody: strings.Repeat("b", inlineBody+1),
		},
		{
			name: "delete", method: "DELETE", path: "/mcp/echo",
			header: http.Header{"Mcp-Session-Id": {"b.0123"}}, wantURI: "/base/mcp/echo", keep: []string{"Mcp-Session-Id"},
		},
	}
	p := mustPeer(t, o.URL+"/base/")
	entry := entryFor(t, p, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
				if tt.chunked {
					body = io.MultiReader(body) // hides the length: sent chunked
				}
			}
			req, err := http.NewRequest(tt.method, entry.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "client.example:8750"
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "{}" {
				t.Fatalf("answer %d %q, want 200 {}", resp.StatusCode, b)
			}
			got := o.next(t)
			if got.Host != "client.example:8750" {
				t.Errorf("Host %q, want the client's", got.Host)
			}
			if got.RequestURI != tt.wantURI {
				t.Errorf("request URI %q, want %q", got.RequestURI, tt.wantURI)
			}
			for _, k := range tt.keep {
				if g := got.Header[k]; strings.Join(g, ",") != strings.Join(tt.header[k], ",") {
					t.Errorf("header %s: %q, want %q", k, g, tt.header[k])
				}
			}
			for _, k := range tt.drop {
				if g, ok := got.Header[k]; ok {
					t.Errorf("hop-by-hop header %s forwarded: %q", k, g)
				}
			}
			if string(got.body) != tt.wantBody {
				t.Errorf("body: %d bytes, want %d", len(got.body), len(tt.wantBody))
			}
		})
	}
}

// TestForwardAnswers: the owner's answers as the client gets them, and
// whether the connection goes back to the pool.
func TestForwardAnswers(t *testing.T) {
	closeConn := func(c net.Conn) { c.Close() }
	tests := []struct {
		name       string
		reply      ownerReply
		wantStatus int
		wantBody   string
		wantHeader http.Header // "" values: must be absent
		wantLength bool        // the client got a Content-Length
		wantIdle   int         // connections pooled afterwards
		wantAbort  bool        // the answer's head went out, then it was cut
	}{
		{
			name:       "json",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: b.1\r\nKeep-Alive: timeout=5\r\nConnection: X-Hop\r\nX-Hop: 1\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"},
			wantStatus: 200, wantBody: `{"ok":true}`, wantLength: true, wantIdle: 1,
			wantHeader: http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {"b.1"}, "Keep-Alive": {""}, "X-Hop": {""}},
		},
		{
			name:       "chunked with a trailer",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\nX-T: 1\r\n\r\n"},
			wantStatus: 200, wantBody: `{"a":1}`, wantIdle: 1,
			wantHeader: http.Header{"Content-Type": {"application/json"}, "X-T": {""}},
		},
		{
			name:       "until the connection closes",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"until\":\"close\"}", after: closeConn},
			wantStatus: 200, wantBody: `{"until":"close"}`, wantIdle: 0,
		},
		{
			name:       "connection close",
			reply:      ownerReply{raw: "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbad", after: closeConn},
			wantStatus: 400, wantBody: "bad", wantLength: true, wantIdle: 0,
		},
		{
			name:       "http/1.0",
			reply:      ownerReply{raw: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", after: closeConn},
			wantStatus: 200, wantBody: "ok", wantLength: true, wantIdle: 0,
		},
		{
			name:       "1xx first",
			reply:      ownerReply{raw: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"},
			wantStatus: 202, wantIdle: 1, wantHeader: http.Header{"Link": {""}},
		},
		{
			name:       "no content",
			reply:      ownerReply{raw: "HTTP/1.1 204 No Content\r\n\r\n"},
			wantStatus: 204, wantIdle: 1,
		},
		{
			name:       "malformed",
			reply:      ownerReply{raw: "HTTP/1.1 OK\r\n\r\n", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
		// Framing that net/http would read otherwise (or refuse): refused,
		// so that both ends agree on where an answer ends (FuzzAnswer).
		{
			name:       "signed length",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
		{
			name:       "two lengths written differently",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nok", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
		{
			name:       "the same length twice",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"},
			wantStatus: 200, wantBody: "ok", wantLength: true, wantIdle: 1,
		},
		{
			name:       "chunked http/1.0",
			reply:      ownerReply{raw: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
		{
			name:       "header name not a token",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nX\"Y: 1\r\nContent-Length: 2\r\n\r\nok", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
		{
			name:       "control character in a value",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nX-Y: a\rb\r\nContent-Length: 2\r\n\r\nok", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
		{
			name:       "version not a digit",
			reply:      ownerReply{raw: "HTTP/1.x 200 OK\r\nContent-Length: 2\r\n\r\nok", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
		{
			name:       "trailer line ending in LF alone",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\n\r\n", after: closeConn},
			wantStatus: 200, wantAbort: true, wantIdle: 0,
		},
		{
			name:       "head too large",
			reply:      ownerReply{raw: "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("x", maxHeadBytes) + "\r\nContent-Length: 0\r\n\r\n", after: closeConn},
			wantStatus: 404, wantIdle: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := startRawOwner(t, func(*ownerRequest) ownerReply { return tt.reply })
			p := mustPeer(t, o.URL)
			entry := entryFor(t, p, nil)
			resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.wantAbort {
				if err == nil {
					t.Errorf("answer %d %q read whole, want it cut", resp.StatusCode, b)
				}
				if got := p.idleCount(); got != tt.wantIdle {
					t.Errorf("%d connections pooled, want %d", got, tt.wantIdle)
				}
				return
			}
			if resp.StatusCode != tt.wantStatus || (tt.wantStatus != 404 && string(b) != tt.wantBody) {
				t.Errorf("answer %d %q, want %d %q", resp.StatusCode, b, tt.wantStatus, tt.wantBody)
			}
			for k, v := range tt.wantHeader {
				if got := resp.Header.Get(k); got != v[0] {
					t.Errorf("header %s: %q, want %q", k, got, v[0])
				}
			}
			if tt.wantBody != "" && tt.wantLength != (resp.ContentLength == int64(len(tt.wantBody))) {
				t.Errorf("Content-Length %d, want it set: %v", resp.ContentLength, tt.wantLength)
			}
			if got := p.idleCount(); got != tt.wantIdle {
				t.Errorf("%d connections pooled, want %d", got, tt.wantIdle)
			}
		})
	}
}

// TestForwardReusesConnections: sequential forwards share one connection.
func TestForwardReusesConnections(t *testing.T) {
	o := startRawOwner(t, func(*ownerRequest) ownerReply { return ownerReply{raw: okJSON} })
	p := mustPeer(t, o.URL)
	entry := entryFor(t, p, nil)
	for i := 0; i < 5; i++ {
		resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		o.next(t)
	}
	if d := o.dials.Load(); d != 1 {
		t.Errorf("%d connections for 5 forwards, want 1", d)
	}
}

// TestForwardStaleConnection: a pooled connection the owner closed is never
// used in a way that loses a request silently: a POST is sent once on a live
// connection, or fails (404 at the entry) without reaching the owner; a
// GET is sent again on a new connection.
func TestForwardStaleConnection(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		reset      bool // the owner resets the connection (RST) instead of closing it (FIN)
		aged       bool // the connection sat idle longer than peekAfter
		wantStatus int
		wantDials  int32
		wantSeen   bool // the owner receives the second request
	}{
		// An aged connection is peeked at before use: found closed, a new
		// one is dialled.
		{name: "post aged", method: "POST", aged: true, wantStatus: 200, wantDials: 2, wantSeen: true},
		// A reset connection fails the write: nothing was sent, sent again.
		{name: "post reset", method: "POST", reset: true, wantStatus: 200, wantDials: 2, wantSeen: true},
		// Closed and used at once: the answer's end comes before any byte.
		// The owner may have run a POST (it could have died running it): not
		// sent again, 404 (the owner is gone).
		{name: "post closed", method: "POST", wantStatus: 404, wantDials: 1},
		// A GET is safe: sent again.
		{name: "get closed", method: "GET", wantStatus: 200, wantDials: 2, wantSeen: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			closed := make(chan struct{})
			first := true
			o := startRawOwner(t, func(*ownerRequest) ownerReply {
				if !first {
					return ownerReply{raw: okJSON}
				}
				first = false
				// The first answer keeps the connection alive; then the
				// owner drops it, as an idle timeout would.
				return ownerReply{raw: okJSON, after: func(c net.Conn) {
					if tt.reset {
						c.(*net.TCPConn).SetLinger(0)
					}
					c.Close()
					close(closed)
				}}
			})
			p := mustPeer(t, o.URL)
			errs := make(chan error, 2)
			entry := entryFor(t, p, errs)
			do := func(method string) int {
				var body io.Reader
				if method == "POST" {
					body = strings.NewReader("{}")
				}
				req, _ := http.NewRequest(method, entry.URL+"/mcp", body)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			if s := do("POST"); s != 200 {
				t.Fatalf("first forward: %d", s)
			}
			o.next(t)
			<-errs
			<-closed
			time.Sleep(20 * time.Millisecond) // the FIN or RST reaches the pooled connection
			if tt.aged {
				p.mu.Lock()
				p.idle[0].idleSince = time.Now().Add(-2 * peekAfter)
				p.mu.Unlock()
			}
			if s := do(tt.method); s != tt.wantStatus {
				t.Errorf("second forward: %d, want %d (error %v)", s, tt.wantStatus, <-errs)
			}
			if tt.wantSeen {
				o.next(t)
			}
			o.none(t)
			if d := o.dials.Load(); d != tt.wantDials {
				t.Errorf("%d connections, want %d", d, tt.wantDials)
			}
		})
	}
}

// TestForwardStream: an event stream's events reach the client as the
// owner writes them, before the answer ends; a large answer is streamed,
// not held.
func TestForwardStream(t *testing.T) {
	release := make(chan struct{})
	wait := func(r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done(): // the test failed: end
		}
	}
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush() // the head alone first: the client must get it
			wait(r)
			io.WriteString(w, "id: "+r.Header.Get("Last-Event-Id")+"\ndata: 1\n\n")
			w.(http.Flusher).Flush()
			wait(r)
			io.WriteString(w, "data: 2\n\n")
		case "/big":
			w.Header().Set("Content-Length", "8388608")
			w.Write(bytes.Repeat([]byte("x"), 4<<20))
			wait(r)
			w.Write(bytes.Repeat([]byte("x"), 4<<20))
		}
	}))
	defer owner.Close()
	p := mustPeer(t, owner.URL)
	entry := entryFor(t, p, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", entry.URL+"/sse", nil)
	req.Header.Set("Last-Event-ID", "41")
	resp, err := http.DefaultClient.Do(req) // returns with the head, before any event
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	release <- struct{}{}
	br := bufio.NewReader(resp.Body)
	var got []string
	for len(got) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, line)
	}
	if got[0] != "id: 41\n" || got[1] != "data: 1\n" {
		t.Errorf("first event %q, want id 41 (Last-Event-ID passed) and data 1 before the answer ends", got)
	}
	release <- struct{}{}
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "\ndata: 2\n\n" {
		t.Errorf("rest of the stream %q", rest)
	}

	req, _ = http.NewRequestWithContext(ctx, "GET", entry.URL+"/big", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Most of the first half arrives before the owner writes the rest (a
	// JSON answer is not flushed: a few KiB may wait in the entry's buffer).
	part := make([]byte, 1<<20)
	if _, err := io.ReadFull(resp.Body, part); err != nil {
		t.Fatalf("the first half before the owner wrote the rest: %v", err)
	}
	release <- struct{}{}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != 7<<20 || resp.ContentLength != 8<<20 {
		t.Errorf("rest %d bytes, %v; Content-Length %d", n, err, resp.ContentLength)
	}
}

// TestForwardCancel: a client that leaves ends the forward: the connection
// to the owner is closed (the owner sees its request end), not pooled, and
// no goroutine is left.
func TestForwardCancel(t *testing.T) {
	ended, failed := make(chan struct{}), make(chan struct{})
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(ended)
		case <-failed: // the test failed: end
		}
	}))
	defer owner.Close()
	defer close(failed)
	before := runtime.NumGoroutine()
	p := mustPeer(t, owner.URL)
	errs := make(chan error, 1)
	entry := entryFor(t, p, errs)
	leaveMidStream(t, entry.URL+"/sse", "GET", ended, errs)
	if n := p.idleCount(); n != 0 {
		t.Errorf("%d connections pooled after a cancelled forward, want 0", n)
	}
	entry.Close()
	owner.Close()
	waitGoroutines(t, before, func() bool { return true })
}

// leaveMidStream opens a stream through the entry node at url with method,
// reads its first event ("data: 1"), leaves, and waits until the owner's
// request has ended (ended closes) and the forward returned (its error on
// errs).
func leaveMidStream(t *testing.T, url, method string, ended <-chan struct{}, errs <-chan error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader("{}")
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: 1\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the owner's request did not end when the client left")
	}
	select {
	case err := <-errs:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("forward did not return when the client left")
	}
	return nil
}

// waitGoroutines waits until no more goroutines run than before and done
// holds; it fails the test with every goroutine's stack after 10 s.
func waitGoroutines(t *testing.T, before int, done func() bool) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before || !done() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestForwardTruncated: an answer the owner cuts short is not passed on as
// complete: the client's answer is aborted.
func TestForwardTruncated(t *testing.T) {
	o := startRawOwner(t, func(*ownerRequest) ownerReply {
		return ownerReply{raw: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cut", after: func(c net.Conn) { c.Close() }}
	})
	p := mustPeer(t, o.URL)
	entry := entryFor(t, p, nil)
	resp, err := http.Post(entry.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err == nil {
		var b []byte
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("a truncated answer passed on as complete: %q", b)
		}
	}
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Errorf("reading a truncated answer: %v, want an unexpected end", err)
	}
	if n := p.idleCount(); n != 0 {
		t.Errorf("%d connections pooled, want 0", n)
	}
}

// TestPeerIdleSweep: idle connections are closed after idleConnTimeout.
func TestPeerIdleSweep(t *testing.T) {
	o := startRawOwner(t, func(*ownerRequest) ownerReply { return ownerReply{raw: okJSON} })
	p := mustPeer(t, o.URL)
	c, _, err := p.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.put(c)
	p.mu.Lock()
	p.idle[0].idleSince = time.Now().Add(-idleConnTimeout)
	p.mu.Unlock()
	p.sweepIdle()
	if n := p.idleCount(); n != 0 {
		t.Errorf("%d idle connections after the sweep, want 0", n)
	}
	if _, err := c.nc.Read(make([]byte, 1)); err == nil {
		t.Error("the swept connection is still open")
	}
}

// TestForwardTLS: an https:// node is reached over TLS with HTTP/1.1, its
// certificate checked against the roots the node was given (the cluster's
// private authority: --cluster-ca); with the system's roots, the owner's
// test certificate is refused and the forward fails (404 from the entry).
func TestForwardTLS(t *testing.T) {
	owner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto+" "+r.Host)
	}))
	owner.EnableHTTP2 = true // the node offers h2; the forwarder asks for HTTP/1.1
	owner.StartTLS()
	defer owner.Close()
	ownerCA := owner.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tests := []struct {
		name   string
		roots  *x509.CertPool
		status int
		pooled int
	}{
		{"cluster authority", ownerCA, http.StatusOK, 1},
		{"system roots", nil, http.StatusNotFound, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newPeer("b", owner.URL, tt.roots)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.close)
			entry := entryFor(t, p, nil)
			for i := 0; i < 2; i++ {
				resp, err := http.Get(entry.URL + "/mcp")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
				}
				if want := "HTTP/1.1 " + strings.TrimPrefix(entry.URL, "http://"); tt.status == http.StatusOK && string(b) != want {
					t.Errorf("answer %q, want %q", b, want)
				}
			}
			if n := p.idleCount(); n != tt.pooled {
				t.Errorf("%d connections pooled, want %d", n, tt.pooled)
			}
		})
	}
}
