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
