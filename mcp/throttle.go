package mcp

import "errors"

// Throttled is implemented by an error its source held back from its log
// rather than logged, being one more of a burst it logs once (luavm logs the
// crashes of one place of a script at most once per 10 s, counting the
// others). The transport logs such an error at debug level only, so that
// the throttle is not undone one layer up.
type Throttled interface {
	Throttled() bool
}

// logFailure logs a failure the transport is handed (a call or an init that
// failed) at error level, or at debug level when its source throttled it.
func (h *Handler) logFailure(msg string, err error, args ...any) {
	args = append(args, "err", err)
	var t Throttled
	if errors.As(err, &t) && t.Throttled() {
		h.log.Debug(msg, args...)
		return
	}
	h.log.Error(msg, args...)
}
