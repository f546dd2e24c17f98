// Package edge serves an [http.Handler] the way `luamcp serve` does: plain
// HTTP/1.1, or HTTPS with HTTP/2 and HTTP/1.1, and optionally HTTP/3 over
// QUIC on the same port number (UDP), announced to TCP clients with an
// Alt-Svc header.
//
// Event streams (SSE) work on all three: the handler flushes through
// [http.ResponseController], which every one of these response writers
// supports, and no server-wide write timeout exists to cut a long stream
// (package mcp bounds each write itself). The end-to-end tests and the
// benchmark serve through this package too, so what they exercise is what
// the command runs.
package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Protocols is what a [Server] speaks on its port.
type Protocols int

const (
	// HTTP is cleartext HTTP/1.1 over TCP.
	HTTP Protocols = iota
	// HTTPS is TLS over TCP, with HTTP/2 negotiated by ALPN (HTTP/1.1 for
	// clients that do not offer h2).
	HTTPS
	// HTTPS3 is HTTPS plus HTTP/3 over QUIC on the same port number (UDP).
	HTTPS3
)

// String names the protocols for logs.
func (p Protocols) String() string {
	switch p {
	case HTTP:
		return "HTTP/1.1"
	case HTTPS:
		return "HTTPS (HTTP/2, HTTP/1.1)"
	case HTTPS3:
		return "HTTPS (HTTP/2, HTTP/1.1) and HTTP/3 (QUIC)"
	}
	return "Protocols(" + strconv.Itoa(int(p)) + ")"
}

// Config says where and how to serve.
type Config struct {
	// Addr is the TCP address to listen on ("127.0.0.1:8750"; port 0 picks
	// a free port). HTTP/3 listens on UDP at the same host and port.
	Addr string
	// Listener, when set, is a listening TCP socket to serve instead of
	// binding Addr (systemd's socket activation); HTTP/3 binds UDP on its
	// address.
	Listener net.Listener
	// CertFile and KeyFile are PEM files of the server's certificate chain
	// and private key: both set for HTTPS, neither for cleartext HTTP. They
	// are loaded again when they change (a renewal needs no restart).
	CertFile, KeyFile string
	// HTTP3 adds HTTP/3 on the same port; it needs CertFile and KeyFile.
	HTTP3 bool
	// Logger receives the servers' own errors (a failed TLS handshake, a
	// handler panic). Nil means slog.Default().
	Logger *slog.Logger
	// ReadHeaderTimeout bounds the TLS handshake and the request headers of
	// a TCP connection, and on HTTP/3 the time a connection may take to
	// deliver a request's headers (h3timeout.go); IdleTimeout closes a
	// connection that has had no request in flight for that long (every
	// protocol). Zero: no bound.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// WriteTimeout closes an HTTP/2 connection that takes no byte of what
	// the server has to send it for that long (http.HTTP2Config's
	// WriteByteTimeout). Zero: no bound. See streamCap.
	WriteTimeout time.Duration
	// MaxConnections caps the open TCP connections (limit.go); past it new
	// ones wait. 0 means DefaultMaxConnections(); negative, no cap.
	MaxConnections int
	// MaxHeaderBytes caps a request's header block on every protocol (HTTP/1.1
	// answers 431 past it; HTTP/2 and HTTP/3 advertise it to the client). 0
	// means [DefaultMaxHeaderBytes].
	MaxHeaderBytes int
}

// DefaultMaxHeaderBytes is the header cap of a [Config] that sets none: 64
// KiB, where net/http's default is 1 MiB. Every connection may hold that
// much while its headers arrive (a slow client has ReadHeaderTimeout to send
// them), so the cap times MaxConnections bounds what a connection flood can
// make the process hold (times streamCap on HTTP/2 and HTTP/3, whose
// connections carry that many requests at once); MCP requests carry a few
// hundred bytes of headers, a bearer token a few KiB, and Node's HTTP server
// refuses past 16 KiB.
const DefaultMaxHeaderBytes = 64 << 10

