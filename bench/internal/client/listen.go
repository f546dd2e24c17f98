package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/luamcp/luamcp/bench/internal/wire"
)

// Listener is a session's GET stream: the server-to-client channel.
type Listener struct {
	conn   *wire.Conn
	events *wire.Events
}

// Listen opens the session's GET stream on a connection of its own. It
// returns once the server has answered 200 with an event stream; some
// servers only send the header with their first event, so callers should
// not rely on Listen returning before the first push.
func (c *Client) Listen(addr string, timeout time.Duration) (*Listener, error) {
	conn := wire.NewConn(addr, timeout)
	req := wire.Request{Method: "GET", Path: c.path, SessionID: c.SessionID, ProtocolVersion: c.Version}
	var resp wire.Response
	body, err := conn.Open(&req, &resp)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("GET: %w", err)
	}
	if resp.Status != 200 || !resp.IsSSE() {
		conn.Close()
		return nil, checkf("GET: HTTP %d, content type %q", resp.Status, resp.ContentType)
	}
	return &Listener{conn: conn, events: wire.NewEvents(body)}, nil
}

// Next returns the next JSON-RPC notification on the stream, waiting until
// deadline. It checks that the event is a notification.
func (l *Listener) Next(deadline time.Time) ([]byte, error) {
	l.conn.SetReadDeadline(deadline)
	data, err := l.events.Next()
	for err == nil && len(bytes.TrimSpace(data)) == 0 {
		// An empty event primes a resumable stream (2025-11-25).
		data, err = l.events.Next()
	}
	if err != nil {
		return nil, err
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, checkf("GET stream event is not JSON: %.200s", data)
	}
	if m.JSONRPC != "2.0" || m.Method == "" || m.ID != nil {
		return nil, checkf("GET stream event is not a notification: %.200s", data)
	}
	return data, nil
}

// Close closes the stream's connection.
func (l *Listener) Close() error { return l.conn.Close() }
