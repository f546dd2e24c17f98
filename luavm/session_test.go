package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

func TestToolOutcomes(t *testing.T) {
	s, logs := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	tests := []struct {
		name, args string
		want       string // the encoded CallToolResult; "" when a crash is expected
		crash      string // part of the crash message
	}{
		{"echo", `{"text":"hi \"there\""}`, `{"content":[{"type":"text","text":"hi \"there\""}],"isError":false}`, ""},
		{"number", `{}`, `{"content":[{"type":"text","text":"42"}],"isError":false}`, ""},
		{"nothing", `{}`, `{"content":[],"isError":false}`, ""},
		{"structured", `{}`, `{"content":[{"type":"text","text":"20 degrees"}],"structuredContent":{"temp":20},"_meta":{"source":"test"},"isError":false}`, ""},
		{"crash", `{}`, "", "boom"},
		{"fail", `{}`, `{"content":[{"type":"text","text":"failed at 1"}],"isError":true}`, ""},
		{"fail_structured", `{}`, `{"content":[{"type":"text","text":"too hot"}],"structuredContent":{"temp":99},"isError":true}`, ""},
		{"fail_table", `{}`, `{"content":[{"type":"text","text":"bad input"}],"isError":true}`, ""},
		{"greet", `{"name":"bob"}`, `{"content":[{"type":"text","text":"hello, bob"}],"isError":false}`, ""},
		{"bad_result", `{}`, "", "result: want a string or a table with content, got a boolean"},
		{"no_content", `{}`, "", "result: a table result needs content"},
		{"unencodable", `{}`, "", "result.content[1].text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, ss, tt.name, tt.args)
			if !checkOutcome(t, got, err, tt.want, tt.crash) {
				return
			}
			if !strings.HasSuffix(got, `"isError":false}`) && !strings.HasSuffix(got, `"isError":true}`) {
				t.Errorf("isError is not last: %s", got)
			}
		})
	}
	// Crashes are logged with the callback, position and traceback.
	l := logs.String()
	contains(t, l, "callback=handle_tool")
	contains(t, l, at(t, "full.lua", `error("boom")`)+" boom")
	contains(t, l, "stack traceback")

	if _, err := call(t, ss, "nope", `{}`); !errors.Is(err, mcp.ErrUnknownTool("nope")) && err.Error() != "Unknown tool: nope" {
		t.Errorf("unknown tool: %v", err)
	}
	var merr *mcp.Error
	if _, err := call(t, ss, "nope", `{}`); !errors.As(err, &merr) || merr.Code != mcp.CodeInvalidParams {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestCallContextTable(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid-7")
	c := &mcp.Call{SessionID: "sid-7", RequestID: json.RawMessage(`7`), ProgressToken: json.RawMessage(`"tok"`), Out: out{}}
	res, err := ss.CallTool(context.Background(), c, "ctx", nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, text(t, string(res)), `{"session_id":"sid-7","request_id":7,"progress_token":"tok"}`)
	res, err = ss.CallTool(context.Background(), &mcp.Call{RequestID: json.RawMessage(`"r"`), Out: out{}}, "ctx", nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, text(t, string(res)), `{"session_id":null,"request_id":"r","progress_token":null}`)
}

const initialState = `{"count":0,"nested":{"items":[1,2]},"session":"sid"}`

func state(t testing.TB, ss mcp.Session) string {
	t.Helper()
	return text(t, mustCall(t, ss, "get", `{}`))
}

func TestStateThreading(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	for i, want := range []string{"1", "2", "3"} {
		if got := text(t, mustCall(t, ss, "inc", `{}`)); got != want {
			t.Fatalf("inc #%d = %s, want %s", i+1, got, want)
		}
	}
	// An in-band error keeps what the callback did.
	if got := text(t, mustCall(t, ss, "fail", `{}`)); got != "failed at 4" {
		t.Errorf("fail = %s", got)
	}
	jsonEqual(t, state(t, ss), `{"count":4,"nested":{"items":[1,2]},"session":"sid"}`)
	// A returned state replaces the table.
	mustCall(t, ss, "set", `{"n":10}`)
	jsonEqual(t, state(t, ss), `{"count":10,"nested":{"items":{}}}`)
	if got := text(t, mustCall(t, ss, "inc", `{"n":5}`)); got != "15" {
		t.Errorf("inc after set = %s", got)
	}
	// `nil, err, state` replaces it too.
	mustCall(t, ss, "fail_table", `{}`)
	jsonEqual(t, state(t, ss), `{"count":-1,"nested":{}}`)
}

func TestCrashRollsBack(t *testing.T) {
	s, _ := load(t, "full.lua", func(c *Config) { c.CallTimeout = 100 * time.Millisecond })
	ss, _ := open(t, s, "sid")
	mustCall(t, ss, "inc", `{}`)
	const before = `{"count":1,"nested":{"items":[1,2]},"session":"sid"}`
	for _, tool := range []string{"crash", "unencodable", "bad_result", "loop"} {
		t.Run(tool, func(t *testing.T) {
			if _, err := call(t, ss, tool, `{}`); !isCrash(err) {
				t.Fatalf("want a crash, got %v", err)
			}
			jsonEqual(t, state(t, ss), before)
		})
	}
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := ss.CallTool(ctx, testCall("sid"), "loop", nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("want an error wrapping DeadlineExceeded, got %v", err)
		}
		jsonEqual(t, state(t, ss), before)
	})
	// The rolled-back state is usable.
	if got := text(t, mustCall(t, ss, "inc", `{}`)); got != "2" {
		t.Errorf("inc after rollbacks = %s", got)
	}
}

