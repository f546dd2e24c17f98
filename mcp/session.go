package mcp

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// This file is one session's state machine. Buffered requests queue in FIFO
// order and run one at a time on the session's worker goroutine; progress
// streams run beside them on snapshots. The session lives until DELETE, idle
// expiry or shutdown, and then tears everything down before Session.Close.

// maxResumableStreams bounds the POST streams a session keeps for resumption.
const maxResumableStreams = 64

type jobState uint8

const (
	jobQueued jobState = iota
	jobRunning
	jobFinished
)

// job is one request of a session (buffered or streaming) or of a stateless
// call: the message, the Call the Session sees, and the reply to the client.
type job struct {
	msg  message
	call Call
	out  outbound
	rp   reply

	// Guarded by the session's mu.
	state  jobState
	cancel context.CancelFunc
}

// newJob prepares a call of request m from a client that accepts acc.
func newJob(h *Handler, s *session, m *message, acc accept) *job {
	j := &job{msg: *m}
	j.rp = reply{s: s, id: m.id, acceptSSE: acc.sse, sseOnly: !acc.json}
	j.out = outbound{rp: &j.rp, h: h, s: s}
	j.call = Call{RequestID: m.id, Out: &j.out}
	if m.method == "tools/call" {
		j.call.ProgressToken = progressToken(m.params)
	}
	if s != nil {
		j.call.SessionID = s.id
		j.rp.resumable = acc.sse && s.version == latestVersion
	}
	return j
}

// progressToken returns params._meta.progressToken, or nil.
func progressToken(params []byte) []byte {
	meta, ok := member(params, "_meta")
	if !ok {
		return nil
	}
	tok, _ := member(meta, "progressToken")
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
	level   atomic.Int32

	ctx     context.Context // parent of every call; cancelled at teardown
	cancel  context.CancelFunc
	endedCh chan struct{} // closed when teardown starts
	gone    chan struct{} // closed when Session.Close has returned
	calls   sync.WaitGroup
	wake    chan struct{} // wakes the worker
	pending pendingTable

	mu       sync.Mutex
	ended    bool
	queue    []*job // queue[qhead:] are waiting
	qhead    int
	running  *job
	streams  []*job // progress streams in flight
	resumers int    // GETs attached to resumable POST streams
	channels []string
	subs     map[string]struct{}

	// The GET channel and its replay ring.
	chanLive  bool
	chanGen   uint64
	chanCtx   context.Context
	chanWake  chan struct{}
	lastEvent uint64
	ring      eventRing

	// Resumable POST streams by number.
	nextStream uint64
	open       map[uint64]*reply

	// Idle expiry.
	ttl         *time.Timer
	ttlArmed    bool
	ttlDeadline time.Time
}

