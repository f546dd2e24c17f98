package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// Sessions across restarts (Config.SessionsFile, serve --sessions-file).
// Shutdown suspends every route (mcp.Handler.Suspend: each session's
// transport part, and its state frozen by luavm; the tasks that are over)
// and writes what it saved to the file; New reads the file once the scripts
// are mounted, removes it, and gives each route its sessions and tasks back
// (mcp.Handler.Resume, ResumeTasks) before anything is served. The file is
// removed before the sessions resume: a process that dies later must not
// bring back states older than what its clients since saw.
//
// The sessions and tasks of a route no script serves when the file is read
// (its script failed to load, or was moved aside) wait in Host.waiting:
// they resume when a script is mounted on their route (a fixed script, with
// Config.Watch), and are saved again at shutdown otherwise, so a script
// broken across a restart loses none of them.

// sessionsFormat names the file's format; sessionsVersion is its version.
const (
	sessionsFormat  = "luamcp-sessions"
	sessionsVersion = 1
)

// sessionsFile is the content of Config.SessionsFile.
type sessionsFile struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Saved   time.Time `json:"saved"`
	// Routes holds the saved sessions by route path.
	Routes map[string][]mcp.SavedSession `json:"routes"`
	// Tasks holds the routes' saved tasks that are not a session's, by
	// route path (absent in files of before tasks).
	Tasks map[string][]mcp.SavedTask `json:"tasks,omitempty"`
}

// saveSessions writes the sessions the mounts saved (saved[i] is mounts[i]'s)
// to the sessions file, replacing it whole: a reader never sees half of it.
// The file holds session ids, which are bearer secrets, and the sessions'
// data: only its owner may read it.
//
// The routes' waiting sessions and tasks (Host.waiting) are written beside
// them: they wait on in the next process.
func (h *Host) saveSessions(mounts []*mount, saved [][]mcp.SavedSession, waiting map[string]*savedRoute) error {
	f := sessionsFile{Format: sessionsFormat, Version: sessionsVersion, Saved: time.Now().UTC(),
		Routes: map[string][]mcp.SavedSession{}, Tasks: map[string][]mcp.SavedTask{}}
	n, tasks := 0, 0
	add := func(path string, s []mcp.SavedSession, t []mcp.SavedTask) {
		if len(s) > 0 {
			f.Routes[path] = append(f.Routes[path], s...)
			n += len(s)
		}
		if len(t) > 0 {
			f.Tasks[path] = append(f.Tasks[path], t...)
			tasks += len(t)
		}
	}
	for i, m := range mounts {
		add(m.opts.Path, saved[i], m.handler.SavedTasks())
	}
	for path, w := range waiting {
		add(path, w.sessions, w.tasks)
	}
	path := h.cfg.SessionsFile
	if n == 0 && tasks == 0 {
		h.logger.Info("no session to save", "file", path)
		return nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("saving sessions: %w", err)
	}
	if err := writeFileAtomic(path, b, 0o600); err != nil {
		return fmt.Errorf("saving sessions: %w", err)
	}
	h.logger.Info("sessions saved", "file", path, "sessions", n, "tasks", tasks)
	return nil
}

// writeFileAtomic writes b to a new file beside path, syncs it and renames
// it over path.
func writeFileAtomic(path string, b []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails once renamed
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// removeLeftovers removes what writeFileAtomic left of path when the process
// died while it wrote (a second signal, a kill): a file that names no one's
// sessions any more, but holds their bearer ids. os.CreateTemp named it
// "." + base + "." and digits.
func (h *Host) removeLeftovers(path string) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+"."
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if err := os.Remove(name); err != nil {
			h.logger.Warn("an unfinished sessions file cannot be removed", "file", name, "err", err)
			continue
		}
		h.logger.Info("an unfinished sessions file removed (the process that wrote it died)", "file", name)
	}
}

// maxBadFiles bounds the unreadable sessions files kept aside (badName).
const maxBadFiles = 100

