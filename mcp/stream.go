package mcp

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// This file writes what goes back to a client: plain JSON bodies, SSE events,
// the replay ring of a session's GET channel, and the reply of one call, which
// starts as a plain JSON answer and becomes an SSE stream when the call sends
// something related to it.

// Header values shared by every response; net/http never mutates them.
var (
	hdrJSON    = []string{"application/json"}
	hdrSSE     = []string{"text/event-stream"}
	hdrNoCache = []string{"no-cache"}
	hdrNo      = []string{"no"}
	hdrClose   = []string{"close"}
)

// retryMillis is the reconnection delay announced in priming events.
const retryMillis = 1000

// writeJSON writes a complete JSON body with status. It is for short answers
// written at once by the handler; answers a call produced go through a sink.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = hdrJSON
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSONError writes a JSON-RPC error response with status.
func writeJSONError(w http.ResponseWriter, status int, id []byte, code int, msg string) {
	b := getBuf()
	*b = appendError(*b, id, code, msg, nil)
	writeJSON(w, status, *b)
	putBuf(b)
}

// setSSEHeaders sets the headers of an SSE response.
func setSSEHeaders(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Type"] = hdrSSE
	h["Cache-Control"] = hdrNoCache
	h["X-Accel-Buffering"] = hdrNo
}

// A sink is one handler's HTTP response. Writes to it come from one goroutine
// at a time (mu): the handler itself, or, in stateless mode, the call it runs
// inline, or the watcher of a session call its handler runs. Each write has its own deadline (Options.WriteTimeout), cleared
// once the write is through, so a client that stops reading fails that write
// instead of holding the writer, while an idle stream stays open as long as
// it needs (and a server WriteTimeout cannot cut it). After a failed write the
// sink is dead: every later write fails at once.
type sink struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// flushJSON makes json flush its answer at once. It is set over
	// HTTP/1.x, and when the handler does not return right after the answer
	// (an inline call's watcher writes it: see [inlineWatch]); otherwise the
	// server sends the answer when the handler returns.
	flushJSON bool
	// hangable is set when the response may have to end before its handler
	// returns (an inline call's watcher writes it): its headers ask for the
	// connection to close, so that hangUp can end it (HTTP/1.1 only).
	hangable bool
	chunked  bool // the body is an SSE stream in chunked encoding
	started  bool // the status line and headers are written
	dead     bool // a write failed, or the handler is done with the response
}

func newSink(w http.ResponseWriter, timeout time.Duration, http1 bool) *sink {
	return &sink{w: w, rc: http.NewResponseController(w), timeout: timeout, flushJSON: http1}
}

// makeHangable prepares the response of an inline call's watcher (see
// hangable). Called before anything is written.
func (k *sink) makeHangable() {
	k.mu.Lock()
	k.flushJSON, k.hangable = true, true
	k.mu.Unlock()
}

// hangUp ends a hangable response while its handler still runs the call: it
// takes the HTTP/1.1 connection over, ends a chunked body, and closes the
// connection, which the response's headers said it would. Later writes fail.
func (k *sink) hangUp() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.hangable {
		return
	}
	k.hangable, k.dead = false, true
	if e, ok := k.w.(responseEnder); ok {
		e.EndResponse()
		return
	}
	conn, bw, err := k.rc.Hijack()
	if err != nil {
		return
	}
	if k.chunked {
		_ = conn.SetWriteDeadline(time.Now().Add(k.timeout))
		_, _ = bw.WriteString("0\r\n\r\n")
		_ = bw.Flush()
	}
	_ = conn.Close()
}

// A responseEnder is a response writer that can end its response before
// its handler returns without a connection of its own to close: a request a
// cluster link carried ([Link]).
type responseEnder interface{ EndResponse() }

var errSinkDead = errors.New("mcp: the response is no longer writable")

// sse sends the SSE headers unless they are out, then the events, and
// flushes, under one write deadline.
func (k *sink) sse(events ...[]byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return errSinkDead
	}
	_ = k.rc.SetWriteDeadline(time.Now().Add(k.timeout))
	if !k.started {
		k.started = true
		setSSEHeaders(k.w)
		if k.hangable {
			k.w.Header()["Connection"] = hdrClose
			k.chunked = true // HTTP/1.1 without a length
		}
		k.w.WriteHeader(http.StatusOK)
	}
	var err error
	for _, ev := range events {
		if len(ev) > 0 {
			if _, err = k.w.Write(ev); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = k.rc.Flush()
	}
	return k.settle(err)
}

