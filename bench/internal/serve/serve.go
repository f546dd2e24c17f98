// Package serve runs one benchmark server process: it mounts the server's
// routes and the debug endpoint on 127.0.0.1, reports readiness on stdout and
// serves until SIGINT or SIGTERM.
package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/luamcp/luamcp/internal/edge"

	"github.com/luamcp/luamcp/bench/internal/spec"
)

// Flags are the command-line settings every server binary takes.
type Flags struct {
	// Addr is the listen address; port 0 picks a free port.
	Addr string
	// TTL is the idle TTL of sessions on spec.PathChurn.
	TTL time.Duration
	// Upstream is the host:port of the HTTP server spec.FetchTool calls.
	Upstream string
}

// RegisterFlags defines the common flags on fs.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:0", "listen address")
	fs.DurationVar(&f.TTL, "ttl", 30*time.Second, "idle session TTL of "+spec.PathChurn)
	fs.StringVar(&f.Upstream, "upstream", "", "host:port of the HTTP server the fetch tool calls ("+spec.PathFetch+" is mounted only with it)")
	return f
}

// Server is what a binary hands to Run.
type Server struct {
	// Name identifies the implementation in reports.
	Name string
	// Routes maps exact paths (spec.Path*) to their handlers. The path "/"
	// is a catch-all.
	Routes map[string]http.Handler
	// ChurnSessions reports live sessions on spec.PathChurn; nil when unknown.
	ChurnSessions func() int
	// Close, when set, runs after the HTTP server has stopped.
	Close func(ctx context.Context) error
	// TLS also serves the routes over HTTPS (HTTP/2) and HTTP/3 on a second
	// port, through luamcp's own front (internal/edge, as `luamcp serve
	// --tls-cert --tls-key --http3` does), with a certificate made at start.
	TLS bool
	// Nodes are the addresses of the cluster nodes behind Routes
	// (spec.Ready.Nodes); nil for a single server.
	Nodes []string
}

// Logger is the logger servers use: warnings and errors only, on stderr, so
// logging costs nothing on the measured path.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Run serves s on addr until the process is told to stop.
func Run(s Server, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	var routes []string
	for path, h := range s.Routes {
		mux.Handle(path, h)
		if path != "/" {
			routes = append(routes, path)
		}
	}
	slices.Sort(routes)
	mux.HandleFunc(spec.PathStats, func(w http.ResponseWriter, r *http.Request) {
		writeStats(w, s.ChurnSessions)
	})
	// Profiles of the server under load: go tool pprof http://<addr>/debug/pprof/heap
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace) // go tool trace -pprof=sched: where goroutines waited

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()

	rd := spec.Ready{Server: s.Name, Addr: ln.Addr().String(), Routes: routes, Nodes: s.Nodes}
	var tlsSrv *edge.Server
	if s.TLS {
		tlsSrv, rd.CACert, err = listenTLS()
		if err != nil {
			return err
		}
		rd.TLSAddr = tlsSrv.Addr().String()
		go func() { serveErr <- tlsSrv.Serve(mux) }()
	}
	ready, err := json.Marshal(rd)
	if err != nil {
		return fmt.Errorf("encode ready line: %w", err)
	}
	fmt.Printf("%s%s\n", spec.ReadyPrefix, ready)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-stop:
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	// Long-lived SSE streams keep Shutdown waiting; Close cuts them.
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	if tlsSrv != nil {
		if err := tlsSrv.Shutdown(ctx); err != nil {
			tlsSrv.Close()
		}
	}
	if s.Close != nil {
		if err := s.Close(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("close: %w", err)
		}
	}
	return nil
}

// Main runs s and exits non-zero on error; it is the whole main of a binary
// once its flags are parsed.
func Main(s Server, addr string) {
	if err := Run(s, addr); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, err)
		os.Exit(1)
	}
}

// listenTLS binds an HTTPS + HTTP/3 server on a free port of 127.0.0.1,
// with a self-signed certificate made now; it returns the certificate (PEM)
// for clients to trust.
func listenTLS() (*edge.Server, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "luamcp-bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "luamcp-bench-tls")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir) // edge.Listen reads the files at once
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, "", err
	}
	srv, err := edge.Listen(edge.Config{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, HTTP3: true,
		Logger: Logger(), ReadHeaderTimeout: 10 * time.Second})
	if err != nil {
		return nil, "", fmt.Errorf("listen TLS: %w", err)
	}
	return srv, string(certPEM), nil
}

func writeStats(w http.ResponseWriter, churnSessions func() int) {
	// Two collections: objects a sync.Pool held at the first (its victim
	// cache) are freed only by the second, and so are the pages they pinned.
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := spec.Stats{
		Goroutines:    runtime.NumGoroutine(),
		HeapAlloc:     ms.HeapAlloc,
		HeapInuse:     ms.HeapInuse,
		Sys:           ms.Sys,
		ChurnSessions: -1,
	}
	if churnSessions != nil {
		st.ChurnSessions = churnSessions()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}
