package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// The forwarder: a request for another node's session goes to that node as
// HTTP/1.1 written by hand on a kept-alive connection of a small pool per
// node ([peer]), and its answer is copied back to the client as it arrives.
// It replaces httputil.ReverseProxy and http.Transport on this path: those
// cost a forwarded tools/call about three times the CPU of a local one
// (header clones, a reader and a writer goroutine per connection and the
// channels between them, a Response per request). Here a forward is one
// write of the request (line, headers and body from a pooled buffer), the
// reads of the answer through the connection's bufio.Reader, and no
// goroutine.

const (
	// maxIdlePerPeer bounds the idle connections kept to one node: a node
	// forwards many concurrent requests to a few others.
	maxIdlePerPeer = 256
	// idleConnTimeout closes a connection idle that long (http.Transport's
	// default; luamcp's listener closes idle connections after 2 minutes).
	idleConnTimeout = 90 * time.Second
	// peekAfter is how long a connection may sit idle before it is checked
	// with a non-blocking peek before reuse ([upstreamConn.alive]). Under
	// load connections are reused within microseconds and cost no check;
	// an owner closes an idle connection only after its idle timeout
	// (minutes), or when it stops or dies, and then its sessions are gone
	// anyway.
	peekAfter = time.Second
	// dialTimeout bounds connecting (and the TLS handshake) to a node
	// (http.Transport's default dialer).
	dialTimeout = 30 * time.Second
	// inlineBody is the largest request body written in the same write
	// as the request's head; a larger one follows it.
	inlineBody = 64 << 10
	// maxHeadBytes bounds the head of an answer (http.Transport's default
	// is 10 MiB; an owner sends a few hundred bytes).
	maxHeadBytes = 1 << 20
	// readerSize is the size of a connection's bufio.Reader: the head and
	// a small answer arrive in one read.
	readerSize = 4 << 10
)

// forwardState is what one forward needs besides the connection: pooled.
type forwardState struct {
	// buf holds the request as it is written (32 KiB, grown for a request
	// whose body needs it), then the answer as it is copied.
	buf  []byte
	head respHead
}

var forwardStates = sync.Pool{New: func() any {
	return &forwardState{buf: make([]byte, 0, 32<<10), head: respHead{fields: make([]field, 0, 16)}}
}}

// errBadRequest is a request the forwarder will not write: a header name
// or value that would break the request's framing. The handler's HTTP
// server rejects those before; Forward answers 400.
var errBadRequest = errors.New("cluster: request header not forwardable")

// peer forwards requests to one node.
type peer struct {
	node   string
	addr   string      // host:port dialled
	prefix string      // path of the advertised URL without its trailing slash, put before every request's path
	tls    *tls.Config // nil for an http:// node
	dialer net.Dialer

	mu sync.Mutex
	// idle holds the connections with no request in flight, the most
	// recently used last. Invariant: each has read the whole answer to its
	// last request, which did not ask for the connection to close.
	idle []*upstreamConn
	// closed is set once the node is forgotten or this node leaves: a
	// connection is closed rather than kept.
	closed bool
	// sweep closes the connections idle longer than idleConnTimeout; nil
	// while idle is empty.
	sweep *time.Timer
	// links carry the node's POSTs and DELETEs, one per route path
	// ([peer.link]); sign signs their opening (nil: no links).
	links map[string]*linkSlot
	sign  SignFunc
	log   *slog.Logger // nil: slog.Default()
	// linksOpen counts this node's open links (the Node's; nil in tests).
	linksOpen *atomic.Int64
	// noLinkUntil is set when the node refused a link: until then its
	// requests go over HTTP/1.1.
	noLinkUntil time.Time
}

// upstreamConn is one connection to a node.
type upstreamConn struct {
	nc        net.Conn // TLS over raw for an https:// node, else raw
	raw       net.Conn // the TCP connection, for the liveness peek
	br        *bufio.Reader
	idleSince time.Time
}

