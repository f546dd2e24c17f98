//go:build unix

package hostlib

import "syscall"

// openDirOnly makes an open fail unless it names a directory.
const openDirOnly = syscall.O_DIRECTORY

// The errors fsFail names, as the platform reports them.
var (
	errNotEmpty error = syscall.ENOTEMPTY
	errNotDir   error = syscall.ENOTDIR
)

// sameName reports whether two components of a path name the same entry:
// byte for byte, as Unix filesystems compare names.
func sameName(a, b string) bool { return a == b }
