package mcp

import (
	"errors"
	"net/http"
	"sync/atomic"
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
type bodyBudget struct {
	n   atomic.Int64 // bytes held by bodies being read
	max atomic.Int64 // bound on n; 0 means none
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
// n <= 0 means no bound. Past it a request that arrives, or whose body grows,
// gets 503, unless it is the only one whose body is being read.
func (h *Hub) SetBodyBudget(n int64) { h.bodies.max.Store(max(n, 0)) }