// newPeer returns the forwarder to node at addr; roots verify an https://
// node's certificate (nil: the system's roots).
func newPeer(node, addr string, roots *x509.CertPool) (*peer, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return nil, err
	}
	p := &peer{node: node, prefix: strings.TrimSuffix(u.EscapedPath(), "/"), dialer: net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}}
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		p.tls = &tls.Config{ServerName: u.Hostname(), NextProtos: []string{"http/1.1"}, RootCAs: roots, MinVersion: tls.VersionTLS12}
	default:
		return nil, fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, errors.New("not a plain http(s)://host[:port][/path] URL")
	}
	p.addr = net.JoinHostPort(u.Hostname(), port)
	return p, nil
}

// get returns an idle connection (reused: true) or a new one. An idle
// connection that sat longer than peekAfter and that the node closed
// meanwhile is dropped.
func (p *peer) get(ctx context.Context) (c *upstreamConn, reused bool, err error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		c = p.idle[len(p.idle)-1]
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		p.mu.Unlock()
		if c.br.Buffered() == 0 && (time.Since(c.idleSince) < peekAfter || c.alive()) {
			return c, true, nil
		}
		c.nc.Close()
		p.mu.Lock()
	}
	p.mu.Unlock()
	c, err = p.dial(ctx)
	return c, false, err
}

func (p *peer) dial(ctx context.Context) (*upstreamConn, error) {
	raw, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	c := &upstreamConn{nc: raw, raw: raw}
	if p.tls != nil {
		tc := tls.Client(raw, p.tls)
		hctx, cancel := context.WithTimeout(ctx, dialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			raw.Close()
			return nil, err
		}
		c.nc = tc
	}
	c.br = bufio.NewReaderSize(c.nc, readerSize)
	return c, nil
}

// put keeps c for the next request to the node.
func (p *peer) put(c *upstreamConn) {
	c.idleSince = time.Now()
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdlePerPeer {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	p.idle = append(p.idle, c)
	if p.sweep == nil {
		p.sweep = time.AfterFunc(idleConnTimeout, p.sweepIdle)
	}
	p.mu.Unlock()
}

// sweepIdle closes the connections idle for idleConnTimeout; the oldest
// are first in p.idle.
func (p *peer) sweepIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	now := time.Now()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].idleSince) >= idleConnTimeout {
		p.idle[n].nc.Close()
		n++
	}
	rest := copy(p.idle, p.idle[n:])
	clear(p.idle[rest:])
	p.idle = p.idle[:rest]
	if len(p.idle) == 0 {
		p.sweep = nil
		return
	}
	p.sweep.Reset(idleConnTimeout - now.Sub(p.idle[0].idleSince))
}

// close closes the idle connections; the ones in flight are closed when
// their requests end.
func (p *peer) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.closeLinksLocked()
	for _, c := range p.idle {
		c.nc.Close()
	}
	p.idle = nil
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
}