// json writes a complete JSON answer with status 200 and flushes it.
func (k *sink) json(body []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead || k.started {
		return errSinkDead
	}
	k.started = true
	_ = k.rc.SetWriteDeadline(time.Now().Add(k.timeout))
	h := k.w.Header()
	h["Content-Type"] = hdrJSON
	// With its length known, the flush sends the whole answer in one write;
	// without it net/http would switch to chunked encoding and write the
	// closing chunk in a second system call when the handler returns.
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	if k.hangable {
		h["Connection"] = hdrClose
	}
	k.w.WriteHeader(http.StatusOK)
	_, err := k.w.Write(body)
	if !k.flushJSON {
		// HTTP/2 and HTTP/3: the handler returns right after its answer,
		// and the server sends the headers, the data and the end of the
		// stream together then. A flush here sent the end of the stream in
		// a frame, a TLS record and a system call of its own. The deadline
		// stays: it is the stream's, and bounds those last writes too.
		if err != nil {
			k.dead = true
		}
		return err
	}
	if err == nil {
		err = k.rc.Flush()
	}
	return k.settle(err)
}

// settle clears the write deadline after a write that went through, so that
// it neither cuts an idle stream nor outlives the response on a kept-alive
// connection; a failed write kills the sink.
func (k *sink) settle(err error) error {
	if err != nil {
		k.dead = true
		return err
	}
	_ = k.rc.SetWriteDeadline(time.Time{})
	return nil
}

func (k *sink) hasStarted() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started
}

// close marks the response finished: the handler is returning.
func (k *sink) close() {
	k.mu.Lock()
	k.dead = true
	k.mu.Unlock()
}

// appendEvent appends one SSE event carrying msg. id "" means no id line.
// Line breaks in msg can only be JSON whitespace; they become spaces so the
// message stays on one data line.
func appendEvent(dst []byte, id string, msg []byte) []byte {
	dst = appendEventHead(dst, id)
	start := len(dst)
	dst = append(dst, msg...)
	for i := start; i < len(dst); i++ {
		if dst[i] == '\n' || dst[i] == '\r' {
			dst[i] = ' '
		}
	}
	return append(dst, eventEnd...)
}

// appendEventHead appends the frame of an event up to its data, which
// follows, then eventEnd.
func appendEventHead(dst []byte, id string) []byte {
	dst = append(dst, "event: message\n"...)
	if id != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, id...)
		dst = append(dst, '\n')
	}
	return append(dst, "data: "...)
}

// eventEnd ends an event's data line and the event.
var eventEnd = []byte("\n\n")

// streamEventID is the id of event n on POST stream k ("k_n"); GET-channel
// events use plain integers, so ids never collide within a session.
func streamEventID(dst []byte, k, n uint64) []byte {
	dst = strconv.AppendUint(dst, k, 10)
	dst = append(dst, '_')
	return strconv.AppendUint(dst, n, 10)
}

// parseStreamEventID parses "k_n".
func parseStreamEventID(s string) (k, n uint64, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '_' {
			k, err1 := strconv.ParseUint(s[:i], 10, 64)
			n, err2 := strconv.ParseUint(s[i+1:], 10, 64)
			return k, n, err1 == nil && err2 == nil && k > 0
		}
	}
	return 0, 0, false
}

// eventRing keeps the last framed GET-channel events for Last-Event-ID
// replay: at most max of them and maxBytes of their bytes, the oldest going
// first (the newest event is always kept, whatever its size, so that a live
// channel can send it). It grows on demand, so a session that is never pushed
// to costs nothing. The ring is also what a live GET channel reads from.
type eventRing struct {
	evs      []ringEvent
	start    int
	n        int
	bytes    int // of the n kept events
	max      int
	maxBytes int // 0 = no bound
	// budget, when set, is charged with bytes as they are kept and evicted
	// (release gives back the rest), and past it add evicts the oldest
	// events too. A push stream's ring has one; a POST stream's has none:
	// its session charges the budget, being the one that forgets the
	// stream (keptGrew).
	budget *replayBudget
}

