package mcp

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
