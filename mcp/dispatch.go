package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync/atomic"
)

// This file maps one JSON-RPC request to a Session call and encodes its
// answer. It knows nothing of sessions, queues or HTTP: a request runs
// against a scope, so the same code serves session mode, stateless mode and
// (later) a per-request stateless protocol.

// negotiateVersion picks the version of a new session from initialize params:
// the client's when supported, else the latest.
func negotiateVersion(params []byte) string {
	if v, ok := stringMember(params, "protocolVersion"); ok && sessionEraVersion(v) {
		switch v { // constants, so the session holds no copy of the body
		case "2025-06-18":
			return "2025-06-18"
		case "2025-03-26":
			return "2025-03-26"
		}
	}
	return latestVersion
}

// scope is what a request runs against.
type scope struct {
	sess Session
	has  Capabilities
	// era is the era the request is served in. In the 2026-07-28 era every
	// result carries resultType, and the cached ones the route's hints.
	era era
	// level is the session's minimum log level; nil in stateless mode, where
	// logging/setLevel has no lasting effect.
	level *atomic.Int32
}

// errInterrupted reports that the call was interrupted (its context ended):
// the caller decides what, if anything, the client gets.
var errInterrupted = errors.New("mcp: call interrupted")

var (
	emptyObject = []byte("{}")
	emptyArgs   = json.RawMessage("{}")
)

// Messages of the parameter errors (behaviour.md §4).
const (
	msgMethodNotFound  = "Method not found"
	msgMissingTool     = "Invalid params: missing tool name"
	msgMissingURI      = "Invalid params: missing resource uri"
	msgMissingPrompt   = "Invalid params: missing prompt name"
	msgMissingLevel    = "Invalid params: missing level"
	msgMissingRef      = "Invalid params: missing ref or argument"
	msgBadRef          = "Invalid completion ref or argument"
	msgInvalidCursor   = "Invalid cursor"
	msgBadArguments    = "Invalid params: arguments must be an object"
	msgBadTask         = "Invalid params: task must be an object"
	msgInternalError   = "Internal error"
	maxCompletionValue = 100
)

// dispatch runs request m against sc and appends the JSON-RPC response to dst.
// It returns errInterrupted, and appends nothing, when ctx ended the call.
// The methods the handler serves itself (initialize, server/discover,
// subscriptions/listen) never come here.
func (h *Handler) dispatch(ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	spec := lookupMethod(m.method, sc.era)
	if spec == nil || spec.answer == nil || !sc.has.has(spec.needs) {
		return appendError(dst, m.id, CodeMethodNotFound, msgMethodNotFound, nil), nil
	}
	return spec.answer(h, ctx, sc, m, call, dst)
}

// argsOf returns params.arguments, or {} when it is absent or null; ok is
// false when it is something other than an object.
func argsOf(params []byte) (args json.RawMessage, ok bool) {
	v, found := member(params, "arguments")
	switch {
	case !found || kindOf(v) == 'n':
		return emptyArgs, true
	case kindOf(v) != '{':
		return nil, false
	}
	return v, true
}

// invalidParams appends a -32602 answer: the client sent params the method
// cannot take. It is the client's mistake, not the server's: logged at debug.
func (h *Handler) invalidParams(dst []byte, m *message, msg string) []byte {
	h.log.Debug("mcp: invalid params", "method", m.method, "err", msg)
	return appendError(dst, m.id, CodeInvalidParams, msg, nil)
}

// result appends the answer of a Session call that returned res, err.
func (h *Handler) result(ctx context.Context, dst []byte, m *message, sc *scope, res []byte, err error) ([]byte, error) {
	if err != nil {
		return h.failure(ctx, dst, m, sc, err)
	}
	if !json.Valid(res) || (sc.era == eraStateless && kindOf(trimSpace(res)) != '{') {
		h.log.Error("mcp: the server returned a result that is not valid JSON", "method", m.method)
		return appendError(dst, m.id, CodeInternalError, msgInternalError, nil), nil
	}
	if sc.era == eraStateless {
		return h.appendStatelessResult(dst, m, trimSpace(res)), nil
	}
	return appendResult(dst, m.id, res), nil
}

// appendStatelessResult appends a 2026-07-28 result: the object res with
// resultType "complete" first, and the route's caching hints when the
// method's results carry them.
func (h *Handler) appendStatelessResult(dst []byte, m *message, res []byte) []byte {
	dst = appendResult(dst, m.id, nil)
	dst = dst[:len(dst)-1]
	dst = h.openStatelessResult(dst, m.method)
	inner := trimSpace(res[1:])
	if len(inner) > 0 && inner[0] != '}' {
		dst = append(dst, ',')
	}
	dst = append(dst, inner...)
	return append(dst, '}')
}

