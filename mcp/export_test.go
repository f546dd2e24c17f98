package mcp

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"time"
)

// QueueLen reports how many buffered requests wait in the queue of session
// sid (the running one excluded), or -1 for an unknown session. Tests use it
// to order requests deterministically.
func QueueLen(h *Handler, sid string) int {
	s := h.reg.get(sid)
	if s == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queuedLocked()
}

// StatelessRunning reports how many stateless calls (tasks included) run on
// h.
func (h *Handler) StatelessRunning() int {
	h.statelessMu.Lock()
	defer h.statelessMu.Unlock()
	return len(h.statelessCalls)
}

// SetClock makes the 2026-07-28 era's requestState checks read the time from
// clock until the returned function restores the real one.
func SetClock(clock func() time.Time) (restore func()) {
	now = clock
	return func() { now = time.Now }
}

// SignForward returns the headers with which node forwards a request
// (method, path, session) that client made on scheme ("http" or "https"),
// signed with key at the time at.
func SignForward(key []byte, node, method, path, session, client, scheme string, at time.Time) http.Header {
	r := &http.Request{Method: method, URL: &url.URL{Path: path}, Header: http.Header{"Mcp-Session-Id": {session}}, RemoteAddr: client}
	if scheme == "https" {
		r.TLS = &tls.ConnectionState{}
	}
	h := http.Header{}
	signForward(h, key, node, r, at)
	return h
}

// SessionSlots reports the places under the process's session cap that are
// taken (live sessions, and those being initialized or resumed).
func (h *Hub) SessionSlots() int64 { return h.sessionSlots.n.Load() }

// BodyBytes reports the bytes the bodies being read hold against the body
// budget.
func (h *Hub) BodyBytes() int64 { return h.bodies.n.Load() }

// RequestCost is what a request waiting for its body counts against the
// body budget.
var RequestCost = requestCost

// StallAfter is how long a request waits for its body before a full body
// budget may cut it.
const StallAfter = stallAfter

// QueueBacking reports the length and capacity of the slice that holds
// session sid's queue (served slots included), or -1, -1 for an unknown
// session.
func QueueBacking(h *Handler, sid string) (n, c int) {
	s := h.reg.get(sid)
	if s == nil {
		return -1, -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue), cap(s.queue)
}

// TaskOutcomeBytes reports the bytes of the outcomes h's tasks keep.
func (h *Handler) TaskOutcomeBytes() int {
	h.tasks.mu.Lock()
	defer h.tasks.mu.Unlock()
	return h.tasks.kept
}
