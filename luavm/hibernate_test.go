package luavm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/luamcp/luamcp/mcp"
)

// sleeper is a session-mode script whose sessions hibernate after HIB ms. Its
// state has shared sub-tables, a cycle, mcp.null and an array marker; the
// tool check says whether they are intact. terminate reports the count.
const sleeper = `local mcp = require("mcp")
return {
  route = { sessions = true, session_hibernate_ms = HIB },
  init = function(params)
    local shared = { hits = 0 }
    local s = { id = params.mcp_session_id, n = 0, a = shared, b = shared, list = mcp.array(), none = mcp.null }
    s.self = s
    return { name = "h", version = "VERSION" }, { tools = {} }, s
  end,
  tools = function()
    local t = {}
    for _, n in ipairs({ "bump", "keep_fn", "drop_fn", "check", "slow" }) do
      t[#t + 1] = { name = n, description = "", input_schema = { type = "object" } }
    end
    return t
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "bump" then
      state.n = state.n + 1
      state.a.hits = state.a.hits + 1
      return "VERSION " .. state.n
    elseif name == "keep_fn" then
      state.fn = function() end
      return "kept"
    elseif name == "drop_fn" then
      state.fn = nil
      return "dropped"
    elseif name == "slow" then
      mcp.sleep(args.ms)
      return "slept"
    end
    return tostring(state.a == state.b and state.b.hits == state.n and state.self == state
      and state.none == mcp.null and getmetatable(state.list) == getmetatable(mcp.array()))
  end,
  terminate = function(reason, state)
    mcp.notify(state.id, "notifications/terminated/" .. reason .. "/" .. state.n, {})
  end,
}
`

// loadSleeper writes sleeper (hibernating after ms, reporting version) to a
// temporary folder and loads it (edit, if any, changes its Config); pushes
// go to rec.
func loadSleeper(t *testing.T, ms int, version string, rec *recorder, edit func(*Config)) (*Script, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "h.lua")
	writeSleeper(t, file, ms, version)
	logger, _ := newLogger()
	cfg := Config{Dir: filepath.Dir(file), Logger: logger, PoolSize: 2, Pushes: everywhere(rec)}
	if edit != nil {
		edit(&cfg)
	}
	s, err := Load(file, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the sessions' cleanups
		s.Close()
		if n := s.LiveStates(); n != 0 {
			t.Errorf("%d Lua states still open after Close", n)
		}
	})
	return s, file
}

func writeSleeper(t *testing.T, file string, ms int, version string) {
	t.Helper()
	src := strings.ReplaceAll(sleeper, "HIB", fmt.Sprint(ms))
	writeScript(t, file, strings.ReplaceAll(src, "VERSION", version))
}

func isAsleep(ss mcp.Session) bool { return phase(ss.(*session).phase.Load()) == asleep }

// hasState reports whether the session holds a Lua state.
func hasState(ss mcp.Session) bool {
	s := ss.(*session)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v != nil
}

func TestHibernateAndWake(t *testing.T) {
	rec := &recorder{}
	s, _ := loadSleeper(t, 20, "v1", rec, nil)
	sess, _ := open(t, s, "a")
	mustCall(t, sess, "bump", `{}`)
	if got := text(t, mustCall(t, sess, "bump", `{}`)); got != "v1 2" {
		t.Fatalf("bump = %q", got)
	}
	eventually(t, "hibernation", func() bool { return isAsleep(sess) })
	if hasState(sess) {
		t.Fatal("a sleeping session holds a Lua state")
	}

	// The next call wakes it, on its state, on a state from the warm pool.
	p := s.current().pool
	eventually(t, "the pool to refill", func() bool { return len(p.fresh) >= int(p.depth.Load()) })
	inline := p.inline.Load()
	if got := text(t, mustCall(t, sess, "bump", `{}`)); got != "v1 3" {
		t.Errorf("bump after waking = %q, want v1 3", got)
	}
	if p.inline.Load() != inline {
		t.Error("waking built a state inline with a full pool")
	}
	if got := text(t, mustCall(t, sess, "check", `{}`)); got != "true" {
		t.Errorf("sharing, cycle, null or array marker lost: check = %s", got)
	}

	// A snapshot of a sleeping session thaws a copy and leaves it asleep;
	// what it changes is dropped.
	eventually(t, "hibernation", func() bool { return isAsleep(sess) })
	snap, err := sess.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, mustCall(t, snap, "bump", `{}`)); got != "v1 4" {
		t.Errorf("snapshot bump = %q", got)
	}
	snap.Close("")
	if !isAsleep(sess) {
		t.Error("a snapshot woke the session")
	}
	if got := text(t, mustCall(t, sess, "bump", `{}`)); got != "v1 4" {
		t.Errorf("bump after a snapshot's = %q, want v1 4", got)
	}

	// A state holding a function cannot be frozen: the session stays awake
	// until its state can.
	mustCall(t, sess, "keep_fn", `{}`)
	ss := sess.(*session)
	eventually(t, "a hibernation attempt", func() bool {
		ss.work.Lock()
		defer ss.work.Unlock()
		return ss.unfrozen == ss.lastRun.Load()
	})
	if isAsleep(sess) || !hasState(sess) {
		t.Fatal("a session whose state holds a function hibernated")
	}
	mustCall(t, sess, "drop_fn", `{}`)
	eventually(t, "hibernation", func() bool { return isAsleep(sess) })

	// Closing a sleeping session runs terminate on its state.
	sess.Close("normal")
	if got := rec.list(); !slices.Contains(got, "a notifications/terminated/normal/4") {
		t.Errorf("pushes %q: terminate did not run on the state", got)
	}
	if _, err := call(t, sess, "bump", `{}`); err == nil {
		t.Error("a closed session answered")
	}
}

