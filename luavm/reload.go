package luavm

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/internal/logcap"
)

// Hot reload. A Script's current version changes with Commit; what runs on
// the old one finishes there:
//
//   - Init (new sessions, stateless requests, Describe) and Snapshot take
//     states of the current version at once.
//   - A live session moves when it next runs Lua: before its next call, or
//     at once when it is idle (Commit moves the idle ones; a call that ends
//     behind the current version moves its session right after). Moving
//     copies the committed state into a fresh state of the new version,
//     closes the old state, and tells the client which lists changed.
//   - The old version's pool is closed; states it lent out are closed when
//     they come back.

// migrateTimeout bounds the list callbacks the moves of one commit run, and
// those of a session moved after its call: 10 s, or migrateOverride.
func migrateTimeout() time.Duration {
	if d := migrateOverride.Load(); d != 0 {
		return time.Duration(d)
	}
	return 10 * time.Second
}

// migrateOverride, when not 0, is migrateTimeout (tests shorten it; atomic,
// as goroutines of earlier tests may still read it).
var migrateOverride atomic.Int64

// listChanges are the list notifications, by the callbacks whose output they
// cover.
var listChanges = []struct {
	method string
	cbs    []int
	need   func(*session) bool
}{
	{"notifications/tools/list_changed", []int{cbTools}, func(*session) bool { return true }},
	{"notifications/resources/list_changed", []int{cbResources, cbResourceTemplates}, func(ss *session) bool { return ss.has.Resources }},
	{"notifications/prompts/list_changed", []int{cbPrompts}, func(ss *session) bool { return ss.has.Prompts }},
}

// Reload compiles the script's file again and makes it the current version
// (Prepare, then Commit). When it fails to compile or to load, the running
// version is untouched and the error reads "file:line: message".
func (s *Script) Reload() error {
	ver, err := s.Prepare()
	if err != nil {
		return err
	}
	s.Commit(ver)
	return nil
}

// Commit makes ver (from s.Prepare) the current version: new sessions and
// stateless requests use it at once, idle sessions move to it before Commit
// returns, busy ones when their call ends. The previous version's pool is
// closed. Committing to a closed Script discards ver.
func (s *Script) Commit(ver *Version) {
	if ver.Script != s {
		panic("luavm: Commit of another script's version")
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		ver.Discard()
		return
	}
	old := s.cur.Swap(ver)
	old.pool.close()
	s.logger.Debug("new version committed", "sessions", len(s.liveSessions()))
	// One bound for them all: list callbacks that loop cannot hold the
	// commit for migrateTimeout per session.
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout())
	defer cancel()
	sessions := s.liveSessions()
	for _, ss := range sessions {
		ss.followIdle(ctx)
	}
	if ver.hibernate > 0 && len(sessions) > 0 {
		s.mu.Lock()
		if !s.closed {
			s.startSweeper()
		}
		s.mu.Unlock()
	}
}

// track registers a live session-mode session, so that Commit can move it;
// false when the script is closed.
func (s *Script) track(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[ss] = struct{}{}
	if s.current().hibernate > 0 {
		s.startSweeper()
	}
	return true
}

func (s *Script) untrack(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss)
	if len(s.sessions) == 0 {
		s.sessions = make(map[*session]struct{}) // a map never shrinks: give back a peak's buckets
	}
	s.mu.Unlock()
}

func (s *Script) liveSessions() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		list = append(list, ss)
	}
	return list
}

func (ss *session) isClosed() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.closed
}

// behind reports whether the session runs an older version than the
// script's current one (and has not given up on it).
func (ss *session) behind() bool {
	cur := ss.script.current()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return !ss.closed && ss.s != cur && ss.stuck != cur
}

// followIdle moves the session to the current version, under ctx, unless a
// call runs on it (that call's end moves it). It tries again while the
// session is still behind once it let go: a version committed meanwhile found
// the lock held by this very move, and left the session to it.
func (ss *session) followIdle(ctx context.Context) {
	for {
		if !ss.work.TryLock() {
			return
		}
		if ss.isClosed() {
			ss.work.Unlock()
			return
		}
		ss.follow(ctx)
		ss.work.Unlock()
		if !ss.behind() || ctx.Err() != nil {
			return
		}
	}
}