// A ringEvent is one kept event. Its frame is data, or, when msg is set,
// data (the frame's head), msg and eventEnd: a push keeps the message it was
// given, which every stream it went to shares (a broadcast to 10,000
// sessions keeps one copy of its bytes, not 10,000), and frames only its
// head. Nobody changes a message once pushed.
type ringEvent struct {
	id   uint64
	data []byte
	msg  []byte
}

// size is the length of e's frame: what a ring keeps and charges for it.
func (e *ringEvent) size() int {
	if e.msg == nil {
		return len(e.data)
	}
	return len(e.data) + len(e.msg) + len(eventEnd)
}

// appendChunks appends the parts of e's frame.
func (e *ringEvent) appendChunks(dst [][]byte) [][]byte {
	if e.msg == nil {
		return append(dst, e.data)
	}
	return append(dst, e.data, e.msg, eventEnd)
}

// add keeps e, evicting the oldest events past the bounds. It returns the id
// of the newest event it evicted, 0 for none: ids only grow, so every event
// evicted has an id at or below it.
func (r *eventRing) add(e ringEvent) (evicted uint64) {
	if r.max <= 0 {
		return 0
	}
	if r.n == r.max {
		evicted = r.dropOldest()
	}
	if r.n < len(r.evs) {
		r.evs[(r.start+r.n)%len(r.evs)] = e
	} else {
		// Grow: the kept events are moved to the front first.
		evs := make([]ringEvent, 0, min(r.max, max(2*len(r.evs), 4)))
		for i := 0; i < r.n; i++ {
			evs = append(evs, r.evs[(r.start+i)%len(r.evs)])
		}
		r.evs, r.start = append(evs, e), 0
		r.evs = r.evs[:cap(r.evs)]
	}
	r.n++
	size := e.size()
	r.bytes += size
	r.budget.charge(size)
	for r.maxBytes > 0 && r.bytes > r.maxBytes && r.n > 1 {
		evicted = r.dropOldest()
	}
	if r.n > 1 && r.budget.over() {
		for r.n > 1 && r.budget.over() {
			evicted = r.dropOldest()
		}
		r.budget.gaveWay()
	}
	return evicted
}

// release forgets every kept event and gives their bytes back to the
// budget; the ring keeps its bounds.
func (r *eventRing) release() {
	r.budget.charge(-r.bytes)
	r.evs, r.start, r.n, r.bytes = nil, 0, 0, 0
}

// oldest returns the id of the oldest event kept, 0 when none is.
func (r *eventRing) oldest() uint64 {
	if r.n == 0 {
		return 0
	}
	return r.evs[r.start].id
}

// dropOldest evicts the oldest event and returns its id.
func (r *eventRing) dropOldest() uint64 {
	id := r.evs[r.start].id
	size := r.evs[r.start].size()
	r.bytes -= size
	r.budget.charge(-size)
	r.evs[r.start] = ringEvent{}
	r.start = (r.start + 1) % len(r.evs)
	r.n--
	return id
}

