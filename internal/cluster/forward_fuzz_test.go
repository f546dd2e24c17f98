package cluster

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzAnswer checks the forwarder's reader of a node's answer against
// net/http's (http.ReadResponse) on the same bytes. Whatever the forwarder
// accepts, net/http must accept as the same answer: the same status and the
// same body. And when the forwarder would reuse the connection, both must
// have read exactly as far: a disagreement on where an answer ends is how
// the next answer on a kept-alive connection gets attributed to the wrong
// request.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil the end",
		"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabcdef",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
		"HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		src := bytes.NewReader(raw)
		br := bufio.NewReaderSize(src, readerSize)
		h := respHead{fields: make([]field, 0, 16)}
		if err := h.read(br, http.MethodPost); err != nil {
			return
		}
		if h.status < 200 || h.status > 999 {
			t.Fatalf("status %d accepted from %q", h.status, raw)
		}
		w := httptest.NewRecorder()
		reusable := h.copyTo(w.Header())
		complete, err := h.copyBody(w, br, make([]byte, 64))
		if err != nil {
			return // a body that ends early or whose chunks are malformed: the forward fails
		}
		reusable = reusable && complete
		read := len(raw) - src.Len() - br.Buffered()

		nsrc := bytes.NewReader(raw)
		nbr := bufio.NewReader(nsrc)
		resp, err := http.ReadResponse(nbr, &http.Request{Method: http.MethodPost})
		// net/http's Transport skips 1xx answers but 101 (ReadResponse
		// returns each); so does the forwarder.
		for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			resp, err = http.ReadResponse(nbr, &http.Request{Method: http.MethodPost})
		}
		if err != nil {
			t.Fatalf("forwarded an answer net/http refuses (%v): %q", err, raw)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("forwarded an answer whose body net/http refuses (%v): %q", err, raw)
		}
		if resp.StatusCode != h.status {
			t.Fatalf("status %d, net/http says %d: %q", h.status, resp.StatusCode, raw)
		}
		if !bytes.Equal(body, w.Body.Bytes()) {
			t.Fatalf("body %q, net/http says %q: %q", w.Body.Bytes(), body, raw)
		}
		if reusable {
			if resp.Close {
				t.Fatalf("kept a connection net/http would close: %q", raw)
			}
			if nread := len(raw) - nsrc.Len() - nbr.Buffered(); nread != read {
				t.Fatalf("the answer ends after %d bytes, net/http says %d: %q", read, nread, raw)
			}
		}
	})
}

// FuzzForwardRequest checks the request the forwarder writes to the owner
// against the one the entry node received, both read by net/http: whatever
// a client sent that net/http accepted reaches the owner as the same method,
// path (under the owner's prefix), query, Host, end-to-end headers and body,
// and as one request: nothing left over that the owner would read as a
// second one.
func FuzzForwardRequest(f *testing.F) {
	for _, s := range []string{
		"POST /mcp HTTP/1.1\r\nHost: a.example\r\nContent-Type: application/json\r\nMcp-Session-Id: n1.x\r\nContent-Length: 2\r\n\r\n{}",
		"POST /mcp?x=1&y=%20 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"GET /mcp HTTP/1.1\r\nHost: a\r\nAccept: text/event-stream\r\nLast-Event-ID: 7\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n\r\n",
		"DELETE /mcp/%2e%2e/x HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: n1.x\r\nTE: trailers\r\nUpgrade: h2c\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
		"POST /mcp HTTP/1.0\r\nX-V: a\tb \xff\r\nContent-Length: 1\r\n\r\nx",
		"POST http://other.example/mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, prefixed bool) {
		in, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return // the entry node's server refuses it
		}
		body, err := io.ReadAll(in.Body)
		if err != nil {
			return
		}
		in.Body = io.NopCloser(bytes.NewReader(body))
		addr := "http://127.0.0.1:1"
		if prefixed {
			addr += "/base"
		}
		p, err := newPeer("n", addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		req, inline, err := p.appendRequest(nil, in)
		if err != nil {
			return // refused: errBadRequest, answered 400
		}
		var wire bytes.Buffer
		if _, err := writeRequest(bufferConn{&wire}, req, inline, in); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(bytes.NewReader(wire.Bytes()))
		out, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("the owner refuses the forwarded request (%v): %q, from %q", err, wire.Bytes(), raw)
		}
		outBody, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatalf("the owner refuses the forwarded body (%v): %q, from %q", err, wire.Bytes(), raw)
		}
		if br.Buffered() != 0 {
			t.Fatalf("%d bytes after the forwarded request: %q, from %q", br.Buffered(), wire.Bytes(), raw)
		}
		path := in.URL.EscapedPath()
		if path == "" {
			path = "/"
		}
		if out.Method != in.Method || out.URL.EscapedPath() != p.prefix+path || out.URL.RawQuery != in.URL.RawQuery {
			t.Fatalf("%s %s?%s reached the owner as %s %s?%s: %q", in.Method, path, in.URL.RawQuery, out.Method, out.URL.EscapedPath(), out.URL.RawQuery, raw)
		}
		if in.Host != "" && out.Host != in.Host {
			t.Fatalf("Host %q reached the owner as %q: %q", in.Host, out.Host, raw)
		}
		if !bytes.Equal(body, outBody) {
			t.Fatalf("body %q reached the owner as %q: %q", body, outBody, raw)
		}
		conn := in.Header["Connection"]
		for name, values := range in.Header {
			if !endToEnd(name, conn) {
				if _, ok := out.Header[name]; ok && name != "Content-Length" && name != "Transfer-Encoding" {
					t.Fatalf("hop-by-hop %s reached the owner: %q", name, raw)
				}
				continue
			}
			// A value's surrounding whitespace is not part of it (RFC 9110
			// §5.5): an obs-folded line leaves some in the entry node's
			// value, the owner's parser drops it.
			if got := out.Header[name]; !slices.Equal(got, trimValues(values)) {
				t.Fatalf("header %s %q reached the owner as %q: %q", name, values, got, raw)
			}
		}
	})
}

// trimValues returns vs without the spaces and tabs around each value.
func trimValues(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.Trim(v, " \t")
	}
	return out
}

// bufferConn is a net.Conn that only writes, to a buffer.
type bufferConn struct{ w *bytes.Buffer }

func (c bufferConn) Write(b []byte) (int, error)      { return c.w.Write(b) }
func (c bufferConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c bufferConn) Close() error                     { return nil }
func (c bufferConn) LocalAddr() net.Addr              { return nil }
func (c bufferConn) RemoteAddr() net.Addr             { return nil }
func (c bufferConn) SetDeadline(time.Time) error      { return nil }
func (c bufferConn) SetReadDeadline(time.Time) error  { return nil }
func (c bufferConn) SetWriteDeadline(time.Time) error { return nil }
