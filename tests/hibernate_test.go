package tests

import (
	"testing"

	"github.com/luamcp/luamcp/internal/logcap"
)

// A hibernating session gives back its Lua state only: the transport keeps
// its GET channel, resource subscriptions, broadcast channels and log level,
// and pushes reach it while it sleeps, without waking it. Its next request
// wakes it on its state.
func TestHibernatingSessionKeepsTransportState(t *testing.T) {
	t.Parallel()
	s := startServer(t, "hibernate")
	u := s.url("hibernate")
	sid, other := s.initialize(t, u), s.initialize(t, u)
	get := s.openGET(t, u, sid, nil)
	s.result(t, u, sid, "logging/setLevel", map[string]any{"level": "error"}, nil)
	if m := s.rpc(t, u, sid, 1, "resources/subscribe", map[string]any{"uri": "mem://greeting"}); m.Error != nil {
		t.Fatalf("resources/subscribe: %v", m.Error)
	}
	s.callTool(t, u, sid, "count", nil).wantText(t, "1")
	// The log names a session by a tag of its id, never the id itself.
	asleep := "session hibernated script=hibernate session=" + logcap.Session(sid)
	woke := "session woke script=hibernate session=" + logcap.Session(sid)

	// Every wake follows a hibernation: once there is one more of those,
	// the session sleeps.
	wakes := s.logs.count(woke)
	s.logs.waitFor(t, asleep, wakes+1)
	if n := s.logs.count(sid); n > 0 {
		t.Errorf("%d log lines hold the session id itself:\n%s", n, s.logs.dump())
	}

	s.callTool(t, u, other, "broadcast", nil).wantText(t, "broadcast")
	if m := get.nextMessage(); m.Method != "notifications/tools/list_changed" {
		t.Errorf("got %s %s, want the broadcast's tools/list_changed", m.Method, m.Params)
	}
	s.callTool(t, u, other, "touch", map[string]any{"uri": "mem://greeting"}).wantText(t, "touched")
	if m := get.nextMessage(); m.Method != "notifications/resources/updated" || !jsonEqual(t, m.Params, `{"uri":"mem://greeting"}`) {
		t.Errorf("got %s %s, want resources/updated of mem://greeting", m.Method, m.Params)
	}
	for _, level := range []string{"info", "error"} {
		s.callTool(t, u, other, "log", map[string]any{"level": level, "to": sid}).wantText(t, "logged")
	}
	wantLog(t, get, "error", "log at error") // info is below the level set before
	s.callTool(t, u, other, "notify", map[string]any{"n": 7, "to": sid}).wantText(t, "notified")
	wantPoke(t, get, 7, "4")
	if n := s.logs.count(woke); n != wakes {
		t.Errorf("pushes to the sleeping session woke it %d times", n-wakes)
	}

	// Its next call wakes it, on its state.
	s.callTool(t, u, sid, "count", nil).wantText(t, "2")
	if s.logs.count(woke) == wakes {
		t.Error("the call found the session awake: it did not hibernate")
	}
}
