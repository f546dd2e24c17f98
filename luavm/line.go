package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/mcp"
)

// callInfo describes the call in progress in r to the mcp module (the ctx
// table): its ids, the era it is served under, and its line to the client.
func (r *run) callInfo(call *mcp.Call) *bridge.CallInfo {
	var out mcp.Outbound = noLine{}
	info := &bridge.CallInfo{}
	if call != nil {
		info.SessionID = call.SessionID
		info.RequestID = call.RequestID
		info.ProgressToken = call.ProgressToken
		info.ProtocolVersion = call.ProtocolVersion
		info.ClientCapabilities = call.ClientCapabilities
		info.Auth = callAuth(call.Auth)
		if call.Out != nil {
			out = call.Out
		}
	}
	r.line = callLine{out: out, r: r}
	info.Line = &r.line
	return info
}

// callLine is a call's line to the client: the transport's Outbound, as the
// mcp module sees it (bridge.CallLine; bridge imports no mcp).
//
// A request to the client (mcp.elicit, mcp.sample, mcp.list_roots, mcp.ask)
// waits for a person or a model: the call holds no scheduler slot while it
// waits. A round the transport ends the call with (the 2026-07-28 era's
// input_required, or an *mcp.Error such as -32021) stops the run with that
// cause, so that Lua goes no further, pcall or not, and the run ends as
// stopped rather than crashed (run.fail).
type callLine struct {
	out mcp.Outbound
	r   *run
}

func (l *callLine) Progress(params json.RawMessage) error { return l.out.Progress(params) }

func (l *callLine) Log(level string, data json.RawMessage) error { return l.out.Log(level, data) }

func (l *callLine) CloseStream() error { return l.out.CloseStream() }

func (l *callLine) StartTask(ttl, poll time.Duration) bool {
	return l.out.StartTask(mcp.TaskOptions{TTL: ttl, PollInterval: poll})
}

// Ask sends one round of requests to the client without holding a slot.
func (l *callLine) Ask(ctx context.Context, reqs []bridge.InputRequest) ([]bridge.InputAnswer, error) {
	qs := make([]mcp.InputRequest, len(reqs))
	for i, q := range reqs {
		qs[i] = mcp.InputRequest{Key: q.Key, Method: q.Method, Params: q.Params}
	}
	yielded := l.r.v.s.lane.s != nil && l.r.yield()
	as, err := l.out.Ask(ctx, qs)
	if err != nil && stops(err) {
		// The transport has cancelled the call with err already; this makes
		// sure of it before Lua runs again.
		l.r.cancel(err)
	}
	if yielded {
		if rerr := l.r.resume(); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return nil, err
	}
	if len(as) != len(reqs) {
		return nil, fmt.Errorf("the transport answered %d of %d requests", len(as), len(reqs))
	}
	out := make([]bridge.InputAnswer, len(as))
	for i, a := range as {
		out[i] = bridge.InputAnswer{Result: a.Result, Err: a.Err}
	}
	return out, nil
}

// stops reports whether an error of an Ask round ends the call: the
// 2026-07-28 era's mcp.ErrInputRequired, or the *mcp.Error the transport
// answers instead of the call's result (-32021, a malformed answer). In the
// 2025 era a client's error answer is per request, never the round's.
func stops(err error) bool {
	var merr *mcp.Error
	return errors.Is(err, mcp.ErrInputRequired) || errors.As(err, &merr)
}

// A stopError is a run the transport stopped to answer the call otherwise
// (stops): a normal interruption, not a crash. It wraps the cause.
type stopError struct {
	script, callback string
	cause            error
}

func (e *stopError) Error() string {
	return e.script + ": " + e.callback + " stopped: " + e.cause.Error()
}

func (e *stopError) Unwrap() error { return e.cause }

// noLine is the line of a call that has no way back to the client.
type noLine struct{}

func (noLine) Progress(json.RawMessage) error    { return nil }
func (noLine) Log(string, json.RawMessage) error { return nil }
func (noLine) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, mcp.ErrNoClientCapability
}
func (noLine) Ask(_ context.Context, reqs []mcp.InputRequest) ([]mcp.InputAnswer, error) {
	out := make([]mcp.InputAnswer, len(reqs))
	for i := range out {
		out[i].Err = mcp.ErrNoClientCapability
	}
	return out, nil
}
func (noLine) CloseStream() error             { return nil }
func (noLine) StartTask(mcp.TaskOptions) bool { return false }