// protocols validates the TLS and HTTP/3 settings.
func (c *Config) protocols() (Protocols, error) {
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		return 0, errors.New("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")
	case c.CertFile == "" && c.HTTP3:
		return 0, errors.New("--http3 needs --tls-cert and --tls-key: HTTP/3 runs only over TLS")
	case c.CertFile == "":
		return HTTP, nil
	case c.HTTP3:
		return HTTPS3, nil
	}
	return HTTPS, nil
}

// streamCap is how many requests one HTTP/2 or HTTP/3 connection may have
// in flight at once: quic-go's default, which net/http's 250 is brought down
// to. Each holds its headers (up to MaxHeaderBytes), a goroutine and its
// buffers, so a connection costs up to streamCap times what an HTTP/1.1 one
// does: 250 requests waiting for bodies they announced held 16 MiB per
// HTTP/2 connection, 100 hold 6.5 MiB. 100 is the least RFC 9113 advises,
// and an MCP client keeps a few requests open at a time.
//
// The streams of an HTTP/2 connection share one TCP connection and one
// goroutine that writes to it. A client that stops reading its socket
// blocks that goroutine: each request's own write deadline (package mcp's)
// then queues a reset that is never written, its handler never returns, and
// the connection, its slot under MaxConnections and every handler on it
// stay for ever (250 handlers still blocked 20 s after a 2 s deadline).
// WriteTimeout (WriteByteTimeout) closes such a connection instead. HTTP/3
// streams have no writer in common: each write's deadline is enough.
const streamCap = 100

// maxFrameSize is the largest HTTP/2 frame the server reads: the protocol's
// default and least, where net/http's is 1 MiB. The framer allocates a
// frame's whole length as soon as its header arrives, so a client that
// announces a 1 MiB DATA frame and sends one byte of it a minute made a
// connection hold 1 MiB (50 of them: 52 MiB) where an HTTP/1.1 one holds
// its headers. Every client splits what it sends into frames of this size
// unless told it may send larger ones.
const maxFrameSize = 16 << 10

// quicKeepAlive is how often the server pings its HTTP/3 connections. QUIC
// closes a connection that carried nothing for its idle timeout (30 s by
// default), and an event stream may stay quiet far longer
// (session_keepalive_ms can be 0): the pings keep it open. They would keep
// an unused connection open too, so one with no request in flight is closed
// by [Config.IdleTimeout] (http3.Server.IdleTimeout counts requests, not
// pings).
const quicKeepAlive = 15 * time.Second

// A Server serves one handler on one port with the configured protocols.
// [Listen] binds it; [Server.Serve] serves until [Server.Shutdown] or
// [Server.Close].
type Server struct {
	protocols Protocols
	tcp       net.Listener
	udp       net.PacketConn // nil unless protocols is HTTPS3
	http      *http.Server
	h3        *http3.Server // nil unless protocols is HTTPS3
	altSvc    []string      // the Alt-Svc header TCP answers carry; nil without HTTP/3

	hooks     sync.WaitGroup // the RegisterOnShutdown functions that have not returned
	closeOnce sync.Once
}

