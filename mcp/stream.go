package mcp

import (
	"net/http"
	"strconv"
	"sync"
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
)

// retryMillis is the reconnection delay announced in priming events.
const retryMillis = 1000

// writeJSON writes a complete JSON body with status.
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

// startSSE sends the headers of an SSE response and flushes them at once. It
// clears the write deadline so that a server WriteTimeout cannot cut a live
// stream.
func startSSE(w http.ResponseWriter) *http.ResponseController {
	h := w.Header()
	h["Content-Type"] = hdrSSE
	h["Cache-Control"] = hdrNoCache
	h["X-Accel-Buffering"] = hdrNo
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.Flush()
	return rc
}

// appendEvent appends one SSE event carrying msg. id "" means no id line.
// Line breaks in msg can only be JSON whitespace; they become spaces so the
// message stays on one data line.
func appendEvent(dst []byte, id string, msg []byte) []byte {
	dst = append(dst, "event: message\n"...)
	if id != "" {
		dst = append(dst, "id: "...)
		dst = append(dst, id...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	start := len(dst)
	dst = append(dst, msg...)
	for i := start; i < len(dst); i++ {
		if dst[i] == '\n' || dst[i] == '\r' {
			dst[i] = ' '
		}
	}
	return append(dst, "\n\n"...)
}

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

// eventRing keeps the last max framed GET-channel events for Last-Event-ID
// replay. It grows on demand, so a session that is never pushed to costs
// nothing.
type eventRing struct {
	evs   []ringEvent
	start int
	n     int
	max   int
}

type ringEvent struct {
	id   uint64
	data []byte
}

func (r *eventRing) add(e ringEvent) {
	if r.max <= 0 {
		return
	}
	if r.n < r.max {
		if len(r.evs) < r.max && r.n == len(r.evs) {
			r.evs = append(r.evs, e)
		} else {
			r.evs[(r.start+r.n)%len(r.evs)] = e
		}
		r.n++
		return
	}
	r.evs[r.start] = e
	r.start = (r.start + 1) % len(r.evs)
}

// after appends the events with an id greater than id to dst, oldest first.
func (r *eventRing) after(id uint64, dst []ringEvent) []ringEvent {
	for i := 0; i < r.n; i++ {
		e := r.evs[(r.start+i)%len(r.evs)]
		if e.id > id {
			dst = append(dst, e)
		}
	}
	return dst
}

// reply is one call's line back to its client: the HTTP response of the POST
// that carried the request (a plain JSON answer, or SSE once something streams)
// and, for a resumable stream, the events kept for a client that reconnects
// with GET + Last-Event-ID.
//
// At most one handler goroutine is attached at a time (the POST, later a
// resuming GET). Every write to its ResponseWriter happens under mu while it
// is attached, from whichever goroutine produces the message, and the handler
// detaches under mu before it returns, so nothing writes to a finished
// response.
type reply struct {
	mu  sync.Mutex
	w   http.ResponseWriter // the attached handler's writer; nil when detached
	rc  *http.ResponseController
	gen uint32 // attachment number; a handler owns the reply while it matches

	s         *session // nil in stateless mode
	id        []byte   // the request id
	acceptSSE bool     // the POST accepted text/event-stream
	sseOnly   bool     // the POST did not accept JSON: even a plain answer is SSE
	resumable bool     // events carry ids and are kept (2025-11-25 sessions)
	streaming bool     // a progress stream: SSE from the start

	sse       bool   // SSE headers have been sent
	stream    uint64 // resumable stream number (k), 0 before the stream opens
	seq       uint64 // number of the last event on the stream (n)
	kept      []keptEvent
	done      bool // the final message is decided: delivered, kept or dropped
	finalKept bool // the final message is the last kept event
	result    *[]byte
	signal    chan struct{} // wakes the attached handler; nil in stateless mode
	expired   bool          // the caller stopped waiting (request_timeout)
	expiredCh chan struct{} // closed when expired; made on demand
}

type keptEvent struct {
	seq  uint64
	data []byte
}

// attach makes w the reply's writer. It returns the attachment number and,
// in session mode, the channel that wakes the attached handler.
func (rp *reply) attach(w http.ResponseWriter) (uint32, <-chan struct{}) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.w = w
	rp.gen++
	if rp.s != nil {
		rp.signal = make(chan struct{}, 1)
	}
	return rp.gen, rp.signal
}

func (rp *reply) wake() {
	if rp.signal == nil {
		return
	}
	select {
	case rp.signal <- struct{}{}:
	default:
	}
}

// writeLocked writes one framed event to the attached writer and flushes it.
// A failed write detaches the writer and wakes its handler.
func (rp *reply) writeLocked(ev []byte) bool {
	if rp.w == nil {
		return false
	}
	_, err := rp.w.Write(ev)
	if err == nil {
		err = rp.rc.Flush()
	}
	if err != nil {
		rp.w = nil
		rp.wake()
		return false
	}
	return true
}

// startSSELocked turns the attached response into an SSE stream. A resumable
// stream opens with a priming event (an id and a retry delay, no data), so
// the client can reconnect to it even before the first message.
func (rp *reply) startSSELocked() {
	rp.rc = startSSE(rp.w)
	rp.sse = true
	if !rp.resumable {
		return
	}
	if rp.stream = rp.s.openStream(rp); rp.stream == 0 {
		rp.resumable = false
		return
	}
	b := make([]byte, 0, 48)
	b = append(b, "id: "...)
	b = streamEventID(b, rp.stream, 0)
	b = append(b, "\nretry: "...)
	b = strconv.AppendInt(b, retryMillis, 10)
	b = append(b, "\ndata:\n\n"...)
	rp.writeLocked(b)
}

// frameLocked frames msg as the next event of the stream, keeping it when the
// stream is resumable.
func (rp *reply) frameLocked(msg []byte) []byte {
	if !rp.resumable {
		return appendEvent(nil, "", msg)
	}
	rp.seq++
	var idb [48]byte
	ev := appendEvent(nil, string(streamEventID(idb[:0], rp.stream, rp.seq)), msg)
	max := rp.s.h.opts.SessionBufferMax
	if len(rp.kept) >= max {
		copy(rp.kept, rp.kept[1:])
		rp.kept = rp.kept[:len(rp.kept)-1]
	}
	rp.kept = append(rp.kept, keptEvent{seq: rp.seq, data: ev})
	return ev
}

// emit sends a message related to the call (progress, log, a request to the
// client). The first one upgrades a plain JSON answer to SSE. It reports
// whether the message was delivered or kept for a resuming client.
func (rp *reply) emit(msg []byte) bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.done || !rp.acceptSSE {
		return false
	}
	if !rp.sse {
		if rp.w == nil {
			return false
		}
		rp.startSSELocked()
	}
	ev := rp.frameLocked(msg)
	delivered := rp.writeLocked(ev)
	return delivered || rp.resumable
}

