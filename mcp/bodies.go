package mcp

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBodyBudget is the bytes of POST bodies, and of the requests
// waiting for them, a Hub's routes may hold at once while the bodies arrive
// (see [Hub.SetBodyBudget]).
const DefaultBodyBudget = 256 << 20

// errBodiesOverBudget refuses a body that would take the hub past its body
// budget.
var errBodiesOverBudget = errors.New("mcp: request bodies past the process's budget")

// bodyBudget bounds the bytes that the bodies every route of a hub is
// reading hold together. Each body has its bound (MaxBodyBytes, BodyTimeout),
// but they multiply by the connections: 200 clients that send 4 MiB less a
// byte and stop held 1 GB for BodyTimeout, and --max-connections allows tens
// of thousands. Past the budget the body that grows is refused (503), never
// one already read; a body alone always fits, so the bound never refuses
// what MaxBodyBytes allows on an idle process.
//
// A request waiting for its body holds more than the body: its headers (up
// to the server's MaxHeaderBytes) and the goroutine and buffers of a request
// in flight. An HTTP/2 or HTTP/3 connection carries 100 requests at once, so
// clients whose streams announce bodies and send none held 100 times that per
// connection (50 connections with 56 KiB of headers per stream: 364 MiB) for
// BodyTimeout. So while a request's body is read, [requestCost] of it counts
// too: taken before the first byte, given back with the body's bytes once the
// body is read, so that past the budget a new request is refused at once and
// lets its headers go rather than holding them for BodyTimeout.
//
// Refusing new requests alone would let a few hundred such connections
// keep every other client's POST refused for as long as they stall (200
// connections of 100 streams with small headers: 216 of 251 pings refused). So past the budget the requests that
// have waited longest for their bodies, over stallAfter, are cut to make
// room (their read ends at once, with the same 503), and the new request is
// read: a client whose body follows its headers, as every real one's does,
// is served, and a stalled request holds its place for stallAfter at least.
type bodyBudget struct {
	n   atomic.Int64 // bytes held by bodies being read
	max atomic.Int64 // bound on n; 0 means none

	mu         sync.Mutex
	head, tail *bodyWait // the requests reading their bodies, oldest first
}

// stallAfter is how long a request may wait for its body before it may be
// cut to make room in a full budget: a body sent with its request arrives
// far sooner, unless it is megabytes over a slow link.
const stallAfter = time.Second

// A bodyWait is a request whose body is being read, in its budget's list.
// They are pooled (bodyWaits): one is taken for every POST.
type bodyWait struct {
	prev, next *bodyWait
	since      time.Time
	held       atomic.Int64 // bytes it counts in the budget
	// w is the request's writer, whose read deadline cut sets; nil when it
	// has none (tests, wrappers): the request cannot be cut.
	w      http.ResponseWriter
	listed bool // in the list; guarded by the budget's mu
	wasCut bool // guarded by the budget's mu
}

// bodyWaits pools the bodyWaits: a POST's is put back once it left its
// budget's list, where only the budget's mu reached it.
var bodyWaits = sync.Pool{New: func() any { return new(bodyWait) }}

// newBodyWait returns a bodyWait for a request whose writer is w (nil: it
// cannot be cut); free gives it back.
func newBodyWait(w http.ResponseWriter) *bodyWait {
	x := bodyWaits.Get().(*bodyWait)
	x.w = w
	return x
}

// free puts x back in the pool, once it has left its budget (or never
// entered one).
func (x *bodyWait) free() {
	x.prev, x.next, x.since, x.w, x.listed, x.wasCut = nil, nil, time.Time{}, nil, false, false
	x.held.Store(0)
	bodyWaits.Put(x)
}

// cut makes the request's body read fail at once: a deadline in the past.
func (x *bodyWait) cut() {
	_ = http.NewResponseController(x.w).SetReadDeadline(time.Now())
}

