package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
)

// Handler serves one MCP route: JSON-RPC over Streamable HTTP (POST, and GET
// and DELETE in session mode).
type Handler struct {
	srv     Server
	opts    Options
	hub     *Hub
	log     *slog.Logger
	allow   []string
	origins map[string]struct{}
	reg     *registry

	// concurrentTools is the set of Options.ConcurrentTools.
	concurrentTools map[string]struct{}

	// evicted is evictedPushes' func, made on first use (the hub's
	// observer is set before the routes serve).
	evicted struct {
		once sync.Once
		fn   func(n int)
	}

	// paramHeaders is what the route's tools lists showed of x-mcp-header
	// (a paramHeaderState): it decides which 2026-07-28 tools/call requests
	// have their Mcp-Param-* headers checked against the tool's
	// inputSchema, a check that costs a tools listing.
	paramHeaders atomic.Int32

	// Requests to clients in stateless mode wait here (per route).
	pending pendingTable
	// tasks are the route's tasks (both eras').
	tasks taskStore
	// suspendedTasks are the tasks Suspend kept of the route's (not its
	// sessions'): set once, as its shutdown ends (SavedTasks). Guarded by
	// statelessMu.
	suspendedTasks []SavedTask
	reqPrefix      string
	reqSeq         atomic.Uint64

	closing      context.Context // cancelled by Shutdown
	closeRoute   context.CancelFunc
	shutdownOnce sync.Once

	// In-flight stateless calls, which Shutdown stops and waits for.
	statelessMu    sync.Mutex
	statelessCalls map[*job]context.CancelFunc
	statelessWG    sync.WaitGroup
	// forwarding counts the requests handed to the Cluster (forward), whose
	// contexts Shutdown cancels; added to under statelessMu while the route
	// is not closing, so that Shutdown's Wait sees every Add.
	forwarding sync.WaitGroup

	// Space the warnings any client can trigger at will (warnThrottled):
	// forwards without a valid signature, answers to no request, tasks
	// past the store's bound, bearer tokens while the verifier cannot
	// judge them.
	badForwardWarn, badResponseWarn, taskFullWarn, verifierWarn logcap.Throttle
}

// NewHandler returns the handler of one route served by srv. A nil hub gets
// a private one; a nil logger means slog.Default().
func NewHandler(srv Server, opts Options, hub *Hub, logger *slog.Logger) *Handler {
	opts = opts.Defaults()
	if logger == nil {
		logger = slog.Default()
	}
	if !ValidCacheScope(opts.CacheScope) {
		// The route options' parser refuses it; a Handler built otherwise
		// must still send what the schema allows.
		logger.Warn("mcp: cache scope must be \"public\" or \"private\"; using \"private\"", "path", opts.Path, "scope", opts.CacheScope)
		opts.CacheScope = DefaultCacheScope
	}
	if hub == nil {
		hub = NewHub(logger)
	}
	h := &Handler{
		srv:     srv,
		opts:    opts,
		hub:     hub,
		log:     logger,
		origins: make(map[string]struct{}, len(opts.Origins)),
		reg:     newRegistry(opts.MaxSessions),

		statelessCalls: make(map[*job]context.CancelFunc),
	}
	h.allow = []string{"POST"}
	if opts.Sessions {
		h.allow = []string{"POST, GET, DELETE"}
	}
	for _, o := range opts.Origins {
		h.origins[o] = struct{}{}
	}
	if len(opts.ConcurrentTools) > 0 {
		h.concurrentTools = make(map[string]struct{}, len(opts.ConcurrentTools))
		for _, name := range opts.ConcurrentTools {
			h.concurrentTools[name] = struct{}{}
		}
	}
	var p [6]byte
	_, _ = rand.Read(p[:])
	h.reqPrefix = "s-" + hex.EncodeToString(p[:]) + "-"
	h.closing, h.closeRoute = context.WithCancel(context.Background())
	return h
}

// SessionCount reports the live sessions of the route.
func (h *Handler) SessionCount() int { return h.reg.count() }

// Shutdown ends every session of the route (terminate reason "shutdown"),
// closing their streams and stopping their calls, and stops the stateless
// calls in flight; it returns when they are gone or ctx ends. Afterwards
// initialize is refused with 503 and stateless requests with -32603.
func (h *Handler) Shutdown(ctx context.Context) error {
	return h.shutdown(ctx, func(s *session) { s.terminate("shutdown") }, false)
}

// shutdown is Shutdown, which ends each session with end; with keepTasks,
// the route's tasks that are over then are kept for SavedTasks.
func (h *Handler) shutdown(ctx context.Context, end func(*session), keepTasks bool) error {
	h.shutdownOnce.Do(h.closeRoute)
	h.statelessMu.Lock()
	for _, cancel := range h.statelessCalls {
		cancel()
	}
	h.statelessMu.Unlock()
	sessions := h.reg.close()
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				end(s)
			}()
		}
		wg.Wait()
		h.statelessWG.Wait()
		if keepTasks {
			saved := h.tasks.save("") // over: what ran ended above
			h.statelessMu.Lock()
			h.suspendedTasks = saved
			h.statelessMu.Unlock()
		}
		h.tasks.close() // the running ones ended above; their timers go too
		h.forwarding.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serves reports whether the route serves the HTTP method: POST, and GET
// and DELETE with sessions.
func (h *Handler) serves(method string) bool {
	switch method {
	case http.MethodPost:
		return true
	case http.MethodGet, http.MethodDelete:
		return h.opts.Sessions
	}
	return false
}

