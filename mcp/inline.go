package mcp

import (
	"net/http"
	"time"
)

// A session request that finds its session free runs on its handler's own
// goroutine, the way a stateless request does: handing it to the session's
// worker and back cost two goroutine switches per call, and on a busy
// process the hand-offs kept the scheduler from polling the network, which
// put a 10 to 20 ms tail on a share of the answers (session c=16 p99 3 to 5
// times the stateless one under wrk). Only what the handler would otherwise
// do while it waits needs another goroutine: writing what the call sends
// before its answer, so that a client that stops reading holds that
// goroutine and not the call, and answering the caller when request_timeout
// passes while the call runs on. An [inlineWatch] starts one for that, when
// it is first needed, and most calls never need it.
//
// A call that sends before its answer does not start the watcher at once:
// the watcher's response must be able to end early, so it closes its
// connection, and a tool that reports progress and returns within
// [inlineGrace] (the common case) would pay a new connection per call for
// nothing. Its messages wait at most that long; if the call returns first,
// the handler writes them with the answer, on a connection kept alive.
//
// What a watcher writes may have to end before the handler returns (the
// answer on timeout, a stream the script closed, one a resuming GET took
// over). Only over HTTP/1.1 can a response end then: its headers ask for the
// connection to close, and the watcher takes the connection over, ends the
// body and closes it ([sink.hangUp]). So only HTTP/1.1 requests run inline;
// over HTTP/2 and HTTP/3 a session call goes through the queue, whose
// hand-offs cost less there than the framing around them.

// watchState is the life of an inline call's watcher. Transitions, under the
// reply's mu: watchIdle -> watchArmed (the call sent a message);
// watchIdle or watchArmed -> watchStarted (request_timeout passed, or
// [inlineGrace] after the first message); watchIdle or watchArmed ->
// watchOff (the call returned first).
type watchState uint8

const (
	watchIdle    watchState = iota // the call runs; nothing to serve yet
	watchArmed                     // the call sent a message; grace runs
	watchStarted                   // a goroutine serves the client (run)
	watchOff                       // the call returned: the handler serves its answer
)

// inlineGrace is how long what an inline call sends before its answer may
// wait for the call to return (see above). Long enough for a quick tool's
// progress, short enough not to matter to a request sent to the client
// (elicitation, sampling), which waits on a person or a model.
const inlineGrace = 2 * time.Millisecond

// An inlineWatch stands in for the handler of a call that the handler runs
// itself (see [Handler.serveInline]). It lives in the call's job.
type inlineWatch struct {
	h   *Handler
	s   *session
	j   *job
	gen uint32
	wt  waiter

	// Guarded by j.rp.mu.
	state    watchState
	returned bool           // the call returned (runJob is done)
	k        *sink          // the response the watcher serves
	grace    *time.Timer    // set in watchArmed: starts the watcher
	fire     chan time.Time // request_timeout passed; made by startLocked
	done     chan struct{}  // closed when run returns; made by startLocked
}

// serveInline runs j, which admit let run at once on the session's state,
// on the handler's goroutine, then writes its answer (with the stream before
// it, for a call that sent messages), or leaves that to the watcher if one
// started.
func (h *Handler) serveInline(r *http.Request, s *session, j *job, gen uint32, wake <-chan struct{}) {
	w := &j.watch
	*w = inlineWatch{h: h, s: s, j: j, gen: gen, wt: waiter{wake: wake, ended: s.ended(), gone: r.Context().Done()}}
	j.rp.mu.Lock()
	j.rp.watch = w
	j.rp.mu.Unlock()
	var timer *time.Timer
	if j.rp.streaming {
		// A progress stream has no timeout; it is SSE at once, its priming
		// event the first message the watcher would send.
		j.rp.startStream()
	} else {
		timer = time.AfterFunc(h.opts.RequestTimeout, w.timedOut)
	}
	s.runJob(j)
	s.calls.Done() // admit counted the call
	if timer != nil {
		timer.Stop()
	}

	j.rp.mu.Lock()
	w.returned = true
	started := w.state == watchStarted
	if !started {
		w.state = watchOff
		if w.grace != nil {
			w.grace.Stop()
		}
	}
	j.rp.mu.Unlock()
	if started {
		<-w.done
		return
	}
	// The answer is decided: one pump writes it.
	if j.rp.pump(gen) == pumpLost {
		h.lostClient(s, j, gen)
	}
}

// sentLocked is the call queueing a message before its answer: the watcher
// starts [inlineGrace] later unless the call returns first. Called with
// j.rp.mu held.
func (w *inlineWatch) sentLocked() {
	if w.state != watchIdle {
		return
	}
	w.state = watchArmed
	w.grace = time.AfterFunc(inlineGrace, w.graceOver)
}

// graceOver is [inlineGrace] passing after the call's first message.
func (w *inlineWatch) graceOver() {
	rp := &w.j.rp
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if w.state == watchArmed {
		w.startLocked()
	}
}

// startLocked starts the watcher. Called with j.rp.mu held, in watchIdle or
// watchArmed.
func (w *inlineWatch) startLocked() {
	w.state = watchStarted
	w.fire = make(chan time.Time, 1)
	w.wt.timeout = w.fire
	w.done = make(chan struct{})
	// The handler does not return right after what the watcher writes: the
	// call may still run. Nothing is written yet: the handler writes only
	// once the call returned.
	// A resuming GET may have taken the stream over during the grace: its
	// response is not the watcher's to hang up.
	if rp := &w.j.rp; rp.gen == w.gen && rp.out != nil {
		w.k = rp.out
		w.k.makeHangable()
	}
	go w.run()
}

// run serves the client as a handler whose call runs elsewhere does. When
// that part is over before the call returns (an answer on timeout, a stream
// the script closed or a resuming GET took over, a lost client), the
// response must end now, not when the handler returns: run hangs it up.
func (w *inlineWatch) run() {
	defer close(w.done)
	w.h.awaitCall(w.s, w.j, w.gen, &w.wt)
	rp := &w.j.rp
	rp.mu.Lock()
	early := !w.returned
	rp.mu.Unlock()
	if early && w.k != nil {
		w.k.hangUp()
	}
}

// timedOut is request_timeout passing while the call runs: the watcher
// answers the caller, starting if it had not.
func (w *inlineWatch) timedOut() {
	rp := &w.j.rp
	rp.mu.Lock()
	defer rp.mu.Unlock()
	switch w.state {
	case watchIdle, watchArmed:
		w.startLocked()
	case watchOff:
		return
	}
	select {
	case w.fire <- time.Now():
	default:
	}
}
