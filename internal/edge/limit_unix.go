//go:build unix

package edge

import "syscall"

// DefaultMaxConnections returns the cap used when Config.MaxConnections is 0:
// three quarters of the process's open-file limit, so that a quarter stays
// for everything else, and at least 64.
func DefaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return unlimitedMaxConnections
	}
	return max(64, int(rl.Cur)*3/4)
}
