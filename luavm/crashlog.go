package luavm

import (
	"sync"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
)

// A client can make a buggy script crash at request rate (a tool that
// raises on some argument), and each crash is logged with its traceback: a
// flood of one bug must not become a flood of the log. So the crashes of one
// place of a version (callback and the script position that raised) are
// logged at most once per crashLogEvery; the next line logged for that place
// counts the ones held back. Distinct places are distinct bugs: each is
// logged at once.
const (
	crashLogEvery = logcap.Every
	// maxCrashPlaces bounds the places remembered for one version. A
	// version's places are bounded by its code, but a script that raises
	// without a position (error(msg, 0)) is keyed by callback only; past
	// the bound, the places not seen within crashLogEvery are forgotten,
	// and if none is, the new place shares one throttle with the others
	// past it.
	maxCrashPlaces = 256
)

// crashLog throttles the crash lines of one [Version].
type crashLog struct {
	mu sync.Mutex
	// places maps "callback\x00position" to its throttle. Invariant: at
	// most maxCrashPlaces entries, plus the overflow place "".
	places map[string]*logcap.Throttle
}

// allow reports whether a crash of place at now is logged and, if so, how
// many of that place were held back before it.
func (l *crashLog) allow(place string, now time.Time) (ok bool, held int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.places[place]
	if p == nil {
		if l.places == nil {
			l.places = make(map[string]*logcap.Throttle)
		}
		if len(l.places) >= maxCrashPlaces {
			l.forgetQuiet(now)
		}
		if len(l.places) >= maxCrashPlaces {
			place = ""
			p = l.places[place]
		}
		if p == nil {
			p = new(logcap.Throttle)
			l.places[place] = p
		}
	}
	return p.Allow(now, crashLogEvery)
}

// forgetQuiet drops the places whose window has passed with nothing held
// back: forgetting them loses no count.
func (l *crashLog) forgetQuiet(now time.Time) {
	for k, p := range l.places {
		if k != "" && p.Quiet(now) {
			delete(l.places, k)
		}
	}
}