// ServeHTTP serves the route. Verbs that are not served get 405 before any
// gate; served verbs pass the remote-access, Origin, oauth and auth gates in
// that order. In a cluster, a request for another node's session is
// forwarded after the first two (the owner runs oauth and auth), and a
// forwarded request passes its signature instead of the first two.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lc, linking := h.hub.cluster.(LinkCluster)
	// A node opens a link to another with a GET, whatever the route's mode:
	// a stateless route's links carry its tasks' requests (forward).
	linking = linking && r.Method == http.MethodGet && r.Header[ForwardedHeader] != nil && upgradesTo(r, LinkProtocol)
	if !linking && !h.serves(r.Method) {
		h.methodNotAllowed(w)
		return
	}
	if _, ok := r.Header[ForwardedHeader]; ok {
		// Another node forwarded it, after applying the remote-access and
		// Origin gates to the client: its signature vouches for that and
		// for the client's address and scheme, which the auth hook and the
		// oauth challenge see.
		client, proto, err := verifyForward(r, h.hub.stateKey(), now())
		if err != nil {
			h.refused(GateForward)
			h.warnThrottled(&h.badForwardWarn, "mcp: forwarded request refused (do the nodes share the state key?)",
				"by", r.Header.Get(ForwardedHeader), "remote", r.RemoteAddr, "err", err)
			writeJSONError(w, http.StatusForbidden, nil, CodeInvalidRequest, "Forwarded request refused: not signed by a node of this cluster")
			return
		}
		if linking {
			h.serveLink(lc, w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), forwardedProtoKey{}, proto))
		r.RemoteAddr = client
		h.forwarded(ForwardedIn)
	} else if status := h.gate(r); status != 0 {
		w.WriteHeader(status)
		return
	}
	// The oauth check and the auth hook run once, on the node that serves
	// the request: not before a forward.
	if h.forward(w, r) {
		return
	}
	h.serveAuthorizing(w, r)
}

// serveAuthorizing serves r, which passed the gates of this node or of the
// node that forwarded it, from the oauth check on.
func (h *Handler) serveAuthorizing(w http.ResponseWriter, r *http.Request) {
	var info *AuthInfo
	if h.opts.OAuth != nil {
		if info = h.authenticate(w, r); info == nil {
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), authKey{}, info))
	}
	if status := h.authHook(r, info); status != 0 {
		if status == http.StatusUnauthorized && info != nil {
			// A 401 says where to get a token (RFC 6750 section 3; MCP
			// "Authorization": clients look for the metadata in it): the
			// hook refused this one, so the client is told to get another.
			h.setChallenge(w, r, msgHookRefusedToken, h.opts.OAuth.Scopes)
		}
		w.WriteHeader(status)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r)
	case http.MethodGet:
		h.serveGet(w, r)
	default:
		h.serveDelete(w, r)
	}
}

func (h *Handler) methodNotAllowed(w http.ResponseWriter) {
	w.Header()["Allow"] = h.allow
	w.WriteHeader(http.StatusMethodNotAllowed)
}

// gate returns 0 when r may be served, else the status to reject it with.
func (h *Handler) gate(r *http.Request) int {
	if !h.opts.AllowRemoteAccess && (!loopbackPeer(r.RemoteAddr) || !loopbackHost(r.Host)) {
		h.refused(GateRemoteAccess)
		return http.StatusForbidden
	}
	if origin, ok := r.Header["Origin"]; ok && len(origin) > 0 {
		if _, allowed := h.origins[origin[0]]; !allowed && !loopbackSameOrigin(origin[0], r.Host) {
			h.refused(GateOrigin)
			return http.StatusForbidden
		}
	}
	return 0
}

// authHook runs Options.Auth, which sees the verified token (info, nil on a
// route without oauth); it returns 0 when r may be served, else the status
// to reject it with.
func (h *Handler) authHook(r *http.Request, info *AuthInfo) int {
	if h.opts.Auth == nil {
		return 0
	}
	req := authRequest(r)
	req.Auth = info
	status := h.opts.Auth(r.Context(), req)
	if status == 0 {
		return 0
	}
	h.refused(GateAuth)
	if status < 400 || status > 599 {
		h.log.Warn("mcp: auth rejected with a status that is not an HTTP error; using 403", "status", status)
		status = http.StatusForbidden
	}
	return status
}

// authRequest is what the auth hook sees of r.
func authRequest(r *http.Request) *AuthRequest {
	headers := make(map[string]string, len(r.Header))
	for name, values := range r.Header {
		headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	return &AuthRequest{Method: r.Method, Path: r.URL.Path, Headers: headers, RemoteAddr: r.RemoteAddr}
}

// loopbackPeer reports whether the TCP peer is 127.0.0.0/8 or ::1 (IPv4-mapped
// included). An address that does not parse fails closed.
func loopbackPeer(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// loopbackSameOrigin reports whether origin is the request's own origin on a
// loopback Host (the conformance suite's "valid" case): only this server can
// have served a page there, so it is not a cross-origin request. A foreign
// Host, which DNS rebinding produces, never qualifies.
func loopbackSameOrigin(origin, host string) bool {
	rest, ok := strings.CutPrefix(origin, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(origin, "https://")
	}
	return ok && rest == host && loopbackHost(host)
}

// loopbackHost reports whether the Host header names localhost or a loopback
// address, with any port. It guards against DNS rebinding.
func loopbackHost(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Unmap().IsLoopback()
}

// accept is what a POST's Accept header allows.
type accept struct {
	json bool // a JSON answer is acceptable
	sse  bool // text/event-stream is acceptable: the answer may stream
	// http1 is set when the request came over HTTP/1.x, where a JSON answer
	// is flushed within its write deadline (see sink.json); not for a request
	// a cluster link carried, whose answer goes as one frame when the
	// handler returns.
	http1 bool
}

// parseAccept reads the Accept values of a POST. ok is false when neither
// JSON nor SSE is acceptable (406). A missing header accepts JSON; */* and
// application/* accept JSON, text/* accepts SSE; q=0 excludes a range.
func parseAccept(values []string) (a accept, ok bool) {
	present := mediaRanges(values, func(typ string) {
		switch typ {
		case "application/json", "application/*", "*/*":
			a.json = true
		case "text/event-stream", "text/*":
			a.sse = true
		}
	})
	if !present {
		a.json = true
	}
	return a, a.json || a.sse
}

// acceptsEventStream reports whether the Accept values of a 2026-07-28
// subscriptions/listen allow an SSE stream, its only answer: a missing
// header does, and so do text/event-stream, text/* and */* unless q=0. (A
// session's GET does not read Accept, as the original's does not.)
func acceptsEventStream(values []string) bool {
	sse := false
	present := mediaRanges(values, func(typ string) {
		switch typ {
		case "text/event-stream", "text/*", "*/*":
			sse = true
		}
	})
	return sse || !present
}

// mediaRanges calls f with each media range of the Accept values, lower
// case and without its parameters, that q=0 does not exclude, and reports
// whether the values named any range at all.
func mediaRanges(values []string, f func(typ string)) (present bool) {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			typ, params, _ := strings.Cut(part, ";")
			typ = strings.TrimSpace(typ)
			if typ == "" {
				continue
			}
			present = true
			if !zeroQuality(params) {
				f(strings.ToLower(typ))
			}
		}
	}
	return present
}

