package edge

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// Each open TCP connection costs a file descriptor and about 11 KiB of
// memory before it sends a byte (9,000 connections holding half a request
// line took 100 MB), and net/http accepts as many as come. Past the process's
// open-file limit every accept fails, and so does everything else that opens
// a file: a script's fs and http calls, a reload's read of the script, the
// cluster's connection to NATS. The listener therefore holds at most
// Config.MaxConnections connections at once; past it, Accept waits for one
// to close and new connections wait in the kernel's queue. HTTP/3
// connections share the UDP socket and cost no descriptor, but memory each:
// past the same cap of them a new one is refused (quicLimit).

// unlimitedMaxConnections is the default cap where the process has no
// open-file limit (or one too large to mean anything): about 700 MiB of idle
// connections.
const unlimitedMaxConnections = 1 << 16

// limitListener accepts at most cap(slots) connections at once.
type limitListener struct {
	net.Listener
	slots  chan struct{} // one element per open connection
	closed chan struct{} // closed by Close: a waiting Accept returns
	once   sync.Once
	logger *slog.Logger
	warned time.Time // last "at capacity" warning; Accept's goroutine only
}

// LimitListener returns l holding at most n connections at once: past it,
// Accept waits for one to close. The server's own listeners get theirs from
// Config.MaxConnections; this is for the others (the metrics listener).
func LimitListener(l net.Listener, n int, logger *slog.Logger) net.Listener {
	return newLimitListener(l, n, logger)
}

func newLimitListener(l net.Listener, n int, logger *slog.Logger) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), closed: make(chan struct{}), logger: logger}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if now := time.Now(); now.Sub(l.warned) >= time.Minute {
			l.warned = now
			l.logger.Warn("at the connection cap: new connections wait for open ones to close", "max_connections", cap(l.slots))
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, l: l}, nil
}

// Close closes the listener and ends a waiting Accept.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitConn gives its slot back when it is closed, once.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.l.slots })
	return err
}

// quicLimit caps the established HTTP/3 connections: quic-go asks
// allow before a connection's handshake, and opened counts a connection
// once http3 serves it, until it closes. Handshakes under way are not
// counted (quic-go bounds them itself), so the cap is approximate by those.
type quicLimit struct {
	max    int64
	open   atomic.Int64
	conf   *quic.Config // what allow hands back: the server's own
	logger *slog.Logger
	warned atomic.Int64 // unix seconds of the last "at capacity" warning
}

var errQUICCapacity = errors.New("at the connection cap")

// allow is quic.Config.GetConfigForClient.
func (q *quicLimit) allow(*quic.ClientInfo) (*quic.Config, error) {
	if q.open.Load() >= q.max {
		if now, last := time.Now().Unix(), q.warned.Load(); now-last >= 60 && q.warned.CompareAndSwap(last, now) {
			q.logger.Warn("at the connection cap: new HTTP/3 connections are refused", "max_connections", q.max)
		}
		return nil, errQUICCapacity
	}
	return q.conf, nil
}

// opened is http3.Server.ConnContext.
func (q *quicLimit) opened(ctx context.Context, c *quic.Conn) context.Context {
	q.open.Add(1)
	context.AfterFunc(c.Context(), func() { q.open.Add(-1) })
	return ctx
}