// enter counts cost for w, a request about to read its body, and lists it
// if it can be cut (it has a writer). Past the budget it cuts the requests
// listed longest, if they have waited stallAfter, until what they hold makes
// room for cost; if they cannot, it cuts them all the same and reports
// false, counting nothing. A nil budget counts nothing.
func (b *bodyBudget) enter(w *bodyWait, cost int64) bool {
	if b == nil {
		return true
	}
	ok := b.take(cost, 0)
	if w.w == nil { // a writer without deadlines: it cannot be cut
		if ok {
			w.held.Store(cost)
		}
		return ok
	}
	w.since = time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !ok {
		need := b.n.Load() + cost - b.max.Load()
		for x := b.head; x != nil && need > 0 && w.since.Sub(x.since) >= stallAfter; x = x.next {
			if !x.wasCut {
				x.wasCut = true
				x.cut()
				need -= x.held.Load()
			}
		}
		if need > 0 {
			return false
		}
		// Counted past the bound until the cut requests give back what
		// they hold, within moments.
		b.n.Add(cost)
	}
	w.held.Store(cost)
	w.listed = true
	w.prev = b.tail
	if b.tail != nil {
		b.tail.next = w
	} else {
		b.head = w
	}
	b.tail = w
	return true
}

// leave gives back what w holds and unlists it; it reports whether w was
// cut to make room.
func (b *bodyBudget) leave(w *bodyWait) (cut bool) {
	if b == nil {
		return false
	}
	if w.w == nil {
		b.give(w.held.Load())
		return false
	}
	b.mu.Lock()
	if !w.listed {
		b.mu.Unlock()
		return false
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		b.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		b.tail = w.prev
	}
	cut = w.wasCut
	b.mu.Unlock()
	b.give(w.held.Load())
	return cut
}

// take counts n more bytes held by a body that holds mine already, or
// reports false, counting nothing, when they would pass the bound while
// other bodies hold bytes too. A nil budget counts nothing.
func (b *bodyBudget) take(n, mine int64) bool {
	if b == nil {
		return true
	}
	v := b.n.Add(n)
	if m := b.max.Load(); m > 0 && v > m && v > n+mine {
		b.n.Add(-n)
		return false
	}
	return true
}

// give returns n bytes a body held.
func (b *bodyBudget) give(n int64) {
	if b != nil && n != 0 {
		b.n.Add(-n)
	}
}

// bodies returns the body budget of h's hub, nil without a hub (tests):
// a nil budget counts nothing.
func (h *Handler) bodies() *bodyBudget {
	if h.hub == nil {
		return nil
	}
	return &h.hub.bodies
}

// requestOverhead is what a request in flight holds whatever its headers:
// its goroutine's stack, the request and response writer with their
// buffers, and the pooled buffer its body is read into. Measured: 5,000
// HTTP/2 streams waiting for their bodies, with a few hundred bytes of
// headers each, held 16 KiB apiece (9 KiB of heap, 7 KiB of stack).
const requestOverhead = 16 << 10

// requestCost estimates what r holds while its body has not been read:
// requestOverhead, and its header fields counted as HTTP/2 counts a header
// list against SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 section 6.5.2: name,
// value and 32 bytes per field), the pseudo-header fields (method, scheme,
// authority, path) included.
func requestCost(r *http.Request) int64 {
	uri := len(r.RequestURI)
	if uri == 0 && r.URL != nil {
		uri = len(r.URL.Path) + len(r.URL.RawQuery)
	}
	n := int64(requestOverhead + len(r.Method) + len("https") + len(r.Host) + uri + 4*32)
	for name, values := range r.Header {
		for _, v := range values {
			n += int64(len(name) + len(v) + 32)
		}
	}
	return n
}

// SetBodyBudget bounds the bytes that the POST bodies every route served
// through h is reading hold at once, together with the requests waiting for
// them (their headers; see [requestCost]): [DefaultBodyBudget] at first;
// n <= 0 means no bound. Past it a request whose body grows gets 503,
// unless it is the only one whose body is being read; a request that
// arrives cuts those that have waited over a second for their bodies (they
// get the 503) to make room, and gets the 503 itself when they are too few.
// A call waiting in its session's queue counts its request and its body too,
// until it runs (session.admit): past the budget it is refused with the 503.
func (h *Hub) SetBodyBudget(n int64) { h.bodies.max.Store(max(n, 0)) }
