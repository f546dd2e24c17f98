package mcp

import (
	"errors"
	"sync/atomic"
)

// DefaultBodyBudget is the bytes of POST bodies a Hub's routes may hold at
// once while they arrive (see [Hub.SetBodyBudget]).
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

// SetBodyBudget bounds the bytes of POST bodies that every route served
// through h holds at once while they arrive: [DefaultBodyBudget] at first;
// n <= 0 means no bound. Past it a request whose body grows gets 503,
// unless its body is the only one being read.
func (h *Hub) SetBodyBudget(n int64) { h.bodies.max.Store(max(n, 0)) }
