package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// The 2026-07-28 era seen by the official TypeScript client v2
// (@modelcontextprotocol/client 2.4.0), run by node/era.mjs: pinned to
// 2026-07-28 and in auto mode, beside 2025 clients on the same URLs. Each
// scenario first requires the modern era: a route that does not serve it
// fails them all.

func TestEraTSPinned(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			tsRun(t, "era.mjs", "core-pinned", s.url(variant))
			tsRun(t, "era.mjs", "every", s.url(variant))
		})
	}
}

func TestEraTSAuto(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"stateless", "session"} {
		t.Run(variant, func(t *testing.T) {
			tsRun(t, "era.mjs", "core-auto", s.url(variant))
		})
	}
}

// TestEraTSBundledScripts: the tutorials of scripts/, pinned and auto.
func TestEraTSBundledScripts(t *testing.T) {
	t.Parallel()
	s := startScripts(t, "hello", "counter", "notes", "live")
	tsRun(t, "era.mjs", "tutorials", s.srv.URL)
}

// TestEraTSListen: a listen stream hears a 2025 session's broadcast.
func TestEraTSListen(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	tsRun(t, "era.mjs", "listen-broadcast", s.url("session"))
}

// TestEraTSListenHotReload: an edit on disk reaches a pinned client's listen
// stream as tools/list_changed; a 2025 session on the same route keeps its
// count across the reload.
func TestEraTSListenHotReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "reload", "lib"), filepath.Join(dir, "lib"))
	copyFile(t, filepath.Join("testdata", "reload", "counter.lua"), filepath.Join(dir, "counter.lua"))
	logs := newLogRecorder()
	h, err := host.New(host.Config{Dir: dir, Logger: slog.New(logs), Watch: true, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("host.Shutdown: %v", err)
		}
		srv.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.dump())
		}
	})
	runSteps(t, map[string]func(){
		"add-tool": func() {
			replace(t, filepath.Join(dir, "counter.lua"), readFile(t, filepath.Join("testdata", "reload", "counter_v2.lua")))
		},
	}, "era.mjs", "listen-reload", srv.URL+"/mcp/counter")
}

// runSteps runs a node script of node/ that asks for edits ({"step": name}
// lines, each answered "done" on its stdin once edits[name] ran) and
// requires its closing {"done": true}.
func runSteps(t *testing.T, edits map[string]func(), args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin(t), args...)
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var checks []string
	done := false
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		var m map[string]any
		if json.Unmarshal(lines.Bytes(), &m) != nil {
			continue // the SDK's own console output
		}
		switch {
		case m["step"] != nil:
			name, _ := m["step"].(string)
			edit := edits[name]
			if edit == nil {
				_ = cmd.Process.Kill()
				t.Fatalf("%s asked for an unknown edit %q", args[0], name)
			}
			edit()
			if _, err := stdin.Write([]byte("done\n")); err != nil {
				t.Fatal(err)
			}
		case m["ok"] != nil:
			checks = append(checks, m["ok"].(string))
		case m["done"] == true:
			done = true
		}
	}
	err = cmd.Wait()
	t.Logf("%s checks: %q", strings.Join(args, " "), checks)
	if err != nil || !done {
		t.Fatalf("%s: %v (finished: %v)\n%s", strings.Join(args, " "), err, done, stderr.String())
	}
}
