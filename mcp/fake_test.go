package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// fakeServer is a Go-native mcp.Server for the transport's tests. Its
// sessions hold one counter and follow the state rule of mcp.Session: a call
// that answers (result or *mcp.Error) keeps its changes, a crash or an
// interruption leaves the state as it was.
type fakeServer struct {
	has          mcp.Capabilities
	capsJSON     string
	instructions string
	channels     []string
	extraTools   int // tools beyond the fixed set, for pagination
	resources    int // resources beyond the fixed set
	initErr      error
	paged        bool // sessions implement mcp.Pager
	headerTool   bool // lists "region", whose arguments travel in Mcp-Param-* headers too
	channelsErr  error

	// started receives the name of every tool call as it starts.
	started chan string
	// release unblocks the "wait" tool, one call per value.
	release chan struct{}

	mu        sync.Mutex
	inits     []json.RawMessage
	closes    []string // Close reasons of sessions (snapshots and stateless excluded)
	closed    chan string
	order     []string // "tool:arg" of every buffered call, in run order
	active    int      // calls running at once on non-snapshot sessions
	maxActive int
	snapshots int
	snapClose int
	pages     [][2]int // offset and limit of every Page call
}

func newFakeServer() *fakeServer {
	return &fakeServer{
		has:      mcp.Capabilities{Tools: true, Resources: true, Prompts: true, Logging: true, Completions: true},
		capsJSON: `{"tools":{},"resources":{"subscribe":true},"prompts":{},"logging":{},"completions":{}}`,
		channels: []string{"fixture"},
		started:  make(chan string, 100),
		release:  make(chan struct{}, 100),
		closed:   make(chan string, 100),
	}
}

func (f *fakeServer) Init(ctx context.Context, params json.RawMessage, sessionID string) (mcp.Session, *mcp.InitResult, error) {
	if f.initErr != nil {
		return nil, nil, f.initErr
	}
	f.mu.Lock()
	f.inits = append(f.inits, append(json.RawMessage(nil), params...))
	f.mu.Unlock()
	ir := &mcp.InitResult{
		ServerInfo:   json.RawMessage(`{"name":"fake","version":"1.0.0"}`),
		Capabilities: json.RawMessage(f.capsJSON),
		Has:          f.has,
		Instructions: f.instructions,
	}
	var p struct {
		ClientInfo struct{ Name string }
	}
	_ = json.Unmarshal(params, &p)
	sess := &fakeSession{f: f, id: sessionID, client: p.ClientInfo.Name}
	if f.paged {
		return pagedSession{sess}, ir, nil
	}
	return sess, ir, nil
}

// pagedSession is a fakeSession that implements mcp.Pager, and records the
// windows the transport asks for.
type pagedSession struct{ *fakeSession }

func (s pagedSession) Page(ctx context.Context, kind mcp.ListKind, offset, limit int) ([]mcp.Item, int, error) {
	s.f.mu.Lock()
	s.f.pages = append(s.f.pages, [2]int{offset, limit})
	s.f.mu.Unlock()
	var all []mcp.Item
	var err error
	switch kind {
	case mcp.ListTools:
		all, err = s.Tools(ctx)
	case mcp.ListResources:
		all, err = s.Resources(ctx)
	case mcp.ListResourceTemplates:
		all, err = s.ResourceTemplates(ctx)
	case mcp.ListPrompts:
		all, err = s.Prompts(ctx)
	}
	if err != nil {
		return nil, 0, err
	}
	return all[min(offset, len(all)):min(offset+limit, len(all))], len(all), nil
}

func (f *fakeServer) closeReasons() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.closes...)
}

func (f *fakeServer) activeCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active
}

func (f *fakeServer) maxConcurrent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxActive
}

func (f *fakeServer) snapshotCounts() (taken, closed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snapshots, f.snapClose
}

func (f *fakeServer) runOrder() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.order...)
}

type fakeSession struct {
	f        *fakeServer
	id       string
	client   string // clientInfo.name; "loner" joins no channel
	counter  int
	snapshot bool
	closed   bool
}

