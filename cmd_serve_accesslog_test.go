package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/luamcp/luamcp/internal/syncbuf"
)

// TestAccessLog: with --access-log each request is logged once answered,
// with its status and a hash of its session, never the session id itself.
func TestAccessLog(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	logs := &syncbuf.Buffer{}
	run := startServe(t, logs, "--dir", dir, "--addr", "127.0.0.1:0", "--access-log")
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/s) `).FindStringSubmatch(run.lines(t, 1)[0])
	if route == nil {
		t.Fatal("no route line")
	}
	initResp := postMCP(t, nil, route[1], "", initializeBody)
	sid := initResp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d, no session", initResp.StatusCode)
	}
	postMCP(t, nil, route[1], sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	postMCP(t, nil, route[1], "not-a-session", `{"jsonrpc":"2.0","id":3,"method":"ping"}`)

	tag := logcap.Session(sid)
	want := []*regexp.Regexp{
		regexp.MustCompile(`msg="http request" method=POST path=/mcp/s status=200 bytes=\d+ duration=\S+ client=127\.0\.0\.1:\d+ session=` + tag + ` proto=HTTP/1\.1`),
		regexp.MustCompile(`msg="http request" method=POST path=/mcp/s status=404 .* session=` + logcap.Session("not-a-session") + ` `),
	}
	// A line is written once its answer went out: the client may read the
	// answer first. So wait for the lines (two for the session's requests,
	// one for the unknown session's).
	deadline := time.Now().Add(10 * time.Second) // liveness bound only
	for i, re := range want {
		for len(re.FindAllString(logs.String(), -1)) < 2-i {
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d log lines match %s:\n%s", 2-i, re, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(50 * time.Millisecond) // a third line for the session, were one coming
	if n := len(want[0].FindAllString(logs.String(), -1)); n != 2 {
		t.Errorf("%d lines for the session's two requests, want 2:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), sid) {
		t.Errorf("the log shows the session id itself:\n%s", logs.String())
	}
	run.stop(t)
}

// TestAccessLogKeepsDeadlines: behind the access log, a handler still sets
// write deadlines and sees its flushes fail, so a client that stops reading
// is still dropped (the transport relies on both).
func TestAccessLogKeepsDeadlines(t *testing.T) {
	failed := make(chan error, 1)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
			failed <- err
			return
		}
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		var err error
		for err == nil {
			if _, err = w.Write(chunk); err == nil {
				err = rc.Flush()
			}
		}
		failed <- err
	})
	srv := httptest.NewServer(accessLog(inner, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // and never read
	select {
	case err := <-failed:
		if errors.Is(err, http.ErrNotSupported) {
			t.Fatalf("the access log hides the write deadline: %v", err)
		}
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("writes to a client that stopped reading still block after 10 s (deadline 200 ms)")
	}
}

// TestAccessLogHijack: a request whose connection is taken over (a cluster
// link) is logged as switching protocols, not as a 200.
func TestAccessLogHijack(t *testing.T) {
	logs := &syncbuf.Buffer{}
	h := accessLog(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		c.Close()
	}), slog.New(slog.NewTextHandler(logs, nil)))
	srv := httptest.NewServer(h)
	defer srv.Close()
	http.Get(srv.URL) // the connection closes without an answer
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "status=101") {
		if time.Now().After(deadline) {
			t.Fatalf("log: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The access log cuts what a client controls at 8 KiB, as every log line
// does (a 200 KiB path was written whole, each request).
func TestAccessLogCutsClientValues(t *testing.T) {
	var buf bytes.Buffer
	h := accessLog(http.NotFoundHandler(), slog.New(slog.NewTextHandler(&buf, nil)))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/"+strings.Repeat("a", 200<<10), nil))
	if n := buf.Len(); n > 16<<10 {
		t.Errorf("an access log line of %d bytes for a 200 KiB path", n)
	}
}
