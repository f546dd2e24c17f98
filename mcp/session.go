package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// This file is one session's state machine. Requests run one at a time, in
// arrival order, on the session's own state: a request that finds the
// session free and is answered as plain JSON runs at once on its handler's
// goroutine (inline.go); the others queue and run on the session's worker
// goroutine. Calls of the route's concurrent tools run beside them on
// snapshots. The
// session lives until DELETE, idle expiry or shutdown, and then tears
// everything down before Session.Close.

// maxResumableStreams bounds the POST streams a session keeps for
// resumption, or SessionMaxPending+1 when that is more: every pending call
// may have a stream, and they hold no more than SessionBufferBytes together.
const maxResumableStreams = 64

// maxSubscriptions bounds the resource subscriptions of one session (or
// listen stream), and maxSubscriptionBytes the bytes of their URIs in all:
// a URI may be as long as a body, and a subscription lasts as long as its
// session.
const (
	maxSubscriptions     = 1000
	maxSubscriptionBytes = 1 << 20
)

// sessionState is where a session is in its life. Transitions, under mu:
// sessionLive -> sessionEnded (terminate begins); sessionEnded ->
// sessionClosed (terminate is over).
type sessionState uint8

const (
	sessionLive   sessionState = iota // serving requests
	sessionEnded                      // terminate began: no new work, calls being stopped
	sessionClosed                     // terminate is over: Session.Close has returned
)

type jobState uint8

const (
	jobQueued jobState = iota
	jobRunning
	jobFinished
)

// job is one request of a session or of a stateless call: the message, the
// Call the Session sees, and the reply to the client.
type job struct {
	msg  message
	call Call
	out  outbound
	rp   reply
	// snapshot marks a call of a concurrent tool: it runs on a snapshot of
	// the session's state, beside the queue.
	snapshot bool
	// start is when the request arrived (Operation.Duration).
	start time.Time
	// mayInline lets the handler run the call itself (admitInline): it came
	// over HTTP/1.1 (where its response can end before the handler returns:
	// see [sink.hangUp]).
	mayInline bool
	// watch serves the client while the handler runs the call.
	watch inlineWatch

	// Guarded by the session's mu.
	state  jobState
	ctx    context.Context // the running call's; set with cancel
	cancel context.CancelFunc
	// queued is what the job counts in the hub's body budget while it waits
	// in the queue (session.admit); 0 once it left the queue.
	queued int64
}

// newJob prepares a call of request m from a client that accepts acc.
func newJob(h *Handler, s *session, m *message, acc accept) *job {
	j := &job{msg: *m, start: time.Now()}
	j.rp = reply{h: h, s: s, id: m.id, acceptSSE: acc.sse, sseOnly: !acc.json, http1: acc.http1}
	j.out = outbound{rp: &j.rp, h: h, s: s}
	j.call = Call{RequestID: m.id, Out: &j.out}
	if spec := methods[m.method]; spec != nil && spec.mayStream {
		j.call.ProgressToken = progressToken(m.params)
	}
	if s != nil {
		j.call.SessionID = s.id
		j.call.ProtocolVersion = s.version
		j.call.ClientCapabilities = s.clientRaw
		j.rp.resumable = acc.sse && s.version == latestVersion
	}
	return j
}

// progressToken returns params._meta.progressToken, or nil. Any JSON value
// is a token, as in the original (behaviour.md: "present (any JSON
// value)"), but one that is not UTF-8 (the notifications that echo it would
// not be JSON) or longer than an id may be ([maxIDBytes]: each notification
// would copy up to MaxBodyBytes) counts as none.
func progressToken(params []byte) []byte {
	meta, ok := member(params, "_meta")
	if !ok {
		return nil
	}
	tok, _ := member(meta, "progressToken")
	if len(tok) > maxIDBytes || !utf8.Valid(tok) {
		return nil
	}
	return tok
}