// idleCount reports the idle connections (tests).
func (p *peer) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// forward sends r to the node and copies the answer to w, until the
// client leaves or stop is closed. It returns an error only when nothing
// was written to w: the node could not be reached,
// the connection failed before an answer's head, or the answer's head was
// malformed. When the node fails once the answer's head was written, the
// client's response is aborted (http.ErrAbortHandler, as
// httputil.ReverseProxy does), so that a truncated answer does not look
// complete. A cancelled forward (the client left, Handler.Shutdown) just
// ends: an event stream ends as the owner's own Shutdown ends it.
//
// Retries. A forwarded POST is not idempotent (a tools/call runs a tool), so
// a request is sent again, once, on a new connection only when no node can
// have acted on it: writing it on a reused connection failed (the node had
// reset that connection), or, for a GET (safe), a reused connection ended
// before the first byte of an answer. A POST or DELETE whose reused
// connection ends before an answer is not retried: the node may have run
// it and died. A reused connection idle for more than peekAfter is checked
// before it is used ([upstreamConn.alive]), which catches connections the
// node closed for being idle, the usual stale connection.
func (p *peer) forward(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) error {
	if r.Method != http.MethodGet && p.sign != nil {
		if handled, err := p.forwardLinked(w, r, stop); handled {
			return err
		}
	}
	if stop != nil {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		r = r.WithContext(ctx)
	}
	st := forwardStates.Get().(*forwardState)
	defer func() {
		if cap(st.buf) <= 2*inlineBody {
			forwardStates.Put(st)
		}
	}()
	if p.sign != nil {
		// A LinkCluster's forwards come marked, not signed ([SignFunc]).
		p.sign(r.Header, r.Method, r.URL.Path, r.Header.Get("Mcp-Session-Id"), r.Header.Get(mcp.ForwardedForHeader), r.Header.Get(mcp.ForwardedProtoHeader))
	}
	req, inline, err := p.appendRequest(st.buf[:0], r)
	if err != nil {
		return err
	}
	st.buf = req[:0] // keep it if it grew
	head := &st.head
	ctx := r.Context()
	for attempt := 0; ; attempt++ {
		c, reused, err := p.get(ctx)
		if err != nil {
			return err
		}
		// Cancellation (the client left, or Handler.Shutdown) closes the
		// connection: a read or write in progress fails at once.
		stop := context.AfterFunc(ctx, func() { c.nc.Close() })
		bodyStarted, err := writeRequest(c.nc, req, inline, r)
		if err != nil {
			stop()
			c.nc.Close()
			if reused && !bodyStarted && attempt == 0 && ctx.Err() == nil {
				continue // the node reset this idle connection: nothing reached it
			}
			return err
		}
		err = head.read(c.br, r.Method)
		if err != nil {
			stop()
			c.nc.Close()
			if reused && head.none && r.Method == http.MethodGet && attempt == 0 && ctx.Err() == nil {
				continue
			}
			return err
		}
		reusable := head.copyTo(w.Header())
		w.WriteHeader(head.status)
		ok, err := head.copyBody(w, c.br, st.buf[:cap(st.buf)])
		reusable = reusable && ok
		if !stop() {
			reusable = false // cancelled meanwhile: the connection is closed
		}
		if reusable {
			p.put(c)
		} else {
			c.nc.Close()
		}
		if err != nil && !errors.Is(err, errClientWrite) && ctx.Err() == nil && ctx.Value(http.ServerContextKey) != nil {
			panic(http.ErrAbortHandler) // the node failed mid-answer
		}
		return nil
	}
}

// appendRequest appends r's request line and head for the node, and its
// body when it has one of at most inlineBody bytes (inline).
func (p *peer) appendRequest(b []byte, r *http.Request) (_ []byte, inline bool, err error) {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, p.prefix...)
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b = append(b, path...)
	if r.URL.RawQuery != "" {
		b = append(b, '?')
		b = append(b, r.URL.RawQuery...)
	}
	b = append(b, " HTTP/1.1\r\nHost: "...)
	if r.Host != "" {
		b = append(b, r.Host...) // the owner's auth hook and oauth challenge see what the client sent
	} else {
		b = append(b, p.addr...)
	}
	b = append(b, "\r\n"...)
	conn := r.Header["Connection"]
	for name, values := range r.Header {
		if !endToEnd(name, conn) {
			continue
		}
		if !validName(name) {
			return nil, false, errBadRequest
		}
		for _, v := range values {
			if !validValue(v) {
				return nil, false, errBadRequest
			}
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	hasBody := r.Body != nil && r.Body != http.NoBody
	switch {
	case hasBody && r.ContentLength < 0:
		return append(b, "Transfer-Encoding: chunked\r\n\r\n"...), false, nil
	case hasBody && r.ContentLength > 0:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, r.ContentLength, 10)
		b = append(b, "\r\n\r\n"...)
		if r.ContentLength > inlineBody {
			return b, false, nil
		}
		n := len(b)
		b = append(b, make([]byte, r.ContentLength)...)
		if _, err := io.ReadFull(r.Body, b[n:]); err != nil {
			return nil, false, fmt.Errorf("cluster: reading the request body: %w", err)
		}
		return b, true, nil
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		return append(b, "Content-Length: 0\r\n\r\n"...), true, nil
	}
	return append(b, "\r\n"...), true, nil
}