// Config.CallTimeout bounds the callbacks of a route that sets no call_timeout_ms.
func TestCallTimeoutDefault(t *testing.T) {
	s, logs := load(t, "full.lua", func(c *Config) { c.CallTimeout = 50 * time.Millisecond })
	ss, _ := open(t, s, "sid")
	_, err := call(t, ss, "loop", `{}`)
	if !isCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	contains(t, err.Error(), "call timeout: still running after 50ms")
	contains(t, err.Error(), "full.lua:")
	contains(t, logs.String(), "call timeout")
	if _, err := call(t, ss, "sleep", `{"ms":60000}`); !isCrash(err) {
		t.Errorf("sleep past the call timeout: %v", err)
	}
}

func TestLists(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	ctx := context.Background()

	tools, err := ss.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tools[0].Key != "echo" || tools[1].Key != "inc" {
		t.Errorf("keys %q %q", tools[0].Key, tools[1].Key)
	}
	jsonEqual(t, string(tools[0].JSON), `{"name":"echo","description":"Echo text",
		"inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},
		"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"snake_case":"kept"}}`)

	resources, err := ss.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(resources) != 5 || resources[0].Key != "mem://readme" {
		t.Fatalf("resources %v", resources)
	}
	jsonEqual(t, string(resources[0].JSON), `{"uri":"mem://readme","name":"readme","mimeType":"text/markdown"}`)

	templates, err := ss.ResourceTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(templates) != 1 || templates[0].Key != "mem://user/{id}" {
		t.Fatalf("templates %v", templates)
	}
	jsonEqual(t, string(templates[0].JSON), `{"uriTemplate":"mem://user/{id}","name":"user","mimeType":"application/json"}`)

	prompts, err := ss.Prompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 3 || prompts[0].Key != "greet" {
		t.Fatalf("prompts %v", prompts)
	}
	jsonEqual(t, string(prompts[0].JSON), `{"name":"greet","description":"Greets","arguments":[{"name":"who","required":true}]}`)

	// A module without resource_templates has none.
	st, _ := load(t, "stateless.lua", nil)
	sl, _ := open(t, st, "")
	if templates, err := sl.ResourceTemplates(ctx); err != nil || templates == nil || len(templates) != 0 {
		t.Errorf("templates of a module without them: %v, %v", templates, err)
	}
}

