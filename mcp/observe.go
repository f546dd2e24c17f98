package mcp

import (
	"bytes"
	"errors"
	"strconv"
	"time"
)

// This file is the transport's side of metrics: what it reports, and to
// whom. The transport knows nothing of Prometheus; the host wires an
// Observer that turns these reports into metrics (package
// internal/metrics). Every label a report carries comes from a closed set
// (the method table, the route paths the host mounted, the gates below) or
// from the server (its tools), never from a session or a user.

// An Observer is told what the transport does. Its methods are called on the
// request path, from many goroutines at once: they must be safe for
// concurrent use, fast, and never block. Set it with [Hub.SetObserver].
type Observer interface {
	// Operation reports one request the transport answered (or gave up on).
	Operation(op Operation)
	// SessionEnded reports a session that ended (DELETE, idle expiry,
	// unmount or shutdown) after it lived for lifetime.
	SessionEnded(route string, lifetime time.Duration)
	// Refused reports a request refused by one of the gates before it ran.
	Refused(route string, gate Gate)
	// PushesDropped reports n server pushes that no client will receive.
	PushesDropped(route string, reason DropReason, n int)
	// Forwarded reports a request of a cluster ([Cluster]) that this node
	// forwarded to its session's owner, or served for another node.
	Forwarded(route string, dir Direction)
}

// Direction says which way a forwarded request went ([Observer.Forwarded]).
type Direction string

const (
	// ForwardedOut: this node handed the request to its session's owner.
	ForwardedOut Direction = "out"
	// ForwardedIn: this node served a request another node forwarded (its
	// signature held).
	ForwardedIn Direction = "in"
)

// Operation is one request as an [Observer] sees it. Its fields follow the
// OpenTelemetry semantic conventions for MCP (mcp.server.operation.duration).
type Operation struct {
	// Route is the path of the route that served the request.
	Route string
	// Method is the JSON-RPC method (mcp.method.name): a name of the
	// transport's method table, or [OtherName] for any other.
	Method string
	// Tool is the tool a tools/call named (gen_ai.tool.name), "" for other
	// methods. It is [OtherName] unless the Session found the tool among
	// the ones it lists ([Call.Listed]): a name the client made up (an
	// unknown tool, a call refused or dropped before it reached the server)
	// is no label.
	Tool string
	// ErrorType is "" for success; otherwise the JSON-RPC error code
	// ("-32603"), [ErrorToolError] for a tool result with isError true, or
	// [ErrorCancelled] for a call interrupted before it answered.
	ErrorType string
	// Duration runs from the request's arrival to its answer (queueing in
	// its session included).
	Duration time.Duration
}

// Values of the Operation fields that are not a method, a tool or a code.
const (
	// OtherName stands for a method or a tool name that the client made up.
	OtherName = "_OTHER"
	// ErrorToolError is the error type of a tool result with isError true.
	ErrorToolError = "tool_error"
	// ErrorCancelled is the error type of a request interrupted before it
	// answered: cancelled by the client, its stream lost, its session ended.
	ErrorCancelled = "cancelled"
)

// Gate names what refused a request ([Observer.Refused]).
type Gate string

// The gates.
const (
	GateRemoteAccess     Gate = "remote_access"     // a non-loopback peer or Host on a route without allow_remote_access (403)
	GateOrigin           Gate = "origin"            // an Origin not in the route's origins (403)
	GateForward          Gate = "forward"           // a request marked as forwarded by a node whose signature does not hold (403)
	GateAuth             Gate = "auth"              // the route's auth hook (its status)
	GateOAuth            Gate = "oauth"             // the route's oauth: no, a bad or an insufficient token (400, 401, 403, 503)
	GateRouteSessions    Gate = "route_sessions"    // an initialize past the route's max_sessions (503)
	GateProcessSessions  Gate = "process_sessions"  // an initialize past the process's cap (503)
	GateProcessListens   Gate = "process_listens"   // a subscriptions/listen past the process's cap (503)
	GateProcessStateless Gate = "process_stateless" // a request without a session past the process's cap on open ones (503)
	GateProcessBodies    Gate = "process_bodies"    // a POST whose body would take the process past its budget for bodies being read (503)
	GateSessionPending   Gate = "session_pending"   // a call past session_max_pending (-32603 "Session overloaded")
)

// DropReason says why pushes were dropped ([Observer.PushesDropped]).
type DropReason string

// The reasons.
const (
	// DropEvicted: a GET channel's or listen stream's replay buffer
	// overflowed before a client read the push: its own bounds
	// (SessionBufferMax, SessionBufferBytes) or the hub's replay budget
	// ([Hub.SetReplayBudget]).
	DropEvicted DropReason = "evicted"
	// DropNoSession: a push to a session id that is not live on the route.
	DropNoSession DropReason = "no_session"
	// DropInvalid: a push whose params, data or level the transport cannot
	// send.
	DropInvalid DropReason = "invalid"
)