// session is one live MCP session.
type session struct {
	h       *Handler
	id      string
	srv     Session
	sc      scope
	version string
	client  clientCaps
	// clientRaw is the capabilities object of the client's initialize (a
	// copy), nil when it sent none.
	clientRaw json.RawMessage
	// subject is the sub of the access token that opened the session on an
	// oauth route ("" elsewhere): only tokens of that subject may use it.
	subject string
	// quota is the client's key (clientKey) its place of the hub's
	// sessionSlots counts under: set before join, then only read.
	quota string
	level atomic.Int32
	// tasked is set once a call of the session asked for a task
	// (task_session.go): its end drops the session's tasks.
	tasked atomic.Bool

	ctx     context.Context // parent of every call; cancelled when teardown starts (ended)
	cancel  context.CancelFunc
	calls   sync.WaitGroup
	pending pendingTable

	mu    sync.Mutex
	state sessionState
	queue []*job // queue[qhead:] are waiting
	qhead int
	// running is the request that holds the session's state, run by the
	// worker or inline by its handler. The queue waits while it is set.
	running *job
	// work is the session's worker: it runs the queue (see [session.runQueue]).
	work workerState
	// gone is closed when terminate is over (sessionClosed); made by a
	// terminate that waits for another one, which most sessions never have.
	gone chan struct{}
	// wake is sent to (never blocking: capacity 1) when a job is queued for
	// a parked worker. The worker makes it when it first parks: a session
	// whose calls all run inline never needs one.
	wake     chan struct{}
	side     []*job // calls running on snapshots, beside the queue
	resumers int    // GETs attached to resumable POST streams
	channels []string
	// subs are the resource subscriptions, subBytes the bytes of their
	// URIs: at most maxSubscriptions and maxSubscriptionBytes.
	subs     map[string]struct{}
	subBytes int

	// ch is the GET channel's push stream (its own lock); the fields
	// below say which GET request reads it.
	ch       pushStream
	chanLive bool
	chanGen  uint64
	chanCtx  context.Context
	chanWake <-chan struct{} // the attached GET's signal from ch

	// Resumable POST streams by number: at most maxResumableStreams, whose
	// replay buffers hold keptBytes in all, at most SessionBufferBytes
	// (past either bound the oldest stream is forgotten; keptGrew).
	nextStream uint64
	open       map[uint64]*keptStream
	keptBytes  int

	// born is when initialize created the session (its lifetime's start).
	born time.Time

	// Idle expiry.
	ttl         *time.Timer
	ttlArmed    bool
	ttlDeadline time.Time
}

// maxCapabilitiesBytes bounds the capabilities of an initialize, as written.
// A session keeps them for its life (and in the sessions file): clients
// declare a few hundred bytes, and 10,000 sessions that each declared 4 MiB
// (the body's bound) would hold 40 GB.
const maxCapabilitiesBytes = 64 << 10