// zeroQuality reports whether media-range parameters carry q=0.
func zeroQuality(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, found := strings.Cut(p, "=")
		if found && strings.EqualFold(strings.TrimSpace(k), "q") {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q == 0
		}
	}
	return false
}

// jsonContentType reports whether a Content-Type is application/json, with
// any parameters.
func jsonContentType(values []string) bool {
	if len(values) == 0 {
		return false
	}
	typ, _, _ := strings.Cut(values[0], ";")
	return strings.EqualFold(strings.TrimSpace(typ), "application/json")
}

// checkVersionHeader answers a GET or DELETE whose MCP-Protocol-Version the
// session era does not speak, and returns false: 405 for a 2026-07-28 client
// (that era has neither), 400 for an unknown version. A missing header means
// 2025-03-26.
func (h *Handler) checkVersionHeader(w http.ResponseWriter, r *http.Request) bool {
	v, ok := r.Header["Mcp-Protocol-Version"]
	if !ok || len(v) == 0 || sessionEraVersion(v[0]) {
		return true
	}
	if statelessEraVersion(v[0]) {
		h.methodNotAllowed(w)
		return false
	}
	writeJSONError(w, http.StatusBadRequest, nil, CodeInvalidRequest, msgUnsupportedVersion)
	return false
}

// msgUnsupportedVersion refuses a version header luamcp does not speak.
var msgUnsupportedVersion = "Bad Request: Unsupported protocol version (supported versions: " + strings.Join(supportedVersions, ", ") + ")"

// writeAnswer writes a 200 JSON-RPC answer in a form the client accepts: a
// JSON body, or one SSE event for a client that accepts only SSE. The write
// has the route's write deadline.
func (h *Handler) writeAnswer(w http.ResponseWriter, acc accept, body []byte) {
	k := newSink(w, h.opts.WriteTimeout, acc.http1)
	if acc.json {
		_ = k.json(body)
	} else {
		_ = k.sse(appendEvent(nil, "", body))
	}
	k.close()
}

// writeAnswerError writes a 200 JSON-RPC error answer (see writeAnswer).
func (h *Handler) writeAnswerError(w http.ResponseWriter, acc accept, id []byte, code int, msg string) {
	b := getBuf()
	*b = appendError(*b, id, code, msg, nil)
	h.writeAnswer(w, acc, *b)
	putBuf(b)
}

var errBodyTooLarge = errors.New("mcp: request body too large")

// readBody reads a POST body of at most MaxBodyBytes, within BodyTimeout: a
// body dribbled slower than that loses its connection. The read deadline is
// the connection's, so it is cleared afterwards for the reads that follow
// (the server's watch for the client going away, the next request).
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(h.opts.BodyTimeout)) != nil {
		return h.readBodyBytes(r, nil) // a writer without deadlines (tests, wrappers)
	}
	// A full body budget may cut the read short from another request's
	// goroutine (bodyBudget.enter): a deadline in the past ends it.
	body, err := h.readBodyBytes(r, w)
	if err != nil {
		// The deadline stays: net/http reads what is left of a body before it
		// answers, and that read must fail at once, not wait for the client.
		// HTTP/2 turns "Connection: close" into a GOAWAY; HTTP/3 forbids the
		// field (a client rejects the answer) and has no need of it: the
		// stream, not the connection, is abandoned.
		if r.ProtoMajor < 3 {
			w.Header().Set("Connection", "close")
		}
		return nil, err
	}
	_ = rc.SetReadDeadline(time.Time{})
	return body, nil
}

