//go:build unix

package hostlib

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFSWriteLongName: fs.write takes any name the folder takes (up to 255
// bytes), as fs.append does: the temporary file it writes first must not
// be longer than the name.
func TestFSWriteLongName(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "out", "keep"), "")
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" } }`))
	name := "out/" + strings.Repeat("a", 250)
	runCases(t, L, []luaCase{{"write", `local ok, err = fs.write("` + name + `", "x"); eq(err, nil); eq(ok, true)
		eq(fs.read("` + name + `"), "x"); eq(#fs.list("out"), 2)`}})
}