// writeRequest writes req (the head, and the body when inline) to c, then
// the body of r when it was not inline. bodyStarted reports whether r's
// body was read from: the request cannot be sent again then.
func writeRequest(c net.Conn, req []byte, inline bool, r *http.Request) (bodyStarted bool, err error) {
	if _, err := c.Write(req); err != nil || inline {
		return false, err
	}
	if r.ContentLength >= 0 {
		_, err = io.CopyN(c, r.Body, r.ContentLength)
		return true, err
	}
	cw := httputil.NewChunkedWriter(c)
	if _, err = io.Copy(cw, r.Body); err != nil {
		return true, err
	}
	if err = cw.Close(); err != nil { // the last chunk
		return true, err
	}
	_, err = io.WriteString(c, "\r\n") // no trailers
	return true, err
}

// errClientWrite wraps a failure to write to the client: it left.
var errClientWrite = errors.New("cluster: writing the answer to the client")

// respHead is the head of a node's answer.
type respHead struct {
	status int
	// none is set when the connection ended before any byte of an answer.
	none bool
	// close: the node closes the connection after this answer (HTTP/1.0,
	// or Connection: close).
	close   bool
	http10  bool // an HTTP/1.0 answer
	chunked bool
	length  int64  // Content-Length; -1: chunked or until the connection closes
	noBody  bool   // an answer to HEAD, a 204 or a 304
	stream  bool   // an event stream, or an answer of unknown length: flushed at every read
	conn    []byte // the Connection header's values, joined by commas
	// fields are the end-to-end headers, in order; Content-Length is among
	// them (copyTo drops it when the body is chunked).
	fields []field
}

type field struct{ name, value string }

// read reads the head of the final answer (1xx answers are skipped).
func (h *respHead) read(br *bufio.Reader, method string) error {
	total := 0
	for first := true; ; first = false {
		line, err := readLine(br, &total)
		if err != nil {
			h.none = first && len(line) == 0 && total == 0
			return err
		}
		if err := h.parseStatus(line); err != nil {
			return err
		}
		h.fields = h.fields[:0]
		h.conn = h.conn[:0]
		h.length, h.chunked = -1, false
		for {
			line, err := readLine(br, &total)
			if err != nil {
				return err
			}
			if len(line) == 0 {
				break
			}
			if err := h.parseField(line); err != nil {
				return err
			}
		}
		if h.status >= 200 {
			break
		}
		if h.status == http.StatusSwitchingProtocols {
			return errors.New("cluster: the node switched protocols")
		}
	}
	h.stream = false
	h.noBody = method == http.MethodHead || h.status == http.StatusNoContent || h.status == http.StatusNotModified
	if h.noBody {
		h.length = 0
	}
	if h.chunked {
		if h.http10 {
			// HTTP/1.0 has no chunked coding: RFC 9112 §6.1 calls such
			// framing faulty (net/http reads the body to the end).
			return errors.New("cluster: the node's HTTP/1.0 answer is chunked")
		}
		h.length = -1
	}
	if !h.chunked && h.length < 0 {
		h.close = true // ends with the connection
	}
	return nil
}

