package mcp

import (
	"bytes"
	"strconv"
	"sync"
)

// A pushStream is a stream of server pushes: each push is numbered, framed
// as an SSE event and kept in a replay ring (eventRing), and the one reader
// attached is woken. A session's GET channel is one (its events carry their
// number as SSE id, for Last-Event-ID), and so is a subscriptions/listen
// stream (no ids: the 2026-07-28 era does not resume). The handler that
// serves either writes it with writePushes. A call's own POST stream is a
// reply: it also ends with the call's result.
type pushStream struct {
	ids bool // events carry their number as SSE id

	mu sync.Mutex
	// last is the number of the last push; pushes are numbered from 1.
	last uint64
	// ring keeps the framed events, for replay and for the reader.
	ring eventRing
	// wake is the attached reader's signal; nil when none is attached.
	wake chan struct{}
	// closed: the stream takes no more pushes.
	closed bool
	// read is the number of the last push a reader took (writePushes asks
	// for what follows it, attach hands over everything up to last): a push
	// above it that the ring evicts is lost to the client.
	read uint64
	// dropped, when set, is told how many pushes the ring evicted unread.
	// It is set before the stream is shared, then only read.
	dropped func(n int)
}

func newPushStream(ids bool, max, maxBytes int, budget *replayBudget) *pushStream {
	p := new(pushStream)
	p.init(ids, max, maxBytes, budget)
	return p
}

// init prepares a pushStream that is part of another value (a session's
// GET channel), before it is shared. Its ring is charged to budget (nil: to
// none) until close.
func (p *pushStream) init(ids bool, max, maxBytes int, budget *replayBudget) {
	p.ids = ids
	p.ring = eventRing{max: max, maxBytes: maxBytes, budget: budget}
}

// push numbers, frames and keeps msg, then wakes the reader. It reports
// false when the stream is closed. msg is kept as it is (pushEvent): the
// caller does not change it afterwards.
func (p *pushStream) push(msg []byte) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.last++
	id := ""
	if p.ids {
		var idb [20]byte
		id = string(strconv.AppendUint(idb[:0], p.last, 10))
	}
	first := p.ring.oldest()
	evicted := p.ring.add(pushEvent(p.last, id, msg))
	lost := 0
	if from := max(first, p.read+1); evicted >= from && first > 0 {
		lost = int(evicted - from + 1) // pushes are numbered without gaps
	}
	wake := p.wake
	p.mu.Unlock()
	if lost > 0 && p.dropped != nil {
		p.dropped(lost)
	}
	if wake != nil {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	return true
}

// pushEvent is the event of push n, whose SSE id is id ("" for none): msg
// itself is kept, shared with every stream it was pushed to, unless it has a
// line break, which an SSE data line cannot hold (appendEvent replaces it in
// a copy). The transport's messages are compact JSON and have none.
func pushEvent(n uint64, id string, msg []byte) ringEvent {
	if bytes.ContainsAny(msg, "\r\n") {
		return ringEvent{id: n, data: appendEvent(make([]byte, 0, len(msg)+40), id, msg)}
	}
	return ringEvent{id: n, data: appendEventHead(make([]byte, 0, 40), id), msg: msg}
}

// attach makes a new reader the attached one and returns the number of the
// last push (it reads what follows) and its wake signal. With replay set it
// also returns the kept events after lastID, taken at once so that later
// pushes cannot evict them before they are sent.
func (p *pushStream) attach(lastID uint64, replay bool) (last uint64, kept []ringEvent, wake <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wake = make(chan struct{}, 1)
	p.read = p.last
	if replay && lastID < p.last {
		kept = p.ring.after(lastID, nil)
	}
	return p.last, kept, p.wake
}

// detach forgets the attached reader whose signal is wake.
func (p *pushStream) detach(wake <-chan struct{}) {
	p.mu.Lock()
	if p.wake == wake {
		p.wake = nil
	}
	p.mu.Unlock()
}

// after appends the kept events numbered above id. The reader asks for them
// once it has taken everything up to id, so id is also what it has read.
func (p *pushStream) after(id uint64, dst []ringEvent) []ringEvent {
	p.mu.Lock()
	p.read = max(p.read, id)
	dst = p.ring.after(id, dst)
	p.mu.Unlock()
	return dst
}

// close makes the stream refuse further pushes and forgets the events it
// kept: nobody reads or resumes a closed stream (its session ended, or its
// listen request), and their bytes go back to the budget.
func (p *pushStream) close() {
	p.mu.Lock()
	p.closed = true
	p.ring.release()
	p.mu.Unlock()
}

// writePushes writes p's events numbered above sent to k as they come, and a
// keep-alive comment when wt says one is due, until wt reports the client
// gone or the end of what the stream serves; it returns that outcome. A
// failed write is waitGone. With lossless set, a reader that fell so far
// behind that the ring dropped events it had not sent is ended (waitGone):
// the client learns of the loss by the end of its stream.
func writePushes(k *sink, p *pushStream, sent uint64, wt *waiter, lossless bool) waitOutcome {
	var evs []ringEvent
	for {
		evs = p.after(sent, evs[:0])
		if len(evs) > 0 {
			if lossless && evs[0].id != sent+1 {
				return waitGone
			}
			if writeChannelEvents(k, evs) != nil {
				return waitGone
			}
			sent = evs[len(evs)-1].id
			clear(evs)
		}
		switch o := wt.next(); o {
		case waitTick:
			if k.sse(keepAliveComment) != nil {
				return waitGone
			}
		case waitWoken:
		default:
			return o
		}
	}
}
