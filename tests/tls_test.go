package tests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/quic-go/quic-go/http3"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/edge"
)

// The TLS, HTTP/2 and HTTP/3 front of `luamcp serve` (internal/edge),
// driven by the official Go and TypeScript SDK clients and by quic-go's
// HTTP/3 client, against a certificate signed by a test CA made here.

// testCA is a certificate authority made for one test, and a server
// certificate it signed for 127.0.0.1 and localhost.
type testCA struct {
	pool     *x509.CertPool // trusts the CA
	caFile   string         // the CA certificate, PEM (for node)
	certFile string         // the server's certificate, PEM
	keyFile  string         // the server's private key, PEM
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "luamcp test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{
		pool:     x509.NewCertPool(),
		caFile:   filepath.Join(dir, "ca.pem"),
		certFile: filepath.Join(dir, "cert.pem"),
		keyFile:  filepath.Join(dir, "key.pem"),
	}
	ca.pool.AddCert(caCert)
	writePEM(t, ca.caFile, "CERTIFICATE", caDER)
	writePEM(t, ca.certFile, "CERTIFICATE", leafDER)
	writePEM(t, ca.keyFile, "PRIVATE KEY", keyDER)
	return ca
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// protoRecorder counts the requests a handler saw, by protocol
// ("HTTP/2.0", "HTTP/3.0"...): what the server negotiated, whatever the
// client says.
type protoRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen map[string]int
}

func (p *protoRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen[r.Proto]++
	p.mu.Unlock()
	p.next.ServeHTTP(w, r)
}

// only fails the test unless every request came over proto (and some did).
func (p *protoRecorder) only(t *testing.T, proto string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[proto] == 0 || len(p.seen) != 1 {
		t.Errorf("requests by protocol: %v; want %s only", p.seen, proto)
	}
}

// tlsServer is a host served through internal/edge with the test CA's
// certificate, as `luamcp serve --tls-cert --tls-key [--http3]` serves it.
type tlsServer struct {
	ca     *testCA
	host   *host.Host
	srv    *edge.Server
	protos *protoRecorder
	logs   *logRecorder
}

// startTLS mounts the fixture variants and serves them over HTTPS (and
// HTTP/3 with h3). edit, if set, changes the host's configuration.
func startTLS(t testing.TB, h3 bool, edit func(*host.Config), variants ...string) *tlsServer {
	t.Helper()
	return startTLSWith(t, h3, nil, edit, variants...)
}

// startTLSWith is startTLS with editEdge, if set, changing the front's
// configuration (its timeouts, its caps).
func startTLSWith(t testing.TB, h3 bool, editEdge func(*edge.Config), edit func(*host.Config), variants ...string) *tlsServer {
	t.Helper()
	ca := newTestCA(t)
	ecfg := edge.Config{Addr: "127.0.0.1:0", CertFile: ca.certFile, KeyFile: ca.keyFile, HTTP3: h3}
	if editEdge != nil {
		editEdge(&ecfg)
	}
	srv, err := edge.Listen(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "servers", "lib"), filepath.Join(dir, "lib"))
	for _, v := range variants {
		copyFile(t, filepath.Join("testdata", "servers", v+".lua"), filepath.Join(dir, v+".lua"))
	}
	logs := newLogRecorder()
	cfg := host.Config{Dir: dir, Logger: slog.New(logs)}
	if edit != nil {
		edit(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	if errs := h.LoadErrors(); len(errs) > 0 {
		_ = h.Shutdown(context.Background())
		srv.Close()
		t.Fatalf("scripts failed to load: %v\nlog:\n%s", errs, logs.dump())
	}
	s := &tlsServer{ca: ca, host: h, srv: srv, logs: logs, protos: &protoRecorder{next: h.Handler(), seen: map[string]int{}}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(s.protos) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("host.Shutdown: %v", err)
		}
		sctx, scancel := context.WithTimeout(context.Background(), closeGrace)
		defer scancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("an HTTP handler was still running %v after host.Shutdown returned (%v)", closeGrace, err)
			srv.Close()
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.dump())
		}
	})
	return s
}

func (s *tlsServer) url(variant string) string { return s.srv.URL() + "/mcp/" + variant }

// h2Transport trusts the test CA and negotiates HTTP/2 (a Transport with a
// TLS configuration of its own offers h2 only when forced to).
func (s *tlsServer) h2Transport() *http.Transport {
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.pool}, ForceAttemptHTTP2: true}
}

// h3Transport is quic-go's HTTP/3 client, trusting the test CA.
func (s *tlsServer) h3Transport() *http3.Transport {
	return &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.pool}}
}

// clientCheck is an http.RoundTripper that fails every response not of the
// wanted protocol major version, as the client saw it, and reports when the
// session's GET channel is open (a fresh GET replays nothing pushed before).
type clientCheck struct {
	base   http.RoundTripper
	major  int
	opened chan struct{}
	once   sync.Once
}