func newSession(h *Handler, id string, srv Session, ir *InitResult, version string, initParams []byte) *session {
	var raw json.RawMessage
	if caps, ok := member(initParams, "capabilities"); ok && kindOf(caps) == '{' {
		raw = bytes.Clone(caps)
	}
	s := &session{
		h:         h,
		id:        id,
		srv:       srv,
		version:   version,
		client:    clientCapsOf(initParams),
		clientRaw: raw,
		born:      time.Now(),
	}
	s.sc = scope{sess: srv, has: ir.Has, era: eraSession, level: &s.level}
	s.level.Store(defaultLogLevel)
	s.ch.init(true, h.opts.SessionBufferMax, h.opts.SessionBufferBytes, &h.hub.replay)
	s.ch.dropped = h.evictedPushes()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// start arms the idle timer. The worker starts with the first request.
func (s *session) start() {
	s.mu.Lock()
	s.ttlArmed = true
	s.ttlDeadline = time.Now().Add(s.h.opts.SessionTTL)
	s.ttl = time.AfterFunc(s.h.opts.SessionTTL, s.ttlFired)
	s.mu.Unlock()
}

// queuedLocked is the number of requests waiting in the queue (not running).
func (s *session) queuedLocked() int { return len(s.queue) - s.qhead }

// pendingLocked is what session_max_pending counts: every call admitted and
// not finished, but the one running on the session's state.
func (s *session) pendingLocked() int { return s.queuedLocked() + len(s.side) }

// idleLocked reports whether nothing holds the session: no GET channel, no
// stream, no running or queued request.
func (s *session) idleLocked() bool {
	return !s.chanLive && s.resumers == 0 && len(s.side) == 0 && s.running == nil && s.queuedLocked() == 0
}

// touchLocked re-evaluates the idle timer after any change or activity. It is
// armed only while the session is idle; each idle moment restarts the full TTL.
// The timer itself is rarely touched: when it fires early it re-arms for the
// remaining time, and when the session is busy it disarms.
func (s *session) touchLocked() {
	if s.state != sessionLive || !s.idleLocked() {
		return
	}
	s.ttlDeadline = time.Now().Add(s.h.opts.SessionTTL)
	if !s.ttlArmed {
		s.ttlArmed = true
		s.ttl.Reset(s.h.opts.SessionTTL)
	}
}

func (s *session) touch() {
	s.mu.Lock()
	s.touchLocked()
	s.mu.Unlock()
}

func (s *session) ttlFired() {
	s.mu.Lock()
	if s.state != sessionLive || !s.ttlArmed {
		s.mu.Unlock()
		return
	}
	if !s.idleLocked() {
		s.ttlArmed = false
		s.mu.Unlock()
		return
	}
	if d := time.Until(s.ttlDeadline); d > 0 {
		s.ttl.Reset(d)
		s.mu.Unlock()
		return
	}
	s.ttlArmed = false
	s.mu.Unlock()
	s.terminate("normal")
}

// Outcomes of admit.
const (
	admitted    = iota // queued, or started beside the queue
	admitInline        // j holds the session's state: its handler runs it now
	admitOverloaded
	admitOverBudget // the hub's body budget has no room for it to wait
	admitEnded
)

// admit takes a request in: a snapshot call starts at once beside the queue;
// a request that may run inline (see [Handler.serveInline]) and finds nothing
// running or queued is to run on its handler's goroutine (admitInline); any other request
// joins the FIFO queue. Past SessionMaxPending it is refused.
//
// A request that waits in the queue holds its request (r's headers, the
// goroutine and buffers of a request in flight) and its body, as one whose
// body is still being read does: both count in the hub's body budget until
// it leaves the queue (unqueuedLocked). SessionMaxPending bounds a session's
// queue, not the sessions': 100 calls of 4 MiB behind a slow tool on each of
// 10,000 sessions is 4 TiB. Past the budget it is refused (admitOverBudget).
func (s *session) admit(j *job, r *http.Request) int {
	s.mu.Lock()
	if s.state != sessionLive {
		s.mu.Unlock()
		return admitEnded
	}
	if s.pendingLocked() >= s.h.opts.SessionMaxPending {
		s.mu.Unlock()
		return admitOverloaded
	}
	if j.snapshot {
		ctx, cancel := context.WithCancel(s.ctx)
		j.cancel = cancel
		j.state = jobRunning
		s.side = append(s.side, j)
		s.calls.Add(1)
		s.mu.Unlock()
		go s.runSnapshot(ctx, j)
		return admitted
	}
	if j.mayInline && s.running == nil && s.queuedLocked() == 0 {
		j.state = jobRunning
		s.running = j
		j.ctx, j.cancel = context.WithCancel(s.ctx)
		s.calls.Add(1)
		s.mu.Unlock()
		return admitInline
	}
	cost := requestCost(r) + int64(len(j.msg.params))
	if !s.h.bodies().take(cost, 0) {
		s.mu.Unlock()
		return admitOverBudget
	}
	j.queued = cost
	j.state = jobQueued
	s.queue = append(s.queue, j)
	s.kickLocked()
	s.mu.Unlock()
	return admitted
}

// unqueuedLocked gives back what j counted in the body budget while it
// waited in the queue: it runs, was removed, or its session ended.
func (s *session) unqueuedLocked(j *job) {
	s.h.bodies().give(j.queued)
	j.queued = 0
}

// kickLocked gets the worker going on the queue: it starts one, or wakes a
// parked one. A running worker finds the queue itself.
func (s *session) kickLocked() {
	switch s.work {
	case workerNone:
		s.work = workerRunning
		s.calls.Add(1)
		go s.runQueue()
	case workerParked:
		s.work = workerRunning
		select {
		case s.wake <- struct{}{}:
		default: // a wake is already pending
		}
	}
}

// removeQueuedLocked takes j out of the queue; it reports false when j is
// not queued.
func (s *session) removeQueuedLocked(j *job) bool {
	if j.state != jobQueued {
		return false
	}
	for i := s.qhead; i < len(s.queue); i++ {
		if s.queue[i] == j {
			copy(s.queue[i:], s.queue[i+1:])
			s.queue[len(s.queue)-1] = nil
			s.queue = s.queue[:len(s.queue)-1]
			j.state = jobFinished
			s.unqueuedLocked(j)
			s.touchLocked()
			return true
		}
	}
	return false
}

// expire is called when a buffered caller timed out: a request still queued
// is removed; a running one runs on and its state lands. A snapshot call is
// stopped: nothing it does could land.
func (s *session) expire(j *job) {
	s.mu.Lock()
	removed := s.removeQueuedLocked(j)
	cancel := j.cancel
	s.mu.Unlock()
	if removed {
		s.h.observeUnrun(j, strconv.Itoa(CodeInternalError)) // "Request timed out"
	}
	if j.snapshot && cancel != nil {
		cancel()
	}
}

// A workerState is the life of a session's worker goroutine. Transitions,
// under session.mu: workerNone -> workerRunning (kickLocked starts one);
// workerRunning -> workerParked (the queue is empty, or an inline call holds
// the state); workerParked -> workerRunning (kickLocked, or the worker woke);
// workerRunning or workerParked -> workerNone (the worker exits: parked for
// workerLinger, or the session ended).
type workerState int

const (
	workerNone    workerState = iota // no worker: an idle session holds no goroutine
	workerRunning                    // running or about to run the queue
	workerParked                     // waiting for a job or its linger to end
)

// workerLinger is how long a worker waits for more work before it exits. A
// client calls again as soon as its answer arrives: a new goroutine per call
// started with a small stack and grew it on every call (copying it), which
// cost a tenth of a call. An idle session gives its goroutine back after
// this, long before it hibernates.
const workerLinger = time.Second

// runQueue runs the queued requests one at a time, in arrival order; with
// the queue empty, or while an inline call holds the state (which kicks it
// when it ends), it parks for workerLinger, then exits. It exits at once
// when the session ended.
func (s *session) runQueue() {
	defer s.calls.Done()
	var linger *time.Timer
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	for {
		s.mu.Lock()
		if s.state != sessionLive {
			s.work = workerNone
			s.mu.Unlock()
			return
		}
		if s.queuedLocked() == 0 || s.running != nil {
			if s.wake == nil {
				s.wake = make(chan struct{}, 1)
			}
			s.work = workerParked
			s.mu.Unlock()
			if linger == nil {
				linger = time.NewTimer(workerLinger)
			} else {
				linger.Reset(workerLinger)
			}
			select {
			case <-s.wake:
			case <-s.ended():
			case <-linger.C:
				s.mu.Lock()
				if s.work == workerParked && (s.queuedLocked() == 0 || s.running != nil) {
					s.work = workerNone
					s.mu.Unlock()
					return
				}
				s.mu.Unlock()
			}
			s.mu.Lock()
			s.work = workerRunning
			s.mu.Unlock()
			continue
		}
		j := s.queue[s.qhead]
		s.queue[s.qhead] = nil
		if s.qhead++; s.qhead == len(s.queue) {
			s.queue, s.qhead = s.queue[:0], 0
		} else if s.qhead >= 32 && 2*s.qhead >= len(s.queue) {
			// A queue that never empties (a client that keeps calls in
			// flight) would grow by a slot a call: the served ones go.
			n := copy(s.queue, s.queue[s.qhead:])
			clear(s.queue[n:])
			s.queue, s.qhead = s.queue[:n], 0
		}
		j.state = jobRunning
		s.unqueuedLocked(j)
		s.running = j
		j.ctx, j.cancel = context.WithCancel(s.ctx)
		s.mu.Unlock()
		s.runJob(j)
	}
}

// runJob runs j, which holds the session's state (s.running), on the calling
// goroutine, and answers it. A request that queued meanwhile behind an inline
// call gets the worker going.
func (s *session) runJob(j *job) {
	b := getBuf()
	out, err := s.h.dispatch(j.ctx, &s.sc, &j.msg, &j.call, *b)
	j.cancel()
	s.h.observe(j.start, &j.msg, &j.call, out, err)
	s.h.taskOver(&j.call, out, err) // its answer went out: the rest is ignored

	s.mu.Lock()
	s.running = nil
	j.state = jobFinished
	ended := s.state != sessionLive
	if !ended && s.queuedLocked() > 0 {
		s.kickLocked()
	}
	s.touchLocked()
	s.mu.Unlock()

	if err != nil {
		putBuf(b)
		j.rp.finish(j.interrupted(ended))
		return
	}
	*b = out
	j.rp.finish(b)
}

// interrupted is the final message of a call whose context ended: a stream
// ends without a result; a buffered caller gets "Request cancelled", or
// "Session ended" when the session ended.
func (j *job) interrupted(ended bool) *[]byte {
	if j.rp.streaming {
		return nil
	}
	if ended {
		return errorAnswer(j.msg.id, msgSessionEnded)
	}
	return errorAnswer(j.msg.id, msgCancelled)
}

// Messages of the buffered-call outcomes decided by the transport.
const (
	msgTimedOut     = "Request timed out"
	msgCancelled    = "Request cancelled"
	msgOverloaded   = "Session overloaded"
	msgSessionEnded = "Session ended"
	msgShuttingDown = "Server shutting down"
	msgAtCapacity   = "Server at capacity" // a cap on sessions or listen streams, the body budget (503)
)

// endSide forgets a snapshot call that returned.
func (s *session) endSide(j *job) {
	s.mu.Lock()
	for i, c := range s.side {
		if c == j {
			s.side = append(s.side[:i], s.side[i+1:]...)
			break
		}
	}
	j.state = jobFinished
	s.touchLocked()
	s.mu.Unlock()
}

// runSnapshot runs a call of a concurrent tool on a snapshot of the session's
// state; whatever it changes there is dropped with the snapshot.
func (s *session) runSnapshot(ctx context.Context, j *job) {
	defer s.calls.Done()
	msg := s.snapshotCall(ctx, j)
	j.cancel()
	// The call leaves session_max_pending's count before its answer goes
	// out: a client that sends its next call as soon as it has the answer
	// must not find this one still counted (it was refused as overloaded).
	s.endSide(j)
	j.rp.finish(msg)
}

// snapshotCall runs j on a snapshot and returns its final message.
func (s *session) snapshotCall(ctx context.Context, j *job) *[]byte {
	snap, err := s.srv.Snapshot(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return j.interrupted(s.isEnded())
		}
		s.h.log.Error("mcp: snapshot failed", "err", err)
		return errorAnswer(j.msg.id, msgInternalError)
	}
	sc := scope{sess: snap, has: s.sc.has, era: eraSession, level: &s.level}
	b := getBuf()
	out, err := s.h.dispatch(ctx, &sc, &j.msg, &j.call, *b)
	snap.Close("")
	s.h.observe(j.start, &j.msg, &j.call, out, err)
	s.h.taskOver(&j.call, out, err)
	if err != nil {
		putBuf(b)
		return j.interrupted(s.isEnded())
	}
	*b = out
	return b
}

