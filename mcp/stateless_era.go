package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// This file serves the 2026-07-28 era: every request stands alone, carries
// its client's version and capabilities in _meta, and runs on a fresh
// Session (Server.Init with no params and no session id), whatever the
// route's mode: state lives in sessions, which this era does not have.

// serveStatelessEra answers one POST of the 2026-07-28 era. code is what
// decodeMessage returned.
func (h *Handler) serveStatelessEra(w http.ResponseWriter, r *http.Request, m *message, acc accept, code int) {
	switch {
	case code == CodeParseError:
		writeJSONError(w, http.StatusBadRequest, nil, CodeParseError, "Parse error")
		return
	case code == CodeInvalidRequest:
		writeJSONError(w, http.StatusBadRequest, m.id, CodeInvalidRequest, "Invalid Request")
		return
	case m.response:
		writeJSONError(w, http.StatusBadRequest, nil, CodeInvalidRequest,
			"Invalid Request: clients send no responses in protocol version "+versionStateless)
		return
	case m.notification():
		// Nothing to act on: cancellation is closing the response.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	start := time.Now()
	rm, serr := readRequestMeta(r, m)
	spec := lookupMethod(m.method, eraStateless)
	if serr == nil {
		serr = checkMirrorHeaders(r, m, spec)
	}
	if serr == nil && spec == nil {
		serr = &statelessError{status: http.StatusNotFound, err: &Error{Code: CodeMethodNotFound, Message: msgMethodNotFound}}
	}
	if serr != nil {
		h.log.Debug("mcp: request refused", "method", m.method, "code", serr.err.Code, "err", serr.err.Message)
		h.observeError(start, m, serr.err.Code)
		writeErrorStatus(w, serr.status, m.id, serr.err)
		return
	}

	// A listen stream has no other answer than SSE: a client whose Accept
	// excludes it cannot read one.
	if m.method == methodListen && !acceptsEventStream(r.Header["Accept"]) {
		h.observeError(start, m, CodeInvalidRequest)
		writeJSONError(w, http.StatusNotAcceptable, m.id, CodeInvalidRequest,
			"Not Acceptable: Client must accept text/event-stream for "+methodListen)
		return
	}

	if spec.task { // no Lua: the route's task store answers
		h.serveTaskMethod(w, r, m, &rm, start)
		return
	}

	// A place under the process's cap, claimed before init runs: a flood
	// past it costs no Lua. A listen stream holds no Lua state once open,
	// and has a cap of its own.
	q, gate := &h.hub.statelessSlots, GateProcessStateless
	if m.method == methodListen {
		q, gate = &h.hub.listenSlots, GateProcessListens
	}
	key := h.clientKey(r)
	if !h.admitOpen(w, start, m, q, key, gate) {
		return
	}
	// What the request holds, given back when it ends, unless its call
	// became a task (handed): the task's goroutine gives it back then.
	hd := held{h: h, q: q, key: key}
	var handed bool
	defer func() {
		if !handed {
			hd.release()
		}
	}()
	// A call that may become a task must outlive its request: it is
	// cancelled when the client goes away only until it is a task.
	base := r.Context()
	mayTask := m.method == methodToolsCall && rm.tasks
	if mayTask {
		base = context.WithoutCancel(base)
	}
	ctx, cancel := context.WithCancelCause(base)
	hd.cancel = cancel
	if mayTask {
		// A task may wait for tasks/update long after its request, with no
		// connection (up to call_timeout_ms): what its call reads of the
		// request, from here or the call's line, must not keep the body it
		// was read from (up to MaxBodyBytes). Copies of the id and token
		// now; the params and answers when it becomes one (shedBody).
		m.id = bytes.Clone(m.id)
	}
	j := newJob(h, nil, m, acc)
	if mayTask {
		j.call.ProgressToken = bytes.Clone(j.call.ProgressToken)
	}
	j.call.Auth = AuthFromContext(r.Context())
	if !h.trackStateless(j, func() { cancel(errShuttingDown) }) {
		h.observeError(start, m, CodeInternalError)
		writeErrorStatus(w, http.StatusServiceUnavailable, m.id, &Error{Code: CodeInternalError, Message: msgShuttingDown})
		return
	}
	hd.tracked = j
	// Only server/discover answers with the init result; every other
	// request is gated on its capabilities alone.
	var sess Session
	ir := &InitResult{}
	var err error
	if m.method == methodDiscover {
		var res *InitResult
		if sess, res, err = h.srv.Init(ctx, nil, ""); res != nil {
			ir = res
		}
	} else {
		sess, ir.Has, err = h.initCall(ctx)
	}
	if err != nil {
		h.observeInitError(start, m, err)
		h.writeInitError(w, acc, m, err)
		return
	}
	if m.method == methodListen {
		// The stream needs no Lua state, but the channels of a fresh one,
		// which it joins as a session would (broadcasts reach it there).
		channels, err := sess.Channels(ctx)
		if err != nil {
			h.log.Warn("mcp: channels failed: the listen stream joins none", "err", err)
		}
		sess.Close("")
		// The stream outlives its POST by hours: it keeps the request's id
		// and its filter, not the body they were read from (up to
		// MaxBodyBytes, for each open stream).
		f := readListenFilter(m.params, ir.Has)
		*m = message{id: bytes.Clone(m.id), method: m.method}
		j.msg, j.rp.id, j.call = *m, m.id, Call{RequestID: m.id, Out: &j.out}
		rm = requestMeta{}
		h.serveListen(w, r, m.id, f, channels)
		return
	}
	hd.sess = sess
	if !ir.Has.has(spec.needs) {
		h.observeError(start, m, CodeMethodNotFound)
		writeErrorStatus(w, http.StatusNotFound, m.id, &Error{Code: CodeMethodNotFound, Message: msgMethodNotFound})
		return
	}
	if m.method == methodDiscover {
		b := getBuf()
		*b = h.appendDiscover(*b, m, ir)
		h.observe(start, m, nil, *b, nil)
		h.writeAnswer(w, acc, *b)
		putBuf(b)
		return
	}
	if m.method == methodToolsCall && h.checksParamHeaders(r) {
		if serr := h.checkToolParamHeaders(ctx, r, m, sess); serr != nil {
			h.observeError(start, m, serr.err.Code)
			writeErrorStatus(w, serr.status, m.id, serr.err)
			return
		}
	}
	// Who the call's requestState and task are bound to: the client's key,
	// the token's subject or else the credential the auth hook accepted,
	// each in its namespace (a raw subject could spell a credential's key).
	record, e := h.newRecord(m, spec, &rm, key, cancel)
	if e != nil {
		h.log.Debug("mcp: invalid params", "method", m.method, "err", e.Message)
		h.observeError(start, m, e.Code)
		writeErrorStatus(w, http.StatusOK, m.id, e)
		return
	}
	j.out.mrtr = record
	j.call.ProtocolVersion = rm.version
	j.call.ClientCapabilities = rm.caps
	if mayTask {
		j.call.ClientCapabilities = bytes.Clone(rm.caps)
		j.call.tasks = &taskStart{h: h, owner: key, quota: key, cancel: cancel, started: make(chan struct{}),
			shed: func() { shedBody(m, j, record) }}
		j.out.tasks = j.call.tasks
	}

	gen, _ := j.rp.attach(w)
	defer j.rp.detach(gen)
	if spec.mayStream && streams(m, acc) {
		j.rp.streaming = true
		j.rp.startStream()
	}
	sc := scope{sess: sess, has: ir.Has, era: eraStateless}
	b := getBuf()
	var out []byte
	if mayTask {
		if out, err, handed = h.dispatchMayTask(ctx, r, sc, m, j, record, b, hd); handed {
			cb := getBuf()
			*cb = appendCreateTask(*cb, m.id, j.call.tasks.created)
			h.observe(start, m, &j.call, *cb, nil)
			j.rp.finish(cb)
			j.rp.pump(gen)
			return
		}
	} else {
		out, err = h.dispatch(ctx, &sc, m, &j.call, *b)
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrInputRequired):
		h.observe(start, m, &j.call, nil, nil) // a round, answered: no error
		*b = h.appendInputRequired(out[:0], m, spec, record)
		j.rp.finish(b)
	case record.failure != nil:
		putBuf(b)
		if obs := h.hub.obs; obs != nil { // the tool ran, and asked what it may not
			h.report(obs, start, m, &j.call, strconv.Itoa(record.failure.Code))
		}
		status := http.StatusOK
		if record.failure.Code == CodeMissingClientCapability {
			status = http.StatusBadRequest
		}
		if status != http.StatusOK && !j.rp.streamed() {
			j.rp.detach(gen)
			writeErrorStatus(w, status, m.id, record.failure)
			return
		}
		eb := getBuf()
		*eb = appendErrorValue(*eb, m.id, record.failure)
		j.rp.finish(eb)
	case err == nil && !j.rp.streamed() && answerErrorType(out, m) == missingCapabilityCode:
		// A tool that requires what the client did not declare (a task):
		// the era's 400, as for a request to the client above.
		h.observe(start, m, &j.call, out, nil)
		j.rp.detach(gen)
		writeJSON(w, http.StatusBadRequest, out)
		*b = out
		putBuf(b)
		return
	case err == nil:
		h.observe(start, m, &j.call, out, nil)
		*b = out
		j.rp.finish(b)
	case h.closing.Err() != nil && !j.rp.streaming:
		putBuf(b)
		h.observe(start, m, &j.call, nil, err)
		j.rp.finish(errorAnswer(m.id, msgShuttingDown))
	default: // the client went away: no result
		putBuf(b)
		h.observe(start, m, &j.call, nil, err)
		j.rp.finish(nil)
	}
	j.rp.pump(gen)
}

