package mcp

import "context"

// This file is the one table of the methods luamcp answers: for each name,
// the eras that have it, the server capability that gates it, what its
// 2026-07-28 headers and results carry, and the function that answers it.
// Nothing else in the transport spells a method name to decide how a request
// is served.

// capability names a server capability key that gates methods.
type capability uint8

const (
	capNone capability = iota
	capResources
	capPrompts
	capLogging
	capCompletions
)

// has reports whether init advertised c.
func (c Capabilities) has(k capability) bool {
	switch k {
	case capResources:
		return c.Resources
	case capPrompts:
		return c.Prompts
	case capLogging:
		return c.Logging
	case capCompletions:
		return c.Completions
	}
	return true
}

// answerFunc answers one request against sc, appending the JSON-RPC response
// to dst (see Handler.dispatch).
type answerFunc func(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error)

// methodSpec describes one method.
type methodSpec struct {
	// eras is the set of eras that have the method; in any other it is
	// unknown (-32601, HTTP 404 in the 2026-07-28 era).
	eras era
	// needs is the server capability the method needs; without it the
	// method is unknown.
	needs capability
	// nameParam is the params member the Mcp-Name header mirrors ("" for
	// none).
	nameParam string
	// cached marks results that carry ttlMs and cacheScope in the
	// 2026-07-28 era.
	cached bool
	// mayAsk marks methods whose callbacks may ask the client for input
	// (answered input_required in the 2026-07-28 era).
	mayAsk bool
	// mayStream marks methods answered as a progress stream when the
	// request carries a progress token and the client accepts SSE.
	mayStream bool
	// task marks the methods of tasks, served from the route's task store
	// without a Session or the session's queue (Handler.taskMethod,
	// Handler.serveSessionTask).
	task bool
	// answer answers the method; nil for the methods the handler serves
	// itself (initialize, server/discover, subscriptions/listen, and the
	// session's resource subscriptions), which never reach dispatch.
	answer answerFunc
}

// Methods names the methods once, for the table and the code that serves
// the ones without an answer function.
const (
	methodInitialize  = "initialize"
	methodDiscover    = "server/discover"
	methodListen      = "subscriptions/listen"
	methodSubscribe   = "resources/subscribe"
	methodUnsubscribe = "resources/unsubscribe"
	methodToolsCall   = "tools/call"
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
	methodTasksResult = "tasks/result"
	methodTasksList   = "tasks/list"
)

// bothEras is the set of every era.
const bothEras = eraSession | eraStateless

// methods is the method table. It is filled by init: its answer functions
// refer back to it (through the results they build).
var methods map[string]*methodSpec

func init() {
	methods = map[string]*methodSpec{
		methodInitialize: {eras: eraSession},
		"ping":           {eras: eraSession, answer: answerPing},
		methodDiscover:   {eras: eraStateless, cached: true},
		methodListen:     {eras: eraStateless},

		"tools/list":    {eras: bothEras, cached: true, answer: listAnswer(ListTools)},
		methodToolsCall: {eras: bothEras, nameParam: "name", mayAsk: true, mayStream: true, answer: answerToolsCall},

		"resources/list":           {eras: bothEras, needs: capResources, cached: true, answer: listAnswer(ListResources)},
		"resources/templates/list": {eras: bothEras, needs: capResources, cached: true, answer: listAnswer(ListResourceTemplates)},
		"resources/read":           {eras: bothEras, needs: capResources, nameParam: "uri", cached: true, mayAsk: true, answer: answerRead},
		// Session mode answers these before the queue (session.subscribe); a
		// stateless route accepts them with nowhere to deliver.
		methodSubscribe:   {eras: eraSession, needs: capResources, answer: answerSubscribeStateless},
		methodUnsubscribe: {eras: eraSession, needs: capResources, answer: answerSubscribeStateless},

		"prompts/list": {eras: bothEras, needs: capPrompts, cached: true, answer: listAnswer(ListPrompts)},
		"prompts/get":  {eras: bothEras, needs: capPrompts, nameParam: "name", mayAsk: true, answer: answerGetPrompt},

		// The tasks of both eras (task.go, task_session.go).
		methodTasksGet:    {eras: bothEras, nameParam: "taskId", task: true},
		methodTasksUpdate: {eras: eraStateless, nameParam: "taskId", task: true},
		methodTasksCancel: {eras: bothEras, nameParam: "taskId", task: true},
		methodTasksResult: {eras: eraSession, task: true},
		methodTasksList:   {eras: eraSession, task: true},

		"logging/setLevel":    {eras: eraSession, needs: capLogging, answer: answerSetLevel},
		"completion/complete": {eras: bothEras, needs: capCompletions, answer: answerComplete},
	}
}