// A session hibernated across a reload wakes on the new version with its
// state; its client is told its lists may have changed.
func TestHibernateReload(t *testing.T) {
	rec := &recorder{}
	s, file := loadSleeper(t, 20, "v1", rec, nil)
	sess, _ := open(t, s, "a")
	mustCall(t, sess, "bump", `{}`)
	eventually(t, "hibernation", func() bool { return isAsleep(sess) })
	writeSleeper(t, file, 20, "v2")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := rec.list(); !slices.Equal(got, []string{"a notifications/tools/list_changed"}) {
		t.Errorf("pushes after the reload: %q", got)
	}
	if !isAsleep(sess) {
		t.Error("the reload woke the session")
	}
	if got := text(t, mustCall(t, sess, "bump", `{}`)); got != "v2 2" {
		t.Errorf("bump after the reload = %q, want v2 2", got)
	}
}

func TestHibernateNever(t *testing.T) {
	s, _ := loadSleeper(t, 0, "v1", &recorder{}, nil)
	sess, _ := open(t, s, "a")
	mustCall(t, sess, "bump", `{}`)
	if s.sweep.stop != nil {
		t.Error("session_hibernate_ms = 0 started the sweeper")
	}
	if isAsleep(sess) {
		t.Error("asleep")
	}
}

// Calls, snapshots, reloads, hibernation and Close race (run under -race):
// every call sees the state the one before left, and nothing leaks.
func TestHibernateRace(t *testing.T) {
	rec := &recorder{}
	s, file := loadSleeper(t, 1, "v", rec, nil)
	var wg sync.WaitGroup
	for i := range 4 {
		sess, _, err := s.Init(context.Background(), nil, fmt.Sprint("s", i))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer sess.Close("normal")
			for n := 1; n <= 30; n++ {
				if got := text(t, mustCall(t, sess, "bump", `{}`)); got != fmt.Sprint("v ", n) {
					t.Errorf("bump %d = %q", n, got)
					return
				}
				switch n % 3 {
				case 0:
					snap, err := sess.Snapshot(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					mustCall(t, snap, "bump", `{}`)
					snap.Close("")
				case 1:
					eventually(t, "hibernation", func() bool { return isAsleep(sess) })
				}
			}
		})
	}
	for range 6 {
		writeSleeper(t, file, 1, "v")
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	// A close racing the sweeper.
	for i := range 20 {
		sess, _, err := s.Init(context.Background(), nil, fmt.Sprint("c", i))
		if err != nil {
			t.Fatal(err)
		}
		mustCall(t, sess, "bump", `{}`)
		runtime.Gosched()
		sess.Close("normal")
	}
	for i := range 20 {
		id := fmt.Sprint("c", i)
		eventually(t, "terminate of "+id, func() bool {
			return slices.Contains(rec.list(), id+" notifications/terminated/normal/1")
		})
	}
	// A wake (a call, a snapshot) racing a DELETE or a TTL reap of a
	// sleeping session: the call runs before the close or is refused, and
	// terminate runs once, on the state the call left.
	for i := range 20 {
		id := fmt.Sprint("w", i)
		sess, _, err := s.Init(context.Background(), nil, id)
		if err != nil {
			t.Fatal(err)
		}
		mustCall(t, sess, "bump", `{}`)
		eventually(t, "hibernation", func() bool { return isAsleep(sess) })
		var calls sync.WaitGroup
		bumped := make(chan bool, 1)
		calls.Go(func() {
			_, err := call(t, sess, "bump", `{}`)
			bumped <- err == nil
		})
		calls.Go(func() {
			if snap, err := sess.Snapshot(context.Background()); err == nil {
				mustCall(t, snap, "check", `{}`)
				snap.Close("")
			}
		})
		calls.Go(func() { sess.Close("normal") })
		calls.Wait()
		n := 1
		if <-bumped {
			n = 2
		}
		want := fmt.Sprintf("%s notifications/terminated/normal/%d", id, n)
		count := 0
		for _, p := range rec.list() {
			if strings.HasPrefix(p, id+" notifications/terminated/") {
				count++
				if p != want {
					t.Errorf("%s, want %s", p, want)
				}
			}
		}
		if count != 1 {
			t.Errorf("terminate of %s ran %d times", id, count)
		}
	}
}

