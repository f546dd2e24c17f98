package host

import "syscall"

// silentFilesystems names the filesystems (statfs magic numbers) that take
// inotify watches and deliver no events for changes made elsewhere: by
// another machine, or by the other side of a virtual machine.
var silentFilesystems = map[uint32]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x01021997: "9p (WSL 2's Windows drives, shared folders of virtual machines)",
	0x65735546: "fuse",
	0x786f4256: "virtualbox shared folder",
}

// silentFilesystem returns the name of dir's filesystem when it is one that
// delivers no file events.
func silentFilesystem(dir string) (string, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", false
	}
	name, ok := silentFilesystems[uint32(st.Type)]
	return name, ok
}
