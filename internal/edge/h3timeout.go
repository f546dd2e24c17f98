package edge

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// HTTP/3 has no ReadHeaderTimeout. http3 stops its idle timer as soon as a
// request stream opens, before the stream's HEADERS frame has arrived, and
// the server's keep-alive pings (quicKeepAlive) keep QUIC's own idle timeout
// from firing: a client that opens a stream and sends one byte would hold its
// connection, and its slot under MaxConnections, for ever.
//
// quic-go (v0.65) offers no hook on a request stream before its headers are
// parsed: http3.Server accepts the streams in its own loop and reads the
// headers before anything of ours runs, so no read deadline can be set on
// them. Accepting the streams ourselves and handing them to
// http3.RawServerConn.HandleRequestStream would lose graceful shutdown:
// RawServerConn does not expose the control stream on which Server.Shutdown
// sends GOAWAY. What http3.Server does show is a connection being served
// (ConnContext) and a request reaching the handler (its context carries what
// ConnContext returned). So a watch per connection bounds the time it goes
// without a request in the handler, as net/http bounds a TCP connection's:
//
//   - a new connection has ReadHeaderTimeout to deliver its first request's
//     headers (net/http: the TLS handshake and the first request's headers,
//     within ReadHeaderTimeout of the accept);
//   - after a request, IdleTimeout + ReadHeaderTimeout (net/http:
//     IdleTimeout for the next request to start, then ReadHeaderTimeout for
//     its headers). http3 itself closes a connection that has no stream for
//     IdleTimeout, so one still open past that has had a stream without its
//     headers for ReadHeaderTimeout. Without an IdleTimeout nothing tells an
//     idle connection from a stalled one: only the first request is bounded.
//
// A request in the handler is never cut, however long it runs (an event
// stream): only the time without one is bounded.

// h3WatchKey is the context key of a connection's *h3Watch.
type h3WatchKey struct{}

// h3Watch closes its connection once it has gone without a request in the
// handler until deadline.
type h3Watch struct {
	conn *quic.Conn
	idle time.Duration // the bound after a request; 0: none

	mu       sync.Mutex
	active   int       // requests in the handler
	deadline time.Time // zero while there is none to enforce
	done     bool      // the connection has closed
	timer    *time.Timer
}

// watchHeaders returns the http3.Server.ConnContext that gives each
// connection an h3Watch, after calling next, if any.
func watchHeaders(next func(context.Context, *quic.Conn) context.Context, header, idle time.Duration) func(context.Context, *quic.Conn) context.Context {
	if idle > 0 {
		idle += header
	}
	return func(ctx context.Context, c *quic.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		w := &h3Watch{conn: c, idle: idle, deadline: time.Now().Add(header)}
		w.mu.Lock()
		w.timer = time.AfterFunc(header, w.expire)
		w.mu.Unlock()
		context.AfterFunc(c.Context(), w.closed)
		return context.WithValue(ctx, h3WatchKey{}, w)
	}
}

// watchRequests tells the watch of each request's connection that the
// request is in the handler, until h returns.
func watchRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w, ok := r.Context().Value(h3WatchKey{}).(*h3Watch); ok {
			w.begin()
			defer w.end()
		}
		h.ServeHTTP(rw, r)
	})
}

func (w *h3Watch) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active++
	w.deadline = time.Time{}
	w.timer.Stop()
}

func (w *h3Watch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active--; w.active == 0 && w.idle > 0 && !w.done {
		w.deadline = time.Now().Add(w.idle)
		w.timer.Reset(w.idle)
	}
}

// expire closes the connection if its deadline has passed. A timer that
// fired as a request began, or before a later Reset, finds the deadline
// cleared or moved and leaves the connection alone.
func (w *h3Watch) expire() {
	w.mu.Lock()
	due := !w.deadline.IsZero() && !time.Now().Before(w.deadline)
	w.mu.Unlock()
	if due {
		w.conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "request header timeout")
	}
}

// closed stops the timer once the connection is gone, so that it does not
// hold the connection until it fires.
func (w *h3Watch) closed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.deadline = time.Time{}
	w.timer.Stop()
}