func TestReadResource(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	tests := []struct {
		uri   string
		want  string
		code  int // JSON-RPC error code, 0 for none
		msg   string
		crash bool
	}{
		{uri: "mem://readme", want: `{"contents":[{"uri":"mem://readme","text":"# Readme","mimeType":"text/markdown"}]}`},
		{uri: "mem://table", want: `{"contents":[{"uri":"mem://table","text":"t","mimeType":"text/plain"}]}`},
		{uri: "mem://user/42", want: `{"contents":[{"uri":"mem://user/42","text":"{\"id\":\"42\"}","mimeType":"application/json"}]}`},
		{uri: "mem://missing", code: mcp.CodeResourceNotFound, msg: "gone away"},
		{uri: "mem://nowhere", code: mcp.CodeResourceNotFound, msg: "Resource not found: mem://nowhere"},
		{uri: "mem://nil", code: mcp.CodeResourceNotFound, msg: "Resource not found: mem://nil"},
		{uri: "mem://broken", crash: true},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			got, err := ss.ReadResource(context.Background(), testCall("sid"), tt.uri)
			var merr *mcp.Error
			switch {
			case tt.crash:
				if !isCrash(err) {
					t.Fatalf("want a crash, got %s, %v", got, err)
				}
			case tt.code != 0:
				if !errors.As(err, &merr) || merr.Code != tt.code || merr.Message != tt.msg {
					t.Fatalf("want %d %q, got %v", tt.code, tt.msg, err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, string(got), tt.want)
			}
		})
	}
	// Reads that replied or failed in-band counted; the crash and the
	// unlisted uri did not.
	var st struct{ Reads int }
	if err := json.Unmarshal([]byte(state(t, ss)), &st); err != nil || st.Reads != 5 {
		t.Errorf("reads = %d (%v)", st.Reads, err)
	}
}

