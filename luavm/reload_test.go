package luavm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// counterV1 and counterV2 are two versions of one session-mode script; v2
// adds a tool and changes what bump adds.
const counterV1 = `return {
  route = { sessions = true },
  init = function() return { name = "c", version = "1" }, { tools = {}, prompts = {} }, { n = 0 } end,
  tools = function() return { { name = "bump", description = "", input_schema = { type = "object" } },
                              { name = "slow", description = "", input_schema = { type = "object" } } } end,
  handle_tool = function(name, args, ctx, state)
    if name == "slow" then mcp_sleep(args.ms) return "v1 slow" end
    state.n = state.n + 1
    return "v1 " .. state.n
  end,
  prompts = function() return { { name = "p" } } end,
  get_prompt = function() return { messages = {} } end,
}
`

const counterV2 = `return {
  route = { sessions = true },
  init = function() return { name = "c", version = "2" }, { tools = {}, prompts = {} }, { n = 0 } end,
  tools = function() return { { name = "bump", description = "", input_schema = { type = "object" } },
                              { name = "peek", description = "", input_schema = { type = "object" } } } end,
  handle_tool = function(name, args, ctx, state)
    if name == "peek" then return "v2 peek " .. state.n end
    state.n = state.n + 10
    return "v2 " .. state.n
  end,
  prompts = function() return { { name = "p" } } end,
  get_prompt = function() return { messages = {} } end,
}
`

// recorder records pushes as "session method".
type recorder struct {
	pushes
	mu   sync.Mutex
	seen []string
}

