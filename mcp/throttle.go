package mcp

import (
	"sync"
	"time"
)

// refusalLogEvery bounds how often a warning any client can trigger (a
// refusal at one of the process-wide caps, a forward without a valid
// signature, an answer to no request) is logged: a flood of them must not
// flood the log as well (each line costs more than the refusal it reports).
const refusalLogEvery = 10 * time.Second

// logThrottle lets a log line through at most once per interval and counts
// the ones it held back meanwhile, for the next line to report.
type logThrottle struct {
	mu   sync.Mutex
	next time.Time // when the next line may go; zero: at once
	held int       // lines held back since the last one let through
}

// allow reports whether a line may be logged at now and, if so, how many were
// held back before it; it then holds lines back until now+every.
func (t *logThrottle) allow(now time.Time, every time.Duration) (ok bool, held int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.next) {
		t.held++
		return false, 0
	}
	held, t.held = t.held, 0
	t.next = now.Add(every)
	return true, held
}