func newSession(h *Handler, id string, srv Session, ir *InitResult, version string, client clientCaps) *session {
	s := &session{
		h:       h,
		id:      id,
		srv:     srv,
		version: version,
		client:  client,
		endedCh: make(chan struct{}),
		gone:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
		subs:    make(map[string]struct{}),
	}
	s.sc = scope{sess: srv, has: ir.Has, level: &s.level}
	s.level.Store(defaultLogLevel)
	s.ring.max = h.opts.SessionBufferMax
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// start launches the worker and arms the idle timer.
func (s *session) start() {
	s.calls.Add(1)
	go s.work()
	s.mu.Lock()
	s.ttlArmed = true
	s.ttlDeadline = time.Now().Add(s.h.opts.SessionTTL)
	s.ttl = time.AfterFunc(s.h.opts.SessionTTL, s.ttlFired)
	s.mu.Unlock()
}

// queuedLocked is the number of buffered requests waiting (not running).
func (s *session) queuedLocked() int { return len(s.queue) - s.qhead }

// idleLocked reports whether nothing holds the session: no GET channel, no
// stream, no running or queued request.
func (s *session) idleLocked() bool {
	return !s.chanLive && s.resumers == 0 && len(s.streams) == 0 && s.running == nil && s.queuedLocked() == 0
}

// touchLocked re-evaluates the idle timer after any change or activity. It is
// armed only while the session is idle; each idle moment restarts the full TTL.
// The timer itself is rarely touched: when it fires early it re-arms for the
// remaining time, and when the session is busy it disarms.
func (s *session) touchLocked() {
	if s.ended || !s.idleLocked() {
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
	if s.ended || !s.ttlArmed {
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

// Outcomes of enqueue.
const (
	enqueued = iota
	enqueueOverloaded
	enqueueEnded
)

// enqueue appends a buffered request to the FIFO queue.
func (s *session) enqueue(j *job) int {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return enqueueEnded
	}
	if s.queuedLocked() >= s.h.opts.SessionMaxPending {
		s.mu.Unlock()
		return enqueueOverloaded
	}
	j.state = jobQueued
	s.queue = append(s.queue, j)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return enqueued
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
			s.touchLocked()
			return true
		}
	}
	return false
}

// expire is called when a buffered caller timed out: a request still queued
// is removed; a running one runs on and its state lands.
func (s *session) expire(j *job) {
	s.mu.Lock()
	s.removeQueuedLocked(j)
	s.mu.Unlock()
}

// work runs the buffered requests one at a time, in arrival order.
func (s *session) work() {
	defer s.calls.Done()
	for {
		s.mu.Lock()
		for s.queuedLocked() == 0 && !s.ended {
			s.mu.Unlock()
			select {
			case <-s.wake:
			case <-s.endedCh:
			}
			s.mu.Lock()
		}
		if s.ended {
			s.mu.Unlock()
			return
		}
		j := s.queue[s.qhead]
		s.queue[s.qhead] = nil
		if s.qhead++; s.qhead == len(s.queue) {
			s.queue, s.qhead = s.queue[:0], 0
		}
		j.state = jobRunning
		s.running = j
		ctx, cancel := context.WithCancel(s.ctx)
		j.cancel = cancel
		s.mu.Unlock()

		b := getBuf()
		out, err := s.h.dispatch(ctx, &s.sc, &j.msg, &j.call, *b)
		cancel()

		s.mu.Lock()
		s.running = nil
		j.state = jobFinished
		ended := s.ended
		s.touchLocked()
		s.mu.Unlock()

		if err != nil {
			msg := msgCancelled
			if ended {
				msg = msgSessionEnded
			}
			out = appendError((*b)[:0], j.msg.id, CodeInternalError, msg, nil)
		}
		*b = out
		j.rp.finish(b)
	}
}

// Messages of the buffered-call outcomes decided by the transport.
const (
	msgTimedOut     = "Request timed out"
	msgCancelled    = "Request cancelled"
	msgOverloaded   = "Session overloaded"
	msgSessionEnded = "Session ended"
	msgShuttingDown = "Server shutting down"
)

// startStream registers a progress stream; it holds the session until
// endStream. It returns the call's context, or false when the session ended.
func (s *session) startStream(j *job) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, false
	}
	ctx, cancel := context.WithCancel(s.ctx)
	j.cancel = cancel
	j.state = jobRunning
	s.streams = append(s.streams, j)
	s.calls.Add(1)
	return ctx, true
}

func (s *session) endStream(j *job) {
	s.mu.Lock()
	for i, c := range s.streams {
		if c == j {
			s.streams = append(s.streams[:i], s.streams[i+1:]...)
			break
		}
	}
	j.state = jobFinished
	s.touchLocked()
	s.mu.Unlock()
}

// runStream runs a progress stream on a snapshot of the session's state.
func (s *session) runStream(ctx context.Context, j *job) {
	defer s.calls.Done()
	defer s.endStream(j)
	defer j.cancel()
	snap, err := s.srv.Snapshot(ctx)
	if err != nil {
		if ctx.Err() != nil {
			j.rp.finish(nil)
			return
		}
		s.h.log.Error("mcp: snapshot failed", "err", err)
		b := getBuf()
		*b = appendError(*b, j.msg.id, CodeInternalError, msgInternalError, nil)
		j.rp.finish(b)
		return
	}
	sc := scope{sess: snap, has: s.sc.has, level: &s.level}
	b := getBuf()
	out, err := s.h.dispatch(ctx, &sc, &j.msg, &j.call, *b)
	snap.Close("")
	if err != nil {
		putBuf(b)
		j.rp.finish(nil) // interrupted: the stream ends without a result
		return
	}
	*b = out
	j.rp.finish(b)
}

// stopStream cancels a progress stream; it ends without a result.
func (s *session) stopStream(j *job) {
	s.mu.Lock()
	cancel := j.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	j.rp.finish(nil)
}

// cancelRequest handles notifications/cancelled {requestId}: a queued request
// is removed, the running one is interrupted (its state does not land), and
// both callers get "Request cancelled"; a progress stream ends without a
// result. An unknown id is a no-op. Ids compare as raw JSON, so 7 != "7".
func (s *session) cancelRequest(id []byte) {
	if id == nil {
		return
	}
	s.mu.Lock()
	for i := s.qhead; i < len(s.queue); i++ {
		if j := s.queue[i]; bytes.Equal(j.msg.id, id) {
			s.removeQueuedLocked(j)
			s.mu.Unlock()
			j.rp.finish(errorAnswer(j.msg.id, msgCancelled))
			return
		}
	}
	if j := s.running; j != nil && bytes.Equal(j.msg.id, id) {
		cancel := j.cancel
		s.mu.Unlock()
		cancel()
		j.rp.finish(errorAnswer(j.msg.id, msgCancelled))
		return
	}
	for _, j := range s.streams {
		if bytes.Equal(j.msg.id, id) {
			s.mu.Unlock()
			s.stopStream(j)
			return
		}
	}
	s.mu.Unlock()
}