// shedBody lets the call of m, which became a task, go of its request's
// body: its params but the tool's name (which observing it reads; the
// handler read the arguments when it began), and copies of the answers of
// earlier rounds (a later ask may take them) but not the record of those
// taken. Called by the call's goroutine
// as the task starts, before the request's goroutine reads m again.
func shedBody(m *message, j *job, record *mrtr) {
	name, _ := stringMember(m.params, "name")
	m.params = append(appendString([]byte(`{"name":`), name), '}')
	j.msg.params = m.params
	record.mu.Lock()
	for k, a := range record.answers {
		record.answers[k] = bytes.Clone(a)
	}
	record.used = nil // for a next requestState, which a task never sends
	record.mu.Unlock()
}

// held is what a 2026-07-28 request holds while it is served: its place
// under the process's cap, its context, its tracking for Shutdown and its
// Session (each nil until taken). release gives back what was taken.
type held struct {
	h       *Handler
	q       *quota
	key     string // the client's, whose share of q the request holds
	cancel  context.CancelCauseFunc
	tracked *job
	sess    Session
}

func (hd *held) release() {
	if hd.sess != nil {
		hd.sess.Close("")
	}
	if hd.tracked != nil {
		hd.h.untrackStateless(hd.tracked)
	}
	if hd.cancel != nil {
		hd.cancel(nil)
	}
	hd.q.giveFor(hd.key)
}

