package host

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// silentFilesystem returns a name for dir's volume when it is a network
// one: a mapped drive or a UNC path (a share, WSL's \\wsl$ folders). Change
// notifications there depend on the server, and WSL's send none.
func silentFilesystem(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	root, err := windows.UTF16PtrFromString(filepath.VolumeName(abs) + `\`)
	if err != nil {
		return "", false
	}
	if windows.GetDriveType(root) == windows.DRIVE_REMOTE {
		return "network drive (a share, WSL's \\\\wsl$ folders)", true
	}
	return "", false
}
