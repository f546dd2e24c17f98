package wire

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"
)

// Doer sends a request and reads the whole response: a [Conn] (raw
// HTTP/1.1) or an [HTTPConn] (net/http over HTTP/2, or HTTP/3).
type Doer interface {
	Do(req *Request, resp *Response) error
	Close() error
}

// HTTPConn is one client's connection through an http.RoundTripper: an
// http.Transport that negotiates HTTP/2 over TLS, or quic-go's HTTP/3
// transport. It costs the generator more than a [Conn], which is why the
// HTTP/1.1 scenarios keep [Conn]; give each simulated client its own
// transport so that each has its own connection, as with [Conn].
type HTTPConn struct {
	base    string // "https://host:port"
	rt      http.RoundTripper
	closer  func() // closes rt's connections
	timeout time.Duration
	major   int // the protocol every answer must come over (2 or 3)
}

// NewHTTPConn returns a connection to base through rt, whose answers must
// come over HTTP/major; closer closes rt's connections.
func NewHTTPConn(base string, rt http.RoundTripper, closer func(), major int, timeout time.Duration) *HTTPConn {
	return &HTTPConn{base: base, rt: rt, closer: closer, timeout: timeout, major: major}
}

// Close closes the transport's connections.
func (c *HTTPConn) Close() error {
	c.closer()
	return nil
}

// Do sends req and reads the whole response into resp.
func (c *HTTPConn) Do(req *Request, resp *Response) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.base+req.Path, bytes.NewReader(req.Body))
	if err != nil {
		return err
	}
	h := hr.Header
	accept := req.Accept
	if accept == "" {
		accept = "application/json, text/event-stream"
		if req.Method == "GET" {
			accept = "text/event-stream"
		}
	}
	h["Accept"] = []string{accept}
	if req.Method == "POST" {
		h["Content-Type"] = []string{"application/json"}
	} else {
		hr.Body, hr.ContentLength = http.NoBody, 0
	}
	for k, v := range map[string]string{"Mcp-Session-Id": req.SessionID, "Mcp-Protocol-Version": req.ProtocolVersion,
		"Mcp-Method": req.MCPMethod, "Mcp-Name": req.MCPName} {
		if v != "" {
			h[k] = []string{v}
		}
	}
	hresp, err := c.rt.RoundTrip(hr)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
	}
	defer hresp.Body.Close()
	if hresp.ProtoMajor != c.major {
		return fmt.Errorf("%s %s: answered over %s, want HTTP/%d", req.Method, req.Path, hresp.Proto, c.major)
	}
	resp.Status = hresp.StatusCode
	resp.ContentType = intern([]byte(hresp.Header.Get("Content-Type")))
	resp.SessionID = hresp.Header.Get("Mcp-Session-Id")
	if err := readAll(hresp.Body, resp); err != nil {
		return fmt.Errorf("%s %s: read body: %w", req.Method, req.Path, err)
	}
	return nil
}