func (s *fakeSession) Tools(ctx context.Context) ([]mcp.Item, error) {
	names := []string{"add", "echo", "count", "slowcount", "crash", "boom", "block", "wait",
		"progress", "log", "elicit", "closestream", "logwait", "badjson", "session"}
	for i := 0; i < s.f.extraTools; i++ {
		names = append(names, fmt.Sprintf("extra%02d", i))
	}
	items := make([]mcp.Item, len(names))
	for i, n := range names {
		items[i] = mcp.Item{Key: n, JSON: json.RawMessage(`{"name":"` + n + `","inputSchema":{"type":"object"}}`)}
	}
	if s.f.headerTool {
		items = append(items, mcp.Item{Key: "region", JSON: json.RawMessage(`{"name":"region","inputSchema":{"type":"object","properties":{` +
			`"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},` +
			`"opts":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}}}}`)})
	}
	return items, nil
}

// askKeys asks the client one round of elicitations, one per key, and
// returns the answers' results as text, in the order of keys.
func askKeys(ctx context.Context, call *mcp.Call, keys []any) ([]string, error) {
	var reqs []mcp.InputRequest
	for _, k := range keys {
		key, _ := k.(string)
		reqs = append(reqs, mcp.InputRequest{Key: key, Method: "elicitation/create",
			Params: json.RawMessage(`{"message":"` + key + `?","requestedSchema":{"type":"object"}}`)})
	}
	answers, err := call.Out.Ask(ctx, reqs)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(answers))
	for i, ans := range answers {
		out[i] = string(ans.Result)
	}
	return out, nil
}