// follow moves the session to the script's current version, if it is behind.
// It runs with ss.work held. A failure is logged and leaves the session where
// it was: for good when the state cannot be moved (it runs its old code until
// the next reload), until its next call when ctx ended first (a commit's
// budget spent by other sessions, a request gone).
func (ss *session) follow(ctx context.Context) {
	target := ss.script.current()
	if ss.s == target || ss.stuck == target {
		return
	}
	if phase(ss.phase.Load()) == asleep {
		ss.movedAsleep(target)
		return
	}
	err := ss.migrate(ctx, target)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		ss.script.logger.Warn("session not moved to the new version yet: its next call moves it", "session", logcap.Session(ss.id), "error", err)
	default:
		ss.mu.Lock() // behind reads it under mu, without work
		ss.stuck = target
		ss.mu.Unlock()
		ss.script.logger.Error("session stays on the previous version of the script", "session", logcap.Session(ss.id), "error", err)
	}
}

// migrate copies the committed state into a fresh state of target, swaps
// the session over to it and sends the list_changed notifications its
// client needs.
func (ss *session) migrate(ctx context.Context, target *Version) error {
	// A state of the new version comes under a bound of its own: ctx is
	// the list callbacks' (a commit's, shared by every session it moves).
	getCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), migrateTimeout())
	nv, err := target.pool.get(getCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("no Lua state of the new version: %w", err)
	}
	ss.mu.Lock() // a Snapshot may be walking the state too (session.begin)
	state, err := ss.v.codec.CopyTo(nv.codec, ss.state)
	ss.mu.Unlock()
	if err != nil {
		nv.close()
		return fmt.Errorf("copying the state: %w", err)
	}
	nv.overBudget(ss.id, nv.account(state))
	if err := nv.checkCapabilities(ss.has); err != nil {
		ss.script.logger.Warn("the new version lacks callbacks the session advertised", "session", logcap.Session(ss.id), "error", err)
	}
	var changed []string
	for _, lc := range listChanges {
		if !lc.need(ss) {
			continue
		}
		// The old version's lists run on a clone of the committed state,
		// but Lua may write what the state shares with the script's module
		// (a table a module-level local holds): under mu, as a Snapshot
		// copies that state under it.
		ss.mu.Lock()
		before, failed := ss.listsOf(ctx, ss.v, ss.state, lc.cbs)
		ss.mu.Unlock()
		after, failedAfter := ss.listsOf(ctx, nv, state, lc.cbs)
		// A list that could not be run (it failed, or ctx ended) may have
		// changed: its client is told to list again.
		if failed || failedAfter || !bytes.Equal(before, after) {
			changed = append(changed, lc.method)
		}
	}

	ss.mu.Lock()
	old := ss.v
	ss.s, ss.v, ss.state = target, nv, state
	ss.mu.Unlock()
	old.close()

	if p := target.pushes; p != nil {
		for _, method := range changed {
			p.Notify(ss.id, method, nil)
		}
	}
	ss.script.logger.Debug("session moved to the new version", "session", logcap.Session(ss.id), "notified", changed)
	return nil
}

// listsOf runs the list callbacks cbs on v with a copy of state (so that
// nothing they do sticks) and returns their encoded results, one after the
// other, and whether one of them failed.
func (ss *session) listsOf(ctx context.Context, v *vm, state lua.LValue, cbs []int) (out []byte, failed bool) {
	for _, cb := range cbs {
		out = append(out, '\n')
		if !v.has(cb) {
			continue
		}
		b, err := v.listJSON(ctx, cb, state)
		if err != nil {
			failed = true
		}
		out = append(out, b...)
	}
	return out, failed
}

// listJSON runs one list callback on a copy of state and encodes its result.
func (v *vm) listJSON(ctx context.Context, cb int, state lua.LValue) ([]byte, error) {
	name := callbackNames[cb]
	if t, ok := state.(*lua.LTable); ok {
		c, err := v.codec.Clone(t)
		if err != nil {
			return nil, err
		}
		state = c
	}
	r, err := v.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer r.end()
	rets, err := r.call(name, v.fns[cb], 1, state)
	if err != nil {
		return nil, err
	}
	return v.codec.Encode(rets[0], name)
}
