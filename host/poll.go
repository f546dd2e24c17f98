package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Some folders deliver no file events: NFS and SMB shares, the Windows
// drives of WSL 2 (9p), many FUSE mounts. The kernel accepts the watches
// and then reports nothing, so without help edits there are never applied.
// The watcher then also polls ([Config.WatchPoll]): every period it looks at
// the folder and hands what changed since the last look to the same path
// as file events (debounce, links, apply).

// DefaultPollInterval is the period of the polling that serving a folder
// on a filesystem without file events turns on by itself.
const DefaultPollInterval = time.Second

// maxPollEntries bounds one look at the folder: a folder of scripts holds
// a few files; one that holds more than this (a mistaken --dir) is looked
// at in part, with a warning.
const maxPollEntries = 20_000

// pollStamp is what polling compares of a path between two looks.
type pollStamp struct {
	mod  time.Time
	size int64
	mode fs.FileMode
}

// stampOf is the stamp of fi.
func stampOf(fi fs.FileInfo) pollStamp {
	return pollStamp{mod: fi.ModTime(), size: fi.Size(), mode: fi.Mode()}
}

// pollLook returns the stamps of what in dir may change what is served:
// the .lua files and the folders, hidden ones aside, as the watcher sees
// them (dir may be a link). A link is stamped with what it leads to, so
// that a change behind it (a ConfigMap's swap of ..data) shows as a change
// of the link; a linked folder is not walked. full is false when the look
// stopped at maxPollEntries. stamps is nil when dir cannot be read: a deploy
// between its two renames, a share that is down for a moment. That look
// says nothing (taken as "everything is gone", it would unmount every
// script and end every session).
func pollLook(dir string) (stamps map[string]pollStamp, full bool) {
	dir = filepath.Clean(dir)
	root := walkRoot(dir)
	if _, err := os.ReadDir(root); err != nil {
		return nil, false
	}
	stamps = make(map[string]pollStamp)
	full = true
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		path = filepath.Clean(path)
		if err != nil || path == dir {
			return nil
		}
		if len(stamps) >= maxPollEntries {
			full = false
			return filepath.SkipAll
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && d.Type()&os.ModeSymlink == 0 && !strings.HasSuffix(d.Name(), ".lua") {
			return nil
		}
		fi, err := os.Stat(path) // through a link
		if err != nil {
			return nil // a dangling link is no file: as if absent
		}
		if !fi.IsDir() && !strings.HasSuffix(d.Name(), ".lua") {
			return nil
		}
		stamps[path] = stampOf(fi)
		return nil
	})
	return stamps, full
}

// pollChanges returns the paths new, gone or changed from before to after.
func pollChanges(before, after map[string]pollStamp) []string {
	var changed []string
	for p, s := range after {
		if b, ok := before[p]; !ok || !b.mod.Equal(s.mod) || b.size != s.size || b.mode != s.mode {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p)
		}
	}
	return changed
}
