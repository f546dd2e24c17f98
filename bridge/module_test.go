package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// fakePushes records what the module pushes, one line per call.
type fakePushes struct {
	mu     sync.Mutex
	events []string
}

func (p *fakePushes) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, fmt.Sprintf(format, args...))
}

func (p *fakePushes) Notify(sid, method string, params json.RawMessage) {
	p.add("notify %s %s %s", sid, method, raw(params))
}
func (p *fakePushes) Broadcast(ch, method string, params json.RawMessage) {
	p.add("broadcast %s %s %s", ch, method, raw(params))
}
func (p *fakePushes) ResourceUpdated(uri string) { p.add("updated %s", uri) }
func (p *fakePushes) Log(sid, level string, data json.RawMessage) {
	p.add("log %s %s %s", sid, level, raw(data))
}

func raw(m json.RawMessage) string {
	if m == nil {
		return "<nil>"
	}
	return string(m)
}

// fakeLine records what a call sends on its stream and answers each
// request of a round with answer; keys records the requests' keys. A
// non-nil round ends the round with that error instead (the 2026-07-28
// era's input_required, after cancelling the call).
type fakeLine struct {
	events []string
	keys   []string
	answer func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	round  func(ctx context.Context, reqs []InputRequest) error
}

func (l *fakeLine) Progress(params json.RawMessage) error {
	l.events = append(l.events, "progress "+string(params))
	return nil
}

func (l *fakeLine) Log(level string, data json.RawMessage) error {
	l.events = append(l.events, "log "+level+" "+string(data))
	return nil
}

func (l *fakeLine) StartTask(ttl, poll time.Duration) bool {
	l.events = append(l.events, fmt.Sprintf("task %v %v", ttl, poll))
	return true
}

func (l *fakeLine) CloseStream() error {
	l.events = append(l.events, "close_stream")
	return nil
}

func (l *fakeLine) Ask(ctx context.Context, reqs []InputRequest) ([]InputAnswer, error) {
	out := make([]InputAnswer, len(reqs))
	for _, r := range reqs {
		l.keys = append(l.keys, r.Key)
		l.events = append(l.events, "request "+r.Method+" "+raw(r.Params))
	}
	if l.round != nil {
		if err := l.round(ctx, reqs); err != nil {
			return nil, err
		}
	}
	for i, r := range reqs {
		if l.answer == nil {
			out[i].Result = json.RawMessage(`{}`)
			continue
		}
		res, err := l.answer(ctx, r.Method, r.Params)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out[i] = InputAnswer{Result: res, Err: err}
	}
	return out, nil
}

type harness struct {
	L      *lua.LState
	c      *Codec
	m      *Module
	pushes *fakePushes
	line   *fakeLine
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	L := lua.NewState()
	t.Cleanup(L.Close)
	h := &harness{L: L, c: NewCodec(L), pushes: &fakePushes{}, line: &fakeLine{}}
	h.m = NewModule(h.c, h.pushes, nil)
	L.PreloadModule("mcp", h.m.Loader)
	return h
}

// begin starts a call and sets the global ctx.
func (h *harness) begin(info CallInfo) *lua.LTable {
	if info.Line == nil {
		info.Line = h.line
	}
	ctx := h.m.BeginCall(&info)
	h.L.SetGlobal("ctx", ctx)
	return ctx
}

// run runs chunk and returns its results as one string (tostring, joined by
// ", "), or the Lua error.
func (h *harness) run(chunk string) (string, error) {
	fn, err := h.L.LoadString("local mcp = require('mcp')\n" + chunk)
	if err != nil {
		return "", err
	}
	top := h.L.GetTop()
	h.L.Push(fn)
	if err := h.L.PCall(0, lua.MultRet, nil); err != nil {
		return "", err
	}
	var out []string
	for i := top + 1; i <= h.L.GetTop(); i++ {
		out = append(out, h.L.Get(i).String())
	}
	h.L.SetTop(top)
	return strings.Join(out, ", "), nil
}

