package hostlib

import "syscall"

// dieWithParent makes the kernel kill the program exec.run starts when
// luamcp itself dies (SIGKILL, the OOM killer, a crash), when no call is
// left to end it. Its descendants in the group are not reached: the signal
// goes to the child alone. (It fires when the thread that started the
// child ends; Go ends no thread but one locked by a goroutine that exits,
// and an unlocked goroutine, which starts children here, never runs on
// one.)
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
