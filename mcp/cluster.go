package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// A Cluster joins a [Hub] to the other processes ("nodes") serving the same
// routes ([Hub.SetCluster]). A session lives on the node that created it (its
// Lua state cannot move), and its id names that node: "<node>.<32 hex>". A
// request for a session of another node is handed to Forward; a Notify or
// Log for one is handed to Send.
type Cluster interface {
	// NodeID names this node ([ValidNodeID]).
	NodeID() string
	// Forward serves r, a request for a session owned by node, by proxying
	// it to that node (streams flushed through, headers and Host as they
	// are), or answers 404 when the node is gone. It ends when the client
	// leaves (r's context) or stop is closed (this node shuts down). A POST's body was read
	// already, within the route's MaxBodyBytes and BodyTimeout: r.Body
	// holds it in memory, r.ContentLength is its length. It runs after this node's
	// remote-access and Origin gates; r carries [ForwardedHeader] and its
	// signature ([ForwardSignatureHeader]), so that the owner serves it
	// rather than forwarding it again, skips those gates, and runs the
	// oauth check and the auth hook.
	Forward(w http.ResponseWriter, r *http.Request, node string, stop <-chan struct{})
	// Send carries push (made by the hub, opaque to the Cluster) to node,
	// whose hub gets it through the function given to Attach. At most once.
	Send(node string, push []byte)
	// Attach gives the function that delivers the pushes other nodes Send
	// to this one. SetCluster calls it once.
	Attach(deliver func(push []byte))
}

// A MemberCluster is a [Cluster] that can tell that a node is not one of
// its members. A request naming a session (or task) of such a node is not
// forwarded: this node serves it, as one naming a session it does not have,
// so its answer is the one an unknown session gets (404, -32600 "Unknown or
// expired session", after this node's oauth check and auth hook). Clients
// can name a made-up node in every request: the Cluster answers without
// asking its registry each time.
type MemberCluster interface {
	Cluster
	// Member reports whether node may hold sessions. False only when node
	// is certainly not in the cluster: not even a node that joined just
	// before the request arrived. Unsure (the registry cannot be read),
	// it is true, and Forward answers.
	Member(ctx context.Context, node string) bool
}

// A LinkCluster is a [Cluster] that can carry forwarded requests on links:
// one connection from a node to another per route, opened as an HTTP/1.1
// upgrade to [LinkProtocol] signed as a forward is, on which many requests
// and their answers travel at once, framed by the Cluster. The owner's
// handler verifies the opening request and hands the connection to
// ServeLink; each request the link carries is then served as a verified
// forward.
type LinkCluster interface {
	Cluster
	// SignForwards gives the function that signs a forward: it sets the
	// forward headers ([ForwardedHeader], [ForwardedForHeader],
	// [ForwardedProtoHeader], [ForwardSignatureHeader]) on h for a request
	// with these fields. SetCluster calls it once. A LinkCluster's Forward
	// gets requests marked but not signed (the first three headers set): it
	// signs those it sends over HTTP rather than a link, and the request
	// opening each link (no session nor client, scheme "http").
	SignForwards(sign func(h http.Header, method, path, session, client, proto string))
	// ServeLink takes over the connection of r, a verified request to open
	// a link, and serves the requests the link carries with l.Serve until
	// the link fails or l.Done is closed; it returns once the requests in
	// flight are done.
	ServeLink(w http.ResponseWriter, r *http.Request, l Link)
}

// LinkProtocol is the Upgrade token that opens a link ([LinkCluster]).
const LinkProtocol = "luamcp-link/1"

// Link is what a route gives [LinkCluster.ServeLink].
type Link struct {
	// Serve serves one request the link carried. Its forward headers
	// (client address, scheme) are trusted: the link's opening was signed.
	Serve http.HandlerFunc
	// MaxRequest bounds a request's body (the route's MaxBodyBytes).
	MaxRequest int64
	// Done is closed when the route shuts down: the link takes no more
	// requests, and closes once the ones in flight are answered.
	Done <-chan struct{}
}

