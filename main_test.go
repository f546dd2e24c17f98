package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const sessionScript = `return {
  route = { sessions = true },
  init = function(params) return { name = "s", version = "1" }, { tools = {} }, {} end,
  tools = function(state)
    return { { name = "a", description = "a", input_schema = { type = "object" } },
             { name = "b", description = "b", input_schema = { type = "object" } } }
  end,
  handle_tool = function(name, args, ctx, state) return name end,
  terminate = function(reason, state) print("terminate " .. reason) end,
}
`

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := newApp(&out, io.Discard).Run([]string{"luamcp", "version"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "luamcp "+version+"\n") {
		t.Errorf("version printed %q", out.String())
	}
}

func TestServeErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	scripts := writeScripts(t, map[string]string{"s.lua": sessionScript})
	empty := t.TempDir()

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"address in use", []string{"--dir", scripts, "--addr", busy.Addr().String()}, "address already in use"},
		{"bad address", []string{"--dir", scripts, "--addr", "nowhere"}, "nowhere"},
		{"missing folder", []string{"--dir", filepath.Join(empty, "absent"), "--addr", "127.0.0.1:0"}, "absent"},
		{"nothing to serve", []string{"--dir", empty, "--addr", "127.0.0.1:0"}, "no server to mount"},
		{"log level", []string{"--dir", scripts, "--log-level", "loud"}, "--log-level"},
		{"log format", []string{"--dir", scripts, "--log-format", "xml"}, "--log-format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"luamcp", "serve"}, tc.args...)
			err := newApp(io.Discard, io.Discard).Run(args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("serve %v: error %v, want one containing %q", tc.args, err, tc.want)
			}
		})
	}
}

// TestServe starts the command on a free port, calls a route, and stops it
// the way a signal does (by ending its context).
func TestServe(t *testing.T) {
	dir := writeScripts(t, map[string]string{
		"s.lua":   sessionScript,
		"bad.lua": "return {\n  oops(\n",
	})
	outR, outW := io.Pipe()
	var logs syncWriter
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- newApp(outW, &logs).RunContext(ctx, []string{"luamcp", "serve", "--dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json"})
		outW.Close()
	}()

	lines := bufio.NewScanner(outR)
	var status []string
	for len(status) < 2 && lines.Scan() {
		status = append(status, lines.Text())
	}
	go io.Copy(io.Discard, outR)
	if len(status) != 2 {
		t.Fatalf("serve printed %q, then ended: %v", status, <-done)
	}
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/s) +session +tools: a, b$`).FindStringSubmatch(status[0])
	if route == nil {
		t.Fatalf("status line %q does not show the URL, mode and tools", status[0])
	}
	if !strings.HasPrefix(status[1], "not mounted: ") || !strings.Contains(status[1], "bad.lua:") {
		t.Errorf("status line %q does not report bad.lua", status[1])
	}

	req, _ := http.NewRequest(http.MethodPost, route[1], strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(30 * time.Second): // liveness bound only
		t.Fatal("serve did not stop after its context ended")
	}
	if !strings.Contains(logs.String(), "terminate shutdown") {
		t.Errorf("the session did not terminate with reason shutdown; log:\n%s", logs.String())
	}
	if _, err := http.Post(route[1], "application/json", strings.NewReader("{}")); err == nil {
		t.Error("the listener is still open after shutdown")
	}
}

func writeScripts(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// syncWriter collects log output written from several goroutines.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
