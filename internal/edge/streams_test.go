package edge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The hostile HTTP/2 and HTTP/3 clients that concern the front itself,
// spoken frame by frame (golang.org/x/net/http2's Framer, quic-go's
// streams); those that concern what package mcp serves are in tests/.

// listenTLS binds an HTTPS server (and HTTP/3 with h3) with a fresh
// self-signed certificate, and returns it with a pool that trusts it.
func listenTLS(t *testing.T, h3 bool, edit func(*Config)) (*Server, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := x509.NewCertPool()
	pool.AddCert(writeCert(t, "server", certFile, keyFile))
	cfg := Config{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, HTTP3: h3}
	if edit != nil {
		edit(&cfg)
	}
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, pool
}

// h2Client is an HTTP/2 connection written frame by frame.
type h2Client struct {
	conn *tls.Conn
	fr   *http2.Framer
}

// dialH2 opens an HTTP/2 connection to s through d, sends the preface and
// settings, and reads the server's SETTINGS frame, which it returns.
func dialH2(t *testing.T, d *net.Dialer, s *Server, pool *x509.CertPool, settings ...http2.Setting) (*h2Client, *http2.SettingsFrame) {
	t.Helper()
	conn, err := tls.DialWithDialer(d, "tcp", s.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN negotiated %q, want h2", p)
	}
	c := &h2Client{conn: conn, fr: http2.NewFramer(conn, conn)}
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // liveness bound only
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	f, err := c.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("the server's first frame: %v, want its SETTINGS", f)
	}
	conn.SetDeadline(time.Time{})
	return c, sf
}

// get opens stream id with a GET of path, and no body.
func (c *h2Client) get(t *testing.T, id uint32, path string) {
	t.Helper()
	var block []byte
	enc := hpack.NewEncoder(sliceWriter{&block})
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", path}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
}

type sliceWriter struct{ b *[]byte }

func (w sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// TestStreamCap: an HTTP/2 connection may carry streamCap requests at once,
// not net/http's 250, and so may an HTTP/3 one: past it, quic-go makes the
// client wait for a stream.
func TestStreamCap(t *testing.T) {
	s, pool := listenTLS(t, true, nil)
	go s.Serve(http.NotFoundHandler())
	_, settings := dialH2(t, &net.Dialer{}, s, pool)
	if v, ok := settings.Value(http2.SettingMaxConcurrentStreams); !ok || v != streamCap {
		t.Errorf("HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS %d (sent: %v), want %d", v, ok, streamCap)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // liveness bound only
	defer cancel()
	qc, err := quic.DialAddr(ctx, s.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{http3.NextProtoH3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	for i := range streamCap + 1 {
		str, err := qc.OpenStream()
		if i == streamCap {
			if err == nil {
				t.Errorf("HTTP/3: stream %d opened, want the client to wait past %d", i+1, streamCap)
			}
			break
		}
		if err != nil {
			t.Fatalf("HTTP/3: stream %d: %v", i+1, err)
		}
		str.Write([]byte{0x01}) // the start of a HEADERS frame: the stream counts
	}
}

// TestHTTP2FrameSize: the server reads HTTP/2 frames of at most 16 KiB
// (the protocol's default), not net/http's 1 MiB: the framer allocates a
// frame's whole length when its header arrives, so a client that announced
// a 1 MiB DATA frame and sent one byte of it held 1 MiB of the server's
// memory per connection (50 such connections: 52 MiB). A larger frame ends
// the connection at once.
func TestHTTP2FrameSize(t *testing.T) {
	s, pool := listenTLS(t, false, nil)
	go s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	c, settings := dialH2(t, &net.Dialer{}, s, pool)
	if v, ok := settings.Value(http2.SettingMaxFrameSize); !ok || v != maxFrameSize {
		t.Errorf("SETTINGS_MAX_FRAME_SIZE %d (sent: %v), want %d", v, ok, maxFrameSize)
	}
	var block []byte
	enc := hpack.NewEncoder(sliceWriter{&block})
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	// A DATA frame's header announcing 1 MiB less a byte, and one byte of it.
	if _, err := c.conn.Write([]byte{0x0f, 0xff, 0xff, byte(http2.FrameData), 0, 0, 0, 0, 1, 'x'}); err != nil {
		t.Fatal(err)
	}
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second)) // the answer comes at once
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("the connection ended without a GOAWAY: %v", err)
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			if g.ErrCode != http2.ErrCodeFrameSize {
				t.Errorf("GOAWAY %v, want FRAME_SIZE_ERROR", g.ErrCode)
			}
			return
		}
	}
}

// TestHTTP2ConnectionNotReadingClosed: a client that grants all the window
// there is, then stops reading its socket, blocks the connection's writer.
// The handlers' own write deadlines cannot end their streams then (the
// resets are never written); WriteTimeout closes the connection, and every
// handler on it returns.
func TestHTTP2ConnectionNotReadingClosed(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	s, pool := listenTLS(t, false, func(c *Config) { c.WriteTimeout = writeTimeout })
	var running atomic.Int32
	chunk := make([]byte, 64<<10)
	go s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		rc := http.NewResponseController(w)
		for { // as package mcp writes an event stream: a deadline per write
			rc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}))
	// A small receive buffer, set before the connection is made, so that
	// the socket fills after little data.
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) { err = setRecvBuffer(fd, 4096) })
		return err
	}}
	c, _ := dialH2(t, d, s, pool, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	if err := c.fr.WriteWindowUpdate(0, 1<<31-1-65535); err != nil {
		t.Fatal(err)
	}
	const streams = 8
	for i := range streams {
		c.get(t, uint32(2*i+1), "/")
	}
	deadline := time.Now().Add(5 * time.Second)
	for running.Load() < streams && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	// Nothing is read until the handlers are done.
	for running.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := running.Load(); n > 0 {
		t.Fatalf("%d of %d handlers still blocked writing %v after a write timeout of %v", n, streams, 5*time.Second, writeTimeout)
	}
	// What the socket held is there to read, then the end of the connection.
	c.conn.NetConn().SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, c.conn.NetConn()); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("reading the connection to its end: %v, want it closed by the server", err)
	}
}

// TestHTTP2GETBodyDropped: a GET whose HEADERS leave the stream open, and
// whose DATA then comes, reaches its handler without a body, and the data
// is dropped rather than kept while the handler (an event stream) runs: the
// server gives the connection's flow-control window for it back at once.
func TestHTTP2GETBodyDropped(t *testing.T) {
	s, pool := listenTLS(t, false, nil)
	sawBody := make(chan bool, 1)
	go s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawBody <- r.Body != http.NoBody
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // an event stream: open until the client goes
	}))
	c, _ := dialH2(t, &net.Dialer{}, s, pool)
	var block []byte
	enc := hpack.NewEncoder(sliceWriter{&block})
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case saw := <-sawBody:
		if saw {
			t.Error("the handler got the GET's body")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the GET did not reach its handler")
	}
	// The answer's headers come after the window the server grants at the
	// start of the connection, which is not what is looked for below.
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("no answer to the GET: %v", err)
		}
		if h, ok := f.(*http2.HeadersFrame); ok && h.StreamID == 1 {
			break
		}
	}
	const n = 16 << 10
	if err := c.fr.WriteData(1, false, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	c.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("the connection's window for the GET's %d bytes of data not given back: %v", n, err)
		}
		if u, ok := f.(*http2.WindowUpdateFrame); ok && u.StreamID == 0 && u.Increment >= n {
			return
		}
	}
}
