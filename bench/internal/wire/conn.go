// Package wire is a minimal HTTP/1.1 client for the load generator: one
// keep-alive connection per simulated client, requests written in one
// syscall, and no per-request goroutines, so that the generator costs far
// less than the servers it measures. It speaks just enough HTTP for MCP's
// Streamable HTTP transport: Content-Length and chunked bodies, and SSE.
package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strconv"
	"time"
)

// Request is one HTTP request to send.
type Request struct {
	Method string // "POST", "GET" or "DELETE"
	Path   string
	// Accept overrides the default Accept header: "application/json,
	// text/event-stream" for POST, "text/event-stream" for GET.
	Accept          string
	SessionID       string // Mcp-Session-Id, when set
	ProtocolVersion string // MCP-Protocol-Version, when set
	// MCPMethod and MCPName are the Mcp-Method and Mcp-Name headers of the
	// 2026-07-28 era, when set (they repeat the body's method and name).
	MCPMethod, MCPName string
	Body               []byte // POST only; sent as application/json
}

// Response is a received HTTP response. Its Body buffer is reused by the next
// Do on the same Response.
type Response struct {
	Status      int
	ContentType string
	SessionID   string // Mcp-Session-Id header, "" when absent
	Body        []byte

	chunked bool
	length  int64 // -1: until the connection closes
	close   bool
}

// IsSSE reports whether the response body is an event stream.
func (r *Response) IsSSE() bool { return hasPrefixFold(r.ContentType, "text/event-stream") }

// IsJSON reports whether the response body is JSON.
func (r *Response) IsJSON() bool { return hasPrefixFold(r.ContentType, "application/json") }

// Conn is one keep-alive connection to a server. It dials lazily and redials
// after an error or a "Connection: close". A Conn is not safe for concurrent
// use.
type Conn struct {
	addr    string
	timeout time.Duration
	nc      net.Conn
	br      *bufio.Reader
	wbuf    []byte
}

// NewConn returns a connection to addr (host:port) whose requests each
// complete within timeout.
func NewConn(addr string, timeout time.Duration) *Conn {
	return &Conn{addr: addr, timeout: timeout}
}

// Close closes the connection; the Conn may be used again (it redials).
func (c *Conn) Close() error {
	if c.nc == nil {
		return nil
	}
	err := c.nc.Close()
	c.nc, c.br = nil, nil
	return err
}

// Do sends req and reads the whole response into resp.
func (c *Conn) Do(req *Request, resp *Response) error {
	if err := c.send(req, resp); err != nil {
		return err
	}
	if err := c.readBody(resp); err != nil {
		c.Close()
		return fmt.Errorf("%s %s: read body: %w", req.Method, req.Path, err)
	}
	if resp.close {
		c.Close()
	}
	return nil
}

// Open sends req and reads the response header. The body is left to the
// returned reader (an event stream, typically); the connection belongs to it
// until the caller closes the Conn. The deadline is cleared: the caller
// bounds its reads with SetReadDeadline.
func (c *Conn) Open(req *Request, resp *Response) (io.Reader, error) {
	if err := c.send(req, resp); err != nil {
		return nil, err
	}
	c.nc.SetDeadline(time.Time{})
	switch {
	case resp.chunked:
		return httputil.NewChunkedReader(c.br), nil
	case resp.length >= 0:
		return io.LimitReader(c.br, resp.length), nil
	default:
		return c.br, nil
	}
}

// SetReadDeadline bounds the reads of a body returned by Open.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.nc == nil {
		return net.ErrClosed
	}
	return c.nc.SetReadDeadline(t)
}

func (c *Conn) send(req *Request, resp *Response) error {
	if c.nc == nil {
		nc, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return fmt.Errorf("dial %s: %w", c.addr, err)
		}
		c.nc = nc
		c.br = bufio.NewReaderSize(nc, 32<<10)
	}
	c.nc.SetDeadline(time.Now().Add(c.timeout))
	c.wbuf = c.appendRequest(c.wbuf[:0], req)
	if _, err := c.nc.Write(c.wbuf); err != nil {
		c.Close()
		return fmt.Errorf("%s %s: write: %w", req.Method, req.Path, err)
	}
	if err := c.readHeader(resp, req.SessionID); err != nil {
		c.Close()
		return fmt.Errorf("%s %s: read header: %w", req.Method, req.Path, err)
	}
	return nil
}

