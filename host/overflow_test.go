package host

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TestWatchOverflow: when the kernel drops events (its queue overflowed),
// the watcher looks at the whole folder again: a file added and a module
// edited while no event came are applied all the same.
func TestWatchOverflow(t *testing.T) {
	dir := t.TempDir()
	script := func(tool string) string {
		return `local util = require("lib.util")
return {
  init = function() return { name = "s", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = util.name or "` + tool + `", description = "d", input_schema = { type = "object" } } } end,
  handle_tool = function(name) return name end,
}
`
	}
	mustWrite := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(dir, "lib", "util.lua"), "return {}\n")
	mustWrite(filepath.Join(dir, "a.lua"), script("a"))
	h, err := New(Config{Dir: dir, Logger: slog.New(slog.DiscardHandler), PoolSize: 1, Watch: true, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Shutdown(t.Context()) })
	toolOf := func(path string) string {
		for _, r := range h.Routes() {
			if r.Path == path && len(r.Tools) == 1 {
				return r.Tools[0]
			}
		}
		return "(not mounted)"
	}
	if got := toolOf("/mcp/a"); got != "a" {
		t.Fatalf("a.lua serves %q", got)
	}

	// The events of these edits are lost, as in an overflow.
	for _, d := range []string{dir, filepath.Join(dir, "lib")} {
		if err := h.watcher.fsw.Remove(d); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(dir, "b.lua"), script("b"))
	mustWrite(filepath.Join(dir, "lib", "util.lua"), `return { name = "edited" }`+"\n")
	h.watcher.fsw.Errors <- fsnotify.ErrEventOverflow

	deadline := time.Now().Add(10 * time.Second) // a liveness bound
	for toolOf("/mcp/b") != "edited" || toolOf("/mcp/a") != "edited" {
		if time.Now().After(deadline) {
			t.Fatalf("after an overflow: /mcp/a serves %q, /mcp/b %q; want both %q", toolOf("/mcp/a"), toolOf("/mcp/b"), "edited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The folders are watched again: a later edit is seen as usual.
	mustWrite(filepath.Join(dir, "lib", "util.lua"), `return { name = "again" }`+"\n")
	for toolOf("/mcp/a") != "again" {
		if time.Now().After(deadline) {
			t.Fatalf("after the rescan, an edit of lib/util.lua is not seen: /mcp/a serves %q", toolOf("/mcp/a"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
