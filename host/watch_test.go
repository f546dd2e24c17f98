package host_test

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/luavm"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// watchHost mounts dir with the watcher on and a short debounce.
func watchHost(t *testing.T, dir string) (*host.Host, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Registered first, so it runs after the shutdown and shows its logs too.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	h := startHost(t, host.Config{Dir: dir, Logger: logger, PoolSize: 1, Watch: true, Debounce: 20 * time.Millisecond})
	return h, logs
}

// waitFor polls cond for up to 10 s (a liveness bound).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// utilModuleV2 is utilModule edited: its tags start with "v2:".
const utilModuleV2 = `return { tag = function(s) return "v2:" .. tostring(s) end }`

// waitForUtilV2 waits until goodScript at url answers with utilModuleV2's
// tag: it reloaded its edited module.
func waitForUtilV2(t *testing.T, what, url string) {
	t.Helper()
	waitFor(t, what, func() bool { return strings.HasPrefix(toolText(t, rpcOK(t, url, "echo")), "v2:") })
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tools(h *host.Host, path string) string {
	for _, r := range h.Routes() {
		if r.Path == path {
			return strings.Join(r.Tools, ",")
		}
	}
	return "(not mounted)"
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestWatchFolder(t *testing.T) {
	dir := t.TempDir()
	h, logs := watchHost(t, dir) // an empty folder serves nothing, and waits
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	if len(h.Routes()) != 0 {
		t.Fatalf("Routes() = %v on an empty folder", h.Routes())
	}

	// Added: mounted.
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one"))
	waitFor(t, "a.lua to mount", func() bool { return tools(h, "/mcp/a") == "one" })
	if got := toolText(t, rpcOK(t, srv.URL+"/mcp/a", "one")); got != "one" {
		t.Errorf("tools/call one = %q", got)
	}

	// Changed: reloaded.
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one", "two"))
	waitFor(t, "a.lua to reload", func() bool { return tools(h, "/mcp/a") == "one,two" })

	// Broken: the running version stays, and the log says where.
	write(t, filepath.Join(dir, "a.lua"), "return {\n  init = function(\n")
	waitFor(t, "the broken edit to be reported", func() bool { return strings.Contains(logs.String(), "a.lua:2: syntax error") })
	if got := toolText(t, rpcOK(t, srv.URL+"/mcp/a", "two")); got != "two" {
		t.Errorf("after a broken edit tools/call two = %q", got)
	}
	if len(h.LoadErrors()) != 0 {
		t.Errorf("a broken edit of a mounted script is a load error: %v", h.LoadErrors())
	}

	// A new path: remounted.
	write(t, filepath.Join(dir, "a.lua"), server(`{ path = "/mcp/moved" }`, "three"))
	waitFor(t, "a.lua to remount", func() bool { return tools(h, "/mcp/moved") == "three" })
	if s := status(t, srv.URL+"/mcp/a"); s != http.StatusNotFound {
		t.Errorf("the old path answers %d, want 404", s)
	}

	// A path clash is a load error until the other script lets go.
	write(t, filepath.Join(dir, "b.lua"), server(`{ path = "/mcp/moved" }`, "bee"))
	waitFor(t, "the clash to be reported", func() bool { return len(h.LoadErrors()) == 1 })

	// Removed: unmounted, and the clashing script takes the path.
	if err := os.Remove(filepath.Join(dir, "a.lua")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b.lua to take the path", func() bool { return tools(h, "/mcp/moved") == "bee" })
	if errs := h.LoadErrors(); len(errs) != 0 {
		t.Errorf("LoadErrors() = %v after the clash resolved", errs)
	}
}

// TestWatchRelativeFolder watches a folder given as "." or "./", whose
// files fsnotify names "./a.lua": an edit reloads its script, a removal
// unmounts it and a new file mounts as itself, as in any other folder.
func TestWatchRelativeFolder(t *testing.T) {
	for _, dir := range []string{".", "./"} {
		t.Run(dir, func(t *testing.T) {
			t.Chdir(t.TempDir())
			write(t, "a.lua", server(`{}`, "one"))
			h, logs := watchHost(t, dir)
			srv := httptest.NewServer(h.Handler())
			defer srv.Close()

			write(t, "a.lua", server(`{}`, "one", "two"))
			waitFor(t, "a.lua to reload", func() bool { return tools(h, "/mcp/a") == "one,two" })
			write(t, "b.lua", server(`{}`, "bee"))
			waitFor(t, "b.lua to mount", func() bool { return tools(h, "/mcp/b") == "bee" })
			if err := os.Remove("a.lua"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a.lua to unmount", func() bool { return status(t, srv.URL+"/mcp/a") == http.StatusNotFound })
			h.Reload() // what SIGHUP does
			if got := tools(h, "/mcp/b"); got != "bee" || len(h.LoadErrors()) != 0 {
				t.Errorf("after a reload /mcp/b has tools %q, load errors %v", got, h.LoadErrors())
			}
			if strings.Contains(logs.String(), "already mounted") {
				t.Errorf("a script clashed with itself:\n%s", logs.String())
			}
		})
	}
}

func TestWatchModules(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "lib", "util.lua"), utilModule)
	write(t, filepath.Join(dir, "good.lua"), goodScript)
	write(t, filepath.Join(dir, "other.lua"), server(`{}`, "x"))
	h, logs := watchHost(t, dir)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	echo := func() string {
		_, res := rpc(t, srv.URL+"/mcp/good", "", "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
		return toolText(t, res)
	}
	if got := echo(); got != "util:hi" {
		t.Fatalf("echo = %q", got)
	}
	write(t, filepath.Join(dir, "lib", "util.lua"), `return { tag = function(s) return "v2:" .. s end }`)
	waitFor(t, "good.lua to pick up the module", func() bool { return echo() == "v2:hi" })
	if strings.Contains(logs.String(), "script=other.lua") {
		t.Error("a script that does not require the module was reloaded")
	}

	// A script that failed on a broken module mounts once the module is fixed.
	write(t, filepath.Join(dir, "lib", "util.lua"), "return {")
	write(t, filepath.Join(dir, "late.lua"), strings.Replace(goodScript, `"good"`, `"late"`, 1))
	waitFor(t, "late.lua to fail", func() bool { return len(h.LoadErrors()) == 1 })
	write(t, filepath.Join(dir, "lib", "util.lua"), utilModule)
	waitFor(t, "late.lua to mount", func() bool { return tools(h, "/mcp/late") == "echo" })
}

// TestWatchOtherFiles: a path no require can name (a note renamed, the
// backup an editor removes after each save) changes no module: the scripts
// that failed are not loaded again for it, as they are for a module.
func TestWatchOtherFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "lib", "util.lua"), utilModule)
	write(t, filepath.Join(dir, "good.lua"), goodScript)
	write(t, filepath.Join(dir, "bad.lua"), "return {")
	var changes atomic.Int32
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := startHost(t, host.Config{Dir: dir, Logger: logger, PoolSize: 1, Watch: true, Debounce: 20 * time.Millisecond,
		Changed: func() { changes.Add(1) }})
	if n := len(h.LoadErrors()); n != 1 {
		t.Fatalf("LoadErrors = %d, want 1", n)
	}
	for _, p := range []string{filepath.Join(dir, "notes.txt"), filepath.Join(dir, "lib", "notes.txt")} {
		write(t, p, "x")
		if err := os.Rename(p, p+"~"); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p + "~"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // many debounces
	if n := changes.Load(); n != 0 {
		t.Errorf("renaming and removing notes retried the failed script: Changed called %d times", n)
	}
	// A module's edit does retry it.
	write(t, filepath.Join(dir, "lib", "util.lua"), utilModule+"\n")
	waitFor(t, "the failed script to be tried again", func() bool { return changes.Load() > 0 })
}

// TestReloadAppliesFailedEdit: an edit of a mounted script that fails to
// reload for a reason outside its file (a module it requires is missing, a
// path it claims is taken) leaves the running version serving, and is
// applied by Reload once that reason is gone: Reload applies the folder as
// it is, even content that failed before.
func TestReloadAppliesFailedEdit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string // the folder at start: a.lua serves tool one on /mcp/a or /x
		from  string            // a.lua's path at start
		edit  string            // a.lua edited: fails to reload until unblock
		to    string            // a.lua's path once the edit is applied
		// unblock removes the cause of the failure.
		unblock func(t *testing.T, dir string)
	}{
		{
			name:  "module added later",
			files: map[string]string{"a.lua": server(`{}`, "one")},
			from:  "/mcp/a",
			edit:  "local helper = require(\"lib.helper\")\n" + server(`{}`, "one", "two"),
			to:    "/mcp/a",
			unblock: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "lib", "helper.lua"), "return {}")
			},
		},
		{
			name: "path freed later",
			files: map[string]string{
				"a.lua": server(`{ path = "/x" }`, "one"),
				"b.lua": server(`{ path = "/y" }`, "bee"),
			},
			from: "/x",
			edit: server(`{ path = "/y" }`, "one", "two"),
			to:   "/y",
			unblock: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "b.lua")); err != nil {
					t.Fatal(err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, tc.files)
			h, logs := newHost(t, dir)
			write(t, filepath.Join(dir, "a.lua"), tc.edit)
			h.Reload()
			h.Reload()
			if got := tools(h, tc.from); got != "one" {
				t.Fatalf("after the failed edit %s serves %q, want the running version's one", tc.from, got)
			}
			if n := strings.Count(logs.String(), "script not reloaded"); n != 1 {
				t.Errorf("the failed edit was logged %d times over two reloads, want once:\n%s", n, logs.String())
			}
			if errs := h.LoadErrors(); len(errs) != 0 {
				t.Errorf("a.lua serves, yet LoadErrors() = %v", errs)
			}

			tc.unblock(t, dir)
			h.Reload()
			if got := tools(h, tc.to); got != "one,two" {
				t.Errorf("once the cause is gone, Reload left %s serving %q, want the edit's one,two", tc.to, got)
			}
		})
	}
}

