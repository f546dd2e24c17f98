package mcp

import (
	"encoding/json"
	"log/slog"
	"sync"
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
// Session.Channels, and per-uri resource subscriptions.
func appChannel(name string) string     { return "c:" + name }
func resourceChannel(uri string) string { return "r:" + uri }

// Hub delivers server pushes to the live sessions of every route of one
// process. It satisfies bridge.Pushes. Pushes to unknown sessions, or to
// channels nobody joined, are no-ops.
type Hub struct {
	log *slog.Logger
	ps  PubSub

	mu       sync.RWMutex
	sessions map[string]*session
}

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
	return &Hub{log: logger, ps: ps, sessions: make(map[string]*session)}
}

func (h *Hub) add(s *session) {
	h.mu.Lock()
	h.sessions[s.id] = s
	h.mu.Unlock()
}

func (h *Hub) remove(s *session) {
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
}

func (h *Hub) lookup(id string) *session {
	h.mu.RLock()
	s := h.sessions[id]
	h.mu.RUnlock()
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
func (h *Hub) Notify(sessionID, method string, params json.RawMessage) {
	s := h.lookup(sessionID)
	if s == nil {
		return
	}
	if msg := h.encode(method, params); msg != nil {
		s.Deliver(msg)
	}
}

// Broadcast pushes one notification to every session whose Session.Channels
// named channel. The method is sent as given.
func (h *Hub) Broadcast(channel, method string, params json.RawMessage) {
	if msg := h.encode(method, params); msg != nil {
		h.ps.Publish(appChannel(channel), msg)
	}
}

// ResourceUpdated sends notifications/resources/updated {uri} to every session
// subscribed to uri.
func (h *Hub) ResourceUpdated(uri string) {
	params := appendString([]byte(`{"uri":`), uri)
	params = append(params, '}')
	h.ps.Publish(resourceChannel(uri), appendNotification(nil, "notifications/resources/updated", params))
}

// Log sends notifications/message {level, data} to one session's GET channel,
// unless level is below the session's minimum level. level must be valid.
func (h *Hub) Log(sessionID, level string, data json.RawMessage) {
	s := h.lookup(sessionID)
	if s == nil {
		return
	}
	sev := levelSeverity(level)
	if sev < 0 {
		h.log.Warn("mcp: log dropped: invalid level", "level", level)
		return
	}
	if sev < int(s.level.Load()) {
		return
	}
	if data != nil && !json.Valid(data) {
		h.log.Warn("mcp: log dropped: data is not valid JSON")
		return
	}
	s.Deliver(appendNotification(nil, "notifications/message", logParams(nil, level, data)))
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
