package mcp

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/luamcp/luamcp/internal/logcap"
)

// A Subscriber receives the encoded notifications published on the channels
// it joined. A session is a Subscriber: it numbers each message, keeps it for
// replay and wakes its GET channel. Deliver must not block for long.
type Subscriber interface {
	Deliver(msg []byte)
}

// PubSub routes published messages to the Subscribers of a channel. Channel
// names are opaque strings. LocalPubSub serves one process; a distributed
// implementation (keeping its local Subscribers and fanning Publish out to
// the other processes) can replace it through NewHubWith.
type PubSub interface {
	Subscribe(channel string, s Subscriber)
	Unsubscribe(channel string, s Subscriber)
	Publish(channel string, msg []byte)
}

// LocalPubSub is the in-process PubSub.
type LocalPubSub struct {
	mu    sync.RWMutex
	chans map[string]map[Subscriber]struct{}
}

// NewLocalPubSub returns an empty in-process PubSub.
func NewLocalPubSub() *LocalPubSub {
	return &LocalPubSub{chans: make(map[string]map[Subscriber]struct{})}
}

func (p *LocalPubSub) Subscribe(channel string, s Subscriber) {
	p.mu.Lock()
	set := p.chans[channel]
	if set == nil {
		set = make(map[Subscriber]struct{})
		p.chans[channel] = set
	}
	set[s] = struct{}{}
	p.mu.Unlock()
}

func (p *LocalPubSub) Unsubscribe(channel string, s Subscriber) {
	p.mu.Lock()
	if set := p.chans[channel]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(p.chans, channel)
		}
	}
	p.mu.Unlock()
}

// Publish delivers msg to every subscriber. The subscribers are copied first,
// so a Subscriber may (un)subscribe while it is being delivered to.
func (p *LocalPubSub) Publish(channel string, msg []byte) {
	p.mu.RLock()
	set := p.chans[channel]
	if len(set) == 0 {
		p.mu.RUnlock()
		return
	}
	sinks := make([]Subscriber, 0, len(set))
	for s := range set {
		sinks = append(sinks, s)
	}
	p.mu.RUnlock()
	for _, s := range sinks {
		s.Deliver(msg)
	}
}

// The two namespaces of channel names: the channels a server names in
// Session.Channels, and per-uri resource subscriptions. Both are scoped by
// the route path, so the sessions of one route never receive another route's
// broadcasts, even through a PubSub shared by many processes. A route path is
// a URL path: it never contains '#', which ends it.
func appChannel(route, name string) string     { return "c:" + route + "#" + name }
func resourceChannel(route, uri string) string { return "r:" + route + "#" + uri }

// DefaultMaxSessions is the process-wide cap on live sessions a Hub starts
// with (see Hub.SetMaxSessions).
const DefaultMaxSessions = 10_000

// DefaultMaxListens is the process-wide cap on open subscriptions/listen
// streams a Hub starts with (see Hub.SetMaxListens). A listen stream holds
// what a session's GET channel does (a replay ring, subscriptions) with no
// session to count it, so it has a cap of its own.
const DefaultMaxListens = 10_000

// DefaultMaxStateless is the process-wide cap on open requests served
// without a session that a Hub starts with (see Hub.SetMaxStateless). Each
// holds a fresh Lua state for as long as it is open (about 30 KiB live, 80
// KiB of RSS, while a tool waits), which nothing else bounds.
const DefaultMaxStateless = 10_000

// Hub spans every route of one process: it knows their live sessions, caps
// their number, and delivers server pushes. A server's pushes go through the
// view of its own route (Route), which reaches only that route's sessions.
type Hub struct {
	log *slog.Logger
	ps  PubSub

	mu       sync.RWMutex
	sessions map[string]*session
	// sessionSlots counts the live sessions of every route plus the
	// initializes that reserved one (an initialize takes a slot, the
	// session's end gives it back).
	sessionSlots quota
	// listenSlots counts the open subscriptions/listen streams of every
	// route; statelessSlots the open requests served without a session.
	listenSlots, statelessSlots quota
	// replay bounds the bytes every replay buffer keeps (SetReplayBudget).
	replay replayBudget
	// bodies bounds the bytes of the POST bodies being read (SetBodyBudget).
	bodies bodyBudget
	// key authenticates the 2026-07-28 era's requestState (SetStateKey);
	// random per process unless set.
	key []byte
	// obs is told what the routes do (SetObserver); nil: nothing. Set
	// before the routes serve, then only read.
	obs Observer
	// cluster joins the hub to other nodes (SetCluster); nil: a single
	// process. Set before the routes serve, then only read.
	cluster Cluster
}

// quota counts the holders of a capped resource, without a lock (a
// stateless request takes one). Holders never exceed max while max > 0; a
// take that loses a race near the cap is refused.
type quota struct {
	n   atomic.Int64
	max atomic.Int64 // 0 = unlimited
	// warned spaces the log lines of its refusals (Handler.warnAtCap).
	warned logcap.Throttle
	// owned counts the places of each client that has a key (takeFor);
	// guarded by mu, which only those clients' takes and gives pay.
	mu    sync.Mutex
	owned map[string]int
}

