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
	"strconv"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// TestConnectionCap: with MaxConnections open connections, a new one is not
// served until one of them closes; its request is then answered. Shutdown
// ends a Serve whose Accept waits for a slot.
func TestConnectionCap(t *testing.T) {
	const cap = 4
	s, err := Listen(Config{Addr: "127.0.0.1:0", MaxConnections: cap, ReadHeaderTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	}()
	var idle []net.Conn
	for range cap {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n")) // headers never finished
		idle = append(idle, c)
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.URL())
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a request past the cap was served at once (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	idle[0].Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the waiting request: %v", err)
		}
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("the waiting request was not served once a connection closed")
	}

	// Full again, with an Accept waiting for a slot: Shutdown still ends Serve.
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	s.Shutdown(ctx) // the idle connections never finish a request: the deadline ends the wait
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Shutdown")
	}
}

func TestDefaultMaxConnections(t *testing.T) {
	if n := DefaultMaxConnections(); n < 64 {
		t.Errorf("DefaultMaxConnections() = %d", n)
	}
}

// TestHTTP3ConnectionCap: past MaxConnections established HTTP/3
// connections a new one is refused; once one closes, a new one is served.
func TestHTTP3ConnectionCap(t *testing.T) {
	const cap = 2
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := x509.NewCertPool()
	pool.AddCert(writeCert(t, "h3", certFile, keyFile))
	s, err := Listen(Config{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, HTTP3: true, MaxConnections: cap})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	go s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	url := "https://127.0.0.1:" + strconv.Itoa(s.Port()) + "/"
	// get makes a request on a connection of its own (a Transport each).
	get := func() (*http3.Transport, error) {
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, QUICConfig: &quic.Config{HandshakeIdleTimeout: time.Second}}
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
		if err != nil {
			tr.Close()
			return nil, err
		}
		resp.Body.Close()
		return tr, nil
	}
	var open []*http3.Transport
	for range cap {
		tr, err := get()
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		open = append(open, tr)
	}
	if tr, err := get(); err == nil {
		tr.Close()
		t.Fatal("a connection past the cap was served")
	}
	open[0].Close()
	var served bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); { // liveness bound only
		if tr, err := get(); err == nil {
			tr.Close()
			served = true
			break
		}
	}
	if !served {
		t.Fatal("no connection served once one closed")
	}
}

// TestHTTP3HeaderTimeout: HTTP/3 bounds the time a connection goes without
// a request reaching the handler, as net/http does on TCP. A new connection
// whose stream never finishes its HEADERS frame is closed after
// ReadHeaderTimeout, and its slot under MaxConnections serves a legitimate
// client. A request in the handler is not cut, a connection idle between
// requests stays for IdleTimeout, and a stalled stream opened after a
// request is closed after IdleTimeout + ReadHeaderTimeout.
func TestHTTP3HeaderTimeout(t *testing.T) {
	const header, idle = 200 * time.Millisecond, 1500 * time.Millisecond
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := x509.NewCertPool()
	pool.AddCert(writeCert(t, "h3", certFile, keyFile))
	s, err := Listen(Config{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, HTTP3: true,
		MaxConnections: 1, ReadHeaderTimeout: header, IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	go s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(3 * header)
		}
		io.WriteString(w, "ok")
	}))
	addr := "127.0.0.1:" + strconv.Itoa(s.Port())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // liveness bound only
	defer cancel()

	// stall opens a stream on c and sends the HEADERS frame type alone.
	stall := func(c *quic.Conn) {
		t.Helper()
		str, err := c.OpenStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := str.Write([]byte{0x01}); err != nil {
			t.Fatal(err)
		}
	}
	// closedWithin fails unless c is closed by the server within d.
	closedWithin := func(c *quic.Conn, d time.Duration, what string) {
		t.Helper()
		select {
		case <-c.Context().Done():
		case <-time.After(d):
			t.Fatalf("%s: the connection is still open after %v", what, d)
		}
	}
	// client is a Transport whose connections are sent to dialed (never
	// blocking: Transport.Close waits for a dial to return).
	dialed := make(chan *quic.Conn, 10)
	client := func() (*http.Client, *http3.Transport) {
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
			Dial: func(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
				c, err := quic.DialAddrEarly(ctx, addr, tlsConf, conf)
				if err == nil {
					select {
					case dialed <- c:
					default:
					}
				}
				return c, err
			}}
		return &http.Client{Transport: tr, Timeout: 5 * time.Second}, tr
	}
	// get fetches path; the cap's slot may take a moment to be given back
	// after a connection closes.
	get := func(c *http.Client, path string) {
		t.Helper()
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			var resp *http.Response
			if resp, err = c.Get("https://" + addr + path); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != "ok" {
					t.Fatalf("GET %s: %q", path, body)
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("GET %s: %v", path, err)
	}

	// A new connection whose only stream never delivers its headers.
	stalled, err := quic.DialAddr(ctx, addr, &tls.Config{RootCAs: pool, NextProtos: []string{http3.NextProtoH3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseWithError(0, "")
	stall(stalled)
	closedWithin(stalled, 10*header, "a stalled stream on a new connection")

	// Its slot serves a legitimate client, whose request may outlast
	// ReadHeaderTimeout, and whose connection outlives it between requests.
	hc, tr := client()
	defer tr.Close()
	get(hc, "/slow")
	time.Sleep(3 * header)
	get(hc, "/")
	c := <-dialed
	if n := len(dialed); n != 0 {
		t.Fatalf("%d connections dialed for two requests, want 1: the idle one was closed before IdleTimeout", 1+n)
	}

	// A stalled stream after a request: the connection gets IdleTimeout to
	// start one, then ReadHeaderTimeout for its headers.
	stall(c)
	time.Sleep(3 * header)
	if c.Context().Err() != nil {
		t.Fatalf("a connection between requests was closed after %v, before IdleTimeout: %v", 3*header, context.Cause(c.Context()))
	}
	closedWithin(c, idle+header+10*header, "a stalled stream after a request")
	tr.Close()
	hc, tr = client()
	defer tr.Close()
	get(hc, "/")
}
