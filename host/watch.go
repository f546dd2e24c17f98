package host

import (
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/luamcp/luamcp/luavm"
)

// defaultDebounce is how long the watcher waits after the last event of a
// burst: editors save with several writes, renames and chmods.
const defaultDebounce = 100 * time.Millisecond

// folderCheck is how often the watcher checks that the scripts folder's
// path still names the folder it watches (one stat).
const folderCheck = time.Second

// maxDebounceFactor bounds the wait under a steady stream of events, in
// multiples of the debounce.
const maxDebounceFactor = 10

// A watcher turns file events in the scripts folder, and its sub-folders,
// into batches for Host.apply.
type watcher struct {
	fsw *fsnotify.Watcher
	dir string // the scripts folder, cleaned
	// resolved is dir with its links resolved: a link whose target lies
	// under it leads inside the folder.
	resolved string
	quit     chan struct{}
	done     chan struct{}
	logger   *slog.Logger
	// noEvents: no file watches are added (Config.noEvents).
	noEvents bool
	// folder is the folder dir named when it was last watched: a deploy
	// that replaces it (a rename over it, the swap of a link on its path)
	// leaves the watches on the old one, so the loop checks it every
	// folderCheck. nil once an event said the folder itself moved or went:
	// the next check watches whatever dir names then, even the same folder
	// moved back. Only watch, before the loop starts, and the loop touch it.
	folder os.FileInfo
	// poll is the period of polling (poll.go); 0: none. stamps is what
	// the last look saw; only the loop touches it.
	poll   time.Duration
	stamps map[string]pollStamp
	// linkDirs are the folders whose hidden entries may be the way of a
	// link (links.go), mapped to true: the scripts folder, and the folders
	// outside it that a server file's link leads through, watched too. A
	// folder that could not be watched maps to false (tried once). Only
	// watch, before the loop starts, and the loop touch it.
	linkDirs map[string]bool
}

// watch starts watching the scripts folder and every sub-folder in it.
func (h *Host) watch() (*watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	dir := filepath.Clean(h.cfg.Dir)
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		resolved = dir
	}
	w := &watcher{fsw: fsw, dir: dir, resolved: resolved, quit: make(chan struct{}), done: make(chan struct{}), logger: h.logger,
		linkDirs: map[string]bool{dir: true}}
	w.noEvents = h.cfg.noEvents
	w.folder, _ = os.Stat(dir)
	if !w.noEvents {
		if err := w.addTree(h.cfg.Dir); err != nil {
			fsw.Close()
			return nil, err
		}
		w.links()
	}
	w.poll = h.cfg.WatchPoll
	if w.poll == 0 {
		if fs, silent := silentFilesystem(dir); silent {
			w.poll = DefaultPollInterval
			h.logger.Info("the scripts folder's filesystem sends no file events: looking at it every second", "dir", dir, "filesystem", fs)
		}
	}
	if w.poll > 0 {
		if w.stamps, _ = pollLook(dir); w.stamps == nil {
			w.stamps = map[string]pollStamp{}
		}
	}
	go w.loop(h)
	return w, nil
}

// addTree watches dir and the folders under it, skipping hidden ones. A
// dir that is itself a symbolic link (serve --dir through a link) is
// walked through it: WalkDir does not follow a link, even at its root,
// unless the root names the folder with a trailing separator.
func (w *watcher) addTree(dir string) error {
	dir = filepath.Clean(dir)
	return filepath.WalkDir(walkRoot(dir), func(path string, d fs.DirEntry, err error) error {
		path = filepath.Clean(path)
		if err != nil {
			if path == dir {
				return err
			}
			return nil // a folder gone meanwhile
		}
		if !d.IsDir() {
			return nil
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		return w.fsw.Add(path)
	})
}

// walkRoot is dir as filepath.WalkDir must be given it to walk the folder
// it names: with a trailing separator when dir is a symbolic link.
func walkRoot(dir string) string {
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return dir + string(filepath.Separator)
	}
	return dir
}

