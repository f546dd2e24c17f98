package luavm

import (
	"context"
	"fmt"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/internal/logcap"
)

// Hibernation. A Lua state costs tens of KiB however small the session state
// it holds, so a session-mode session that ran no callback for the route's
// session_hibernate_ms gives its state back:
//
//   - Its committed state is frozen (bridge.Codec.Freeze: a few bytes for a
//     small state) and its Lua state closed, or given back to the pool's
//     fresh lane when it is pristine (recycle.go). The session stays tracked and
//     open: the transport knows nothing of it, and keeps the session's id,
//     GET channel, subscriptions, channel membership and log level, which
//     live in package mcp.
//   - Its next method wakes it: a warm state of the current version (from the
//     pool's fresh lane, like initialize's) thaws the frozen state, and the
//     method runs on it as if nothing happened. Module-level variables start
//     afresh, as after a hot reload.
//   - A state that cannot be frozen (it holds a function, a coroutine, a
//     userdata) keeps its session awake; hibernation is tried again after the
//     session's next call.
//
// A session's life: awake (it holds a Lua state) -> asleep (it holds the
// frozen state) -> awake ... -> closed. Every change of phase holds the
// session's work lock (one owner at a time) and its mu (against Snapshot).
//
// One goroutine per script (the sweeper) finds the idle sessions. The call
// path pays one clock read and one atomic store per method (session.end).

// phase is where a session-mode session is between awake and asleep.
type phase uint32

const (
	awake  phase = iota // v holds the session's state
	asleep              // v is nil, frozen holds the state
)

// epoch is the origin of session clocks: clock() is monotonic.
var epoch = time.Now()

// clock returns the time since epoch, in nanoseconds.
func clock() int64 { return int64(time.Since(epoch)) }

// sweepPeriod is how often the sweeper looks for idle sessions, when they
// hibernate after d: a quarter of d, within [minSweep, maxSweep]. A session
// hibernates between d and d + the period after its last call.
func sweepPeriod(d time.Duration) time.Duration {
	return min(max(d/4, minSweep), maxSweep)
}

const (
	minSweep = 5 * time.Millisecond
	maxSweep = 5 * time.Second
)

// sweeper hibernates the idle sessions of one script.
type sweeper struct {
	start sync.Once
	stop  chan struct{}
	done  chan struct{}
	found []*session // scratch of sweep
}

// startSweeper starts the script's sweeper, once.
func (s *Script) startSweeper() {
	s.sweep.start.Do(func() {
		s.sweep.stop = make(chan struct{})
		s.sweep.done = make(chan struct{})
		go s.sweepLoop()
	})
}

// stopSweeper stops the sweeper, if it runs, and waits for it to end.
func (s *Script) stopSweeper() {
	s.sweep.start.Do(func() {}) // a sweeper that did not start never will
	if s.sweep.stop != nil {
		close(s.sweep.stop)
		<-s.sweep.done
	}
}

func (s *Script) sweepLoop() {
	defer close(s.sweep.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		d := s.current().hibernate // a reload may change it
		period := maxSweep
		if d > 0 {
			period = sweepPeriod(d)
		}
		t.Reset(period)
		select {
		case <-s.sweep.stop:
			return
		case <-t.C:
		}
		if d > 0 {
			s.hibernateIdle(d)
		}
	}
}

// hibernateIdle hibernates the sessions idle for d or more.
func (s *Script) hibernateIdle(d time.Duration) {
	cut := clock() - int64(d)
	s.mu.Lock()
	found := s.sweep.found[:0]
	for ss := range s.sessions {
		if phase(ss.phase.Load()) == awake && ss.lastRun.Load() <= cut {
			found = append(found, ss)
		}
	}
	s.mu.Unlock()
	for i, ss := range found {
		select {
		case <-s.sweep.stop:
			clear(found[i:])
			s.sweep.found = found[:0]
			return
		default:
		}
		if !ss.hibernate(cut) && ss.behind() {
			// A commit may have found the session's lock held here, and
			// left its move to whoever held it.
			ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout())
			ss.followIdle(ctx)
			cancel()
		}
		found[i] = nil
	}
	s.sweep.found = found[:0]
}

// hibernate freezes the session's state and closes its Lua state, if it is
// awake, idle since cut, and not in use. It never waits: a session in use is
// not idle.
func (ss *session) hibernate(cut int64) bool {
	if !ss.work.TryLock() {
		return false
	}
	defer ss.work.Unlock()
	last := ss.lastRun.Load()
	if last > cut || phase(ss.phase.Load()) != awake || last == ss.unfrozen || ss.isClosed() {
		return false
	}
	ss.mu.Lock() // a Snapshot may be walking the state too (session.begin)
	frozen, err := ss.v.codec.Freeze(ss.state)
	if err != nil {
		ss.mu.Unlock()
		ss.unfrozen = last
		ss.script.logger.Debug("idle session stays awake: its state cannot be frozen", "session", logcap.Session(ss.id), "error", err)
		return false
	}
	if ss.closed {
		ss.mu.Unlock()
		return false
	}
	v := ss.v
	ss.v, ss.state, ss.frozen = nil, lua.LNil, frozen
	ss.phase.Store(uint32(asleep))
	ss.mu.Unlock()
	v.s.pool.recycle(v) // closed unless pristine (recycle.go)
	ss.script.logger.Debug("session hibernated", "session", logcap.Session(ss.id), "bytes", len(frozen))
	return true
}

// wake gives a sleeping session a warm state of the current version holding
// its frozen state. It runs with ss.work held.
func (ss *session) wake(ctx context.Context) error {
	ver := ss.script.current()
	v, err := ver.pool.get(ctx)
	if err != nil {
		return fmt.Errorf("%s: waking the session: no Lua state: %w", ss.script.name, err)
	}
	state, err := v.codec.Thaw(ss.frozen)
	if err != nil { // a bug: Freeze wrote it
		v.close()
		return fmt.Errorf("%s: waking the session: %w", ss.script.name, err)
	}
	v.overBudget(ss.id, v.account(state))
	if ss.s != ver {
		// A reload committed while the session hibernated and found it busy.
		ss.movedAsleep(ver)
		if err := v.checkCapabilities(ss.has); err != nil {
			ss.script.logger.Warn("the new version lacks callbacks the session advertised", "session", logcap.Session(ss.id), "error", err)
		}
	}
	ss.mu.Lock()
	ss.s, ss.v, ss.state, ss.frozen = ver, v, state, nil
	ss.phase.Store(uint32(awake))
	ss.mu.Unlock()
	ss.script.logger.Debug("session woke", "session", logcap.Session(ss.id))
	return nil
}

// movedAsleep moves a sleeping session to version target: its frozen state
// needs no copy, it wakes on target. Its old lists are gone with its Lua
// state, so its client is told that every list it has may have changed.
// It runs with ss.work held.
func (ss *session) movedAsleep(target *Version) {
	ss.mu.Lock()
	ss.s = target
	ss.mu.Unlock()
	p := target.pushes
	if p == nil {
		return
	}
	for _, lc := range listChanges {
		if lc.need(ss) {
			p.Notify(ss.id, lc.method, nil)
		}
	}
}
