// Package client is the load generator's MCP client: JSON-RPC messages built
// by hand over package wire, and a strict check of every reply. It costs a
// small fraction of what the servers under test spend per request.
package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/luamcp/luamcp/bench/internal/wire"
)

// ProtocolVersion is the version the client asks for in initialize.
const ProtocolVersion = "2025-11-25"

// Versions the client accepts from a server's initialize answer.
var acceptedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// ErrCheck marks a reply that failed a check: a wrong status, shape or value.
var ErrCheck = errors.New("reply check failed")

func checkf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCheck, fmt.Sprintf(format, args...))
}

// Client is one MCP client on one route, over one keep-alive connection
// (raw HTTP/1.1, or HTTP/2 or HTTP/3 through net/http: [NewOver]).
// It is not safe for concurrent use.
type Client struct {
	// SessionID is the session the client belongs to ("" when stateless).
	SessionID string
	// Version is the negotiated protocol version, sent on every request
	// after initialize.
	Version string

	conn   wire.Doer
	path   string
	nextID int64
	req    wire.Request
	resp   wire.Response
	body   []byte // request body
	params []byte // request params
	reply  []byte // a response picked out of an SSE answer
}

// New returns a client of the route at path on the server at addr.
func New(addr, path string, timeout time.Duration) *Client {
	return &Client{conn: wire.NewConn(addr, timeout), path: path}
}

// NewOver returns a client of the route at path over conn.
func NewOver(conn wire.Doer, path string) *Client {
	return &Client{conn: conn, path: path}
}

// Close closes the client's connection (without ending its session).
func (c *Client) Close() error { return c.conn.Close() }

// Conn is the client's connection.
func (c *Client) Conn() wire.Doer { return c.conn }

// post sends a JSON-RPC message and returns the response.
func (c *Client) post(body []byte) (*wire.Response, error) {
	c.req = wire.Request{Method: "POST", Path: c.path, SessionID: c.SessionID, ProtocolVersion: c.Version, Body: body}
	if err := c.conn.Do(&c.req, &c.resp); err != nil {
		return nil, err
	}
	return &c.resp, nil
}

// message is the envelope of any JSON-RPC message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call posts a request with the given id and returns the raw JSON-RPC
// response to it. On an SSE answer, every other message goes to onNote
// (nil: notifications are ignored, requests are an error).
func (c *Client) call(body []byte, id int64, onNote func(msg []byte) error) ([]byte, error) {
	resp, err := c.post(body)
	if err != nil {
		return nil, err
	}
	return c.response(resp, id, onNote)
}

// response returns the raw JSON-RPC response to id in resp, a JSON or SSE
// answer; on SSE, every other message goes to onNote as in call.
func (c *Client) response(resp *wire.Response, id int64, onNote func(msg []byte) error) ([]byte, error) {
	if resp.Status != 200 {
		return nil, checkf("HTTP %d: %.200s", resp.Status, resp.Body)
	}
	if resp.IsJSON() {
		return resp.Body, nil
	}
	if !resp.IsSSE() {
		return nil, checkf("content type %q", resp.ContentType)
	}
	var (
		reply []byte
		fail  error
		m     message
	)
	want := strconv.AppendInt(nil, id, 10)
	wire.EachEvent(resp.Body, func(data []byte) {
		if fail != nil || len(bytes.TrimSpace(data)) == 0 {
			// An empty event primes a resumable stream (2025-11-25).
			return
		}
		m = message{}
		if err := json.Unmarshal(data, &m); err != nil {
			fail = checkf("SSE event is not JSON: %.200s", data)
			return
		}
		switch {
		case m.Method == "" && bytes.Equal(m.ID, want):
			if reply != nil {
				fail = checkf("two responses to id %d", id)
			}
			reply = append(c.reply[:0], data...)
			c.reply = reply
		case m.Method != "" && m.ID == nil:
			if onNote != nil {
				fail = onNote(data)
			}
		default:
			fail = checkf("unexpected message on the call's stream: %.200s", data)
		}
	})
	if fail != nil {
		return nil, fail
	}
	if reply == nil {
		return nil, checkf("SSE answer without a response to id %d", id)
	}
	return reply, nil
}

// checkEnvelope checks a response's jsonrpc, id and error members.
func checkEnvelope(jsonrpc string, id json.RawMessage, want int64, e *rpcError) error {
	if jsonrpc != "2.0" {
		return checkf("jsonrpc %q", jsonrpc)
	}
	if !bytes.Equal(id, strconv.AppendInt(nil, want, 10)) {
		return checkf("id %s, want %d", id, want)
	}
	if e != nil {
		return checkf("JSON-RPC error %d %q", e.Code, e.Message)
	}
	return nil
}

func (c *Client) id() int64 {
	c.nextID++
	return c.nextID
}

