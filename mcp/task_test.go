package mcp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// metaTasks is the 2026-07-28 _meta of a client that declares elicitation
// and the tasks extension.
const metaTasks = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskCall sends a tools/call of the fake's "task" tool with args, from a
// client that declares the tasks extension.
func (rt *route) taskCall(args string) reply {
	rt.t.Helper()
	return rt.modernWith(metaTasks, "tools/call", `{"name":"task","arguments":`+args+`}`)
}

// taskOp sends tasks/get, tasks/update or tasks/cancel for id, with extra
// params members.
func (rt *route) taskOp(meta, method, id, extra string) reply {
	rt.t.Helper()
	return rt.modernWith(meta, method, `{"taskId":`+mustJSON(id)+extra+`}`, "Mcp-Name: "+id)
}

// startTask calls the "task" tool with args and returns the new task's id.
func (rt *route) startTask(args string) string {
	rt.t.Helper()
	r := rt.taskCall(args)
	res := r.result()
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["status"] != "working" {
		rt.t.Fatalf("tools/call did not start a task: %s", r.body)
	}
	return id
}

// pollTask polls tasks/get until the task's status is want, and returns
// that answer's result.
func (rt *route) pollTask(id, want string) map[string]any {
	rt.t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		r := rt.taskOp(metaTasks, "tasks/get", id, "")
		res := r.result()
		if res["status"] == want {
			return res
		}
		if time.Now().After(deadline) {
			rt.t.Fatalf("task %s never became %s: %s", id, want, r.body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTaskLifecycle(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{})
	r := rt.taskCall(`{"support":"optional","wait":true,"ttl":60000}`)
	res := r.result()
	for _, k := range []string{"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} {
		if _, ok := res[k]; !ok {
			t.Errorf("CreateTaskResult lacks %s: %s", k, r.body)
		}
	}
	for _, k := range []string{"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"} {
		if _, ok := res[k]; ok {
			t.Errorf("CreateTaskResult carries %s: %s", k, r.body)
		}
	}
	if res["resultType"] != "task" || res["ttlMs"] != 60000.0 || res["pollIntervalMs"] != 500.0 {
		t.Fatalf("CreateTaskResult = %s", r.body)
	}
	id := res["taskId"].(string)
	// The answer came while the call runs: it is working, with no result.
	got := rt.pollTask(id, "working")
	if _, ok := got["result"]; ok || got["resultType"] != "complete" {
		t.Errorf("working task: %v", got)
	}
	f.release <- struct{}{}
	got = rt.pollTask(id, "completed")
	res, _ = got["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) != 1 || !strings.Contains(mustJSON(content), "task=true") || res["isError"] != false {
		t.Errorf("completed task: %v", got)
	}
	if _, ok := got["error"]; ok {
		t.Errorf("completed task carries error: %v", got)
	}
	// A tool's own failure completes the task; a crash fails it.
	id = rt.startTask(`{"support":"optional","fail":true}`)
	got = rt.pollTask(id, "completed")
	if res, _ := got["result"].(map[string]any); res["isError"] != true {
		t.Errorf("failing tool: %v", got)
	}
	id = rt.startTask(`{"support":"required","crash":true}`)
	got = rt.pollTask(id, "failed")
	e, _ := got["error"].(map[string]any)
	if _, ok := got["result"]; ok || e["code"] != -32603.0 || e["message"] != "Internal error" {
		t.Errorf("crashed task: %v", got)
	}
}

func TestTaskDispatch(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	for _, tc := range []struct {
		name, meta, args string
		want             string // the answer's text, or "error <code> <status>"
	}{
		{"optional without the extension", metaAll, `{"support":"optional"}`, "task=false"},
		{"forbidden with the extension", metaTasks, `{}`, "task=false"},
		{"unknown support with the extension", metaTasks, `{"support":"sometimes"}`, "task=false"},
		{"required without the extension", metaAll, `{"support":"required"}`, "error -32021 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rt.modernWith(tc.meta, "tools/call", `{"name":"task","arguments":`+tc.args+`}`)
			got := r.text()
			if c := r.errorCode(); c != 0 {
				got = "error " + mustJSON(c) + " " + mustJSON(r.status)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q: %s", got, tc.want, r.body)
			}
			if r.result()["resultType"] == "task" {
				t.Errorf("a task: %s", r.body)
			}
		})
	}
	r := rt.modernWith(metaAll, "tools/call", `{"name":"task","arguments":{"support":"required"}}`)
	if d := mustJSON(r.msg["error"]); !strings.Contains(d, `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
		t.Errorf("-32021 data: %s", d)
	}
	// The 2025 era runs no tasks: a tool that requires one is not found.
	sid := rt.initialize()
	if r := rt.call(sid, 1, "tools/call", `{"name":"task","arguments":{"support":"required"}}`); r.errorCode() != -32601 {
		t.Errorf("2025 era, required: %s", r.body)
	}
	if r := rt.call(sid, 2, "tools/call", `{"name":"task","arguments":{"support":"optional"}}`); r.text() != "task=false" {
		t.Errorf("2025 era, optional: %s", r.body)
	}
	// server/discover advertises the extension beside the server's own.
	r = rt.modern("server/discover", "")
	caps, _ := r.result()["capabilities"].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	if _, ok := exts["io.modelcontextprotocol/tasks"]; !ok || caps["tasks"] != nil || caps["tools"] == nil {
		t.Errorf("discover capabilities: %v", caps)
	}
}

func TestTaskMethodsRefuse(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	id := rt.startTask(`{"support":"optional"}`)
	for _, tc := range []struct {
		name, meta, method, id, extra string
		headers                       []string
		code, status                  int
	}{
		{"get without the extension", metaAll, "tasks/get", id, "", nil, -32021, 400},
		{"update without the extension", metaAll, "tasks/update", id, `,"inputResponses":{}`, nil, -32021, 400},
		{"cancel without the extension", metaAll, "tasks/cancel", id, "", nil, -32021, 400},
		{"unknown task", metaTasks, "tasks/get", "nope", "", nil, -32602, 200},
		{"unknown task cancelled", metaTasks, "tasks/cancel", "nope", "", nil, -32602, 200},
		{"Mcp-Name of another task", metaTasks, "tasks/get", id, "", []string{"Mcp-Name: other"}, -32020, 400},
		{"inputResponses not an object", metaTasks, "tasks/update", id, `,"inputResponses":[]`, nil, -32602, 200},
		{"tasks/result is gone", metaTasks, "tasks/result", id, "", nil, -32601, 404},
		{"tasks/list is gone", metaTasks, "tasks/list", id, "", nil, -32601, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := `{"taskId":` + mustJSON(tc.id) + tc.extra + `}`
			headers := []string{"Mcp-Name: " + tc.id}
			if tc.headers != nil {
				headers = tc.headers
			}
			r := rt.modernWith(tc.meta, tc.method, params, headers...)
			if r.errorCode() != tc.code || r.status != tc.status {
				t.Errorf("got %d (HTTP %d), want %d (HTTP %d): %s", r.errorCode(), r.status, tc.code, tc.status, r.body)
			}
		})
	}
	if r := rt.modernWith(metaTasks, "tasks/get", `{}`); r.errorCode() != -32602 {
		t.Errorf("no taskId: %s", r.body)
	}
}

func TestTaskCancel(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{})
	id := rt.startTask(`{"support":"optional","wait":true}`)
	r := rt.taskOp(metaTasks, "tasks/cancel", id, "")
	if r.body == "" || r.result()["resultType"] != "complete" || len(r.result()) != 1 {
		t.Fatalf("cancel ack: %s", r.body)
	}
	got := rt.pollTask(id, "cancelled")
	if _, ok := got["result"]; ok {
		t.Errorf("cancelled task carries a result: %v", got)
	}
	// The run was stopped, not left waiting for its release.
	waitStateless(t, rt, 0)
	// Cancelling a task that is over is the same ack.
	if r := rt.taskOp(metaTasks, "tasks/cancel", id, ""); r.result()["resultType"] != "complete" {
		t.Errorf("second cancel: %s", r.body)
	}
	if got := rt.pollTask(id, "cancelled"); got["status"] != "cancelled" {
		t.Errorf("after the second cancel: %v", got)
	}
}

func TestTaskInput(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	id := rt.startTask(`{"support":"optional","keys":["a","b"]}`)
	got := rt.pollTask(id, "input_required")
	reqs, _ := got["inputRequests"].(map[string]any)
	if len(reqs) != 2 || reqs["a"] == nil || reqs["b"] == nil {
		t.Fatalf("inputRequests: %v", got)
	}
	if q, _ := reqs["a"].(map[string]any); q["method"] != "elicitation/create" {
		t.Errorf("request a: %v", q)
	}
	// A malformed answer is refused and takes nothing.
	r := rt.taskOp(metaTasks, "tasks/update", id, `,"inputResponses":{"a":{"action":"maybe"}}`)
	if r.errorCode() != -32602 {
		t.Errorf("malformed answer: %s", r.body)
	}
	// One answer of two: the other stays pending.
	r = rt.taskOp(metaTasks, "tasks/update", id, `,"inputResponses":{"a":{"action":"accept","content":{"n":1}},"zzz":{}}`)
	if res := r.result(); res["resultType"] != "complete" || len(res) != 1 {
		t.Fatalf("update ack: %s", r.body)
	}
	got = rt.pollTask(id, "input_required")
	if reqs, _ := got["inputRequests"].(map[string]any); len(reqs) != 1 || reqs["b"] == nil {
		t.Fatalf("after a partial update: %v", got)
	}
	rt.taskOp(metaTasks, "tasks/update", id, `,"inputResponses":{"b":{"action":"decline"}}`)
	got = rt.pollTask(id, "completed")
	text := mustJSON(got["result"])
	if !strings.Contains(text, `task=true | {\"action\":\"accept\",\"content\":{\"n\":1}} | {\"action\":\"decline\"}`) {
		t.Errorf("result: %s", text)
	}
}

// Rounds before the task starts are the call's own (input_required with a
// requestState); the task started after them keeps their answers.
func TestTaskAfterRounds(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	r := rt.taskCall(`{"support":"required","before":"name"}`)
	res := r.result()
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || state == "" || res["taskId"] != nil {
		t.Fatalf("round 1: %s", r.body)
	}
	r = rt.modernWith(metaTasks, "tools/call", `{"name":"task","arguments":{"support":"required","before":"name"},`+
		`"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+mustJSON(state)+`}`)
	res = r.result()
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["requestState"] != nil {
		t.Fatalf("round 2: %s", r.body)
	}
	if text := mustJSON(rt.pollTask(id, "completed")["result"]); !strings.Contains(text, "Ada") {
		t.Errorf("result: %s", text)
	}
}

func TestTaskExpires(t *testing.T) {
	clock := time.Now()
	restore := mcp.SetClock(func() time.Time { return clock })
	defer restore()
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{})
	done := rt.startTask(`{"support":"optional","ttl":1000}`)
	rt.pollTask(done, "completed")
	running := rt.startTask(`{"support":"optional","ttl":1000,"wait":true}`)
	rt.pollTask(running, "working")
	clock = clock.Add(999 * time.Millisecond)
	rt.pollTask(done, "completed")
	clock = clock.Add(time.Millisecond)
	for _, id := range []string{done, running} {
		if r := rt.taskOp(metaTasks, "tasks/get", id, ""); r.errorCode() != -32602 {
			t.Errorf("task %s at its ttl: %s", id, r.body)
		}
	}
	// The expired running task was stopped.
	waitStateless(t, rt, 0)
}

// waitStateless waits until n stateless calls run on rt.
func waitStateless(t *testing.T, rt *route, n int) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for rt.h.StatelessRunning() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d stateless calls run, want %d", rt.h.StatelessRunning(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A task runs on after its request; Shutdown stops it and waits for it.
func TestTaskShutdown(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{})
	id := rt.startTask(`{"support":"optional","wait":true}`)
	rt.pollTask(id, "working")
	ctx, cancel := context.WithTimeout(context.Background(), liveness)
	defer cancel()
	if err := rt.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rt.h.StatelessRunning(); n != 0 {
		t.Errorf("%d stateless calls run after Shutdown", n)
	}
}

// A client that goes away before the call is a task cancels it.
func TestTaskClientGone(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + withMeta(`{"name":"wait","arguments":{}}`, metaTasks) + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rt.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for _, h := range modernHeaders("tools/call", `{"name":"wait"}`) {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-f.started
	cancel()
	<-done
	waitStateless(t, rt, 0)
}

// Tasks answered, polled and cancelled at once from many clients: every one
// ends, completed or cancelled, and the race detector sees the store's
// locking.
func TestTaskConcurrency(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	const n = 16
	ids := make([]string, n)
	for i := range ids {
		ids[i] = rt.startTask(`{"support":"optional","keys":["a","b"]}`)
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		for _, op := range []string{
			`,"inputResponses":{"a":{"action":"accept"}}`,
			`,"inputResponses":{"b":{"action":"decline"}}`,
			"get", "get", "cancel",
		} {
			if op == "cancel" && i%2 == 0 {
				continue
			}
			wg.Go(func() {
				switch op {
				case "get":
					rt.taskOp(metaTasks, "tasks/get", id, "")
				case "cancel":
					rt.taskOp(metaTasks, "tasks/cancel", id, "")
				default:
					rt.taskOp(metaTasks, "tasks/update", id, op)
				}
			})
		}
	}
	wg.Wait()
	for i, id := range ids {
		deadline := time.Now().Add(liveness)
		for {
			r := rt.taskOp(metaTasks, "tasks/get", id, "")
			st, _ := r.result()["status"].(string)
			if st == "completed" || st == "cancelled" {
				if i%2 == 0 && st != "completed" {
					t.Errorf("task %d, answered and never cancelled: %s", i, st)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %d never ended: %s", i, r.body)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitStateless(t, rt, 0)
}

// The 2025-11-25 experimental tasks, on a session: asked for with
// params.task, answered {task} at once, run in the session's turn; tasks/get,
// tasks/result (which waits), tasks/list and tasks/cancel serve them without
// the session's queue, to that session only.
func TestSessionTasks(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	init := rt.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + resumableInit + `}`)
	sid := init.header.Get("Mcp-Session-Id")
	caps, _ := init.result()["capabilities"].(map[string]any)
	if mustJSON(caps["tasks"]) != `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}` {
		t.Fatalf("initialize capabilities: %v", caps)
	}
	call := func(id int, method, params string) reply {
		t.Helper()
		return rt.call(sid, id, method, params)
	}
	r := call(2, "tools/call", `{"name":"task","arguments":{"support":"optional","wait":true},"task":{"ttl":60000}}`)
	task, _ := r.result()["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" || task["status"] != "working" || task["ttl"] != 60000.0 || task["pollInterval"] != 500.0 {
		t.Fatalf("CreateTaskResult: %s", r.body)
	}
	if got := call(3, "tasks/get", `{"taskId":"`+id+`"}`).result(); got["status"] != "working" || got["taskId"] != id {
		t.Errorf("tasks/get: %v", got)
	}
	result := async(func() reply { return call(4, "tasks/result", `{"taskId":"`+id+`"}`) })
	// The task holds the session's turn; the tasks methods do not wait for it.
	if got := call(5, "tasks/list", `{}`).result(); len(got["tasks"].([]any)) != 1 {
		t.Errorf("tasks/list: %v", got)
	}
	f.release <- struct{}{}
	r = await(t, result)
	if r.text() != "task=true" || !strings.Contains(r.body, `"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}}`) {
		t.Errorf("tasks/result: %s", r.body)
	}
	// Cancel a running one; a second cancel is refused.
	r = call(6, "tools/call", `{"name":"task","arguments":{"support":"required","wait":true},"task":{}}`)
	long, _ := r.result()["task"].(map[string]any)["taskId"].(string)
	if got := call(7, "tasks/cancel", `{"taskId":"`+long+`"}`).result(); got["status"] != "cancelled" {
		t.Errorf("tasks/cancel: %v", got)
	}
	if r := call(8, "tasks/cancel", `{"taskId":"`+long+`"}`); r.errorCode() != -32602 {
		t.Errorf("second cancel: %s", r.body)
	}
	if r := call(9, "tasks/result", `{"taskId":"`+long+`"}`); r.errorCode() != -32603 {
		t.Errorf("tasks/result of a cancelled task: %s", r.body)
	}
	for _, tc := range []struct {
		name, method, params string
		code                 int
	}{
		{"a tool that is no task", "tools/call", `{"name":"task","arguments":{},"task":{}}`, -32601},
		{"task not an object", "tools/call", `{"name":"task","arguments":{"support":"optional"},"task":5}`, -32602},
		{"task a string", "tools/call", `{"name":"task","arguments":{"support":"optional"},"task":"yes"}`, -32602},
		{"task an array", "tools/call", `{"name":"task","arguments":{"support":"optional"},"task":[]}`, -32602},
		{"unknown task", "tasks/get", `{"taskId":"nope"}`, -32602},
		{"bad cursor", "tasks/list", `{"cursor":"!"}`, -32602},
		{"tasks/update is the new era's", "tasks/update", `{"taskId":"` + id + `"}`, -32601},
	} {
		if r := call(10, tc.method, tc.params); r.errorCode() != tc.code {
			t.Errorf("%s: %s", tc.name, r.body)
		}
	}
	// A null task is no task: the call runs as one without.
	if r := call(11, "tools/call", `{"name":"task","arguments":{"support":"optional"},"task":null}`); r.text() != "task=false" {
		t.Errorf("tools/call with a null task: %s", r.body)
	}
	// Another session, or one of an older version, sees no tasks.
	other := rt.initializeWith(resumableInit)
	if r := rt.call(other, 1, "tasks/get", `{"taskId":"`+id+`"}`); r.errorCode() != -32602 {
		t.Errorf("another session's tasks/get: %s", r.body)
	}
	old := rt.initialize()
	if r := rt.call(old, 1, "tasks/list", `{}`); r.errorCode() != -32601 {
		t.Errorf("2025-06-18 tasks/list: %s", r.body)
	}
	if r := rt.call(old, 2, "tools/call", `{"name":"task","arguments":{"support":"optional"},"task":{}}`); r.text() != "task=false" {
		t.Errorf("2025-06-18 tools/call with a task: %s", r.body)
	}
}

