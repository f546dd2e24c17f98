package host

import (
	"os"
	"path/filepath"
	"strings"
)

// A scripts folder may hold symbolic links: a server file or a folder of
// modules linked from elsewhere, and, on Kubernetes, the layout of a
// ConfigMap volume, where every file is a link through "..data", a hidden
// link to a hidden folder that an update replaces in one rename. An edit
// behind a link changes what the link names, but the kernel reports the
// target's path (a file under a folder the link leads to), or, for the swap
// of "..data", a hidden name the watcher otherwise ignores; nothing names
// the link. So each batch of changed paths is also read through the
// folder's own links ([throughLinks]): a path at or under a link's target
// adds the same path under the link, and a path the target lies under (a
// folder or a link on its way, such as "..data") adds the link itself.
//
// Only the links directly in the folder are followed; a link deeper down
// is read like a file. A server file may lead anywhere ([Host.watch]
// watches the folder of one that leads outside); a module is read through
// the folder's os.Root, which refuses links leading outside it.

// folderLink is a symbolic link directly in the scripts folder.
type folderLink struct {
	path string // the link, in the folder
	// raw is the link's own text, read against the folder when relative:
	// the first step of its way.
	raw string
	// target is where it leads: every link on the way resolved, or, when
	// that fails (a dangling link, the moment its target is replaced), the
	// link's own text read against the folder.
	target string
}

// folderLinks returns the symbolic links directly in dir, hidden ones
// aside (they are the means, not the names: "..data").
func folderLinks(dir string) []folderLink {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var links []folderLink
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		raw, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if !filepath.IsAbs(raw) {
			raw = filepath.Join(dir, raw)
		}
		raw = filepath.Clean(raw)
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			target = raw
		}
		links = append(links, folderLink{path: p, raw: raw, target: target})
	}
	return links
}

// throughLinks returns paths with, for each, the paths it changes through
// links: a path at or under a link's target adds the same path under the
// link, and a path the target lies at or under adds the link. Each path is
// compared as it was reported and with its own links resolved. A hidden
// name directly in one of dirs is reported only for the links it leads to
// (the watcher ignores hidden files otherwise): it is replaced by them.
func throughLinks(dirs map[string]bool, links []folderLink, paths []string) []string {
	out := make([]string, 0, len(paths))
	seen := make(map[string]bool, len(paths))
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		forms := []string{p}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			forms = append(forms, r)
		}
		for _, l := range links {
			for _, f := range forms {
				if rel, ok := under(f, l.target); ok {
					add(filepath.Join(l.path, rel))
				} else if _, ok := under(l.target, f); ok {
					add(l.path)
				}
			}
		}
		if !hiddenIn(dirs, p) {
			add(p)
		}
	}
	return out
}

// under reports whether path is base or lies under it, and where.
func under(path, base string) (rel string, ok bool) {
	if path == base {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(path, base+string(filepath.Separator)); ok {
		return rest, true
	}
	return "", false
}

// hiddenIn reports whether p names a hidden entry directly in one of dirs.
func hiddenIn(dirs map[string]bool, p string) bool {
	return dirs[filepath.Dir(p)] && strings.HasPrefix(filepath.Base(p), ".")
}