func (s *session) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state != sessionLive
}

// stop ends a call whose stream's client went away (before 2025-11-25, a
// dropped stream cancels its call): a queued call leaves the queue, a running
// one is interrupted (its state does not land), and the stream ends without a
// result.
func (s *session) stop(j *job) {
	s.mu.Lock()
	var cancel context.CancelFunc
	removed := s.removeQueuedLocked(j)
	if !removed {
		cancel = j.cancel // nil unless it started
	}
	s.mu.Unlock()
	if removed {
		s.h.observeUnrun(j, ErrorCancelled)
	}
	if cancel != nil {
		cancel()
	}
	j.rp.finish(nil)
}

// cancelRequest handles notifications/cancelled {requestId}: a queued request
// is removed, a running one is interrupted (its state does not land); a
// buffered caller gets "Request cancelled", a stream ends without a result.
// An unknown id is a no-op. Ids compare as raw JSON, so 7 != "7".
func (s *session) cancelRequest(id []byte) {
	if id == nil {
		return
	}
	s.mu.Lock()
	var found *job
	for i := s.qhead; i < len(s.queue) && found == nil; i++ {
		if j := s.queue[i]; bytes.Equal(j.msg.id, id) {
			found = j
		}
	}
	if j := s.running; found == nil && j != nil && bytes.Equal(j.msg.id, id) {
		found = j
	}
	for _, j := range s.side {
		if found == nil && bytes.Equal(j.msg.id, id) {
			found = j
		}
	}
	// A call that became a task was answered (CreateTaskResult): its
	// request is no longer in flight, and the task is ended by tasks/cancel
	// only, as MCP has it; a late notifications/cancelled failed it.
	if found == nil || found.becameTask() {
		s.mu.Unlock()
		return
	}
	var cancel context.CancelFunc
	removed := s.removeQueuedLocked(found)
	if !removed {
		cancel = found.cancel
	}
	s.mu.Unlock()
	if removed {
		s.h.observeUnrun(found, ErrorCancelled)
	}
	if cancel != nil {
		cancel()
	}
	found.rp.finish(found.interrupted(false))
}

