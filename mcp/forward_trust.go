package mcp

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Headers of a forwarded request, besides [ForwardedHeader]. The entry node
// sets them ([Handler.forward]) and signs them with the state key every node
// of a cluster shares ([Hub.SetStateKey]); the owner serves a request that
// carries ForwardedHeader only when the signature holds.
const (
	// ForwardedForHeader carries the client's address as the entry node
	// saw it (its RemoteAddr): the owner's auth hook sees it as the
	// request's remote address.
	ForwardedForHeader = "Luamcp-Forwarded-For"
	// ForwardedProtoHeader is the scheme the client used on the entry
	// node ("http" or "https"): the owner's oauth challenge names the
	// metadata URL on it.
	ForwardedProtoHeader = "Luamcp-Forwarded-Proto"
	// ForwardSignatureHeader is "<unix seconds>.<base64url HMAC-SHA256>"
	// over the forwarding node, method, path, session id, client address,
	// scheme and time ([forwardMAC]).
	ForwardSignatureHeader = "Luamcp-Forward-Signature"
)

// forwardMaxSkew bounds the age (and the clock skew between nodes) of a
// forward's signature: a captured one cannot be replayed later than that.
const forwardMaxSkew = 2 * time.Minute

// errForwardSignature is why a forwarded request is refused; the details go
// to the log only.
var errForwardSignature = errors.New("mcp: forwarded request with a missing or bad signature")

// forwardMAC is the MAC of a forward. The domain prefix keeps it apart from
// the other use of the key (the 2026-07-28 era's requestState); NUL cannot
// occur in any field (header values, a path, a node id).
func forwardMAC(key []byte, node, method, path, session, client, proto string, unix int64) []byte {
	m, _ := forwardMACs.Get().(*keyedMAC)
	if m == nil || !bytes.Equal(m.key, key) {
		m = &keyedMAC{key: bytes.Clone(key), h: hmac.New(sha256.New, key)}
	} else {
		m.h.Reset()
	}
	b := m.buf[:0]
	for _, s := range []string{"luamcp forward v1", node, method, path, session, client, proto} {
		b = append(b, s...)
		b = append(b, 0)
	}
	b = strconv.AppendInt(b, unix, 10)
	b = append(b, 0)
	m.h.Write(b)
	sum := m.h.Sum(nil)
	m.buf = b[:0]
	forwardMACs.Put(m)
	return sum
}

// forwardMACs keeps HMAC states keyed with the state key: every forward is
// signed by one node and checked by another, and hmac.New (two hashes and
// the key's pads) cost each of them a few microseconds.
var forwardMACs sync.Pool

// keyedMAC is an HMAC state, the key it was made with, and the buffer its
// input is gathered in (one Write per MAC).
type keyedMAC struct {
	key []byte
	h   hash.Hash
	buf []byte
}

// signForward marks h, the headers of r as they go to the owner, as
// forwarded by node, and signs them.
func signForward(h http.Header, key []byte, node string, r *http.Request, at time.Time) {
	signForwardFields(h, key, node, r.Method, r.URL.Path, r.Header.Get("Mcp-Session-Id"), r.RemoteAddr, requestScheme(r), at)
}

// markForward sets the forward headers but the signature on h, for r.
func markForward(h http.Header, node string, r *http.Request) {
	slab := [3]string{node, r.RemoteAddr, requestScheme(r)}
	h[ForwardedHeader] = slab[0:1:1]
	h[ForwardedForHeader] = slab[1:2:2]
	h[ForwardedProtoHeader] = slab[2:3:3]
}

// signForwardFields sets the forward headers on h for a request with these
// fields, and signs them.
func signForwardFields(h http.Header, key []byte, node, method, path, session, client, proto string, at time.Time) {
	unix := at.Unix()
	mac := forwardMAC(key, node, method, path, session, client, proto, unix)
	h.Set(ForwardedHeader, node)
	h.Set(ForwardedForHeader, client)
	h.Set(ForwardedProtoHeader, proto)
	h.Set(ForwardSignatureHeader, strconv.FormatInt(unix, 10)+"."+base64.RawURLEncoding.EncodeToString(mac))
}

// verifyForward checks the signature of r, a request that carries
// [ForwardedHeader], made with key and no further than forwardMaxSkew from
// at. It returns what the entry node vouches for: the client's address and
// scheme.
func verifyForward(r *http.Request, key []byte, at time.Time) (client, proto string, err error) {
	node := r.Header.Get(ForwardedHeader)
	client = r.Header.Get(ForwardedForHeader)
	proto = r.Header.Get(ForwardedProtoHeader)
	if proto != "http" && proto != "https" {
		return "", "", errForwardSignature
	}
	ts, sig, ok := strings.Cut(r.Header.Get(ForwardSignatureHeader), ".")
	if !ok {
		return "", "", errForwardSignature
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", "", errForwardSignature
	}
	if d := at.Sub(time.Unix(unix, 0)); d > forwardMaxSkew || d < -forwardMaxSkew {
		return "", "", errors.New("mcp: forwarded request signed " + d.Round(time.Second).String() + " away from this node's clock")
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return "", "", errForwardSignature
	}
	want := forwardMAC(key, node, r.Method, r.URL.Path, r.Header.Get("Mcp-Session-Id"), client, proto, unix)
	if !hmac.Equal(mac, want) {
		return "", "", errForwardSignature
	}
	return client, proto, nil
}

// forwardedProtoKey is the context key of the scheme a forwarded request
// reached the entry node on.
type forwardedProtoKey struct{}

// linkedKey marks the context of a request a cluster link carried: its
// forward headers are trusted ([Handler.serveLinked]).
type linkedKey struct{}

// requestScheme is the scheme r reached the cluster on: its own, or the
// entry node's for a forwarded request.
func requestScheme(r *http.Request) string {
	ctx := r.Context()
	if p, ok := ctx.Value(forwardedProtoKey{}).(string); ok {
		return p
	}
	if ctx.Value(linkedKey{}) != nil {
		if r.Header.Get(ForwardedProtoHeader) == "https" {
			return "https"
		}
		return "http"
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