// heapAlloc returns the live heap after collections settle.
func heapAlloc() int64 {
	settle()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// A sleeping session holds a few hundred bytes in luavm, and closing
// sleeping sessions gives the heap back. (The bench's abandon scenario and
// host's test measure a whole idle session, the transport's part included.)
func TestHibernateMemory(t *testing.T) {
	const n = 1000
	// No pool (its depth follows the test's pace), and no log (it would
	// grow with every hibernation).
	s, _ := loadSleeper(t, 1, "v1", &recorder{}, func(c *Config) {
		c.PoolSize = -1
		c.Logger = slog.New(slog.DiscardHandler)
	})
	ctx := context.Background()
	base := heapAlloc()
	sessions := make([]mcp.Session, n)
	for i := range sessions {
		sess, _, err := s.Init(ctx, json.RawMessage(initParams), fmt.Sprint("s", i))
		if err != nil {
			t.Fatal(err)
		}
		mustCall(t, sess, "bump", `{}`)
		sessions[i] = sess
	}
	eventually(t, "hibernation of every session", func() bool {
		for _, sess := range sessions {
			if !isAsleep(sess) {
				return false
			}
		}
		return true
	})
	if got := s.LiveStates(); got != 0 {
		t.Errorf("%d Lua states open with every session asleep", got)
	}
	per := float64(heapAlloc()-base) / n
	t.Logf("%.0f bytes of heap per sleeping session", per)
	if per > 1024 {
		t.Errorf("a sleeping session holds %.0f bytes of heap, want <= 1 KiB", per)
	}
	for _, sess := range sessions {
		sess.Close("normal")
	}
	clear(sessions)
	if grew := heapAlloc() - base; grew > 256<<10 {
		t.Errorf("after closing every session the heap is %d KiB above where it started", grew>>10)
	}
}

// BenchmarkHibernate measures a hibernation (freeze the state, close the Lua
// state) and a wake-up (a warm state from the pool, thaw the state) followed
// by an empty method, for a small state and a 10,000-entry one.
func BenchmarkHibernate(b *testing.B) {
	for _, bc := range []struct{ name, params string }{
		{"state=small", `{}`},
		{"state=10k", `{"size":10000}`},
	} {
		ss := echoSession(b, bc.params).(*session)
		p := ss.script.current().pool
		ctx := context.Background()
		method := func() {
			c, err := ss.begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			ss.end(c, nil)
		}
		refilled := func() {
			for len(p.fresh) < int(p.depth.Load()) {
				runtime.Gosched()
			}
		}
		b.Run("hibernate/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				method() // awake
				b.StartTimer()
				if !ss.hibernate(clock()) {
					b.Fatal("did not hibernate")
				}
			}
			b.ReportMetric(float64(len(ss.frozen)), "frozen-bytes")
		})
		b.Run("wake/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if phase(ss.phase.Load()) == awake && !ss.hibernate(clock()) {
					b.Fatal("did not hibernate")
				}
				refilled()
				b.StartTimer()
				method()
			}
			if n := p.inline.Load(); n != 0 {
				b.Errorf("%d states built inline", n)
			}
		})
	}
}

// A sleeping session outlives its script: it still wakes (on a state built
// for it) and closes what it woke on.
func TestHibernateAfterScriptClose(t *testing.T) {
	rec := &recorder{}
	s, _ := loadSleeper(t, 1, "v1", rec, nil)
	sess, _, err := s.Init(context.Background(), nil, "a")
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, sess, "bump", `{}`)
	eventually(t, "hibernation", func() bool { return isAsleep(sess) })
	s.Close()
	if got := text(t, mustCall(t, sess, "bump", `{}`)); got != "v1 2" {
		t.Errorf("bump after the script closed = %q", got)
	}
	sess.Close("normal")
	if !slices.Contains(rec.list(), "a notifications/terminated/normal/2") {
		t.Errorf("pushes %q: terminate did not run", rec.list())
	}
	if n := s.LiveStates(); n != 0 {
		t.Errorf("%d states open", n)
	}
}