func (h *harness) mustRun(t *testing.T, chunk string) string {
	t.Helper()
	out, err := h.run(chunk)
	if err != nil {
		t.Fatalf("run %q: %v", chunk, err)
	}
	return out
}

func (h *harness) mustFail(t *testing.T, chunk, want string) {
	t.Helper()
	_, err := h.run(chunk)
	if err == nil {
		t.Fatalf("run %q: no error, want %q", chunk, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("run %q: error %q, want it to contain %q", chunk, err, want)
	}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func TestCtxTable(t *testing.T) {
	tests := []struct {
		name string
		info CallInfo
		want string
	}{
		{"session, integer id, string token",
			CallInfo{SessionID: "s1", RequestID: json.RawMessage(`7`), ProgressToken: json.RawMessage(`"tok"`)},
			"s1, 7, number, tok, string"},
		{"stateless, string id, integer token",
			CallInfo{RequestID: json.RawMessage(`"r-1"`), ProgressToken: json.RawMessage(`42`)},
			"nil, r-1, string, 42, number"},
		{"no token",
			CallInfo{SessionID: "s", RequestID: json.RawMessage(`1`)},
			"s, 1, number, nil, nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.begin(tt.info)
			got := h.mustRun(t, `return ctx.session_id, ctx.request_id, type(ctx.request_id),
				tostring(ctx.progress_token), type(ctx.progress_token)`)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			// No hidden fields: exactly the documented keys.
			keys := h.mustRun(t, `local ks = {} for k in pairs(ctx) do ks[#ks+1] = k end
				table.sort(ks) return table.concat(ks, " ")`)
			for _, k := range strings.Fields(keys) {
				if k != "session_id" && k != "request_id" && k != "progress_token" {
					t.Errorf("unexpected ctx key %q", k)
				}
			}
		})
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name  string
		token string
		lua   string
		want  string
	}{
		{"string token", `"abc"`, `mcp.progress(ctx, 1)`, `{"progressToken":"abc","progress":1}`},
		{"integer token keeps its type", `42`, `mcp.progress(ctx, 0.5, {total = 10, message = "half"})`,
			`{"progressToken":42,"progress":0.5,"total":10,"message":"half"}`},
		{"total only", `"t"`, `mcp.progress(ctx, 3, {total = 4})`, `{"progressToken":"t","progress":3,"total":4}`},
		{"message escaped", `"t"`, `mcp.progress(ctx, 1, {message = "a \"b\"\n"})`,
			`{"progressToken":"t","progress":1,"message":"a \"b\"\n"}`},
		{"unknown option ignored", `"t"`, `mcp.progress(ctx, 2, {other = print})`, `{"progressToken":"t","progress":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.begin(CallInfo{RequestID: json.RawMessage(`1`), ProgressToken: json.RawMessage(tt.token)})
			h.mustRun(t, tt.lua)
			equal(t, "line", h.line.events, []string{"progress " + tt.want})
			var v map[string]any
			if err := json.Unmarshal([]byte(tt.want), &v); err != nil {
				t.Fatalf("params are not JSON: %v", err)
			}
		})
	}
}

func TestProgressNoOps(t *testing.T) {
	h := newHarness(t)
	// No token.
	h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
	h.mustRun(t, `mcp.progress(ctx, 1, {total = 2})`)
	// Ended call.
	ctx := h.begin(CallInfo{RequestID: json.RawMessage(`2`), ProgressToken: json.RawMessage(`"t"`)})
	h.mustRun(t, `saved = ctx; mcp.progress(ctx, 1)`)
	h.m.EndCall(ctx)
	h.mustRun(t, `mcp.progress(saved, 2)`)
	// A table that never was a ctx.
	h.mustRun(t, `mcp.progress({progress_token = "t"}, 1)`)
	equal(t, "line", h.line.events, []string{`progress {"progressToken":"t","progress":1}`})
	if len(h.m.calls) != 1 {
		t.Errorf("%d live calls, want 1", len(h.m.calls))
	}
}

// TestProgressIncreases: MCP has each progress notification's progress
// above the one before, so one that is not is not sent.
func TestProgressIncreases(t *testing.T) {
	h := newHarness(t)
	h.begin(CallInfo{RequestID: json.RawMessage(`1`), ProgressToken: json.RawMessage(`"t"`)})
	h.mustRun(t, `for _, p in ipairs({5, 3, 5, 0, 20, 20.5}) do mcp.progress(ctx, p, {total = 10}) end`)
	equal(t, "line", h.line.events, []string{
		`progress {"progressToken":"t","progress":5,"total":10}`,
		`progress {"progressToken":"t","progress":20,"total":10}`,
		`progress {"progressToken":"t","progress":20.5,"total":10}`,
	})
	// Another call starts from nothing.
	h.begin(CallInfo{RequestID: json.RawMessage(`2`), ProgressToken: json.RawMessage(`"u"`)})
	h.mustRun(t, `mcp.progress(ctx, 0)`)
	if n := len(h.line.events); n != 4 || h.line.events[3] != `progress {"progressToken":"u","progress":0}` {
		t.Errorf("events %q, want the second call's progress 0 last", h.line.events)
	}
}

func TestProgressErrors(t *testing.T) {
	for _, live := range []bool{true, false} {
		t.Run(fmt.Sprint("live=", live), func(t *testing.T) {
			h := newHarness(t)
			ctx := h.begin(CallInfo{RequestID: json.RawMessage(`1`), ProgressToken: json.RawMessage(`"t"`)})
			if !live {
				h.m.EndCall(ctx)
			}
			// Bad arguments raise whether or not anything would be sent.
			h.mustFail(t, `mcp.progress(ctx, 1, {message = "bad\255"})`, "mcp.progress: message: string is not valid UTF-8")
			h.mustFail(t, `mcp.progress(ctx, 1, {message = {}})`, "message must be a string, got table")
			h.mustFail(t, `mcp.progress(ctx, 1, {total = "x"})`, "total must be a number, got string")
			h.mustFail(t, `mcp.progress(ctx, 0/0)`, "mcp.progress: progress: cannot encode NaN")
			h.mustFail(t, `mcp.progress(ctx, 1, {total = 1/0})`, "mcp.progress: total: cannot encode inf")
			h.mustFail(t, `mcp.progress(ctx, "x")`, "number expected")
			h.mustFail(t, `mcp.progress(nil, 1)`, "table expected, got nil")
			equal(t, "line", h.line.events, nil)
		})
	}
}

func TestPushes(t *testing.T) {
	h := newHarness(t)
	h.mustRun(t, `
		mcp.notify("s1", "notifications/tools/list_changed")
		mcp.notify("s1", "notifications/custom", {a = 1, list = mcp.array()})
		mcp.notify(nil, "notifications/dropped", {})
		mcp.broadcast("news", "notifications/resources/list_changed", {})
		mcp.broadcast("news", "notifications/x", {b = mcp.null})
		mcp.resource_updated("mem://a")
		mcp.log("s2", "warning", {n = 1})
		mcp.log("s2", "debug", "text")
		mcp.log("s2", "emergency")
		mcp.log(nil, "info", "stateless: nowhere to go")`)
	equal(t, "pushes", h.pushes.events, []string{
		`notify s1 notifications/tools/list_changed <nil>`,
		`notify s1 notifications/custom {"a":1,"list":[]}`,
		`broadcast news notifications/resources/list_changed {}`,
		`broadcast news notifications/x {"b":null}`,
		`updated mem://a`,
		`log s2 warning {"n":1}`,
		`log s2 debug "text"`,
		`log s2 emergency null`,
	})
}

func TestPushReturns(t *testing.T) {
	h := newHarness(t)
	for _, chunk := range []string{
		`return mcp.notify("s1", "notifications/m", {a = 1})`,
		`return mcp.notify(nil, "notifications/m")`,
		`return mcp.broadcast("c", "notifications/m")`,
		`return mcp.resource_updated("mem://a")`,
		`return mcp.log("s1", "info", "x")`,
		`return mcp.log(nil, "info", "x")`,
	} {
		if got := h.mustRun(t, chunk); got != "true" {
			t.Errorf("%s: got %q, want true", chunk, got)
		}
	}
}

// A push whose params cannot be encoded, or whose method is not a
// notification, is logged and dropped: the caller goes on, told why, and
// nothing reaches the Hub (so no event id is used).
func TestPushUnencodableDropped(t *testing.T) {
	tests := []struct{ chunk, want string }{
		{`return mcp.notify("s", "notifications/m", {x = function() end})`, "false, mcp.notify: params.x: cannot encode a function"},
		{`return mcp.broadcast("c", "notifications/m", {list = {1, nil, 3}})`, "false, mcp.broadcast: params.list[2]: nil inside an array (use mcp.null for a JSON null)"},
		// MCP's params are an object: a list (sent "params":[1,2] before) is refused.
		{`return mcp.notify("s", "notifications/tools/list_changed", {1, 2})`, "false, mcp.notify: params: want an object (a table with string keys), got a list"},
		{`return mcp.broadcast("c", "notifications/m", mcp.array())`, "false, mcp.broadcast: params: want an object (a table with string keys), got a table marked as the other kind"},
		// A push only notifies: a request method (or any other) is refused.
		{`return mcp.notify("s", "sampling/createMessage", {})`, `false, mcp.notify: method "sampling/createMessage" is not a notification (want "notifications/...")`},
		{`return mcp.notify(nil, "ping")`, `false, mcp.notify: method "ping" is not a notification (want "notifications/...")`},
		{`return mcp.broadcast("c", "elicitation/create")`, `false, mcp.broadcast: method "elicitation/create" is not a notification (want "notifications/...")`},
		{`return mcp.broadcast("c", "notifications")`, `false, mcp.broadcast: method "notifications" is not a notification (want "notifications/...")`},
		{`return mcp.log("s", "info", {f = print})`, "false, mcp.log: data.f: cannot encode a function"},
		{`return mcp.log(nil, "info", {f = print})`, "false, mcp.log: data.f: cannot encode a function"},
	}
	for _, tt := range tests {
		checkDropped(t, tt.chunk, tt.want)
	}
}

// TestPushNotificationParams: a push of a notification MCP defines needs the
// params its schema requires (notificationNeeds); without them it is logged
// and dropped, and the push returns false and why. Other methods, and what
// the schema allows besides, pass.
func TestPushNotificationParams(t *testing.T) {
	tests := []struct{ chunk, want string }{
		{`return mcp.notify("s", "notifications/message", {data = "x"})`, "false, mcp.notify: params: notifications/message needs level"},
		{`return mcp.broadcast("c", "notifications/message", {level = "info"})`, "false, mcp.broadcast: params: notifications/message needs data"},
		{`return mcp.notify("s", "notifications/message", {level = "loud", data = 1})`,
			"false, mcp.notify: params.level: want a log level (debug, info, notice, warning, error, critical, alert, emergency), got the string \"loud\""},
		{`return mcp.notify("s", "notifications/message")`, "false, mcp.notify: params: notifications/message needs params with level"},
		{`return mcp.broadcast("c", "notifications/resources/updated", {})`, "false, mcp.broadcast: params: notifications/resources/updated needs uri"},
		{`return mcp.broadcast("c", "notifications/resources/updated", {uri = 7})`, "false, mcp.broadcast: params.uri: want a string, got the number 7"},
		{`return mcp.notify("s", "notifications/progress", {progressToken = "t"})`, "false, mcp.notify: params: notifications/progress needs progress"},
		{`return mcp.notify("s", "notifications/progress", {progressToken = 1.5, progress = 1})`,
			"false, mcp.notify: params.progressToken: want a string or an integer, got the number 1.5"},
		{`return mcp.notify("s", "notifications/elicitation/complete", {})`, "false, mcp.notify: params: notifications/elicitation/complete needs elicitationId"},
		{`return mcp.notify("s", "notifications/tasks/status", {taskId = "t", status = "working"})`, "false, mcp.notify: params: notifications/tasks/status needs createdAt"},
	}
	for _, tt := range tests {
		checkDropped(t, tt.chunk, tt.want)
	}
	for _, chunk := range []string{
		`return mcp.notify("s", "notifications/message", {level = "info", data = mcp.null, logger = "x", _meta = {}})`,
		`return mcp.broadcast("c", "notifications/resources/updated", {uri = "r://x", extra = 1})`,
		`return mcp.notify("s", "notifications/progress", {progressToken = 3, progress = 0.5, total = 1})`,
		`return mcp.notify("s", "notifications/tasks/status", {taskId = "t", status = "working", createdAt = "a", lastUpdatedAt = "b", ttl = mcp.null})`,
		`return mcp.broadcast("c", "notifications/tools/list_changed")`,
		`return mcp.notify("s", "notifications/cancelled", {})`,
		`return mcp.notify("s", "notifications/my/own", {})`,
	} {
		h := newHarness(t)
		if got := h.mustRun(t, chunk); got != "true" {
			t.Errorf("%s: got %q, want true", chunk, got)
		}
		if len(h.pushes.events) != 1 {
			t.Errorf("%s: pushes %v, want one", chunk, h.pushes.events)
		}
	}
}

func TestPushErrors(t *testing.T) {
	h := newHarness(t)
	h.mustFail(t, `mcp.notify("s", "m", "text")`, "params must be a table or nil, got string")
	h.mustFail(t, `mcp.notify("s")`, "string expected, got no value")
	h.mustFail(t, `mcp.resource_updated()`, "string expected, got no value")
	h.mustFail(t, `mcp.log("s", "verbose", "x")`, `invalid log level "verbose"`)
	h.mustFail(t, `mcp.log(42, "info", "x")`, "session id or ctx expected, got number")
	equal(t, "pushes", h.pushes.events, nil)
}

func TestLogWithCtx(t *testing.T) {
	h := newHarness(t)
	ctx := h.begin(CallInfo{SessionID: "s1", RequestID: json.RawMessage(`1`)})
	h.mustRun(t, `mcp.log(ctx, "info", {msg = "working"}); saved = ctx`)
	// Part of the call, like progress: data that cannot be encoded fails it.
	h.mustFail(t, `mcp.log(ctx, "info", {f = print})`, "mcp.log: data.f: cannot encode a function")
	h.m.EndCall(ctx)
	h.mustRun(t, `mcp.log(saved, "error", "late")`)
	h.mustFail(t, `mcp.log(saved, "loud", "x")`, `invalid log level "loud"`)
	equal(t, "line", h.line.events, []string{`log info {"msg":"working"}`})
	equal(t, "pushes", h.pushes.events, nil)
}

func TestLogLevels(t *testing.T) {
	h := newHarness(t)
	for _, level := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		h.mustRun(t, `mcp.log("s", "`+level+`", 1)`)
	}
	for _, level := range []string{"", "INFO", "warn", "fatal", "trace"} {
		h.mustFail(t, `mcp.log("s", "`+level+`", 1)`, "invalid log level")
	}
	if len(h.pushes.events) != 8 {
		t.Errorf("%d logs pushed, want 8", len(h.pushes.events))
	}
}

