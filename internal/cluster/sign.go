package cluster

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
	"github.com/nats-io/nats.go"
)

// What travels on NATS is signed with a key every node holds ([Config.Key],
// derived from the state key `serve` requires in cluster mode), so that a
// NATS client that is not a node cannot inject pushes to sessions, make the
// nodes forget one another, nor, above all, write a node address of its own
// into the bucket: the nodes forward their clients' requests (bearer tokens,
// bodies) to the address the bucket gives. Without the key a NATS client can
// still read what the nodes publish and delete or garble the bucket's
// entries (the nodes then answer 404 for those sessions). It cannot replay
// a message: each carries its origin, its signer's boot id and a sequence
// number, and a receiver accepts each number once (replay.go).
//
// The bucket's entries carry no numbers: an entry is a node's state (its
// address, or that it restarts), not an event; the bucket keeps the newest
// one per node, and the node puts its own back every heartbeat. What a
// NATS client can replay there is an older signed entry of the same node:
// `restarting` once the node is back (503 for its sessions until the next
// heartbeat), or the address of a node since gone (unreachable: 404, as
// without the entry). Deleting the entry, which no signature prevents, does
// as much (404). The one case beyond that is a node id that moved to
// another address: its old entry put back sends its sessions' requests
// to the old address until the next heartbeat. An expiry signed into the
// entries would close it, at the cost of a format all nodes must switch to
// at once.
//
// Version 2 of the message signature (this one) and version 1 (no numbers,
// "<unix>.<MAC>" over "luamcp msg v1") do not read each other's messages:
// accepting version 1 would accept its replays. A cluster half upgraded
// drops the pushes, broadcasts and `left` between old and new nodes until
// all run version 2 (forwards and the bucket's entries are unchanged and
// still work); a new node logs that an older node's message was dropped.

// sigHeader carries a message's signature:
// "v2.<unix seconds>.<boot id>.<sequence number>.<base64url HMAC>".
const sigHeader = "Luamcp-Sig"

// Domains of the message MACs: version 2 (signed and checked) and version 1
// (recognized, to tell an older node from a forger in the log).
const (
	msgDomain   = "luamcp msg v2"
	msgDomainV1 = "luamcp msg v1"
	sigPrefix   = "v2."
)

// msgMaxSkew bounds the age (and clock skew) of a signed message, as
// forward signatures are bounded.
const msgMaxSkew = 2 * time.Minute

// signer signs and checks NATS messages and bucket entries; a nil one (no
// key: tests, embedding) signs nothing and accepts everything.
type signer struct {
	key []byte
	// origin is the node that signs (originHeader of what it sends), boot
	// a random id of this process, and seq the number of the last message
	// signed: a receiver accepts each (origin, boot, seq) once.
	origin, boot string
	seq          atomic.Uint64
	// macs holds keyed HMAC states and their scratch, reset between uses:
	// pushes are signed and checked one by one on the hot path, and
	// hmac.New allocates both hashes each time.
	macs sync.Pool
	// warned spaces the warnings about bad signatures, replayed spaces
	// those about replays: a NATS client that floods must not flood the
	// log.
	warned, replayed logcap.Throttle
	// replays counts the messages dropped as replays (the log shows the
	// first of each minute).
	replays atomic.Int64
}

// newSigner derives the NATS key from the cluster's shared key, for node
// origin; nil for no key.
func newSigner(key []byte, origin string) *signer {
	if len(key) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("luamcp cluster nats key v1"))
	var boot [12]byte
	rand.Read(boot[:]) // never fails (crypto/rand)
	return &signer{key: m.Sum(nil), origin: origin, boot: base64.RawURLEncoding.EncodeToString(boot[:])}
}

// macState is a keyed HMAC and the buffer its input is gathered in (one
// Write rather than one per field, each of which would copy its string).
type macState struct {
	h   hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// mac is the HMAC of fields, each ended by a NUL, then data.
func (s *signer) mac(data []byte, fields ...string) [sha256.Size]byte {
	st, _ := s.macs.Get().(*macState)
	if st == nil {
		st = &macState{h: hmac.New(sha256.New, s.key)}
	} else {
		st.h.Reset()
	}
	st.buf = st.buf[:0]
	for _, f := range fields {
		st.buf = append(append(st.buf, f...), 0)
	}
	st.h.Write(st.buf)
	st.h.Write(data)
	var sum [sha256.Size]byte
	copy(sum[:], st.h.Sum(st.sum[:0]))
	if cap(st.buf) <= 4096 { // a huge subject is not kept
		s.macs.Put(st)
	}
	return sum
}

// sign sets m's origin (this node) and signature, over its subject, the
// origin, the time, the boot id, a new sequence number and the data.
func (s *signer) sign(m *nats.Msg) {
	if s == nil {
		return
	}
	s.signAt(m, time.Now())
}

// signAt is sign as of now.
func (s *signer) signAt(m *nats.Msg, now time.Time) {
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	if m.Header.Get(originHeader) != s.origin {
		m.Header[originHeader] = []string{s.origin}
	}
	var b [128]byte
	v := append(b[:0], sigPrefix...)
	v = strconv.AppendInt(v, now.Unix(), 10)
	unix := v[len(sigPrefix):]
	v = append(append(v, '.'), s.boot...)
	v = append(v, '.')
	seqAt := len(v)
	v = strconv.AppendUint(v, s.seq.Add(1), 10)
	sum := s.mac(m.Data, msgDomain, m.Subject, s.origin, string(unix), s.boot, string(v[seqAt:]))
	v = append(v, '.')
	v = base64.RawURLEncoding.AppendEncode(v, sum[:])
	m.Header[sigHeader] = []string{string(v)}
}

// signed is what a valid signature says of a message.
type signed struct {
	from  replayKey // originHeader and boot id
	seq   uint64
	stamp int64 // unix seconds
}

// verify reports whether m carries a valid signature of this cluster's key,
// made within msgMaxSkew of now, and what it says.
func (s *signer) verify(m *nats.Msg, now time.Time) (signed, bool) {
	rest, ok := strings.CutPrefix(m.Header.Get(sigHeader), sigPrefix)
	if !ok {
		return signed{}, false
	}
	unix, rest, _ := strings.Cut(rest, ".")
	boot, rest, _ := strings.Cut(rest, ".")
	seq, sig, ok := strings.Cut(rest, ".")
	origin := m.Header.Get(originHeader)
	if !ok || origin == "" || boot == "" {
		return signed{}, false
	}
	t, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return signed{}, false
	}
	if d := now.Sub(time.Unix(t, 0)); d > msgMaxSkew || d < -msgMaxSkew {
		return signed{}, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return signed{}, false
	}
	sum := s.mac(m.Data, msgDomain, m.Subject, origin, unix, boot, seq)
	if !equalMAC(sum, sig) {
		return signed{}, false
	}
	return signed{from: replayKey{origin, boot}, seq: n, stamp: t}, true
}

