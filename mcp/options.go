package mcp

import (
	"context"
	"time"
)

// Options are a route's settings (script-api.md "Route options"). The zero
// value of a field means its default; use Defaults to fill them in.
type Options struct {
	// Path is the mount path, e.g. "/mcp/hello".
	Path string
	// Sessions selects session mode (Mcp-Session-Id, GET channel, DELETE, state).
	Sessions bool
	// Origins is the allowlist of exact Origin values; a request without
	// Origin passes, any other Origin gets 403.
	Origins []string
	// AllowRemoteAccess lets non-loopback peers and Host values in.
	AllowRemoteAccess bool
	// PageSize is the page size of every */list result (default 50).
	PageSize int
	// MaxSessions caps live sessions on the route; 0 means unlimited.
	MaxSessions int
	// SessionTTL reaps a session idle that long (default 5 minutes).
	SessionTTL time.Duration
	// RequestTimeout is how long a buffered caller waits (default 60 s).
	RequestTimeout time.Duration
	// SessionMaxPending caps the calls of a session that wait for its state
	// (queued behind the running one) or run beside it on a snapshot
	// (ConcurrentTools); past it a request gets -32603 "Session overloaded"
	// (default 100).
	SessionMaxPending int
	// ConcurrentTools names the tools whose calls run on a snapshot of the
	// session's state, in parallel with the session's other calls; what
	// they change in that copy is dropped. Every other tools/call runs in
	// order on the session's own state, with or without a progress token.
	ConcurrentTools []string
	// SessionKeepAlive is the GET-channel keep-alive period (default 30 s);
	// a negative value disables it.
	SessionKeepAlive time.Duration
	// SessionBufferMax is the number of GET-channel events kept for replay
	// (default 256).
	SessionBufferMax int
	// SessionBufferBytes bounds the bytes of the events a session keeps for
	// replay (default 4 MiB): its GET channel's, each resumable POST
	// stream's, and those of all its resumable POST streams together. The
	// oldest events go first; past the streams' joint bound, the oldest
	// stream is forgotten (it can no longer be resumed). The process's
	// replay budget bounds all sessions together ([Hub.SetReplayBudget]).
	SessionBufferBytes int
	// MaxBodyBytes bounds a POST body (default 4 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// BodyTimeout bounds the time reading a POST body may take (default 30 s):
	// a client that sends it slower loses its connection.
	BodyTimeout time.Duration
	// WriteTimeout bounds each write to a client: an answer, one SSE event
	// or keep-alive (default 10 s). A client that does not take a write in
	// that time is dropped: its stream closes, its session stays usable.
	WriteTimeout time.Duration
	// CacheTTL is the ttlMs the 2026-07-28 era puts on lists, reads and
	// server/discover: how long a client may reuse the answer (default 0:
	// not at all). Route option cache_ttl_ms.
	CacheTTL time.Duration
	// CacheScope is the cacheScope sent beside ttlMs: "private" (the
	// default: the answer may hold per-user data) or "public". Route option
	// cache_scope.
	CacheScope string
	// OAuth, when set, protects the route with bearer tokens (route option
	// oauth): it is checked after the loopback and Origin gates, before
	// Auth, by Verifier.
	OAuth *OAuth
	// Verifier checks the bearer tokens of an OAuth route. The host sets it
	// (it is not a route option); an OAuth route without one answers 500.
	Verifier TokenVerifier
	// Auth, when set, is called after the loopback, Origin and OAuth gates.
	// It returns 0 to pass, or the HTTP status to reject with.
	Auth func(ctx context.Context, r *AuthRequest) int
}

// AuthRequest is what the auth hook sees of an HTTP request.
type AuthRequest struct {
	Method     string
	Path       string
	Headers    map[string]string // lower-case names; repeated headers joined with ", "
	RemoteAddr string
	// Auth is the request's verified access token on an OAuth route, else
	// nil.
	Auth *AuthInfo
}

// Default values of the route options.
const (
	DefaultPageSize           = 50
	DefaultSessionTTL         = 5 * time.Minute
	DefaultRequestTimeout     = 60 * time.Second
	DefaultSessionMaxPending  = 100
	DefaultSessionKeepAlive   = 30 * time.Second
	DefaultSessionBufferMax   = 256
	DefaultMaxBodyBytes       = 4 << 20
	DefaultSessionBufferBytes = 4 << 20
	DefaultBodyTimeout        = 30 * time.Second
	DefaultWriteTimeout       = 10 * time.Second
	DefaultCacheScope         = "private"
)

// Defaults returns o with every unset field set to its default.
func (o Options) Defaults() Options {
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.SessionMaxPending <= 0 {
		o.SessionMaxPending = DefaultSessionMaxPending
	}
	if o.SessionKeepAlive == 0 {
		o.SessionKeepAlive = DefaultSessionKeepAlive
	}
	if o.SessionBufferMax <= 0 {
		o.SessionBufferMax = DefaultSessionBufferMax
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.SessionBufferBytes <= 0 {
		o.SessionBufferBytes = DefaultSessionBufferBytes
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.CacheScope == "" {
		o.CacheScope = DefaultCacheScope
	}
	return o
}

// ValidCacheScope reports whether scope is a cacheScope of the 2026-07-28
// era: "public" (the answer holds no per-user data) or "private".
func ValidCacheScope(scope string) bool { return scope == "public" || scope == "private" }
