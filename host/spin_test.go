package host_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

const (
	loopChunk = "while true do end\n"
	// loopInit is a server whose init never returns.
	loopInit = `return {
  init = function() while true do end end,
  tools = function() return {} end,
  handle_tool = function() return "" end,
}
`
)

// A script that loops at the top level, or in init, does not hold the start
// up: scripts load in parallel, each chunk within 5 s, each listing of tools
// within 5 s, and the others mount.
func TestLoopingScriptsAtStart(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.lua":     server(`{}`, "one"),
		"loop.lua":  loopChunk,
		"init1.lua": loopInit,
		"init2.lua": loopInit,
		"init3.lua": loopInit,
		"init4.lua": loopInit,
		"z.lua":     server(`{ path = "/mcp/zed" }`, "two"),
	})
	start := time.Now()
	h, logs := newHost(t, dir)
	// One after the other, the four inits and the chunk would take 25 s.
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("New took %s: the loads did not run in parallel", d)
	}
	if got := tools(h, "/mcp/a"); got != "one" {
		t.Errorf("a.lua: tools %q", got)
	}
	if got := tools(h, "/mcp/zed"); got != "two" {
		t.Errorf("z.lua: tools %q", got)
	}
	errs := h.LoadErrors()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "loop.lua:1: load timeout: still running after 5s") {
		t.Errorf("LoadErrors() = %v, want loop.lua's load timeout", errs)
	}
	for _, r := range h.Routes() {
		if strings.HasPrefix(r.Path, "/mcp/init") && r.Tools != nil {
			t.Errorf("%s: tools %v, want unknown", r.Path, r.Tools)
		}
	}
	if n := strings.Count(logs.String(), "did not return within 5s"); n != 4 {
		t.Errorf("%d tool listings failed, want the 4 looping inits:\n%s", n, logs.String())
	}
}

// A looping script added, or saved, while serving does not block the
// watcher: a file written after it mounts before its load gives up.
func TestLoopingScriptWhileWatching(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one"))
	h, logs := watchHost(t, dir)

	write(t, filepath.Join(dir, "loop.lua"), loopChunk)
	write(t, filepath.Join(dir, "a.lua"), loopChunk) // a broken edit: the running version stays
	time.Sleep(100 * time.Millisecond)               // another burst: another batch
	write(t, filepath.Join(dir, "b.lua"), server(`{}`, "bee"))
	waitFor(t, "b.lua to mount", func() bool { return tools(h, "/mcp/b") == "bee" })
	if errs := h.LoadErrors(); len(errs) != 0 {
		t.Errorf("b.lua mounted after the looping load ended (%v): the watcher waited for it", errs)
	}
	waitFor(t, "loop.lua to fail", func() bool { return len(h.LoadErrors()) == 1 })
	contains(t, h.LoadErrors()[0].Error(), "loop.lua:1: load timeout")
	waitFor(t, "a.lua's edit to fail", func() bool { return strings.Contains(logs.String(), "a.lua:1: load timeout") })
	if got := tools(h, "/mcp/a"); got != "one" {
		t.Errorf("a.lua after a looping edit: tools %q, want the running version's", got)
	}
}

// spinScripts are routes whose calls spin: a session route, a stateless
// route, and a session route whose terminate spins too.
var spinScripts = map[string]string{
	"spin.lua": `return {
  route = { sessions = true },
  init = function() return { name = "spin", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "spin" } } end,
  handle_tool = function() while true do end end,
}
`,
	"free.lua": `return {
  init = function() return { name = "free", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "spin" } } end,
  handle_tool = function() while true do end end,
}
`,
	"stuck.lua": `return {
  route = { sessions = true },
  init = function() return { name = "stuck", version = "1" }, { tools = {} }, {} end,
  tools = function() return {} end,
  handle_tool = function() return "" end,
  terminate = function() while true do end end,
}
`,
}

// spin starts n calls of tool spin on url (a session each when sessions),
// and returns once they run.
func spin(t *testing.T, h *host.Host, url string, sessions bool, n int) {
	t.Helper()
	for range n {
		sid := ""
		if sessions {
			resp, _ := rpc(t, url, "", "initialize", initParams)
			sid = resp.Header.Get("Mcp-Session-Id")
		}
		req := newRPCRequest(t, url, sid, "tools/call", map[string]any{"name": "spin"})
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
}

// Shutdown ends within its deadline when calls spin; what Lua does not stop
// in time is abandoned.
func TestShutdownWhileSpinning(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stuck   bool // a terminate that spins: only the deadline ends the wait
		timeout time.Duration
	}{
		{"calls spin", false, 20 * time.Second},
		{"terminate spins", true, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, spinScripts)
			h, err := host.New(host.Config{Dir: dir, Logger: slog.New(slog.DiscardHandler), PoolSize: 1, Watch: true})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h.Handler())
			defer srv.Close()
			spin(t, h, srv.URL+"/mcp/spin", true, 3)
			spin(t, h, srv.URL+"/mcp/free", false, 3)
			if tc.stuck {
				rpc(t, srv.URL+"/mcp/stuck", "", "initialize", initParams)
			}
			time.Sleep(200 * time.Millisecond) // the calls run
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			start := time.Now()
			err = h.Shutdown(ctx)
			d := time.Since(start)
			if tc.stuck {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Shutdown: %v, want the deadline", err)
				}
				if d > tc.timeout+2*time.Second {
					t.Errorf("Shutdown returned %s after its deadline", d-tc.timeout)
				}
				return
			}
			if err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			// Cancelled Lua stops at once; the bound is a liveness check.
			if d > 5*time.Second {
				t.Errorf("Shutdown took %s with spinning calls", d)
			}
		})
	}
}

func contains(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q", s, sub)
	}
}
