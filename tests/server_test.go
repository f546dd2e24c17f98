package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// Upper bounds for liveness. They are never the thing a test measures: a
// correct server answers in milliseconds, and these only keep a broken one
// from hanging the run.
const (
	waitLong  = 10 * time.Second * raceSlowdown // a response, a stream event, a reap
	waitShort = 2 * time.Second * raceSlowdown  // something that is already due

	// closeGrace bounds how long HTTP handlers may run on after
	// host.Shutdown: it must end every call, stateless ones included.
	closeGrace = 5 * time.Second
)

// testServer is one host on 127.0.0.1 mounting a temporary copy of the
// chosen fixture variants (testdata/servers/<variant>.lua) at /mcp/<variant>.
type testServer struct {
	t      *testing.T
	host   *host.Host
	srv    *httptest.Server
	logs   *logRecorder
	client *http.Client // raw HTTP; its own transport, so idle connections can be closed

	closeOnce sync.Once
}

// startServer mounts the fixture variants on a fresh host. The server is shut
// down when the test ends; a load error fails the test at once.
func startServer(t *testing.T, variants ...string) *testServer {
	t.Helper()
	return startServerWith(t, nil, variants...)
}

// startServerWith is startServer with an edit of the host's configuration.
func startServerWith(t *testing.T, edit func(*host.Config), variants ...string) *testServer {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "servers", "lib"), filepath.Join(dir, "lib"))
	for _, v := range variants {
		copyFile(t, filepath.Join("testdata", "servers", v+".lua"), filepath.Join(dir, v+".lua"))
	}
	if edit == nil {
		return startHost(t, dir)
	}
	return startHost(t, dir, edit)
}

// startHost mounts every script of dir on a fresh host; edits, if any,
// change its configuration.
func startHost(t *testing.T, dir string, edits ...func(*host.Config)) *testServer {
	t.Helper()
	logs := newLogRecorder()
	cfg := host.Config{Dir: dir, Logger: slog.New(logs)}
	for _, edit := range edits {
		edit(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatalf("host.New(%s): %v", dir, err)
	}
	if errs := h.LoadErrors(); len(errs) > 0 {
		_ = h.Shutdown(context.Background())
		t.Fatalf("scripts failed to load: %v\nlog:\n%s", errs, logs.dump())
	}
	return serveHost(t, h, logs)
}

// serveHost serves h on 127.0.0.1 until the test ends; logs is h's log.
func serveHost(t *testing.T, h *host.Host, logs *logRecorder) *testServer {
	t.Helper()
	s := &testServer{
		t:      t,
		host:   h,
		logs:   logs,
		client: &http.Client{Transport: &http.Transport{}},
	}
	s.srv = httptest.NewServer(h.Handler())
	t.Cleanup(func() {
		s.close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.dump())
		}
	})
	return s
}

// url is the endpoint of one mounted variant.
func (s *testServer) url(variant string) string { return s.srv.URL + "/mcp/" + variant }

// hostPort is the server's 127.0.0.1:port.
func (s *testServer) hostPort() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// shutdown ends every session (terminate reason "shutdown") and reports the
// error of host.Shutdown.
func (s *testServer) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	return s.host.Shutdown(ctx)
}

// close shuts the host down, then the HTTP server. A handler that is still
// running after the host's Shutdown is a leak: it fails the test instead of
// hanging it.
func (s *testServer) close() {
	s.closeOnce.Do(func() {
		if err := s.shutdown(); err != nil {
			s.t.Errorf("host.Shutdown: %v", err)
		}
		done := make(chan struct{})
		go func() {
			s.srv.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(closeGrace):
			s.t.Errorf("an HTTP handler was still running %v after host.Shutdown returned; closing its connections", closeGrace)
			s.srv.CloseClientConnections()
			<-done
		}
		s.client.CloseIdleConnections()
	})
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			copyDir(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
			continue
		}
		copyFile(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// logRecorder is a slog.Handler that keeps every record as one line of text
// (message, then key=value attributes), so tests can look for what a script
// printed and dump the log when they fail.
type logRecorder struct {
	mu    *sync.Mutex
	lines *[]string
	attrs string
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: new(sync.Mutex), lines: new([]string)}
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%s", rec.Level, rec.Message, r.attrs)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve()) // as slog's handlers do
		return true
	})
	r.mu.Lock()
	*r.lines = append(*r.lines, b.String())
	r.mu.Unlock()
	return nil
}

func (r *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(r.attrs)
	for _, a := range attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve()) // as slog's handlers do
	}
	return &logRecorder{mu: r.mu, lines: r.lines, attrs: b.String()}
}

func (r *logRecorder) WithGroup(string) slog.Handler { return r }

// count reports how many lines contain substr.
func (r *logRecorder) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range *r.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// waitFor waits until at least n lines contain substr.
func (r *logRecorder) waitFor(t *testing.T, substr string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for r.count(substr) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server log has %d lines with %q after %v, want %d", r.count(substr), substr, waitLong, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *logRecorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.Join(*r.lines, "\n")
	const max = 20000
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	return s
}

// drain reads and discards the rest of a body, then closes it.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, body)
	body.Close()
}