func TestGetPrompt(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	ctx := context.Background()
	got, err := ss.GetPrompt(ctx, testCall("sid"), "greet", json.RawMessage(`{"who":"ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, string(got), `{"description":"A greeting","messages":[{"role":"user","content":{"type":"text","text":"hello, ann"}}]}`)

	var merr *mcp.Error
	if _, err := ss.GetPrompt(ctx, testCall("sid"), "refuse", nil); !errors.As(err, &merr) ||
		merr.Code != mcp.CodeInvalidParams || merr.Message != "who is required" {
		t.Errorf("refuse: %v", err)
	}
	for _, name := range []string{"nope", "silent"} {
		if _, err := ss.GetPrompt(ctx, testCall("sid"), name, nil); !errors.As(err, &merr) ||
			merr.Code != mcp.CodeInvalidParams || merr.Message != "Unknown prompt: "+name {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A required argument missing is the spec's -32602, before get_prompt
	// runs (which would greet "nil").
	for _, args := range []string{``, `{}`, `{"whom":"ann"}`} {
		if _, err := ss.GetPrompt(ctx, testCall("sid"), "greet", json.RawMessage(args)); !errors.As(err, &merr) ||
			merr.Code != mcp.CodeInvalidParams || merr.Message != `Invalid params: missing required argument "who" of prompt "greet"` {
			t.Errorf("greet(%s): %v", args, err)
		}
	}
}

func TestComplete(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	ctx := context.Background()
	ref := json.RawMessage(`{"type":"ref/prompt","name":"greet"}`)
	got, err := ss.Complete(ctx, ref, json.RawMessage(`{"name":"who","value":"al"}`), json.RawMessage(`{"arguments":{}}`))
	if err != nil || !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("complete = %v, %v", got, err)
	}
	got, err = ss.Complete(ctx, ref, json.RawMessage(`{"name":"who","value":""}`), nil)
	if err != nil || !slices.Equal(got, []string{"alpha", "beta", "gamma"}) {
		t.Errorf("complete = %v, %v", got, err)
	}
	if _, err := ss.Complete(ctx, ref, json.RawMessage(`{"name":"who","value":"crash"}`), nil); !isCrash(err) {
		t.Errorf("a list of numbers: %v", err)
	}
	// A module without complete crashes the call.
	st, _ := load(t, "stateless.lua", nil)
	sl, _ := open(t, st, "")
	if _, err := sl.Complete(ctx, ref, json.RawMessage(`{"name":"x","value":""}`), nil); !isCrash(err) {
		t.Errorf("complete without the callback: %v", err)
	}
}

func TestChannelsAndTerminate(t *testing.T) {
	s, logs := load(t, "full.lua", nil)
	ss, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid-9")
	if err != nil {
		t.Fatal(err)
	}
	chans, err := ss.Channels(context.Background())
	if err != nil || !slices.Equal(chans, []string{"news", "session:sid-9"}) {
		t.Errorf("channels = %v, %v", chans, err)
	}
	mustCall(t, ss, "inc", `{}`)
	ss.Close("shutdown")
	ss.Close("shutdown") // idempotent
	contains(t, logs.String(), `text="terminate\tshutdown\t1"`)
	if _, err := call(t, ss, "inc", `{}`); !errors.Is(err, errClosed) {
		t.Errorf("call after Close: %v", err)
	}

	// Close("") releases without terminate.
	ss2, _, err := s.Init(context.Background(), json.RawMessage(initParams), "sid-10")
	if err != nil {
		t.Fatal(err)
	}
	ss2.Close("")
	if n := strings.Count(logs.String(), "terminate"); n != 1 {
		t.Errorf("terminate ran %d times", n)
	}
}

func TestSnapshot(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	mustCall(t, ss, "inc", `{}`)
	snap, err := ss.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close("")
	if got := text(t, mustCall(t, snap, "inc", `{}`)); got != "2" {
		t.Errorf("inc on the snapshot = %s", got)
	}
	if _, err := call(t, snap, "crash", `{}`); !isCrash(err) { // a snapshot's own business
		t.Errorf("crash on the snapshot: %v", err)
	}
	jsonEqual(t, state(t, ss), `{"count":1,"nested":{"items":[1,2]},"session":"sid"}`)
	if got := text(t, mustCall(t, ss, "inc", `{}`)); got != "2" {
		t.Errorf("inc on the session = %s", got)
	}
}

// A snapshot taken while a call changes the state in place copies the state
// as it was before the call.
func TestSnapshotDuringCall(t *testing.T) {
	p := newPushes()
	s, _ := load(t, "full.lua", func(c *Config) { c.Pushes = everywhere(p) })
	ss, _ := open(t, s, "sid")
	mustCall(t, ss, "inc", `{}`)

	done := make(chan error, 1)
	go func() {
		_, err := call(t, ss, "mutate_sleep", `{"ms":200}`)
		done <- err
	}()
	select {
	case <-p.notified:
	case <-time.After(10 * time.Second):
		t.Fatal("mutate_sleep did not start")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap, err := ss.Snapshot(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			defer snap.Close("")
			jsonEqual(t, state(t, snap), `{"count":1,"nested":{"items":[1,2]},"session":"sid"}`)
		}()
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, state(t, ss), `{"count":1000,"nested":{"items":["mutated",2]},"session":"sid"}`)
}

// Snapshots race calls on the same session: the race detector checks the
// sharing.
func TestSnapshotRace(t *testing.T) {
	s, _ := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap, err := ss.Snapshot(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			snap.Close("")
		}
	}()
	for range 50 {
		mustCall(t, ss, "inc", `{}`)
		call(t, ss, "crash", `{}`)
	}
	close(stop)
	wg.Wait()
	if got := text(t, mustCall(t, ss, "inc", `{}`)); got != "51" {
		t.Errorf("count = %s", got)
	}
}

func TestStateless(t *testing.T) {
	s, _ := load(t, "stateless.lua", nil)
	for range 3 {
		ss, _ := open(t, s, "")
		if got := text(t, mustCall(t, ss, "hit", `{}`)); got != "params=0 hits=1" {
			t.Errorf("hit = %s", got)
		}
		ss.Close("")
	}
	// A crashed borrowed state is closed, not given back.
	p := s.current().pool
	eventually(t, "the pool to fill", func() bool { return len(p.fresh) == int(p.depth.Load()) })
	ss, _ := open(t, s, "") // takes the spare: the filler stays idle
	before := s.LiveStates()
	if _, err := call(t, ss, "hit", `{"crash":true}`); !isCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	ss.Close("")
	if got := s.LiveStates(); got != before-1 {
		t.Errorf("live states %d -> %d after closing a crashed stateless session", before, got)
	}
}

// Client params the decoder refuses (nested too deep, invalid UTF-8, a
// number out of range) are -32602 Invalid params: the client's mistake,
// never a crash of the script, and the state is untouched.
func TestBadParamsAreInvalidParams(t *testing.T) {
	s, logs := load(t, "full.lua", nil)
	ss, _ := open(t, s, "sid")
	mustCall(t, ss, "inc", `{}`)
	deep := strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300)
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(raw string) error
	}{
		{"tool arguments", func(raw string) error { _, err := call(t, ss, "echo", raw); return err }},
		{"prompt arguments", func(raw string) error {
			_, err := ss.GetPrompt(ctx, testCall(""), "greet", json.RawMessage(raw))
			return err
		}},
		{"completion context", func(raw string) error {
			_, err := ss.Complete(ctx, json.RawMessage(`{"type":"ref/prompt","name":"greet"}`), json.RawMessage(`{"name":"who","value":"A"}`), json.RawMessage(raw))
			return err
		}},
	}
	for _, tt := range tests {
		for _, raw := range []string{deep, "{\"x\":\"\xff\xfe\"}", `{"n":1e400}`} {
			err := tt.run(raw)
			var merr *mcp.Error
			if !errors.As(err, &merr) || merr.Code != mcp.CodeInvalidParams || !strings.HasPrefix(merr.Message, "Invalid params: ") {
				t.Errorf("%s %.20q: %v, want -32602", tt.name, raw, err)
			}
		}
	}
	if strings.Contains(logs.String(), "Lua callback failed") {
		t.Errorf("bad params were logged as a crash:\n%s", logs.String())
	}
	jsonEqual(t, state(t, ss), `{"count":1,"nested":{"items":[1,2]},"session":"sid"}`)
	if got := mustCall(t, ss, "inc", `{}`); !strings.Contains(got, "2") {
		t.Errorf("inc after bad params = %s", got)
	}
	// The init params of a session too.
	if _, _, err := s.Init(ctx, json.RawMessage(`{"clientInfo":{"name":"`+"\xff"+`"}}`), "sid-2"); err == nil || !strings.Contains(err.Error(), "Invalid params") {
		t.Errorf("init with invalid UTF-8: %v", err)
	}
}

// TestSnapshotBesideCalls: a snapshot (a concurrent_tools call) copies the
// committed state while the session's next call backs it up: the two walks
// of one state take turns (go test -race; before, a state with a table of
// more than 8 keys made the process die of concurrent map writes).
func TestSnapshotBesideCalls(t *testing.T) {
	s, _ := loadSource(t, "big.lua", `return {
  init = function() return { name = "s", version = "1" }, { tools = {} }, { n = 0 } end,
  tools = function() return { { name = "fill" }, { name = "ok" } } end,
  handle_tool = function(name, args, ctx, state)
    if name == "fill" then
      local t = {}
      for i = 1, 2000 do t["k" .. i] = i end
      state.t, state.n = t, state.n + 1
      return "filled"
    end
    return "ok"
  end,
}`)
	ss, _ := open(t, s, "sid")
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := ss.CallTool(ctx, testCall("sid"), "fill", nil); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			snap, err := ss.Snapshot(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			snap.Close("")
		})
		wg.Go(func() {
			<-start
			if _, err := ss.CallTool(ctx, testCall("sid"), "ok", nil); err != nil {
				t.Error(err)
			}
		})
		close(start)
		wg.Wait()
		cancel()
	}
}

// TestResultShapes: the lists and the object of a result reach the wire in
// the shape the MCP schema gives them, whatever the script's tables look
// like: an empty table in a list's place is [], and a value of the wrong
// shape is a crash naming it rather than a result against the schema.
func TestResultShapes(t *testing.T) {
	s, _ := loadSource(t, "shapes.lua", `
local mcp = require("mcp")
local results = {
  empty_content = { content = {} },
  empty_structured = { content = {}, structured_content = {} },
  marked_structured = { content = {}, structured_content = mcp.object({ "a" }) },
  content_object = { content = { type = "text", text = "x" } },
  content_marked_object = { content = mcp.object({}) },
  structured_string = { content = {}, structured_content = "x" },
  structured_list = { content = {}, structured_content = { 1, 2 } },
  nested_lists = { content = { { type = "text", text = "x", annotations = { audience = {} }, _meta = { audience = {} } } },
    structured_content = { annotations = { audience = {} } } },
}
return {
  init = function() return { name = "shapes", version = "1" }, { tools = {}, resources = {}, prompts = {} }, {} end,
  tools = function()
    local list = {}
    for name in pairs(results) do
      list[#list + 1] = { name = name, input_schema = { type = "object" } }
    end
    return list
  end,
  handle_tool = function(name) return results[name] end,
  resources = function() return { { uri = "r://x", name = "x" } } end,
  read_resource = function() return { contents = {} } end,
  prompts = function() return { { name = "p" } } end,
  get_prompt = function() return { messages = {} } end,
}`)
	ss, _ := open(t, s, "")
	for _, tt := range []struct {
		name, want, crash string
	}{
		{"empty_content", `{"content":[],"isError":false}`, ""},
		{"empty_structured", `{"content":[],"structuredContent":{},"isError":false}`, ""},
		{"marked_structured", `{"content":[],"structuredContent":{"1":"a"},"isError":false}`, ""},
		{"content_object", "", "result.content: want a list, got a table with the key"},
		{"content_marked_object", "", "result.content: want a list, got a table marked as the other kind"},
		{"structured_string", "", `result.structured_content: want an object (a table with string keys), got the string "x"`},
		{"structured_list", "", "result.structured_content: want an object (a table with string keys), got a list"},
		// The MCP schema's lists inside blocks are lists; the script's own objects are as written.
		{"nested_lists", `{"content":[{"type":"text","text":"x","annotations":{"audience":[]},"_meta":{"audience":{}}}],` +
			`"structuredContent":{"annotations":{"audience":{}}},"isError":false}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, ss, tt.name, `{}`)
			checkOutcome(t, got, err, tt.want, tt.crash)
		})
	}
	res, err := ss.ReadResource(context.Background(), testCall(""), "r://x")
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, string(res), `{"contents":[]}`)
	res, err = ss.GetPrompt(context.Background(), testCall(""), "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, string(res), `{"messages":[]}`)
}