// after appends the events with an id greater than id to dst, oldest first.
// Ids grow from the oldest event to the newest, so the first one past id is
// found by bisection: a reader that keeps up asks for the newest few of a
// full ring on every wake-up.
func (r *eventRing) after(id uint64, dst []ringEvent) []ringEvent {
	lo, hi := 0, r.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.evs[(r.start+mid)%len(r.evs)].id > id {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	for i := lo; i < r.n; i++ {
		dst = append(dst, r.evs[(r.start+i)%len(r.evs)])
	}
	return dst
}

// maxQueuedBytes bounds what a call may queue for a handler that has not
// written it yet (a message alone is always queued, whatever its size, and
// so is the answer). Past it the writer is behind, which a client that reads
// slower than the call sends is as well as one that stopped reading: a
// resumable stream is dropped, its client resuming from the kept events; on
// one that cannot be resumed the message is skipped, so the answer still
// comes. A client that stopped reading is dropped by the write deadline.
const maxQueuedBytes = 4 << 20

// reply is one call's line back to its client: the HTTP response of the POST
// that carried the request (a plain JSON answer, or SSE once something
// streams) and, for a resumable stream, the events kept for a client that
// reconnects with GET + Last-Event-ID.
//
// At most one handler is attached at a time (the POST, later a resuming GET);
// its response is a sink. The call never writes to the network: it queues
// framed events (or its plain answer) under mu and wakes the attached handler,
// which writes them (pump), so a client that stops reading holds neither the
// call nor the session, only its own handler, until the write deadline drops
// it. In stateless mode there is no other goroutine to wake: the call runs
// inside the handler, which pumps inline.
type reply struct {
	mu     sync.Mutex
	out    *sink // the attached handler's response; nil when detached
	gen    uint32
	signal chan struct{} // wakes the attached handler; nil in stateless mode
	// watch stands in for the handler while it runs the call itself (see
	// [inlineWatch]); nil when the call runs elsewhere.
	watch *inlineWatch

	h         *Handler
	s         *session // nil in stateless mode
	id        []byte   // the request id
	acceptSSE bool     // the POST accepted text/event-stream
	http1     bool     // the POST came over HTTP/1.x (accept.http1)
	sseOnly   bool     // the POST did not accept JSON: even a plain answer is SSE
	resumable bool     // events carry ids and are kept (2025-11-25 sessions)
	streaming bool     // a progress stream: SSE from the start

	form       replyForm
	queue      []byte // framed events the attached handler has yet to write
	queueFinal bool   // queue ends with the final message
	result     *[]byte
	closing    bool // CloseStream: the handler ends the response once its queue is out
	dropped    bool // the attached client stopped reading: detached by emit

	stream uint64 // resumable stream number (k), 0 before the stream opens
	seq    uint64 // number of the last event on the stream (n)
	// kept is the replay buffer of a resumable stream: the same ring as a
	// GET channel's, bounded alike (SessionBufferMax events and
	// SessionBufferBytes bytes, the oldest going first).
	kept eventRing
	// forgotten is set once the session forgot the stream (keptGrew, or the
	// session's end): nobody can resume it any more, so it keeps no more
	// events. Atomic because the session sets it under its own mu, which
	// must not take rp.mu (that order is rp.mu, then the session's).
	forgotten atomic.Bool
	final     finalState
	expired   bool // the caller stopped waiting (request_timeout)
	expiredCh chan struct{}
}

// replyForm is the form of a call's answer.
type replyForm uint8

const (
	formJSON replyForm = iota // one JSON body, written when the call answers
	formSSE                   // an SSE stream: related messages, then the answer
)

// finalState is what became of the call's final message (its result or
// error).
type finalState uint8

const (
	finalPending finalState = iota // the call has not answered yet
	finalDecided                   // queued or written for the attached client, or dropped
	finalKept                      // decided, and kept as the last event of a resumable stream
)

// attach makes w the reply's response. It returns the attachment number and,
// in session mode, the channel that wakes the attached handler.
func (rp *reply) attach(w http.ResponseWriter) (uint32, <-chan struct{}) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.out = newSink(w, rp.h.opts.WriteTimeout, rp.http1)
	rp.gen++
	rp.dropped = false
	if rp.s != nil {
		rp.signal = make(chan struct{}, 1)
	}
	return rp.gen, rp.signal
}

// wake signals the attached handler that there is something to write. While
// the handler runs the call itself, the first message before the answer
// starts the watcher that writes it. Called with mu held.
func (rp *reply) wake() {
	if rp.signal == nil {
		return
	}
	select {
	case rp.signal <- struct{}{}:
	default:
	}
	if w := rp.watch; w != nil && rp.final == finalPending {
		w.sentLocked()
	}
}

// pumpInline writes what the call queued when the call runs inside its
// handler (stateless mode).
func (rp *reply) pumpInline() {
	if rp.s != nil {
		return
	}
	rp.mu.Lock()
	gen := rp.gen
	rp.mu.Unlock()
	rp.pump(gen)
}

// queueLocked queues one framed event for the attached handler and reports
// whether it did; final marks the call's answer. Past maxQueuedBytes a
// resumable stream is dropped and another skips ev, unless it is the answer.
func (rp *reply) queueLocked(ev []byte, final bool) bool {
	if rp.out == nil {
		return false
	}
	if len(rp.queue) > 0 && len(rp.queue)+len(ev) > maxQueuedBytes {
		switch {
		case rp.resumable:
			rp.out, rp.queue, rp.queueFinal, rp.dropped = nil, nil, false, true
			rp.wake()
			return false
		case !final:
			return false
		}
	}
	rp.queue = append(rp.queue, ev...)
	rp.wake()
	return true
}