func newClientCheck(base http.RoundTripper, major int) *clientCheck {
	return &clientCheck{base: base, major: major, opened: make(chan struct{})}
}

func (c *clientCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ProtoMajor != c.major {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s answered over %s, want HTTP/%d", req.Method, req.URL, resp.Proto, c.major)
	}
	if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		c.once.Do(func() { close(c.opened) })
	}
	return resp, nil
}

// connectGoOver connects the Go SDK client through rt.
func connectGoOver(t *testing.T, url string, rt http.RoundTripper, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-tls", Version: "1.0.0"}, opts)
	transport := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: 2}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: latestVersion})
	if err != nil {
		t.Fatalf("Go SDK Connect(%s): %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// progressSink collects progress messages; the SDK hands them over
// asynchronously.
type progressSink struct{ ch chan string }

func newProgressSink() *progressSink { return &progressSink{ch: make(chan string, 16)} }

func (p *progressSink) handle(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.ch <- req.Params.Message
}

func (p *progressSink) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-p.ch:
		return m
	case <-time.After(waitLong):
		t.Fatal("no progress notification")
		return ""
	}
}

// exerciseSession runs a session through the Go SDK client over rt: tools,
// a call with progress over SSE, a log on the GET channel, a call whose
// stream stays quiet much longer than the server's write timeout, and a
// progress event that reaches the client while its call still runs (it is
// flushed, not held until the result).
func exerciseSession(t *testing.T, url string, rt *clientCheck) {
	t.Helper()
	progress, logs := newProgressSink(), newLogSink()
	cs := connectGoOver(t, url, rt, &sdk.ClientOptions{
		ProgressNotificationHandler: progress.handle,
		LoggingMessageHandler:       logs.handle,
	})
	ctx := goCtx(t)

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || goText(t, res) != "5" {
		t.Fatalf("add = %+v, %v", res, err)
	}

	params := &sdk.CallToolParams{Name: "progress"}
	params.SetProgressToken("p1")
	res, err = cs.CallTool(ctx, params)
	if err != nil || goText(t, res) != "done" {
		t.Fatalf("progress = %+v, %v", res, err)
	}
	for _, want := range []string{"step 1/2", "step 2/2"} {
		if got := progress.next(t); got != want {
			t.Errorf("progress message %q, want %q", got, want)
		}
	}

	// The session's GET channel, which the SDK opens after initialize.
	select {
	case <-rt.opened:
	case <-time.After(waitLong):
		t.Fatal("the SDK's GET channel did not open")
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "log", Arguments: map[string]any{"level": "warning"}})
	if err != nil || goText(t, res) != "logged" {
		t.Fatalf("log = %+v, %v", res, err)
	}
	if m := logs.next(t); m != "warning:log at warning" {
		t.Errorf("GET channel log = %q", m)
	}

	// Quiet for 1.5 s, ten times the write timeout the host was given: the
	// deadline of a write is cleared once it is through, and no
	// server-wide timeout cuts the stream.
	params = &sdk.CallToolParams{Name: "block", Arguments: map[string]any{"ms": 1500}}
	params.SetProgressToken("quiet")
	res, err = cs.CallTool(ctx, params)
	if err != nil || goText(t, res) != "unblocked" {
		t.Fatalf("block 1.5 s = %+v, %v", res, err)
	}
	if m := progress.next(t); m != "blocking" {
		t.Errorf("progress of block = %q", m)
	}

	// Flushed: the progress of a call that blocks for a minute reaches the
	// client while it runs; then the client cancels it.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	params = &sdk.CallToolParams{Name: "block", Arguments: map[string]any{"ms": 60000}}
	params.SetProgressToken("flush")
	go func() {
		_, err := cs.CallTool(cctx, params)
		done <- err
	}()
	if m := progress.next(t); m != "blocking" {
		t.Errorf("progress of a running call = %q", m)
	}
	select {
	case err := <-done:
		t.Fatalf("the blocking call ended before it was cancelled: %v", err)
	default:
	}
	cancel()
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Fatal("the cancelled call did not end")
	}
}

// shortWrites sets the per-write deadline the TLS tests give the host: far
// shorter than the quiet stretch exerciseSession sits through.
func shortWrites(c *host.Config) { c.WriteTimeout = 150 * time.Millisecond }

func TestTLSGoSDKOverHTTP2(t *testing.T) {
	t.Parallel()
	s := startTLS(t, false, shortWrites, "session")
	tr := s.h2Transport()
	t.Cleanup(tr.CloseIdleConnections) // after the session's own cleanup
	exerciseSession(t, s.url("session"), newClientCheck(tr, 2))
	s.protos.only(t, "HTTP/2.0")
}

func TestHTTP3GoSDKSession(t *testing.T) {
	t.Parallel()
	s := startTLS(t, true, shortWrites, "session")
	tr := s.h3Transport()
	t.Cleanup(func() { tr.Close() }) // after the session's own cleanup
	exerciseSession(t, s.url("session"), newClientCheck(tr, 3))
	s.protos.only(t, "HTTP/3.0")
}

