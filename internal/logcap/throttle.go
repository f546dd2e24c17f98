package logcap

import (
	"sync"
	"time"
)

// Every is how often, at most, a kind of line that a client can trigger at
// will is logged (a refusal at a cap, a failed TLS handshake, a forward to a
// node gone, a crash of one place of a script): the first at once, then one
// per period, counting those held back. Each line costs more than what it
// reports, so a flood of them must not flood the log as well.
const Every = 10 * time.Second

// Throttle lets a kind of log line through at most once per interval and
// counts the lines it held back meanwhile, for the next line let through to
// report. A client can trigger some warnings at will (a refusal at a cap, a
// crash of a script on some argument): a flood of them must not become a
// flood of the log, and the count keeps the log honest about how many there
// were.
//
// The zero Throttle lets the first line through. It is safe for concurrent
// use.
type Throttle struct {
	mu   sync.Mutex
	next time.Time // when the next line may go; zero: at once
	held int       // lines held back since the last one let through
}

// Allow reports whether a line may be logged at now and, if so, how many
// were held back before it; it then holds lines back until now+every.
func (t *Throttle) Allow(now time.Time, every time.Duration) (ok bool, held int) {
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

// Quiet reports whether t, at now, holds no line back and would let the
// next one through: forgetting it would lose no count.
func (t *Throttle) Quiet(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.held == 0 && !now.Before(t.next)
}
