package tests

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	// compiles the script file too: the module step first saves the good
	// counter.lua it serves again (nothing to reload: the host says so),
	// then edits the module.
	edits["module"] = func(module func()) func() {
		return func() {
			replace(t, filepath.Join(dir, "counter.lua"), readFile(t, filepath.Join("testdata", "reload", "counter_v2.lua")))
			logs.waitFor(t, "script back to its running version", 1)
			module()
		}
	}(edits["module"])

	runSteps(t, edits, "reload.mjs", srv.URL)
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