// TestWatchAppliesFailedEdit: with the watcher on, the module an edit
// failed on applies the edit when it appears, though the running version
// never required it.
func TestWatchAppliesFailedEdit(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.lua": server(`{}`, "one")})
	h, logs := watchHost(t, dir)
	write(t, filepath.Join(dir, "a.lua"), "local helper = require(\"lib.helper\")\n"+server(`{}`, "one", "two"))
	waitFor(t, "the failed reload", func() bool { return strings.Contains(logs.String(), "script not reloaded") })
	write(t, filepath.Join(dir, "lib", "helper.lua"), "return {}")
	waitFor(t, "the edit to be applied", func() bool { return tools(h, "/mcp/a") == "one,two" })
}

// TestUnreadableScriptStaysMounted: a mounted script whose file cannot be
// read for a moment (too large, half written) keeps serving, and is no load
// error, then or after: LoadErrors lists the scripts not mounted (serve
// prints them so, and systemd's status counts them).
func TestUnreadableScriptStaysMounted(t *testing.T) {
	dir := writeDir(t, map[string]string{"a.lua": server(`{}`, "one")})
	h, logs := newHost(t, dir)
	file := filepath.Join(dir, "a.lua")
	write(t, file, strings.Repeat("-- x\n", luavm.MaxSourceBytes/5+1))
	h.Reload()
	contains(t, logs.String(), "script not reloaded")
	contains(t, logs.String(), "larger than 16 MiB")
	if got := tools(h, "/mcp/a"); got != "one" {
		t.Errorf("while a.lua cannot be read /mcp/a serves %q, want the running version's one", got)
	}
	if errs := h.LoadErrors(); len(errs) != 0 {
		t.Errorf("while a.lua cannot be read LoadErrors() = %v, want none: it is mounted", errs)
	}

	write(t, file, server(`{}`, "one", "two"))
	h.Reload()
	if got := tools(h, "/mcp/a"); got != "one,two" {
		t.Fatalf("after a readable edit /mcp/a serves %q", got)
	}
	if errs := h.LoadErrors(); len(errs) != 0 {
		t.Errorf("a.lua reloaded, yet LoadErrors() = %v", errs)
	}
}

