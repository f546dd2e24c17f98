package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The raw HTTP client: what the SDKs hide (status codes, headers, SSE framing).

const (
	latestVersion = "2025-11-25"
	acceptBoth    = "application/json, text/event-stream"
)

// message is one JSON-RPC message as the server sent it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// request builds a JSON-RPC request body; id nil makes a notification.
func request(id any, method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	return m
}

func initializeParams(version string) map[string]any {
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "raw-e2e", "version": "1.0.0"},
	}
}

// call is one HTTP exchange: the request to send and what came back.
type call struct {
	Method  string            // HTTP method; "" = POST
	Body    any               // JSON-encoded unless it is a string or []byte
	Session string            // Mcp-Session-Id ("" = none)
	Header  map[string]string // extra headers; a "" value deletes a default
}

// reply is a fully read HTTP response.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
	Events []sseEvent // when the body was an SSE stream
}

func (r *reply) contentType() string {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt
}

// messages decodes the JSON-RPC messages of the reply: the JSON body, or every
// SSE event's data.
func (r *reply) messages(t *testing.T) []message {
	t.Helper()
	switch r.contentType() {
	case "application/json":
		var m message
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("reply body is not one JSON-RPC message: %v\n%s", err, r.Body)
		}
		return []message{m}
	case "text/event-stream":
		var out []message
		for _, e := range r.Events {
			if e.Data == "" {
				continue // priming event or comment
			}
			var m message
			if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
				t.Fatalf("SSE event data is not a JSON-RPC message: %v\n%q", err, e.Data)
			}
			out = append(out, m)
		}
		return out
	}
	t.Fatalf("reply (HTTP %d) has Content-Type %q, want application/json or text/event-stream; body:\n%s",
		r.Status, r.Header.Get("Content-Type"), r.Body)
	return nil
}

// response is the reply's JSON-RPC response (the message with a result or an
// error, after any notifications on an SSE stream).
func (r *reply) response(t *testing.T) message {
	t.Helper()
	for _, m := range r.messages(t) {
		if m.Method == "" {
			return m
		}
	}
	t.Fatalf("reply (HTTP %d) carries no JSON-RPC response:\n%s", r.Status, r.Body)
	return message{}
}

// newRequest builds the HTTP request of c, with the headers a conforming
// client sends.
func (s *testServer) newRequest(ctx context.Context, t *testing.T, url string, c call) *http.Request {
	t.Helper()
	var body io.Reader
	switch b := c.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Errorf("encoding the request body: %v", err)
		}
		body = bytes.NewReader(data)
	}
	method := c.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		panic(err) // a malformed URL or method: a bug in the test itself
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.Session != "" {
		req.Header.Set("Mcp-Session-Id", c.Session)
		req.Header.Set("MCP-Protocol-Version", latestVersion)
	}
	for k, v := range c.Header {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

// do sends c and reads the whole response.
func (s *testServer) do(t *testing.T, url string, c call) *reply {
	t.Helper()
	r, err := s.send(t, url, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is do for any goroutine: it reports failures as an error.
func (s *testServer) send(t *testing.T, url string, c call) (*reply, error) {
	return s.sendWithin(t, url, c, waitLong)
}

// sendWithin is send with a deadline of its own, for the few exchanges that
// take long under the race detector.
func (s *testServer) sendWithin(t *testing.T, url string, c call, d time.Duration) (*reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	resp, err := s.client.Do(s.newRequest(ctx, t, url, c))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.Method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the body: %w (read so far: %q)", c.Method, url, err, data)
	}
	r := &reply{Status: resp.StatusCode, Header: resp.Header, Body: data}
	if r.contentType() == "text/event-stream" {
		if err := scanSSE(bytes.NewReader(data), func(e sseEvent) { r.Events = append(r.Events, e) }); err != nil {
			return nil, fmt.Errorf("%s %s: reading SSE: %w", c.Method, url, err)
		}
	}
	return r, nil
}

// pending is a request sent in the background.
type pending struct {
	c   chan *reply
	err chan error
}

// async sends c in the background; wait collects the reply.
func (s *testServer) async(t *testing.T, url string, c call) *pending {
	p := &pending{c: make(chan *reply, 1), err: make(chan error, 1)}
	go func() {
		r, err := s.send(t, url, c)
		if err != nil {
			p.err <- err
			return
		}
		p.c <- r
	}()
	return p
}

// wait returns the reply, failing after waitLong.
func (p *pending) wait(t *testing.T) *reply {
	t.Helper()
	select {
	case r := <-p.c:
		return r
	case err := <-p.err:
		t.Fatal(err)
	case <-time.After(waitLong + time.Second):
		t.Fatalf("no reply within %v", waitLong)
	}
	return nil
}

// done reports whether the reply has arrived, without waiting.
func (p *pending) done() bool { return len(p.c) > 0 || len(p.err) > 0 }

// rpc posts one request and returns its JSON-RPC response, requiring HTTP 200.
func (s *testServer) rpc(t *testing.T, url, sid string, id any, method string, params any) message {
	t.Helper()
	r := s.do(t, url, call{Body: request(id, method, params), Session: sid})
	if r.Status != http.StatusOK {
		t.Fatalf("%s: HTTP %d, want 200; body:\n%s", method, r.Status, r.Body)
	}
	return r.response(t)
}

// result posts one request and decodes its result into out, failing on a
// JSON-RPC error.
func (s *testServer) result(t *testing.T, url, sid string, method string, params, out any) {
	t.Helper()
	m := s.rpc(t, url, sid, 1, method, params)
	if m.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d %q, want a result", method, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			t.Fatalf("%s: result %s: %v", method, m.Result, err)
		}
	}
}

