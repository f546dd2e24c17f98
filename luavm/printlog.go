package luavm

import (
	"sync"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
)

// A script's print writes to the server log (script-api.md), and a script
// may print in a loop: one call printing 60 KB lines logged 110 MB a second,
// some 66 GB over the default call timeout of 10 minutes, to whatever disk
// the log goes to. Each value is cut at logcap.Max, but nothing bounded the
// lines. So the lines of one version are metered in bytes, as a token
// bucket: a burst of printBurst, then printRate a second; a line past it is
// dropped, and the drops are reported at most once per logcap.Every, with
// their count, as the crashes of one place are (crashlog.go). Debugging
// output, a few lines a call, never meets the bound.
const (
	printBurst = 1 << 20  // bytes a version may print at once
	printRate  = 64 << 10 // bytes a second after that
	// printLineCost is what a line costs besides its text: a record's
	// time, level and tags, so that empty lines are not free.
	printLineCost = 64
)

// printLog meters the print lines of one [Version].
type printLog struct {
	mu     sync.Mutex
	tokens float64   // bytes that may be printed now
	last   time.Time // when tokens was last brought up to date; zero: never
	// dropped throttles the warning that reports dropped lines.
	dropped logcap.Throttle
}

// allow reports whether a line of n bytes may be logged at now, and if so
// takes its cost from the bucket.
func (p *printLog) allow(n int, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last.IsZero() {
		p.tokens = printBurst
	} else if d := now.Sub(p.last); d > 0 {
		p.tokens = min(printBurst, p.tokens+d.Seconds()*printRate)
	}
	p.last = now
	cost := float64(n + printLineCost)
	if p.tokens < cost {
		return false
	}
	p.tokens -= cost
	return true
}
