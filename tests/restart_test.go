package tests

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stop sends SIGTERM to p and waits for it to exit.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(waitLong):
		t.Fatalf("%s did not exit within %v of SIGTERM:\n%s", p.id, waitLong, p.logs.String())
	}
}

// TestSessionsSurviveRestart: `serve --sessions-file` saves the live
// sessions when it gets SIGTERM and resumes them when it starts again on
// the same address: the official Go SDK client goes on with its session,
// whose state is where it was, without initializing again, and so does a
// raw client; the script's terminate does not run for them; the file is
// its owner's only, and gone once read.
func TestSessionsSurviveRestart(t *testing.T) {
	bin := buildLuamcp(t)
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "servers", "lib"), filepath.Join(dir, "lib"))
	copyFile(t, filepath.Join("testdata", "servers", "session.lua"), filepath.Join(dir, "session.lua"))
	file := filepath.Join(t.TempDir(), "sessions.json")
	args := []string{"--dir", dir, "--addr", freeAddr(t), "--no-watch", "--sessions-file", file}

	first := startServe(t, bin, "first", args...)
	url := first.base + "/mcp/session"
	c := connectGo(t, url, nil, latestVersion)
	for i := 1; i <= 3; i++ {
		c.wantText(t, "count", nil, strconv.Itoa(i))
	}
	raw := nodesClient(t)
	sid := raw.initialize(t, url)
	raw.callTool(t, url, sid, "count", nil).wantText(t, "1")
	first.stop(t)
	if strings.Contains(first.logs.String(), "fixture terminate") {
		t.Errorf("terminate ran for sessions that were saved:\n%s", first.logs.String())
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("no sessions file after SIGTERM: %v\n%s", err, first.logs.String())
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("the sessions file has mode %v, want 0600: it holds session ids", perm)
	}

	second := startServe(t, bin, "second", args...)
	if second.base != first.base {
		t.Fatalf("the second process serves %s, the first served %s", second.base, first.base)
	}
	c.wantText(t, "count", nil, "4")
	raw.callTool(t, url, sid, "count", nil).wantText(t, "2")
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the sessions file is still there once read: %v", err)
	}
	// A session nobody saved is unknown, as ever.
	if r := raw.do(t, url, call{Body: request(1, "ping", nil), Session: strings.Repeat("0", 32)}); r.Status != http.StatusNotFound {
		t.Errorf("an unknown session: HTTP %d, want 404", r.Status)
	}
	if !strings.Contains(second.logs.String(), "sessions=2") {
		t.Errorf("the second process did not log two sessions resumed:\n%s", second.logs.String())
	}
}

// TestTSSDKSessionsSurviveRestart: the same with the official TypeScript
// SDK client (node/restart.mjs), whose GET channel, reopened by the SDK
// with Last-Event-ID once the new process listens, carries pushes again.
func TestTSSDKSessionsSurviveRestart(t *testing.T) {
	bin := buildLuamcp(t)
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "servers", "lib"), filepath.Join(dir, "lib"))
	copyFile(t, filepath.Join("testdata", "servers", "session.lua"), filepath.Join(dir, "session.lua"))
	args := []string{"--dir", dir, "--addr", freeAddr(t), "--no-watch", "--sessions-file", filepath.Join(t.TempDir(), "sessions.json")}
	p := startServe(t, bin, "first", args...)
	base := p.base
	runSteps(t, map[string]func(){
		"restart": func() {
			p.stop(t)
			p = startServe(t, bin, "second", args...)
		},
	}, "restart.mjs", base+"/mcp/session")
	if p.id != "second" {
		t.Fatal("the client never asked for the restart")
	}
}
