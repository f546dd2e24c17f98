package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"strconv"
	"strings"
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
// still read what the nodes publish, delete or garble the bucket's entries
// (the nodes then answer 404 for those sessions), and replay a message it
// saw within msgMaxSkew.

// sigHeader carries a message's signature: "<unix seconds>.<base64url HMAC>".
const sigHeader = "Luamcp-Sig"

// msgMaxSkew bounds the age (and clock skew) of a signed message, as
// forward signatures are bounded.
const msgMaxSkew = 2 * time.Minute

// signer signs and checks NATS messages and bucket entries; a nil one (no
// key: tests, embedding) signs nothing and accepts everything.
type signer struct {
	key []byte
	// warned spaces the warnings about bad signatures: a NATS client that
	// floods must not flood the log.
	warned logcap.Throttle
}

// newSigner derives the NATS key from the cluster's shared key; nil for
// none.
func newSigner(key []byte) *signer {
	if len(key) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("luamcp cluster nats key v1"))
	return &signer{key: m.Sum(nil)}
}

// mac is the HMAC of fields, each ended by a NUL, then data (not copied:
// pushes are signed and checked on the hot path).
func (s *signer) mac(data []byte, fields ...string) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, f := range fields {
		io.WriteString(m, f)
		m.Write([]byte{0})
	}
	m.Write(data)
	return m.Sum(nil)
}

// sign sets m's signature, over its subject, the origin header, the time and
// the data.
func (s *signer) sign(m *nats.Msg) {
	if s == nil {
		return
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	unix := strconv.FormatInt(time.Now().Unix(), 10)
	sum := s.mac(m.Data, "luamcp msg v1", m.Subject, m.Header.Get(originHeader), unix)
	m.Header.Set(sigHeader, unix+"."+base64.RawURLEncoding.EncodeToString(sum))
}

// verify reports whether m carries a valid signature of this cluster's key.
func (s *signer) verify(m *nats.Msg) bool {
	if s == nil {
		return true
	}
	unix, sig, ok := strings.Cut(m.Header.Get(sigHeader), ".")
	if !ok {
		return false
	}
	t, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return false
	}
	if d := time.Since(time.Unix(t, 0)); d > msgMaxSkew || d < -msgMaxSkew {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, s.mac(m.Data, "luamcp msg v1", m.Subject, m.Header.Get(originHeader), unix))
}

// checked reports whether m, received by node, is signed with the cluster's
// key; one that is not is to be dropped, and is logged now and then.
func (s *signer) checked(m *nats.Msg, log *slog.Logger, node string) bool {
	if s.verify(m) {
		return true
	}
	if s.shouldWarn() {
		log.Warn("cluster: a NATS message not signed by a node of this cluster was dropped: another NATS client publishes on the cluster's subjects, or a node has another state key (further ones are dropped silently for a minute)", "node", node, "subject", m.Subject)
	}
	return false
}

// entry is the bucket value of node at addr: the address and, with a key,
// its signature after a space (a URL holds no space).
func (s *signer) entry(node, addr string) []byte {
	if s == nil {
		return []byte(addr)
	}
	return []byte(addr + " " + base64.RawURLEncoding.EncodeToString(s.mac(nil, "luamcp node v1", node, addr)))
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
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return "", false
	}
	return addr, hmac.Equal(got, s.mac(nil, "luamcp node v1", node, addr))
}

// shouldWarn reports whether a bad signature is to be logged: at most one a
// minute.
func (s *signer) shouldWarn() bool {
	ok, _ := s.warned.Allow(time.Now(), time.Minute)
	return ok
}