// startSSELocked turns the answer into an SSE stream. A resumable stream
// opens with a priming event (an id and a retry delay, no data), so the
// client can reconnect to it even before the first message. The headers go
// out with the handler's next write.
func (rp *reply) startSSELocked() {
	rp.form = formSSE
	rp.wake()
	if !rp.resumable {
		return
	}
	if rp.stream = rp.s.openStream(rp); rp.stream == 0 {
		rp.resumable = false
		return
	}
	rp.kept = eventRing{max: rp.h.opts.SessionBufferMax, maxBytes: rp.h.opts.SessionBufferBytes}
	b := make([]byte, 0, 48)
	b = append(b, "id: "...)
	b = streamEventID(b, rp.stream, 0)
	b = append(b, "\nretry: "...)
	b = strconv.AppendInt(b, retryMillis, 10)
	b = append(b, "\ndata:\n\n"...)
	rp.queueLocked(b, false)
}

// startStream makes a progress stream's answer (streaming is set) SSE at once.
func (rp *reply) startStream() {
	rp.mu.Lock()
	if rp.form != formSSE {
		rp.startSSELocked()
	}
	rp.mu.Unlock()
	rp.pumpInline()
}

// frameLocked frames msg as the next event of the stream, keeping it in the
// replay buffer when the stream is resumable.
func (rp *reply) frameLocked(msg []byte) []byte {
	if !rp.resumable {
		return appendEvent(nil, "", msg)
	}
	rp.seq++
	var idb [48]byte
	ev := appendEvent(nil, string(streamEventID(idb[:0], rp.stream, rp.seq)), msg)
	if !rp.keepsLocked() {
		rp.kept = eventRing{}
		return ev
	}
	rp.kept.add(ringEvent{id: rp.seq, data: ev})
	if rp.s.keptGrew(rp.stream, rp.kept.bytes) && rp.kept.n > 1 {
		// Past the hub's replay budget even without the session's other
		// streams: this one gives up its own oldest events.
		for over := true; over && rp.kept.n > 1; {
			rp.kept.dropOldest()
			over = rp.s.keptGrew(rp.stream, rp.kept.bytes)
		}
		rp.h.hub.replay.gaveWay()
	}
	return ev
}

// keepsLocked reports whether the stream keeps its events for a resuming
// client: it is resumable and the session has not forgotten it.
func (rp *reply) keepsLocked() bool {
	return rp.resumable && !rp.forgotten.Load()
}

// emit sends a message related to the call (progress, log, a request to the
// client). The first one upgrades a plain JSON answer to SSE. It reports
// whether the message is on its way to the client or kept for a resuming one.
func (rp *reply) emit(msg []byte) bool {
	rp.mu.Lock()
	if rp.final != finalPending || !rp.acceptSSE {
		rp.mu.Unlock()
		return false
	}
	if rp.form != formSSE {
		if rp.out == nil {
			rp.mu.Unlock()
			return false
		}
		rp.startSSELocked()
	}
	queued := rp.queueLocked(rp.frameLocked(msg), false)
	ok := queued || rp.keepsLocked()
	rp.mu.Unlock()
	rp.pumpInline()
	return ok
}

// streamed reports whether the answer has become an SSE stream (its status
// line is then 200, whatever the answer).
func (rp *reply) streamed() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.form == formSSE
}

// canStream reports whether messages related to the call can reach the
// client: it accepts SSE and the call's stream is still open.
func (rp *reply) canStream() bool {
	rp.mu.Lock()
	ok := rp.acceptSSE && rp.final == finalPending && (rp.out != nil || (rp.resumable && rp.form == formSSE))
	rp.mu.Unlock()
	return ok
}

// finish delivers the call's final message, or ends its stream without one
// when msg is nil. It takes ownership of msg. Only the first final message
// counts.
func (rp *reply) finish(msg *[]byte) {
	rp.mu.Lock()
	if rp.final != finalPending {
		rp.mu.Unlock()
		putBuf(msg)
		return
	}
	rp.final = finalDecided
	// A progress stream is SSE even when its call ends before the handler
	// started the stream (the worker may run it at once).
	if msg != nil && rp.form != formSSE && (rp.sseOnly || rp.streaming) && rp.out != nil {
		rp.startSSELocked()
	}
	if msg != nil {
		if rp.form != formSSE {
			if rp.out != nil {
				rp.result, msg = msg, nil // the attached handler writes it
			}
		} else {
			ev := rp.frameLocked(*msg)
			if rp.keepsLocked() {
				rp.final = finalKept
				rp.s.streamAnswered(rp.stream)
			}
			rp.queueFinal = rp.queueLocked(ev, true)
		}
	}
	if rp.final != finalKept {
		rp.dropStreamLocked() // nothing left for a resuming client
	}
	rp.wake()
	rp.mu.Unlock()
	putBuf(msg)
	rp.pumpInline()
}

