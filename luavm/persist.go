package luavm

import (
	"context"
	"fmt"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/mcp"
)

// Saving sessions across a restart (serve --sessions-file). The transport
// saves what it owns of a session (its id, the client's capabilities, its
// subscriptions, its event numbers); the script's part is the committed
// state, frozen with hibernation's codec (hibernate.go). A saved session
// resumes asleep: its next method wakes it on a warm state of the version
// then current, as after hibernation, and module-level variables start
// afresh. terminate runs for neither: the session has not ended.

var (
	_ mcp.Saver   = (*session)(nil)
	_ mcp.Resumer = (*Script)(nil)
)

// Save returns the session's committed state, frozen; the transport then
// closes the session with no reason, so terminate does not run. A state that
// cannot be frozen (it holds a function, a coroutine, a userdata) is an
// error, and the transport ends that session as usual.
func (ss *session) Save() ([]byte, error) {
	if !ss.owned {
		return nil, fmt.Errorf("%s: a stateless request has no session to save", ss.script.name)
	}
	ss.work.Lock() // a migration may be under way
	defer ss.work.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case ss.closed:
		return nil, errClosed
	case phase(ss.phase.Load()) == asleep:
		return ss.frozen, nil
	}
	b, err := ss.v.codec.Freeze(ss.state)
	if err != nil {
		return nil, fmt.Errorf("%s: the session's state cannot be saved: %w", ss.script.name, err)
	}
	return b, nil
}

// Resume makes a session of the current version from a state Save returned,
// under the id and capabilities it had; it sleeps until its first method.
// The capabilities must still be served by the current version's callbacks,
// and state must be a frozen form; no Lua runs.
func (s *Script) Resume(ctx context.Context, sessionID string, has mcp.Capabilities, state []byte) (mcp.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ver := s.current()
	if sessionID == "" {
		return nil, fmt.Errorf("%s: resuming a session needs its id", s.name)
	}
	if err := capabilityGap(ver.defines, has); err != nil {
		return nil, fmt.Errorf("%s: the session cannot resume: the script %w", s.name, err)
	}
	// Checked now, not when the first method wakes it: a state that does
	// not thaw would fail every method of the session.
	if err := bridge.CheckFrozen(state); err != nil {
		return nil, fmt.Errorf("%s: the session cannot resume: its state: %w", s.name, err)
	}
	ss := &session{script: s, id: sessionID, s: ver, owned: true, has: has, state: lua.LNil, frozen: state}
	ss.phase.Store(uint32(asleep))
	ss.lastRun.Store(clock())
	if !s.track(ss) {
		return nil, fmt.Errorf("%s: script closed", s.name)
	}
	return ss, nil
}