// becameTask reports whether j's call is a task now (a 2025-11-25 client
// asked for one and the tool runs as one).
func (j *job) becameTask() bool {
	ts := j.call.tasks
	if ts == nil {
		return false
	}
	select {
	case <-ts.started:
		return true
	default:
		return false
	}
}

// errorAnswer builds a -32603 answer with msg in a pooled buffer.
func errorAnswer(id []byte, msg string) *[]byte {
	b := getBuf()
	*b = appendError(*b, id, CodeInternalError, msg, nil)
	return b
}

// subscribe joins the resource channel of uri (idempotent). It reports false
// when the session already has maxSubscriptions others, or uri would take
// its URIs past maxSubscriptionBytes.
func (s *session) subscribe(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != sessionLive {
		return true
	}
	if _, ok := s.subs[uri]; !ok {
		if s.subs == nil {
			s.subs = make(map[string]struct{})
		}
		if len(s.subs) >= maxSubscriptions || s.subBytes+len(uri) > maxSubscriptionBytes {
			return false
		}
		s.subs[uri] = struct{}{}
		s.subBytes += len(uri)
		s.h.hub.ps.Subscribe(resourceChannel(s.h.opts.Path, uri), s)
	}
	s.touchLocked()
	return true
}

// unsubscribe leaves the resource channel of uri (idempotent).
func (s *session) unsubscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[uri]; ok {
		delete(s.subs, uri)
		s.subBytes -= len(uri)
		s.h.hub.ps.Unsubscribe(resourceChannel(s.h.opts.Path, uri), s)
	}
	s.touchLocked()
}

