package luavm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// timeoutScript is a server whose callback named loop never returns; its
// route caps every callback at 100 ms.
const timeoutScript = `local LOOP = %q
local function maybe(name) if name == LOOP then while true do end end end
return {
  route = { sessions = %v, call_timeout_ms = 100 },
  auth = function(req) maybe("auth") return true end,
  init = function()
    maybe("init")
    return { name = "t", version = "1" }, { tools = {}, resources = {}, prompts = {}, completions = {} }, {}
  end,
  tools = function() maybe("tools") return { { name = "t", input_schema = { type = "object" } } } end,
  handle_tool = function() maybe("handle_tool") return "ok" end,
  resources = function() maybe("resources") return { { uri = "r://1", name = "r" } } end,
  read_resource = function() maybe("read_resource") return "x" end,
  prompts = function() maybe("prompts") return { { name = "p" } } end,
  get_prompt = function() maybe("get_prompt") return { messages = {} } end,
  complete = function() maybe("complete") return {} end,
  channels = function() maybe("channels") return {} end,
  terminate = function() maybe("terminate") end,
}
`

func loadTimeoutScript(t *testing.T, loop string, sessions bool) (*Script, *syncbuf.Buffer) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "t.lua")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(timeoutScript, loop, sessions)), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, logs := newLogger()
	// Config.CallTimeout stays at its 10 min default: the route's 100 ms wins.
	s, err := Load(file, Config{Dir: dir, Logger: logger, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, logs
}

// TestCallTimeout: call_timeout_ms bounds every kind of callback, stateless
// and in session mode; the call that hits it fails alone, as a crash that
// the log names with the script, the callback and "call timeout".
func TestCallTimeout(t *testing.T) {
	ctx := context.Background()
	session := func(t *testing.T, s *Script) mcp.Session {
		ss, _, err := s.Init(ctx, json.RawMessage(initParams), "sid")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close("") })
		return ss
	}
	for _, tc := range []struct {
		loop     string
		sessions bool
		do       func(t *testing.T, s *Script) error
	}{
		{"init", false, func(t *testing.T, s *Script) error { _, _, err := s.Init(ctx, nil, ""); return err }},
		{"init", true, func(t *testing.T, s *Script) error {
			_, _, err := s.Init(ctx, json.RawMessage(initParams), "sid")
			return err
		}},
		{"handle_tool", false, func(t *testing.T, s *Script) error {
			ss, _ := open(t, s, "")
			_, err := ss.CallTool(ctx, testCall(""), "t", nil)
			return err
		}},
		{"handle_tool", true, func(t *testing.T, s *Script) error {
			_, err := session(t, s).CallTool(ctx, testCall("sid"), "t", nil)
			return err
		}},
		{"tools", true, func(t *testing.T, s *Script) error { _, err := session(t, s).Tools(ctx); return err }},
		{"resources", true, func(t *testing.T, s *Script) error { _, err := session(t, s).Resources(ctx); return err }},
		{"read_resource", true, func(t *testing.T, s *Script) error {
			_, err := session(t, s).ReadResource(ctx, testCall("sid"), "r://1")
			return err
		}},
		{"prompts", true, func(t *testing.T, s *Script) error { _, err := session(t, s).Prompts(ctx); return err }},
		{"get_prompt", true, func(t *testing.T, s *Script) error {
			_, err := session(t, s).GetPrompt(ctx, testCall("sid"), "p", nil)
			return err
		}},
		{"complete", true, func(t *testing.T, s *Script) error {
			_, err := session(t, s).Complete(ctx, json.RawMessage(`{}`), json.RawMessage(`{}`), nil)
			return err
		}},
		{"channels", true, func(t *testing.T, s *Script) error { _, err := session(t, s).Channels(ctx); return err }},
		{"auth", false, func(t *testing.T, s *Script) error {
			if got := s.Options().Auth(ctx, &mcp.AuthRequest{Method: "POST"}); got != 500 {
				t.Errorf("auth = %d, want 500", got)
			}
			return nil
		}},
		{"terminate", true, func(t *testing.T, s *Script) error {
			ss, _, err := s.Init(ctx, json.RawMessage(initParams), "sid")
			if err != nil {
				t.Fatal(err)
			}
			ss.Close("normal")
			return nil
		}},
	} {
		mode := "stateless"
		if tc.sessions {
			mode = "session"
		}
		t.Run(tc.loop+"/"+mode, func(t *testing.T) {
			s, logs := loadTimeoutScript(t, tc.loop, tc.sessions)
			start := time.Now()
			err := tc.do(t, s)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the looping %s took %s to stop", tc.loop, d)
			}
			if tc.loop != "auth" && tc.loop != "terminate" {
				if !isCrash(err) {
					t.Fatalf("want a crash, got %v", err)
				}
				contains(t, err.Error(), "t.lua:2: call timeout: still running after 100ms")
			}
			var line string
			for l := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(l, "Lua callback failed") {
					line = l
				}
			}
			for _, want := range []string{"script=t", "callback=" + tc.loop, "call timeout: still running after 100ms"} {
				contains(t, line, want)
			}
			// The script goes on serving.
			if tc.loop == "init" || tc.loop == "auth" {
				return
			}
			ss, _ := open(t, s, "")
			if _, err := ss.Prompts(ctx); err != nil && tc.loop != "prompts" {
				t.Errorf("after the timeout: %v", err)
			}
		})
	}
}

// A reload's migration runs the list callbacks of the new version under
// that version's call timeout: a looping tools() cannot hold the session.
func TestCallTimeoutMigration(t *testing.T) {
	s, logs := loadTimeoutScript(t, "", true)
	ss, _ := open(t, s, "sid")
	if err := os.WriteFile(s.path, []byte(fmt.Sprintf(timeoutScript, "tools", true)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the reload took %s", d)
	}
	contains(t, logs.String(), "callback=tools")
	if _, err := ss.CallTool(context.Background(), testCall("sid"), "t", nil); !isCrash(err) {
		t.Errorf("a tool call on the new version: %v, want the timeout's crash", err)
	}
}

// The main chunk has its own bound, 5 s: a script that loops at the top
// level fails to load, and Load can be cancelled sooner.
func TestLoadTimeout(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "spin.lua")
	if err := os.WriteFile(file, []byte("while true do end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, _ := newLogger()
	start := time.Now()
	_, err := Load(file, Config{Dir: dir, Logger: logger})
	if d := time.Since(start); d < loadTimeout || d > loadTimeout+5*time.Second {
		t.Errorf("Load of a looping chunk returned after %s, want about %s", d, loadTimeout)
	}
	if err == nil || !strings.Contains(err.Error(), "spin.lua:1: load timeout: still running after 5s") {
		t.Errorf("Load: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := LoadContext(ctx, file, Config{Dir: dir, Logger: logger}); err == nil {
		t.Error("LoadContext of a looping chunk succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a cancelled load returned after %s", d)
	}
}
