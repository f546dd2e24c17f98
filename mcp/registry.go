package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// registry holds the live sessions of one route and enforces max_sessions.
type registry struct {
	mu       sync.RWMutex
	sessions map[string]*session
	reserved int  // initializes between reserve and add/release
	max      int  // 0 = unlimited
	closed   bool // the route is shutting down: no new sessions
}

func newRegistry(max int) *registry {
	return &registry{sessions: make(map[string]*session), max: max}
}

// reserve claims a slot for a session being initialized. It fails when the
// route is at capacity or shutting down. The count is exact: concurrent
// initializes cannot overshoot the cap.
func (r *registry) reserve() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (r.max > 0 && len(r.sessions)+r.reserved >= r.max) {
		return false
	}
	r.reserved++
	return true
}

// release gives back a reserved slot whose initialize failed.
func (r *registry) release() {
	r.mu.Lock()
	r.reserved--
	r.mu.Unlock()
}

// add turns a reservation into a live session. It fails when the route
// started shutting down meanwhile.
func (r *registry) add(s *session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reserved--
	if r.closed {
		return false
	}
	r.sessions[s.id] = s
	return true
}

func (r *registry) remove(s *session) {
	r.mu.Lock()
	if r.sessions[s.id] == s {
		delete(r.sessions, s.id)
		if len(r.sessions) == 0 {
			r.sessions = make(map[string]*session) // a map never shrinks (see Hub.remove)
		}
	}
	r.mu.Unlock()
}

func (r *registry) get(id string) *session {
	r.mu.RLock()
	s := r.sessions[id]
	r.mu.RUnlock()
	return s
}

func (r *registry) count() int {
	r.mu.RLock()
	n := len(r.sessions)
	r.mu.RUnlock()
	return n
}

// close stops new sessions and returns the live ones.
func (r *registry) close() []*session {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	all := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		all = append(all, s)
	}
	return all
}

// newSessionID returns 32 lowercase hex characters from 16 random bytes.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
