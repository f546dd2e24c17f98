package cluster

import (
	"strings"
	"sync"
	"time"
)

// Replays. A NATS client that is not a node cannot sign a message, but it
// can publish again, byte for byte, one it saw: a push delivered twice, a
// node's `left` replayed so that the others forget a live node. So each
// node numbers what it signs (sign.go): its id (originHeader), a boot id
// drawn at random when the process starts, and a sequence number one higher
// for each message, all inside the MAC. A receiver keeps, per (origin, boot),
// the highest number it accepted and which of the replayWindow numbers
// below it it accepted, the sliding window of IPsec's and DTLS's
// anti-replay (RFC 4303 section 3.4.3, RFC 6347 section 4.1.2.6): a number
// it accepted already is a replay, one below the window is refused as one.
//
// One such state per subscription (a replayGuard each), not per node: NATS
// delivers a publisher connection's messages to a subscription in the order
// they were published, but each subscription of a node (its pushes, the
// pubsub wildcard, `left`) has its own queue and goroutine in nats.go, up to
// 512Ki messages deep, so one may lag another by far more than any window.
// Within one subscription the only disorder is the sender's own: goroutines
// that numbered their messages in one order and published them in the other
// (signing and PublishMsg are two steps), about as many numbers apart as
// goroutines publish at once; replayWindow leaves room for thousands. The
// numbers a subscription does not see (pushes
// to other nodes, broadcasts while it only gets pushes) leave holes, which
// cost nothing. A legitimate message refused is worse than a replay let
// through, hence the wide window, and each refusal is logged (throttled).
//
// The state of an (origin, boot) is forgotten once the newest signing time
// accepted from it is older than msgMaxSkew (plus replaySlack): every
// message of it a client could replay is refused on its time by then, so a
// guard holds about one state per live node and subscription. A node
// restarting draws a new boot id, and its numbers start again in a state of
// their own.
//
// What remains: a guard knows nothing of what was sent before its node
// subscribed, so a node that just started accepts, once each, messages of
// the last msgMaxSkew that it never received and a NATS client replays to it
// (the push for a session it restored, a `left` that drops an address from
// its cache, which the next lookup brings back).
const (
	// replayWindow is how many numbers, the highest one accepted and those
	// just below it, a guard remembers; below them it accepts none (a
	// multiple of 64: 512 bytes a signer).
	replayWindow = 4096
	// replayPairs bounds the (origin, boot) states of a guard: only a key
	// holder makes new ones (a node's restart makes one), so past it the
	// stalest is dropped.
	replayPairs = 512
	// replaySlack is how long past msgMaxSkew a state is kept: a message
	// checked for its time just before a state is forgotten, and for its
	// number just after, must still meet it.
	replaySlack = time.Minute
	// replaySweep is how often, at most, a guard looks for states to forget.
	replaySweep = 30 * time.Second
)

// replayGuard refuses NATS messages one subscription has accepted already.
// The zero value is ready; it is safe for concurrent use (one
// subscription's handler runs on one goroutine: the lock is uncontended).
type replayGuard struct {
	mu    sync.Mutex
	seen  map[replayKey]*replayState
	sweep int64 // unix seconds from when the next sweep may run
}

// replayKey is a signer: a node's id and the boot id of its process.
type replayKey struct{ origin, boot string }

// replayState is what a guard keeps of one signer.
type replayState struct {
	top    uint64 // the highest number accepted
	newest int64  // the newest signing time accepted (unix seconds)
	// bits has bit n%replayWindow set when number n, top-replayWindow < n <=
	// top, was accepted.
	bits [replayWindow / 64]uint64
}

// Reasons a guard refuses a message (for the log).
const (
	replaySeen   = "its sequence number was accepted already"
	replayTooOld = "its sequence number is below the replay window"
)

// admit records number seq of signer k, signed at stamp (unix seconds),
// and returns "" when it is new, else why it is refused. now is the
// receiver's time.
func (g *replayGuard) admit(k replayKey, seq uint64, stamp int64, now time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	unix := now.Unix()
	if unix >= g.sweep {
		g.forgetStale(unix)
	}
	st := g.seen[k]
	if st == nil {
		if g.seen == nil {
			g.seen = make(map[replayKey]*replayState)
		}
		if len(g.seen) >= replayPairs {
			g.forgetStale(unix)
		}
		if len(g.seen) >= replayPairs {
			g.dropStalest()
		}
		st = &replayState{top: seq, newest: stamp}
		st.set(seq)
		// The key's strings are cut from the message's header: copied,
		// not to keep the whole header alive.
		g.seen[replayKey{strings.Clone(k.origin), strings.Clone(k.boot)}] = st
		return ""
	}
	switch {
	case seq > st.top:
		st.advance(seq)
	case st.top-seq >= replayWindow:
		return replayTooOld
	case st.has(seq):
		return replaySeen
	default:
		st.set(seq)
	}
	st.newest = max(st.newest, stamp)
	return ""
}

// forgetStale drops the states whose newest message is too old to be
// accepted again (with replaySlack to spare), and sets the next sweep.
func (g *replayGuard) forgetStale(unix int64) {
	g.sweep = unix + int64(replaySweep/time.Second)
	limit := unix - int64((msgMaxSkew+replaySlack)/time.Second)
	for k, st := range g.seen {
		if st.newest < limit {
			delete(g.seen, k)
		}
	}
}

// dropStalest drops the state with the oldest newest message: the guard is
// full of live ones, which only key holders make. Replays of that signer's
// messages are accepted again, each once, until they are too old.
func (g *replayGuard) dropStalest() {
	var stalest replayKey
	first := true
	var oldest int64
	for k, st := range g.seen {
		if first || st.newest < oldest {
			stalest, oldest, first = k, st.newest, false
		}
	}
	delete(g.seen, stalest)
}

// pairs returns how many signers g tracks (tests).
func (g *replayGuard) pairs() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

func (st *replayState) has(n uint64) bool {
	return st.bits[n/64%(replayWindow/64)]&(1<<(n%64)) != 0
}

func (st *replayState) set(n uint64) {
	st.bits[n/64%(replayWindow/64)] |= 1 << (n % 64)
}

// advance makes seq (> top) the highest number accepted: the numbers
// between the two were not seen, and those that fall out of the window
// leave their bits to the new ones.
func (st *replayState) advance(seq uint64) {
	if d := seq - st.top; d >= replayWindow {
		st.bits = [replayWindow / 64]uint64{}
	} else {
		// Counted by d, not up to seq: no end near the top of uint64
		// to wrap past.
		for n := st.top + 1; d > 0; {
			if n%64 == 0 && d >= 64 {
				st.bits[n/64%(replayWindow/64)] = 0 // a whole word at once
				n, d = n+64, d-64
				continue
			}
			st.bits[n/64%(replayWindow/64)] &^= 1 << (n % 64)
			n, d = n+1, d-1
		}
	}
	st.top = seq
	st.set(seq)
}