func TestNilPushes(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	m := NewModule(NewCodec(L), nil, nil)
	L.PreloadModule("mcp", m.Loader)
	if err := L.DoString(`local mcp = require("mcp")
		mcp.notify("s", "notifications/m", {}) mcp.broadcast("c", "notifications/m") mcp.resource_updated("u") mcp.log("s", "info", 1)`); err != nil {
		t.Fatal(err)
	}
}

func TestSleep(t *testing.T) {
	t.Run("completes", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.L.SetContext(ctx)
		start := time.Now()
		h.mustRun(t, `mcp.sleep(20) mcp.sleep(0) mcp.sleep(-5)`)
		if d := time.Since(start); d < 20*time.Millisecond {
			t.Errorf("slept %v, want at least 20ms", d)
		}
	})
	t.Run("no context", func(t *testing.T) {
		h := newHarness(t)
		h.mustRun(t, `mcp.sleep(1)`)
	})
	t.Run("interrupted by cancel", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		h.L.SetContext(ctx)
		timer := time.AfterFunc(20*time.Millisecond, cancel)
		defer timer.Stop()
		done := make(chan error, 1)
		go func() {
			// pcall cannot keep the script going: it stops at the next instruction.
			_, err := h.run(`local ok, e = pcall(mcp.sleep, 600000); reached = true; return e`)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second): // liveness bound only
			t.Fatal("mcp.sleep not interrupted 5s after the cancel")
		}
		if err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Fatalf("error %v, want context canceled", err)
		}
		if h.L.GetGlobal("reached") != lua.LNil {
			t.Error("script went on after the cancel")
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		h.L.SetContext(ctx)
		// Test the function itself, not the VM's own context check.
		h.L.Push(h.m.Table().RawGetString("sleep"))
		h.L.Push(lua.LNumber(600000))
		err := h.L.PCall(1, 0, nil)
		if err == nil || !strings.Contains(err.Error(), "mcp.sleep: context canceled") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		h.L.SetContext(ctx)
		h.L.Push(h.m.Table().RawGetString("sleep"))
		h.L.Push(lua.LNumber(1e300))
		err := h.L.PCall(1, 0, nil)
		if err == nil || !strings.Contains(err.Error(), "mcp.sleep: context deadline exceeded") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("bad argument", func(t *testing.T) {
		h := newHarness(t)
		h.mustFail(t, `mcp.sleep("x")`, "number expected")
		h.mustFail(t, `mcp.sleep(0/0)`, "got NaN")
	})
}