// A 2025-11-25 task's requests to the client go on its session's GET
// channel, marked as the task's; the task is input_required until they are
// answered, then goes on to its end.
func TestSessionTaskAsks(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initializeWith(strings.Replace(resumableInit, `"elicitation":{}`, `"elicitation":{},"sampling":{}`, 1))
	get := newSSE(t, rt.openGet(context.Background(), sid))
	defer get.close()
	r := rt.call(sid, 2, "tools/call", `{"name":"task","arguments":{"support":"optional","keys":["a","b"]},"task":{}}`)
	id, _ := r.result()["task"].(map[string]any)["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call: %s", r.body)
	}
	var reqs, statuses []string
	status := func(m map[string]any) {
		if m["method"] == "notifications/tasks/status" {
			p, _ := m["params"].(map[string]any)
			if p["taskId"] != id {
				t.Errorf("status of another task: %v", m)
			}
			st, _ := p["status"].(string)
			statuses = append(statuses, st)
		}
	}
	for len(reqs) < 2 {
		m := get.nextEvent().msg()
		if status(m); m["method"] != "elicitation/create" {
			continue
		}
		meta, _ := m["params"].(map[string]any)["_meta"].(map[string]any)
		if rel, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != id {
			t.Errorf("request without its task's mark: %v", m)
		}
		rid, _ := m["id"].(string)
		reqs = append(reqs, rid)
	}
	if st := rt.call(sid, 3, "tasks/get", `{"taskId":"`+id+`"}`).result()["status"]; st != "input_required" {
		t.Errorf("status while asking: %v", st)
	}
	for i, rid := range reqs {
		if r := rt.post(`{"jsonrpc":"2.0","id":`+mustJSON(rid)+`,"result":{"action":"accept","content":{"n":`+mustJSON(i)+`}}}`, "Mcp-Session-Id: "+sid); r.status != 202 {
			t.Fatalf("answer: %d %s", r.status, r.body)
		}
	}
	r = rt.call(sid, 4, "tasks/result", `{"taskId":"`+id+`"}`)
	if !strings.Contains(r.text(), `task=true | {"action":"accept","content":{"n":0}} | {"action":"accept","content":{"n":1}}`) {
		t.Errorf("tasks/result: %s", r.body)
	}
	// Each change of status went on the GET channel too.
	for len(statuses) < 3 {
		status(get.nextEvent().msg())
	}
	if strings.Join(statuses, " ") != "input_required working completed" {
		t.Errorf("notifications/tasks/status: %v", statuses)
	}
}

