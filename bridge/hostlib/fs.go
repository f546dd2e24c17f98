package hostlib

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	lua "github.com/yuin/gopher-lua"
)

// Bounds of the `fs` module.
const (
	defaultReadMax = 64 << 20 // fs.read's default max_bytes
	maxReadMax     = 1 << 30  // the largest max_bytes fs.read accepts
	maxListEntries = 100_000  // entries fs.list returns
	maxPathLen     = 4096     // bytes of a path argument
)

// fsModule is `fs`: files inside the folders route.allow.read and
// route.allow.write grant. A relative path is taken from the scripts folder;
// the first root that holds it confines it (os.Root), so neither ".." nor a
// symbolic link can lead out of it.
var fsModule = module{
	funcs: []function{
		{"read", fsRead},
		{"write", func(s *State, L *lua.LState) int { return fsWrite(s, L, false) }},
		{"append", func(s *State, L *lua.LState) int { return fsWrite(s, L, true) }},
		{"list", fsList},
		{"stat", fsStat},
		{"remove", fsRemove},
		{"mkdir", fsMkdir},
		{"exists", fsExists},
	},
}

// access is what a file operation needs from a root.
type access uint8

const (
	readAccess  access = iota // any root
	writeAccess               // a write root
)

// fsPath is a script's path resolved to the root that confines it.
type fsPath struct {
	shown string // as the script wrote it, for messages
	root  Root
	rel   string // inside root, slash-separated, "." for the root itself
}

// resolve finds the root that holds path. Matching is on the path as
// written: "data/../x" lies in root "data" and escapes it, rather than being
// read as "x".
func (l *Lib) resolve(path string, need access) (fsPath, error) {
	p := fsPath{shown: path}
	switch {
	case path == "":
		return p, errors.New("fs: empty path")
	case len(path) > maxPathLen:
		return p, fmt.Errorf("fs: path longer than %d bytes", maxPathLen)
	case strings.IndexByte(path, 0) >= 0:
		return p, errors.New("fs: path contains a NUL byte")
	}
	full := path
	if !filepath.IsAbs(path) {
		dir, err := filepath.Abs(l.dir)
		if err != nil {
			return p, fmt.Errorf("fs: %v", err)
		}
		full = dir + string(filepath.Separator) + path
	}
	comps := splitPath(full)
	try := func(roots []Root) bool {
		for _, r := range roots {
			rc := splitPath(r.Path)
			if len(comps) >= len(rc) && slices.EqualFunc(comps[:len(rc)], rc, sameName) {
				p.root, p.rel = r, strings.Join(comps[len(rc):], "/")
				return true
			}
		}
		return false
	}
	found := try(l.grants.Write)
	if !found && need == readAccess {
		found = try(l.grants.Read)
	}
	if !found {
		if need == writeAccess && try(l.grants.Read) {
			return p, fmt.Errorf("fs: %s is not in a writable folder (route.allow.write)", path)
		}
		return p, fmt.Errorf("fs: %s is outside the allowed folders (route.allow.read, route.allow.write)", path)
	}
	if p.rel == "" {
		p.rel = "."
	}
	if !filepath.IsLocal(p.rel) {
		return p, fmt.Errorf("fs: %s escapes its root", path)
	}
	return p, nil
}

