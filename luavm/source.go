package luavm

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxSourceBytes bounds a script file and each module it requires. Source
// files are read whole and compiled in Go, beyond the reach of a state's
// memory budget; a folder of scripts someone else wrote may hold anything.
const MaxSourceBytes = 16 << 20

// ReadSource reads the script file at path: a regular file (a symbolic link
// to one is followed) of at most [MaxSourceBytes]. Anything else is refused
// with an error saying what it is: reading a named pipe would block until a
// writer came (a reload, or the start, would hang on it), and a device such
// as /dev/zero would be read until memory ran out.
func ReadSource(path string) ([]byte, error) {
	return readSource(os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0))
}

// readSourceIn is ReadSource for a file of root (a required module).
func readSourceIn(root *os.Root, name string) ([]byte, error) {
	return readSource(root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0))
}

// readSource reads f, just opened (without blocking, even on a named pipe),
// if it is a regular file of at most MaxSourceBytes. Errors wrap
// [fs.PathError]s, so that a file that does not exist is fs.ErrNotExist.
func readSource(f *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("not a regular file (%s): refused as a script", kind(fi.Mode()))}
	}
	// The size is checked on what is read too: the file may grow meanwhile.
	tooBig := &fs.PathError{Op: "read", Path: f.Name(), Err: fmt.Errorf("larger than %d MiB: refused as a script", MaxSourceBytes>>20)}
	if fi.Size() > MaxSourceBytes {
		return nil, tooBig
	}
	src, err := io.ReadAll(io.LimitReader(f, MaxSourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(src) > MaxSourceBytes {
		return nil, tooBig
	}
	// Editors on Windows (Notepad before 2019, Visual Studio, PowerShell
	// 5's Set-Content -Encoding UTF8) start a UTF-8 file with a byte order
	// mark, which Lua 5.1 reads as an invalid token.
	return bytes.TrimPrefix(src, utf8BOM), nil
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// kind names the type of a file that is not a regular one.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
