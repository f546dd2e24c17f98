//go:build unix

package luavm

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadSource: a script file is a regular file (or a link to one) of at
// most MaxSourceBytes; a named pipe, a device, a directory or a larger file
// is refused at once, saying what it is, rather than read.
func TestReadSource(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(at("ok.lua"), []byte("return {}"), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(at("ok.lua"), at("link.lua")))
	must(syscall.Mkfifo(at("fifo.lua"), 0o644))
	must(os.Symlink("/dev/zero", at("zero.lua")))
	must(os.Mkdir(at("dir.lua"), 0o755))
	big, err := os.Create(at("big.lua"))
	must(err)
	must(big.Truncate(MaxSourceBytes + 1)) // sparse: nothing written
	big.Close()
	for _, tt := range []struct {
		file, err string
	}{
		{"ok.lua", ""},
		{"link.lua", ""},
		{"fifo.lua", "a named pipe"},
		{"zero.lua", "a device"},
		{"dir.lua", "a directory"},
		{"big.lua", "larger than 16 MiB"},
		{"none.lua", "no such file"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			done := make(chan struct{})
			var src []byte
			var err error
			go func() {
				defer close(done)
				src, err = ReadSource(at(tt.file))
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ReadSource still reading after 10 s")
			}
			switch {
			case tt.err == "" && (err != nil || string(src) != "return {}"):
				t.Errorf("%q, %v; want the file", src, err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one saying %q", err, tt.err)
			}
		})
	}
}

// TestRequireNamedPipe: a module that is a named pipe is refused, not read
// (the call requiring it would wait for a writer beyond cancellation).
func TestRequireNamedPipe(t *testing.T) {
	dir := t.TempDir()
	src := `local lib = require("lib")
return {
  init = function() return { name = "p", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() return "" end,
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "lib.lua"), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger()
	done := make(chan error, 1)
	go func() {
		_, err := Load(filepath.Join(dir, "p.lua"), Config{Dir: dir, Logger: logger, PoolSize: -1})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "a named pipe") {
			t.Errorf("Load: %v, want an error naming the pipe", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load still waiting after 10 s")
	}
}