// errorAnswer builds a -32603 answer with msg in a pooled buffer.
func errorAnswer(id []byte, msg string) *[]byte {
	b := getBuf()
	*b = appendError(*b, id, CodeInternalError, msg, nil)
	return b
}

// subscribe joins the resource channel of uri (idempotent).
func (s *session) subscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if _, ok := s.subs[uri]; !ok {
		s.subs[uri] = struct{}{}
		s.h.hub.ps.Subscribe(resourceChannel(uri), s)
	}
	s.touchLocked()
}

// unsubscribe leaves the resource channel of uri (idempotent).
func (s *session) unsubscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subs[uri]; ok {
		delete(s.subs, uri)
		s.h.hub.ps.Unsubscribe(resourceChannel(uri), s)
	}
	s.touchLocked()
}

// join makes the session reachable by pushes: by id through the hub, and
// on the channels the server named at session start.
func (s *session) join(channels []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.channels = channels
	s.h.hub.add(s)
	for _, name := range channels {
		s.h.hub.ps.Subscribe(appChannel(name), s)
	}
}

// deliver numbers a push, keeps it in the replay ring and wakes the GET
// channel. It implements Subscriber.
func (s *session) Deliver(msg []byte) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.lastEvent++
	var idb [20]byte
	ev := appendEvent(make([]byte, 0, len(msg)+40), string(strconv.AppendUint(idb[:0], s.lastEvent, 10)), msg)
	s.ring.add(ringEvent{id: s.lastEvent, data: ev})
	wake := s.chanWake
	s.mu.Unlock()
	if wake != nil {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
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
// has ended is replaced; a live one is not.
func (s *session) attachChannel(ctx context.Context, lastID uint64, replay bool) (a channelAttachment, outcome int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return a, attachEnded
	}
	if s.chanLive && s.chanCtx.Err() == nil {
		return a, attachBusy
	}
	s.chanGen++
	s.chanLive = true
	s.chanCtx = ctx
	s.chanWake = make(chan struct{}, 1)
	a = channelAttachment{gen: s.chanGen, sent: s.lastEvent, wake: s.chanWake}
	if replay && lastID < s.lastEvent {
		a.replay = s.ring.after(lastID, nil)
	}
	return a, attachOK
}

// channelAttachment is what a GET channel gets when it attaches.
type channelAttachment struct {
	gen    uint64
	sent   uint64      // the id the channel continues after
	replay []ringEvent // kept events to send first
	wake   <-chan struct{}
}

func (s *session) detachChannel(gen uint64) {
	s.mu.Lock()
	if s.chanGen == gen {
		s.chanLive = false
		s.chanCtx = nil
		s.chanWake = nil
		s.touchLocked()
	}
	s.mu.Unlock()
}

// eventsAfter appends the ring's events with an id above id.
func (s *session) eventsAfter(id uint64, dst []ringEvent) []ringEvent {
	s.mu.Lock()
	dst = s.ring.after(id, dst)
	s.mu.Unlock()
	return dst
}

// openStream numbers a new resumable POST stream and registers rp under it.
// It returns 0 when the session has ended. Called with rp.mu held.
func (s *session) openStream(rp *reply) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return 0
	}
	if s.open == nil {
		s.open = make(map[uint64]*reply)
	}
	if len(s.open) >= maxResumableStreams {
		oldest := s.nextStream + 1
		for k := range s.open {
			oldest = min(oldest, k)
		}
		delete(s.open, oldest)
	}
	s.nextStream++
	s.open[s.nextStream] = rp
	return s.nextStream
}

// closeStream forgets stream k. Called with the stream's rp.mu held.
func (s *session) closeStream(k uint64) {
	s.mu.Lock()
	delete(s.open, k)
	s.mu.Unlock()
}

// findStream returns resumable stream k and counts the resuming GET as a
// holder of the session until endResume.
func (s *session) findStream(k uint64) *reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.open[k]
	if rp != nil && !s.ended {
		s.resumers++
		return rp
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
func (s *session) terminate(reason string) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		<-s.gone
		return
	}
	s.ended = true
	close(s.endedCh)
	for i := s.qhead; i < len(s.queue); i++ {
		s.queue[i].state = jobFinished
	}
	s.queue, s.qhead = nil, 0
	streams := append([]*job(nil), s.streams...)
	subs := s.subs
	s.subs = nil
	s.open = nil
	s.ttl.Stop()
	s.ttlArmed = false
	s.mu.Unlock()

	s.h.reg.remove(s)
	s.h.hub.remove(s)
	for _, name := range s.channels {
		s.h.hub.ps.Unsubscribe(appChannel(name), s)
	}
	for uri := range subs {
		s.h.hub.ps.Unsubscribe(resourceChannel(uri), s)
	}
	s.cancel()
	for _, j := range streams {
		j.rp.finish(nil)
	}
	s.calls.Wait()
	s.srv.Close(reason)
	close(s.gone)
}
