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
	// SessionMaxPending caps queued buffered requests per session (default 100).
	SessionMaxPending int
	// SessionKeepAlive is the GET-channel keep-alive period (default 30 s);
	// a negative value disables it.
	SessionKeepAlive time.Duration
	// SessionBufferMax is the number of GET-channel events kept for replay
	// (default 256).
	SessionBufferMax int
	// MaxBodyBytes bounds a POST body (default 4 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// Auth, when set, is called after the loopback and Origin gates. It
	// returns 0 to pass, or the HTTP status to reject with.
	Auth func(ctx context.Context, r *AuthRequest) int
}

// AuthRequest is what the auth hook sees of an HTTP request.
type AuthRequest struct {
	Method     string
	Path       string
	Headers    map[string]string // lower-case names; repeated headers joined with ", "
	RemoteAddr string
}

// Default values of the route options.
const (
	DefaultPageSize          = 50
	DefaultSessionTTL        = 5 * time.Minute
	DefaultRequestTimeout    = 60 * time.Second
	DefaultSessionMaxPending = 100
	DefaultSessionKeepAlive  = 30 * time.Second
	DefaultSessionBufferMax  = 256
	DefaultMaxBodyBytes      = 4 << 20
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
	return o
}
