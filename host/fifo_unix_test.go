//go:build unix

package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// TestMountNamedPipe: a named pipe or a link to a device in the scripts
// folder is reported as a load error, and the other scripts serve: reading
// it would have blocked the start (or a reload) for good, or read until
// memory ran out.
func TestMountNamedPipe(t *testing.T) {
	dir := writeDir(t, map[string]string{"good.lua": goodScript, "lib/util.lua": utilModule})
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.lua"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.lua")); err != nil {
		t.Fatal(err)
	}
	started := make(chan *host.Host, 1)
	go func() {
		h, _ := newHost(t, dir)
		started <- h
	}()
	var h *host.Host
	select {
	case h = <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("host.New still reading after 20 s")
	}
	if got := h.Routes(); len(got) != 1 || got[0].Path != "/mcp/good" {
		t.Errorf("Routes() = %+v, want /mcp/good alone", got)
	}
	var msgs []string
	for _, err := range h.LoadErrors() {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) != 2 || !strings.Contains(msgs[0], "a named pipe") || !strings.Contains(msgs[1], "a device") {
		t.Errorf("LoadErrors() = %q, want the pipe's and the device's", msgs)
	}
}