// dispatchMayTask runs a call that may become a task in a goroutine of its
// own, and reports whether it did. If not, the call is over and out and err
// are what dispatch returned. If so, the goroutine goes on with the task,
// records its outcome, and then releases hd (what the request held is the
// goroutine's from then on). The client going away before the task starts
// cancels the call. (Its own function: what the goroutine shares escapes to
// the heap, which the calls that cannot be tasks need not pay.)
func (h *Handler) dispatchMayTask(ctx context.Context, r *http.Request, sc scope, m *message, j *job, record *mrtr,
	b *[]byte, hd held) (out []byte, err error, handed bool) {
	ts := j.call.tasks
	done := make(chan struct{})
	go func() {
		o, e := h.dispatch(ctx, &sc, m, &j.call, *b)
		if ts.t != nil {
			record.mu.Lock()
			failure := record.failure
			record.mu.Unlock()
			h.tasks.finish(ts.t, o, e, failure, h.closing.Err() != nil)
			*b = o[:0]
			putBuf(b)
			hd.release()
		} else {
			out, err = o, e
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ts.started:
	case <-r.Context().Done():
		ts.cancel(context.Canceled)
		select {
		case <-done:
		case <-ts.started:
		}
	}
	select {
	case <-ts.started:
		return nil, nil, true
	default:
		<-done
		return out, err, false
	}
}

// serveTaskMethod answers tasks/get, tasks/update and tasks/cancel.
func (h *Handler) serveTaskMethod(w http.ResponseWriter, r *http.Request, m *message, rm *requestMeta, start time.Time) {
	owner := h.clientKey(r) // as the task's, when the call started it
	b := getBuf()
	defer putBuf(b)
	out, serr := h.taskMethod(*b, m, rm, owner)
	if serr != nil {
		h.observeError(start, m, serr.err.Code)
		writeErrorStatus(w, serr.status, m.id, serr.err)
		return
	}
	*b = out
	h.observe(start, m, nil, out, nil)
	writeJSON(w, http.StatusOK, out)
}

// missingCapabilityCode is CodeMissingClientCapability as answerErrorType
// reads it.
var missingCapabilityCode = strconv.Itoa(CodeMissingClientCapability)

// writeErrorStatus writes the JSON-RPC error e with an HTTP status.
func writeErrorStatus(w http.ResponseWriter, status int, id []byte, e *Error) {
	b := getBuf()
	*b = appendErrorValue(*b, id, e)
	writeJSON(w, status, *b)
	putBuf(b)
}

// appendDiscover appends the server/discover answer: every version luamcp
// speaks, the capabilities and instructions init returned, the caching
// hints, and the server's identity in _meta.
func (h *Handler) appendDiscover(dst []byte, m *message, ir *InitResult) []byte {
	caps, info := []byte(ir.Capabilities), []byte(ir.ServerInfo)
	if caps == nil {
		caps = emptyObject
	}
	if info == nil {
		info = emptyObject
	}
	if !json.Valid(caps) || !json.Valid(info) {
		h.log.Error("mcp: init returned capabilities or server info that are not valid JSON")
		return appendError(dst, m.id, CodeInternalError, msgInternalError, nil)
	}
	dst = appendResult(dst, m.id, nil)
	dst = dst[:len(dst)-1]
	dst = h.openStatelessResult(dst, methodDiscover)
	dst = append(dst, `,"supportedVersions":`...)
	dst = append(dst, supportedVersionsJSON...)
	dst = append(dst, `,"capabilities":`...)
	if ir.Has.Tools {
		dst = appendWithTasks(dst, trimSpace(caps))
	} else {
		dst = append(dst, caps...)
	}
	if ir.Instructions != "" {
		dst = append(dst, `,"instructions":`...)
		dst = appendString(dst, ir.Instructions)
	}
	dst = append(dst, `,"_meta":{"`+metaServerInfo+`":`...)
	dst = append(dst, info...)
	return append(dst, "}}}"...)
}

// appendWithTasks appends the capabilities object caps with the tasks
// extension under its extensions (which a server with tools serves, though
// only tools that declare execution.taskSupport become tasks), keeping
// whatever extensions the server itself advertised.
func appendWithTasks(dst, caps []byte) []byte {
	return appendWithInner(dst, caps, "extensions", extTasks, emptyObject)
}

// checkToolParamHeaders checks the Mcp-Param-* headers of a tools/call
// against the called tool's inputSchema. An unknown tool or a list that
// fails is left to the call itself to answer.
func (h *Handler) checkToolParamHeaders(ctx context.Context, r *http.Request, m *message, sess Session) *statelessError {
	name, ok := stringMember(m.params, "name")
	if !ok {
		return nil
	}
	tools, err := sess.Tools(ctx)
	if err != nil {
		return nil
	}
	h.sawTools(tools, true)
	for _, t := range tools {
		if t.Key != name {
			continue
		}
		schema, _ := member(t.JSON, "inputSchema")
		args, _ := member(m.params, "arguments")
		return checkParamHeaders(r, schema, args)
	}
	return nil
}