// A session's tasks end with it: DELETE stops the running ones and drops
// them all from the route's store (nobody could reach them, and they would
// hold its places until their ttl).
func TestSessionTasksEndWithSession(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	for i, args := range []string{`{"support":"optional"}`, `{"support":"optional","wait":true}`} {
		if r := rt.call(sid, i+2, "tools/call", `{"name":"task","arguments":`+args+`,"task":{"ttl":86400000}}`); r.result()["task"] == nil {
			t.Fatalf("no task: %s", r.body)
		}
	}
	if r := rt.do(http.MethodDelete, "", "Mcp-Session-Id: "+sid); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d", r.status)
	}
	if c := rt.h.TaskCounts(); c != [5]int{} {
		t.Errorf("after DELETE the route keeps the session's tasks: %v", c)
	}
}

// A task over keeps its outcome, not its call: with 12 calls of 1 MiB over,
// the heap holds no 12 MiB of requests for their ttl.
func TestSessionTaskKeepsNoRequest(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	before := heapInUse()
	pad := strings.Repeat("x", 1<<20)
	for i := range 12 {
		r := rt.call(sid, i+2, "tools/call", `{"name":"task","arguments":{"support":"optional","pad":"`+pad+`"},"task":{"ttl":86400000}}`)
		if r.result()["task"] == nil {
			t.Fatalf("no task: %.200s", r.body)
		}
	}
	pad = ""
	for deadline := time.Now().Add(liveness); rt.h.TaskCounts()[2] != 12; time.Sleep(time.Millisecond) { // completed
		if time.Now().After(deadline) {
			t.Fatalf("tasks: %v, want 12 completed", rt.h.TaskCounts())
		}
	}
	if grown := heapInUse() - before; grown > 6<<20 {
		t.Errorf("12 tasks over keep %d MiB alive", grown>>20)
	}
}