// TestEditUndone: a broken edit saved back to the content that serves needs
// no reload, and the watcher says so (the one who fixed it sees it taken).
func TestEditUndone(t *testing.T) {
	good := server(`{}`, "one")
	dir := writeDir(t, map[string]string{"a.lua": good})
	h, logs := watchHost(t, dir)
	file := filepath.Join(dir, "a.lua")
	write(t, file, "return {")
	waitFor(t, "the failed reload", func() bool { return strings.Contains(logs.String(), "script not reloaded") })
	write(t, file, good)
	waitFor(t, "the undo", func() bool { return strings.Contains(logs.String(), "script back to its running version") })
	if got := tools(h, "/mcp/a"); got != "one" || strings.Contains(logs.String(), "script reloaded") {
		t.Errorf("/mcp/a serves %q; log:\n%s", got, logs.String())
	}
}

// TestWatchStops: Shutdown stops the watcher and leaves no goroutine behind.
func TestWatchStops(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one"))
	h, err := host.New(host.Config{Dir: dir, Logger: slog.New(slog.DiscardHandler), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "b.lua"), server(`{}`, "two"))
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if len(h.Routes()) != 1 {
		t.Errorf("a change after Shutdown was applied: %v", h.Routes())
	}
}

// rpcOK calls a tool on a stateless route.
func rpcOK(t *testing.T, url, tool string) rpcResponse {
	t.Helper()
	_, res := rpc(t, url, "", "tools/call", map[string]any{"name": tool})
	return res
}