// SetObserver makes o the observer of every route served with this hub. Call
// it before the routes serve; nil (the default) observes nothing, at no
// cost.
func (h *Hub) SetObserver(o Observer) { h.obs = o }

// methodLabel is the Operation.Method of a request for method.
func methodLabel(method string) string {
	if methods[method] == nil {
		return OtherName
	}
	return method
}

// observe reports the answer of a request that ran, whose Call is call (nil
// for one without): out is its encoded answer when err is nil; an error
// means it was interrupted.
func (h *Handler) observe(start time.Time, m *message, call *Call, out []byte, err error) {
	obs := h.hub.obs
	if obs == nil {
		return
	}
	errType := ErrorCancelled
	if err == nil {
		errType = answerErrorType(out, m)
	}
	h.report(obs, start, m, call, errType)
}

// observeError reports a request answered with JSON-RPC error code before
// it reached the server.
func (h *Handler) observeError(start time.Time, m *message, code int) {
	if obs := h.hub.obs; obs != nil {
		h.report(obs, start, m, nil, strconv.Itoa(code))
	}
}

// observeInitError reports a request whose Init failed with err.
func (h *Handler) observeInitError(start time.Time, m *message, err error) {
	if obs := h.hub.obs; obs != nil {
		h.report(obs, start, m, nil, initErrorType(err))
	}
}

// observeUnrun reports a session's request that left its queue without
// running (timed out, cancelled, or its session ended).
func (h *Handler) observeUnrun(j *job, errType string) {
	if obs := h.hub.obs; obs != nil {
		h.report(obs, j.start, &j.msg, nil, errType)
	}
}

// report builds the Operation of request m, whose Call is call (nil when
// the request never reached the server).
func (h *Handler) report(obs Observer, start time.Time, m *message, call *Call, errType string) {
	op := Operation{Route: h.opts.Path, Method: methodLabel(m.method), ErrorType: errType, Duration: time.Since(start)}
	if m.method == methodToolsCall {
		op.Tool = OtherName
		if name, ok := stringMember(m.params, "name"); ok && call != nil && call.Listed {
			op.Tool = name
		}
	}
	obs.Operation(op)
}

// refused reports a request refused by gate.
func (h *Handler) refused(gate Gate) {
	if obs := h.hub.obs; obs != nil {
		obs.Refused(h.opts.Path, gate)
	}
}

// forwarded reports a request forwarded in direction dir.
func (h *Handler) forwarded(dir Direction) {
	if obs := h.hub.obs; obs != nil {
		obs.Forwarded(h.opts.Path, dir)
	}
}

// pushesDropped reports n pushes of route dropped for reason.
func (h *Hub) pushesDropped(route string, reason DropReason, n int) {
	if h.obs != nil && n > 0 {
		h.obs.PushesDropped(route, reason, n)
	}
}

// initErrorType is the error type of an initialize whose Init or Channels
// failed with err (see Handler.writeInitError).
func initErrorType(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return strconv.Itoa(e.Code)
	}
	return strconv.Itoa(CodeInternalError)
}

// evictedPushes returns what a push stream of the route tells of the pushes
// its ring evicted unread; nil when nothing observes. It is made once per
// route: every session holds it, and one func per session was an object
// that outlived the session's VM in memory.
func (h *Handler) evictedPushes() func(n int) {
	h.evicted.once.Do(func() {
		if h.hub.obs != nil {
			h.evicted.fn = func(n int) { h.hub.pushesDropped(h.opts.Path, DropEvicted, n) }
		}
	})
	return h.evicted.fn
}

// answerErrorType reads the error type of an encoded answer to m: the
// error's code, "tool_error" for a tools/call result with isError true, ""
// otherwise. The envelope is the transport's own (appendResult,
// appendError), so the member after the id tells which it is without a
// scan of the result.
func answerErrorType(out []byte, m *message) string {
	id := m.id
	if id == nil {
		id = nullID
	}
	rest := out
	if head := len(`{"jsonrpc":"2.0","id":`) + len(id); len(out) > head {
		rest = out[head:]
	}
	if code, ok := bytes.CutPrefix(rest, []byte(`,"error":{"code":`)); ok {
		end := bytes.IndexAny(code, ",}")
		if end > 0 {
			return string(code[:end])
		}
		return strconv.Itoa(CodeInternalError)
	}
	if m.method != methodToolsCall {
		return ""
	}
	res, ok := bytes.CutPrefix(rest, []byte(`,"result":`))
	if !ok || len(res) == 0 {
		return ""
	}
	if v, ok := member(res[:len(res)-1], "isError"); ok && bytes.Equal(v, []byte("true")) {
		return ErrorToolError
	}
	return ""
}
