package mcp

import (
	"context"
	"encoding/json"
)

// This file is the seam between the transport and whatever implements a server
// (Lua scripts in package luavm, or plain Go). The transport owns JSON-RPC,
// sessions, pagination, capability gating, streams and error mapping; a server
// only answers the callbacks below. Nothing here knows Lua.
//
// Errors returned by a Server or a Session:
//   - a *Error is sent to the client as that JSON-RPC error (code and message);
//   - an error wrapping context.Canceled or context.DeadlineExceeded means the
//     call was interrupted (cancel, timeout, shutdown); the transport answers
//     according to why it cancelled the context;
//   - any other error is a crash: it is logged and the client sees
//     -32603 "Internal error". Its text may name files and lines and never
//     reaches the client.

// Server starts sessions. One Server serves one route.
type Server interface {
	// Init runs the server's constructor. In session mode it runs once per
	// initialize, with the client's initialize params and the new session id.
	// In stateless mode it runs for every request with sessionID == "": with
	// the client's params for an initialize, and params == nil for any other
	// request (the Lua contract's init({})). The returned Session is owned by
	// the caller, which must Close it.
	Init(ctx context.Context, params json.RawMessage, sessionID string) (Session, *InitResult, error)
}

// InitResult is what init returned, already encoded.
type InitResult struct {
	// ServerInfo is the encoded Implementation object (name, version, title?, ...).
	ServerInfo json.RawMessage
	// Capabilities is the encoded capabilities object, sent verbatim.
	Capabilities json.RawMessage
	// Has reports which capability keys are present; only presence gates methods.
	Has Capabilities
	// Instructions is the optional top-level instructions text ("" = absent).
	Instructions string
}

// A CallIniter is a [Server] that can start a stateless request's session
// more cheaply when the transport needs nothing of the init result but the
// capabilities it advertises: a stateless request other than initialize (and
// server/discover in 2026-07-28), which the transport gates on Has alone.
// InitCall behaves as Init(ctx, nil, "") except that it need not encode
// ServerInfo and Capabilities (encoding them was 3% of a stateless call):
// it fails on a result of the wrong shape, as Init does, but may miss what
// only encoding would find. The initialize answer, which encodes them, still
// reports that.
type CallIniter interface {
	InitCall(ctx context.Context) (Session, Capabilities, error)
}

// Capabilities records which server capability keys init advertised. It
// encodes with the keys' own names (a [SavedSession] holds one).
type Capabilities struct {
	Tools       bool `json:"tools,omitempty"`
	Resources   bool `json:"resources,omitempty"`
	Prompts     bool `json:"prompts,omitempty"`
	Logging     bool `json:"logging,omitempty"`
	Completions bool `json:"completions,omitempty"`
}

// Session is one server instance holding state: a session's, or a throw-away
// one for a stateless request. Its methods are never called concurrently; the
// transport serialises them. Each method runs under ctx: cancelling it must
// interrupt the work promptly.
//
// State rule (session mode): a call that returns a result, or a *Error produced
// by the callback's own in-band failure, keeps the state it left; any other
// error (a crash or an interruption) leaves the state exactly as before the call.
type Session interface {
	// Tools returns the tool descriptors in wire form, in callback order.
	Tools(ctx context.Context) ([]Item, error)
	// CallTool runs one tool. It returns the encoded CallToolResult
	// ({"content":[...],"isError":bool,"structuredContent"?:...}).
	// An unknown tool is ErrUnknownTool(name).
	CallTool(ctx context.Context, call *Call, name string, args json.RawMessage) (json.RawMessage, error)

	// Resources returns the resource descriptors in wire form (Item.Key = uri).
	Resources(ctx context.Context) ([]Item, error)
	// ResourceTemplates returns the template descriptors in wire form
	// (Item.Key = uriTemplate); an empty list when the server has none.
	ResourceTemplates(ctx context.Context) ([]Item, error)
	// ReadResource reads a listed uri, or one that matches a template. It returns
	// the encoded ReadResourceResult ({"contents":[...]}). A uri that is neither
	// listed nor matched is ErrResourceNotFound(uri); an in-band failure is a
	// *Error with code CodeResourceNotFound and the server's message.
	ReadResource(ctx context.Context, call *Call, uri string) (json.RawMessage, error)

	// Prompts returns the prompt descriptors in wire form (Item.Key = name).
	Prompts(ctx context.Context) ([]Item, error)
	// GetPrompt renders one prompt: the encoded GetPromptResult. Unknown prompt:
	// ErrUnknownPrompt(name); in-band failure: *Error{CodeInvalidParams, msg}.
	GetPrompt(ctx context.Context, call *Call, name string, args json.RawMessage) (json.RawMessage, error)

	// Complete returns every completion value; the transport caps them at 100.
	// ref, argument and context are the request's raw params members
	// (context may be nil).
	Complete(ctx context.Context, ref, argument, context json.RawMessage) ([]string, error)

	// Channels names the pubsub channels a new session joins (called once,
	// right after Init, in session mode only).
	Channels(ctx context.Context) ([]string, error)

	// Snapshot returns an independent Session holding a deep copy of the
	// current committed state, for a streaming call that must not change the
	// session's state. It may be called while another call runs on the
	// session (it then copies the state as it was before that call).
	// Snapshot is the one method that may run concurrently with the others.
	Snapshot(ctx context.Context) (Session, error)

	// Close ends the session. In session mode the transport passes the reason
	// ("normal" for DELETE and idle expiry, "shutdown" on server shutdown) and
	// the server runs its terminate callback; reason "" means release without
	// terminate (stateless requests and snapshots). The transport cancels and
	// waits for every running call before it calls Close, exactly once.
	Close(reason string)
}