// canStream reports whether messages related to the call can reach the
// client: it accepts SSE and the call's stream is still open.
func (rp *reply) canStream() bool {
	rp.mu.Lock()
	ok := rp.acceptSSE && !rp.done && (rp.w != nil || (rp.resumable && rp.sse))
	rp.mu.Unlock()
	return ok
}

// finish delivers the call's final message, or ends its stream without one
// when msg is nil. It takes ownership of msg. Only the first final message
// counts.
func (rp *reply) finish(msg *[]byte) {
	rp.mu.Lock()
	if rp.done {
		rp.mu.Unlock()
		putBuf(msg)
		return
	}
	rp.done = true
	delivered := false
	if msg != nil && !rp.sse && rp.sseOnly && rp.w != nil {
		rp.startSSELocked()
	}
	if msg != nil {
		if !rp.sse {
			if rp.w != nil {
				rp.result, msg = msg, nil // the attached handler writes it
			}
		} else {
			ev := rp.frameLocked(*msg)
			rp.finalKept = rp.resumable
			delivered = rp.writeLocked(ev)
		}
	}
	if !rp.finalKept || delivered {
		rp.dropStreamLocked() // nothing left for a resuming client
	}
	rp.wake()
	rp.mu.Unlock()
	putBuf(msg)
}

