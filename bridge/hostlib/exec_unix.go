//go:build unix

package hostlib

import (
	"os"
	"syscall"
)

// A procGroup is the processes a program exec.run started may make: on Unix
// its process group (the child leads a new one), on Windows a job object. A
// descendant that leaves the group (setsid) is out of its reach.
type procGroup struct {
	pgid int
}

// groupAttr makes the child lead a new process group (and, on Linux, die
// with luamcp: dieWithParent).
func groupAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(a)
	return a
}

// adopt returns the group of a child started with groupAttr.
func adopt(p *os.Process) (procGroup, error) {
	return procGroup{pgid: p.Pid}, nil
}

// terminate asks the group to end (SIGTERM).
func (g procGroup) terminate() { syscall.Kill(-g.pgid, syscall.SIGTERM) }

// kill ends whatever is left of the group (SIGKILL).
func (g procGroup) kill() { syscall.Kill(-g.pgid, syscall.SIGKILL) }

// reap waits for the members of the group that became luamcp's children
// when their parent died: the kernel gives orphans to PID 1 or the nearest
// child subreaper, and when luamcp is that (the main process of a
// container), nobody else reaps them and each call that killed some left
// zombies until the process ids ran out. It waits only for processes of
// this group, so it never takes the exit status of another call's child,
// and returns at once (ECHILD) when luamcp is not their reaper. Call it once
// the child was waited for and the group killed; it blocks while a killed
// member is still dying, so it runs on a goroutine of its own.
func (g procGroup) reap() {
	for {
		if _, err := syscall.Wait4(-g.pgid, nil, 0, nil); err != nil && err != syscall.EINTR {
			return
		}
	}
}

// release frees what the group holds in this process: nothing on Unix.
func (g procGroup) release() {}

// childEnv are the variables of the process environment a child inherits.
var childEnv = []string{"PATH", "HOME", "LANG"}

// platformRefusedEnv are variables exec.run's env may not set on this
// platform besides refusedEnv: none on Unix.
var platformRefusedEnv []string

// envName is a variable's name as the platform compares it: exactly, on
// Unix.
func envName(name string) string { return name }

// checkGrantsForPlatform refuses grants unsafe on this platform alone:
// none on Unix.
func checkGrantsForPlatform(*Grants) error { return nil }
