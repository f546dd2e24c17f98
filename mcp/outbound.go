package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"
)

// maxPendingRequests bounds the requests to the client awaiting an answer,
// per session (or per route in stateless mode), and maxPendingPerOwner
// those of one client in a route's table (its token subject, or without
// oauth the credential it gave the auth hook): one client's calls cannot
// take every place and leave the others' elicitations failing.
const (
	maxPendingRequests = 1024
	maxPendingPerOwner = maxPendingRequests / 8
)

var (
	errStreamClosed    = errors.New("mcp: the call's stream to the client is closed")
	errTooManyPending  = errors.New("mcp: too many requests to the client awaiting an answer")
	errClientTimeout   = errors.New("mcp: the client did not answer before the request timed out")
	errSessionEnded    = errors.New("mcp: the session ended")
	errShuttingDown    = errors.New("mcp: the server is shutting down")
	errInvalidJSON     = errors.New("mcp: params are not valid JSON")
	errInvalidLogLevel = errors.New("mcp: invalid log level")
)

// clientCaps records which client capabilities gate requests to the client.
type clientCaps struct {
	elicitation, sampling, roots bool
}

// allClientCaps is assumed in stateless mode, where the client's capabilities
// are unknown.
var allClientCaps = clientCaps{elicitation: true, sampling: true, roots: true}

// clientCapsOf reads the capabilities member of initialize params.
func clientCapsOf(params []byte) clientCaps {
	caps, _ := member(params, "capabilities")
	return clientCapsFrom(caps)
}

// clientCapsFrom reads a ClientCapabilities object.
func clientCapsFrom(caps []byte) clientCaps {
	has := func(key string) bool {
		v, ok := member(caps, key)
		return ok && kindOf(v) != 'n'
	}
	return clientCaps{elicitation: has("elicitation"), sampling: has("sampling"), roots: has("roots")}
}

// allows reports whether the client declared what method needs.
func (c clientCaps) allows(method string) bool {
	switch method {
	case "elicitation/create":
		return c.elicitation
	case "sampling/createMessage":
		return c.sampling
	case "roots/list":
		return c.roots
	}
	return true
}

// clientAnswer is a client's response to a server request.
type clientAnswer struct {
	result json.RawMessage
	err    *Error
}

// pendingTable holds the requests sent to a client that await an answer,
// keyed by request id.
type pendingTable struct {
	mu sync.Mutex
	m  map[string]pendingRequest
	// owned counts the entries of each non-empty owner.
	owned map[string]int
}

// pendingRequest is one request to a client awaiting its answer.
type pendingRequest struct {
	ch chan clientAnswer
	// owner is the client that may answer (Handler.clientKey: its OAuth
	// subject, else the credential its auth hook accepted): in stateless
	// mode the table is the route's, shared by every client, so another
	// client's answer must not reach the call. Empty in session mode (the
	// session's owner is checked before its table is reached) and for an
	// anonymous client.
	owner string
	// quota is the key the request counts under in the table's owned
	// (outbound.quota); "" under none.
	quota string
}

func (t *pendingTable) add(key, owner, quota string, ch chan clientAnswer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= maxPendingRequests || (quota != "" && t.owned[quota] >= maxPendingPerOwner) {
		return false
	}
	if t.m == nil {
		t.m = make(map[string]pendingRequest)
	}
	t.m[key] = pendingRequest{ch: ch, owner: owner, quota: quota}
	if quota != "" {
		if t.owned == nil {
			t.owned = make(map[string]int)
		}
		t.owned[quota]++
	}
	return true
}

func (t *pendingTable) remove(key string) {
	t.mu.Lock()
	if p, ok := t.m[key]; ok {
		t.deleteLocked(key, p)
	}
	t.mu.Unlock()
}

// deleteLocked removes the entry key, p.
func (t *pendingTable) deleteLocked(key string, p pendingRequest) {
	delete(t.m, key)
	if p.quota != "" {
		if t.owned[p.quota]--; t.owned[p.quota] == 0 {
			delete(t.owned, p.quota)
		}
	}
}

// resolve hands a to the request waiting under key for an answer from
// owner, and reports whether one was waiting. A request of another owner is
// left waiting: to the answerer it is as if none were.
func (t *pendingTable) resolve(key, owner string, a clientAnswer) bool {
	t.mu.Lock()
	p, ok := t.m[key]
	ok = ok && p.owner == owner
	if ok {
		t.deleteLocked(key, p)
	}
	t.mu.Unlock()
	if ok {
		p.ch <- a // buffered; each request gets at most one answer
	}
	return ok
}