// ListKind names one of the lists a Session serves.
type ListKind uint8

// The lists, as Pager.Page names them.
const (
	ListTools             ListKind = iota // Session.Tools
	ListResources                         // Session.Resources
	ListResourceTemplates                 // Session.ResourceTemplates
	ListPrompts                           // Session.Prompts
)

// A Pager is a Session that can answer one page of a list without encoding
// the rest of it. When a Session implements Pager, the transport answers the
// */list requests with Page instead of the list methods, so that a long list
// costs each request only its page.
type Pager interface {
	// Page returns the items [offset, offset+limit) of the list kind, fewer at
	// its end and none past it, and the length of the whole list. It runs the
	// same callback, under the same rules, as the list method it stands for.
	Page(ctx context.Context, kind ListKind, offset, limit int) (items []Item, total int, err error)
}

// Item is one list entry: a key the transport or the server looks up by (tool
// or prompt name, resource uri, template) and its encoded wire descriptor.
type Item struct {
	Key  string
	JSON json.RawMessage
}

// Call describes the request a callback is answering, and its line back to the
// client.
type Call struct {
	// SessionID is "" in stateless mode.
	SessionID string
	// RequestID is the raw JSON-RPC id of the request.
	RequestID json.RawMessage
	// ProgressToken is the raw _meta.progressToken, or nil when there is none.
	ProgressToken json.RawMessage
	// ProtocolVersion is the revision the request is served under: the
	// session's negotiated version, or the request's own
	// (MCP-Protocol-Version) in the stateless 2026-07-28 era. In a 2025-era
	// stateless request it is the header's version, or the latest 2025 one.
	ProtocolVersion string
	// ClientCapabilities is the client's capabilities object as the client
	// declared it: in initialize for a session, in the request's _meta in the
	// 2026-07-28 era; nil when unknown (a 2025-era stateless request).
	ClientCapabilities json.RawMessage
	// Auth is the request's verified access token on an OAuth route, else
	// nil (ctx.auth).
	Auth *AuthInfo
	// Out carries messages related to this call back to the client. Never nil.
	Out Outbound
	// Listed is set by Session.CallTool once it found the tool among the
	// ones it lists: only then does the call's Operation carry the tool's
	// name ([Observer]), so that a name a client makes up never becomes a
	// metric label.
	Listed bool

	// tasks lets the call become a task (Outbound.StartTask): set on a
	// 2026-07-28 tools/call from a client that declared the tasks
	// extension; nil otherwise.
	tasks *taskStart
}