// Listen loads the certificate, if any, and binds the address (TCP, and UDP
// for HTTP/3), so that a bad file or a busy port fails at once with a clear
// error, before anything is served.
func Listen(cfg Config) (*Server, error) {
	protocols, err := cfg.protocols()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	maxHeader := cfg.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = DefaultMaxHeaderBytes
	}
	s := &Server{
		protocols: protocols,
		http: &http.Server{
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			IdleTimeout:       cfg.IdleTimeout,
			MaxHeaderBytes:    maxHeader,
			ErrorLog:          newServerLog(logger),
			HTTP2: &http.HTTP2Config{
				MaxConcurrentStreams: streamCap,
				MaxReadFrameSize:     maxFrameSize,
				WriteByteTimeout:     cfg.WriteTimeout,
			},
		},
	}
	var tlsConf *tls.Config
	if protocols != HTTP {
		certs, err := newCertSource(cfg.CertFile, cfg.KeyFile, logger)
		if err != nil {
			return nil, err
		}
		tlsConf = &tls.Config{GetCertificate: certs.get, MinVersion: tls.VersionTLS12}
		// ServeTLS offers h2 and http/1.1 by ALPN on a clone of this.
		s.http.TLSConfig = tlsConf
	}
	host, _, _ := net.SplitHostPort(cfg.Addr)
	if cfg.Listener != nil {
		s.tcp = cfg.Listener
		host, _, _ = net.SplitHostPort(s.tcp.Addr().String())
	} else if s.tcp, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, err
	}
	maxConns := cfg.MaxConnections
	if maxConns == 0 {
		maxConns = DefaultMaxConnections()
	}
	if maxConns > 0 {
		s.tcp = newLimitListener(s.tcp, maxConns, logger)
	}
	if protocols == HTTPS3 {
		port := s.Port()
		s.udp, err = net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			s.tcp.Close()
			return nil, fmt.Errorf("HTTP/3 needs UDP port %d too: %w", port, err)
		}
		s.h3 = &http3.Server{
			TLSConfig:      tlsConf.Clone(), // Serve offers h3 by ALPN on it
			QUICConfig:     &quic.Config{KeepAlivePeriod: quicKeepAlive, MaxIncomingStreams: streamCap},
			IdleTimeout:    cfg.IdleTimeout,
			MaxHeaderBytes: maxHeader,
			Logger:         logger,
		}
		if maxConns > 0 {
			q := &quicLimit{max: int64(maxConns), conf: s.h3.QUICConfig.Clone(), logger: logger}
			s.h3.QUICConfig.GetConfigForClient = q.allow
			s.h3.ConnContext = q.opened
		}
		if cfg.ReadHeaderTimeout > 0 {
			s.h3.ConnContext = watchHeaders(s.h3.ConnContext, cfg.ReadHeaderTimeout, cfg.IdleTimeout)
		}
		// One day: long enough to matter, short enough that a server that
		// drops --http3 is not tried for long.
		s.altSvc = []string{fmt.Sprintf(`h3=":%d"; ma=86400`, port)}
	}
	return s, nil
}

// Protocols reports what the server speaks.
func (s *Server) Protocols() Protocols { return s.protocols }

// Addr is the TCP address the server listens on (HTTP/3: the same on UDP).
func (s *Server) Addr() net.Addr { return s.tcp.Addr() }

// Port is the port number the server listens on.
func (s *Server) Port() int {
	if a, ok := s.tcp.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// URL is the base URL of the server: "https://host:port" or "http://host:port".
func (s *Server) URL() string {
	if s.protocols == HTTP {
		return "http://" + s.tcp.Addr().String()
	}
	return "https://" + s.tcp.Addr().String()
}

// RegisterOnShutdown registers f to run, once, when [Server.Shutdown]
// starts: ending long-lived streams there lets the shutdown complete. Call
// it before Shutdown.
func (s *Server) RegisterOnShutdown(f func()) {
	s.hooks.Add(1)
	var once sync.Once // net/http runs its hooks on every Shutdown call
	s.http.RegisterOnShutdown(func() {
		once.Do(func() {
			defer s.hooks.Done()
			f()
		})
	})
}

// Serve serves h until [Server.Shutdown] or [Server.Close], then returns
// [http.ErrServerClosed]; it returns another error when one of the
// protocols fails, having closed the others. Call it once.
func (s *Server) Serve(h http.Handler) error {
	h = dropGETBodies(h)
	s.http.Handler = h
	if s.h3 != nil {
		s.h3.Handler = watchRequests(h)
		s.http.Handler = s.announce(h)
	}
	errs := make(chan error, 2)
	serving := 1
	go func() {
		if s.protocols == HTTP {
			errs <- s.http.Serve(s.tcp)
			return
		}
		errs <- s.http.ServeTLS(s.tcp, "", "") // TLSConfig.GetCertificate has the certificate
	}()
	if s.h3 != nil {
		serving++
		go func() { errs <- s.h3.Serve(s.udp) }()
	}
	var first error
	for range serving {
		err := <-errs
		if first == nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, quic.ErrServerClosed) {
			first = err
			s.Close() // one protocol down takes the others with it
		}
	}
	if first != nil {
		return first
	}
	return http.ErrServerClosed
}