// dropStreamLocked forgets the kept events once nobody can resume them.
func (rp *reply) dropStreamLocked() {
	if rp.stream != 0 {
		rp.s.closeStream(rp.stream)
		rp.kept = eventRing{}
	}
}

// Outcomes of pump.
const (
	pumpWait = iota // nothing more to write for now
	pumpOver        // the handler's part is over: answered, ended, or taken over
	pumpLost        // the client stopped reading, or its connection failed
)

// pump is called by the handler attached with gen when it is woken: it writes
// what the call queued, and reports whether the handler's part is over. Only
// that handler (or, in stateless mode, the call it runs) calls it.
func (rp *reply) pump(gen uint32) int {
	for {
		rp.mu.Lock()
		if rp.gen != gen {
			rp.mu.Unlock()
			return pumpOver
		}
		k := rp.out
		if k == nil {
			lost := rp.dropped
			rp.mu.Unlock()
			if lost {
				return pumpLost
			}
			return pumpOver
		}
		sse, q, final, res := rp.form == formSSE, rp.queue, rp.queueFinal, rp.result
		rp.queue, rp.queueFinal, rp.result = nil, false, nil
		rp.mu.Unlock()

		var err error
		switch {
		case res != nil:
			err = k.json(*res)
			putBuf(res)
		case sse && (len(q) > 0 || !k.hasStarted()):
			err = k.sse(q)
		}

		rp.mu.Lock()
		if err != nil {
			if rp.gen == gen {
				rp.out = nil // a resumable stream keeps its events for a reconnect
			}
			rp.mu.Unlock()
			return pumpLost
		}
		if final {
			rp.dropStreamLocked() // the client has it all
		}
		switch {
		case rp.gen != gen:
			rp.mu.Unlock()
			return pumpOver
		case len(rp.queue) > 0 || rp.result != nil:
			rp.mu.Unlock()
			continue
		case res != nil || (rp.final != finalPending && !rp.queueFinal) || rp.closing:
			rp.out = nil
			rp.mu.Unlock()
			return pumpOver
		}
		rp.mu.Unlock()
		return pumpWait
	}
}

// abandon is called by the handler attached with gen when it stops waiting
// (timeout, session end): an answer that is ready wins; otherwise the caller
// gets the error code/msg (no message at all when code is 0), and the call's
// own answer is dropped when it comes.
func (rp *reply) abandon(gen uint32, code int, msg string) {
	rp.mu.Lock()
	if rp.gen != gen || rp.out == nil {
		rp.mu.Unlock()
		return
	}
	k := rp.out
	if rp.result == nil && rp.final == finalPending {
		rp.final = finalDecided
		if code != 0 && rp.form != formSSE && rp.sseOnly {
			rp.startSSELocked()
		}
		if code != 0 {
			b := getBuf()
			*b = appendError(*b, rp.id, code, msg, nil)
			if rp.form == formSSE {
				rp.queue = append(rp.queue, appendEvent(nil, rp.nextIDLocked(), *b)...)
				putBuf(b)
			} else {
				rp.result = b
			}
		}
		rp.dropStreamLocked()
	}
	res, q, sse := rp.result, rp.queue, rp.form == formSSE
	rp.result, rp.queue, rp.queueFinal, rp.out = nil, nil, false, nil
	rp.mu.Unlock()
	switch {
	case res != nil:
		_ = k.json(*res)
		putBuf(res)
	case sse && len(q) > 0:
		_ = k.sse(q)
	}
}

// expire marks that the caller timed out, ending the call's waits for the
// client.
func (rp *reply) expire() {
	rp.mu.Lock()
	rp.expired = true
	if rp.expiredCh != nil {
		close(rp.expiredCh)
	}
	rp.mu.Unlock()
}