// readLine returns one line of a head without its CRLF; the bytes are valid
// until the next read. total counts the head's bytes.
func readLine(br *bufio.Reader, total *int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	*total += len(line)
	if err == bufio.ErrBufferFull {
		// A long line: rare, copied.
		long := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && *total <= maxHeadBytes {
			line, err = br.ReadSlice('\n')
			*total += len(line)
			long = append(long, line...)
		}
		line = long
	}
	if *total > maxHeadBytes {
		return nil, errors.New("cluster: the node's answer head is too large")
	}
	if err != nil {
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func (h *respHead) parseStatus(line []byte) error {
	// "HTTP/1.x NNN reason"
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[7] < '0' || line[7] > '9' || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return fmt.Errorf("cluster: malformed status line from the node: %q", line)
	}
	status := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return fmt.Errorf("cluster: malformed status line from the node: %q", line)
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 {
		return fmt.Errorf("cluster: malformed status line from the node: %q", line)
	}
	h.status = status
	h.http10 = line[7] == '0'
	h.close = h.http10
	return nil
}

// parseField reads one header line: framing and Connection are noted, the
// others kept for copyTo.
func (h *respHead) parseField(line []byte) error {
	raw, v, ok := splitField(line)
	if !ok {
		return fmt.Errorf("cluster: malformed header line from the node: %q", line)
	}
	name := canonicalName(raw)
	switch name {
	case "Content-Length":
		n, ok := parseLength(v)
		if !ok || (h.length >= 0 && !h.sameLength(v)) {
			return fmt.Errorf("cluster: bad Content-Length from the node: %q", v)
		}
		if h.length >= 0 {
			return nil // the same field again: kept once
		}
		h.length = n
	case "Transfer-Encoding":
		if !strings.EqualFold(string(v), "chunked") {
			return fmt.Errorf("cluster: unsupported Transfer-Encoding from the node: %q", v)
		}
		h.chunked = true
		return nil
	case "Connection":
		for t := range strings.SplitSeq(string(v), ",") {
			if strings.EqualFold(strings.TrimSpace(t), "close") {
				h.close = true
			}
		}
		if len(h.conn) > 0 {
			h.conn = append(h.conn, ',')
		}
		h.conn = append(h.conn, v...)
		return nil
	}
	if hopByHop(name) {
		return nil
	}
	h.fields = append(h.fields, field{name: name, value: internValue(v)})
	return nil
}

// splitField splits a header (or trailer) line into its name and its value
// without the spaces around it; ok is false when the name is not a token or
// the value holds a control character (net/http refuses both).
func splitField(line []byte) (name, value []byte, ok bool) {
	name, value, found := bytes.Cut(line, []byte{':'})
	if !found || !validName(name) || !validValue(value) {
		return nil, nil, false
	}
	return name, bytes.Trim(value, " \t"), true
}

// parseLength reads a Content-Length value: digits only (no sign, no list),
// as net/http reads it, so that both ends of a kept-alive connection agree on
// where an answer ends.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// sameLength reports whether v is the field value of the Content-Length
// read before: RFC 9112 §6.3 makes differing values (even "03" and "3") an
// invalid framing.
func (h *respHead) sameLength(v []byte) bool {
	for _, f := range h.fields {
		if f.name == "Content-Length" {
			return f.value == string(v)
		}
	}
	return false
}

// copyTo sets the answer's end-to-end headers on dst. It reports whether
// the connection can carry another request once the body is read.
func (h *respHead) copyTo(dst http.Header) bool {
	var conn []string
	if len(h.conn) > 0 {
		conn = []string{string(h.conn)}
	}
	slab := make([]string, len(h.fields))
	for i, f := range h.fields {
		if conn != nil && listedIn(conn, f.name) {
			continue
		}
		if f.name == "Content-Length" && h.length < 0 {
			continue
		}
		if f.name == "Content-Type" && strings.HasPrefix(f.value, "text/event-stream") {
			h.stream = true
		}
		if old, ok := dst[f.name]; ok {
			dst[f.name] = append(old, f.value)
			continue
		}
		slab[i] = f.value
		dst[f.name] = slab[i : i+1 : i+1]
	}
	if h.length < 0 {
		h.stream = true
	}
	return !h.close
}

// copyBody copies the answer's body from br to w through buf, flushing
// at every read for a stream. It reports whether the body was read to its
// end (the connection can be reused). An error writing to w wraps
// errClientWrite.
func (h *respHead) copyBody(w http.ResponseWriter, br *bufio.Reader, buf []byte) (bool, error) {
	if h.noBody || h.length == 0 {
		return true, nil
	}
	var body io.Reader = br
	if h.chunked {
		body = httputil.NewChunkedReader(br)
	}
	var rc *http.ResponseController
	if h.stream {
		rc = http.NewResponseController(w)
		if br.Buffered() == 0 {
			// The head now, as ReverseProxy did: a GET stream may stay
			// silent, and the client waits for the head.
			if err := flush(rc); err != nil {
				return false, err
			}
		}
	}
	var copied int64
	for {
		if h.length > 0 && int64(len(buf)) > h.length-copied {
			buf = buf[:h.length-copied]
		}
		n, err := body.Read(buf)
		if n > 0 {
			copied += int64(n)
			if _, werr := w.Write(buf[:n]); werr != nil {
				return false, fmt.Errorf("%w: %w", errClientWrite, werr)
			}
			if rc != nil {
				if err := flush(rc); err != nil {
					return false, err
				}
			}
		}
		if err == io.EOF || (h.length > 0 && copied == h.length) {
			break
		}
		if err != nil {
			return false, err
		}
	}
	switch {
	case h.chunked:
		if err := readTrailer(br); err != nil {
			return false, err
		}
		return true, nil
	case h.length > 0:
		if copied < h.length {
			return false, io.ErrUnexpectedEOF
		}
		return true, nil
	}
	return false, nil // until the connection closed: not reusable
}

// readTrailer reads the trailer section that ends a chunked body, and drops
// it (luamcp sends none). Unlike a head's, its lines must end with CRLF, as
// net/http requires: a reader more lenient than the node's own could end the
// answer elsewhere on a kept-alive connection.
func readTrailer(br *bufio.Reader) error {
	total := 0
	for {
		line, err := br.ReadSlice('\n')
		total += len(line)
		if err != nil || total > maxHeadBytes || !bytes.HasSuffix(line, []byte("\r\n")) {
			return fmt.Errorf("cluster: malformed trailer from the node: %q", line)
		}
		line = line[:len(line)-2]
		if len(line) == 0 {
			return nil
		}
		if _, _, ok := splitField(line); !ok {
			return fmt.Errorf("cluster: malformed trailer line from the node: %q", line)
		}
	}
}

// flush sends what w holds to the client.
func flush(rc *http.ResponseController) error {
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("%w: %w", errClientWrite, err)
	}
	return nil
}

