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

// TestNotesDeclaresListChanged: the notes script tells its sessions when a
// note is added (notifications/resources/list_changed), so it must declare
// resources.listChanged: a client uses only what the server declared.
func TestNotesDeclaresListChanged(t *testing.T) {
	t.Parallel()
	s := startScripts(t, "notes")
	u := s.url("notes")
	var init struct {
		Capabilities struct {
			Resources map[string]any `json:"resources"`
		} `json:"capabilities"`
	}
	s.result(t, u, "", "initialize", initializeParams(latestVersion), &init)
	if init.Capabilities.Resources["listChanged"] != true {
		t.Errorf("resources capability %v, want listChanged", init.Capabilities.Resources)
	}
	sid := s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	defer get.close()
	s.callTool(t, u, sid, "add_note", map[string]any{"title": "t", "text": "x"})
	if m := get.nextMessage(); m.Method != "notifications/resources/list_changed" {
		t.Errorf("GET channel got %s, want notifications/resources/list_changed", m.Method)
	}
}