// equalMAC reports, in constant time, whether sig is sum in base64url.
func equalMAC(sum [sha256.Size]byte, sig string) bool {
	var enc [43]byte // base64.RawURLEncoding.EncodedLen(sha256.Size)
	base64.RawURLEncoding.Encode(enc[:], sum[:])
	if len(sig) != len(enc) {
		return false
	}
	var diff byte
	for i := range enc {
		diff |= enc[i] ^ sig[i]
	}
	return diff == 0
}

// olderNode reports whether m carries a version 1 signature of this
// cluster's key: a node of an older version sent it.
func (s *signer) olderNode(m *nats.Msg) bool {
	unix, sig, ok := strings.Cut(m.Header.Get(sigHeader), ".")
	if !ok {
		return false
	}
	if _, err := strconv.ParseInt(unix, 10, 64); err != nil {
		return false
	}
	return equalMAC(s.mac(m.Data, msgDomainV1, m.Subject, m.Header.Get(originHeader), unix), sig)
}

// checked reports whether m, received by node on the subscription g
// guards, is signed with the cluster's key and was not accepted before; one
// that is not is to be dropped, and is logged now and then.
func (s *signer) checked(m *nats.Msg, g *replayGuard, log *slog.Logger, node string) bool {
	if s == nil {
		return true
	}
	return s.checkedAt(m, g, log, node, time.Now())
}

// checkedAt is checked as of now.
func (s *signer) checkedAt(m *nats.Msg, g *replayGuard, log *slog.Logger, node string, now time.Time) bool {
	v, ok := s.verify(m, now)
	if !ok {
		if s.shouldWarn() {
			if s.olderNode(m) {
				log.Warn("cluster: a NATS message of a node running an older luamcp (version 1 signatures, which do not stop replays) was dropped: pushes and broadcasts between it and this node are lost until every node is upgraded (further ones are dropped silently for a minute)", "node", node, "subject", m.Subject, "from", m.Header.Get(originHeader))
			} else {
				log.Warn("cluster: a NATS message not signed by a node of this cluster was dropped: another NATS client publishes on the cluster's subjects, or a node has another state key (further ones are dropped silently for a minute)", "node", node, "subject", m.Subject)
			}
		}
		return false
	}
	if why := g.admit(v.from, v.seq, v.stamp, now); why != "" {
		s.replays.Add(1)
		if ok, held := s.replayed.Allow(now, time.Minute); ok {
			log.Warn("cluster: a NATS message was dropped as a replay: another NATS client published again a message a node had sent, or (if none can) a node's message arrived more than the replay window out of order (further ones are dropped silently for a minute)", "node", node, "subject", m.Subject, "from", v.from.origin, "seq", v.seq, "why", why, "held_back", held)
		}
		return false
	}
	return true
}

// entry is the bucket value of node at addr: the address and, with a key,
// its signature after a space (a URL holds no space).
func (s *signer) entry(node, addr string) []byte {
	if s == nil {
		return []byte(addr)
	}
	sum := s.mac(nil, "luamcp node v1", node, addr)
	return []byte(addr + " " + base64.RawURLEncoding.EncodeToString(sum[:]))
}

// address returns the address in a bucket value of node; false when its
// signature does not hold.
func (s *signer) address(node string, value []byte) (string, bool) {
	if s == nil {
		return string(value), true
	}
	addr, sig, ok := strings.Cut(string(value), " ")
	if !ok {
		return "", false
	}
	return addr, equalMAC(s.mac(nil, "luamcp node v1", node, addr), sig)
}

// shouldWarn reports whether a bad signature is to be logged: at most one a
// minute.
func (s *signer) shouldWarn() bool {
	ok, _ := s.warned.Allow(time.Now(), time.Minute)
	return ok
}