// rewatch watches dir and the folders under it once the watcher runs: a
// failure (the system's limit of watches reached: ENOSPC) is logged, since
// edits under the folders it missed go unseen.
func (w *watcher) rewatch(dir string) {
	if err := w.addTree(dir); err != nil {
		w.logger.Warn("watching a folder of the scripts folder failed: edits under it go unseen until a restart", "dir", dir, "err", err)
	}
}

// links returns the scripts folder's links, and watches the folders outside
// it that a link leads through (the folder its text names, and the one its
// target lies in), once each: the kernel reports edits there, and the swap
// of a hidden link on the way, as it does in the scripts folder.
func (w *watcher) links() []folderLink {
	links := folderLinks(w.dir)
	for _, l := range links {
		if _, in := under(l.target, w.resolved); in || w.noEvents {
			continue // the folder's own watches see it
		}
		for _, d := range []string{filepath.Dir(l.raw), filepath.Dir(l.target)} {
			if _, tried := w.linkDirs[d]; tried {
				continue
			}
			err := w.fsw.Add(d)
			if err != nil {
				w.logger.Warn("watching the folder a linked script leads to failed: edits there go unseen", "link", l.path, "dir", d, "err", err)
			}
			w.linkDirs[d] = err == nil
		}
	}
	return links
}

// replaced reports whether the scripts folder's path now names another
// folder than the one watched, and if so watches the new one instead.
func (w *watcher) replaced() bool {
	now, err := os.Stat(w.dir)
	if err != nil || w.folder != nil && os.SameFile(w.folder, now) {
		return false // gone (for now: a deploy between its two renames), or the same
	}
	w.logger.Info("the scripts folder was replaced or moved back: watching it anew", "dir", w.dir)
	w.folder = now
	if r, err := filepath.EvalSymlinks(w.dir); err == nil {
		w.resolved = r
	}
	if !w.noEvents {
		// The old folder's watches go; those of folders outside stay.
		for _, p := range w.fsw.WatchList() {
			if _, in := under(p, w.dir); in {
				_ = w.fsw.Remove(p)
			}
		}
		w.rewatch(w.dir)
	}
	return true
}

// restamp records what paths are now in the last look, so that the next
// look does not report again what file events reported already (a module's
// dependents would reload twice).
func (w *watcher) restamp(paths []string) {
	for _, p := range paths {
		if _, in := under(p, w.dir); !in {
			continue
		}
		if _, ok := w.stamps[p]; !ok && !strings.HasSuffix(p, ".lua") {
			continue // a folder the last look did not see: the next one will
		}
		if fi, err := os.Stat(p); err == nil {
			w.stamps[p] = stampOf(fi)
		} else {
			delete(w.stamps, p)
		}
	}
}

func (w *watcher) stop() {
	close(w.quit)
	<-w.done
}

