//go:build unix

package hostlib

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestEnv(t *testing.T) {
	t.Setenv("LUAMCP_ALLOWED", "yes")
	t.Setenv("LUAMCP_SECRET", "no")
	L, _ := newLua(t, newLib(t, t.TempDir(), `{ env = { "LUAMCP_ALLOWED", "LUAMCP_UNSET" } }`))
	runCases(t, L, []luaCase{
		{"allowed", `eq(env.get("LUAMCP_ALLOWED"), "yes")`},
		{"allowed but unset", `local v, err = env.get("LUAMCP_UNSET"); eq(v, nil); eq(err, nil)`},
		{"not allowed", `local v, err = env.get("LUAMCP_SECRET"); eq(v, nil); eq(err, "env: LUAMCP_SECRET is not allowed (route.allow.env)")`},
		{"wrong type raises", `fails(env.get, {})`},
	})
	L, _ = newLua(t, nil)
	runCases(t, L, []luaCase{
		{"before the grants", `local v, err = env.get("LUAMCP_ALLOWED"); eq(v, nil)
			eq(err, "env: not available while the script's main chunk runs (call it from init or a callback)")`},
	})
}

func TestFS(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "data", "a.txt"), "alpha")
	mkfile(t, filepath.Join(dir, "data", "sub", "b.txt"), "beta")
	mkfile(t, filepath.Join(dir, "secret", "s.txt"), "secret")
	mkfile(t, filepath.Join(dir, "out", "keep.txt"), "")
	for link, target := range map[string]string{
		"data/link":  "../secret",      // leads out of the root
		"data/inner": "a.txt",          // stays inside
		"out/esc":    "../secret",      // a way out of a write root
		"data/abs":   dir + "/secret/", // an absolute way out
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, fifo := range []string{"data/fifo", "out/fifo"} {
		if err := syscall.Mkfifo(filepath.Join(dir, fifo), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	L, _ := newLua(t, newLib(t, dir, `{ read = { "data" }, write = { "out" } }`))
	abs := filepath.Join(dir, "data", "a.txt")
	runCases(t, L, []luaCase{
		{"read", `eq(fs.read("data/a.txt"), "alpha"); eq(fs.read("data/sub/../a.txt"), "alpha"); eq(fs.read("./data//a.txt"), "alpha")
			eq(fs.read("` + abs + `"), "alpha"); eq(fs.read("data/inner"), "alpha")`},
		{"read max_bytes", `eq(fs.read("data/a.txt", { max_bytes = 5 }), "alpha")
			local v, err = fs.read("data/a.txt", { max_bytes = 4 }); eq(v, nil); eq(err, "fs: data/a.txt is larger than max_bytes (4)")`},
		{"read failures", `local v, err = fs.read("data/missing"); eq(v, nil); eq(err, "fs: data/missing: not found")
			v, err = fs.read("data"); eq(err, "fs: data is a folder")
			v, err = fs.read(""); eq(err, "fs: empty path")`},
		{"dot-dot escape", `local v, err = fs.read("data/../secret/s.txt"); eq(v, nil); eq(err, "fs: data/../secret/s.txt escapes its root")
			v, err = fs.read("data/sub/../../secret/s.txt"); eq(err, "fs: data/sub/../../secret/s.txt escapes its root")`},
		{"symlink escape", `local v, err = fs.read("data/link/s.txt"); eq(v, nil); eq(err, "fs: data/link/s.txt escapes its root")
			v, err = fs.read("data/abs/s.txt"); eq(err, "fs: data/abs/s.txt escapes its root")
			v, err = fs.write("out/esc/p.txt", "x"); eq(err, "fs: out/esc/p.txt escapes its root")
			v, err = fs.list("data/link"); eq(err, "fs: data/link escapes its root")`},
		{"outside every root", `local v, err = fs.read("secret/s.txt"); eq(v, nil)
			eq(err, "fs: secret/s.txt is outside the allowed folders (route.allow.read, route.allow.write)")
			v, err = fs.read("/etc/passwd"); eq(err, "fs: /etc/passwd is outside the allowed folders (route.allow.read, route.allow.write)")
			v, err = fs.read("../x"); eq(err, "fs: ../x is outside the allowed folders (route.allow.read, route.allow.write)")`},
		{"write outside write", `local v, err = fs.write("data/new.txt", "x"); eq(v, nil); eq(err, "fs: data/new.txt is not in a writable folder (route.allow.write)")
			v, err = fs.mkdir("data/d"); eq(err, "fs: data/d is not in a writable folder (route.allow.write)")
			v, err = fs.remove("data/a.txt"); eq(err, "fs: data/a.txt is not in a writable folder (route.allow.write)")`},
		{"special files do not block", `local v, err = fs.read("data/fifo"); eq(v, nil); eq(err, "fs: data/fifo is not a regular file")
			v, err = fs.list("data/fifo"); eq(v, nil); eq(err, "fs: data/fifo: not a folder")
			v, err = fs.append("out/fifo", "x"); eq(v, nil)
			eq(fs.write("out/fifo", "replaced"), true); eq(fs.read("out/fifo"), "replaced")`},
		{"write and read back", `eq(fs.write("out/notes/n.txt", "one"), true); eq(fs.read("out/notes/n.txt"), "one")
			eq(fs.write("out/notes/n.txt", "two"), true); eq(fs.read("out/notes/n.txt"), "two")
			eq(fs.append("out/notes/n.txt", "+three"), true); eq(fs.read("out/notes/n.txt"), "two+three")
			eq(fs.append("out/log/l.txt", "x"), true); eq(fs.read("out/log/l.txt"), "x")
			local list = fs.list("out/notes"); eq(#list, 1) -- no temporary file left
			local v, err = fs.write("out", "x"); eq(err, "fs: out is a folder")
			v, err = fs.write("out/notes", "x"); eq(err, "fs: out/notes: is a folder")`},
		{"list", `fs.write("out/l/b.txt", "bb"); fs.write("out/l/a.txt", "a"); fs.mkdir("out/l/c")
			local l = fs.list("out/l"); eq(#l, 3); eq(l[1].name, "a.txt"); eq(l[2].name, "b.txt"); eq(l[3].name, "c")
			eq(l[2].size, 2); eq(l[2].dir, false); eq(l[3].dir, true)
			if math.abs(l[1].modified - os.time()) > 60 then error("modified " .. l[1].modified) end
			local v, err = fs.list("out/none"); eq(err, "fs: out/none: not found")
			v, err = fs.list("data/a.txt"); eq(v, nil)`},
		{"stat and exists", `local s = fs.stat("data/a.txt"); eq(s.size, 5); eq(s.dir, false); eq(fs.stat("data").dir, true)
			local v, err = fs.stat("data/nope"); eq(v, nil); eq(err, "not found")
			eq(fs.exists("data/a.txt"), true); eq(fs.exists("data/nope"), false); eq(fs.exists("out"), true)
			v, err = fs.exists("secret/s.txt"); eq(v, nil); eq(err, "fs: secret/s.txt is outside the allowed folders (route.allow.read, route.allow.write)")`},
		{"remove and mkdir", `eq(fs.mkdir("out/m/n"), true); eq(fs.mkdir("out/m/n"), true); eq(fs.exists("out/m/n"), true)
			local v, err = fs.remove("out/m"); eq(v, nil); eq(err, "fs: out/m: folder not empty")
			eq(fs.remove("out/m/n"), true); eq(fs.remove("out/m"), true); eq(fs.exists("out/m"), false)
			v, err = fs.remove("out/m"); eq(err, "fs: out/m: not found")
			v, err = fs.remove("out"); eq(err, "fs: out is a root folder: it cannot be removed")`},
		// A file where a folder is needed is "not a folder", whatever the
		// call; exists says false under it; a name too long for the disk is
		// named so, without the temporary file's name.
		{"a file as a folder, a name too long", `local v, err = fs.read("data/a.txt/x"); eq(v, nil); eq(err, "fs: data/a.txt/x: not a folder")
			v, err = fs.write("data/a.txt/x", "y"); eq(err, "fs: data/a.txt/x is not in a writable folder (route.allow.write)")
			eq(fs.write("out/f.txt", "x"), true)
			v, err = fs.write("out/f.txt/x", "y"); eq(v, nil); eq(err, "fs: out/f.txt/x: not a folder")
			v, err = fs.write("out/f.txt/x/y", "y"); eq(err, "fs: out/f.txt/x/y: not a folder")
			v, err = fs.append("out/f.txt/x", "y"); eq(err, "fs: out/f.txt/x: not a folder")
			v, err = fs.mkdir("out/f.txt/x"); eq(err, "fs: out/f.txt/x: not a folder")
			eq(fs.exists("out/f.txt/x"), false); eq(fs.exists("data/a.txt/x/y"), false)
			v, err = fs.stat("out/f.txt/x"); eq(err, "fs: out/f.txt/x: not a folder")
			local long = "out/" .. string.rep("n", 300)
			v, err = fs.write(long, "x"); eq(v, nil); eq(err, "fs: " .. long .. ": file name too long")
			v, err = fs.read(long); eq(err, "fs: " .. long .. ": file name too long")
			local names = {}; for _, e in ipairs(fs.list("out")) do names[#names + 1] = e.name end
			if table.concat(names, " "):find("tmp-", 1, true) then error("a temporary file was left: " .. table.concat(names, " ")) end`},
		{"wrong types raise", `fails(fs.read, nil); fails(fs.write, "out/x"); fails(fs.read, "data/a.txt", { max_bytes = "1" })`},
	})
	if b, err := os.ReadFile(filepath.Join(dir, "secret", "s.txt")); err != nil || string(b) != "secret" {
		t.Errorf("secret/s.txt changed: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret", "p.txt")); err == nil {
		t.Error("a write escaped through a symbolic link")
	}

	L, _ = newLua(t, nil)
	runCases(t, L, []luaCase{{"before the grants", `local v, err = fs.read("data/a.txt"); eq(v, nil)
		eq(err, "fs: not available while the script's main chunk runs (call it from init or a callback)")`}})
}

// TestFSWriteThroughLinks: fs.write writes a symbolic link's target, as
// fs.read and fs.append read and write it. It replaced the link with a
// file (the temporary file was renamed over the link): the target kept its
// old content and the link was gone. A link out of the root stays refused,
// and is left as it was.
func TestFSWriteThroughLinks(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "secret", "s.txt"), "secret")
	mkfile(t, filepath.Join(dir, "out", "real.txt"), "old")
	if err := os.Chmod(filepath.Join(dir, "out", "real.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "out", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"out/ln":       "real.txt",
		"out/ln2":      "ln", // a link to a link
		"out/d":        "a/b",
		"out/a/b/up":   "../x.txt", // through out/d: a/b/../x.txt, a/x.txt
		"out/dangling": "new.txt",
		"out/esc":      "../secret/s.txt",
		"out/escnew":   "../secret/p.txt",
		"out/abs":      filepath.Join(dir, "out", "real.txt"),
		"out/loop":     "loop",
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	L, _ := newLua(t, newLib(t, dir, `{ write = { "out" } }`))
	runCases(t, L, []luaCase{
		{"through a link", `eq(fs.write("out/ln", "new"), true); eq(fs.read("out/real.txt"), "new"); eq(fs.read("out/ln"), "new")
			eq(fs.write("out/ln2", "newer"), true); eq(fs.read("out/real.txt"), "newer")
			eq(fs.append("out/ln", "+"), true); eq(fs.read("out/real.txt"), "newer+")`},
		{"a link's .. after a linked folder", `eq(fs.write("out/d/up", "x"), true); eq(fs.read("out/a/x.txt"), "x"); eq(fs.exists("out/x.txt"), false)`},
		{"a dangling link", `eq(fs.write("out/dangling", "made"), true); eq(fs.read("out/new.txt"), "made")`},
		{"out of the root", `local v, err = fs.write("out/esc", "x"); eq(v, nil); eq(err, "fs: out/esc escapes its root")
			v, err = fs.write("out/escnew", "x"); eq(v, nil); eq(err, "fs: out/escnew escapes its root")
			v, err = fs.write("out/abs", "x"); eq(v, nil); eq(err, "fs: out/abs escapes its root")`},
		{"a loop", `local v, err = fs.write("out/loop", "x"); eq(v, nil); eq(err:sub(1, 14), "fs: out/loop: ")`},
	})
	for link, target := range links {
		if got, err := os.Readlink(filepath.Join(dir, link)); err != nil || got != target {
			t.Errorf("link %s: %q, %v; want it left to %q", link, got, err, target)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "out", "real.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("real.txt: %v, %v; want its permissions kept (0600)", fi.Mode(), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "secret", "s.txt")); err != nil || string(b) != "secret" {
		t.Errorf("secret/s.txt changed: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "secret", "p.txt")); err == nil {
		t.Error("a write escaped through a symbolic link")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "out"))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

// TestFSListFollowsLinks: an entry of fs.list says what fs.stat of it says.
// A link was described as itself (dir = false for a link to a folder, the
// size of the link's text) where fs.stat, fs.read and fs.list follow it. A
// link that dangles or leads out of the root still describes itself.
func TestFSListFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	mkfile(t, filepath.Join(dir, "secret", "s.txt"), "secret")
	mkfile(t, filepath.Join(dir, "data", "sub", "b.txt"), "beta")
	mkfile(t, filepath.Join(dir, "data", "a.txt"), "alpha")
	for link, target := range map[string]string{
		"data/dirlink":  "sub",
		"data/filelink": "a.txt",
		"data/esc":      "../secret",
		"data/dangling": "nothing",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	L, _ := newLua(t, newLib(t, dir, `{ read = { "data" } }`))
	runCases(t, L, []luaCase{
		{"list agrees with stat", `local byName = {}
			for _, e in ipairs(fs.list("data")) do byName[e.name] = e end
			for _, name in ipairs({ "a.txt", "sub", "dirlink", "filelink" }) do
				local e, s = byName[name], fs.stat("data/" .. name)
				eq(e.dir, s.dir, name .. ".dir"); eq(e.size, s.size, name .. ".size"); eq(e.modified, s.modified, name .. ".modified")
			end
			eq(byName.dirlink.dir, true); eq(byName.filelink.size, 5)
			eq(byName.esc.dir, false); eq(byName.esc.size, #"../secret")
			eq(byName.dangling.dir, false); eq(byName.dangling.size, #"nothing")
			eq(#fs.list("data/dirlink"), 1)`},
	})
}
