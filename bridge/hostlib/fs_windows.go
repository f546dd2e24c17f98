package hostlib

import "golang.org/x/sys/windows"

// openDirOnly makes an open fail unless it names a directory: on Windows
// no flag does, and none is needed (a named pipe is not a file of a
// folder).
const openDirOnly = 0

// The errors fsFail names, as the platform reports them.
var (
	errNotEmpty error = windows.ERROR_DIR_NOT_EMPTY
	errNotDir   error = windows.ERROR_DIRECTORY
)