// join makes the session reachable by pushes: by id through the hub, and
// on the channels the server named at session start. The hub slot that
// initialize reserved passes to the session (Hub.remove frees it).
func (s *session) join(channels []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != sessionLive {
		s.h.hub.sessionSlots.giveFor(s.quota) // ended before it joined: its slot was never the hub's to free
		return
	}
	s.channels = channels
	s.h.hub.add(s)
	for _, name := range channels {
		s.h.hub.ps.Subscribe(appChannel(s.h.opts.Path, name), s)
	}
}

// Deliver sends a push to the session's GET channel (numbered, kept for
// replay; dropped once the session ended). It implements Subscriber. A
// notifications/message below the level the client set with
// logging/setLevel is dropped, however it was pushed (a broadcast or a
// notify carries a log message as well as Log does).
func (s *session) Deliver(msg []byte) {
	if logSeverity(msg) < int(s.level.Load()) {
		return
	}
	s.ch.push(msg)
}

// messagePrefix begins every notifications/message the transport encodes
// (appendNotification).
var messagePrefix = []byte(`{"jsonrpc":"2.0","method":"notifications/message"`)

// logSeverity returns the severity of the level of msg when it is a
// notifications/message with a valid level, else a severity no session
// filters out.
func logSeverity(msg []byte) int {
	if !bytes.HasPrefix(msg, messagePrefix) {
		return math.MaxInt32
	}
	params, _ := member(msg, "params")
	level, _ := stringMember(params, "level")
	if sev := levelSeverity(level); sev >= 0 {
		return sev
	}
	return math.MaxInt32
}

// Outcomes of attachChannel.
const (
	attachOK = iota
	attachBusy
	attachEnded
)

// attachChannel makes ctx's GET the session's channel. With replay set, it
// returns the kept events after lastID, taken at once so that later pushes
// cannot evict them before they are sent; otherwise only new events are sent.
// sent is the id the channel continues after. A previous channel whose request
// has ended is replaced; a live one is not: the outcome is attachBusy, and a
// is only its request's Done channel (busy), for attachHandover to wait on.
func (s *session) attachChannel(ctx context.Context, lastID uint64, replay bool) (a channelAttachment, outcome int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != sessionLive {
		return a, attachEnded
	}
	if s.chanLive && s.chanCtx.Err() == nil {
		a.busy = s.chanCtx.Done()
		return a, attachBusy
	}
	s.chanGen++
	s.chanLive = true
	s.chanCtx = ctx
	a.gen = s.chanGen
	a.sent, a.replay, a.wake = s.ch.attach(lastID, replay)
	s.chanWake = a.wake
	return a, attachOK
}

// channelAttachment is what a GET channel gets when it attaches.
type channelAttachment struct {
	gen    uint64
	sent   uint64      // the id the channel continues after
	replay []ringEvent // kept events to send first
	wake   <-chan struct{}
	busy   <-chan struct{} // attachBusy: closed when the attached GET ends
}