// loop collects the paths of a burst of events and hands them to the host
// once the folder has been quiet for the debounce period.
func (w *watcher) loop(h *Host) {
	defer close(w.done)
	defer w.fsw.Close()
	pending := make(map[string]struct{})
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var first time.Time
	var tick <-chan time.Time
	if w.poll > 0 {
		t := time.NewTicker(w.poll)
		defer t.Stop()
		tick = t.C
	}
	warnedPartial := false
	check := time.NewTicker(folderCheck)
	defer check.Stop()
	for {
		select {
		case <-w.quit:
			timer.Stop()
			return
		case <-check.C:
			if !w.replaced() {
				continue
			}
			// Everything may have changed: look at all of it, as after
			// lost events.
			if len(pending) == 0 {
				first = time.Now()
			}
			pending[h.cfg.Dir] = struct{}{}
			timer.Reset(h.cfg.Debounce)
		case <-tick:
			stamps, full := pollLook(w.dir)
			if stamps == nil {
				continue // the folder cannot be read now: the next look will tell
			}
			if !full {
				if !warnedPartial {
					warnedPartial = true
					w.logger.Warn("the scripts folder holds too many files to look at them all: edits past the first ones go unseen", "dir", w.dir, "max", maxPollEntries)
				}
				// What this look did not reach is not gone.
				for p, st := range w.stamps {
					if _, seen := stamps[p]; !seen {
						stamps[p] = st
					}
				}
			}
			changed := pollChanges(w.stamps, stamps)
			w.stamps = stamps
			if len(changed) == 0 {
				continue
			}
			if len(pending) == 0 {
				first = time.Now()
			}
			for _, p := range changed {
				pending[p] = struct{}{}
			}
			timer.Reset(h.cfg.Debounce)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			h.logger.Warn("watching the scripts folder", "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// The kernel dropped events: which files changed, and which
				// new folders need a watch, is unknown. Watch the tree again
				// and have apply look at everything (the folder's own path
				// stands for all of it).
				w.rewatch(h.cfg.Dir)
				if len(pending) == 0 {
					first = time.Now()
				}
				pending[h.cfg.Dir] = struct{}{}
				timer.Reset(h.cfg.Debounce)
			}
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			// fsnotify names a file as the folder was given plus its name:
			// "./hello.lua" under ".", where mounts are keyed "hello.lua".
			ev.Name = filepath.Clean(ev.Name)
			if ev.Name == w.dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
				// The folder itself moved or went: its watches are stale.
				// The folder check watches it anew once the path names a
				// folder again, even the same one moved back.
				w.folder = nil
			}
			if !w.relevant(ev) {
				continue
			}
			if len(pending) == 0 {
				first = time.Now()
			}
			pending[ev.Name] = struct{}{}
			wait := h.cfg.Debounce
			if limit := time.Until(first.Add(maxDebounceFactor * h.cfg.Debounce)); limit < wait {
				wait = max(limit, 0)
			}
			timer.Reset(wait)
		case <-timer.C:
			paths := slices.Sorted(maps.Keys(pending))
			clear(pending)
			paths = throughLinks(w.linkDirs, w.links(), paths)
			if w.poll > 0 {
				w.restamp(paths)
			}
			h.apply(paths, nil)
		}
	}
}

// relevant reports whether an event may change what is served: a .lua file
// that is not hidden, or a folder (created, removed or renamed). A new
// folder is watched at once. A hidden folder or link directly in a folder
// of linkDirs (created, removed or renamed) is relevant too: it may be the
// way of a link (throughLinks keeps it only then), but it is not watched.
func (w *watcher) relevant(ev fsnotify.Event) bool {
	base := filepath.Base(ev.Name)
	if strings.HasPrefix(base, ".") {
		if !w.linkDirs[filepath.Dir(ev.Name)] {
			return false
		}
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			return true
		}
		fi, err := os.Lstat(ev.Name)
		return err == nil && (fi.IsDir() || fi.Mode()&os.ModeSymlink != 0)
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			w.rewatch(ev.Name)
			return true
		}
	}
	if strings.HasSuffix(base, ".lua") {
		return true
	}
	// A removed or renamed folder reports its own path, with no suffix.
	return ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
}

