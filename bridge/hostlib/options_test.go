package hostlib

import (
	"path/filepath"
	"testing"
)

// TestUnknownOptionRaises: script-api.md ("Outcomes") says a host
// function raises for an unknown option key, as http.* and exec.run always
// did; fs.read and json.encode ignored one (a misspelt max_bytes read the
// whole file under the 64 MiB default).
func TestUnknownOptionRaises(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "data", "a.txt"), "alpha")
	L, _ := newLua(t, newLib(t, dir, `{ read = { "data" } }`))
	runCases(t, L, []luaCase{
		{"fs.read", `local e = fails(fs.read, "data/a.txt", { max_byte = 1 }); eq(e:find('unknown option "max_byte"', 1, true) ~= nil, true, e)
			eq(fs.read("data/a.txt", { max_bytes = 5 }), "alpha")`},
		{"json.encode", `local e = fails(json.encode, { 1 }, { indnet = true }); eq(e:find('unknown option "indnet"', 1, true) ~= nil, true, e)
			eq(json.encode({ 1 }, { indent = false }), "[1]")`},
	})
}
