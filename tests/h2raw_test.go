package tests

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// A raw HTTP/2 client, frame by frame (golang.org/x/net/http2's Framer), for
// the hostile clients no real client library would be: one that never
// grants flow-control window, resets every stream it opens, floods frames.

// h2Raw is one HTTP/2 connection to a tlsServer, its frames written by the
// test and read by a goroutine that records what the server sent.
type h2Raw struct {
	t    testing.TB
	conn *tls.Conn
	host string

	wmu    sync.Mutex // guards fr's writes, enc and hbuf
	fr     *http2.Framer
	enc    *hpack.Encoder
	hbuf   bytes.Buffer
	nextID uint32

	// grant makes the reader give back the window of the DATA it reads
	// (a well-behaved client); without it the window is never replenished.
	grant bool

	mu     sync.Mutex
	status map[uint32]int           // :status of each answered stream
	data   map[uint32]int           // DATA bytes received per stream
	ended  map[uint32]bool          // streams the server ended (END_STREAM)
	rst    map[uint32]http2.ErrCode // streams the server reset
	goAway *http2.ErrCode
	closed chan struct{} // the reader has stopped: the connection is gone
	err    error         // why it stopped
	change chan struct{} // signalled (non-blocking) on each frame read
}

// dialH2 opens an HTTP/2 connection to s, sending the preface and settings.
// Its reader runs until the connection closes; the test's cleanup closes it.
func dialH2(t testing.TB, s *tlsServer, grant bool, settings ...http2.Setting) *h2Raw {
	t.Helper()
	return dialH2With(t, &net.Dialer{}, s, grant, settings...)
}

// dialH2With is dialH2 through d (a dialer that sets socket options).
func dialH2With(t testing.TB, d *net.Dialer, s *tlsServer, grant bool, settings ...http2.Setting) *h2Raw {
	t.Helper()
	conn, err := tls.DialWithDialer(d, "tcp", s.srv.Addr().String(), &tls.Config{RootCAs: s.ca.pool, NextProtos: []string{"h2"}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		conn.Close()
		t.Fatalf("ALPN negotiated %q, want h2", p)
	}
	c := &h2Raw{
		t: t, conn: conn, host: s.srv.Addr().String(), nextID: 1, grant: grant,
		status: map[uint32]int{}, data: map[uint32]int{}, ended: map[uint32]bool{}, rst: map[uint32]http2.ErrCode{},
		closed: make(chan struct{}), change: make(chan struct{}, 1),
	}
	c.fr = http2.NewFramer(conn, conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	c.enc = hpack.NewEncoder(&c.hbuf)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatalf("preface: %v", err)
	}
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatalf("settings: %v", err)
	}
	go c.read()
	t.Cleanup(func() {
		conn.Close()
		<-c.closed
	})
	return c
}

func (c *h2Raw) read() {
	defer close(c.closed)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			c.signal()
			return
		}
		c.mu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				c.write(func() error { return c.fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			if st, err := strconv.Atoi(f.PseudoValue("status")); err == nil {
				c.status[f.StreamID] = st
			}
			if f.StreamEnded() {
				c.ended[f.StreamID] = true
			}
		case *http2.DataFrame:
			n := len(f.Data())
			c.data[f.StreamID] += n
			if f.StreamEnded() {
				c.ended[f.StreamID] = true
			}
			if c.grant && n > 0 {
				c.write(func() error {
					if err := c.fr.WriteWindowUpdate(0, uint32(n)); err != nil {
						return err
					}
					return c.fr.WriteWindowUpdate(f.StreamID, uint32(n))
				})
			}
		case *http2.RSTStreamFrame:
			c.rst[f.StreamID] = f.ErrCode
		case *http2.GoAwayFrame:
			code := f.ErrCode
			c.goAway = &code
		}
		c.mu.Unlock()
		c.signal()
	}
}

func (c *h2Raw) signal() {
	select {
	case c.change <- struct{}{}:
	default:
	}
}

// write runs one framer write under the write lock; a failure (the server
// closed the connection) is left to the reader to notice.
func (c *h2Raw) write(f func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return f()
}

// headerBlock encodes a request's header block.
func (c *h2Raw) headerBlock(method, path string, header ...string) []byte {
	c.hbuf.Reset()
	enc := func(k, v string) { _ = c.enc.WriteField(hpack.HeaderField{Name: k, Value: v}) }
	enc(":method", method)
	enc(":scheme", "https")
	enc(":authority", c.host)
	enc(":path", path)
	for i := 0; i+1 < len(header); i += 2 {
		enc(header[i], header[i+1])
	}
	return bytes.Clone(c.hbuf.Bytes())
}

// open sends a request's HEADERS on a new stream and returns its id;
// endStream says the request has no body. A header block past 16 KiB, the
// frame size every server reads, goes on in CONTINUATION frames.
func (c *h2Raw) open(method, path string, endStream bool, header ...string) (uint32, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	id := c.nextID
	c.nextID += 2
	block := c.headerBlock(method, path, header...)
	const frame = 16 << 10
	n := min(len(block), frame)
	err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:n], EndStream: endStream, EndHeaders: n == len(block)})
	for block = block[n:]; err == nil && len(block) > 0; block = block[n:] {
		n = min(len(block), frame)
		err = c.fr.WriteContinuation(id, n == len(block), block[:n])
	}
	return id, err
}

// post opens a stream carrying a JSON-RPC POST: its headers and body.
func (c *h2Raw) post(path, sid string, body any) (uint32, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	h := []string{"content-type", "application/json", "accept", "application/json, text/event-stream",
		"mcp-protocol-version", latestVersion, "content-length", strconv.Itoa(len(b))}
	if sid != "" {
		h = append(h, "mcp-session-id", sid)
	}
	id, err := c.open(http.MethodPost, path, false, h...)
	if err != nil {
		return id, err
	}
	return id, c.write(func() error {
		for { // in frames of the size every server reads (16 KiB)
			n := min(len(b), 16<<10)
			if err := c.fr.WriteData(id, n == len(b), b[:n]); err != nil || n == len(b) {
				return err
			}
			b = b[n:]
		}
	})
}

// waitFor waits until cond, checked under the lock, holds, or fails the
// test after d.
func (c *h2Raw) waitFor(d time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.After(d)
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.change:
		case <-deadline:
			c.t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// gone reports whether the connection has closed.
func (c *h2Raw) gone() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// latencies times a well-behaved client's requests while an attack runs:
// ping on route url every interval, over a connection of its own, until
// stop is closed.
type latencies struct {
	mu    sync.Mutex
	took  []time.Duration
	fails int
	last  error
	done  chan struct{}
}

func probe(t testing.TB, rt http.RoundTripper, url string, interval time.Duration, stop <-chan struct{}) *latencies {
	l := &latencies{done: make(chan struct{})}
	client := &http.Client{Transport: rt, Timeout: 15 * time.Second}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
			body, _ := json.Marshal(request(i, "ping", nil))
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", latestVersion)
			start := time.Now()
			resp, err := client.Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = errors.New(resp.Status)
				}
			}
			l.mu.Lock()
			if err != nil {
				l.fails++
				l.last = err
			} else {
				l.took = append(l.took, time.Since(start))
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// summary waits for the probe to stop and returns its figures: requests,
// failures, p50, p99 and max latency.
func (l *latencies) summary() (n, fails int, p50, p99, maxd time.Duration, last error) {
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	d := append([]time.Duration(nil), l.took...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) > 0 {
		p50, p99, maxd = d[len(d)/2], d[len(d)*99/100], d[len(d)-1]
	}
	return len(d), l.fails, p50, p99, maxd, l.last
}