// ForwardedHeader marks a request a node forwarded to the owner of its
// session, and names that node: the owner serves it (404 when the session
// is gone) and never forwards it again, so a stale view of the cluster
// cannot loop. A request carrying it without a valid signature
// ([ForwardSignatureHeader]) is refused with 403.
const ForwardedHeader = "Luamcp-Forwarded-By"

// SetCluster joins the hub to a cluster: the session ids it mints name
// c.NodeID(), requests for other nodes' sessions are forwarded, and pushes
// to them sent. Call it before the routes serve.
func (h *Hub) SetCluster(c Cluster) {
	h.cluster = c
	c.Attach(h.deliverRemote)
	if lc, ok := c.(LinkCluster); ok {
		lc.SignForwards(h.signFields)
	}
}

// signFields signs a forward by this node with these fields.
func (h *Hub) signFields(hd http.Header, method, path, session, client, proto string) {
	signForwardFields(hd, h.stateKey(), h.cluster.NodeID(), method, path, session, client, proto, now())
}

// serveLink hands r, a verified request to open a link, to the cluster.
func (h *Handler) serveLink(c LinkCluster, w http.ResponseWriter, r *http.Request) {
	h.statelessMu.Lock()
	if h.closing.Err() != nil {
		h.statelessMu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	h.forwarding.Add(1)
	h.statelessMu.Unlock()
	defer h.forwarding.Done()
	// The requests the link carries have contexts derived from r's: this
	// value tells requestScheme to read their scheme from their headers.
	r = r.WithContext(context.WithValue(r.Context(), linkedKey{}, true))
	c.ServeLink(w, r, Link{Serve: h.serveLinked, MaxRequest: h.opts.MaxBodyBytes, Done: h.closing.Done()})
}

// upgradesTo reports whether r asks to switch its connection to protocol:
// "Upgrade" among its Connection options and protocol its Upgrade.
func upgradesTo(r *http.Request, protocol string) bool {
	if r.Header.Get("Upgrade") != protocol {
		return false
	}
	for _, v := range r.Header["Connection"] {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return true
			}
		}
	}
	return false
}

// serveLinked serves a request a link carried: a forward whose signature
// the link's opening stood for.
func (h *Handler) serveLinked(w http.ResponseWriter, r *http.Request) {
	if !h.serves(r.Method) {
		h.methodNotAllowed(w)
		return
	}
	// The link's opening vouched for the node; the node vouches for the
	// client's address, which it always sends.
	if r.RemoteAddr = r.Header.Get(ForwardedForHeader); r.RemoteAddr == "" {
		h.refused(GateForward)
		writeJSONError(w, http.StatusForbidden, nil, CodeInvalidRequest, "Forwarded request refused: no client address")
		return
	}
	h.forwarded(ForwardedIn)
	h.serveAuthorizing(w, r)
}

// newSessionID returns a fresh session id: 32 lowercase hex characters, after
// "<node>." in a cluster.
func (h *Hub) newSessionID() string {
	if h.cluster == nil {
		return newSessionID()
	}
	return h.cluster.NodeID() + "." + newSessionID()
}

// ValidNodeID reports whether id may name a node ([Cluster.NodeID]): 1 to 64
// characters of [A-Za-z0-9_-]. Those are safe in a session id, a NATS subject
// token and a KV key, and exclude '.', which ends the node id in a session id.
func ValidNodeID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// sessionNode returns the node named by a session id of the form
// "<node>.<32 lowercase hex>", "" for anything else: ids come from clients,
// and one that could not have been minted is unknown here, not forwarded.
func sessionNode(id string) string {
	node, rest, ok := strings.Cut(id, ".")
	if !ok || !ValidNodeID(node) || len(rest) != 32 {
		return ""
	}
	for _, c := range []byte(rest) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ""
		}
	}
	return node
}