// The tasks of one token subject are bounded together, however many
// sessions it opens: past the bound its calls are refused, another
// subject's are not.
func TestSessionTasksBoundPerSubject(t *testing.T) {
	rt := newRoute(t, newFakeServer(), oauthOptions())
	open := func(auth string) string {
		r := rt.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+resumableInit+`}`, auth)
		sid := r.header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: %d %s", r.status, r.body)
		}
		return sid
	}
	task := func(sid, auth string, id int) reply {
		return rt.call(sid, id, "tools/call", `{"name":"task","arguments":{"support":"optional"},"task":{}}`, auth)
	}
	alice := "Authorization: Bearer tok-alice-r"
	first, second := open(alice), open(alice)
	got := 0
	for i := range 600 {
		sid := first
		if i%2 == 1 {
			sid = second
		}
		if task(sid, alice, i+2).result()["task"] != nil {
			got++
		}
	}
	if got != 512 {
		t.Errorf("one subject got %d tasks over two sessions, want 512", got)
	}
	bob := "Authorization: Bearer tok-bob-r"
	if r := task(open(bob), bob, 2); r.result()["task"] == nil {
		t.Errorf("another subject's task: %s", r.body)
	}
}

// A ttl past a day is a day, however large (not a product that wraps).
func TestSessionTaskLongTTL(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	r := rt.call(sid, 2, "tools/call", `{"name":"task","arguments":{"support":"optional"},"task":{"ttl":18446744073710}}`)
	if task, _ := r.result()["task"].(map[string]any); task["ttl"] != 86400000.0 {
		t.Errorf("CreateTaskResult: %s", r.body)
	}
}