// take counts one more holder; false at the cap. A holder gives its place
// back with give.
func (q *quota) take() bool {
	n := q.n.Add(1)
	if m := q.max.Load(); m > 0 && n > m {
		q.n.Add(-1)
		return false
	}
	return true
}

func (q *quota) give() { q.n.Add(-1) }

// clientShareDivisor: one client may hold at most this fraction of a
// process-wide cap (as of a route's table of requests to clients,
// maxPendingPerOwner): without it one client with a valid credential took
// every place (all --max-listens streams, all --max-sessions sessions) and
// every other client got 503 until it let go.
const clientShareDivisor = 8

// share is the places one client may hold: an eighth of the cap, at least
// one; 0 without a cap.
func (q *quota) share() int {
	m := q.max.Load()
	if m <= 0 {
		return 0
	}
	return int(max(m/clientShareDivisor, 1))
}

// takeFor is take for the client named key (clientKey), within its share.
// An anonymous client ("") has no share of its own: nothing names it apart
// from the others (behind a proxy every peer is the proxy).
func (q *quota) takeFor(key string) bool {
	if key == "" {
		return q.take()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if s := q.share(); s > 0 && q.owned[key] >= s {
		return false
	}
	if !q.take() {
		return false
	}
	if q.owned == nil {
		q.owned = make(map[string]int)
	}
	q.owned[key]++
	return true
}

// giveFor gives back a place takeFor took for key.
func (q *quota) giveFor(key string) {
	if key != "" {
		q.mu.Lock()
		if q.owned[key]--; q.owned[key] <= 0 {
			delete(q.owned, key)
		}
		q.mu.Unlock()
	}
	q.give()
}

// setMax sets the cap; n <= 0 means none. Holders past a lowered cap stay.
func (q *quota) setMax(n int) { q.max.Store(int64(max(n, 0))) }

// NewHub returns a Hub backed by the in-process pubsub.
func NewHub(logger *slog.Logger) *Hub {
	return NewHubWith(NewLocalPubSub(), logger)
}

// NewHubWith returns a Hub that routes broadcasts and resource updates
// through ps.
func NewHubWith(ps PubSub, logger *slog.Logger) *Hub {
	if logger == nil {
		logger = slog.Default()
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	h := &Hub{log: logger, ps: ps, sessions: make(map[string]*session), key: key}
	h.sessionSlots.setMax(DefaultMaxSessions)
	h.listenSlots.setMax(DefaultMaxListens)
	h.statelessSlots.setMax(DefaultMaxStateless)
	h.replay.log = logger
	h.replay.max.Store(DefaultReplayBudget)
	h.bodies.max.Store(DefaultBodyBudget)
	return h
}

// SetStateKey sets the key that authenticates the requestState of the
// 2026-07-28 era's multi-round-trip requests (HMAC-SHA256), for every route
// served with this hub. Processes that serve one endpoint behind a load
// balancer share it, so that a client's next round may reach another one.
// Without it each process draws a random key. A key shorter than 16 bytes is
// refused.
func (h *Hub) SetStateKey(key []byte) error {
	if len(key) < stateKeyMin {
		return fmt.Errorf("mcp: the state key has %d bytes; it needs at least %d", len(key), stateKeyMin)
	}
	h.mu.Lock()
	h.key = bytes.Clone(key)
	h.mu.Unlock()
	return nil
}

func (h *Hub) stateKey() []byte {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.key
}

// SetMaxSessions caps the live sessions of every route served with this hub
// (DefaultMaxSessions at first); n <= 0 means no cap. An initialize past it
// gets 503, as past a route's own MaxSessions. Sessions already live stay.
func (h *Hub) SetMaxSessions(n int) { h.sessionSlots.setMax(n) }

// SetMaxListens caps the open subscriptions/listen streams of every route
// served with this hub (DefaultMaxListens at first); n <= 0 means no cap. A
// listen request past it gets 503. Streams already open stay.
func (h *Hub) SetMaxListens(n int) { h.listenSlots.setMax(n) }

// SetMaxStateless caps the requests served without a session (a stateless
// route's, and every 2026-07-28 request but a listen) that are open at once
// on every route served with this hub (DefaultMaxStateless at first); n <= 0
// means no cap. A request past it gets 503 before any Lua runs.
func (h *Hub) SetMaxStateless(n int) { h.statelessSlots.setMax(n) }

// add makes a session that holds a reserved slot reachable by id; its slot
// is given back by remove.
func (h *Hub) add(s *session) {
	h.mu.Lock()
	h.sessions[s.id] = s
	h.mu.Unlock()
}

func (h *Hub) remove(s *session) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
		h.sessionSlots.giveFor(s.quota)
		if len(h.sessions) == 0 {
			// A map never shrinks: after a peak of idle sessions, give
			// their buckets back once the last one is gone.
			h.sessions = make(map[string]*session)
		}
	}
	h.mu.Unlock()
}