// initialize opens a session: initialize (HTTP 200 with Mcp-Session-Id) and
// notifications/initialized (202).
func (s *testServer) initialize(t *testing.T, url string) string {
	t.Helper()
	r := s.do(t, url, call{Body: request(0, "initialize", initializeParams(latestVersion))})
	if r.Status != http.StatusOK {
		t.Fatalf("initialize: HTTP %d, want 200; body:\n%s", r.Status, r.Body)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no Mcp-Session-Id header; body:\n%s", r.Body)
	}
	if m := r.response(t); m.Error != nil {
		t.Fatalf("initialize: JSON-RPC error %d %q", m.Error.Code, m.Error.Message)
	}
	n := s.do(t, url, call{Body: request(nil, "notifications/initialized", nil), Session: sid})
	if n.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d, want 202; body:\n%s", n.Status, n.Body)
	}
	return sid
}

// toolResult is the part of a CallToolResult the tests read.
type toolResult struct {
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Data     string          `json:"data"`
		MimeType string          `json:"mimeType"`
		Resource json.RawMessage `json:"resource"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           *bool           `json:"isError"`
}

// callTool calls a tool over raw HTTP and returns its result, failing on a
// JSON-RPC error.
func (s *testServer) callTool(t *testing.T, url, sid, name string, args map[string]any) toolResult {
	t.Helper()
	m := s.rpc(t, url, sid, 1, "tools/call", map[string]any{"name": name, "arguments": args})
	if m.Error != nil {
		t.Fatalf("tools/call %s: JSON-RPC error %d %q, want a result", name, m.Error.Code, m.Error.Message)
	}
	var res toolResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("tools/call %s: result %s: %v", name, m.Result, err)
	}
	return res
}

// text is the single text block of a tool result.
func (r toolResult) text(t *testing.T) string {
	t.Helper()
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("tool result content = %+v, want one text block", r.Content)
	}
	return r.Content[0].Text
}

// wantText checks a successful tool result's single text block.
func (r toolResult) wantText(t *testing.T, want string) {
	t.Helper()
	if got := r.text(t); got != want {
		t.Errorf("tool result text = %q, want %q", got, want)
	}
	if r.IsError == nil || *r.IsError {
		t.Errorf("tool result isError = %v, want present and false", fmtBool(r.IsError))
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "absent"
	}
	return fmt.Sprint(*b)
}

// wantError checks a JSON-RPC error.
func wantError(t *testing.T, m message, code int, msg string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("got result %s, want JSON-RPC error %d %q", m.Result, code, msg)
	}
	if m.Error.Code != code || m.Error.Message != msg {
		t.Errorf("error = %d %q, want %d %q", m.Error.Code, m.Error.Message, code, msg)
	}
	if len(m.Error.Data) != 0 {
		t.Errorf("error has data %s, want none", m.Error.Data)
	}
}

// wantID checks a response's id.
func wantID(t *testing.T, m message, id string) {
	t.Helper()
	if string(m.ID) != id {
		t.Errorf("response id = %s, want %s", m.ID, id)
	}
}

// --- SSE ---------------------------------------------------------------------

// sseEvent is one server-sent event, or a comment line.
type sseEvent struct {
	ID      string
	HasID   bool
	Event   string
	Data    string
	Retry   string
	Comment string // ": keepalive" arrives as Comment "keepalive"
}

func (e sseEvent) message(t *testing.T) message {
	t.Helper()
	var m message
	if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
		t.Fatalf("SSE event data is not a JSON-RPC message: %v\n%q", err, e.Data)
	}
	return m
}

// scanSSE reads events off r into out until r ends; comments are events too.
func scanSSE(r io.Reader, out func(sseEvent)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var ev sseEvent
	var data []string
	dirty := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if dirty {
				ev.Data = strings.Join(data, "\n")
				out(ev)
			}
			ev, data, dirty = sseEvent{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			out(sseEvent{Comment: strings.TrimSpace(strings.TrimPrefix(line, ":"))})
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		dirty = true
		switch field {
		case "id":
			ev.ID, ev.HasID = value, true
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		case "retry":
			ev.Retry = value
		}
	}
	return sc.Err()
}

// stream is an open HTTP response read event by event.
type stream struct {
	t      *testing.T
	Status int
	Header http.Header
	Body   []byte // the whole body when the response is not SSE
	events chan sseEvent
	done   chan struct{} // closed when the body ends
	err    error         // why the body ended (nil = clean EOF); read after done
	cancel context.CancelFunc
}

// open sends c and returns the response as a stream, without waiting for the
// body to end. Closing the stream (or the test's end) drops the connection.
func (s *testServer) open(t *testing.T, url string, c call) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := s.client.Do(s.newRequest(ctx, t, url, c))
	if err != nil {
		cancel()
		t.Fatalf("%s %s: %v", c.Method, url, err)
	}
	st := &stream{t: t, Status: resp.StatusCode, Header: resp.Header, events: make(chan sseEvent, 1024),
		done: make(chan struct{}), cancel: cancel}
	t.Cleanup(st.close)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		st.Body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		close(st.done)
		return st
	}
	go func() {
		defer close(st.done)
		defer resp.Body.Close()
		st.err = scanSSE(resp.Body, func(e sseEvent) { st.events <- e })
	}()
	return st
}

// openGET opens the session's GET channel and requires 200 text/event-stream.
func (s *testServer) openGET(t *testing.T, url, sid string, header map[string]string) *stream {
	t.Helper()
	st := s.open(t, url, call{Method: http.MethodGet, Session: sid, Header: header})
	if st.Status != http.StatusOK {
		t.Fatalf("GET: HTTP %d, want 200; body:\n%s", st.Status, st.Body)
	}
	if ct := st.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GET: Content-Type %q, want text/event-stream", ct)
	}
	return st
}

// close drops the connection.
func (st *stream) close() { st.cancel() }

// next returns the next event that is not a comment, failing after waitLong.
func (st *stream) next() sseEvent {
	st.t.Helper()
	for {
		e := st.nextAny()
		if e.Comment == "" {
			return e
		}
	}
}

// nextAny returns the next event or comment, failing after waitLong.
func (st *stream) nextAny() sseEvent {
	st.t.Helper()
	select {
	case e := <-st.events:
		return e
	case <-st.done:
		select {
		case e := <-st.events:
			return e
		default:
		}
		st.t.Fatalf("the stream ended (err %v) while an event was expected", st.err)
	case <-time.After(waitLong):
		st.t.Fatalf("no SSE event within %v", waitLong)
	}
	return sseEvent{}
}

// nextMessage returns the next event carrying a JSON-RPC message, skipping
// comments and priming events (no data).
func (st *stream) nextMessage() message {
	st.t.Helper()
	for {
		e := st.next()
		if e.Data != "" {
			return e.message(st.t)
		}
	}
}

// ended waits for the body to end, failing after waitLong, and returns the
// events that arrived before the end.
func (st *stream) ended() []sseEvent {
	st.t.Helper()
	select {
	case <-st.done:
	case <-time.After(waitLong):
		st.t.Fatalf("the stream was still open after %v, want it closed by the server", waitLong)
	}
	var rest []sseEvent
	for {
		select {
		case e := <-st.events:
			rest = append(rest, e)
		default:
			return rest
		}
	}
}

// pendingMessages returns the message events (with data) that have already
// arrived, without waiting.
func (st *stream) pendingMessages() []sseEvent {
	var out []sseEvent
	for {
		select {
		case e := <-st.events:
			if e.Data != "" {
				out = append(out, e)
			}
		default:
			return out
		}
	}
}
