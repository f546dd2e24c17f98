package client

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/luamcp/luamcp/bench/internal/wire"
)

// ModernVersion is the protocol revision of the stateless era: no handshake,
// no session, every request self-describing (its _meta and its Mcp-Method and
// Mcp-Name headers).
const ModernVersion = "2026-07-28"

// modernMeta is the _meta every 2026-07-28 request carries: the version and
// the client's capabilities are required, its info recommended.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + ModernVersion +
	`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"luamcp-bench","version":"1.0.0"}}`

// postModern sends a 2026-07-28 request with its headers; name is the
// Mcp-Name header ("" for methods without one).
func (c *Client) postModern(method, name string, body []byte) (*wire.Response, error) {
	c.req = wire.Request{Method: "POST", Path: c.path, ProtocolVersion: ModernVersion, MCPMethod: method, MCPName: name, Body: body}
	if err := c.conn.Do(&c.req, &c.resp); err != nil {
		return nil, err
	}
	if c.resp.SessionID != "" {
		return nil, checkf("%s: the server minted the session %q in the 2026-07-28 era", method, c.resp.SessionID)
	}
	return &c.resp, nil
}

// Discover opens a 2026-07-28 client: one server/discover, whose answer must
// name 2026-07-28 among its supported versions. The client then sends every
// request in that era.
func (c *Client) Discover() error {
	c.SessionID, c.Version = "", ""
	id := c.id()
	resp, err := c.postModern("server/discover", "", c.request(id, "server/discover", []byte(`{`+modernMeta+`}`)))
	var raw []byte
	if err == nil {
		raw, err = c.response(resp, id, nil)
	}
	if err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcError       `json:"error"`
		Result  *struct {
			ResultType        string          `json:"resultType"`
			SupportedVersions []string        `json:"supportedVersions"`
			Capabilities      json.RawMessage `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return checkf("server/discover: answer is not JSON: %.200s", raw)
	}
	if err := checkEnvelope(r.JSONRPC, r.ID, id, r.Error); err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	switch {
	case r.Result == nil:
		return checkf("server/discover: no result")
	case r.Result.ResultType != "complete":
		return checkf("server/discover: resultType %q", r.Result.ResultType)
	case !slices.Contains(r.Result.SupportedVersions, ModernVersion):
		return checkf("server/discover: supportedVersions %q lack %s", r.Result.SupportedVersions, ModernVersion)
	}
	c.Version = ModernVersion
	return nil
}

// EchoModern calls the echo tool in the 2026-07-28 era with text (which must
// need no JSON escaping) and checks that the answer is that text, with
// resultType "complete".
func (c *Client) EchoModern(text []byte) error {
	const tool = "echo"
	id := c.id()
	p := append(c.params[:0], `{"name":"`+tool+`","arguments":{"text":"`...)
	p = append(p, text...)
	p = append(p, `"},`+modernMeta+`}`...)
	c.params = p
	resp, err := c.postModern("tools/call", tool, c.request(id, "tools/call", p))
	if err == nil {
		var raw []byte
		if raw, err = c.response(resp, id, nil); err == nil {
			err = checkResult(raw, id, text, "complete")
		}
	}
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", tool, err)
	}
	return nil
}
