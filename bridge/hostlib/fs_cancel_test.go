package hostlib

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// A write whose sync outlasts the call (a slow disk) returns when the call is
// cancelled, not when the disk is done, and leaves the file as it was; its
// temporary file goes once the sync returns.
func TestFSWriteCancelledDuringSync(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "out", "f.txt"), "old")
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" } }`))

	release := make(chan struct{})
	syncing := make(chan struct{}, 1)
	syncFile = func(f *os.File) error {
		syncing <- struct{}{}
		<-release
		return f.Sync()
	}
	t.Cleanup(func() { syncFile = (*os.File).Sync })

	ctx, cancel := context.WithCancel(context.Background())
	L.SetContext(ctx)
	defer L.RemoveContext()
	go func() { <-syncing; cancel() }()
	done := make(chan error, 1)
	go func() { done <- L.DoString(`fs.write("out/f.txt", "new")`) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("the cancelled write: %v, want the call's context error", err)
		}
	case <-time.After(10 * time.Second): // liveness bound only
		close(release)
		t.Fatal("the write waited for the sync past its cancellation")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out", "f.txt")); string(b) != "old" {
		t.Errorf("the file holds %q after a cancelled write, want the old content", b)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second) // liveness bound only
	for {
		entries, _ := os.ReadDir(filepath.Join(dir, "out"))
		if len(entries) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left in out/ after the sync returned: %v", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Reads and writes go a chunk at a time: a cancelled call's fs.read ends
// with its context's error, and data of several chunks round-trips.
func TestFSChunks(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("0123456789abcdef", 3*fsChunk/16+5) // a little over 3 chunks
	mkfile(t, filepath.Join(dir, "out", "big.txt"), big)
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" } }`))
	L.SetGlobal("N", lstr(big)) // compared by value below
	runCases(t, L, []luaCase{
		{"read several chunks", `eq(fs.read("out/big.txt"), N)`},
		{"write several chunks", `assert(fs.write("out/copy.txt", N)); eq(fs.read("out/copy.txt"), N)`},
	})
	// The functions are called from Go: the VM checks the context before
	// each instruction, so Lua code would stop before reaching them.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	L.SetContext(ctx)
	defer L.RemoveContext()
	fsMod := L.GetGlobal("fs").(*lua.LTable)
	for _, c := range []struct {
		fn   string
		args []lua.LValue
	}{
		{"read", []lua.LValue{lstr("out/big.txt")}},
		{"write", []lua.LValue{lstr("out/big.txt"), lstr("x")}},
	} {
		L.Push(fsMod.RawGetString(c.fn))
		for _, a := range c.args {
			L.Push(a)
		}
		if err := L.PCall(len(c.args), 1, nil); err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("fs.%s in a cancelled call: %v, want the context's error", c.fn, err)
		}
		L.SetTop(0)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out", "big.txt")); string(b) != big {
		t.Error("a cancelled write changed the file")
	}
}

// TestSyncReturnedFirst: a sync that returned before the call's context
// ended leaves nothing aside, so that a write failing after it (a rename
// refused) removes its temporary file before it returns, not later from a
// goroutine that took the sync for one still running.
func TestSyncReturnedFirst(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 1000 {
		if synced, err := syncContext(context.Background(), f); err != nil || synced != nil {
			t.Fatalf("syncContext = %v, %v; want nil, nil: the sync returned", synced, err)
		}
	}
}
