package edge

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

func TestBadPort(t *testing.T) {
	for _, tc := range []struct {
		port int
		bad  bool
	}{
		{6000, true}, {6665, true}, {6669, true}, {10080, true}, {22, true}, {4190, true},
		{8750, false}, {443, false}, {80, false}, {8080, false}, {6670, false}, {0, false},
	} {
		if got := BadPort(tc.port); got != tc.bad {
			t.Errorf("BadPort(%d) = %v, want %v", tc.port, got, tc.bad)
		}
	}
}

func TestListenErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"cert alone", Config{Addr: "127.0.0.1:0", CertFile: garbage}, "go together"},
		{"key alone", Config{Addr: "127.0.0.1:0", KeyFile: garbage}, "go together"},
		{"http3 in clear", Config{Addr: "127.0.0.1:0", HTTP3: true}, "HTTP/3 runs only over TLS"},
		{"unreadable", Config{Addr: "127.0.0.1:0", CertFile: filepath.Join(dir, "absent"), KeyFile: garbage}, "absent"},
		{"not PEM", Config{Addr: "127.0.0.1:0", CertFile: garbage, KeyFile: garbage}, "loading the TLS certificate"},
		{"port in use", Config{Addr: busy.Addr().String()}, "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Listen(tc.cfg)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Listen: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestServeHTTP: cleartext HTTP/1.1 serves, announces no HTTP/3, and
// Shutdown ends Serve with http.ErrServerClosed.
func TestServeHTTP(t *testing.T) {
	s, err := Listen(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Protocols() != HTTP || !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || s.Port() == 0 {
		t.Fatalf("protocols %v, URL %s, port %d", s.Protocols(), s.URL(), s.Port())
	}
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }))
	}()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "HTTP/1.1" || resp.Header.Get("Alt-Svc") != "" {
		t.Errorf("answer %q, Alt-Svc %q", body, resp.Header.Get("Alt-Svc"))
	}
	hooked := make(chan struct{})
	s.RegisterOnShutdown(func() { close(hooked) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // liveness bound only
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
	select {
	case <-hooked:
	case <-ctx.Done():
		t.Error("the shutdown hook did not run")
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 named cn, and its
// key, to certFile and keyFile, and returns the certificate.
func writeCert(t *testing.T, cn, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// touch moves both files' modification time by d, so that a rewrite within
// the file system's time granularity still counts as a change.
func touch(t *testing.T, d time.Duration, files ...string) {
	t.Helper()
	at := time.Now().Add(d)
	for _, f := range files {
		if err := os.Chtimes(f, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCertificateReload: a renewed certificate is served without a restart;
// files that cannot be loaded leave the previous one, and the log says so.
func TestCertificateReload(t *testing.T) {
	defer func(d time.Duration) { certCheckEvery = d }(certCheckEvery)
	certCheckEvery = 0 // every handshake looks at the files

	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := x509.NewCertPool()
	pool.AddCert(writeCert(t, "first", certFile, keyFile))
	s, logs := serveTLS(t, certFile, keyFile)

	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served(); got != "first" {
		t.Fatalf("served %q, want first", got)
	}

	pool.AddCert(writeCert(t, "renewed", certFile, keyFile))
	touch(t, time.Hour, certFile, keyFile)
	if got := served(); got != "renewed" {
		t.Errorf("after renewal served %q, want renewed", got)
	}

	if err := os.WriteFile(certFile, []byte("half written"), 0o600); err != nil {
		t.Fatal(err)
	}
	touch(t, 2*time.Hour, certFile)
	if got := served(); got != "renewed" {
		t.Errorf("after a broken renewal served %q, want the previous certificate", got)
	}
	if !strings.Contains(logs.String(), "cannot be loaded") || !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Errorf("the log does not tell the reload and the failure:\n%s", logs.String())
	}
}

// TestHeaderCap: a request whose headers pass the cap is refused with 431
// before it reaches the handler, by default (64 KiB, not net/http's 1 MiB)
// and as configured; one under it is served.
func TestHeaderCap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cap    int
		header int // bytes of one header's value
		want   int
	}{
		{"default, a large token", 0, 32 << 10, http.StatusOK},
		{"default, past it", 0, 96 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"configured, under it", 256 << 10, 192 << 10, http.StatusOK},
		{"configured, past it", 8 << 10, 16 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Listen(Config{Addr: "127.0.0.1:0", MaxHeaderBytes: tc.cap})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			go s.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second)) // liveness bound only
			req := "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("a", tc.header) + "\r\n\r\n"
			go io.WriteString(c, req) // a refused request is not read to its end
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestHandshakeErrorsLogOnce: failed TLS handshakes (here plain HTTP sent to
// the HTTPS port) are each answered as net/http does, and logged once per
// interval, not once per connection: any client can make them at will.
func TestHandshakeErrorsLogOnce(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, "server", certFile, keyFile)
	s, logs := serveTLS(t, certFile, keyFile)
	const flood = 20
	for i := range flood {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second)) // liveness bound only
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP %d to the HTTPS port: %v, %v; want 400", i, resp, err)
		}
	}
	// The last line is logged after the answer: wait for it, then for more.
	deadline := time.Now().Add(10 * time.Second)
	count := func() int {
		return strings.Count(logs.String(), "TLS handshake error")
	}
	for count() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if n := count(); n != 1 {
		t.Errorf("%d failed handshakes logged for %d, want 1:\n%s", n, flood, logs.String())
	}
}

// serveTLS serves 404s over TLS with the certificate and key in the files
// on a loopback port until the test ends, logging to the buffer it returns.
func serveTLS(t *testing.T, certFile, keyFile string) (*Server, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	s, err := Listen(Config{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	go s.Serve(http.NotFoundHandler())
	return s, logs
}