func (h *Hub) lookup(id string) *session {
	h.mu.RLock()
	s := h.sessions[id]
	h.mu.RUnlock()
	return s
}

// Route returns the pushes of the server served on path: they reach only
// the sessions of that route. It satisfies bridge.Pushes.
func (h *Hub) Route(path string) *RoutePushes {
	return &RoutePushes{hub: h, path: path}
}

// RoutePushes delivers the pushes of one route's server (Hub.Route). Pushes
// to sessions of other routes, to unknown sessions, or to channels nobody
// joined, are no-ops.
type RoutePushes struct {
	hub  *Hub
	path string
}

// session returns the live session id of this route, or nil.
func (p *RoutePushes) session(id string) *session {
	s := p.hub.lookup(id)
	if s == nil || s.h.opts.Path != p.path {
		return nil
	}
	return s
}

// encode builds a notification, or logs and returns nil when params is not
// valid JSON (the push is dropped and uses up no event id).
func (h *Hub) encode(method string, params json.RawMessage) []byte {
	if params != nil && !json.Valid(params) {
		h.log.Warn("mcp: push dropped: params are not valid JSON", "method", method)
		return nil
	}
	return appendNotification(nil, method, params)
}

// Notify pushes one notification to one session's GET channel.
func (p *RoutePushes) Notify(sessionID, method string, params json.RawMessage) {
	s := p.session(sessionID)
	if s == nil && p.hub.cluster == nil {
		p.hub.pushesDropped(p.path, DropNoSession, 1)
		return
	}
	msg := p.hub.encode(method, params)
	switch {
	case msg == nil:
		p.hub.pushesDropped(p.path, DropInvalid, 1)
	case s != nil:
		s.Deliver(msg)
	case !p.sendRemote(sessionID, "", msg):
		p.hub.pushesDropped(p.path, DropNoSession, 1)
	}
}

// Broadcast pushes one notification to every session of the route whose
// Session.Channels named channel. The method is sent as given. The
// subscriptions/listen streams of the route join the channels a fresh
// session's Channels names, and get what they asked for of what is sent
// there (list_changed notifications).
func (p *RoutePushes) Broadcast(channel, method string, params json.RawMessage) {
	if msg := p.hub.encode(method, params); msg != nil {
		p.hub.ps.Publish(appChannel(p.path, channel), msg)
	} else {
		p.hub.pushesDropped(p.path, DropInvalid, 1)
	}
}

// ListChanged sends the list_changed notification method
// ("notifications/tools/list_changed", ".../prompts/...",
// ".../resources/...") to every subscriptions/listen stream of the route that
// asked for it: the host calls it when a reload changed the script. Sessions
// are told by their own server (Notify), which knows what changed for each.
func (p *RoutePushes) ListChanged(method string) {
	if listChangedMethod(method) {
		p.hub.ps.Publish(listenChannel(p.path), appendNotification(nil, method, nil))
	}
}

// ResourceUpdated sends notifications/resources/updated {uri} to every
// session of the route subscribed to uri.
func (p *RoutePushes) ResourceUpdated(uri string) {
	params := appendString([]byte(`{"uri":`), uri)
	params = append(params, '}')
	p.hub.ps.Publish(resourceChannel(p.path, uri), appendNotification(nil, "notifications/resources/updated", params))
}

// Log sends notifications/message {level, data} to one session's GET channel,
// unless level is below the session's minimum level. level must be valid.
func (p *RoutePushes) Log(sessionID, level string, data json.RawMessage) {
	s := p.session(sessionID)
	if s == nil && p.hub.cluster == nil {
		p.hub.pushesDropped(p.path, DropNoSession, 1)
		return
	}
	sev := levelSeverity(level)
	if sev < 0 {
		p.hub.log.Warn("mcp: log dropped: invalid level", "level", level)
		p.hub.pushesDropped(p.path, DropInvalid, 1)
		return
	}
	if s != nil && sev < int(s.level.Load()) {
		return
	}
	if data != nil && !json.Valid(data) {
		p.hub.log.Warn("mcp: log dropped: data is not valid JSON")
		p.hub.pushesDropped(p.path, DropInvalid, 1)
		return
	}
	msg := appendNotification(nil, "notifications/message", logParams(nil, level, data))
	switch {
	case s != nil:
		s.Deliver(msg)
	case !p.sendRemote(sessionID, level, msg): // the owner filters by its session's level
		p.hub.pushesDropped(p.path, DropNoSession, 1)
	}
}

// logParams appends {"level":..,"data":..}.
func logParams(dst []byte, level string, data []byte) []byte {
	if data == nil {
		data = nullID
	}
	dst = append(dst, `{"level":`...)
	dst = appendString(dst, level)
	dst = append(dst, `,"data":`...)
	dst = append(dst, data...)
	return append(dst, '}')
}