// splitPath returns the components of an absolute path, dropping empty ones
// and "." but keeping "..".
func splitPath(path string) []string {
	var out []string
	for c := range strings.SplitSeq(filepath.ToSlash(path), "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// open resolves argument 1 and opens its root; on failure it pushes nil,
// message and returns a nil root. The caller closes the root.
func (s *State) open(L *lua.LState, need access) (*os.Root, fsPath) {
	path := L.CheckString(1)
	lib := s.granted(L, "fs")
	if lib == nil {
		return nil, fsPath{}
	}
	p, err := lib.resolve(path, need)
	if err != nil {
		fail(L, "%v", err)
		return nil, p
	}
	root, err := os.OpenRoot(p.root.Path)
	if err != nil {
		fail(L, "fs: root folder %s cannot be opened", p.root.Name)
		return nil, p
	}
	return root, p
}

// errNotRegular refuses writes to anything but a regular file.
var errNotRegular = errors.New("not a regular file")

// fsFail pushes the failure of an operation on p.
func fsFail(L *lua.LState, p fsPath, err error) int {
	var msg string
	switch {
	case errors.Is(err, errNotEmpty): // before ErrExist, which it also is
		msg = "folder not empty"
	case errors.Is(err, fs.ErrNotExist):
		msg = "not found"
	case errors.Is(err, fs.ErrExist):
		msg = "already exists"
	case errors.Is(err, fs.ErrPermission):
		msg = "permission denied"
	case errors.Is(err, errNotDir):
		msg = "not a folder"
	case errors.Is(err, syscall.EISDIR):
		msg = "is a folder"
	case strings.Contains(err.Error(), "path escapes from parent"): // os.Root's refusal, unexported
		return fail(L, "fs: %s escapes its root", p.shown)
	default:
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			err = pe.Err // the os.Root-relative path would add nothing
		case errors.As(err, &le):
			err = le.Err // a rename's: it names the temporary file
		}
		msg = err.Error()
	}
	return fail(L, "fs: %s: %s", p.shown, msg)
}

// fs.read(path [, {max_bytes=}]) -> the file's bytes | nil, message
func fsRead(s *State, L *lua.LState) int {
	opts := optTable(L, 2)
	onlyOptions(L, opts, "fs.read", "max_bytes")
	max := intField(L, opts, "fs.read", "max_bytes", defaultReadMax, 0, maxReadMax)
	root, p := s.open(L, readAccess)
	if root == nil {
		return 2
	}
	defer root.Close()
	// O_NONBLOCK: opening a FIFO must not wait for a writer (a call in Go
	// cannot be interrupted); anything but a regular file is refused below.
	f, err := root.OpenFile(p.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fsFail(L, p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fsFail(L, p, err)
	}
	if fi.IsDir() {
		return fail(L, "fs: %s is a folder", p.shown)
	}
	if !fi.Mode().IsRegular() {
		return fail(L, "fs: %s is not a regular file", p.shown)
	}
	if fi.Size() > max {
		return fail(L, "fs: %s is larger than max_bytes (%d)", p.shown, max)
	}
	free := room(L, max)
	if fi.Size() > free {
		return fail(L, "%v", budgetError(L, "fs", fi.Size()))
	}
	b, err := io.ReadAll(io.LimitReader(chunkReader{s.ctx(), f}, free+1))
	if err != nil {
		checkContext(L) // a cancelled call ends, as everywhere
		return fsFail(L, p, err)
	}
	if int64(len(b)) > max {
		return fail(L, "fs: %s is larger than max_bytes (%d)", p.shown, max)
	}
	if err := keep(L, "fs", len(b)); err != nil {
		return fail(L, "%v", err)
	}
	L.Push(lua.LString(b))
	return 1
}

// fs.write(path, data) and fs.append(path, data) -> true | nil, message. Both
// create the missing parent folders. A write is atomic: the data goes to a
// temporary file in the same folder, which then replaces the file.
func fsWrite(s *State, L *lua.LState, appending bool) int {
	data := L.CheckString(2)
	root, p := s.open(L, writeAccess)
	if root == nil {
		return 2
	}
	defer root.Close()
	if p.rel == "." {
		return fail(L, "fs: %s is a folder", p.shown)
	}
	if dir := filepath.Dir(p.rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				err = errNotDir // the parent is a file: as a read under it says
			}
			return fsFail(L, p, err)
		}
	}
	var err error
	if appending {
		err = appendFile(root, p.rel, data)
	} else {
		err = replaceFile(s.ctx(), root, p.rel, data)
	}
	if err != nil {
		checkContext(L) // a cancelled call ends, as everywhere
		return fsFail(L, p, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// appendFile appends data to rel in one write, whatever the call's context:
// an append cut short would leave half a record, and it syncs nothing that
// could make it slow.
func appendFile(root *os.Root, rel, data string) error {
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return errors.Join(err, errNotRegular)
	}
	_, err = f.WriteString(data)
	return errors.Join(err, f.Close())
}

// replaceFile writes data to rel atomically, keeping the permissions of the
// file it replaces. When ctx ends first, rel is left as it was
// (fs_cancel.go). A symbolic link is written through, as read and append
// read and write its target: the rename replaces the target, not the link.
func replaceFile(ctx context.Context, root *os.Root, rel, data string) error {
	rel, err := linkTarget(root, rel)
	if err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if fi, err := root.Stat(rel); err == nil {
		if fi.IsDir() {
			return syscall.EISDIR
		}
		perm = fi.Mode().Perm()
	}
	var suffix [6]byte
	rand.Read(suffix[:])
	// The temporary file is named after the file, unless that would make
	// its name longer than a folder takes (255 bytes) when the file's is not.
	// rel is not cleaned: a link's target is read from the link's folder,
	// and os.Root takes a ".." after a linked folder as the kernel does.
	dir, base := splitLast(rel)
	if len(base) > 200 {
		base = ""
	}
	tmp := dir + "." + base + ".tmp-" + hex.EncodeToString(suffix[:])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	err = writeContext(ctx, f, data)
	var synced <-chan struct{}
	if err == nil {
		synced, err = syncContext(ctx, f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		removeTemp(root, tmp, synced)
	}
	return err
}

// maxLinkHops bounds the links linkTarget follows, as the kernel's
// (Linux: 40) does.
const maxLinkHops = 40

// linkTarget returns the path that a write to rel replaces: rel, or, while
// rel names a symbolic link, the path the link leads to, read from the
// link's folder. A link out of the root is refused as a read through it is;
// a dangling one leads to the file the write creates.
func linkTarget(root *os.Root, rel string) (string, error) {
	for range maxLinkHops {
		fi, err := root.Lstat(rel)
		if err != nil || fi.Mode().Type() != fs.ModeSymlink {
			return rel, nil
		}
		if _, err := root.Stat(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err // out of the root, or a loop
		}
		target, err := root.Readlink(rel)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
			// os.Root refuses it even when it names a place inside.
			_, err := root.Stat(rel)
			return "", cmp.Or(err, errEscapes)
		}
		dir, _ := splitLast(rel)
		rel = dir + target
	}
	return "", syscall.ELOOP
}

// errEscapes is a path that leads out of its root.
var errEscapes = errors.New("path escapes from parent")

// splitLast splits a path after its last separator: the folder, with the
// separator, and the name.
func splitLast(rel string) (dir, name string) {
	i := strings.LastIndexAny(rel, "/"+string(filepath.Separator))
	return rel[:i+1], rel[i+1:]
}

// fs.list(dir) -> { {name=, dir=, size=, modified=}, ... } sorted by name |
// nil, message
func fsList(s *State, L *lua.LState) int {
	root, p := s.open(L, readAccess)
	if root == nil {
		return 2
	}
	defer root.Close()
	// O_NONBLOCK and openDirOnly: a named pipe is refused (ENOTDIR), not
	// opened, which would wait for a writer beyond cancellation.
	f, err := root.OpenFile(p.rel, os.O_RDONLY|syscall.O_NONBLOCK|openDirOnly, 0)
	if err != nil {
		return fsFail(L, p, err)
	}
	defer f.Close()
	if openDirOnly == 0 { // the platform opened whatever it was
		if st, err := f.Stat(); err != nil || !st.IsDir() {
			return fsFail(L, p, cmp.Or(err, errNotDir))
		}
	}
	var entries []fs.DirEntry
	for {
		batch, err := f.ReadDir(1024)
		entries = append(entries, batch...)
		if len(entries) > maxListEntries {
			return fail(L, "fs: %s has more than %d entries", p.shown, maxListEntries)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fsFail(L, p, err)
		}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	// The names are the strings of the listing (its tables count as they
	// are made): 100,000 of up to 255 bytes each.
	names := 0
	for _, e := range entries {
		names += len(e.Name())
	}
	if err := keep(L, "fs", names); err != nil {
		return fail(L, "%v", err)
	}
	out := L.CreateTable(len(entries), 0)
	for _, e := range entries {
		t := L.CreateTable(0, 4)
		t.RawSetString("name", lua.LString(e.Name()))
		fi, err := e.Info()
		if e.Type() == fs.ModeSymlink {
			// An entry says what fs.stat of it says: a link to a folder is
			// a folder a script may list. A link that dangles or leads out
			// of the root describes itself.
			if target, terr := root.Stat(p.rel + "/" + e.Name()); terr == nil {
				fi, err = target, nil
			}
		}
		if err == nil {
			t.RawSetString("dir", lua.LBool(fi.IsDir()))
			t.RawSetString("size", lua.LNumber(fi.Size()))
			t.RawSetString("modified", lua.LNumber(fi.ModTime().Unix()))
		} else {
			t.RawSetString("dir", lua.LBool(e.IsDir()))
		}
		out.Append(t)
	}
	L.Push(out)
	return 1
}

// fs.stat(path) -> {size=, dir=, modified=} | nil, "not found" | nil, message.
// A missing path is the one failure stat is asked about, and host-api.md
// gives its message verbatim, without the module's name: a script tests
// err == "not found". Other failures name the module as everywhere else.
func fsStat(s *State, L *lua.LState) int {
	root, p := s.open(L, readAccess)
	if root == nil {
		return 2
	}
	defer root.Close()
	fi, err := root.Stat(p.rel)
	if errors.Is(err, fs.ErrNotExist) {
		L.Push(lua.LNil)
		L.Push(lua.LString("not found"))
		return 2
	}
	if err != nil {
		return fsFail(L, p, err)
	}
	t := L.CreateTable(0, 3)
	t.RawSetString("size", lua.LNumber(fi.Size()))
	t.RawSetString("dir", lua.LBool(fi.IsDir()))
	t.RawSetString("modified", lua.LNumber(fi.ModTime().Unix()))
	L.Push(t)
	return 1
}

// fs.remove(path) -> true | nil, message: a file, or an empty folder.
func fsRemove(s *State, L *lua.LState) int {
	root, p := s.open(L, writeAccess)
	if root == nil {
		return 2
	}
	defer root.Close()
	if p.rel == "." {
		return fail(L, "fs: %s is a root folder: it cannot be removed", p.shown)
	}
	if err := root.Remove(p.rel); err != nil {
		return fsFail(L, p, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// fs.mkdir(path) -> true | nil, message; parents are created too, and an
// existing folder is fine.
func fsMkdir(s *State, L *lua.LState) int {
	root, p := s.open(L, writeAccess)
	if root == nil {
		return 2
	}
	defer root.Close()
	if err := root.MkdirAll(p.rel, 0o755); err != nil {
		return fsFail(L, p, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// fs.exists(path) -> boolean | nil, message (when the path is not allowed)
func fsExists(s *State, L *lua.LState) int {
	root, p := s.open(L, readAccess)
	if root == nil {
		return 2
	}
	defer root.Close()
	_, err := root.Stat(p.rel)
	switch {
	case err == nil:
		L.Push(lua.LTrue)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotDir):
		// Under a file (data/a.txt/x), nothing exists either.
		L.Push(lua.LFalse)
	default:
		return fsFail(L, p, err)
	}
	return 1
}