// expiry returns a channel closed once the caller timed out.
func (rp *reply) expiry() <-chan struct{} {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.expiredCh == nil {
		rp.expiredCh = make(chan struct{})
		if rp.expired {
			close(rp.expiredCh)
		}
	}
	return rp.expiredCh
}

// nextIDLocked returns the id for an event that is sent but not kept.
func (rp *reply) nextIDLocked() string {
	if !rp.resumable {
		return ""
	}
	rp.seq++
	return string(streamEventID(nil, rp.stream, rp.seq))
}

// detach is called by the handler attached with gen when it returns early
// (its client went away). The call runs on; a resumable stream keeps its
// events.
func (rp *reply) detach(gen uint32) {
	rp.mu.Lock()
	var k *sink
	if rp.gen == gen {
		k = rp.out
		rp.out, rp.queue, rp.queueFinal = nil, nil, false
		if rp.result != nil {
			putBuf(rp.result)
			rp.result = nil
		}
	}
	rp.mu.Unlock()
	if k != nil {
		k.close()
	}
}

// closeHTTP ends the attached HTTP response early without ending the call
// (Outbound.CloseStream). Only a resumable stream can be closed: the client
// reconnects with GET + Last-Event-ID.
func (rp *reply) closeHTTP() {
	rp.mu.Lock()
	if !rp.resumable || rp.final != finalPending || rp.out == nil || !rp.acceptSSE {
		rp.mu.Unlock()
		return
	}
	if rp.form != formSSE {
		rp.startSSELocked()
	}
	if rp.resumable {
		rp.closing = true
		rp.wake()
	}
	rp.mu.Unlock()
}

// resume attaches a GET that reconnects to this stream after event n: the
// kept events after n are queued for it, then the live rest. A handler still
// attached is taken over: a client that resumes has stopped reading the old
// response.
func (rp *reply) resume(w http.ResponseWriter, http1 bool, n uint64) (gen uint32, sig <-chan struct{}) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.out != nil {
		rp.wake() // the old handler finds itself detached and returns
	}
	rp.out = newSink(w, rp.h.opts.WriteTimeout, http1)
	rp.gen++
	rp.signal = make(chan struct{}, 1)
	rp.closing, rp.dropped = false, false
	rp.queue, rp.queueFinal = nil, false
	for _, e := range rp.kept.after(n, nil) {
		for _, c := range e.appendChunks(nil) {
			rp.queue = append(rp.queue, c...)
		}
	}
	rp.queueFinal = rp.final == finalKept
	rp.wake()
	return rp.gen, rp.signal
}

// writeChannelEvents writes events to a GET channel and flushes them.
func writeChannelEvents(k *sink, evs []ringEvent) error {
	chunks := make([][]byte, 0, 3*len(evs))
	for i := range evs {
		chunks = evs[i].appendChunks(chunks)
	}
	return k.sse(chunks...)
}

var keepAliveComment = []byte(": keepalive\n\n")

// A waiter is what a handler serving a stream waits on between writes: its
// attachment's wake signal, the keep-alive period, the client going away,
// the end of what it serves (the session, the route) and a deadline. A nil
// channel never fires. Every stream loop (a call's answer, a GET channel, a
// resumed POST stream, a listen stream) waits through one.
type waiter struct {
	wake    <-chan struct{}
	tick    <-chan time.Time
	gone    <-chan struct{}
	ended   <-chan struct{}
	timeout <-chan time.Time
}

// What a waiter woke up for.
type waitOutcome uint8

const (
	waitWoken   waitOutcome = iota // something to write
	waitTick                       // a keep-alive is due
	waitGone                       // the client went away
	waitEnded                      // the session or the route ended
	waitTimeout                    // the deadline passed
)

func (w *waiter) next() waitOutcome {
	select {
	case <-w.wake:
		return waitWoken
	case <-w.tick:
		return waitTick
	case <-w.gone:
		return waitGone
	case <-w.ended:
		return waitEnded
	case <-w.timeout:
		return waitTimeout
	}
}

// keepAlive returns the route's keep-alive ticks (nil when disabled) and the
// function that stops them.
func (h *Handler) keepAlive() (<-chan time.Time, func()) {
	if h.opts.SessionKeepAlive <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(h.opts.SessionKeepAlive)
	return t.C, t.Stop
}
