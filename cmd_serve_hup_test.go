//go:build unix

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// TestServeReloadOnSIGHUP: with --no-watch, an edit is applied only on
// SIGHUP (systemctl reload), and the session made before it lives on.
func TestServeReloadOnSIGHUP(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0", "--no-watch")
	lines := make(chan string, 100)
	go func() {
		for run.out.Scan() {
			lines <- run.out.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("serve ended before printing %s: %v", what, <-run.done)
			}
			return l
		case <-time.After(10 * time.Second): // liveness bound only
			t.Fatalf("serve did not print %s", what)
		}
		return ""
	}
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/s) +session +tools: a, b$`).FindStringSubmatch(next("the route table"))
	if route == nil {
		t.Fatal("no route line for s.lua")
	}
	resp := postMCP(t, nil, route[1], "", initializeBody)
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %d, no session", resp.StatusCode)
	}

	edited := strings.Replace(sessionScript, `name = "b"`, `name = "c"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "s.lua"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lines:
		t.Fatalf("with --no-watch, serve printed %q before any SIGHUP", l)
	case <-time.After(700 * time.Millisecond): // past the watcher's debounce, had there been one
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if l := next("the table after SIGHUP"); !regexp.MustCompile(`/mcp/s +session +tools: a, c$`).MatchString(l) {
		t.Errorf("the table after SIGHUP: %q", l)
	}
	call, err := http.DefaultClient.Do(mcpRequest(route[1], session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"c","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(call.Body)
	call.Body.Close()
	if call.StatusCode != http.StatusOK || !strings.Contains(string(body), `"text":"c"`) {
		t.Errorf("the session made before the reload, calling the new tool: %d %s", call.StatusCode, body)
	}
	go func() {
		for range lines {
		}
	}()
	run.stop(t)
}

// TestServeSIGHUPWhileLoading: a SIGHUP that comes while the scripts are
// still loading (a deploy's `systemctl reload` right after a start) is
// applied once they are, instead of killing the process by its default
// action.
func TestServeSIGHUPWhileLoading(t *testing.T) {
	slow := "for i = 1, 2e6 do end -- a slow start\n" + sessionScript
	dir := writeScripts(t, map[string]string{"s.lua": slow})
	logs := &syncbuf.Buffer{}
	run := startServe(t, logs, "--dir", dir, "--addr", "127.0.0.1:0", "--no-watch")
	time.Sleep(100 * time.Millisecond) // the listener is bound; the script loads
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if l := run.lines(t, 1)[0]; !strings.Contains(l, "/mcp/s ") {
		t.Errorf("serve printed %q, want the route table", l)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "SIGHUP: the scripts folder is applied"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // liveness bound only
			t.Fatalf("the SIGHUP was not applied:\n%s", logs.String())
		}
	}
	run.stop(t)
}

// TestServeSIGHUPAfterShutdown: a SIGHUP that comes once serve has shut
// down (a late `systemctl reload`, while the process finishes its deferred
// work) is ignored; given back its default action, it killed the process
// (here the test binary) with exit status 129.
func TestServeSIGHUPAfterShutdown(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0", "--no-watch")
	go func() {
		for run.out.Scan() {
		}
	}()
	run.stop(t)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the signal's delivery: a killed process ends here
}