// dropGETBodies discards the body of a GET or HEAD request over HTTP/2
// before h runs. Such content has no meaning (RFC 9110, 9.3.1) and no route
// reads it, but net/http keeps what a client sends on a stream until its
// handler reads it or returns, up to the connection's flow-control window
// (1 MiB): a session's GET channel, which stays open, held 1.1 MiB per
// connection that way. Once the body is closed, what comes is dropped and
// its window given back. A client's GET without a body (its HEADERS end the
// stream) already has http.NoBody and is left alone.
//
// HTTP/1.1 is left alone too: what it does not read stays in the kernel,
// and closing a body there reads it. So is HTTP/3: quic-go gives every
// request a body, and closing it cancels the stream's reading with
// H3_REQUEST_CANCELLED, which a client still sending its request's end may
// take as the request cancelled. What it keeps is bounded by the stream's
// window, 512 KiB, and the connection's, 768 KiB.
func dropGETBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Body != nil && r.Body != http.NoBody {
			r.Body.Close()
			r = r.WithContext(r.Context()) // a copy: the caller's request is not changed
			r.Body = http.NoBody
		}
		h.ServeHTTP(w, r)
	})
}

// announce adds the Alt-Svc header that tells TCP clients about HTTP/3.
func (s *Server) announce(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Alt-Svc"] = s.altSvc
		h.ServeHTTP(w, r)
	})
}

// h3Grace is how long HTTP/3 connections may stay once the TCP side has
// shut down and the shutdown hooks have returned: quic-go's graceful
// shutdown waits for every client to close its connection after GOAWAY,
// and a client may keep an idle one open; by then the hooks have ended the
// streams, so what is left is closed.
const h3Grace = time.Second

// Shutdown stops accepting connections and requests, runs the functions
// given to [Server.RegisterOnShutdown], and waits for the requests in
// flight to end, or for ctx to end (then it returns ctx's error and the
// caller may [Server.Close]).
func (s *Server) Shutdown(ctx context.Context) error {
	if s.h3 == nil {
		return s.http.Shutdown(ctx)
	}
	h3ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h3done := make(chan error, 1)
	go func() { h3done <- s.h3.Shutdown(h3ctx) }()
	err := s.http.Shutdown(ctx) // runs the hooks, but does not wait for them
	hooked := make(chan struct{})
	go func() {
		s.hooks.Wait()
		close(hooked)
	}()
	select {
	case <-hooked:
	case <-ctx.Done():
	}
	var h3err error
	select {
	case h3err = <-h3done:
	case <-time.After(h3Grace):
		cancel() // Shutdown then closes the connections left
		if h3err = <-h3done; errors.Is(h3err, context.Canceled) && ctx.Err() == nil {
			h3err = nil
		}
	}
	s.closeUDP()
	return errors.Join(err, h3err)
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	err := s.http.Close()
	if s.h3 != nil {
		err = errors.Join(err, s.h3.Close())
	}
	s.closeUDP()
	return err
}

// closeUDP closes the UDP socket: http3.Server leaves the socket it is
// given open.
func (s *Server) closeUDP() {
	if s.udp != nil {
		s.closeOnce.Do(func() { s.udp.Close() })
	}
}