// TestResultBlocks: the content blocks of a tool result, the entries of a
// resource's contents and a prompt's messages have the fields the MCP schema
// requires, or the call is a crash naming the place (and the state rolls
// back); a resource entry without uri gets the uri read. What the schema
// allows besides (annotations, _meta, keys of one's own) passes.
func TestResultBlocks(t *testing.T) {
	s, logs := load(t, "blocks.lua", nil)
	ss, _ := open(t, s, "sid")
	for _, tt := range []struct {
		name, want, crash string
	}{
		{"all_kinds", `{"content":[{"type":"text","text":"t","annotations":{"priority":1},"_meta":{"k":1},"mine":true},` +
			`{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"aGk=","mimeType":"audio/wav"},` +
			`{"type":"resource_link","uri":"r://x","name":"x","size":2},` +
			`{"type":"resource","resource":{"uri":"r://x","text":"hi"}},{"type":"resource","resource":{"uri":"r://y","blob":"aGk="}}],"isError":false}`, ""},
		{"no_text", "", "result.content[2]: a text block needs text"},
		{"text_number", "", "result.content[1].text: want a string, got the number 42"},
		{"image_no_mime", "", "result.content[1]: an image block needs mimeType"},
		{"image_snake_mime", "", "result.content[1]: an image block needs mimeType"},
		{"audio_no_data", "", "result.content[1]: an audio block needs data"},
		{"string_block", "", `result.content[1]: want a content block (a table with type), got the string "hi"`},
		{"list_block", "", "result.content[1]: want a content block (a table with type), got a list"},
		{"no_type", "", "result.content[1]: a content block needs type (text, image, audio, resource_link or resource)"},
		{"robot", "", `result.content[1].type: want text, image, audio, resource_link or resource, got the string "robot"`},
		{"tool_use", "", `result.content[1].type: want text, image, audio, resource_link or resource, got the string "tool_use"`},
		{"link_no_name", "", "result.content[1]: a resource_link block needs name"},
		{"link_no_uri", "", "result.content[1]: a resource_link block needs uri"},
		{"embedded_no_resource", "", "result.content[1]: a resource block needs resource"},
		{"embedded_no_uri", "", "result.content[1].resource: resource contents need uri"},
		{"embedded_no_text", "", "result.content[1].resource: resource contents need text or blob"},
		{"embedded_string", "", `result.content[1].resource: want resource contents (a table with uri and text or blob), got the string "r://x"`},
		{"error_no_text", "", "error.content[1]: a text block needs text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := call(t, ss, tt.name, `{}`)
			checkOutcome(t, got, err, tt.want, tt.crash)
		})
	}
	// Every crash left the state as it was: only all_kinds counted.
	jsonEqual(t, mustCall(t, ss, "count", `{}`), `{"content":[{"type":"text","text":"1"}],"isError":false}`)
	contains(t, logs.String(), "callback=handle_tool")

	for _, tt := range []struct {
		uri, want, crash string
	}{
		{"r://fill", `{"contents":[{"uri":"r://fill","text":"a"},{"uri":"r://other","blob":"aGk="},{"uri":"r://fill","blob":"aGk=","mimeType":"x/y"}]}`, ""},
		// The same entry as r://fill's first: reading r://fill left it without uri.
		{"r://kept", `{"contents":[{"uri":"r://kept","text":"a"}]}`, ""},
		{"r://neither", "", "result.contents[1]: resource contents need text or blob"},
		{"r://text_number", "", "result.contents[1].text: want a string, got the number 1"},
		{"r://uri_number", "", "result.contents[1].uri: want a string, got the number 1"},
		{"r://string_entry", "", `result.contents[1]: want resource contents (a table with uri and text or blob), got the string "x"`},
	} {
		t.Run(tt.uri, func(t *testing.T) {
			got, err := ss.ReadResource(context.Background(), testCall("sid"), tt.uri)
			checkOutcome(t, string(got), err, tt.want, tt.crash)
		})
	}

	for _, tt := range []struct {
		name, want, crash string
	}{
		{"good", `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}},` +
			`{"role":"assistant","content":{"type":"resource","resource":{"uri":"r://x","text":"t"},"annotations":{"audience":["user"]}}}]}`, ""},
		{"system_role", "", `result.messages[1].role: want "user" or "assistant", got the string "system"`},
		{"no_role", "", `result.messages[1].role: want "user" or "assistant", got nil`},
		{"string_content", "", `result.messages[1].content: want a content block (a table with type), got the string "hi"`},
		{"list_content", "", "result.messages[1].content: want a content block (a table with type), got a list"},
		{"no_content", "", "result.messages[1]: a message needs content"},
		{"block_no_text", "", "result.messages[2].content: a text block needs text"},
		{"string_message", "", `result.messages[1]: want a message (a table with role and content), got the string "hi"`},
	} {
		t.Run("prompt_"+tt.name, func(t *testing.T) {
			got, err := ss.GetPrompt(context.Background(), testCall("sid"), tt.name, nil)
			checkOutcome(t, string(got), err, tt.want, tt.crash)
		})
	}
}