// openStatelessResult appends the opening of a complete 2026-07-28 result
// object: `{"resultType":"complete"` and, for cached methods, ttlMs and
// cacheScope. The caller appends the other members (each after a comma)
// and the closing brace.
func (h *Handler) openStatelessResult(dst []byte, method string) []byte {
	dst = append(dst, `{"resultType":"complete"`...)
	if spec := methods[method]; spec != nil && spec.cached {
		dst = append(dst, `,"ttlMs":`...)
		dst = strconv.AppendInt(dst, h.opts.CacheTTL.Milliseconds(), 10)
		dst = append(dst, `,"cacheScope":`...)
		dst = appendString(dst, h.opts.CacheScope)
	}
	return dst
}

// failure maps a Session error: a *Error is sent as is, an interruption is
// reported to the caller, anything else is a logged crash.
func (h *Handler) failure(ctx context.Context, dst []byte, m *message, sc *scope, err error) ([]byte, error) {
	var e *Error
	if ctx.Err() != nil && sc.era == eraStateless {
		return dst, errInterrupted // the transport knows why (Outbound.Ask)
	}
	if errors.As(err, &e) {
		if e.Code == CodeResourceNotFound && sc.era == eraStateless {
			// The 2026-07-28 era has no -32002: -32602 with data.uri.
			uri, _ := stringMember(m.params, "uri")
			data := appendString([]byte(`{"uri":`), uri)
			e = &Error{Code: CodeInvalidParams, Message: e.Message, Data: append(data, '}')}
		}
		if e.Code == CodeInvalidParams {
			h.log.Debug("mcp: invalid params", "method", m.method, "err", e.Message)
		}
		return appendErrorValue(dst, m.id, e), nil
	}
	if ctx.Err() != nil {
		return dst, errInterrupted
	}
	h.logFailure("mcp: call failed", err, "method", m.method)
	return appendError(dst, m.id, CodeInternalError, msgInternalError, nil), nil
}

// listKeys are the result members of the lists, by ListKind.
var listKeys = [...]string{
	ListTools:             "tools",
	ListResources:         "resources",
	ListResourceTemplates: "resourceTemplates",
	ListPrompts:           "prompts",
}

// page returns the items [offset, offset+size) of list kind and the list's
// length: from Pager when sess has it, else cut from the whole list.
func page(ctx context.Context, sess Session, kind ListKind, offset, size int) ([]Item, int, error) {
	if p, ok := sess.(Pager); ok {
		return p.Page(ctx, kind, offset, size)
	}
	var all []Item
	var err error
	switch kind {
	case ListTools:
		all, err = sess.Tools(ctx)
	case ListResources:
		all, err = sess.Resources(ctx)
	case ListResourceTemplates:
		all, err = sess.ResourceTemplates(ctx)
	default:
		all, err = sess.Prompts(ctx)
	}
	if err != nil {
		return nil, 0, err
	}
	return all[min(offset, len(all)):min(offset+size, len(all))], len(all), nil
}

// list answers a */list request with one page of the list kind.
func (h *Handler) list(ctx context.Context, dst []byte, m *message, sc *scope, kind ListKind) ([]byte, error) {
	sess := sc.sess
	offset, ok := parseCursor(m.params)
	if !ok {
		return appendError(dst, m.id, CodeInvalidParams, msgInvalidCursor, nil), nil
	}
	size := h.opts.PageSize
	items, total, err := page(ctx, sess, kind, offset, size)
	if err != nil {
		return h.failure(ctx, dst, m, sc, err)
	}
	if len(items) > size {
		items = items[:size] // a Pager that sent more than asked
	}
	key := listKeys[kind]
	if kind == ListTools {
		h.sawTools(items, offset == 0 && len(items) >= total)
	}
	for _, it := range items {
		if !json.Valid(it.JSON) {
			h.log.Error("mcp: the server listed an item that is not valid JSON", "method", m.method, "key", it.Key)
			return appendError(dst, m.id, CodeInternalError, msgInternalError, nil), nil
		}
	}
	dst = appendResult(dst, m.id, nil)
	dst = dst[:len(dst)-1] // reopen the envelope after "result":
	if sc.era == eraStateless {
		dst = h.openStatelessResult(dst, m.method)
		dst = append(dst, `,"`...)
	} else {
		dst = append(dst, `{"`...)
	}
	dst = append(dst, key...)
	dst = append(dst, `":[`...)
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, it.JSON...)
	}
	dst = append(dst, ']')
	if offset+size < total {
		dst = append(dst, `,"nextCursor":"`...)
		dst = appendCursor(dst, offset+size)
		dst = append(dst, '"')
	}
	return append(dst, "}}"...), nil
}