// taskNode returns the node named by the task id of a 2026-07-28 tasks/*
// request (its Mcp-Name header, which the owner checks against the body):
// "<node>.<22 base64url characters>"; "" for any other request or id.
func taskNode(r *http.Request) string {
	if spec := methods[r.Header.Get("Mcp-Method")]; r.Method != http.MethodPost || spec == nil || !spec.task {
		return ""
	}
	id, ok := headerValue(r.Header, "Mcp-Name")
	if !ok {
		return ""
	}
	node, rest, ok := strings.Cut(id, ".")
	if !ok || !ValidNodeID(node) || len(rest) != taskIDChars {
		return ""
	}
	for _, c := range []byte(rest) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return ""
		}
	}
	return node
}

// forward hands r to the cluster when it names a session (or, in the
// 2026-07-28 era, a task) of another node and was not forwarded already; it
// reports whether it did.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request) bool {
	c := h.hub.cluster
	if c == nil || r.Header.Get(ForwardedHeader) != "" {
		return false
	}
	var node string
	if statelessEraVersion(r.Header.Get("Mcp-Protocol-Version")) {
		// The era ignores session ids: any node serves it, but for a
		// task's requests, which go to the node that holds the task
		// (whatever the route's mode).
		node = taskNode(r)
	} else if sid := r.Header["Mcp-Session-Id"]; len(sid) > 0 && h.opts.Sessions {
		node = sessionNode(sid[0])
	}
	if node == "" || node == c.NodeID() {
		return false
	}
	if mc, ok := c.(MemberCluster); ok && !mc.Member(r.Context(), node) {
		return false // unknown here, as it would be on any node
	}
	// A POST's body is read here, within the route's bounds (MaxBodyBytes,
	// BodyTimeout), as the owner would: the Cluster gets it in memory and
	// sends it with the request's head, and a client dribbling a body ties
	// up no connection to the owner.
	var body []byte
	if r.Method == http.MethodPost {
		var ok bool
		if body, ok = h.readPost(w, r); !ok {
			return true
		}
	}
	h.statelessMu.Lock()
	if h.closing.Err() != nil {
		h.statelessMu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable) // this node is going away; the owner may not be
		return true
	}
	h.forwarding.Add(1)
	h.statelessMu.Unlock()
	defer h.forwarding.Done()
	// r itself goes on: its body was read (the server closes the one it
	// made, not this), and its headers are marked in place.
	fr := r
	if r.Method == http.MethodPost {
		fr.Body, fr.ContentLength = newMemBody(body), int64(len(body))
	} else if r.Body != nil && r.Body != http.NoBody {
		// A GET or DELETE carries nothing the owner reads: a body a client
		// sent with one is not forwarded (read, it would be unbounded, and
		// a link would frame it). On a copy: the server still owns r.Body.
		cp := *r
		cp.Body, cp.ContentLength = http.NoBody, 0
		fr = &cp
	}
	// The client's own headers are marked in place (a copy cost a forward
	// 1.6 µs): nothing reads them after the forward, and one that claimed
	// to be forwarded never gets here. A LinkCluster signs only what it
	// sends over HTTP: a link's opening was signed for all it carries.
	dropConnectionFields(fr.Header)
	if _, ok := c.(LinkCluster); ok {
		markForward(fr.Header, c.NodeID(), r)
	} else {
		signForward(fr.Header, h.hub.stateKey(), c.NodeID(), r, now())
	}
	h.forwarded(ForwardedOut)
	bw := &boundedWriter{ResponseWriter: w, rc: *http.NewResponseController(w), timeout: h.opts.WriteTimeout}
	// Shutdown ends forwarded streams too (stop): they would hold the
	// listener's graceful shutdown open until its deadline.
	c.Forward(bw, fr, node, h.closing.Done())
	if bw.pending && r.ProtoMajor == 1 {
		// What the answer left in the connection's buffer goes now, under
		// the bound, not when the handler returns, under none.
		_ = bw.FlushError()
	}
	return true
}

