package host

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestThroughLinks: a changed path also names what it changes through the
// folder's links; a hidden name that is the way of no link is dropped.
func TestThroughLinks(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "scripts")
	out := filepath.Join(root, "elsewhere")
	for _, d := range []string{
		filepath.Join(dir, "..2026_b", "lib"),
		filepath.Join(dir, "vendor", "lib"),
		out,
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		filepath.Join(dir, "..2026_b", "cm.lua"),
		filepath.Join(dir, "..2026_b", "lib", "u.lua"),
		filepath.Join(dir, "vendor", "lib", "v.lua"),
		filepath.Join(dir, "plain.lua"),
		filepath.Join(out, "far.lua"),
	} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"..data":  "..2026_b",         // the ConfigMap's swapped link
		"cm.lua":  "..data/cm.lua",    // a file through it
		"cmlib":   "..data/lib",       // a folder through it
		"lib":     "vendor/lib",       // a folder inside
		"far.lua": out + "/far.lua",   // a file outside
		"gone":    "nowhere/gone.lua", // dangling
		".#x.lua": "user@host.123",    // an editor's lock: hidden, not a way
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	links := folderLinks(dir)
	dirs := map[string]bool{dir: true, out: true}
	in := func(names ...string) []string {
		var ps []string
		for _, n := range names {
			ps = append(ps, filepath.Join(dir, n))
		}
		return ps
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{"the swap of ..data", in("..data"), in("cm.lua", "cmlib")},
		{"a new hidden folder", in("..2026_b"), in("cm.lua", "cmlib")},
		{"a hidden folder nothing leads through", in("..2026_a"), nil},
		{"an editor's lock", in(".#x.lua"), nil},
		{"a plain file", in("plain.lua"), in("plain.lua")},
		{"a module behind a folder link", in("vendor/lib/v.lua"), in("lib/v.lua", "vendor/lib/v.lua")},
		{"the folder behind a link", in("vendor"), in("lib", "vendor")},
		{"a file outside", []string{filepath.Join(out, "far.lua")}, []string{filepath.Join(dir, "far.lua"), filepath.Join(out, "far.lua")}},
		{"a dangling link's target", in("nowhere/gone.lua"), in("gone", "nowhere/gone.lua")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := throughLinks(dirs, links, tc.paths)
			slices.Sort(got)
			slices.Sort(tc.want)
			if !slices.Equal(got, tc.want) {
				t.Errorf("throughLinks(%v) = %v, want %v", tc.paths, got, tc.want)
			}
		})
	}
}

// TestSilentFilesystem: the test's own folder (a local filesystem) sends
// file events, so serving it turns no polling on.
func TestSilentFilesystem(t *testing.T) {
	if name, silent := silentFilesystem(t.TempDir()); silent {
		t.Errorf("a local temporary folder is taken for a filesystem without file events (%s)", name)
	}
}