// dropStreamLocked forgets the kept events once nobody can resume them.
func (rp *reply) dropStreamLocked() {
	if rp.stream != 0 {
		rp.s.closeStream(rp.stream)
		rp.kept = nil
	}
}

// settle is called by the handler attached with gen when it is woken. It
// writes a plain answer that is ready, and reports whether the handler's part
// is over (answered, ended, or detached).
func (rp *reply) settle(gen uint32) bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.gen != gen || rp.w == nil {
		return true
	}
	if rp.result != nil {
		writeJSON(rp.w, http.StatusOK, *rp.result)
		putBuf(rp.result)
		rp.result = nil
		rp.w = nil
		return true
	}
	if rp.done {
		rp.w = nil
		return true
	}
	return false
}

// abandon is called by the handler attached with gen when it stops waiting
// (timeout, session end): an answer that is ready wins; otherwise the caller
// gets the error code/msg (no message at all when code is 0), and the call's
// own answer is dropped when it comes.
func (rp *reply) abandon(gen uint32, code int, msg string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.gen != gen || rp.w == nil {
		return
	}
	switch {
	case rp.result != nil:
		writeJSON(rp.w, http.StatusOK, *rp.result)
		putBuf(rp.result)
		rp.result = nil
	case rp.done:
	default:
		rp.done = true
		if code != 0 && !rp.sse && rp.sseOnly {
			rp.startSSELocked()
		}
		if code != 0 && rp.w != nil {
			b := getBuf()
			*b = appendError(*b, rp.id, code, msg, nil)
			if rp.sse {
				rp.writeLocked(appendEvent(nil, rp.nextIDLocked(), *b))
			} else {
				writeJSON(rp.w, http.StatusOK, *b)
			}
			putBuf(b)
		}
		rp.dropStreamLocked()
	}
	rp.w = nil
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

// detach is called by the handler attached with gen when its client went
// away. The call runs on; a resumable stream keeps its events.
func (rp *reply) detach(gen uint32) {
	rp.mu.Lock()
	if rp.gen == gen {
		rp.w = nil
		if rp.result != nil {
			putBuf(rp.result)
			rp.result = nil
		}
	}
	rp.mu.Unlock()
}

// closeHTTP ends the attached HTTP response early without ending the call
// (Outbound.CloseStream). Only a resumable stream can be closed: the client
// reconnects with GET + Last-Event-ID.
func (rp *reply) closeHTTP() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if !rp.resumable || rp.done || rp.w == nil || !rp.acceptSSE {
		return
	}
	if !rp.sse {
		rp.startSSELocked()
		if !rp.resumable {
			return
		}
	}
	rp.w = nil
	rp.wake()
}

// resume attaches a GET that reconnects to this stream after event n: it
// replays the kept events after n, and reports over when the stream has
// nothing more to send. A handler still attached is taken over: a client
// that resumes has stopped reading the old response.
func (rp *reply) resume(w http.ResponseWriter, n uint64) (gen uint32, sig <-chan struct{}, over bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.w != nil {
		rp.wake() // the old handler finds itself detached and returns
	}
	rp.w = w
	rp.gen++
	rp.signal = make(chan struct{}, 1)
	rp.rc = startSSE(w)
	for _, e := range rp.kept {
		if e.seq > n && !rp.writeLocked(e.data) {
			break
		}
	}
	if rp.done {
		if rp.w != nil {
			rp.dropStreamLocked()
		}
		rp.w = nil
		return rp.gen, rp.signal, true
	}
	return rp.gen, rp.signal, false
}

// writeChannelEvents writes events to a GET channel and flushes them.
func writeChannelEvents(w http.ResponseWriter, rc *http.ResponseController, evs []ringEvent) error {
	for _, e := range evs {
		if _, err := w.Write(e.data); err != nil {
			return err
		}
	}
	return rc.Flush()
}

var keepAliveComment = []byte(": keepalive\n\n")
