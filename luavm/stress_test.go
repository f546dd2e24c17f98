package luavm

// Stress tests of one session's operations at once (calls, snapshots, Save,
// hibernation, hot reloads, closes) under the race detector, and the races
// they found, each in a test of its own.

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/syncbuf"
	"github.com/luamcp/luamcp/mcp"
)

// stressScript is a session-mode script whose sessions hibernate after 1 ms.
// Its state has tables of more than 8 keys (the root, big), nested tables
// (nest.l1.l2.l3), a shared sub-table (a == b), a cycle (self), an array
// marker and mcp.null. bump changes all of them (and now and then replaces
// a subtree, or the root: swap); crash changes them, then fails (rolled
// back); check says whether they agree with n. Sessions "m..." also hold a
// module-level table that tools() writes; sessions "f..." hold a function
// (not copyable, not freezable: their moves fail for good).
const stressScript = `local mcp = require("mcp")
local MOD = { listed = 0 }
local function bump(state)
  local n = state.n + 1
  state.n = n
  state.a.hits = state.a.hits + 1
  state.big["k" .. (n % 20 + 1)] = n
  state.big.total = state.big.total + 1
  state.nest.l1.l2.l3.count = n
  if n % 5 == 0 then state.nest.l1 = { l2 = { l3 = { count = n, tags = { "x", "y", n } } } } end
  state.hist[n % 12 + 1] = n
  if n % 7 == 0 then
    local b2 = {}
    for k, v in pairs(state.big) do b2[k] = v end
    state.big = b2
  end
  return n
end
return {
  route = { sessions = true, session_hibernate_ms = 1 },
  init = function(params)
    local id = params.mcp_session_id
    local shared = { hits = 0 }
    local big = { total = 0 }
    for i = 1, 20 do big["k" .. i] = 0 end
    local s = { id = id, n = 0, a = shared, b = shared, big = big,
                nest = { l1 = { l2 = { l3 = { count = 0, tags = { "x", "y" } } } } },
                hist = {}, list = mcp.array(), none = mcp.null }
    for i = 1, 12 do s.hist[i] = 0 end
    s.self = s
    if id:sub(1, 1) == "m" then s.mod = MOD end
    if id:sub(1, 1) == "f" then s.fn = function() end end
    return { name = "st", version = "VERSION" }, { tools = {} }, s
  end,
  tools = function()
    MOD.listed = MOD.listed + 1
    local t = {}
    for _, n in ipairs({ "bump", "swap", "crash", "check" }) do
      t[#t + 1] = { name = n, description = "", input_schema = { type = "object" } }
    end
    return t
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "bump" then
      return "VERSION " .. bump(state)
    elseif name == "swap" then
      local s2 = {}
      for k, v in pairs(state) do s2[k] = v end
      s2.self = s2
      return "VERSION " .. bump(s2), s2
    elseif name == "crash" then
      state.n = state.n + 100
      state.a.hits = -1
      state.big.total = -5
      state.big.k3 = "bad"
      state.nest.l1.l2.l3.count = -1
      state.hist = {}
      error("boom")
    end
    local n, why = state.n, nil
    local keys = 0
    for _ in pairs(state.big) do keys = keys + 1 end
    if state.a ~= state.b then why = "a ~= b"
    elseif state.a.hits ~= n then why = "hits " .. tostring(state.a.hits)
    elseif state.self ~= state then why = "self"
    elseif state.big.total ~= n then why = "total " .. tostring(state.big.total)
    elseif keys ~= 21 then why = "big keys " .. keys
    elseif n > 0 and state.big["k" .. (n % 20 + 1)] ~= n then why = "big k"
    elseif state.nest.l1.l2.l3.count ~= n then why = "nest " .. tostring(state.nest.l1.l2.l3.count)
    elseif #state.hist ~= 12 or (n > 0 and state.hist[n % 12 + 1] ~= n) then why = "hist"
    elseif state.none ~= mcp.null then why = "null"
    elseif getmetatable(state.list) ~= getmetatable(mcp.array()) then why = "array marker"
    elseif state.id:sub(1, 1) == "m" and type(state.mod.listed) ~= "number" then why = "mod"
    end
    if why then return "bad " .. n .. ": " .. why end
    return "ok " .. n
  end,
  terminate = function(reason, state)
    mcp.notify(state.id, "notifications/terminated/" .. reason .. "/" .. state.n, {})
  end,
}
`

