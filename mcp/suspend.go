package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
)

// Sessions that outlive their process. [Handler.Suspend] ends a route like
// [Handler.Shutdown], but each session whose server saves it ([Saver])
// leaves a [SavedSession] instead of ending: its server does not see it end
// (Close gets no reason). A later process serving the same route gives them
// to [Handler.Resume] before it serves: their clients go on with the same
// Mcp-Session-Id, capabilities, log level, channels and subscriptions.
//
// What does not carry over: calls in flight (Suspend cancels them, as
// Shutdown does: drain first), events kept for replay (event and stream
// numbers carry over, so ids never repeat; a Last-Event-ID from before
// replays nothing), and the idle timer, which starts afresh.

// A Saver is a [Session] that can be saved for a later process.
type Saver interface {
	// Save returns the session's state, to be given to [Resumer.Resume]
	// later. It is called once no call runs; Close("") follows when what
	// it saved is kept, Close with the route's reason when it fails or what
	// it saved could not be kept.
	Save() ([]byte, error)
}

// A Resumer is a [Server] that can resume the sessions a [Saver] saved.
type Resumer interface {
	// Resume returns the session saved under sessionID with state; has is
	// what its init advertised.
	Resume(ctx context.Context, sessionID string, has Capabilities, state []byte) (Session, error)
}

// A SavedSession is what [Handler.Suspend] keeps of a live session for
// [Handler.Resume]: the transport's part and its server's State. It
// encodes as JSON; whoever keeps it keeps a bearer secret (the ID) and the
// session's data, and must protect it as such.
type SavedSession struct {
	ID                 string          `json:"id"`
	ProtocolVersion    string          `json:"protocolVersion"`
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
	// Subject is the oauth subject the session belongs to ("" elsewhere).
	Subject  string `json:"subject,omitempty"`
	LogLevel string `json:"logLevel"`
	// Capabilities is what the session's init advertised.
	Capabilities  Capabilities `json:"capabilities"`
	Channels      []string     `json:"channels,omitempty"`
	Subscriptions []string     `json:"subscriptions,omitempty"`
	// LastEventID and LastStream are the numbers of the last GET-channel
	// event and resumable POST stream: the resumed session counts on.
	LastEventID uint64    `json:"lastEventId"`
	LastStream  uint64    `json:"lastStream"`
	Born        time.Time `json:"born"`
	State       []byte    `json:"state"`
	// Tasks are the session's tasks (2025-11-25), over by then, whose
	// outcomes wait for the client until their ttl (task_save.go).
	Tasks []SavedTask `json:"tasks,omitempty"`
}

// savedLocked records the transport's part of the session as its teardown
// starts; saveState adds the server's. Called with mu held.
func (s *session) savedLocked() *SavedSession {
	if _, ok := s.srv.(Saver); !ok {
		return nil
	}
	sv := &SavedSession{
		ID: s.id, ProtocolVersion: s.version, ClientCapabilities: s.clientRaw, Subject: s.subject,
		LogLevel: logLevels[s.level.Load()], Capabilities: s.sc.has,
		Channels: s.channels, Subscriptions: slices.Sorted(maps.Keys(s.subs)),
		LastStream: s.nextStream, Born: s.born,
	}
	s.ch.mu.Lock()
	sv.LastEventID = s.ch.last
	s.ch.mu.Unlock()
	return sv
}

// saveState asks the server for its part of sv; it reports false, having
// logged why, when the server cannot save the session.
func (s *session) saveState(sv *SavedSession) bool {
	state, err := s.srv.(Saver).Save()
	if err != nil {
		s.h.log.Warn("mcp: session not saved: it ends", "session", logcap.Session(s.id), "err", err)
		return false
	}
	sv.State = state
	return true
}

// Suspend ends the route as [Handler.Shutdown] does, except that the
// sessions whose server saves them are not ended but returned, to be given
// to [Handler.Resume] in a later process. Sessions that cannot be saved end
// with reason "shutdown".
//
// The saved sessions stay open (their calls stopped, their streams closed,
// their servers holding their state) until settle says whether what was
// saved is kept: settle(true) once it is (their servers close with no
// reason: they go on elsewhere), settle(false) when it could not be (they
// end with reason "shutdown", so that their servers' terminate runs, as
// they would have without a sessions file). The caller must call settle
// exactly once, also when Suspend returns an error.
func (h *Handler) Suspend(ctx context.Context) (saved []SavedSession, settle func(kept bool), err error) {
	var (
		mu      sync.Mutex
		closers []func(reason string)
		// late: Suspend returned (ctx expired); a session saved after
		// that would be lost, so it ends instead, its terminate run.
		late bool
	)
	keep := func(sv *SavedSession, close func(reason string)) bool {
		mu.Lock()
		defer mu.Unlock()
		if !late {
			saved = append(saved, *sv)
			closers = append(closers, close)
		}
		return !late
	}
	err = h.shutdown(ctx, func(s *session) { s.end("shutdown", keep) }, true)
	mu.Lock()
	defer mu.Unlock()
	late = true
	slices.SortFunc(saved, func(a, b SavedSession) int { return a.Born.Compare(b.Born) })
	settle = func(kept bool) {
		reason := "shutdown"
		if kept {
			reason = ""
		}
		var wg sync.WaitGroup
		for _, close := range closers {
			wg.Go(func() { close(reason) })
		}
		wg.Wait()
	}
	return saved, settle, err
}