func TestElicit(t *testing.T) {
	h := newHarness(t)
	h.line.answer = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"name":"Ada","age":36}}`), nil
	}
	h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
	got := h.mustRun(t, `
		local r = assert(mcp.elicit(ctx, {
			message = "Who?",
			requested_schema = {type = "object", properties = {first_name = {type = "string"}}},
		}))
		return r.action, r.content.name, r.content.age`)
	if got != "accept, Ada, 36" {
		t.Errorf("got %q", got)
	}
	equal(t, "line", h.line.events, []string{
		`request elicitation/create {"message":"Who?","requestedSchema":{"properties":{"first_name":{"type":"string"}},"type":"object"}}`,
	})
}

func TestSampleAndRoots(t *testing.T) {
	h := newHarness(t)
	h.line.answer = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if method == "roots/list" {
			return json.RawMessage(`{"roots":[{"uri":"file:///tmp","name":"tmp"}]}`), nil
		}
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`), nil
	}
	h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
	got := h.mustRun(t, `
		local r = assert(mcp.sample(ctx, {
			messages = {{role = "user", content = {type = "text", text = "hello"}}},
			max_tokens = 100, system_prompt = "be brief", temperature = 0.5,
			model_preferences = {hints = {{name = "claude"}}, speed_priority = 1},
			stop_sequences = {"END"}, include_context = "none", tool_choice = {mode = "auto"},
			metadata = {trace_id = "x"},
		}))
		local roots = assert(mcp.list_roots(ctx))
		return r.content.text, roots.roots[1].uri, #roots.roots`)
	if got != "hi, file:///tmp, 1" {
		t.Errorf("got %q", got)
	}
	equal(t, "line", h.line.events, []string{
		`request sampling/createMessage {"includeContext":"none","maxTokens":100,"messages":[{"content":{"text":"hello","type":"text"},"role":"user"}],` +
			`"metadata":{"trace_id":"x"},"modelPreferences":{"hints":[{"name":"claude"}],"speedPriority":1},"stopSequences":["END"],` +
			`"systemPrompt":"be brief","temperature":0.5,"toolChoice":{"mode":"auto"}}`,
		`request roots/list {}`,
	})
}

