package tests

import (
	"path/filepath"
	"testing"
)

// Issue 9, item 11: a client that sends a progress token with every call
// (FastMCP; the TypeScript and Python SDKs given a progress callback) must see
// the same state as one that never does. Checked on the bundled tutorials
// with the official TypeScript SDK client and an onprogress callback.

// startScripts mounts copies of the named bundled scripts (and their lib).
func startScripts(t *testing.T, names ...string) *testServer {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "scripts", "lib"), filepath.Join(dir, "lib"))
	for _, n := range names {
		copyFile(t, filepath.Join("..", "scripts", n+".lua"), filepath.Join(dir, n+".lua"))
	}
	return startHost(t, dir)
}

func TestTSSDKProgressKeepsState(t *testing.T) {
	t.Parallel()
	s := startScripts(t, "counter", "notes")
	for _, script := range []string{"counter", "notes"} {
		t.Run(script, func(t *testing.T) {
			tsScenario(t, script, s.url(script))
		})
	}
}
