package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// FuzzHandler sends the handler whatever a client can put in one request
// (method, headers, body; in session mode, with a live session's id where
// the input says $SID) and checks what any answer must be: a status of the
// transport's own set, a JSON body that parses, SSE events whose data parse,
// and nothing of Go's (stacks, file paths) in it. A panic fails the run.
func FuzzHandler(f *testing.F) {
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`
	session := "Content-Type: application/json\nAccept: application/json, text/event-stream\nMcp-Session-Id: $SID\nMCP-Protocol-Version: 2025-11-25"
	stateless := "Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: echo"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"f","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, s := range []struct {
		method   byte
		sessions bool
		headers  string
		body     string
	}{
		{0, true, "Content-Type: application/json\nAccept: application/json, text/event-stream", init},
		{0, true, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`},
		{0, true, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":"p"}}}`},
		{0, true, session, `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"mem://greeting"}}`},
		{0, true, session, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":"MTA="}}`},
		{0, true, session, `[{"jsonrpc":"2.0","id":6,"method":"ping"}]`},
		{0, true, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`},
		{0, true, session, `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`},
		{0, true, session, `{"jsonrpc":"2.0","id":"s-1","result":{}}`},
		{1, true, "Accept: text/event-stream\nMcp-Session-Id: $SID\nLast-Event-ID: 3", ""},
		{2, true, "Mcp-Session-Id: $SID", ""},
		{0, false, stateless, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":1},` + meta + `}}`},
		{0, false, stateless, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":"e30.AAAA","inputResponses":{}}}`},
		{0, false, "Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: region\nMcp-Param-Region: =?base64?ZXU=?=\nMcp-Param-N: 4.0\nMcp-Param-Flag: true",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"region","arguments":{"region":"eu","n":4,"opts":{"flag":true}},` + meta + `}}`},
		{0, false, "Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: server/discover",
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`},
		{0, false, "Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: subscriptions/listen",
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"tools/list_changed":true,"resources/updated":["mem://greeting"]},` + meta + `}}`},
		{0, false, "Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2026-07-28\nMcp-Method: resources/read\nMcp-Name: mem://greeting",
			`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"mem://greeting",` + meta + `}}`},
		{0, false, stateless, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},` + meta + `}}`},
		{0, false, "Content-Type: text/plain", `{`},
		{3, false, "Origin: http://evil.example", ""},
	} {
		f.Add(s.method, s.sessions, s.headers, []byte(s.body))
	}
	fs := newFakeServer()
	fs.headerTool = true // a tool whose arguments travel in Mcp-Param-* headers too
	go func() {
		for range fs.closed { // the fake reports closes on a bounded channel
		}
	}()
	routes := map[bool]http.Handler{}
	for _, sessions := range []bool{true, false} {
		h := mcp.NewHandler(fs, mcp.Options{Path: "/mcp", Sessions: sessions, RequestTimeout: time.Second, MaxBodyBytes: 1 << 16}, mcp.NewHub(quietLogger()), quietLogger())
		f.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h.Shutdown(ctx)
		})
		routes[sessions] = h
	}
	// A live session, for the inputs that name $SID; a new one when an
	// input ended it (or none, when the cap refuses one: those inputs then
	// meet an unknown session).
	newSession := func() string {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(init))
		r.RemoteAddr = "127.0.0.1:40000" // httptest's default is not loopback: the gate would refuse it
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		routes[true].ServeHTTP(w, r)
		return w.Header().Get("Mcp-Session-Id") // "" when refused (the session cap)
	}
	sid := newSession()
	if sid == "" {
		f.Fatal("initialize refused")
	}
	methods := []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodOptions, http.MethodPut, "PATCH", "HEAD"}
	statuses := map[int]bool{200: true, 202: true, 204: true, 400: true, 401: true, 403: true, 404: true, 405: true,
		406: true, 413: true, 415: true, 429: true, 503: true}

	f.Fuzz(func(t *testing.T, method byte, sessions bool, headers string, body []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		r := httptest.NewRequestWithContext(ctx, methods[int(method)%len(methods)], "http://127.0.0.1/mcp", bytes.NewReader(body))
		r.RemoteAddr = "127.0.0.1:40000"
		for line := range strings.SplitSeq(headers, "\n") {
			name, value, ok := strings.Cut(line, ":")
			name, value = strings.TrimSpace(name), strings.TrimSpace(strings.ReplaceAll(value, "$SID", sid))
			if !ok || !wireHeader(name, value) {
				continue // net/http refuses such a field before a handler sees it
			}
			r.Header.Add(name, value)
		}
		w := httptest.NewRecorder()
		routes[sessions].ServeHTTP(w, r)
		cancel()
		if sessions && strings.Contains(headers, "$SID") && (w.Code == http.StatusNotFound || r.Method == http.MethodDelete) {
			sid = newSession()
		}

		if !statuses[w.Code] {
			t.Fatalf("status %d for %s %q %q: %s", w.Code, r.Method, headers, body, w.Body)
		}
		out := w.Body.Bytes()
		for _, leak := range []string{"goroutine ", ".go:", "/work/", "panic"} {
			if bytes.Contains(out, []byte(leak)) {
				t.Fatalf("the answer shows %q: %s", leak, out)
			}
		}
		switch ct := w.Header().Get("Content-Type"); {
		case strings.HasPrefix(ct, "application/json"):
			if len(out) > 0 && !json.Valid(out) {
				t.Fatalf("JSON answer does not parse: %q", out)
			}
		case strings.HasPrefix(ct, "text/event-stream"):
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" && !json.Valid([]byte(data)) {
					t.Fatalf("SSE data does not parse: %q", data)
				}
			}
		}
	})
}

// wireHeader reports whether net/http's server would pass a header field
// with this name and value on to a handler: a token name, a value without
// control characters.
func wireHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