func (r *recorder) Notify(sessionID, method string, params json.RawMessage) {
	r.mu.Lock()
	r.seen = append(r.seen, sessionID+" "+method)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func writeScript(t *testing.T, path, src string) {
	t.Helper()
	src = strings.ReplaceAll(src, "mcp_sleep", `require("mcp").sleep`)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReloadMovesSessions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.lua")
	writeScript(t, file, counterV1)
	logger, logs := newLogger()
	rec := &recorder{}
	s, err := Load(file, Config{Dir: dir, Logger: logger, PoolSize: 2, Pushes: everywhere(rec)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // runs after the sessions' cleanups
		s.Close()
		if n := s.LiveStates(); n != 0 {
			t.Errorf("%d Lua states still open after Close", n)
		}
	})
	idle, _ := open(t, s, "idle")
	busy, _ := open(t, s, "busy")
	if got := text(t, mustCall(t, idle, "bump", `{}`)); got != "v1 1" {
		t.Fatalf("bump = %q", got)
	}
	mustCall(t, busy, "bump", `{}`)

	// A call in flight during the reload finishes on the old version.
	slow := make(chan string, 1)
	go func() {
		res, err := busy.CallTool(context.Background(), testCall("busy"), "slow", json.RawMessage(`{"ms":300}`))
		if err != nil {
			slow <- err.Error()
			return
		}
		slow <- string(res)
	}()
	time.Sleep(50 * time.Millisecond) // let the call start; the test holds either way

	// A broken edit changes nothing.
	writeScript(t, file, "return {\n  init = function(\n")
	err = s.Reload()
	if err == nil || !strings.HasPrefix(err.Error(), "c.lua:") {
		t.Fatalf("Reload of a broken file: %v, want a c.lua:line: error", err)
	}
	if got := text(t, mustCall(t, idle, "bump", `{}`)); got != "v1 2" {
		t.Fatalf("after a broken edit bump = %q, want v1 2", got)
	}

	writeScript(t, file, counterV2)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	// The idle session moved before Reload returned, and its client was told.
	if got := rec.list(); len(got) != 1 || got[0] != "idle notifications/tools/list_changed" {
		t.Errorf("pushes after the reload: %q, want one tools/list_changed to idle", got)
	}
	if got := text(t, mustCall(t, idle, "bump", `{}`)); got != "v2 12" {
		t.Errorf("after the reload bump = %q, want v2 12 (state kept, new code)", got)
	}
	if got := text(t, <-slow); got != "v1 slow" {
		t.Errorf("the call in flight answered %q, want the old version's", got)
	}
	if got := text(t, mustCall(t, busy, "peek", `{}`)); got != "v2 peek 1" {
		t.Errorf("busy session after its call: peek = %q", got)
	}
	// New sessions and stateless requests use the new version.
	fresh, _ := open(t, s, "fresh")
	if got := text(t, mustCall(t, fresh, "bump", `{}`)); got != "v2 10" {
		t.Errorf("new session: bump = %q", got)
	}
	tools, err := s.Describe(context.Background())
	if err != nil || strings.Join(tools, ",") != "bump,peek" {
		t.Errorf("Describe after the reload: %v %v", tools, err)
	}
	if strings.Contains(logs.String(), "prompts/list_changed") {
		t.Error("unchanged prompts were announced")
	}
	eventually(t, "the busy session's notification", func() bool { return len(rec.list()) == 2 })
}

// TestRetireEndsNormally: sessions of a retired script terminate with reason
// "normal" even when the transport says "shutdown".
func TestRetireEndsNormally(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.lua")
	writeScript(t, file, `return {
  route = { sessions = true },
  init = function() return { name = "t", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
  terminate = function(reason) print("terminate " .. reason) end,
}`)
	logger, logs := newLogger()
	s, err := Load(file, Config{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, _, err := s.Init(context.Background(), nil, "x")
	if err != nil {
		t.Fatal(err)
	}
	s.Retire()
	ss.Close("shutdown")
	contains(t, logs.String(), "terminate normal")
}

// TestModulesListed: Modules names the files a version required.
func TestModulesListed(t *testing.T) {
	s, _ := load(t, "sandbox.lua", nil)
	ss, _ := open(t, s, "")
	_, _ = call(t, ss, "require", `{"name":"lib.util"}`)
	if got := strings.Join(s.Modules(), ","); !strings.Contains(got, "lib/util.lua") {
		t.Errorf("Modules() = %q, want lib/util.lua", got)
	}
}

// TestReloadRace reloads repeatedly while sessions call tools and take
// snapshots (run it with -race); no state is lost and none leaks.
func TestReloadRace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.lua")
	writeScript(t, file, counterV1)
	logger, _ := newLogger()
	s, err := Load(file, Config{Dir: dir, Logger: logger, PoolSize: 2, Pushes: everywhere(&recorder{})})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 4 {
		ss, _, err := s.Init(context.Background(), nil, "s"+string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer ss.Close("normal")
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				mustCall(t, ss, "bump", `{}`)
				if n%3 == 0 {
					snap, err := ss.Snapshot(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					snap.Close("")
				}
			}
		})
	}
	for i := range 20 {
		if i%2 == 0 {
			writeScript(t, file, counterV2)
		} else {
			writeScript(t, file, counterV1)
		}
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	s.Close()
	if n := s.LiveStates(); n != 0 {
		t.Errorf("%d Lua states still open", n)
	}
}

// TestReloadPastItsBudget: a commit whose list callbacks outrun its budget
// (a slow tools(), many sessions) still moves every session, and tells each
// client whose lists it could not compare to list again; none stays on the
// old code.
func TestReloadPastItsBudget(t *testing.T) {
	migrateOverride.Store(int64(300 * time.Millisecond))
	defer migrateOverride.Store(0)
	dir := t.TempDir()
	file := filepath.Join(dir, "c.lua")
	writeScript(t, file, `return {
  route = { sessions = true },
  init = function() return { name = "c", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "a" } } end,
  handle_tool = function() return "v1" end,
}`)
	logger, _ := newLogger()
	rec := &recorder{}
	s, err := Load(file, Config{Dir: dir, Logger: logger, Pushes: everywhere(rec)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	const n = 8
	var sessions []*session
	for i := range n {
		ss, _ := open(t, s, fmt.Sprint("s", i))
		sessions = append(sessions, ss.(*session))
	}
	writeScript(t, file, `return {
  route = { sessions = true },
  init = function() return { name = "c", version = "2" }, { tools = {} }, {} end,
  tools = function() mcp_sleep(100) return { { name = "a" }, { name = "b" } } end,
  handle_tool = function() return "v2" end,
}`)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	notified := map[string]bool{}
	for _, p := range rec.list() {
		if id, method, _ := strings.Cut(p, " "); method == "notifications/tools/list_changed" {
			notified[id] = true
		}
	}
	cur := s.current()
	for _, ss := range sessions {
		ss.mu.Lock()
		on := ss.s == cur
		ss.mu.Unlock()
		if !on || !notified[ss.id] {
			t.Errorf("session %s: on the new version %v, told to list again %v", ss.id, on, notified[ss.id])
		}
	}
}