// Resume brings back sessions that [Handler.Suspend] saved on a route of
// the same path, before the route serves. It returns how many resumed; each
// that did not is logged with why (the route is not in session mode, the
// caps are reached, its server refused it) and ends there: its terminate
// does not run, unless the route began shutting down while its server
// resumed it (then it is closed as the route's other sessions are).
func (h *Handler) Resume(ctx context.Context, saved []SavedSession) int {
	rs, _ := h.srv.(Resumer)
	n := 0
	for i := range saved {
		sv := &saved[i]
		if err := h.resume(ctx, rs, sv); err != nil {
			h.log.Warn("mcp: saved session not resumed", "session", logcap.Session(sv.ID), "err", err)
			continue
		}
		n++
	}
	return n
}

// resume brings back one saved session through rs (nil: the server cannot
// resume sessions).
func (h *Handler) resume(ctx context.Context, rs Resumer, sv *SavedSession) error {
	switch {
	case !h.opts.Sessions:
		return fmt.Errorf("the route no longer keeps sessions")
	case rs == nil:
		return fmt.Errorf("its server cannot resume sessions")
	case !sessionEraVersion(sv.ProtocolVersion):
		return fmt.Errorf("protocol version %q has no sessions", sv.ProtocolVersion)
	case levelSeverity(sv.LogLevel) < 0:
		return fmt.Errorf("unknown log level %q", sv.LogLevel)
	case !h.hub.mintedHere(sv.ID):
		return fmt.Errorf("its id is not one this process mints (malformed, or another node's)")
	case h.reg.get(sv.ID) != nil || h.hub.lookup(sv.ID) != nil:
		// The hub reaches sessions by id across routes: a second with the
		// same id (a file edited or merged by hand) would shadow the first,
		// whose slot would then never come back.
		return fmt.Errorf("a session with its id is live")
	}
	if !h.reg.reserve() {
		return fmt.Errorf("the route is at max_sessions or shutting down")
	}
	// The subject's share, as its initialize counted: its credential, if
	// it gave one, was not saved.
	key := subjectOwner(sv.Subject)
	if !h.hub.sessionSlots.takeFor(key) {
		h.reg.release()
		return fmt.Errorf("the process is at its session cap")
	}
	sess, err := rs.Resume(ctx, sv.ID, sv.Capabilities, sv.State)
	if err != nil {
		h.reg.release()
		h.hub.sessionSlots.giveFor(key)
		return err
	}
	params := []byte(`{}`)
	if len(sv.ClientCapabilities) > 0 {
		params = append(append([]byte(`{"capabilities":`), sv.ClientCapabilities...), '}')
	}
	s := newSession(h, sv.ID, sess, &InitResult{Has: sv.Capabilities}, sv.ProtocolVersion, params)
	s.subject = sv.Subject
	s.quota = key
	s.level.Store(int32(levelSeverity(sv.LogLevel)))
	if !sv.Born.IsZero() {
		s.born = sv.Born
	}
	s.ch.last = sv.LastEventID
	s.nextStream = sv.LastStream
	s.start()
	if !h.reg.add(s) {
		h.hub.sessionSlots.giveFor(key)
		s.terminate("shutdown")
		return fmt.Errorf("the route began shutting down")
	}
	s.join(sv.Channels)
	for _, uri := range sv.Subscriptions {
		s.subscribe(uri)
	}
	h.resumeTasks(s, sv.Tasks)
	return nil
}

// mintedHere reports whether id has the form of the ids this hub mints
// (newSessionID): 32 lowercase hex digits, after this node's id and a dot in
// a cluster.
func (h *Hub) mintedHere(id string) bool {
	if h.cluster != nil {
		return sessionNode(id) == h.cluster.NodeID()
	}
	if len(id) != 32 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