// When a task's call stops waiting for an answer (tasks/cancel here), the
// client is told on the GET channel, where the request went, marked as the
// task's.
func TestSessionTaskCancelTellsClient(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	get := newSSE(t, rt.openGet(context.Background(), sid))
	defer get.close()
	r := rt.call(sid, 2, "tools/call", `{"name":"task","arguments":{"support":"optional","keys":["a"]},"task":{}}`)
	id, _ := r.result()["task"].(map[string]any)["taskId"].(string)
	var rid any
	for rid == nil {
		if m := get.nextEvent().msg(); m["method"] == "elicitation/create" {
			rid = m["id"]
		}
	}
	if got := rt.call(sid, 3, "tasks/cancel", `{"taskId":"`+id+`"}`).result(); got["status"] != "cancelled" {
		t.Fatalf("tasks/cancel: %v", got)
	}
	for {
		m := get.nextEvent().msg()
		if m["method"] != "notifications/cancelled" {
			continue
		}
		p, _ := m["params"].(map[string]any)
		meta, _ := p["_meta"].(map[string]any)
		if rel, _ := meta["io.modelcontextprotocol/related-task"].(map[string]any); p["requestId"] != rid || rel["taskId"] != id {
			t.Errorf("notifications/cancelled: %v; want request %v of task %s", m, rid, id)
		}
		return
	}
}

