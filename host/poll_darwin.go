package host

import "syscall"

// silentFilesystems names the filesystems (statfs f_fstypename) whose
// folders send kqueue events for changes made on this machine only, not
// for those made by another machine or the host of a virtual machine.
// (Untested here: luamcp's CI runs on Linux; macOS builds are vetted.)
var silentFilesystems = map[string]string{
	"nfs":     "nfs",
	"smbfs":   "smb",
	"afpfs":   "afp",
	"webdav":  "webdav",
	"macfuse": "fuse",
	"osxfuse": "fuse",
	"vboxsf":  "virtualbox shared folder",
	"prl_fs":  "parallels shared folder",
}

// silentFilesystem returns the name of dir's filesystem when it is one that
// delivers no file events for changes made elsewhere.
func silentFilesystem(dir string) (string, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", false
	}
	var name []byte
	for _, c := range st.Fstypename {
		if c == 0 {
			break
		}
		name = append(name, byte(c))
	}
	fs, ok := silentFilesystems[string(name)]
	return fs, ok
}
