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