// badName is where an unreadable sessions file at path is set aside:
// path.bad, or path.bad.1, .2 and so on when those are taken, so that a
// second unreadable file does not replace the first (each may hold sessions
// someone wants back). Past maxBadFiles the last name is reused.
func badName(path string) string {
	name := path + ".bad"
	for i := 1; i < maxBadFiles; i++ {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		name = path + ".bad." + strconv.Itoa(i)
	}
	return name
}

// savedRoute is what the sessions file held for one route.
type savedRoute struct {
	sessions []mcp.SavedSession
	tasks    []mcp.SavedTask
}

// resumeSessions gives the mounted routes back the sessions of the sessions
// file, if there is one, and removes it; those of a route no script serves
// now wait for one (Host.waiting). A file that cannot be read is set aside
// (renamed with a ".bad" suffix) and logged: the server starts without its
// sessions, and the file stays for whoever wants to look at it.
func (h *Host) resumeSessions() {
	path := h.cfg.SessionsFile
	if path == "" {
		return
	}
	h.removeLeftovers(path)
	f, err := readSessions(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		bad := badName(path)
		if rerr := os.Rename(path, bad); rerr != nil {
			err = errors.Join(err, rerr)
			bad = path
		}
		h.logger.Error("saved sessions not resumed: the file is unreadable", "file", bad, "err", err)
		return
	}
	if err := os.Remove(path); err != nil {
		h.logger.Error("saved sessions not resumed: the file cannot be removed (it would bring them back again)", "file", path, "err", err)
		return
	}
	routes := make(map[string]*savedRoute, len(f.Routes))
	at := func(route string) *savedRoute {
		if routes[route] == nil {
			routes[route] = &savedRoute{}
		}
		return routes[route]
	}
	for route, s := range f.Routes {
		at(route).sessions = s
	}
	for route, t := range f.Tasks {
		at(route).tasks = t
	}
	// All under h.mu (resuming runs no Lua): a change that mounts a route
	// meanwhile finds its sessions waiting, or resumed.
	h.mu.Lock()
	defer h.mu.Unlock()
	byPath := make(map[string]*mount, len(h.mounts))
	for _, m := range h.mounts {
		byPath[m.opts.Path] = m
	}
	for _, route := range slices.Sorted(maps.Keys(routes)) {
		if m := byPath[route]; m != nil {
			h.resumeRoute(m, routes[route])
			continue
		}
		w := routes[route]
		h.waiting[route] = w
		h.logger.Warn("saved sessions wait: no script serves their route now; they resume when one is mounted on it, and are saved again at shutdown",
			"path", route, "sessions", len(w.sessions), "tasks", len(w.tasks))
	}
}

// resumeRoute gives mount m the saved sessions and tasks of its route. It
// runs with h.mu held, before m's route serves.
func (h *Host) resumeRoute(m *mount, w *savedRoute) {
	route := m.opts.Path
	if len(w.sessions) > 0 {
		n := m.handler.Resume(context.Background(), w.sessions)
		h.logger.Info("sessions resumed", "path", route, "sessions", n, "saved", len(w.sessions))
	}
	if len(w.tasks) > 0 {
		n := m.handler.ResumeTasks(w.tasks)
		h.logger.Info("tasks resumed", "path", route, "tasks", n, "saved", len(w.tasks))
	}
}

// checkSessionsFile fails when the sessions file could not be written at
// shutdown: by then the sessions are closed (their terminate not run), and a
// file that cannot be written would lose them all. "" needs no check.
func checkSessionsFile(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("sessions file %s is not a regular file", path)
	}
	probe, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("sessions file: its folder is not writable: %w", err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// readSessions reads and checks a sessions file.
func readSessions(path string) (*sessionsFile, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	// Session ids are bearer secrets: a file others may read has given
	// them away, and one others may write could plant sessions. Saving
	// writes 0600; anything else was changed since (Windows has no such
	// bits: its ACLs are the folder's).
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("reading %s: its mode is %#o, others may read or write it: the session ids in it are no longer secret (a saved file is 0600)", filepath.Base(path), perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f sessionsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	if f.Format != sessionsFormat || f.Version != sessionsVersion {
		return nil, fmt.Errorf("reading %s: format %q version %d, want %q version %d", filepath.Base(path), f.Format, f.Version, sessionsFormat, sessionsVersion)
	}
	return &f, nil
}