// outbound is the Outbound of one call.
type outbound struct {
	rp *reply
	h  *Handler
	s  *session // nil in stateless mode
	// deadline bounds waits for the client in buffered session calls: it is
	// when the caller stops waiting (request_timeout). Zero means none.
	deadline time.Time
	// owner is a stateless call's client (Handler.clientKey), the only one
	// whose answers reach the call's requests to the client; empty in
	// session mode and for an anonymous client.
	owner string
	// quota is the client a stateless call's requests to the client count
	// for (maxPendingPerOwner): in stateless mode its owner; "" for none.
	quota string
	// mrtr is the call's multi-round-trip record in the 2026-07-28 era,
	// where requests to the client become input_required; nil in the
	// session era.
	mrtr *mrtr
	// tasks is the call's Call.tasks.
	tasks *taskStart
}

// Progress sends notifications/progress on a progress stream; otherwise it
// does nothing.
func (o *outbound) Progress(params json.RawMessage) error {
	if !o.rp.streaming || o.inTask() {
		return nil
	}
	if !json.Valid(params) {
		return errInvalidJSON
	}
	o.rp.emit(appendNotification(nil, "notifications/progress", params))
	return nil
}

// Log sends notifications/message on the call's stream when level is at or
// above the session's minimum level. It is dropped when the client cannot
// receive a stream.
func (o *outbound) Log(level string, data json.RawMessage) error {
	sev := levelSeverity(level)
	if sev < 0 {
		return errInvalidLogLevel
	}
	min := int32(defaultLogLevel)
	switch {
	case o.mrtr != nil:
		min = int32(o.mrtr.logLevel) // the request's own _meta level, or none
	case o.s != nil:
		min = o.s.level.Load()
	}
	if int32(sev) < min || o.inTask() {
		return nil
	}
	if data != nil && !json.Valid(data) {
		return errInvalidJSON
	}
	o.rp.emit(appendNotification(nil, "notifications/message", logParams(nil, level, data)))
	return nil
}

// Request sends a request to the client on the call's stream and waits for
// its answer, which the client POSTs as a JSON-RPC response. In the
// 2026-07-28 era it is a round of one request (see Ask).
func (o *outbound) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if o.mrtr != nil {
		answers, err := o.mrtr.ask(ctx, []InputRequest{{Method: method, Params: params}})
		if err != nil {
			return nil, err
		}
		return answers[0].Result, answers[0].Err
	}
	if o.s != nil && o.inTask() { // input_required while the client answers
		defer o.h.tasks.waiting(o.tasks.t)()
	}
	w, err := o.send(method, params)
	if err != nil {
		return nil, err
	}
	defer w.release()
	return o.wait(ctx, w)
}

// Ask sends one round of requests to the client. In the session era they go
// out on the call's stream at once and Ask waits for every answer; in the
// 2026-07-28 era the call's record answers them, or ends the run
// (input_required).
func (o *outbound) Ask(ctx context.Context, reqs []InputRequest) ([]InputAnswer, error) {
	if o.mrtr != nil {
		return o.mrtr.ask(ctx, reqs)
	}
	out := make([]InputAnswer, len(reqs))
	waits := make([]*clientWait, len(reqs))
	defer func() {
		for _, w := range waits {
			if w != nil {
				w.release()
			}
		}
	}()
	if o.s != nil && o.inTask() { // input_required while the client answers
		defer o.h.tasks.waiting(o.tasks.t)()
	}
	for i, r := range reqs {
		waits[i], out[i].Err = o.send(r.Method, r.Params)
	}
	for i, w := range waits {
		if w == nil {
			continue
		}
		out[i].Result, out[i].Err = o.wait(ctx, w)
		if err := ctx.Err(); err != nil {
			for _, rest := range waits[i+1:] {
				if rest != nil {
					o.cancelRequest(rest.id, "cancelled")
				}
			}
			return nil, err
		}
	}
	return out, nil
}

// clientWait is one request sent to the client, awaiting its answer.
type clientWait struct {
	id    []byte // the request's JSON id
	key   string
	ch    chan clientAnswer
	table *pendingTable
}

// release forgets the request: a late answer finds nobody waiting.
func (w *clientWait) release() { w.table.remove(w.key) }