func text(s string, isError bool) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isError})
	return b
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *fakeSession) CallTool(ctx context.Context, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	f := s.f
	f.mu.Lock()
	if !s.snapshot {
		f.active++
		f.maxActive = max(f.maxActive, f.active)
		tag, _ := a["tag"].(string)
		f.order = append(f.order, name+":"+tag)
	}
	f.mu.Unlock()
	defer func() {
		if !s.snapshot {
			f.mu.Lock()
			f.active--
			f.mu.Unlock()
		}
	}()
	select {
	case f.started <- name:
	default:
	}
	num := func(k string) float64 { v, _ := a[k].(float64); return v }

	call.Listed = true // every case of the switch is a listed tool
	switch name {
	case "add":
		return text(strconv.FormatFloat(num("a")+num("b"), 'f', -1, 64), false), nil
	case "echo", "region":
		b, _ := json.Marshal(map[string]any{"content": []any{}, "isError": false, "structuredContent": json.RawMessage(args)})
		return b, nil
	case "count":
		s.counter++
		return text(strconv.Itoa(s.counter), false), nil
	case "slowcount":
		ms := num("ms")
		if ms == 0 {
			ms = 300
		}
		if err := sleepCtx(ctx, time.Duration(ms)*time.Millisecond); err != nil {
			return nil, err
		}
		s.counter++
		return text(strconv.Itoa(s.counter), false), nil
	case "crash":
		return nil, errors.New("fake.lua:3: attempt to index a nil value")
	case "heldcrash": // not listed: a crash its source held back from its log
		return nil, heldCrash{}
	case "boom":
		return text("kaboom", true), nil
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "wait":
		select {
		case <-f.release:
			return text("released", false), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "progress":
		steps := int(num("steps"))
		if steps == 0 {
			steps = 2
		}
		for i := 1; i <= steps; i++ {
			p, _ := json.Marshal(map[string]any{"progressToken": call.ProgressToken, "progress": i, "total": steps, "message": fmt.Sprintf("step %d/%d", i, steps)})
			if err := call.Out.Progress(p); err != nil {
				return nil, err
			}
			if d := num("ms"); d > 0 {
				if err := sleepCtx(ctx, time.Duration(d)*time.Millisecond); err != nil {
					return nil, err
				}
			}
		}
		if a["block"] == true {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		s.counter += 100 // lands, unless the call runs on a snapshot (a concurrent tool)
		return text("done", false), nil
	case "log":
		levels, _ := a["levels"].([]any)
		for _, l := range levels {
			if err := call.Out.Log(l.(string), json.RawMessage(`"msg at `+l.(string)+`"`)); err != nil {
				return nil, err
			}
		}
		return text("logged", false), nil
	case "elicit":
		method, _ := a["method"].(string)
		if method == "" {
			method = "elicitation/create"
		}
		res, err := call.Out.Request(ctx, method, json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`))
		var e *mcp.Error
		switch {
		case errors.As(err, &e):
			return text(fmt.Sprintf("error %d %s", e.Code, e.Message), true), nil
		case errors.Is(err, mcp.ErrNoClientCapability):
			return text("no capability", true), nil
		case err != nil:
			return nil, err
		}
		return text("answer "+string(res), false), nil
	case "task": // not listed; may become a task (Outbound.StartTask)
		support, _ := a["support"].(string)
		if err := call.SetTaskSupport(mcp.ParseTaskSupport(support)); err != nil {
			return nil, err
		}
		var before []string // asked before the call becomes a task: rounds of the call
		if key, _ := a["before"].(string); key != "" {
			var err error
			if before, err = askKeys(ctx, call, []any{key}); err != nil {
				return nil, err
			}
		}
		started := call.Out.StartTask(mcp.TaskOptions{TTL: time.Duration(num("ttl")) * time.Millisecond, PollInterval: time.Duration(num("poll")) * time.Millisecond})
		out := append([]string{"task=" + strconv.FormatBool(started)}, before...)
		if keys, _ := a["keys"].([]any); len(keys) > 0 {
			answers, err := askKeys(ctx, call, keys)
			if err != nil {
				return nil, err
			}
			out = append(out, answers...)
		}
		if a["wait"] == true {
			select {
			case <-f.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if a["crash"] == true {
			return nil, errors.New("fake.lua:9: the task crashed")
		}
		return text(strings.Join(out, " | "), a["fail"] == true), nil
	case "ask": // not listed; one round of keyed requests (Outbound.Ask)
		keys, _ := a["keys"].([]any)
		out, err := askKeys(ctx, call, keys)
		if err != nil {
			return nil, err
		}
		if a["again"] == true { // a second round, after the first
			more, err := call.Out.Ask(ctx, []mcp.InputRequest{{Key: "again", Method: "roots/list"}})
			if err != nil {
				return nil, err
			}
			out = append(out, string(more[0].Result))
		}
		return text(strings.Join(out, " | "), false), nil
	case "closestream":
		_ = call.Out.Log("info", json.RawMessage(`"before close"`))
		_ = call.Out.CloseStream()
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		_ = call.Out.Log("info", json.RawMessage(`"after close"`))
		return text("resumed", false), nil
	case "logwait":
		_ = call.Out.Log("info", json.RawMessage(`"waiting"`))
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text("released", false), nil
	case "badjson":
		return json.RawMessage(`{"content":[`), nil
	case "stubborn": // not listed: sleeps ms, deaf to its context
		time.Sleep(time.Duration(num("ms")) * time.Millisecond)
		return text("done", false), nil
	case "where": // not listed: which goroutine runs the call
		buf := make([]byte, 16<<10)
		if strings.Contains(string(buf[:runtime.Stack(buf, false)]), "serveInline") {
			return text("inline", false), nil
		}
		return text("queue", false), nil
	case "flood": // not listed, so that the list tests keep their counts
		// Log messages of 64 KiB on the call's stream until the call ends,
		// for clients that stop reading (close: after ending the response
		// early, for a client that would resume).
		if a["close"] == true {
			_ = call.Out.CloseStream()
		}
		data := json.RawMessage(`"` + strings.Repeat("x", 64<<10) + `"`)
		for {
			if err := call.Out.Log("info", data); err != nil {
				return nil, err
			}
			if err := sleepCtx(ctx, time.Millisecond); err != nil {
				return nil, err
			}
		}
	case "burst": // not listed: n log messages of kib KiB at once, then an answer
		data := json.RawMessage(`"` + strings.Repeat("x", int(num("kib"))<<10) + `"`)
		for range int(num("n")) {
			if err := call.Out.Log("info", data); err != nil {
				return nil, err
			}
		}
		return text("burst done", false), nil
	case "session":
		return text("sid="+call.SessionID+" rid="+string(call.RequestID)+" tok="+string(call.ProgressToken), false), nil
	}
	call.Listed = false
	return nil, mcp.ErrUnknownTool(name)
}

func (s *fakeSession) Resources(ctx context.Context) ([]mcp.Item, error) {
	items := []mcp.Item{
		{Key: "mem://greeting", JSON: json.RawMessage(`{"uri":"mem://greeting","name":"greeting","mimeType":"text/plain"}`)},
		{Key: "mem://locked", JSON: json.RawMessage(`{"uri":"mem://locked","name":"locked"}`)},
		{Key: "mem://counter", JSON: json.RawMessage(`{"uri":"mem://counter","name":"counter"}`)},
	}
	for i := 0; i < s.f.resources; i++ {
		u := fmt.Sprintf("mem://extra/%d", i)
		items = append(items, mcp.Item{Key: u, JSON: json.RawMessage(`{"uri":"` + u + `","name":"extra"}`)})
	}
	return items, nil
}

func (s *fakeSession) ResourceTemplates(ctx context.Context) ([]mcp.Item, error) {
	return []mcp.Item{{Key: "mem://user/{id}", JSON: json.RawMessage(`{"uriTemplate":"mem://user/{id}","name":"user"}`)}}, nil
}

func contents(uri, text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"contents": []any{map[string]any{"uri": uri, "text": text}}})
	return b
}

func (s *fakeSession) ReadResource(ctx context.Context, call *mcp.Call, uri string) (json.RawMessage, error) {
	switch uri {
	case "mem://greeting":
		return contents(uri, "hello"), nil
	case "mem://locked":
		return nil, &mcp.Error{Code: mcp.CodeResourceNotFound, Message: "locked"}
	case "mem://counter":
		s.counter++
		return contents(uri, strconv.Itoa(s.counter)), nil
	}
	if vars, ok := mcp.MatchTemplate("mem://user/{id}", uri); ok {
		return contents(uri, "user "+vars["id"]), nil
	}
	return nil, mcp.ErrResourceNotFound(uri)
}

func (s *fakeSession) Prompts(ctx context.Context) ([]mcp.Item, error) {
	return []mcp.Item{
		{Key: "greet", JSON: json.RawMessage(`{"name":"greet","arguments":[{"name":"who","required":true}]}`)},
		{Key: "deny", JSON: json.RawMessage(`{"name":"deny"}`)},
	}, nil
}

func (s *fakeSession) GetPrompt(ctx context.Context, call *mcp.Call, name string, args json.RawMessage) (json.RawMessage, error) {
	switch name {
	case "greet":
		var a struct{ Who string }
		_ = json.Unmarshal(args, &a)
		b, _ := json.Marshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Hello, " + a.Who}}}})
		return b, nil
	case "deny":
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "denied"}
	}
	return nil, mcp.ErrUnknownPrompt(name)
}

func (s *fakeSession) Complete(ctx context.Context, ref, argument, cctx json.RawMessage) ([]string, error) {
	var arg struct{ Name, Value string }
	_ = json.Unmarshal(argument, &arg)
	if arg.Name == "many" {
		out := make([]string, 150)
		for i := range out {
			out[i] = fmt.Sprintf("v%03d", i)
		}
		return out, nil
	}
	var out []string
	for _, v := range []string{"Ada", "Adam", "Alan"} {
		if strings.HasPrefix(v, arg.Value) {
			out = append(out, v)
		}
	}
	return out, nil
}

func (s *fakeSession) Channels(ctx context.Context) ([]string, error) {
	if s.f.channelsErr != nil {
		return nil, s.f.channelsErr
	}
	if s.client == "loner" {
		return nil, nil
	}
	return s.f.channels, nil
}

func (s *fakeSession) Snapshot(ctx context.Context) (mcp.Session, error) {
	s.f.mu.Lock()
	s.f.snapshots++
	s.f.mu.Unlock()
	return &fakeSession{f: s.f, id: s.id, counter: s.counter, snapshot: true}, nil
}

func (s *fakeSession) Close(reason string) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.closed {
		panic("fakeSession closed twice")
	}
	s.closed = true
	switch {
	case s.snapshot:
		f.snapClose++
	case s.id != "":
		f.closes = append(f.closes, reason)
		f.closed <- reason
	}
}

// heldCrash is a failure its source throttled (mcp.Throttled), as luavm's
// crashError of a place that crashed moments before.
type heldCrash struct{}

func (heldCrash) Error() string   { return "fake.lua:9: held back" }
func (heldCrash) Throttled() bool { return true }
