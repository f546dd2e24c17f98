package host

import (
	"errors"
	"fmt"
	"os"
)

// Two processes given one sessions file would each write it whole at their
// shutdown, and the second would replace the first's sessions without a
// word: both log "sessions saved", and the first's clients find nothing at
// the next start. So a process holds a lock on FILE.lock from its start to
// the end of its shutdown, and one that cannot take it does not start. The
// lock is the kernel's (flock, LockFileEx): it goes with the process, however
// the process ends, and the file it is taken on stays (removing it would let
// a third process lock a new file while the second still holds the old).

// errSessionsFileInUse is the cause of lockSessionsFile's error when another
// process holds the lock.
var errSessionsFileInUse = errors.New("another process uses it")

// lockSessionsFile takes the lock of sessions file path, or fails at once
// when another process holds it. Closing the file returned releases it.
func lockSessionsFile(path string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sessions file: its lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errSessionsFileInUse) {
			return nil, fmt.Errorf("sessions file %s: %w (%s is locked): give each process its own file", path, err, name)
		}
		return nil, fmt.Errorf("sessions file: locking %s: %w", name, err)
	}
	return f, nil
}

// unlockSessions releases the lock New took, if it took one.
func (h *Host) unlockSessions() {
	if h.sessionsLock != nil {
		h.sessionsLock.Close()
		h.sessionsLock = nil
	}
}