// channelHandover is how long a GET finding the channel attached waits for
// that channel to go before it is refused with 409. A client that drops its
// stream and reconnects at once (a reconnecting EventSource, an SDK retrying
// with Last-Event-ID) closes the old connection a moment before the new
// request arrives, and the server learns of the close only when its
// connection reader sees it: without the wait, that client is refused by
// its own dead stream. A truly second GET is still refused, this much later.
const channelHandover = 250 * time.Millisecond

// attachHandover is attachChannel, waiting up to channelHandover for a busy
// channel to end (or ctx, or the session) before it gives up.
func (s *session) attachHandover(ctx context.Context, lastID uint64, replay bool) (channelAttachment, int) {
	a, outcome := s.attachChannel(ctx, lastID, replay)
	if outcome != attachBusy {
		return a, outcome
	}
	t := time.NewTimer(channelHandover)
	defer t.Stop()
	select {
	case <-a.busy:
		return s.attachChannel(ctx, lastID, replay)
	case <-s.ended():
		return channelAttachment{}, attachEnded
	case <-ctx.Done():
	case <-t.C:
	}
	return channelAttachment{}, attachBusy
}

func (s *session) detachChannel(gen uint64) {
	s.mu.Lock()
	if s.chanGen == gen {
		s.chanLive = false
		s.chanCtx = nil
		s.ch.detach(s.chanWake)
		s.chanWake = nil
		s.touchLocked()
	}
	s.mu.Unlock()
}

// keptStream is a resumable POST stream of the session, and the bytes its
// replay buffer holds (as the stream last reported them: keptGrew).
type keptStream struct {
	rp    *reply
	bytes int
	// answered is set once the stream keeps its call's answer: the first
	// to go when a new stream needs the place (openStream).
	answered bool
}

// openStream numbers a new resumable POST stream and registers rp under it.
// It returns 0 when the session has ended. Called with rp.mu held.
func (s *session) openStream(rp *reply) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != sessionLive {
		return 0
	}
	if s.open == nil {
		s.open = make(map[uint64]*keptStream)
	}
	if len(s.open) >= max(maxResumableStreams, s.h.opts.SessionMaxPending+1) {
		s.forgetStreamLocked(s.evictableStreamLocked())
	}
	s.nextStream++
	s.open[s.nextStream] = &keptStream{rp: rp}
	return s.nextStream
}

// keptGrew records that stream k's replay buffer now holds n bytes, then
// forgets the session's oldest other streams while they all hold more than
// SessionBufferBytes: a client that leaves many streams unread cannot make a
// session keep more than that (each stream's own buffer has the same
// bound). Past the hub's replay budget it does the same, and reports that
// stream k must then give up its own oldest events. A forgotten stream can
// no longer be resumed. Called with the stream's rp.mu held.
func (s *session) keptGrew(k uint64, n int) (overBudget bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.open[k]
	if ks == nil {
		return false // forgotten already: its bytes count no more
	}
	s.keptBytes += n - ks.bytes
	s.h.hub.replay.charge(n - ks.bytes)
	ks.bytes = n
	for s.keptBytes > s.h.opts.SessionBufferBytes || s.h.hub.replay.over() {
		oldest := s.oldestStreamLocked(k)
		if oldest == 0 {
			break
		}
		s.forgetStreamLocked(oldest)
	}
	return s.h.hub.replay.over()
}

// oldestStreamLocked returns the number of the oldest resumable stream but
// except, 0 when there is none.
func (s *session) oldestStreamLocked(except uint64) uint64 {
	oldest := uint64(0)
	for k := range s.open {
		if k != except && (oldest == 0 || k < oldest) {
			oldest = k
		}
	}
	return oldest
}

// evictableStreamLocked returns the stream a new one replaces past
// maxResumableStreams: the oldest whose call has answered, else the oldest.
// The calls that queue behind a running one open their streams as they are
// admitted: forgetting the oldest would drop the running call's, the one
// that has events to lose (and its answer, to a client that resumes it).
func (s *session) evictableStreamLocked() uint64 {
	oldest := uint64(0)
	for k, ks := range s.open {
		if ks.answered && (oldest == 0 || k < oldest) {
			oldest = k
		}
	}
	if oldest == 0 {
		oldest = s.oldestStreamLocked(0)
	}
	return oldest
}

// streamAnswered records that stream k keeps its call's answer. Called
// with the stream's rp.mu held.
func (s *session) streamAnswered(k uint64) {
	s.mu.Lock()
	if ks := s.open[k]; ks != nil {
		ks.answered = true
	}
	s.mu.Unlock()
}