// TestHTTP3AltSvc: with --http3, TCP answers announce HTTP/3 on the same
// port; without it, they announce nothing.
func TestHTTP3AltSvc(t *testing.T) {
	t.Parallel()
	for _, h3 := range []bool{true, false} {
		t.Run(fmt.Sprint("http3=", h3), func(t *testing.T) {
			s := startTLS(t, h3, nil, "stateless")
			tr := s.h2Transport()
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodPost, s.url("stateless"), strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", latestVersion)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
				t.Fatalf("ping over %s: status %d", resp.Proto, resp.StatusCode)
			}
			want := ""
			if h3 {
				want = fmt.Sprintf(`h3=":%d"; ma=86400`, s.srv.Port())
			}
			if got := resp.Header.Get("Alt-Svc"); got != want {
				t.Errorf("Alt-Svc = %q, want %q", got, want)
			}
		})
	}
}

// TestTLSRefusesUntrusted: a client that does not trust the CA fails the
// handshake (the server really serves the certificate it was given).
func TestTLSRefusesUntrusted(t *testing.T) {
	t.Parallel()
	s := startTLS(t, false, nil, "stateless")
	tr := &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}
	defer tr.CloseIdleConnections()
	_, err := (&http.Client{Transport: tr}).Get(s.url("stateless"))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("GET without trusting the CA: %v, want an unknown-authority error", err)
	}
}

// TestTSSDKOverHTTP2: the TypeScript SDK client over HTTPS, on a fetch that
// speaks HTTP/2 (node:http2): a session with progress and the GET channel.
// node/tls.mjs checks that ALPN chose h2; the server checks that every
// request came over HTTP/2.
func TestTSSDKOverHTTP2(t *testing.T) {
	t.Parallel()
	s := startTLS(t, false, nil, "session")
	obs := tsRun(t, "tls.mjs", "h2", s.url("session"), s.ca.caFile)
	if o := observation(obs, "alpn"); o == nil || o["protocol"] != "h2" {
		t.Errorf("ALPN observation %v, want h2", o)
	}
	s.protos.only(t, "HTTP/2.0")
}

// TestOversizedBodyEachProtocol: a POST body over the limit, of a length
// the client does not announce (so the server finds out by reading), gets
// 413 on HTTP/2 and on HTTP/3 alike, and the connection stays usable.
// (HTTP/3 forbids the Connection header HTTP/1.1 closes with: an answer
// carrying it is malformed to an HTTP/3 client.)
func TestOversizedBodyEachProtocol(t *testing.T) {
	t.Parallel()
	s := startTLS(t, true, nil, "stateless")
	h2, h3 := s.h2Transport(), s.h3Transport()
	t.Cleanup(h2.CloseIdleConnections)
	t.Cleanup(func() { h3.Close() })
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"h2", h2}, {"h3", h3}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, body := range []string{big, `{"jsonrpc":"2.0","id":2,"method":"ping"}`} {
				// A reader of no known type: sent without Content-Length.
				req, _ := http.NewRequest(http.MethodPost, s.url("stateless"), io.MultiReader(strings.NewReader(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", latestVersion)
				resp, err := tc.rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("POST of %d bytes: %v", len(body), err)
				}
				resp.Body.Close()
				want := http.StatusOK
				if len(body) > 1<<20 {
					want = http.StatusRequestEntityTooLarge
				}
				if resp.StatusCode != want {
					t.Errorf("POST of %d bytes over %s: status %d, want %d", len(body), resp.Proto, resp.StatusCode, want)
				}
			}
		})
	}
}

// TestHTTP3Shutdown: shutting down as `serve` does (the host's shutdown as
// the front's hook) ends an HTTP/3 session's open GET channel and completes
// well within the deadline, although the client keeps its connection.
func TestHTTP3Shutdown(t *testing.T) {
	t.Parallel()
	s := startTLS(t, true, nil, "session")
	tr := s.h3Transport()
	t.Cleanup(func() { tr.Close() })
	check := newClientCheck(tr, 3)
	connectGoOver(t, s.url("session"), check, nil)
	select {
	case <-check.opened:
	case <-time.After(waitLong):
		t.Fatal("the SDK's GET channel did not open")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // serve's shutdownTimeout
	defer cancel()
	hostDone := make(chan error, 1)
	s.srv.RegisterOnShutdown(func() { hostDone <- s.host.Shutdown(ctx) })
	start := time.Now()
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with an HTTP/3 session open: %v", err)
	}
	t.Logf("shutdown took %v", time.Since(start))
	if err := <-hostDone; err != nil {
		t.Errorf("host.Shutdown: %v", err)
	}
	if !strings.Contains(s.logs.dump(), "fixture terminate reason=shutdown") {
		t.Errorf("the session did not end with the shutdown; log:\n%s", s.logs.dump())
	}
	tr.Close() // the session's DELETE at cleanup fails at once, not after a handshake timeout
}
