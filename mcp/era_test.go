package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// metaAll is the 2026-07-28 _meta of a client that declares every capability.
const metaAll = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"sampling":{},"roots":{}}}`

// withMeta returns the params object params with _meta set to meta.
func withMeta(params, meta string) string {
	if params == "" || params == "{}" {
		return `{"_meta":` + meta + `}`
	}
	return `{"_meta":` + meta + `,` + strings.TrimPrefix(params, "{")
}

// modernHeaders are the headers a 2026-07-28 client sends for method and
// params (Mcp-Name from params.name or params.uri).
func modernHeaders(method, params string) []string {
	h := []string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: " + method}
	var p struct{ Name, URI string }
	_ = json.Unmarshal([]byte(params), &p)
	if p.Name != "" {
		h = append(h, "Mcp-Name: "+p.Name)
	} else if p.URI != "" {
		h = append(h, "Mcp-Name: "+p.URI)
	}
	return h
}

// modern sends a 2026-07-28 request with every capability declared.
func (rt *route) modern(method, params string, headers ...string) reply {
	rt.t.Helper()
	return rt.modernWith(metaAll, method, params, headers...)
}

// modernWith sends a 2026-07-28 request with _meta meta; headers override
// the era's own.
func (rt *route) modernWith(meta, method, params string, headers ...string) reply {
	rt.t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + withMeta(params, meta) + `}`
	return rt.post(body, append(modernHeaders(method, params), headers...)...)
}

func TestStatelessEraRefusals(t *testing.T) {
	for _, sessions := range []bool{false, true} {
		rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: sessions})
		tests := []struct {
			name    string
			body    string
			headers []string
			status  int
			code    int
		}{
			{"missing _meta", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{}}`,
				modernHeaders("server/discover", ""), 400, -32602},
			{"_meta without version", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`,
				modernHeaders("server/discover", ""), 400, -32602},
			{"_meta without capabilities", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
				modernHeaders("server/discover", ""), 400, -32602},
			{"header differs from _meta", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":` + withMeta("", strings.Replace(metaAll, "2026-07-28", "v999", 1)) + `}`,
				modernHeaders("server/discover", ""), 400, -32020},
			{"no version header", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":` + withMeta("", metaAll) + `}`,
				[]string{"Mcp-Method: server/discover"}, 400, -32020},
			{"a 2025 header with 2026-07-28 _meta", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + withMeta(`{"name":"add","arguments":{"a":1,"b":2}}`, metaAll) + `}`,
				[]string{"MCP-Protocol-Version: 2025-11-25", "Mcp-Method: tools/list", "Mcp-Name: evil"}, 400, -32020},
			{"bad log level", `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":` + withMeta("", strings.Replace(metaAll, `"io.modelcontextprotocol/protocolVersion"`, `"io.modelcontextprotocol/logLevel":"loud","io.modelcontextprotocol/protocolVersion"`, 1)) + `}`,
				modernHeaders("server/discover", ""), 400, -32602},
			{"Mcp-Method differs", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":` + withMeta("", metaAll) + `}`,
				[]string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: prompts/list"}, 400, -32020},
			{"Mcp-Method missing", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":` + withMeta("", metaAll) + `}`,
				[]string{"MCP-Protocol-Version: 2026-07-28"}, 400, -32020},
			{"Mcp-Name differs", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + withMeta(`{"name":"add","arguments":{"a":1,"b":2}}`, metaAll) + `}`,
				[]string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: echo"}, 400, -32020},
			{"Mcp-Name missing", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":` + withMeta(`{"uri":"mem://greeting"}`, metaAll) + `}`,
				[]string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: resources/read"}, 400, -32020},
			{"Mcp-Name bad Base64", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + withMeta(`{"name":"add"}`, metaAll) + `}`,
				[]string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: =?base64?!!!?="}, 400, -32020},
			{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"unknown/method","params":` + withMeta("", metaAll) + `}`,
				modernHeaders("unknown/method", ""), 404, -32601},
		}
		for _, removed := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"} {
			tests = append(tests, struct {
				name    string
				body    string
				headers []string
				status  int
				code    int
			}{"removed " + removed, `{"jsonrpc":"2.0","id":7,"method":"` + removed + `","params":` + withMeta(`{"uri":"mem://x"}`, metaAll) + `}`,
				modernHeaders(removed, ""), 404, -32601})
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := rt.post(tt.body, tt.headers...)
				if r.status != tt.status || r.errorCode() != tt.code {
					t.Fatalf("got %d %d, want %d %d: %s", r.status, r.errorCode(), tt.status, tt.code, r.body)
				}
				if id, _ := r.msg["id"].(float64); id != 7 {
					t.Errorf("id %v, want the request's 7", r.msg["id"])
				}
				if r.header.Get("Mcp-Session-Id") != "" {
					t.Errorf("the stateless era minted a session id")
				}
			})
		}
	}
}

func TestStatelessEraUnsupportedVersion(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	meta := strings.Replace(metaAll, "2026-07-28", "v999.0.0", 1)
	r := rt.modernWith(meta, "server/discover", "", "MCP-Protocol-Version: v999.0.0")
	if r.status != 400 || r.errorCode() != -32022 {
		t.Fatalf("got %d %d: %s", r.status, r.errorCode(), r.body)
	}
	var e struct {
		Error struct {
			Data struct {
				Supported []string
				Requested string
			}
		}
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Error.Data.Supported, ","); got != "2026-07-28,2025-11-25,2025-06-18,2025-03-26" || e.Error.Data.Requested != "v999.0.0" {
		t.Errorf("data = %+v", e.Error.Data)
	}
}

func TestDiscover(t *testing.T) {
	f := newFakeServer()
	f.instructions = "be kind"
	rt := newRoute(t, f, mcp.Options{Sessions: true, CacheTTL: 1500 * time.Millisecond, CacheScope: "public"})
	r := rt.modern("server/discover", "")
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	res := r.result()
	want := map[string]any{
		"resultType":        "complete",
		"ttlMs":             float64(1500),
		"cacheScope":        "public",
		"instructions":      "be kind",
		"supportedVersions": []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"},
	}
	for k, v := range want {
		if got, _ := json.Marshal(res[k]); string(got) != mustJSON(v) {
			t.Errorf("%s = %s, want %s", k, got, mustJSON(v))
		}
	}
	if caps, _ := json.Marshal(res["capabilities"]); !strings.Contains(string(caps), `"prompts"`) {
		t.Errorf("capabilities = %s", caps)
	}
	meta, _ := res["_meta"].(map[string]any)
	if info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != "fake" {
		t.Errorf("_meta = %v, want serverInfo", meta)
	}
	if rt.h.SessionCount() != 0 || r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("server/discover opened a session")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestStatelessEraResults(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true, CacheTTL: 2 * time.Second})
	tests := []struct {
		method, params string
		cached         bool
	}{
		{"tools/list", "", true},
		{"prompts/list", "", true},
		{"resources/list", "", true},
		{"resources/templates/list", "", true},
		{"resources/read", `{"uri":"mem://greeting"}`, true},
		{"tools/call", `{"name":"add","arguments":{"a":1,"b":2}}`, false},
		{"prompts/get", `{"name":"greet","arguments":{"name":"x"}}`, false},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			r := rt.modern(tt.method, tt.params)
			res := r.result()
			if r.status != 200 || res == nil {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if res["resultType"] != "complete" {
				t.Errorf("resultType = %v", res["resultType"])
			}
			_, hasTTL := res["ttlMs"]
			if hasTTL != tt.cached || (tt.cached && (res["ttlMs"] != float64(2000) || res["cacheScope"] != "private")) {
				t.Errorf("ttlMs %v cacheScope %v, want them: %v", res["ttlMs"], res["cacheScope"], tt.cached)
			}
		})
	}
	r := rt.modern("tools/call", `{"name":"add","arguments":{"a":1,"b":2}}`)
	if r.text() != "3" {
		t.Errorf("add = %q", r.text())
	}
}

func TestStatelessEraBase64Name(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	name := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("add")) + "?="
	r := rt.modern("tools/call", `{"name":"add","arguments":{"a":2,"b":2}}`, "Mcp-Name: "+name)
	if r.status != 200 || r.text() != "4" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestStatelessEraResourceNotFound(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	r := rt.modern("resources/read", `{"uri":"mem://nowhere"}`)
	e, _ := r.msg["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if r.errorCode() != -32602 || data["uri"] != "mem://nowhere" {
		t.Fatalf("%s", r.body)
	}
	// The session era keeps -32002.
	sid := rt.initialize()
	if r := rt.call(sid, 2, "resources/read", `{"uri":"mem://nowhere"}`); r.errorCode() != -32002 {
		t.Errorf("session era: %s", r.body)
	}
}

func TestInputRequired(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	call := `{"name":"elicit","arguments":{}}`
	r := rt.modern("tools/call", call)
	res := r.result()
	if res["resultType"] != "input_required" {
		t.Fatalf("round 1: %s", r.body)
	}
	reqs, _ := res["inputRequests"].(map[string]any)
	q, _ := reqs["1"].(map[string]any)
	if q["method"] != "elicitation/create" {
		t.Fatalf("inputRequests = %v", reqs)
	}
	state, _ := res["requestState"].(string)
	if state == "" {
		t.Fatalf("no requestState: %s", r.body)
	}
	answer := `{"1":{"action":"accept","content":{"name":"Ada"}}}`
	retry := func(state string) string {
		return `{"name":"elicit","arguments":{},"inputResponses":` + answer + `,"requestState":` + mustJSON(state) + `}`
	}
	r = rt.modern("tools/call", retry(state))
	if r.result()["resultType"] != "complete" || !strings.Contains(r.text(), "Ada") {
		t.Fatalf("round 2: %s", r.body)
	}
	// A state that was altered, or that belongs to another call, is refused.
	for name, bad := range map[string]string{
		"tampered":  state + "x",
		"garbage":   "abc",
		"other arg": "",
	} {
		params := retry(bad)
		if name == "other arg" {
			params = `{"name":"elicit","arguments":{"method":"elicitation/create"},"inputResponses":` + answer + `,"requestState":` + mustJSON(state) + `}`
		}
		if r := rt.modern("tools/call", params); r.errorCode() != -32602 {
			t.Errorf("%s state: %s", name, r.body)
		}
	}
	// Answers without a state are this round's answers.
	r = rt.modern("tools/call", `{"name":"elicit","arguments":{},"inputResponses":`+answer+`}`)
	if !strings.Contains(r.text(), "Ada") {
		t.Errorf("answers without state: %s", r.body)
	}
	// A wrong key is asked again.
	r = rt.modern("tools/call", `{"name":"elicit","arguments":{},"inputResponses":{"other":{"action":"accept"}}}`)
	if r.result()["resultType"] != "input_required" {
		t.Errorf("wrong key: %s", r.body)
	}
	// Malformed answers are refused.
	for _, bad := range []string{`null`, `{"1":12345}`, `{"1":{"action":"maybe"}}`} {
		r := rt.modern("tools/call", `{"name":"elicit","arguments":{},"inputResponses":`+bad+`}`)
		if r.errorCode() != -32602 {
			t.Errorf("inputResponses %s: %s", bad, r.body)
		}
	}
	// tools/list never asks.
	if r := rt.modern("tools/list", ""); r.result()["resultType"] != "complete" {
		t.Errorf("tools/list: %s", r.body)
	}
}

func TestInputRequiredStateKey(t *testing.T) {
	// Two routes (processes) sharing a key accept each other's states.
	a := newRoute(t, newFakeServer(), mcp.Options{})
	b := newRoute(t, newFakeServer(), mcp.Options{})
	key := []byte("0123456789abcdef0123456789abcdef")
	for _, rt := range []*route{a, b} {
		if err := rt.hub.SetStateKey(key); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.hub.SetStateKey([]byte("short")); err == nil {
		t.Error("a 5-byte key was taken")
	}
	r := a.modern("tools/call", `{"name":"elicit","arguments":{}}`)
	state, _ := r.result()["requestState"].(string)
	r = b.modern("tools/call", `{"name":"elicit","arguments":{},"inputResponses":{"1":{"action":"decline"}},"requestState":`+mustJSON(state)+`}`)
	if r.result()["resultType"] != "complete" {
		t.Fatalf("%s", r.body)
	}
	c := newRoute(t, newFakeServer(), mcp.Options{}) // its own random key
	r = c.modern("tools/call", `{"name":"elicit","arguments":{},"inputResponses":{"1":{"action":"decline"}},"requestState":`+mustJSON(state)+`}`)
	if r.errorCode() != -32602 {
		t.Fatalf("another key accepted the state: %s", r.body)
	}
}

func TestMissingClientCapability(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	r := rt.modernWith(meta, "tools/call", `{"name":"elicit","arguments":{"method":"sampling/createMessage"}}`)
	if r.status != 400 || r.errorCode() != -32021 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if !strings.Contains(r.body, `"requiredCapabilities":{"sampling":{}}`) {
		t.Errorf("data: %s", r.body)
	}
}

func TestStatelessEraLogLevel(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	params := `{"name":"log","arguments":{"levels":["debug","info","error"]}}`
	// Without a level: no log messages, a plain JSON answer.
	r := rt.modern("tools/call", params)
	if r.status != 200 || r.text() != "logged" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	meta := strings.Replace(metaAll, `"io.modelcontextprotocol/protocolVersion"`, `"io.modelcontextprotocol/logLevel":"warning","io.modelcontextprotocol/protocolVersion"`, 1)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + withMeta(params, meta) + `}`
	s := rt.stream(context.Background(), "", body, modernHeaders("tools/call", params)...)
	defer s.close()
	ev := s.nextEvent()
	if m := ev.msg(); m["method"] != "notifications/message" || !strings.Contains(ev.data, `"error"`) {
		t.Fatalf("first event %s, want the error log", ev.data)
	}
	if ev := s.nextEvent(); !strings.Contains(ev.data, `"result"`) {
		t.Fatalf("second event %s, want the result", ev.data)
	}
}

// TestListenAccept checks that subscriptions/listen, answered only with an
// SSE stream, is refused with 406 when the Accept header excludes
// text/event-stream, and opens for any Accept that allows it.
func TestListenAccept(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	params := `{"notifications":{"toolsListChanged":true}}`
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":` + withMeta(params, metaAll) + `}`
	for _, tt := range []struct {
		accept string // "" = no Accept header
		status int
	}{
		{"application/json", 406},
		{"application/json, text/event-stream;q=0", 406},
		{"application/json, text/event-stream", 200},
		{"*/*", 200},
		{"", 200},
	} {
		t.Run(tt.accept, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp := rt.open(ctx, http.MethodPost, body, append(modernHeaders("subscriptions/listen", params), "Accept: "+tt.accept)...)
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 406 {
				if r := readReply(t, resp); r.errorCode() != -32600 || r.msg["id"] != "L1" {
					t.Errorf("406 answer %s", r.body)
				}
			} else if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestListen(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	params := `{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://a"]}}`
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":` + withMeta(params, metaAll) + `}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := rt.stream(ctx, "", body, modernHeaders("subscriptions/listen", params)...)
	defer s.close()
	ack := s.nextEvent().msg()
	p, _ := ack["params"].(map[string]any)
	if ack["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message %v", ack)
	}
	if got := mustJSON(p["notifications"]); got != `{"resourceSubscriptions":["mem://a"],"toolsListChanged":true}` {
		t.Errorf("honoured %s", got)
	}
	tagged := func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		meta, _ := p["_meta"].(map[string]any)
		return meta["io.modelcontextprotocol/subscriptionId"] == "L1"
	}
	if !tagged(ack) {
		t.Errorf("ack not tagged: %v", ack)
	}
	push := rt.push()
	// The stream joined the channels of a fresh state ("fixture"), as a
	// session does: a broadcast elsewhere does not reach it.
	push.Broadcast("elsewhere", "notifications/tools/list_changed", []byte(`{"elsewhere":true}`))
	push.Broadcast("fixture", "notifications/prompts/list_changed", nil) // not asked for
	push.Broadcast("fixture", "notifications/tools/list_changed", nil)
	if m := s.nextEvent().msg(); m["method"] != "notifications/tools/list_changed" || !tagged(m) || strings.Contains(mustJSON(m), "elsewhere") {
		t.Fatalf("got %v, want tools/list_changed of the fixture channel, tagged", m)
	}
	push.ResourceUpdated("mem://b") // not subscribed
	push.ResourceUpdated("mem://a")
	m := s.nextEvent().msg()
	if p, _ := m["params"].(map[string]any); m["method"] != "notifications/resources/updated" || p["uri"] != "mem://a" || !tagged(m) {
		t.Fatalf("got %v, want resources/updated mem://a tagged", m)
	}
	push.ListChanged("notifications/tools/list_changed") // a reload
	if m := s.nextEvent().msg(); m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("got %v after a reload", m)
	}
	// Shutdown ends the stream: notifications/cancelled, then the result.
	go rt.h.Shutdown(context.Background())
	if m := s.nextEvent().msg(); m["method"] != "notifications/cancelled" {
		t.Fatalf("got %v, want notifications/cancelled", m)
	}
	if m := s.nextEvent().msg(); m["id"] != "L1" || !strings.Contains(mustJSON(m["result"]), `"resultType":"complete"`) {
		t.Fatalf("got %v, want the listen result", m)
	}
}

func TestBothErasAtOnce(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initialize()
	if r := rt.call(sid, 2, "tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("session: %s", r.body)
	}
	if r := rt.modern("tools/call", `{"name":"count"}`); r.text() != "1" {
		t.Fatalf("stateless era: %s", r.body)
	}
	if r := rt.call(sid, 3, "tools/call", `{"name":"count"}`); r.text() != "2" {
		t.Fatalf("session after a stateless call: %s", r.body)
	}
	// A GET of the new era is refused with 405.
	if r := rt.do("GET", "", "MCP-Protocol-Version: 2026-07-28", "Mcp-Session-Id: "+sid); r.status != 405 {
		t.Errorf("GET: %d", r.status)
	}
}

// TestAskOneRound: the session era sends a round's requests at once and
// waits for every answer.
func TestAskOneRound(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Sessions: true})
	sid := rt.initializeWith(clientWithCaps)
	s := rt.stream(context.Background(), sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask","arguments":{"keys":["a","b"]}}}`)
	defer s.close()
	// Both requests arrive before either is answered.
	var ids []string
	for range 2 {
		m := s.nextEvent().msg()
		if m["method"] != "elicitation/create" {
			t.Fatalf("got %v, want a request", m)
		}
		id, _ := m["id"].(string)
		ids = append(ids, id)
	}
	for i := len(ids) - 1; i >= 0; i-- { // answered out of order
		r := rt.post(`{"jsonrpc":"2.0","id":`+mustJSON(ids[i])+`,"result":{"action":"accept","content":{"n":`+mustJSON(i)+`}}}`, "Mcp-Session-Id: "+sid)
		if r.status != 202 {
			t.Fatalf("answer: %d %s", r.status, r.body)
		}
	}
	evs := readStream(s)
	if len(evs) != 1 || !strings.Contains(evs[0].data, `{\"n\":0}} | {\"action\":\"accept\",\"content\":{\"n\":1}}`) {
		t.Fatalf("result %+v", evs)
	}
}

// TestAskRounds: in the 2026-07-28 era each round is an input_required, and
// the answers of earlier rounds travel in the requestState.
func TestAskRounds(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	params := func(responses, state string) string {
		p := `{"name":"ask","arguments":{"keys":["a","b"],"again":true}`
		if responses != "" {
			p += `,"inputResponses":` + responses
		}
		if state != "" {
			p += `,"requestState":` + mustJSON(state)
		}
		return p + `}`
	}
	r := rt.modern("tools/call", params("", ""))
	reqs, _ := r.result()["inputRequests"].(map[string]any)
	if len(reqs) != 2 || reqs["a"] == nil || reqs["b"] == nil {
		t.Fatalf("round 1: %s", r.body)
	}
	state1, _ := r.result()["requestState"].(string)
	r = rt.modern("tools/call", params(`{"a":{"action":"accept","content":{"v":"A"}},"b":{"action":"decline"}}`, state1))
	reqs, _ = r.result()["inputRequests"].(map[string]any)
	state2, _ := r.result()["requestState"].(string)
	if q, _ := reqs["again"].(map[string]any); len(reqs) != 1 || q["method"] != "roots/list" || state2 == state1 {
		t.Fatalf("round 2: %s", r.body)
	}
	// Round 3 sends only the last answer: the others come from the state.
	r = rt.modern("tools/call", params(`{"again":{"roots":[]}}`, state2))
	want := `{"action":"accept","content":{"v":"A"}} | {"action":"decline"} | {"roots":[]}`
	if r.result()["resultType"] != "complete" || r.text() != want {
		t.Fatalf("round 3: %s", r.body)
	}
	// Without the state the earlier answers are gone: asked again.
	r = rt.modern("tools/call", params(`{"again":{"roots":[]}}`, ""))
	if reqs, _ := r.result()["inputRequests"].(map[string]any); len(reqs) != 2 {
		t.Fatalf("retry without state: %s", r.body)
	}
}

// TestParamHeaders: a tools/call's Mcp-Param-* headers must mirror the
// arguments its tool marks with x-mcp-header, on a route that has listed
// its tools and on a fresh one whose first request is that call (a client
// that listed on another node, or before a restart).
func TestParamHeaders(t *testing.T) {
	newRt := func(t *testing.T, listed bool) *route {
		f := newFakeServer()
		f.headerTool = true
		rt := newRoute(t, f, mcp.Options{})
		if !listed {
			return rt
		}
		if r := rt.modern("tools/list", ""); r.status != 200 {
			t.Fatalf("tools/list: %s", r.body)
		}
		return rt
	}
	warm := newRt(t, true)
	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	args := `{"region":"eu-west","n":42,"opts":{"flag":true}}`
	all := []string{"Mcp-Param-Region: eu-west", "Mcp-Param-N: 42", "Mcp-Param-Flag: true"}
	tests := []struct {
		name    string
		args    string
		headers []string
		ok      bool
	}{
		{"all match", args, all, true},
		{"Base64", `{"region":"Hello"}`, []string{"Mcp-Param-Region: " + b64("Hello")}, true},
		{"literal without prefix", `{"region":"SGVsbG8="}`, []string{"Mcp-Param-Region: SGVsbG8="}, true},
		{"literal without suffix", `{"region":"=?base64?SGVsbG8="}`, []string{"Mcp-Param-Region: =?base64?SGVsbG8="}, true},
		{"integer compared as a number", `{"n":42}`, []string{"Mcp-Param-N: 42.0"}, true},
		{"absent argument needs no header", `{}`, nil, true},
		{"missing header", `{"region":"eu-west"}`, nil, false},
		{"mismatch", `{"region":"eu-west"}`, []string{"Mcp-Param-Region: us-east"}, false},
		{"nested mismatch", `{"opts":{"flag":true}}`, []string{"Mcp-Param-Flag: false"}, false},
		{"bad padding", `{"region":"Hello"}`, []string{"Mcp-Param-Region: =?base64?SGVsbG8?="}, false},
		{"bad Base64 characters", `{"region":"Hello"}`, []string{"Mcp-Param-Region: =?base64?SGVs!!!bG8=?="}, false},
		// The marker is the spec's, lowercase: another case is a plain value.
		{"upper-case marker is literal", `{"region":"=?BASE64?SGVsbG8=?="}`, []string{"Mcp-Param-Region: =?BASE64?SGVsbG8=?="}, true},
		{"upper-case marker is not decoded", `{"region":"Hello"}`, []string{"Mcp-Param-Region: =?BASE64?SGVsbG8=?="}, false},
		{"tab in a plain value", `{"region":"a\tb"}`, []string{"Mcp-Param-Region: a\tb"}, true},
	}
	for _, tt := range tests {
		for _, listed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/listed=%v", tt.name, listed), func(t *testing.T) {
				rt := warm
				if !listed {
					rt = newRt(t, false)
				}
				r := rt.modern("tools/call", `{"name":"region","arguments":`+tt.args+`}`, tt.headers...)
				if tt.ok && (r.status != 200 || r.result()["resultType"] != "complete") {
					t.Fatalf("refused: %d %s", r.status, r.body)
				}
				if !tt.ok && (r.status != 400 || r.errorCode() != -32020) {
					t.Fatalf("accepted: %d %s", r.status, r.body)
				}
			})
		}
	}
}