// A task parked in input_required keeps copies of what its call reads of
// its request, not the request's body: 8 parked tasks of 2 MiB requests hold
// no 16 MiB (the padding in a params member nobody reads; a call's
// arguments, capabilities and answers are the call's to keep).
func TestTaskKeepsNoBody(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	const n, pad = 8, 2 << 20
	filler := strings.Repeat("x", pad)
	before := heapInUse()
	var ids []string
	for range n {
		r := rt.modernWith(metaTasks, "tools/call", `{"name":"task","arguments":{"support":"optional","before":"a","keys":["k"]},`+
			`"inputResponses":{"a":{"action":"accept","content":{}}},"pad":"`+filler+`"}`)
		id, _ := r.result()["taskId"].(string)
		if id == "" {
			t.Fatalf("no task: %.300s", r.body)
		}
		rt.pollTask(id, "input_required")
		ids = append(ids, id)
	}
	grew := heapInUse() - before
	for _, id := range ids {
		rt.taskOp(metaTasks, "tasks/cancel", id, "")
	}
	if grew > n*pad/4 {
		t.Errorf("%d parked tasks of %d MiB requests hold %d MiB", n, pad>>20, grew>>20)
	}
}

// TestSessionTaskIgnoresCancelledNotification: a 2025-11-25 call that became
// a task was answered (CreateTaskResult); a notifications/cancelled naming
// its request id, which MCP has clients replace by tasks/cancel for tasks,
// must not end the task (it failed it, with tasks/result "Internal error").
func TestSessionTaskIgnoresCancelledNotification(t *testing.T) {
	f := newFakeServer()
	rt := newRoute(t, f, mcp.Options{Sessions: true})
	sid := rt.initializeWith(resumableInit)
	r := rt.call(sid, 2, "tools/call", `{"name":"task","arguments":{"support":"optional","wait":true},"task":{}}`)
	task, _ := r.result()["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" {
		t.Fatalf("CreateTaskResult: %s", r.body)
	}
	if n := rt.notify(sid, "notifications/cancelled", `{"requestId":2}`); n.status != 202 {
		t.Fatalf("notifications/cancelled: %d %s", n.status, n.body)
	}
	if got := rt.call(sid, 3, "tasks/get", `{"taskId":"`+id+`"}`).result(); got["status"] != "working" {
		t.Fatalf("after notifications/cancelled the task is %v, want still working", got["status"])
	}
	f.release <- struct{}{}
	if r := rt.call(sid, 4, "tasks/result", `{"taskId":"`+id+`"}`); r.text() != "task=true" {
		t.Errorf("tasks/result: %s", r.body)
	}
}