// lookupMethod returns the spec of method in era e, or nil when the method is
// unknown there.
func lookupMethod(method string, e era) *methodSpec {
	spec := methods[method]
	if spec == nil || spec.eras&e == 0 {
		return nil
	}
	return spec
}

func answerPing(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	return appendResult(dst, m.id, emptyObject), nil
}

func listAnswer(kind ListKind) answerFunc {
	return func(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
		return h.list(ctx, dst, m, sc, kind)
	}
}

func answerToolsCall(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	name, ok := stringMember(m.params, "name")
	if !ok {
		return appendError(dst, m.id, CodeInvalidParams, msgMissingTool, nil), nil
	}
	args, ok := argsOf(m.params)
	if !ok {
		return h.invalidParams(dst, m, msgBadArguments), nil
	}
	// A 2025-11-25 task param that is not an object asks for no task the
	// call could become (taskParams); run without one, it would answer a
	// client that waits for a CreateTaskResult.
	if call.ProtocolVersion == latestVersion {
		if v, found := member(m.params, "task"); found && kindOf(v) != '{' && kindOf(v) != 'n' {
			return h.invalidParams(dst, m, msgBadTask), nil
		}
	}
	res, err := sc.sess.CallTool(ctx, call, name, args)
	return h.result(ctx, dst, m, sc, res, err)
}

func answerRead(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	uri, ok := stringMember(m.params, "uri")
	if !ok {
		return appendError(dst, m.id, CodeInvalidParams, msgMissingURI, nil), nil
	}
	res, err := sc.sess.ReadResource(ctx, call, uri)
	return h.result(ctx, dst, m, sc, res, err)
}

func answerSubscribeStateless(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	if _, ok := stringMember(m.params, "uri"); !ok {
		return appendError(dst, m.id, CodeInvalidParams, msgMissingURI, nil), nil
	}
	return appendResult(dst, m.id, emptyObject), nil
}

func answerGetPrompt(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	name, ok := stringMember(m.params, "name")
	if !ok {
		return appendError(dst, m.id, CodeInvalidParams, msgMissingPrompt, nil), nil
	}
	args, ok := argsOf(m.params)
	if !ok {
		return h.invalidParams(dst, m, msgBadArguments), nil
	}
	res, err := sc.sess.GetPrompt(ctx, call, name, args)
	return h.result(ctx, dst, m, sc, res, err)
}

func answerSetLevel(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	level, ok := stringMember(m.params, "level")
	if !ok {
		return appendError(dst, m.id, CodeInvalidParams, msgMissingLevel, nil), nil
	}
	sev := levelSeverity(level)
	if sev < 0 {
		return appendError(dst, m.id, CodeInvalidParams, "Invalid log level: "+level, nil), nil
	}
	if sc.level != nil {
		sc.level.Store(int32(sev))
	}
	return appendResult(dst, m.id, emptyObject), nil
}

func answerComplete(h *Handler, ctx context.Context, sc *scope, m *message, call *Call, dst []byte) ([]byte, error) {
	return h.complete(ctx, sc, dst, m)
}