// TestParamHeadersPaged: a first page of tools/list that shows no
// x-mcp-header does not stop the checks: the tool that has one may be on a
// later page.
func TestParamHeadersPaged(t *testing.T) {
	f := newFakeServer()
	f.headerTool = true // "region" is listed last
	rt := newRoute(t, f, mcp.Options{PageSize: 5})
	if r := rt.modern("tools/list", ""); r.status != 200 || strings.Contains(r.body, "x-mcp-header") {
		t.Fatalf("page 1: %s", r.body)
	}
	if r := rt.modern("tools/call", `{"name":"region","arguments":{"region":"eu-west"}}`); r.status != 400 || r.errorCode() != -32020 {
		t.Errorf("a call without its Mcp-Param-Region after a first page: %d %s", r.status, r.body)
	}
}

func TestRequestStateExpires(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{})
	r := rt.modern("tools/call", `{"name":"elicit","arguments":{}}`)
	state, _ := r.result()["requestState"].(string)
	retry := `{"name":"elicit","arguments":{},"inputResponses":{"1":{"action":"decline"}},"requestState":` + mustJSON(state) + `}`
	restore := mcp.SetClock(func() time.Time { return time.Now().Add(59 * time.Minute) })
	if r := rt.modern("tools/call", retry); r.result()["resultType"] != "complete" {
		restore()
		t.Fatalf("within the hour: %s", r.body)
	}
	restore()
	restore = mcp.SetClock(func() time.Time { return time.Now().Add(61 * time.Minute) })
	defer restore()
	if r := rt.modern("tools/call", retry); r.errorCode() != -32602 {
		t.Fatalf("after the hour: %s", r.body)
	}
}

func TestCacheScopeFallsBackToPrivate(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{CacheScope: "shared"})
	if r := rt.modern("tools/list", ""); r.result()["cacheScope"] != "private" {
		t.Fatalf("%s", r.body)
	}
	if mcp.ValidCacheScope("shared") || !mcp.ValidCacheScope("public") || !mcp.ValidCacheScope("private") {
		t.Error("ValidCacheScope")
	}
}