// hopByHop reports whether a header (canonical name) concerns one
// connection only and is not forwarded (RFC 9110 §7.6.1).
func hopByHop(name string) bool {
	switch name {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// endToEnd reports whether a request header (canonical name) goes on to the
// owner as the client sent it: not hop-by-hop nor listed in the request's
// Connection values (conn), and not one the forwarder writes itself (Host,
// Content-Length) or answers for (Expect: the body is sent at once).
func endToEnd(name string, conn []string) bool {
	return !hopByHop(name) && name != "Host" && name != "Content-Length" && name != "Expect" && (len(conn) == 0 || !listedIn(conn, name))
}

// listedIn reports whether name is one of the field names a Connection
// header lists (also hop-by-hop).
func listedIn(conn []string, name string) bool {
	for _, v := range conn {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), name) {
				return true
			}
		}
	}
	return false
}

// validName reports whether a header name is a token (RFC 9110 §5.1).
func validName[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// validValue reports whether a header value holds only what RFC 9110 §5.5
// allows (visible characters, spaces, tabs, obs-text): no control character
// that could break the framing or that net/http would refuse.
func validValue[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// commonNames are the header names a node's answers carry, canonical:
// looked up without allocating.
var commonNames = map[string]string{}

// commonValues are header values a node's answers repeat.
var commonValues = map[string]string{}

func init() {
	for _, n := range []string{"Content-Type", "Content-Length", "Date", "Mcp-Session-Id", "Cache-Control",
		"Connection", "Transfer-Encoding", "Keep-Alive", "X-Accel-Buffering", "Www-Authenticate", "Vary",
		"X-Content-Type-Options", "Allow", "Mcp-Protocol-Version"} {
		commonNames[n] = n
		commonNames[strings.ToLower(n)] = n
	}
	for _, v := range []string{"application/json", "text/event-stream", "no-cache", "no-store", "nosniff",
		"chunked", "close", "keep-alive", "no"} {
		commonValues[v] = v
	}
}

func canonicalName(b []byte) string {
	if n, ok := commonNames[string(b)]; ok {
		return n
	}
	return textproto.CanonicalMIMEHeaderKey(string(b))
}

func internValue(b []byte) string {
	if v, ok := commonValues[string(b)]; ok {
		return v
	}
	return string(b)
}
