package tests

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stop sends SIGTERM to p and waits for it to exit.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(waitLong):
		t.Fatalf("%s did not exit within %v of SIGTERM:\n%s", p.id, waitLong, p.logs.String())
	}
}

// restartable returns the serve arguments of a server of the script src
// (and the lib folder beside it) on an address of its own, saving its
// sessions to file: a process started again with them finds them there.
func restartable(t *testing.T, src string) (args []string, file string) {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join(filepath.Dir(src), "lib"), filepath.Join(dir, "lib"))
	copyFile(t, src, filepath.Join(dir, filepath.Base(src)))
	file = filepath.Join(t.TempDir(), "sessions.json")
	return []string{"--dir", dir, "--addr", freeAddr(t), "--no-watch", "--sessions-file", file}, file
}

// TestSessionsSurviveRestart: `serve --sessions-file` saves the live
// sessions when it gets SIGTERM and resumes them when it starts again on
// the same address: the official Go SDK client goes on with its session,
// whose state is where it was, without initializing again, and so does a
// raw client; the script's terminate does not run for them; the file is
// its owner's only, and gone once read.
func TestSessionsSurviveRestart(t *testing.T) {
	bin := buildLuamcp(t)
	args, file := restartable(t, filepath.Join("testdata", "servers", "session.lua"))

	first := startServe(t, bin, "first", args...)
	url := first.base + "/mcp/session"
	c := connectGo(t, url, nil, latestVersion)
	for i := 1; i <= 3; i++ {
		c.wantText(t, "count", nil, strconv.Itoa(i))
	}
	raw := nodesClient(t)
	sid := raw.initialize(t, url)
	raw.callTool(t, url, sid, "count", nil).wantText(t, "1")
	first.stop(t)
	if strings.Contains(first.logs.String(), "fixture terminate") {
		t.Errorf("terminate ran for sessions that were saved:\n%s", first.logs.String())
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatalf("no sessions file after SIGTERM: %v\n%s", err, first.logs.String())
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("the sessions file has mode %v, want 0600: it holds session ids", perm)
	}

	second := startServe(t, bin, "second", args...)
	if second.base != first.base {
		t.Fatalf("the second process serves %s, the first served %s", second.base, first.base)
	}
	c.wantText(t, "count", nil, "4")
	raw.callTool(t, url, sid, "count", nil).wantText(t, "2")
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the sessions file is still there once read: %v", err)
	}
	// A session nobody saved is unknown, as ever.
	if r := raw.do(t, url, call{Body: request(1, "ping", nil), Session: strings.Repeat("0", 32)}); r.Status != http.StatusNotFound {
		t.Errorf("an unknown session: HTTP %d, want 404", r.Status)
	}
	if !strings.Contains(second.logs.String(), "sessions=2") {
		t.Errorf("the second process did not log two sessions resumed:\n%s", second.logs.String())
	}
}

// TestTSSDKSessionsSurviveRestart: the same with the official TypeScript
// SDK client (node/restart.mjs), whose GET channel, reopened by the SDK
// with Last-Event-ID once the new process listens, carries pushes again.
func TestTSSDKSessionsSurviveRestart(t *testing.T) {
	bin := buildLuamcp(t)
	args, _ := restartable(t, filepath.Join("testdata", "servers", "session.lua"))
	p := startServe(t, bin, "first", args...)
	base := p.base
	runSteps(t, map[string]func(){
		"restart": func() {
			p.stop(t)
			p = startServe(t, bin, "second", args...)
		},
	}, "restart.mjs", base+"/mcp/session")
	if p.id != "second" {
		t.Fatal("the client never asked for the restart")
	}
}

// TestTasksSurviveRestart: with --sessions-file a task outlives the process
// that ran it, until its ttl: one over before the SIGTERM answers its polls
// with its result in the next process, one the shutdown stopped says so
// (failed), rather than being unknown; for a 2026-07-28 client (the route's
// tasks) and a 2025-11-25 session (its session's, saved with it).
func TestTasksSurviveRestart(t *testing.T) {
	bin := buildLuamcp(t)
	args, _ := restartable(t, filepath.Join("..", "scripts", "live.lua"))
	first := startServe(t, bin, "first", args...)
	url := first.base + "/mcp/live"
	s := nodesClient(t)
	tasks := map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	report := func(id, seconds int) string {
		var created eraTask
		eraResult(t, s.do(t, url, eraCall(id, "tools/call", map[string]any{"name": "report", "arguments": map[string]any{"seconds": seconds}}, tasks)), &created)
		if created.ResultType != "task" {
			t.Fatalf("report = %+v, want a task", created)
		}
		return created.TaskID
	}
	get := func(id int, task string) eraTask {
		var got eraTask
		eraResult(t, s.do(t, url, eraCall(id, "tasks/get", map[string]any{"taskId": task}, tasks)), &got)
		return got
	}
	done, stopped := report(1, 0), report(2, 60)
	for deadline := time.Now().Add(waitLong); get(3, done).Status != "completed"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a report of 0 seconds never completed")
		}
	}
	sid := s.initialize(t, url)
	r := s.do(t, url, call{Body: request(4, "tools/call", map[string]any{"name": "report", "arguments": map[string]any{"seconds": 0}, "task": map[string]any{}}), Session: sid})
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if err := json.Unmarshal(r.response(t).Result, &created); err != nil || created.Task.TaskID == "" {
		t.Fatalf("a 2025-11-25 task: %s", r.Body)
	}
	sessionTask := created.Task.TaskID
	// Its outcome, once there is one, before the restart.
	s.do(t, url, call{Body: request(5, "tasks/result", map[string]any{"taskId": sessionTask}), Session: sid})
	first.stop(t)

	second := startServe(t, bin, "second", args...)
	if second.base != first.base {
		t.Fatalf("the second process serves %s, the first served %s", second.base, first.base)
	}
	if got := get(6, done); got.Status != "completed" || got.Result == nil || got.Result.Content[0].Text != "Report ready after 0 seconds" {
		t.Errorf("a task over before the restart = %+v", got)
	}
	if got := get(7, stopped); got.Status != "failed" || got.Error == nil {
		t.Errorf("a task the restart stopped = %+v", got)
	}
	r = s.do(t, url, call{Body: request(8, "tasks/result", map[string]any{"taskId": sessionTask}), Session: sid})
	if res := r.response(t); res.Error != nil || !strings.Contains(string(res.Result), "Report ready after 0 seconds") {
		t.Errorf("tasks/result of a session's task after the restart: %s", r.Body)
	}
	if !strings.Contains(second.logs.String(), "tasks resumed") {
		t.Errorf("the second process did not log the tasks it resumed:\n%s", second.logs.String())
	}
}
