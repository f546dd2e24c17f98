//go:build linux

package hostlib

import (
	"os"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestFSReadUnsizedFile pins fs.read's max_bytes for a file whose size is
// not known before it is read: a /proc file stats as 0 bytes, so only the
// check after the read bounds it, exactly (the stat-time check, which the
// read_max_bytes case reaches, passes it). The NUL case pins fs's own
// refusal of a path with a NUL byte, before any system call sees it.
func TestFSReadUnsizedFile(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm") // the Lua state runs in this process
	if err != nil {
		t.Skip(err)
	}
	if fi, err := os.Stat("/proc/self/comm"); err != nil || fi.Size() != 0 {
		t.Skipf("/proc/self/comm stats as %v bytes (%v), not 0", fi.Size(), err)
	}
	L, _ := newLua(t, newLib(t, t.TempDir(), `{ read = { "/proc/self" } }`))
	L.SetGlobal("N", lua.LNumber(len(comm)))
	runCases(t, L, []luaCase{
		{"the whole file within max_bytes", `eq(#fs.read("/proc/self/comm", { max_bytes = N }), N)`},
		{"one byte past max_bytes", `local v, err = fs.read("/proc/self/comm", { max_bytes = N - 1 }); eq(v, nil)
			eq(err, "fs: /proc/self/comm is larger than max_bytes (" .. (N - 1) .. ")")`},
		{"a NUL byte in the path", `local v, err = fs.read("/proc/self/comm\0x"); eq(v, nil); eq(err, "fs: path contains a NUL byte")`},
	})
}
