package hostlib

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// A procGroup is the processes a program exec.run started may make: on
// Windows a job object the child is put in before it runs its first
// instruction (it starts suspended), so that no descendant is made outside
// it; the job kills what it holds when its last handle closes. A descendant
// cannot break away: the job does not allow it.
type procGroup struct {
	job windows.Handle
}

// groupAttr starts the child suspended, and without a console window of
// its own (its standard streams are pipes).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW}
}

// ntResumeProcess resumes every thread of a process: os.StartProcess does not
// give the main thread's handle, which ResumeThread would need.
var ntResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

// adopt puts the suspended child p in a new job, then lets it run.
func adopt(p *os.Process) (procGroup, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return procGroup{}, fmt.Errorf("job object: %w", err)
	}
	g := procGroup{job: job}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		g.release()
		return procGroup{}, fmt.Errorf("job object: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_SUSPEND_RESUME, false, uint32(p.Pid))
	if err != nil {
		g.release()
		return procGroup{}, fmt.Errorf("open process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		g.release()
		return procGroup{}, fmt.Errorf("job object: %w", err)
	}
	if status, _, _ := ntResumeProcess.Call(uintptr(h)); status != 0 {
		g.release()
		return procGroup{}, fmt.Errorf("resume: NTSTATUS %#x", status)
	}
	return g, nil
}

// terminate ends the job's processes: Windows has no signal a program
// without a console could catch first.
func (g procGroup) terminate() { g.kill() }

// kill ends whatever is left in the job.
func (g procGroup) kill() { windows.TerminateJobObject(g.job, 1) }

// release closes the job, which kills what it still holds.
func (g procGroup) release() { windows.CloseHandle(g.job) }

// reap does nothing on Windows: a process there leaves no zombie to wait
// for.
func (g procGroup) reap() {}

// childEnv are the variables of the process environment a child inherits:
// on Windows also those many programs cannot start without.
var childEnv = []string{"PATH", "PATHEXT", "SYSTEMROOT", "WINDIR", "COMSPEC", "TEMP", "TMP", "USERPROFILE"}

// platformRefusedEnv are variables exec.run's env may not set on Windows
// besides refusedEnv: where a program looks for the programs it starts and
// the DLLs it loads, and which file names are programs. Any file with the
// right name is a program on Windows (no execute bit), so these would let a
// script run files that another script wrote.
var platformRefusedEnv = []string{"PATH", "PATHEXT", "COMSPEC"}

// envName is a variable's name as Windows compares it: regardless of case.
func envName(name string) string { return strings.ToUpper(name) }

// errExecWithWrite refuses route.allow granting both exec and write on
// Windows.
var errExecWithWrite = errors.New("route.allow grants both exec and write: refused on Windows, " +
	"where any file with the right name is a program (no execute bit), so the script could write " +
	"a program or a DLL and have the granted program run it")

// checkGrantsForPlatform refuses grants unsafe on Windows alone: exec with
// write.
func checkGrantsForPlatform(g *Grants) error {
	if len(g.Exec) > 0 && len(g.Write) > 0 {
		return errExecWithWrite
	}
	return nil
}