// forgetStreamLocked forgets resumable stream k (no-op for an unknown k).
func (s *session) forgetStreamLocked(k uint64) {
	if ks := s.open[k]; ks != nil {
		s.keptBytes -= ks.bytes
		s.h.hub.replay.charge(-ks.bytes)
		delete(s.open, k)
		ks.rp.forgotten.Store(true)
	}
}

// closeStream forgets stream k. Called with the stream's rp.mu held.
func (s *session) closeStream(k uint64) {
	s.mu.Lock()
	s.forgetStreamLocked(k)
	s.mu.Unlock()
}

// findStream returns resumable stream k and counts the resuming GET as a
// holder of the session until endResume.
func (s *session) findStream(k uint64) *reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.open[k]
	if ks != nil && s.state == sessionLive {
		s.resumers++
		return ks.rp
	}
	return nil
}

func (s *session) endResume() {
	s.mu.Lock()
	s.resumers--
	s.touchLocked()
	s.mu.Unlock()
}

// terminate ends the session, once: it stops new work, cancels every call,
// closes every stream (waiting callers get "Session ended", streams end
// without a result, the GET channel ends), waits for the calls to return and
// then calls Session.Close(reason). A second call waits for the first.
func (s *session) terminate(reason string) { s.end(reason, nil) }

// end is terminate, which with keep set first asks the server to save the
// session (Saver) and hands what resumes it to keep, with the function that
// closes the session: when keep takes them, the session stays ended but not
// closed, its server open, until that function is called (with no reason
// once what was saved is kept, Handler.Suspend). A second call waits for the
// session to be closed.
func (s *session) end(reason string, keep func(*SavedSession, func(reason string)) bool) {
	s.mu.Lock()
	if s.state != sessionLive {
		if s.state == sessionClosed {
			s.mu.Unlock()
			return
		}
		if s.gone == nil {
			s.gone = make(chan struct{})
		}
		gone := s.gone
		s.mu.Unlock()
		<-gone
		return
	}
	s.state = sessionEnded
	var saved *SavedSession
	if keep != nil {
		saved = s.savedLocked()
	}
	s.ch.close()
	queued := s.queue[s.qhead:]
	for _, j := range queued {
		j.state = jobFinished
		s.unqueuedLocked(j)
	}
	s.queue, s.qhead = nil, 0
	side := append([]*job(nil), s.side...)
	subs := s.subs
	s.subs, s.subBytes = nil, 0
	for _, ks := range s.open {
		ks.rp.forgotten.Store(true)
	}
	s.h.hub.replay.charge(-s.keptBytes)
	s.open, s.keptBytes = nil, 0
	s.ttl.Stop()
	s.ttlArmed = false
	s.mu.Unlock()
	// Ends every call's context and, through Done, every wait on the
	// session (ended).
	s.cancel()

	s.h.reg.remove(s)
	s.h.hub.remove(s)
	for _, name := range s.channels {
		s.h.hub.ps.Unsubscribe(appChannel(s.h.opts.Path, name), s)
	}
	for uri := range subs {
		s.h.hub.ps.Unsubscribe(resourceChannel(s.h.opts.Path, uri), s)
	}
	for _, j := range queued {
		s.h.observeUnrun(j, ErrorCancelled)
	}
	// Snapshot calls are answered now, not when they return: one that
	// ignores its context must not hold its caller.
	for _, j := range side {
		j.rp.finish(j.interrupted(true))
	}
	s.calls.Wait()
	if s.tasked.Load() {
		// Its tasks are over (their calls ended above): kept with the
		// session when it is saved; forgotten here, where nobody may
		// reach them now, giving their places back.
		if saved != nil {
			saved.Tasks = s.h.tasks.save(sessionOwner(s))
		}
		s.h.tasks.dropOwner(sessionOwner(s))
	}
	if saved != nil && s.saveState(saved) && keep(saved, s.close) {
		return // closed by Suspend's settle
	}
	s.close(reason)
}

// close closes the ended session's server with reason ("": it goes on in
// another process) and marks it closed.
func (s *session) close(reason string) {
	s.srv.Close(reason)
	if obs := s.h.hub.obs; obs != nil && reason != "" {
		obs.SessionEnded(s.h.opts.Path, time.Since(s.born))
	}
	s.mu.Lock()
	s.state = sessionClosed
	if s.gone != nil {
		close(s.gone)
	}
	s.mu.Unlock()
}

// ended returns a channel closed once the session's teardown starts.
func (s *session) ended() <-chan struct{} { return s.ctx.Done() }
