package cluster

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
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