// readBodyBytes reads the body into a buffer that grows as bytes arrive,
// even when the length is announced: a client that announces MaxBodyBytes
// and sends nothing must not make the server hold MaxBodyBytes for
// BodyTimeout (32 such connections held 128 MiB). w, when set, is the
// writer whose read deadline the body budget may set to now to make room
// (bodyWait.cut); nil for a writer without deadlines.
func (h *Handler) readBodyBytes(r *http.Request, w http.ResponseWriter) (_ []byte, err error) {
	max := h.opts.MaxBodyBytes
	if n := r.ContentLength; n >= 0 {
		if n > max {
			return nil, errBodyTooLarge
		}
		// net/http reports a body shorter than announced as
		// io.ErrUnexpectedEOF and never delivers more.
		max = n
	}
	// The request itself is charged to the hub's body budget before a byte
	// of its body arrives (its headers: see bodyBudget), then what the
	// buffer grows by.
	budget := h.bodies()
	wait := newBodyWait(w)
	defer wait.free() // after it left the budget (the defer below)
	if !budget.enter(wait, requestCost(r)) {
		return nil, errBodiesOverBudget
	}
	defer func() {
		if budget.leave(wait) && err != nil {
			err = errBodiesOverBudget // cut to make room
		}
	}()
	b := getBuf()
	defer putBuf(b)
	buf := *b
	lr := io.LimitedReader{R: r.Body, N: max + 1} // a value: no allocation
	for {
		if len(buf) == cap(buf) {
			// Doubling keeps the copies of a body of n bytes under 2n; the
			// last step goes one byte past the limit, room for the EOF of
			// a body of exactly the limit or the byte of one too large.
			c := 2 * int64(cap(buf))
			if c >= max {
				c = max + 1
			}
			grow := c - int64(cap(buf))
			if !budget.take(grow, wait.held.Load()) {
				return nil, errBodiesOverBudget
			}
			wait.held.Add(grow)
			buf = append(make([]byte, 0, c), buf...)
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	*b = buf
	if int64(len(buf)) > max {
		return nil, errBodyTooLarge
	}
	return append([]byte(nil), buf...), nil
}

// readPost reads the body of a POST within the route's bounds; when it
// cannot (too large: 413; past the hub's body budget: 503; failed or too
// slow: 400) it answers and returns false.
func (h *Handler) readPost(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > h.opts.MaxBodyBytes {
		writeJSONError(w, http.StatusRequestEntityTooLarge, nil, CodeInvalidRequest, "Request body too large")
		return nil, false
	}
	body, err := h.readBody(w, r)
	if err != nil {
		switch {
		case errors.Is(err, errBodyTooLarge):
			writeJSONError(w, http.StatusRequestEntityTooLarge, nil, CodeInvalidRequest, "Request body too large")
		case errors.Is(err, errBodiesOverBudget):
			h.refuseOverBudget(w)
		default:
			h.log.Debug("mcp: reading the request body failed", "err", err)
			w.WriteHeader(http.StatusBadRequest)
		}
		return nil, false
	}
	return body, true
}

// refuseOverBudget answers a request the hub's body budget has no room
// for: its body as it arrives, or its call to wait in its session's queue.
func (h *Handler) refuseOverBudget(w http.ResponseWriter) {
	h.refused(GateProcessBodies)
	writeJSONError(w, http.StatusServiceUnavailable, nil, CodeInternalError, msgAtCapacity)
}

func (h *Handler) servePost(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readPost(w, r)
	if !ok {
		return
	}
	// The body is decoded before the header checks, so that their errors
	// can carry the request's id.
	var m message
	code := decodeMessage(body, &m)
	id := m.id
	if m.response {
		id = nil // a client's answer is not a request: no id to echo
	}
	if !jsonContentType(r.Header["Content-Type"]) {
		writeJSONError(w, http.StatusUnsupportedMediaType, id, CodeInvalidRequest,
			"Unsupported Media Type: Content-Type must be application/json")
		return
	}
	acc, ok := parseAccept(r.Header["Accept"])
	acc.http1 = r.ProtoMajor < 2 && r.Context().Value(linkedKey{}) == nil
	if !ok {
		writeJSONError(w, http.StatusNotAcceptable, id, CodeInvalidRequest,
			"Not Acceptable: Client must accept application/json or text/event-stream")
		return
	}
	if code == 0 && !h.checkToolScopes(w, r, &m) {
		return
	}
	switch eraOf(r, &m) {
	case eraStateless:
		h.serveStatelessEra(w, r, &m, acc, code)
		return
	case eraUnknown:
		writeErrorStatus(w, http.StatusBadRequest, id, unsupportedVersion(r.Header["Mcp-Protocol-Version"][0]))
		return
	}
	switch code {
	case CodeParseError:
		h.writeAnswerError(w, acc, nil, CodeParseError, "Parse error")
		return
	case CodeInvalidRequest:
		h.writeAnswerError(w, acc, id, CodeInvalidRequest, "Invalid Request")
		return
	}
	switch {
	case m.response:
		h.serveClientResponse(w, r, &m)
	case m.notification():
		h.serveNotification(w, r, &m)
	case m.method == methodInitialize:
		h.serveInitialize(w, r, &m, acc)
	case !h.opts.Sessions:
		h.serveStateless(w, r, &m, acc)
	default:
		s := h.lookupSession(w, r, m.id)
		if s == nil {
			return
		}
		if m.method == methodSubscribe || m.method == methodUnsubscribe {
			h.serveSubscription(w, s, &m, acc)
		} else if spec := methods[m.method]; spec != nil && spec.task && spec.eras&eraSession != 0 {
			h.serveSessionTask(w, r, s, &m, acc)
		} else {
			h.serveCall(w, r, s, &m, acc)
		}
	}
}

// streams reports whether a request is answered as a progress stream: a
// tools/call with a string name and a progress token, from a client that
// accepts SSE.
func streams(m *message, acc accept) bool {
	if spec := methods[m.method]; spec == nil || !spec.mayStream || !acc.sse || m.id == nil {
		return false
	}
	if _, ok := stringMember(m.params, "name"); !ok {
		return false
	}
	return progressToken(m.params) != nil
}

// lookupSession finds the session named by Mcp-Session-Id, or answers 400
// (missing) or 404 (unknown or ended: [Handler.unknownSessionStatus]) with a
// JSON-RPC error carrying id.
func (h *Handler) lookupSession(w http.ResponseWriter, r *http.Request, id []byte) *session {
	sid := r.Header["Mcp-Session-Id"]
	if len(sid) == 0 || sid[0] == "" {
		writeJSONError(w, http.StatusBadRequest, id, CodeInvalidRequest, "Missing Mcp-Session-Id")
		return nil
	}
	s := h.reg.get(sid[0])
	if s == nil {
		h.writeUnknownSession(w, id)
		return nil
	}
	if !ownedBy(s, r) {
		h.refused(GateOAuth)
		writeJSONError(w, http.StatusForbidden, id, CodeInvalidRequest, msgNotYourSession)
		return nil
	}
	return s
}

// unknownSessionStatus is the status of an answer to a request naming a
// session the route does not have (any more): 404, which tells the client to
// start a new one; but 503 once the route is shutting down, since the session
// may be one [Handler.Suspend] is saving for the next process, where a client
// that retries finds it (a DELETE then ends it there).
func (h *Handler) unknownSessionStatus() int {
	if h.closing.Err() != nil {
		return http.StatusServiceUnavailable
	}
	return http.StatusNotFound
}

// writeUnknownSession answers a request naming a session the route does not
// have, with a JSON-RPC error carrying id (unknownSessionStatus).
func (h *Handler) writeUnknownSession(w http.ResponseWriter, id []byte) {
	if st := h.unknownSessionStatus(); st != http.StatusNotFound {
		writeJSONError(w, st, id, CodeInternalError, msgShuttingDown)
		return
	}
	writeJSONError(w, http.StatusNotFound, id, CodeInvalidRequest, "Unknown or expired session")
}

// serveClientResponse delivers a client's answer to a server request.
func (h *Handler) serveClientResponse(w http.ResponseWriter, r *http.Request, m *message) {
	if m.result != nil && m.errObj != nil {
		h.warnThrottled(&h.badResponseWarn, "mcp: client response has both result and error")
		writeJSONError(w, http.StatusBadRequest, nil, CodeInvalidRequest, "Invalid Request")
		return
	}
	table, owner := &h.pending, h.clientKey(r)
	if h.opts.Sessions {
		s := h.lookupSession(w, r, nil)
		if s == nil {
			return
		}
		table, owner = &s.pending, ""
	}
	a := clientAnswer{result: m.result}
	if m.errObj != nil {
		a = clientAnswer{err: decodeClientError(m.errObj)}
	}
	key, ok := jsonString(m.id)
	if !ok || !table.resolve(key, owner, a) {
		h.warnThrottled(&h.badResponseWarn, "mcp: client response matches no pending request", "id", string(m.id))
		writeJSONError(w, http.StatusBadRequest, nil, CodeInvalidRequest, "Invalid Request")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// serveNotification accepts a notification; only notifications/cancelled
// has an effect (session mode).
func (h *Handler) serveNotification(w http.ResponseWriter, r *http.Request, m *message) {
	if h.opts.Sessions {
		s := h.lookupSession(w, r, nil)
		if s == nil {
			return
		}
		if m.method == "notifications/cancelled" {
			if id, ok := member(m.params, "requestId"); ok {
				s.cancelRequest(id)
			}
		}
		s.touch()
	}
	w.WriteHeader(http.StatusAccepted)
}

// serveInitialize answers initialize: in session mode it starts a new session
// (any Mcp-Session-Id sent is ignored).
func (h *Handler) serveInitialize(w http.ResponseWriter, r *http.Request, m *message, acc accept) {
	start := time.Now()
	errType := ""
	// report runs once: before a successful answer is written (a client
	// that scrapes the metrics after its answer finds its initialize
	// counted), or when the handler returns.
	reported := false
	report := func() {
		if obs := h.hub.obs; obs != nil && !reported {
			h.report(obs, start, m, nil, errType)
		}
		reported = true
	}
	defer report()
	params := m.params
	if params == nil {
		params = emptyObject
	}
	if caps, ok := member(params, "capabilities"); ok && len(caps) > maxCapabilitiesBytes {
		errType = strconv.Itoa(CodeInvalidParams)
		h.writeAnswerError(w, acc, m.id, CodeInvalidParams, "Invalid params: capabilities larger than 64 KiB")
		return
	}
	version := negotiateVersion(params)
	if !h.opts.Sessions {
		sess, ir, err := h.srv.Init(r.Context(), params, "")
		if err != nil {
			errType = initErrorType(err)
			h.writeInitError(w, acc, m, err)
			return
		}
		defer sess.Close("")
		report()
		h.writeInitResult(w, acc, m, version, ir)
		return
	}
	// A slot on the route, then one in the process (the hub's).
	errType = strconv.Itoa(CodeInternalError) // until the session is live
	if !h.reg.reserve() {
		h.refused(GateRouteSessions)
		writeJSONError(w, http.StatusServiceUnavailable, m.id, CodeInternalError, msgAtCapacity)
		return
	}
	key := h.clientKey(r)
	if !h.hub.sessionSlots.takeFor(key) {
		h.reg.release()
		h.refused(GateProcessSessions)
		h.warnAtCap(&h.hub.sessionSlots, GateProcessSessions, m.method)
		writeJSONError(w, http.StatusServiceUnavailable, m.id, CodeInternalError, msgAtCapacity)
		return
	}
	id := h.hub.newSessionID()
	sess, ir, err := h.srv.Init(r.Context(), params, id)
	if err != nil {
		h.reg.release()
		h.hub.sessionSlots.giveFor(key)
		errType = initErrorType(err)
		h.writeInitError(w, acc, m, err)
		return
	}
	if ir == nil {
		ir = &InitResult{}
	}
	channels, err := sess.Channels(r.Context())
	if err != nil {
		h.reg.release()
		h.hub.sessionSlots.giveFor(key)
		sess.Close("")
		errType = initErrorType(err)
		h.writeInitError(w, acc, m, err)
		return
	}
	s := newSession(h, id, sess, ir, version, params)
	s.quota = key // set before join: the session's end gives its place back under it
	if info := AuthFromContext(r.Context()); info != nil {
		s.subject = info.Subject
	}
	s.start()
	if !h.reg.add(s) {
		h.hub.sessionSlots.giveFor(key)
		s.terminate("shutdown") // the route began shutting down meanwhile
		writeJSONError(w, http.StatusServiceUnavailable, m.id, CodeInternalError, msgAtCapacity)
		return
	}
	s.join(channels) // the hub's slot now belongs to the session
	errType = ""
	report()
	w.Header()["Mcp-Session-Id"] = []string{id}
	h.writeInitResult(w, acc, m, version, ir)
}

func (h *Handler) writeInitResult(w http.ResponseWriter, acc accept, m *message, version string, ir *InitResult) {
	if ir == nil {
		ir = &InitResult{}
	}
	b := getBuf()
	*b = h.appendInitResult(*b, m.id, version, ir)
	h.writeAnswer(w, acc, *b)
	putBuf(b)
}

// writeInitError answers a failed init: a *Error as is, anything else as a
// logged -32603.
func (h *Handler) writeInitError(w http.ResponseWriter, acc accept, m *message, err error) {
	var e *Error
	if errors.As(err, &e) {
		b := getBuf()
		*b = appendErrorValue(*b, m.id, e)
		h.writeAnswer(w, acc, *b)
		putBuf(b)
		return
	}
	if h.closing.Err() != nil {
		h.writeAnswerError(w, acc, m.id, CodeInternalError, msgShuttingDown)
		return
	}
	h.logFailure("mcp: init failed", err)
	h.writeAnswerError(w, acc, m.id, CodeInternalError, msgInternalError)
}

// serveSubscription answers resources/subscribe and unsubscribe inline,
// without the queue.
func (h *Handler) serveSubscription(w http.ResponseWriter, s *session, m *message, acc accept) {
	start := time.Now()
	if !s.sc.has.Resources {
		h.observeError(start, m, CodeMethodNotFound)
		h.writeAnswerError(w, acc, m.id, CodeMethodNotFound, msgMethodNotFound)
		return
	}
	uri, ok := stringMember(m.params, "uri")
	if !ok {
		h.observeError(start, m, CodeInvalidParams)
		h.writeAnswerError(w, acc, m.id, CodeInvalidParams, msgMissingURI)
		return
	}
	if m.method == "resources/subscribe" {
		if !s.subscribe(uri) {
			h.observeError(start, m, CodeInternalError)
			h.writeAnswerError(w, acc, m.id, CodeInternalError, msgTooManySubscriptions)
			return
		}
	} else {
		s.unsubscribe(uri)
	}
	b := getBuf()
	*b = appendResult(*b, m.id, emptyObject)
	h.observe(start, m, nil, *b, nil)
	h.writeAnswer(w, acc, *b)
	putBuf(b)
}

// Messages of the session limits.
var msgTooManySubscriptions = "Too many subscriptions: a session may hold at most " + strconv.Itoa(maxSubscriptions) +
	", of " + strconv.Itoa(maxSubscriptionBytes>>10) + " KiB of URIs in all"

// serveCall admits a request on its session and serves its reply. A buffered
// caller waits at most request_timeout; messages the call sends meanwhile
// turn its answer into an SSE stream. A progress stream (a tools/call with a
// progress token, from a client that accepts SSE) is SSE at once and has no
// timeout. Either way the call runs on the session's state, in arrival
// order: at once on this goroutine when the session is free and the request
// came over HTTP/1.1 (serveInline), else through the session's queue; a call of
// one of the route's concurrent tools runs beside them on a snapshot.
func (h *Handler) serveCall(w http.ResponseWriter, r *http.Request, s *session, m *message, acc accept) {
	j := newJob(h, s, m, acc)
	j.call.Auth = AuthFromContext(r.Context())
	j.snapshot = h.concurrent(m)
	streaming := streams(m, acc)
	j.rp.streaming = streaming // set before the call can run: Outbound reads it
	if !streaming {
		j.out.deadline = time.Now().Add(h.opts.RequestTimeout)
	}
	j.mayInline = r.ProtoMajor == 1 && r.ProtoMinor == 1
	if ts := h.sessionTaskStart(s, j); ts != nil {
		// It answers before it ends, and runs on in the worker.
		j.call.tasks, j.out.tasks, j.mayInline = ts, ts, false
	}
	gen, wake := j.rp.attach(w)
	switch s.admit(j, r) {
	case admitInline:
		h.serveInline(r, s, j, gen, wake)
		return
	case admitOverloaded:
		j.rp.detach(gen)
		h.refused(GateSessionPending)
		h.writeAnswerError(w, acc, m.id, CodeInternalError, msgOverloaded)
		return
	case admitOverBudget:
		j.rp.detach(gen)
		h.refuseOverBudget(w)
		return
	case admitEnded:
		j.rp.detach(gen)
		h.writeUnknownSession(w, m.id)
		return
	}
	if streaming {
		j.rp.startStream()
	}
	wt := waiter{wake: wake, ended: s.ended(), gone: r.Context().Done()}
	if !streaming {
		timer := time.NewTimer(h.opts.RequestTimeout)
		defer timer.Stop()
		wt.timeout = timer.C
	}
	h.awaitCall(s, j, gen, &wt)
}

// awaitCall serves the client of j, attached with gen, while the call runs
// elsewhere: it writes what the call sends, answers the caller when wt's
// timeout passes or the session ends, and returns when its part is over.
func (h *Handler) awaitCall(s *session, j *job, gen uint32, wt *waiter) {
	streaming := j.rp.streaming
	for {
		switch wt.next() {
		case waitWoken:
			switch j.rp.pump(gen) {
			case pumpOver:
				return
			case pumpLost:
				h.lostClient(s, j, gen)
				return
			}
		case waitTimeout:
			s.expire(j)
			j.rp.abandon(gen, CodeInternalError, msgTimedOut)
			j.rp.expire()
			return
		case waitEnded:
			if streaming {
				j.rp.abandon(gen, 0, "")
			} else {
				j.rp.abandon(gen, CodeInternalError, msgSessionEnded)
			}
			return
		case waitGone:
			h.lostClient(s, j, gen)
			return
		}
	}
}

// lostClient handles a caller that went away, or stopped reading its answer
// (its write failed). For a buffered call that is not a cancellation: the call
// runs on and its state lands. A progress stream before 2025-11-25 cannot be
// resumed, so its call is stopped; on 2025-11-25 the client resumes the
// stream with GET + Last-Event-ID and the call runs on.
func (h *Handler) lostClient(s *session, j *job, gen uint32) {
	j.rp.mu.Lock()
	stop := j.rp.streaming && !j.rp.resumable
	j.rp.mu.Unlock()
	if stop {
		s.stop(j)
	}
	j.rp.detach(gen)
}

// concurrent reports whether m calls one of the route's concurrent tools.
func (h *Handler) concurrent(m *message) bool {
	if len(h.concurrentTools) == 0 || m.method != methodToolsCall {
		return false
	}
	name, ok := stringMember(m.params, "name")
	if !ok {
		return false
	}
	_, ok = h.concurrentTools[name]
	return ok
}

// serveStateless answers a request in stateless mode: a fresh Session per
// request (ping included), the call in this goroutine under the request's
// context, which a client disconnect cancels.
func (h *Handler) serveStateless(w http.ResponseWriter, r *http.Request, m *message, acc accept) {
	key := h.clientKey(r)
	if !h.admitOpen(w, time.Now(), m, &h.hub.statelessSlots, key, GateProcessStateless) {
		return
	}
	defer h.hub.statelessSlots.giveFor(key)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	j := newJob(h, nil, m, acc)
	j.call.Auth = AuthFromContext(r.Context())
	// Only the client that made the call may answer its requests (the
	// table is the route's), and it gets a share of the table, not all of
	// it.
	j.out.owner, j.out.quota = key, key
	j.call.ProtocolVersion = latestVersion
	if v := r.Header["Mcp-Protocol-Version"]; len(v) > 0 && sessionEraVersion(v[0]) {
		j.call.ProtocolVersion = v[0]
	}
	if !h.trackStateless(j, cancel) {
		h.writeAnswerError(w, acc, m.id, CodeInternalError, msgShuttingDown)
		return
	}
	defer h.untrackStateless(j)
	sess, has, err := h.initCall(ctx)
	if err != nil {
		h.observeInitError(j.start, m, err)
		h.writeInitError(w, acc, m, err)
		return
	}
	defer sess.Close("")
	gen, _ := j.rp.attach(w)
	defer j.rp.detach(gen)
	if streams(m, acc) {
		j.rp.streaming = true
		j.rp.startStream()
	}
	sc := scope{sess: sess, has: has, era: eraSession}
	b := getBuf()
	out, err := h.dispatch(ctx, &sc, m, &j.call, *b)
	h.observe(j.start, m, &j.call, out, err)
	switch {
	case err == nil:
		*b = out
		j.rp.finish(b)
	case h.closing.Err() != nil && !j.rp.streaming:
		putBuf(b)
		j.rp.finish(errorAnswer(m.id, msgShuttingDown))
	default: // the client went away, or a stream was stopped: no result
		putBuf(b)
		j.rp.finish(nil)
	}
	j.rp.pump(gen)
}

// admitOpen holds a place in q, one of the hub's process-wide caps on open
// requests, for m of the client named key (clientKey); at the cap, or past
// the client's share of it, it answers 503 -32603 "Server at capacity",
// counts the refusal at gate and returns false. The caller gives the place
// back (q.giveFor(key)) when the request ends.
func (h *Handler) admitOpen(w http.ResponseWriter, start time.Time, m *message, q *quota, key string, gate Gate) bool {
	if q.takeFor(key) {
		return true
	}
	h.refused(gate)
	h.warnAtCap(q, gate, m.method)
	h.observeError(start, m, CodeInternalError)
	writeJSONError(w, http.StatusServiceUnavailable, m.id, CodeInternalError, msgAtCapacity)
	return false
}

// clientKey names the client of r for its share of a process-wide cap
// (quota.takeFor) and of a route's table of requests to clients
// (outbound.quota): its token's subject on an oauth route, else a digest of
// the credential the route's auth hook accepted (the key does not keep the
// secret); "" for an anonymous client, which has no share of its own. A
// route without a hook checks no credential: any value a client sends
// names nothing.
func (h *Handler) clientKey(r *http.Request) string {
	if info := AuthFromContext(r.Context()); info != nil && info.Subject != "" {
		return subjectOwner(info.Subject)
	}
	if a := r.Header.Get("Authorization"); a != "" && h.opts.Auth != nil {
		sum := sha256.Sum256([]byte(a))
		return credentialPrefix + base64.RawURLEncoding.EncodeToString(sum[:12])
	}
	return ""
}

// warnAtCap logs that the process-wide cap q refused a request, through the
// cap's own throttle (the metric counts every refusal).
func (h *Handler) warnAtCap(q *quota, gate Gate, method string) {
	h.warnThrottled(&q.warned, "mcp: request refused: the process holds as many as it may",
		"cap", string(gate), "method", method)
}

// warnThrottled logs a warning a client can trigger at will through t: the
// first at once, then at most one per logcap.Every, which counts the
// ones not logged since the last.
func (h *Handler) warnThrottled(t *logcap.Throttle, msg string, args ...any) {
	if ok, held := t.Allow(time.Now(), logcap.Every); ok {
		h.log.Warn(msg, append(args, "unlogged_since_last", held)...)
	}
}

// initCall starts the session of a stateless request that needs only the
// capabilities of the init result: through [CallIniter] when the server is
// one.
func (h *Handler) initCall(ctx context.Context) (Session, Capabilities, error) {
	if ci, ok := h.srv.(CallIniter); ok {
		return ci.InitCall(ctx)
	}
	sess, ir, err := h.srv.Init(ctx, nil, "")
	if err != nil || ir == nil {
		return sess, Capabilities{}, err
	}
	return sess, ir.Has, nil
}

// trackStateless registers a stateless call for Shutdown to stop; it fails
// once the route is shutting down.
func (h *Handler) trackStateless(j *job, cancel context.CancelFunc) bool {
	h.statelessMu.Lock()
	defer h.statelessMu.Unlock()
	if h.closing.Err() != nil {
		return false
	}
	h.statelessCalls[j] = cancel
	h.statelessWG.Add(1)
	return true
}

func (h *Handler) untrackStateless(j *job) {
	h.statelessMu.Lock()
	delete(h.statelessCalls, j)
	h.statelessMu.Unlock()
	h.statelessWG.Done()
}

// headerSession finds the session a GET or DELETE names. Without a valid
// version header, a session id or a live session it answers (400, 400,
// unknownSessionStatus: empty bodies) and returns nil.
func (h *Handler) headerSession(w http.ResponseWriter, r *http.Request) *session {
	if !h.checkVersionHeader(w, r) {
		return nil
	}
	sid := r.Header["Mcp-Session-Id"]
	if len(sid) == 0 || sid[0] == "" {
		w.WriteHeader(http.StatusBadRequest)
		return nil
	}
	s := h.reg.get(sid[0])
	switch {
	case s == nil:
		w.WriteHeader(h.unknownSessionStatus())
	case !ownedBy(s, r):
		w.WriteHeader(http.StatusForbidden)
		return nil
	}
	return s
}

func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request) {
	s := h.headerSession(w, r)
	if s == nil {
		return
	}
	var lastID uint64
	replay := false
	if v := r.Header["Last-Event-Id"]; len(v) > 0 {
		if k, n, ok := parseStreamEventID(v[0]); ok {
			h.serveResume(w, r, s, k, n)
			return
		}
		lastID, replay = parseLastEventID(v[0])
	}
	h.serveChannel(w, r, s, lastID, replay)
}

// parseLastEventID reads a GET channel's Last-Event-ID: integer text, with
// an optional sign, as the original reads it. The events replayed are those
// with a greater id, so a negative value replays every kept event and one
// past the largest id none; any other text means no replay.
func parseLastEventID(v string) (lastID uint64, replay bool) {
	v = strings.TrimSpace(v)
	neg := false
	if v != "" && (v[0] == '+' || v[0] == '-') {
		neg = v[0] == '-'
		v = v[1:]
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		n, err = math.MaxUint64, nil // past every event
	}
	switch {
	case err != nil:
		return 0, false
	case neg:
		return 0, true // before every event
	}
	return n, true
}

// serveChannel serves the session's GET channel: pushes as they come, a
// keep-alive comment when idle, and a replay of the kept events after
// Last-Event-ID.
func (h *Handler) serveChannel(w http.ResponseWriter, r *http.Request, s *session, lastID uint64, replay bool) {
	a, outcome := s.attachHandover(r.Context(), lastID, replay)
	switch outcome {
	case attachBusy:
		w.WriteHeader(http.StatusConflict)
		return
	case attachEnded:
		w.WriteHeader(h.unknownSessionStatus())
		return
	}
	defer s.detachChannel(a.gen)
	// A write that the client does not take within WriteTimeout drops the
	// channel; the session stays, and its next GET resumes with
	// Last-Event-ID from the replay ring.
	k := newSink(w, h.opts.WriteTimeout, r.ProtoMajor < 2)
	defer k.close()
	if k.sse() != nil {
		return
	}
	shedHeaders(r)
	tick, stop := h.keepAlive()
	defer stop()
	wt := waiter{wake: a.wake, tick: tick, gone: r.Context().Done(), ended: s.ended()}
	if len(a.replay) > 0 && writeChannelEvents(k, a.replay) != nil {
		return
	}
	writePushes(k, &s.ch, a.sent, &wt, false)
}

// shedHeaders drops the values of r's headers but Mcp-Session-Id (which the
// access log reads when the request ends), once a stream that may stay open
// for hours (a GET channel, a listen stream) has read what it needs of them
// and written its response's head: net/http keeps the request, and the
// headers it came with (up to 1 MiB), as long as its handler runs, and
// 16 such streams held 14 MiB. The map is the server's own too (a copy of
// the request shares it), so its entries go, not just this copy's field;
// the one kept gets a slice of its own (net/textproto cuts the headers'
// value slices from one array, which held every value alive).
func shedHeaders(r *http.Request) {
	for k, v := range r.Header {
		if k == "Mcp-Session-Id" {
			r.Header[k] = append([]string(nil), v...)
		} else {
			delete(r.Header, k)
		}
	}
}

// serveResume reattaches a client to a resumable POST stream (Last-Event-ID
// "k_n"): the kept events after n, then the live rest, its result included;
// then the GET ends.
func (h *Handler) serveResume(w http.ResponseWriter, r *http.Request, s *session, k, n uint64) {
	rp := s.findStream(k)
	if rp == nil {
		// Nothing left on that stream: an empty one.
		sk := newSink(w, h.opts.WriteTimeout, r.ProtoMajor < 2)
		_ = sk.sse()
		sk.close()
		return
	}
	defer s.endResume()
	gen, wake := rp.resume(w, r.ProtoMajor < 2, n)
	defer rp.detach(gen)
	wt := waiter{wake: wake, ended: s.ended(), gone: r.Context().Done()}
	for {
		switch wt.next() {
		case waitWoken:
			if rp.pump(gen) != pumpWait {
				return
			}
		case waitEnded:
			rp.abandon(gen, 0, "")
			return
		case waitGone:
			return
		}
	}
}

func (h *Handler) serveDelete(w http.ResponseWriter, r *http.Request) {
	s := h.headerSession(w, r)
	if s == nil {
		return
	}
	s.terminate("normal")
	w.WriteHeader(http.StatusNoContent)
}