// TestTransportSettings: the host's process-wide session cap spans its
// routes, and its transport settings on every route do not make a reload
// look like a change of route options (which would end the sessions).
func TestTransportSettings(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"a.lua": server("{ sessions = true }", "one"),
		"b.lua": server("{ sessions = true }", "one"),
	})
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := host.New(host.Config{Dir: dir, Logger: logger, PoolSize: 1, Watch: true, Debounce: 20 * time.Millisecond,
		MaxSessions: 2, BodyTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	resp, _ := rpc(t, srv.URL+"/mcp/a", "", "initialize", initParams)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp, _ := rpc(t, srv.URL+"/mcp/b", "", "initialize", initParams); resp.StatusCode != 200 {
		t.Fatalf("second session: HTTP %d", resp.StatusCode)
	}
	third, err := http.DefaultClient.Do(newRPCRequest(t, srv.URL+"/mcp/a", "", "initialize", initParams))
	if err != nil {
		t.Fatal(err)
	}
	third.Body.Close()
	if third.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third session across the routes: HTTP %d, want 503", third.StatusCode)
	}

	write(t, filepath.Join(dir, "a.lua"), server("{ sessions = true }", "one", "two"))
	waitFor(t, "the reload", func() bool { return strings.Contains(logs.String(), "script reloaded") })
	if strings.Contains(logs.String(), "remounted") {
		t.Fatalf("an edit that kept the route options remounted the route:\n%s", logs.String())
	}
	if resp, res := rpc(t, srv.URL+"/mcp/a", sid, "ping", nil); resp.StatusCode != 200 || res.Error != nil {
		t.Fatalf("the session after the reload: HTTP %d %+v", resp.StatusCode, res.Error)
	}
}