func TestRequestFailuresInBand(t *testing.T) {
	tests := []struct {
		name   string
		answer func(context.Context, string, json.RawMessage) (json.RawMessage, error)
		want   string
	}{
		{"client error", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("client does not support elicitation")
		}, "nil, elicitation/create: client does not support elicitation"},
		{"undecodable answer", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"action":`), nil
		}, "nil, elicitation/create: undecodable answer from the client: invalid JSON at byte 10: unexpected end of input, expecting a value"},
		{"timeout of the request alone", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("no answer: %w", context.DeadlineExceeded)
		}, "nil, elicitation/create: no answer: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.line.answer = tt.answer
			h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
			if got := h.mustRun(t, `return mcp.elicit(ctx, {message = "m", requested_schema = {}})`); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("stale ctx", func(t *testing.T) {
		h := newHarness(t)
		ctx := h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
		h.m.EndCall(ctx)
		if got := h.mustRun(t, `return mcp.list_roots(ctx)`); got != "nil, roots/list: ctx is not a running call" {
			t.Errorf("got %q", got)
		}
		equal(t, "line", h.line.events, nil)
	})
}

func TestRequestRaises(t *testing.T) {
	t.Run("cancelled call", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		h.L.SetContext(ctx)
		h.line.answer = func(c context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			if c != ctx {
				t.Error("Request did not get the state's context")
			}
			cancel()
			<-c.Done()
			return nil, c.Err()
		}
		h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
		_, err := h.run(`local ok, e = pcall(mcp.elicit, ctx, {message = "m"}); reached = true`)
		if err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Fatalf("error %v, want a raise", err)
		}
		if h.L.GetGlobal("reached") != lua.LNil {
			t.Error("script went on after the cancel")
		}
	})
	t.Run("bad params", func(t *testing.T) {
		h := newHarness(t)
		h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
		h.mustFail(t, `mcp.elicit(ctx, {message = "m", requested_schema = {f = print}})`,
			"elicitation/create: params.requestedSchema.f: cannot encode a function")
		h.mustFail(t, `mcp.elicit(ctx, {requested_schema = {}, requestedSchema = {}})`,
			"params: both requested_schema and requestedSchema are set")
		h.mustFail(t, `mcp.sample(ctx)`, "table expected, got no value")
		h.mustFail(t, `mcp.elicit("ctx", {})`, "table expected, got string")
		equal(t, "line", h.line.events, nil)
	})
}

func TestJSONFunctions(t *testing.T) {
	h := newHarness(t)
	got := h.mustRun(t, `
		local v = mcp.json_decode('{"a":[1,null,{"b":[]}],"s":"x"}')
		assert(v.a[2] == mcp.null)
		return mcp.json_encode(v), mcp.json_encode(), mcp.json_encode("a\0b")`)
	if got != `{"a":[1,null,{"b":[]}],"s":"x"}, null, "a\u0000b"` {
		t.Errorf("got %s", got)
	}
	h.mustFail(t, `mcp.json_decode("{")`, "mcp.json_decode: invalid JSON at byte 1")
	h.mustFail(t, `mcp.json_decode()`, "string expected, got no value")
	h.mustFail(t, `mcp.json_encode({f = print})`, "mcp.json_encode: value.f: cannot encode a function")
	if got := h.mustRun(t, `return pcall(mcp.json_decode, "[1,")`); !strings.HasPrefix(got, "false, ") {
		t.Errorf("pcall(json_decode) = %s", got)
	}
}

func TestModuleTable(t *testing.T) {
	h := newHarness(t)
	got := h.mustRun(t, `
		local names = {}
		for k in pairs(mcp) do names[#names + 1] = k end
		table.sort(names)
		assert(require("mcp") == mcp)
		return table.concat(names, " "), tostring(mcp.null), type(mcp.null)`)
	want := "array ask broadcast close_stream elicit json_decode json_encode list_roots log notify null object progress resource_updated sample sleep task, null, userdata"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if h.m.Table().RawGetString("null") != lua.LValue(h.c.Null()) {
		t.Error("mcp.null is not the codec's null")
	}
}

// A coroutine gets the calling state's context, and the module works inside it.
func TestModuleInCoroutine(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.L.SetContext(ctx)
	h.begin(CallInfo{RequestID: json.RawMessage(`1`), ProgressToken: json.RawMessage(`1`)})
	got := h.mustRun(t, `
		local co = coroutine.wrap(function()
			mcp.sleep(1)
			mcp.progress(ctx, 1)
			return mcp.json_encode(mcp.array())
		end)
		return co()`)
	if got != "[]" {
		t.Errorf("got %q", got)
	}
	equal(t, "line", h.line.events, []string{`progress {"progressToken":1,"progress":1}`})
}

func TestCloseStream(t *testing.T) {
	h := newHarness(t)
	ctx := h.begin(CallInfo{RequestID: json.RawMessage(`1`), Line: h.line})
	h.mustRun(t, `mcp.close_stream(ctx)`)
	equal(t, "line", h.line.events, []string{"close_stream"})
	h.m.EndCall(ctx)
	h.mustRun(t, `mcp.close_stream(ctx)`)
	equal(t, "line after EndCall", h.line.events, []string{"close_stream"})
}

func TestTask(t *testing.T) {
	h := newHarness(t)
	ctx := h.begin(CallInfo{RequestID: json.RawMessage(`1`), Line: h.line})
	if got := h.mustRun(t, `return mcp.task(ctx), mcp.task(ctx, { ttl_ms = 60000, poll_ms = 250 })`); got != "true, true" {
		t.Errorf("mcp.task returned %q", got)
	}
	equal(t, "line", h.line.events, []string{"task 0s 0s", "task 1m0s 250ms"})
	for _, tc := range []struct{ chunk, err string }{
		{`mcp.task(ctx, { ttl = 5 })`, `unknown option "ttl"`},
		{`mcp.task(ctx, { ttl_ms = -1 })`, "ttl_ms must be a positive whole number"},
		{`mcp.task(ctx, { poll_ms = 1.5 })`, "poll_ms must be a positive whole number"},
		{`mcp.task(ctx, { ttl_ms = "60" })`, "ttl_ms must be a positive whole number"},
		{`mcp.task({})`, ""}, // not a running call's ctx: false
	} {
		out, err := h.run(tc.chunk + ` return "ran"`)
		switch {
		case tc.err == "" && (err != nil || out != "ran"):
			t.Errorf("%s: %q, %v", tc.chunk, out, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.chunk, err, tc.err)
		}
	}
	h.m.EndCall(ctx)
	if got := h.mustRun(t, `return mcp.task(ctx)`); got != "false" {
		t.Errorf("mcp.task after EndCall = %q", got)
	}
}

// checkDropped runs chunk, a push, and checks that it returned want (false
// and why), was logged as dropped and pushed nothing.
func checkDropped(t *testing.T, chunk, want string) {
	t.Helper()
	h := newHarness(t)
	var logs strings.Builder
	h.m.logger = slog.New(slog.NewTextHandler(&logs, nil))
	if got := h.mustRun(t, chunk); got != want {
		t.Errorf("%s: got %q, want %q", chunk, got, want)
	}
	if !strings.Contains(logs.String(), "push dropped") {
		t.Errorf("%s: no log line; log: %s", chunk, logs.String())
	}
	equal(t, "pushes", h.pushes.events, nil)
}