// appendCursor appends the cursor of offset: base64 of its decimal text.
func appendCursor(dst []byte, offset int) []byte {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(offset), 10)
	return base64.StdEncoding.AppendEncode(dst, digits)
}

// parseCursor reads params.cursor. An absent (or null) cursor is offset 0; a
// cursor that is not a string holding base64 of a decimal integer >= 0 is
// invalid.
func parseCursor(params []byte) (int, bool) {
	v, ok := member(params, "cursor")
	if !ok || kindOf(v) == 'n' {
		return 0, true
	}
	s, ok := jsonString(v)
	if !ok {
		return 0, false
	}
	var buf [32]byte
	if base64.StdEncoding.DecodedLen(len(s)) > len(buf) {
		return 0, false
	}
	n, err := base64.StdEncoding.Decode(buf[:], []byte(s))
	if err != nil || n == 0 {
		return 0, false
	}
	offset := 0
	for _, c := range buf[:n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		offset = offset*10 + int(c-'0')
		if offset > maxCursorOffset {
			return 0, false
		}
	}
	return offset, true
}

// maxCursorOffset bounds a cursor's offset: no list is that long, and ten
// times it plus a digit fits an int, on 32-bit platforms too.
const maxCursorOffset = min(1<<40, (math.MaxInt-9)/10)

// complete answers completion/complete: the values capped at 100, hasMore
// and total.
func (h *Handler) complete(ctx context.Context, sc *scope, dst []byte, m *message) ([]byte, error) {
	ref, okRef := member(m.params, "ref")
	arg, okArg := member(m.params, "argument")
	if !okRef || !okArg {
		return appendError(dst, m.id, CodeInvalidParams, msgMissingRef, nil), nil
	}
	if !validRef(ref) || !validArgument(arg) {
		return appendError(dst, m.id, CodeInvalidParams, msgBadRef, nil), nil
	}
	cctx, _ := member(m.params, "context")
	values, err := sc.sess.Complete(ctx, ref, arg, cctx)
	if err != nil {
		return h.failure(ctx, dst, m, sc, err)
	}
	total := len(values)
	if len(values) > maxCompletionValue {
		values = values[:maxCompletionValue]
	}
	dst = appendResult(dst, m.id, nil)
	dst = dst[:len(dst)-1]
	if sc.era == eraStateless {
		dst = h.openStatelessResult(dst, m.method)
		dst = append(dst, ',')
	} else {
		dst = append(dst, '{')
	}
	dst = append(dst, `"completion":{"values":[`...)
	for i, v := range values {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, v)
	}
	dst = append(dst, `],"total":`...)
	dst = strconv.AppendInt(dst, int64(total), 10)
	dst = append(dst, `,"hasMore":`...)
	dst = strconv.AppendBool(dst, total > maxCompletionValue)
	return append(dst, "}}}"...), nil
}

// validRef accepts {type:"ref/prompt",name} and {type:"ref/resource",uri}.
func validRef(ref []byte) bool {
	typ, ok := stringMember(ref, "type")
	if !ok {
		return false
	}
	switch typ {
	case "ref/prompt":
		_, ok = stringMember(ref, "name")
	case "ref/resource":
		_, ok = stringMember(ref, "uri")
	default:
		ok = false
	}
	return ok
}

// validArgument accepts {name, value} with both strings.
func validArgument(arg []byte) bool {
	_, okName := stringMember(arg, "name")
	_, okValue := stringMember(arg, "value")
	return okName && okValue
}

// appendInitResult appends the initialize response.
func (h *Handler) appendInitResult(dst, id []byte, version string, ir *InitResult) []byte {
	caps, info := []byte(ir.Capabilities), []byte(ir.ServerInfo)
	if caps == nil {
		caps = emptyObject
	}
	if info == nil {
		info = emptyObject
	}
	if !json.Valid(caps) || !json.Valid(info) {
		h.log.Error("mcp: init returned capabilities or server info that are not valid JSON")
		return appendError(dst, id, CodeInternalError, msgInternalError, nil)
	}
	dst = appendResult(dst, id, nil)
	dst = dst[:len(dst)-1]
	dst = append(dst, `{"protocolVersion":`...)
	dst = appendString(dst, version)
	dst = append(dst, `,"capabilities":`...)
	if h.opts.Sessions && version == latestVersion && ir.Has.Tools && kindOf(trimSpace(caps)) == '{' {
		dst = appendWithKey(dst, trimSpace(caps), "tasks", tasksCapability) // task_session.go
	} else {
		dst = append(dst, caps...)
	}
	dst = append(dst, `,"serverInfo":`...)
	dst = append(dst, info...)
	if ir.Instructions != "" {
		dst = append(dst, `,"instructions":`...)
		dst = appendString(dst, ir.Instructions)
	}
	return append(dst, "}}"...)
}