// SetTaskSupport records the called tool's execution.taskSupport, which
// Session.CallTool reports before it runs the tool. It returns the error
// to answer instead when the tool requires a task and the call cannot
// become one: -32021 naming the extension in the 2026-07-28 era, -32601 in
// the 2025 era. A 2025-11-25 call whose client asked for a task
// (params.task) becomes one here, before the tool runs, or is refused:
// -32601 for a tool that does not run as a task.
func (c *Call) SetTaskSupport(s TaskSupport) error {
	switch ts := c.tasks; {
	case ts != nil && ts.asked: // the 2025 client asked: a task from the start
		if s == TaskForbidden {
			return &Error{Code: CodeMethodNotFound, Message: "Method not found: the tool does not run as a task"}
		}
		ts.support = s
		if !ts.start(TaskOptions{TTL: ts.ttl}, nil) {
			return &Error{Code: CodeInternalError, Message: "Internal error: too many tasks"}
		}
		return nil
	case ts != nil:
		ts.support = s
		return nil
	}
	if s != TaskRequired {
		return nil
	}
	if c.ProtocolVersion == versionStateless {
		return missingTasks
	}
	return &Error{Code: CodeMethodNotFound, Message: "Method not found: the tool runs as a task only"}
}

// Outbound is the running call's own stream back to the client. Messages sent
// through it travel on the call's response (upgrading a JSON answer to SSE when
// needed); they never go to the session's GET channel.
type Outbound interface {
	// Progress sends notifications/progress with params (which carry the
	// progressToken). A no-op unless the call is answered as a stream.
	Progress(params json.RawMessage) error
	// Log sends notifications/message {level, data} when level is at or above
	// the session's minimum level (default "info"); otherwise it drops it.
	Log(level string, data json.RawMessage) error
	// Request sends a request to the client (elicitation/create,
	// sampling/createMessage, roots/list) and waits for its response under
	// ctx. A client that did not declare the matching capability gets no
	// request: the error is ErrNoClientCapability. A JSON-RPC error answer
	// from the client is returned as a *Error. In the 2026-07-28 era it is
	// an Ask round of one request named by its place in the call.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Ask sends reqs to the client in one round and waits for every answer
	// under ctx; answers come back in the order of reqs. A request the
	// client answers with a JSON-RPC error has that *Error as its Err; a
	// missing client capability is ErrNoClientCapability, per request.
	//
	// In the 2026-07-28 era there is no stream to ask on: the call is run
	// again for each round (multi-round-trip requests). A request whose key
	// the client answered in an earlier round (its inputResponses, checked
	// against the authenticated requestState) is answered at once from that
	// record; the first round with an unanswered request ends the run: Ask
	// returns an error wrapping [ErrInputRequired] and the transport cancels
	// the call's context with that cause, then answers resultType
	// "input_required" with the round's inputRequests. A request the
	// client's declared capabilities do not allow ends the call the same
	// way, answered with -32021 and data.requiredCapabilities (that era
	// has no per-request ErrNoClientCapability); an answer that is not a
	// well-formed result of its method ends it with -32602. A Session
	// returns whatever that interruption makes it return; the transport
	// knows why, and a callback stopped so is no crash.
	Ask(ctx context.Context, reqs []InputRequest) ([]InputAnswer, error)
	// StartTask makes the call a task (the 2026-07-28 tasks extension) and
	// reports whether it is one: the client is answered at once with the
	// task's id, and the call runs on with no response to write to
	// (Progress and Log send nothing; Ask waits for tasks/update). It is
	// false, and the call goes on as an ordinary one, for a call that cannot
	// be a task: not a tools/call of the 2026-07-28 era, a client without
	// the extension, a tool that does not declare execution.taskSupport, or
	// a route that keeps as many tasks as it may. Calling it again returns
	// what the first call did.
	StartTask(opts TaskOptions) bool
	// CloseStream ends the call's HTTP stream early (2025-11-25 SSE polling):
	// the client reconnects with GET + Last-Event-ID and receives the rest of
	// the call's messages, its result included. A no-op when the call is not
	// answered as a resumable stream.
	CloseStream() error
}

// InputRequest is one request to the client within an [Outbound.Ask] round.
type InputRequest struct {
	// Key names the request among the call's requests (the 2026-07-28
	// inputRequests key, e.g. "user_name"). Empty: the transport names it
	// after its place in the call ("1", "2", ...), which is stable when the
	// call is run again in the same order.
	Key string
	// Method is elicitation/create, sampling/createMessage or roots/list.
	Method string
	// Params are the request's encoded params.
	Params json.RawMessage
}

// InputAnswer is the client's answer to one [InputRequest].
type InputAnswer struct {
	// Result is the encoded result; nil when Err is set.
	Result json.RawMessage
	// Err is the client's JSON-RPC error (a *Error), or why the request was
	// not sent (ErrNoClientCapability).
	Err error
}
