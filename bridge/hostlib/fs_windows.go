package hostlib

import (
	"strings"

	"golang.org/x/sys/windows"
)

// openDirOnly makes an open fail unless it names a directory: on Windows
// no flag does, and none is needed (a named pipe is not a file of a
// folder).
const openDirOnly = 0

// The errors fsFail names, as the platform reports them.
var (
	errNotEmpty error = windows.ERROR_DIR_NOT_EMPTY
	errNotDir   error = windows.ERROR_DIRECTORY
)

// sameName reports whether two components of a path name the same entry:
// regardless of case, as Windows compares names ("Data" and "C:" reach the
// folder granted as "data" on drive "c:"). Only the choice of root uses it:
// what follows the root is opened inside it whatever the case.
func sameName(a, b string) bool { return strings.EqualFold(a, b) }
