package edge

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