func (c *Conn) appendRequest(b []byte, req *Request) []byte {
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, req.Path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\n"...)
	accept := req.Accept
	if accept == "" {
		accept = "application/json, text/event-stream"
		if req.Method == "GET" {
			accept = "text/event-stream"
		}
	}
	b = append(b, "Accept: "...)
	b = append(b, accept...)
	b = append(b, "\r\n"...)
	if req.SessionID != "" {
		b = append(b, "Mcp-Session-Id: "...)
		b = append(b, req.SessionID...)
		b = append(b, "\r\n"...)
	}
	if req.ProtocolVersion != "" {
		b = append(b, "MCP-Protocol-Version: "...)
		b = append(b, req.ProtocolVersion...)
		b = append(b, "\r\n"...)
	}
	if req.MCPMethod != "" {
		b = append(b, "Mcp-Method: "...)
		b = append(b, req.MCPMethod...)
		b = append(b, "\r\n"...)
	}
	if req.MCPName != "" {
		b = append(b, "Mcp-Name: "...)
		b = append(b, req.MCPName...)
		b = append(b, "\r\n"...)
	}
	if req.Method == "POST" {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, "\r\n\r\n"...)
		return append(b, req.Body...)
	}
	return append(b, "\r\n"...)
}

var errMalformed = errors.New("malformed response")

// readHeader parses the status line and the headers the harness needs.
// sentSession avoids allocating the session id when the server echoes it.
func (c *Conn) readHeader(resp *Response, sentSession string) error {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	*resp = Response{Status: status, Body: resp.Body[:0], length: -1}
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			return fmt.Errorf("%w: header line %q", errMalformed, line)
		}
		name, val := line[:i], bytes.TrimSpace(line[i+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%w: Content-Length %q", errMalformed, val)
			}
			resp.length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			resp.chunked = bytes.Contains(bytes.ToLower(val), []byte("chunked"))
		case bytes.EqualFold(name, []byte("Content-Type")):
			resp.ContentType = intern(val)
		case bytes.EqualFold(name, []byte("Mcp-Session-Id")):
			if string(val) == sentSession {
				resp.SessionID = sentSession
			} else {
				resp.SessionID = string(val)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			resp.close = bytes.EqualFold(val, []byte("close"))
		}
	}
	if resp.chunked {
		resp.length = -1
	}
	// Statuses that never carry a body.
	if status/100 == 1 || status == 204 || status == 304 {
		resp.length, resp.chunked = 0, false
	}
	return nil
}

func (c *Conn) readBody(resp *Response) error {
	switch {
	case resp.chunked:
		if err := readAll(httputil.NewChunkedReader(c.br), resp); err != nil {
			return err
		}
		return c.skipTrailer()
	case resp.length >= 0:
		n := int(resp.length)
		if cap(resp.Body) < n {
			resp.Body = make([]byte, n)
		}
		resp.Body = resp.Body[:n]
		_, err := io.ReadFull(c.br, resp.Body)
		return err
	default:
		resp.close = true
		return readAll(c.br, resp)
	}
}

// skipTrailer consumes the trailer section after the last chunk, which the
// chunked reader leaves unread, up to and including its blank line.
func (c *Conn) skipTrailer() error {
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}

func readAll(r io.Reader, resp *Response) error {
	b := resp.Body[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			resp.Body = b
			return nil
		}
		if err != nil {
			resp.Body = b
			return err
		}
	}
}

var common = []string{"application/json", "text/event-stream", "text/plain; charset=utf-8"}

// intern avoids an allocation for the content types servers commonly send.
func intern(b []byte) string {
	for _, s := range common {
		if string(b) == s {
			return s
		}
	}
	return string(b)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && bytes.EqualFold([]byte(s[:len(prefix)]), []byte(prefix))
}