// send sends a request to the client on the call's stream; a session's
// task, whose call answered already, sends it on the session's GET
// channel instead, marked as the task's (task_session.go).
func (o *outbound) send(method string, params json.RawMessage) (*clientWait, error) {
	caps, table := allClientCaps, &o.h.pending
	if o.s != nil {
		caps, table = o.s.client, &o.s.pending
	}
	task := o.s != nil && o.inTask()
	if !caps.allows(method) || (!task && !o.rp.canStream()) {
		return nil, ErrNoClientCapability
	}
	if params != nil && !json.Valid(params) {
		return nil, errInvalidJSON
	}
	key := o.h.nextRequestID()
	w := &clientWait{id: appendString(nil, key), key: key, ch: make(chan clientAnswer, 1), table: table}
	if !table.add(key, o.owner, o.quota, w.ch) {
		return nil, errTooManyPending
	}
	if task {
		o.s.Deliver(appendRequest(nil, w.id, method, relatedTask(params, o.tasks.t.id)))
		return w, nil
	}
	if !o.rp.emit(appendRequest(nil, w.id, method, params)) {
		w.release()
		return nil, errStreamClosed
	}
	return w, nil
}

// wait waits for the answer to w under ctx.
func (o *outbound) wait(ctx context.Context, w *clientWait) (json.RawMessage, error) {
	// In a buffered call the wait ends when the caller times out; the
	// timer is a fallback for a caller that went away before.
	var timeout <-chan time.Time
	var expired <-chan struct{}
	if !o.deadline.IsZero() {
		expired = o.rp.expiry()
		t := time.NewTimer(time.Until(o.deadline) + time.Second)
		defer t.Stop()
		timeout = t.C
	}
	var ended <-chan struct{}
	if o.s != nil {
		ended = o.s.ended()
	}
	select {
	case a := <-w.ch:
		if a.err != nil {
			return nil, a.err
		}
		return a.result, nil
	case <-ctx.Done():
		o.cancelRequest(w.id, "cancelled")
		return nil, ctx.Err()
	case <-expired:
		o.cancelRequest(w.id, "timed out")
		return nil, errClientTimeout
	case <-timeout:
		o.cancelRequest(w.id, "timed out")
		return nil, errClientTimeout
	case <-ended:
		return nil, errSessionEnded
	case <-o.h.closing.Done():
		return nil, errShuttingDown
	}
}

// cancelRequest tells the client, best effort, that the server no longer
// waits for the answer to request id.
func (o *outbound) cancelRequest(id []byte, reason string) {
	params := append([]byte(`{"requestId":`), id...)
	params = append(params, `,"reason":`...)
	params = appendString(params, reason)
	params = append(params, '}')
	if o.s != nil && o.inTask() {
		// The request went on the session's GET channel (send): so does
		// this, as the task's.
		o.s.Deliver(appendNotification(nil, "notifications/cancelled", relatedTask(params, o.tasks.t.id)))
		return
	}
	o.rp.emit(appendNotification(nil, "notifications/cancelled", params))
}

// inTask reports whether the call became a task: its response is gone.
// Only the call's goroutine, which starts the task, asks.
func (o *outbound) inTask() bool { return o.tasks != nil && o.tasks.t != nil }

// StartTask makes the call a task when it may be one.
func (o *outbound) StartTask(opts TaskOptions) bool {
	if o.tasks == nil {
		return false
	}
	return o.tasks.start(opts, o.mrtr)
}

// CloseStream ends the call's HTTP response early when the stream is
// resumable; the client picks the rest up with GET + Last-Event-ID.
func (o *outbound) CloseStream() error {
	o.rp.closeHTTP()
	return nil
}

// nextRequestID returns a fresh id for a request to a client. In session
// mode it is a per-route random prefix and a counter: the table it keys is
// the session's own. In stateless mode the table is the route's, shared by
// every client, so the id is 128 random bits: no client can derive another
// one's pending ids from its own.
func (h *Handler) nextRequestID() string {
	if !h.opts.Sessions {
		var p [16]byte
		_, _ = rand.Read(p[:]) // never fails (crypto/rand)
		return "s-" + base64.RawURLEncoding.EncodeToString(p[:])
	}
	n := h.reqSeq.Add(1)
	b := make([]byte, 0, len(h.reqPrefix)+12)
	b = append(b, h.reqPrefix...)
	b = strconv.AppendUint(b, n, 10)
	return string(b)
}

// decodeClientError reads the error member of a client's response.
func decodeClientError(raw []byte) *Error {
	var e Error
	if json.Unmarshal(raw, &e) != nil || e.Message == "" && e.Code == 0 {
		return &Error{Code: CodeInternalError, Message: "the client answered with a malformed error"}
	}
	return &e
}