// apply brings the mounts in line with a batch of changed paths. A server
// file is mounted, reloaded or unmounted; a path require may name is a module
// (or a folder of modules), and so is a folder: every script that required it
// reloads, and every script that failed to load, or edit that failed to
// reload, is tried again. Any other path changes nothing.
// The scripts folder itself (sent after lost events) stands for every file
// in it: each server file is looked at, and each script that required a
// module reloads. The work runs in the background (Host.change): a script
// that loops while it loads delays only itself, never the watcher or the
// files that follow. done, if not nil, is called once the batch has
// settled.
func (h *Host) apply(paths []string, done func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if done == nil {
		done = func() {}
	}
	if h.closed {
		done()
		return
	}
	files := make(map[string]bool)
	var modules []string
	for _, p := range paths {
		rel, err := filepath.Rel(h.cfg.Dir, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if rel == "." {
			h.rescan(files)
			modules = append(modules, "")
			continue
		}
		if filepath.Dir(rel) == "." && strings.HasSuffix(rel, ".lua") {
			if _, ok := files[p]; !ok {
				files[p] = false
			}
			continue
		}
		if !luavm.ModulePath(filepath.ToSlash(rel)) && !isDir(p) {
			// No require can name it (notes.txt, the rl.lua~ an editor
			// removes after each save, a file a script deletes): it
			// changes no module, and retrying every script that failed
			// would load them again and print their errors again.
			continue
		}
		modules = append(modules, filepath.ToSlash(rel))
	}
	if len(modules) > 0 {
		for _, m := range h.mounts {
			if dependsOn(m.script.Modules(), modules) {
				files[m.route.Script] = true
			}
		}
	}
	// A script that failed, or an edit that did, may need a module that now
	// loads, or a path that is now free.
	retry := len(modules) > 0 || h.freed
	h.freed = false
	h.retry(files, retry)
	if len(files) == 0 {
		done()
		return
	}
	before := h.settled
	h.work.Go(func() {
		defer done()
		h.change(files, false)
		h.changed(before)
	})
}

// Reload applies the scripts folder as it is now, as the watcher does after
// a change it could not pin down: new server files mount, removed ones
// unmount, changed ones reload (their sessions kept), every script that
// requires a module reloads, and the scripts and edits that failed are tried
// again. A removed file is unmounted at once, without the grace the watcher
// gives it (Host.gone). It returns once that has settled. serve calls it on SIGHUP, with or
// without the watcher (--no-watch: changes are applied only then).
func (h *Host) Reload() {
	h.mu.Lock()
	h.reloads++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.reloads--
		h.mu.Unlock()
	}()
	done := make(chan struct{})
	h.apply([]string{h.cfg.Dir}, func() { close(done) })
	<-done
}

// changed calls Config.Changed when something settled since before.
func (h *Host) changed(before uint64) {
	if h.cfg.Changed == nil {
		return
	}
	h.mu.Lock()
	moved := h.settled != before && !h.closed
	h.mu.Unlock()
	if moved {
		h.changedMu.Lock()
		defer h.changedMu.Unlock()
		h.cfg.Changed()
	}
}

// isDir reports whether path names a folder now (one a script's allow may
// grant, created since the script failed for lack of it).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// dependsOn reports whether one of the files required is, or lies under,
// one of the changed paths ("" is the whole folder).
func dependsOn(required, changed []string) bool {
	for _, f := range required {
		for _, c := range changed {
			if c == "" || f == c || strings.HasPrefix(f, c+"/") {
				return true
			}
		}
	}
	return false
}

// rescan adds to files every server file in the folder and every mounted
// one, unforced: plan mounts the new, unmounts the gone and reloads those
// whose content changed. It runs with h.mu held.
func (h *Host) rescan(files map[string]bool) {
	entries, err := os.ReadDir(h.cfg.Dir)
	if err != nil {
		// Gone for a moment (moved away and back, a deploy between its
		// renames, a share down) or for good: either way nothing is known
		// of its files, and taking it for empty would unmount every script
		// and end every session. The watcher looks again when it is back.
		h.logger.Warn("rescanning the scripts folder: it cannot be read, its scripts stay mounted", "err", err)
		return
	}
	for _, e := range entries {
		if isServerFile(e) {
			p := filepath.Join(h.cfg.Dir, e.Name())
			if _, ok := files[p]; !ok {
				files[p] = false
			}
		}
	}
	for file := range h.mounts {
		if _, ok := files[file]; !ok {
			files[file] = false
		}
	}
}