// numberAfter returns the number ending a "word N" tool text.
func numberAfter(prefix, got string) (int64, bool) {
	rest, ok := strings.CutPrefix(got, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}

// TestStressStateRaces runs calls (bumps, swaps, crashes), snapshots, Save
// and Resume, the sweeper's and direct hibernations, hot reloads and closes
// at once on a few sessions, and checks that no state was lost or applied
// twice: each session's n is the count of its successful bumps, its tables
// agree with n, every snapshot and save sees a consistent state within the
// bounds of the calls around it, and terminate sees the last state.
func TestStressStateRaces(t *testing.T) {
	dur := 3 * time.Second
	rec := &recorder{}
	s, write, logs := loadVersions(t, "st", stressScript, rec)
	ctx := context.Background()
	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup

	type tracked struct {
		id            string
		ss            mcp.Session
		started, done atomic.Int64 // bumps begun, bumps that succeeded
	}
	var sessions []*tracked
	for _, id := range []string{"s1", "s2", "m1", "f1"} {
		ss, _, err := s.Init(ctx, nil, id)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, &tracked{id: id, ss: ss})
	}

	for _, tr := range sessions {
		ss, id := tr.ss, tr.id
		// The caller: bumps, swaps and crashes; n must follow exactly.
		wg.Go(func() {
			for i := 0; !stopped(); i++ {
				tool := "bump"
				switch i % 6 {
				case 2:
					tool = "swap"
				case 4:
					tool = "crash"
				}
				if tool != "crash" {
					tr.started.Add(1)
				}
				res, err := call(t, ss, tool, `{}`)
				if tool == "crash" {
					if err == nil {
						t.Errorf("%s: crash succeeded: %s", id, res)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: %s: %v", id, tool, err)
					return
				}
				got := text(t, res)
				var n int64
				var ok bool
				for _, v := range []string{"v0 ", "v1 ", "v2 "} {
					if n, ok = numberAfter(v, got); ok {
						break
					}
				}
				want := tr.done.Add(1)
				if !ok || n != want {
					t.Errorf("%s: %s #%d = %q, want n = %d", id, tool, i, got, want)
					return
				}
				if i%11 == 0 {
					res := text(t, mustCall(t, ss, "check", `{}`))
					if res != fmt.Sprint("ok ", want) {
						t.Errorf("%s: check = %q, want ok %d", id, res, want)
						return
					}
				}
				if i%3 == 0 {
					time.Sleep(2 * time.Millisecond) // room for the sweeper
				}
			}
		})
		// Snapshots (concurrent_tools): consistent, between the calls around them.
		wg.Go(func() {
			for !stopped() {
				lo := tr.done.Load()
				snap, err := ss.Snapshot(ctx)
				hi := tr.started.Load()
				if id[0] == 'f' {
					if err == nil {
						t.Errorf("%s: snapshot of a state holding a function", id)
						snap.Close("")
					}
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					t.Errorf("%s: snapshot: %v", id, err)
					return
				}
				checkWithin(t, id+": snapshot", snap, lo, hi)
				mustCall(t, snap, "bump", `{}`) // the snapshot's own, never the session's
				snap.Close("")
			}
		})
		// Save, as at shutdown, and Resume what it saved under another id.
		wg.Go(func() {
			for i := 0; !stopped(); i++ {
				lo := tr.done.Load()
				b, err := ss.(mcp.Saver).Save()
				hi := tr.started.Load()
				if id[0] == 'f' {
					if err == nil {
						t.Errorf("%s: saved a state holding a function", id)
					}
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if err != nil {
					t.Errorf("%s: Save: %v", id, err)
					return
				}
				r, err := s.Resume(ctx, fmt.Sprintf("r-%s-%d", id, i), mcp.Capabilities{Tools: true}, b)
				if err != nil {
					t.Errorf("%s: Resume: %v", id, err)
					return
				}
				checkWithin(t, id+": saved state", r, lo, hi)
				r.Close("")
				time.Sleep(2 * time.Millisecond)
			}
		})
		// Direct hibernations, beside the sweeper's.
		wg.Go(func() {
			for !stopped() {
				ss.(*session).hibernate(clock())
				time.Sleep(time.Millisecond)
			}
		})
	}

	// Hot reloads.
	wg.Go(func() {
		for i := 1; !stopped(); i++ {
			write(fmt.Sprint("v", i%3))
			if err := s.Reload(); err != nil {
				t.Errorf("Reload: %v", err)
				return
			}
			time.Sleep(15 * time.Millisecond)
		}
	})

	// Churn: sessions that get calls while a close (DELETE, idle expiry)
	// races them; terminate must see exactly the bumps that succeeded.
	var churned sync.Map // id -> successful bumps
	wg.Go(func() {
		for i := 0; !stopped(); i++ {
			id := fmt.Sprint("c", i)
			if i%2 == 1 {
				id = fmt.Sprint("mc", i)
			}
			ss, _, err := s.Init(ctx, nil, id)
			if err != nil {
				t.Errorf("Init %s: %v", id, err)
				return
			}
			mustCall(t, ss, "bump", `{}`)
			if i%3 == 0 {
				ss.(*session).hibernate(clock())
			}
			var ok atomic.Int64
			ok.Store(1)
			var race sync.WaitGroup
			race.Go(func() {
				for range 5 {
					if _, err := call(t, ss, "bump", `{}`); err != nil {
						return
					}
					ok.Add(1)
				}
			})
			race.Go(func() {
				if snap, err := ss.Snapshot(ctx); err == nil {
					if got := text(t, mustCall(t, snap, "check", `{}`)); !strings.HasPrefix(got, "ok ") {
						t.Errorf("%s: snapshot check = %q", id, got)
					}
					snap.Close("")
				}
			})
			race.Go(func() {
				time.Sleep(time.Duration(i%4) * time.Millisecond)
				ss.Close("normal")
			})
			race.Wait()
			churned.Store(id, ok.Load())
		}
	})

	time.Sleep(dur)
	close(stop)
	wg.Wait()

	// Every session's state is what its successful calls made it.
	for _, tr := range sessions {
		want := tr.done.Load()
		if got := text(t, mustCall(t, tr.ss, "check", `{}`)); got != fmt.Sprint("ok ", want) {
			t.Errorf("%s: final check = %q, want ok %d", tr.id, got, want)
		}
		tr.ss.Close("normal")
		t.Logf("%s: %d bumps", tr.id, want)
	}
	terminated := map[string][]string{}
	for _, p := range rec.list() {
		id, method, _ := strings.Cut(p, " ")
		if rest, ok := strings.CutPrefix(method, "notifications/terminated/normal/"); ok {
			terminated[id] = append(terminated[id], rest)
		}
	}
	for _, tr := range sessions {
		if got := terminated[tr.id]; len(got) != 1 || got[0] != fmt.Sprint(tr.done.Load()) {
			t.Errorf("%s: terminate saw %v, want [%d]", tr.id, got, tr.done.Load())
		}
	}
	churns := 0
	churned.Range(func(k, v any) bool {
		churns++
		id := k.(string)
		if got := terminated[id]; len(got) != 1 || got[0] != fmt.Sprint(v.(int64)) {
			t.Errorf("%s: terminate saw %v, want [%d]", id, got, v.(int64))
		}
		return true
	})
	t.Logf("%d churned sessions", churns)
	all := logs.String()
	for _, m := range []string{"session hibernated", "session woke", "session moved to the new version", "session stays on the previous version", "new version committed", "idle session stays awake"} {
		t.Logf("%q: %d", m, strings.Count(all, m))
	}
}

// TestStressMigrateSharedTable: a session whose state holds a table a
// module-level local also holds (the script's tools() writes it) is moved by
// a reload while a concurrent_tools Snapshot copies its state: migrate runs
// the old version's tools() (listsOf) on a Clone of the state, outside ss.mu,
// and tools() writes the shared table that Snapshot's CopyTo is walking.
func TestStressMigrateSharedTable(t *testing.T) {
	const src = `local CONFIG = {}
for i = 1, 16 do CONFIG["c" .. i] = i end
local calls = 0
return {
  route = { sessions = true },
  init = function() return { name = "m", version = "VERSION" }, { tools = {} }, { n = 0, config = CONFIG } end,
  tools = function()
    calls = calls + 1
    for i = 1, 16 do CONFIG["c" .. i] = calls + i end
    CONFIG["x" .. calls] = calls -- new keys: the map grows
    return { { name = "t", description = "", input_schema = { type = "object" } } }
  end,
  handle_tool = function(name, args, ctx, state) return "ok" end,
}
`
	s, write, _ := loadVersions(t, "m", src, &recorder{})
	ctx := context.Background()
	for i := range 30 {
		ss, _, err := s.Init(ctx, nil, fmt.Sprint("m", i))
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap, err := ss.Snapshot(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				snap.Close("")
			}
		})
		write(fmt.Sprint("v", i+1))
		if err := s.Reload(); err != nil { // moves ss: it is idle
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		ss.Close("")
	}
}

// TestStressStuckFlag: a session whose state cannot be moved (it holds a
// function) is marked stuck by the follow of a commit while the end of its
// last call reads the mark (behind) without the work lock.
func TestStressStuckFlag(t *testing.T) {
	const src = `return {
  route = { sessions = true },
  init = function() return { name = "f", version = "VERSION" }, { tools = {} }, { n = 0, fn = function() end } end,
  tools = function() return { { name = "t", description = "", input_schema = { type = "object" } } } end,
  handle_tool = function(name, args, ctx, state) state.n = state.n + 1 return "ok " .. state.n end,
}
`
	s, write, _ := loadVersions(t, "f", src, &recorder{})
	ss, _, err := s.Init(context.Background(), nil, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close("")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if got := text(t, mustCall(t, ss, "t", `{}`)); got != fmt.Sprint("ok ", n) {
				t.Errorf("call %d = %q", n, got)
				return
			}
		}
	})
	// What end does after it lets go of the work lock, as a goroutine that
	// was descheduled there would do it: behind() reads ss.stuck.
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ss.(*session).behind()
			time.Sleep(50 * time.Microsecond)
		}
	})
	for i := range 200 {
		write(fmt.Sprint("v", i+1))
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestStressCommitSkipsBusyFollower: a commit whose followIdle finds the
// session's work lock held by the follower of the previous commit (the
// goroutine a call's end starts) skips the session; that follower moves it
// to the version current when it started, and nothing moves it further: an
// idle session stays behind (its client is not told of the new lists) until
// its next call.
func TestStressCommitSkipsBusyFollower(t *testing.T) {
	const src = `return {
  route = { sessions = true },
  init = function() return { name = "b", version = "VERSION" }, { tools = {} }, { n = 0 } end,
  tools = function()
    if "VERSION" == "v1" then local t0 = os.clock() while os.clock() - t0 < 0.3 do end end
    return { { name = "slow", description = "", input_schema = { type = "object" } } }
  end,
  handle_tool = function(name, args, ctx, state)
    local t0 = os.clock() while os.clock() - t0 < 0.3 do end
    state.n = state.n + 1
    return "VERSION " .. state.n
  end,
}
`
	s, write, _ := loadVersions(t, "b", src, &recorder{})
	ss, _, err := s.Init(context.Background(), nil, "b")
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close("")
	sess := ss.(*session)
	done := make(chan struct{})
	go func() { defer close(done); mustCall(t, ss, "slow", `{}`) }() // v0, 0.3 s
	time.Sleep(100 * time.Millisecond)
	write("v1")
	if err := s.Reload(); err != nil { // the call runs: its end moves ss (v1's tools take 0.3 s)
		t.Fatal(err)
	}
	<-done
	time.Sleep(100 * time.Millisecond) // the end's follower is in v1's tools()
	write("v2")
	if err := s.Reload(); err != nil { // finds the follower holding the work lock
		t.Fatal(err)
	}
	eventually(t, "the idle session to reach the newest version", func() bool {
		sess.mu.Lock()
		defer sess.mu.Unlock()
		return sess.s == s.current()
	})
}

// loadVersions loads src as a session-mode script whose "VERSION" marks
// stand for its version, v0 first, and returns it with what writes another
// version of it to its file (then Reload applies it) and its log. Its
// cleanup checks that closing it closed every Lua state.
func loadVersions(t *testing.T, name, src string, rec *recorder) (*Script, func(version string), *syncbuf.Buffer) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name+".lua")
	write := func(v string) { writeScript(t, file, strings.ReplaceAll(src, "VERSION", v)) }
	write("v0")
	logger, logs := newLogger()
	s, err := Load(file, Config{Dir: filepath.Dir(file), Logger: logger, PoolSize: 2, Pushes: everywhere(rec)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if n := s.LiveStates(); n != 0 {
			t.Errorf("%d Lua states still open after Close", n)
		}
	})
	return s, write, logs
}

// checkWithin checks that the state of ss (a copy: a snapshot, a saved
// state) is consistent, with n between the bumps that had ended (lo) and
// those that had begun (hi) around the copy.
func checkWithin(t *testing.T, what string, ss mcp.Session, lo, hi int64) {
	t.Helper()
	got := text(t, mustCall(t, ss, "check", `{}`))
	if n, ok := numberAfter("ok ", got); !ok || n < lo || n > hi {
		t.Errorf("%s: check = %q, want ok in [%d, %d]", what, got, lo, hi)
	}
}