// TestReloadReachesListenStreams: a 2026-07-28 client's subscriptions/listen
// stream hears of a hot reload (it has no session for luavm to tell).
func TestReloadReachesListenStreams(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one"))
	h, _ := watchHost(t, dir)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	body := `{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp/a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				lines <- data
			}
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-ctx.Done():
			t.Fatal("no message on the listen stream")
			return ""
		}
	}
	if ack := next(); !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first message %s", ack)
	}
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one", "two"))
	if msg := next(); !strings.Contains(msg, `"notifications/tools/list_changed"`) || !strings.Contains(msg, `"io.modelcontextprotocol/subscriptionId":9`) {
		t.Fatalf("after the reload: %s", msg)
	}
}

// TestWatchConfigMap: a folder laid out as Kubernetes mounts a ConfigMap
// (every file a link through "..data", a hidden link to a hidden folder) is
// served, and an update (a new hidden folder, "..data" swapped to it in one
// rename, the old folder removed) reloads the servers and the scripts whose
// modules changed, as an edit in place does.
func TestWatchConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, server, util string) {
		write(t, filepath.Join(dir, name, "a.lua"), server)
		write(t, filepath.Join(dir, name, "good.lua"), goodScript)
		write(t, filepath.Join(dir, name, "lib", "util.lua"), util)
	}
	swap := func(to string) {
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(to, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_12_05_a", server(`{}`, "one"), utilModule)
	swap("..2026_12_05_a")
	for _, name := range []string{"a.lua", "good.lua", "lib"} {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := watchHost(t, dir)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	if got := tools(h, "/mcp/a"); got != "one" {
		t.Fatalf("tools of a.lua = %q, want one", got)
	}
	if got := toolText(t, rpcOK(t, srv.URL+"/mcp/good", "echo")); !strings.HasPrefix(got, "util:") {
		t.Fatalf("good.lua answers %q before the update", got)
	}

	version("..2026_12_05_b", server(`{}`, "one", "two"), utilModuleV2)
	swap("..2026_12_05_b")
	if err := os.RemoveAll(filepath.Join(dir, "..2026_12_05_a")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a.lua to reload after the swap", func() bool { return tools(h, "/mcp/a") == "one,two" })
	waitForUtilV2(t, "good.lua to reload its module after the swap", srv.URL+"/mcp/good")
}

// TestWatchLinks: a server file linked from outside the folder, and a folder
// of modules linked from inside it, reload when their targets are edited.
func TestWatchLinks(t *testing.T) {
	root := t.TempDir()
	dir, outside := filepath.Join(root, "scripts"), filepath.Join(root, "shared")
	write(t, filepath.Join(outside, "far.lua"), server(`{}`, "one"))
	write(t, filepath.Join(dir, "vendor", "lib", "util.lua"), utilModule)
	write(t, filepath.Join(dir, "good.lua"), goodScript)
	for link, target := range map[string]string{
		"far.lua": filepath.Join(outside, "far.lua"),
		"lib":     filepath.Join("vendor", "lib"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := watchHost(t, dir)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	if got := tools(h, "/mcp/far"); got != "one" {
		t.Fatalf("tools of far.lua = %q, want one", got)
	}

	write(t, filepath.Join(outside, "far.lua"), server(`{}`, "one", "two"))
	waitFor(t, "far.lua to reload", func() bool { return tools(h, "/mcp/far") == "one,two" })

	write(t, filepath.Join(dir, "vendor", "lib", "util.lua"), utilModuleV2)
	waitForUtilV2(t, "good.lua to reload its linked module", srv.URL+"/mcp/good")
}

// TestWatchLinkedFolder: a scripts folder named through a symbolic link is
// watched, sub-folders too.
func TestWatchLinkedFolder(t *testing.T) {
	root := t.TempDir()
	target, dir := filepath.Join(root, "target"), filepath.Join(root, "scripts")
	write(t, filepath.Join(target, "a.lua"), server(`{}`, "one"))
	write(t, filepath.Join(target, "lib", "util.lua"), utilModule)
	write(t, filepath.Join(target, "good.lua"), goodScript)
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
	h, _ := watchHost(t, dir)
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one", "two"))
	waitFor(t, "a.lua to reload", func() bool { return tools(h, "/mcp/a") == "one,two" })
	write(t, filepath.Join(target, "lib", "util.lua"), utilModuleV2)
	waitForUtilV2(t, "good.lua to reload its module", srv.URL+"/mcp/good")
}

// TestWatchPoll: on a folder that sends no file events (none are watched
// here), polling sees what editors and Kubernetes do: an edit, a new file,
// a module's edit, a ConfigMap's swap of ..data, a removal.
func TestWatchPoll(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one"))
	write(t, filepath.Join(dir, "lib", "util.lua"), utilModule)
	write(t, filepath.Join(dir, "good.lua"), goodScript)
	write(t, filepath.Join(dir, "..2026_a", "cm.lua"), server(`{}`, "x"))
	if err := os.Symlink("..2026_a", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "cm.lua"), filepath.Join(dir, "cm.lua")); err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	h := startHost(t, host.WithoutFileEvents(host.Config{Dir: dir, PoolSize: 1, Watch: true,
		WatchPoll: 20 * time.Millisecond, Debounce: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()

	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one", "two"))
	waitFor(t, "a.lua to reload", func() bool { return tools(h, "/mcp/a") == "one,two" })
	write(t, filepath.Join(dir, "b.lua"), server(`{}`, "bee"))
	waitFor(t, "b.lua to mount", func() bool { return tools(h, "/mcp/b") == "bee" })
	write(t, filepath.Join(dir, "lib", "util.lua"), utilModuleV2)
	waitForUtilV2(t, "good.lua to reload its module", srv.URL+"/mcp/good")
	write(t, filepath.Join(dir, "..2026_b", "cm.lua"), server(`{}`, "x", "y"))
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink("..2026_b", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "cm.lua to reload after the swap", func() bool { return tools(h, "/mcp/cm") == "x,y" })
	if err := os.Remove(filepath.Join(dir, "b.lua")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b.lua to unmount", func() bool { return tools(h, "/mcp/b") == "(not mounted)" })

	// A folder that cannot be read for a moment (a deploy between its two
	// renames, a share that is down) is not a folder whose files are gone.
	away := dir + ".away"
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // several looks
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if n := strings.Count(logs.String(), "script unmounted"); n != 1 {
		t.Errorf("%d scripts unmounted, want only b.lua's: an unreadable folder was taken for an empty one", n)
	}
	if got := tools(h, "/mcp/a"); got != "one,two" {
		t.Errorf("a.lua after the folder came back: %q", got)
	}
}

// TestWatchReplacedFolder: a deploy that replaces the scripts folder (a
// rename over it, or the swap of a "current" link on its path) is applied,
// and the new folder is watched from then on.
func TestWatchReplacedFolder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, root, dir string, n int) // puts release n in place
	}{
		{"renamed over", func(t *testing.T, root, dir string, n int) {
			if err := os.Rename(dir, filepath.Join(root, "old"+strconv.Itoa(n))); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(root, "release"+strconv.Itoa(n)), dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"link swapped", func(t *testing.T, root, dir string, n int) {
			tmp := filepath.Join(root, "tmp")
			if err := os.Symlink("release"+strconv.Itoa(n), tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, dir); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "scripts")
			write(t, filepath.Join(root, "release1", "a.lua"), server(`{}`, "one"))
			write(t, filepath.Join(root, "release2", "a.lua"), server(`{}`, "one", "two"))
			if tc.name == "renamed over" {
				if err := os.Rename(filepath.Join(root, "release1"), dir); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink("release1", dir); err != nil {
				t.Fatal(err)
			}
			h, _ := watchHost(t, dir)
			if got := tools(h, "/mcp/a"); got != "one" {
				t.Fatalf("tools of a.lua = %q, want one", got)
			}
			tc.replace(t, root, dir, 2)
			waitFor(t, "a.lua to reload from the new folder", func() bool { return tools(h, "/mcp/a") == "one,two" })
			write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one", "two", "three"))
			waitFor(t, "an edit in the new folder", func() bool { return tools(h, "/mcp/a") == "one,two,three" })
		})
	}
}

// TestWatchFolderAwayForAMoment: the scripts folder moved away and back
// (a deploy's gap, a remount) is not a folder whose scripts were removed:
// nothing is unmounted, and edits apply afterwards.
func TestWatchFolderAwayForAMoment(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one"))
	h, logs := watchHost(t, dir)
	away := dir + ".away"
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // past the debounce
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if strings.Contains(logs.String(), "script unmounted") {
		t.Errorf("moving the folder away for a moment unmounted its scripts")
	}
	write(t, filepath.Join(dir, "a.lua"), server(`{}`, "one", "two"))
	waitFor(t, "a.lua to reload after the folder came back", func() bool { return tools(h, "/mcp/a") == "one,two" })
}

// TestWatchFileBack: a server file that is deleted and written anew (a
// deploy's slow copy, a checkout, an editor that deletes before it writes)
// is reloaded with its sessions kept when it comes back within the removal
// grace (ten debounces); one that stays away is unmounted once it has
// passed, and its sessions end.
func TestWatchFileBack(t *testing.T) {
	const debounce = 50 * time.Millisecond
	dir := writeDir(t, map[string]string{"a.lua": server(`{ sessions = true }`, "one")})
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := startHost(t, host.Config{Dir: dir, Logger: logger, PoolSize: 1, Watch: true, Debounce: debounce})
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	resp, _ := rpc(t, srv.URL+"/mcp/a", "", "initialize", initParams)
	sid := resp.Header.Get("Mcp-Session-Id")
	sessions := func() int { return h.Stats()[0].Sessions }
	if sid == "" || sessions() != 1 {
		t.Fatalf("initialize: session %q, %d sessions", sid, sessions())
	}

	if err := os.Remove(filepath.Join(dir, "a.lua")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removal to be seen", func() bool {
		return strings.Contains(logs.String(), "script file gone") || tools(h, "/mcp/a") == "(not mounted)"
	})
	write(t, filepath.Join(dir, "a.lua"), server(`{ sessions = true }`, "one", "two"))
	waitFor(t, "a.lua to reload", func() bool { return tools(h, "/mcp/a") == "one,two" })
	time.Sleep(20 * debounce) // past the grace: its look finds the file
	if tools(h, "/mcp/a") != "one,two" || sessions() != 1 {
		t.Fatalf("a file back within the grace: tools %q, %d sessions, want one,two and the session kept", tools(h, "/mcp/a"), sessions())
	}
	if _, res := rpc(t, srv.URL+"/mcp/a", sid, "tools/call", map[string]any{"name": "two"}); toolText(t, res) != "two" {
		t.Errorf("the kept session's tools/call two = %q", toolText(t, res))
	}

	if err := os.Remove(filepath.Join(dir, "a.lua")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a.lua to unmount", func() bool { return tools(h, "/mcp/a") == "(not mounted)" })
}