// dropConnectionFields removes the fields the client's Connection header
// names, and the header itself, as a proxy does (RFC 9110 §7.6.1): they were
// for this hop. Done before the forward marks are set, and not left to the
// Cluster, which drops what Connection names as it sends the request: a
// client naming a mark there would strip it after it was set, and the owner
// would take the forward for a request of the entry node itself.
func dropConnectionFields(h http.Header) {
	conn, ok := h["Connection"]
	if !ok {
		return
	}
	for _, v := range conn {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	delete(h, "Connection")
}

// memBody is a request body in memory: a bytes.Reader that closes, in one
// allocation rather than NopCloser's two.
type memBody struct{ bytes.Reader }

func newMemBody(b []byte) *memBody {
	m := new(memBody)
	m.Reset(b)
	return m
}

func (*memBody) Close() error { return nil }

// boundedWriter bounds each write of a forwarded answer to the client by
// timeout, as [sink] bounds the transport's own: a client that stops reading
// a forwarded stream has it cut (the write fails, the forward ends), rather
// than holding the forward, its connection and one to the owner for ever.
// Between writes no deadline is set: a stream may be silent for long.
type boundedWriter struct {
	http.ResponseWriter
	rc      http.ResponseController // a value: one allocation less per forward
	timeout time.Duration
	// pending is set when bytes were written since the last flush: they
	// may wait in the connection's buffer. (A flush with nothing written
	// would commit an answer without a length to chunked encoding.)
	pending bool
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	_ = b.rc.SetWriteDeadline(time.Now().Add(b.timeout))
	n, err := b.ResponseWriter.Write(p)
	if err == nil {
		_ = b.rc.SetWriteDeadline(time.Time{})
	}
	b.pending = b.pending || n > 0
	return n, err
}

// FlushError is what [http.ResponseController.Flush] calls.
func (b *boundedWriter) FlushError() error {
	_ = b.rc.SetWriteDeadline(time.Now().Add(b.timeout))
	err := b.rc.Flush()
	if err == nil {
		_ = b.rc.SetWriteDeadline(time.Time{})
		b.pending = false
	}
	return err
}

// Flush implements [http.Flusher].
func (b *boundedWriter) Flush() { _ = b.FlushError() }

// Unwrap lets an [http.ResponseController] reach the writer's other
// methods.
func (b *boundedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// remotePush is a Notify or Log for a session of another node, as sent
// through Cluster.Send.
type remotePush struct {
	Route   string          `json:"route"`
	Session string          `json:"session"`
	Level   string          `json:"level,omitempty"` // a Log's level: the owner filters by the session's level
	Msg     json.RawMessage `json:"msg"`             // the encoded notification
}

// sendRemote sends msg for a session the hub does not know to the node its
// id names; false when there is no such other node.
func (p *RoutePushes) sendRemote(sessionID, level string, msg []byte) bool {
	c := p.hub.cluster
	if c == nil {
		return false
	}
	node := sessionNode(sessionID)
	if node == "" || node == c.NodeID() {
		return false
	}
	b, err := json.Marshal(remotePush{Route: p.path, Session: sessionID, Level: level, Msg: msg})
	if err != nil { // msg was checked valid JSON
		p.hub.log.Warn("mcp: push dropped", "err", err)
		return true
	}
	c.Send(node, b)
	return true
}

// deliverRemote delivers a push another node sent to one of this node's
// sessions.
func (h *Hub) deliverRemote(push []byte) {
	var rp remotePush
	if err := json.Unmarshal(push, &rp); err != nil {
		h.log.Warn("mcp: a push from another node dropped", "err", err)
		return
	}
	p := h.Route(rp.Route)
	s := p.session(rp.Session)
	if s == nil {
		h.pushesDropped(rp.Route, DropNoSession, 1)
		return
	}
	if rp.Level != "" && levelSeverity(rp.Level) < int(s.level.Load()) {
		return
	}
	s.Deliver(rp.Msg)
}