// request builds a request body; params is already encoded.
func (c *Client) request(id int64, method string, params []byte) []byte {
	b := append(c.body[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	b = append(b, params...)
	b = append(b, '}')
	c.body = b
	return b
}

var initParams = []byte(`{"protocolVersion":"` + ProtocolVersion + `","capabilities":{},"clientInfo":{"name":"luamcp-bench","version":"1.0.0"}}`)

type initReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *rpcError       `json:"error"`
	Result  *struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
		Capabilities struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"capabilities"`
	} `json:"result"`
}

// Initialize runs the handshake: initialize, then notifications/initialized.
// With session set, the answer must carry an Mcp-Session-Id, which the
// client then sends on every request.
func (c *Client) Initialize(session bool) error {
	c.SessionID, c.Version = "", ""
	id := c.id()
	raw, err := c.call(c.request(id, "initialize", initParams), id, nil)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	sid := c.resp.SessionID
	var r initReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return checkf("initialize: answer is not JSON: %.200s", raw)
	}
	if err := checkEnvelope(r.JSONRPC, r.ID, id, r.Error); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	switch {
	case r.Result == nil:
		return checkf("initialize: no result")
	case !slices.Contains(acceptedVersions, r.Result.ProtocolVersion):
		return checkf("initialize: protocolVersion %q", r.Result.ProtocolVersion)
	case r.Result.ServerInfo.Name == "":
		return checkf("initialize: serverInfo.name missing")
	case r.Result.Capabilities.Tools == nil:
		return checkf("initialize: capabilities.tools missing")
	case session && sid == "":
		return checkf("initialize: no Mcp-Session-Id")
	}
	if session {
		c.SessionID = sid
	}
	c.Version = r.Result.ProtocolVersion
	resp, err := c.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	if resp.Status != 202 {
		return checkf("notifications/initialized: HTTP %d, want 202", resp.Status)
	}
	return nil
}

// Delete ends the session with DELETE; any 2xx passes.
func (c *Client) Delete() error {
	c.req = wire.Request{Method: "DELETE", Path: c.path, SessionID: c.SessionID, ProtocolVersion: c.Version}
	if err := c.conn.Do(&c.req, &c.resp); err != nil {
		return err
	}
	if c.resp.Status/100 != 2 {
		return checkf("DELETE: HTTP %d", c.resp.Status)
	}
	c.SessionID = ""
	return nil
}

type textReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *rpcError       `json:"error"`
	Result  *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool   `json:"isError"`
		ResultType string `json:"resultType"`
	} `json:"result"`
}

// checkText checks a tools/call answer of one text block equal to want.
func checkText(raw []byte, id int64, want []byte) error {
	return checkResult(raw, id, want, "")
}

// checkResult is checkText that also requires the result's resultType,
// unless resultType is "".
func checkResult(raw []byte, id int64, want []byte, resultType string) error {
	var r textReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return checkf("answer is not JSON: %.200s", raw)
	}
	if err := checkEnvelope(r.JSONRPC, r.ID, id, r.Error); err != nil {
		return err
	}
	switch {
	case r.Result == nil:
		return checkf("no result")
	case r.Result.IsError:
		return checkf("isError: %+v", r.Result.Content)
	case len(r.Result.Content) != 1 || r.Result.Content[0].Type != "text":
		return checkf("content %+v, want one text block", r.Result.Content)
	case r.Result.Content[0].Text != string(want):
		return checkf("text %q, want %q", r.Result.Content[0].Text, want)
	case resultType != "" && r.Result.ResultType != resultType:
		return checkf("resultType %q, want %q", r.Result.ResultType, resultType)
	}
	return nil
}

// Echo calls the echo tool with text (which must need no JSON escaping) and
// checks that the answer is that text.
func (c *Client) Echo(text []byte) error { return c.textTool("echo", text) }

// Fetch calls the fetch tool with text (which must need no JSON or URL
// escaping) and checks that the answer is that text, as the upstream sent it
// back.
func (c *Client) Fetch(text []byte) error { return c.textTool("fetch", text) }

// textTool calls tool {"text": text} and checks that it answers text.
func (c *Client) textTool(tool string, text []byte) error {
	id := c.id()
	p := append(c.params[:0], `{"name":"`...)
	p = append(p, tool...)
	p = append(p, `","arguments":{"text":"`...)
	p = append(p, text...)
	p = append(p, `"}}`...)
	c.params = p
	raw, err := c.call(c.request(id, "tools/call", p), id, nil)
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", tool, err)
	}
	if err := checkText(raw, id, text); err != nil {
		return fmt.Errorf("tools/call %s: %w", tool, err)
	}
	return nil
}

// CallText calls a tool with JSON-encodable arguments and checks that it
// answers with the one text block want.
func (c *Client) CallText(name string, args any, want string) error {
	p, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	id := c.id()
	raw, err := c.call(c.request(id, "tools/call", p), id, nil)
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	if err := checkText(raw, id, []byte(want)); err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	return nil
}

// SetLevel sends logging/setLevel and checks the empty result.
func (c *Client) SetLevel(level string) error {
	id := c.id()
	raw, err := c.call(c.request(id, "logging/setLevel", []byte(`{"level":"`+level+`"}`)), id, nil)
	if err != nil {
		return fmt.Errorf("logging/setLevel: %w", err)
	}
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcError       `json:"error"`
		Result  json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return checkf("logging/setLevel: answer is not JSON: %.200s", raw)
	}
	if err := checkEnvelope(r.JSONRPC, r.ID, id, r.Error); err != nil {
		return fmt.Errorf("logging/setLevel: %w", err)
	}
	if r.Result == nil {
		return checkf("logging/setLevel: no result")
	}
	return nil
}

// Status sends a ping on the client's session and returns the HTTP status,
// without checking the answer (for probing expired sessions).
func (c *Client) Status() (int, error) {
	id := c.id()
	b := append(c.body[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	c.body = append(b, `,"method":"ping"}`...)
	resp, err := c.post(c.body)
	if err != nil {
		return 0, err
	}
	return resp.Status, nil
}
