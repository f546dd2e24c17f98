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

// TestTSSDKHotReload edits scripts on disk while the official TypeScript SDK
// client is connected (node/reload.mjs): a new tool appears after
// notifications/tools/list_changed and the session's count survives; a broken
// edit changes nothing; a module edit reloads the script that requires it; a
// removed script's route answers 404 and its session ends.
func TestTSSDKHotReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "reload", "lib"), filepath.Join(dir, "lib"))
	for _, f := range []string{"counter.lua", "gone.lua"} {
		copyFile(t, filepath.Join("testdata", "reload", f), filepath.Join(dir, f))
	}
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

	edits := map[string]func(){
		"add-tool": func() {
			replace(t, filepath.Join(dir, "counter.lua"), readFile(t, filepath.Join("testdata", "reload", "counter_v2.lua")))
		},
		"break": func() {
			replace(t, filepath.Join(dir, "counter.lua"), "return {\n  init = function(\n")
			logs.waitFor(t, "counter.lua:2: syntax error", 1)
		},
		"module": func() {
			replace(t, filepath.Join(dir, "lib", "fmt.lua"), `return { count = function(n) return "total: " .. n end }`)
		},
		"remove": func() {
			if err := os.Remove(filepath.Join(dir, "gone.lua")); err != nil {
				t.Error(err)
			}
			logs.waitFor(t, "gone terminate reason=normal", 1)
		},
	}
	// The broken edit leaves counter.lua broken on disk, and a reload
	// compiles the script file too: the module step first saves a good
	// counter.lua again (the second reload), then edits the module.
	edits["module"] = func(module func()) func() {
		return func() {
			replace(t, filepath.Join(dir, "counter.lua"), readFile(t, filepath.Join("testdata", "reload", "counter_v2.lua")))
			logs.waitFor(t, "script reloaded", 2)
			module()
		}
	}(edits["module"])

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin(t), "reload.mjs", srv.URL)
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
				t.Fatalf("reload.mjs asked for an unknown edit %q", name)
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
	t.Logf("reload.mjs checks: %q", checks)
	if err != nil || !done {
		t.Fatalf("reload.mjs: %v (finished: %v)\n%s", err, done, stderr.String())
	}
	if n := logs.count("gone terminate"); n != 1 {
		t.Errorf("the removed script's session terminated %d times, want once", n)
	}
}

// replace writes a file the way editors save: a temporary file renamed over
// it, so the watcher never sees it half written.
func replace(t *testing.T, path, body string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
