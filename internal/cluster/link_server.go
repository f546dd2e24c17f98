package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// The owning end of a link ([serverLink]): it serves the requests another
// node forwards, each on a goroutine of its own, as net/http would.

// maxLinkHead bounds a request frame's head (method, URI, host, fields),
// as net/http's default MaxHeaderBytes bounds a request's.
const maxLinkHead = 1 << 20

// SignForwards implements [mcp.LinkCluster].
func (n *Node) SignForwards(sign func(h http.Header, method, path, session, client, proto string)) {
	n.mu.Lock()
	n.sign = sign
	n.mu.Unlock()
}

// ServeLink implements [mcp.LinkCluster].
func (n *Node) ServeLink(w http.ResponseWriter, r *http.Request, l mcp.Link) {
	n.linksIn.Add(1)
	defer n.linksIn.Add(-1)
	serveLink(w, r, l, n.log)
}

// serverLink is a link as the owning node holds it.
type serverLink struct {
	w    *linkWriter
	link mcp.Link
	log  *slog.Logger
	base context.Context // the requests' contexts derive from it
	wg   sync.WaitGroup  // the requests being served

	remote string        // the forwarder's address, until serveLinked reads its client's
	work   chan linkJob  // unbuffered: taken only by an idle worker
	idle   atomic.Int32  // workers waiting on work
	closed chan struct{} // closed when the link ends: idle workers end

	mu       sync.Mutex
	inflight map[uint32]context.CancelFunc
}

func serveLink(w http.ResponseWriter, r *http.Request, l mcp.Link, log *slog.Logger) {
	if r.ProtoMajor != 1 {
		w.WriteHeader(http.StatusHTTPVersionNotSupported) // links are HTTP/1.1 upgrades
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		log.Warn("cluster: a link could not take its connection over", "err", err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Time{})
	_ = conn.SetWriteDeadline(time.Now().Add(linkWriteTimeout))
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + mcp.LinkProtocol + "\r\n\r\n")
	if err := brw.Flush(); err != nil {
		return
	}
	s := &serverLink{w: newLinkWriter(conn), link: l, log: log, base: context.WithoutCancel(r.Context()), inflight: map[uint32]context.CancelFunc{}, work: make(chan linkJob), closed: make(chan struct{}), remote: conn.RemoteAddr().String()}
	// Done stops the reading (a read deadline in the past); the requests in
	// flight finish and their answers go out before the link closes.
	stopWatch := make(chan struct{})
	go func() {
		select {
		case <-l.Done:
			// The forwarder sends no more, and what it sent before it
			// read this is not read: those requests fail when the link
			// closes (their sessions end with the route anyway).
			_ = s.w.send(time.Time{}, func(b []byte) []byte { return appendFrame(b, frameGoAway, 0) })
			_ = conn.SetReadDeadline(time.Now())
		case <-stopWatch:
		}
	}()
	err = s.read(bufio.NewReaderSize(brw.Reader, linkReaderSize))
	close(stopWatch)
	drained := errors.Is(err, errLinkDrained)
	if !drained {
		s.cancelAll() // the forwarder is gone: nobody reads the answers
	}
	s.wg.Wait()
	close(s.closed)
	s.w.close(errLinkClosed, drained)
}

// errLinkDrained ends the reading of a link whose route shuts down.
var errLinkDrained = errors.New("cluster: the route shuts down")

// read serves the frames the forwarder sends until the link ends.
func (s *serverLink) read(br *bufio.Reader) error {
	max := maxLinkHead + s.link.MaxRequest
	if s.link.MaxRequest <= 0 || max > 1<<30 {
		max = 1 << 30 // an int on 32-bit platforms too
	}
	for {
		typ, id, payload, err := readFrame(br, int(max))
		if err != nil {
			select {
			case <-s.link.Done:
				return errLinkDrained
			default:
			}
			return err
		}
		switch typ {
		case frameRequest:
			x, ok := s.request(id, payload)
			if !ok {
				return fmt.Errorf("cluster: a malformed request frame on a link")
			}
			s.wg.Add(1)
			s.dispatch(linkJob{id, x})
		case framePing:
			_ = s.w.sendControl(framePong, 0) // the reader must not wait for room
		case frameCancel:
			s.mu.Lock()
			cancel := s.inflight[id]
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		default:
			return fmt.Errorf("cluster: a link frame of unknown type %d", typ)
		}
	}
}

// request decodes a frameRequest.
func (s *serverLink) request(id uint32, payload []byte) (*linkExchange, bool) {
	f := fieldReader{s: payloadString(payload)}
	method := f.string8()
	uri := f.string16()
	host := f.string16()
	header := f.fields()
	if f.bad || method == "" || !strings.HasPrefix(uri, "/") { // origin-form, as the forwarder writes it
		return nil, false
	}
	body := payload[len(payload)-len(f.s):]
	ctx, cancel := context.WithCancel(s.base)
	s.mu.Lock()
	if _, dup := s.inflight[id]; dup {
		s.mu.Unlock()
		cancel()
		return nil, false
	}
	s.inflight[id] = cancel
	s.mu.Unlock()
	// NewRequestWithContext makes the one Request (a literal would be
	// copied by WithContext), and parses the URI.
	req, err := http.NewRequestWithContext(ctx, method, uri, nil)
	if err != nil {
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
		cancel()
		return nil, false
	}
	req.RequestURI, req.Host, req.Header = uri, host, header
	req.ContentLength = int64(len(body))
	req.RemoteAddr = s.remote
	x := &linkExchange{req: req}
	req.Body = http.NoBody // a server's request always has a body
	if len(body) > 0 {
		x.body.Reset(body)
		req.Body = &x.body
	}
	return x, true
}

// linkExchange is one request a link carries and its answer, in one
// allocation.
type linkExchange struct {
	req  *http.Request
	body linkBody
	rw   linkResponse
}

// linkBody is a request body in memory.
type linkBody struct{ bytes.Reader }

func (*linkBody) Close() error { return nil }

// linkJob is a request for a worker.
type linkJob struct {
	id uint32
	x  *linkExchange
}

// maxIdleWorkers bounds the goroutines a link keeps waiting for requests;
// workerIdle is how long one waits before it ends.
const (
	maxIdleWorkers = 64
	workerIdle     = 10 * time.Second
)

// dispatch hands j to an idle worker, or starts one. Workers are kept
// because a fresh goroutine grows its stack (copying it) during each call
// through mcp and Lua; net/http serves a connection's requests on one
// goroutine for the same reason.
func (s *serverLink) dispatch(j linkJob) {
	select {
	case s.work <- j:
	default:
		go s.worker(j)
	}
}

// worker serves j, then the requests dispatch hands it, until it has idled
// workerIdle, the link closed, or enough others idle.
func (s *serverLink) worker(j linkJob) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		s.serve(j.id, j.x)
		if s.idle.Add(1) > maxIdleWorkers {
			s.idle.Add(-1)
			return
		}
		t.Reset(workerIdle)
		select {
		case j = <-s.work:
			s.idle.Add(-1)
		case <-t.C:
			s.idle.Add(-1)
			return
		case <-s.closed:
			s.idle.Add(-1)
			return
		}
	}
}

// serve runs the route on one request, then ends its answer.
func (s *serverLink) serve(id uint32, x *linkExchange) {
	rw := &x.rw
	*rw = linkResponse{s: s, id: id, header: http.Header{}}
	rw.buf = rw.inline[:0]
	defer func() {
		aborted := false
		if v := recover(); v != nil {
			aborted = true
			if v != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				s.log.Error("cluster: panic serving a linked request", "panic", fmt.Sprint(v), "stack", string(buf))
			}
		}
		rw.end(aborted)
		s.mu.Lock()
		cancel := s.inflight[id]
		delete(s.inflight, id)
		s.mu.Unlock()
		cancel()
		s.wg.Done()
	}()
	s.link.Serve(rw, x.req)
}

// cancelAll cancels the requests in flight.
func (s *serverLink) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.inflight {
		cancel()
	}
}

// linkResponse is the http.ResponseWriter of a request a link carried: what
// the handler writes is sent as frames at each flush and when it returns.
type linkResponse struct {
	s      *serverLink
	id     uint32
	header http.Header

	mu       sync.Mutex
	status   int       // 0 until the handler writes a status or a byte
	headSent bool      // the frameHead is out: status and header are fixed
	ended    bool      // the frameEnd is out: writes fail
	buf      []byte    // body bytes not yet sent; first in inline
	inline   [512]byte // a small answer's body
	deadline time.Time // of sends waiting for room on the link
}

func (rw *linkResponse) Header() http.Header { return rw.header }

func (rw *linkResponse) WriteHeader(code int) {
	rw.mu.Lock()
	if rw.status == 0 && code >= 200 {
		rw.status = code
	}
	rw.mu.Unlock()
}

func (rw *linkResponse) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.ended {
		return 0, errLinkClosed
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	rw.buf = append(rw.buf, p...)
	if len(rw.buf) >= maxDataFrame {
		if err := rw.sendLocked(false, false); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// FlushError is what [http.ResponseController.Flush] calls.
func (rw *linkResponse) FlushError() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.ended {
		return errLinkClosed
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	return rw.sendLocked(false, false)
}

// Flush implements [http.Flusher].
func (rw *linkResponse) Flush() { _ = rw.FlushError() }

// SetWriteDeadline bounds the wait for room on a backed-up link, as a
// connection's write deadline bounds a write ([http.ResponseController]).
func (rw *linkResponse) SetWriteDeadline(t time.Time) error {
	rw.mu.Lock()
	rw.deadline = t
	rw.mu.Unlock()
	return nil
}

// SetReadDeadline is a no-op: the request's body is in memory. (Without
// it, mcp's body read would get http.ErrNotSupported, an allocation.)
func (rw *linkResponse) SetReadDeadline(time.Time) error { return nil }

// EndResponse ends the answer before the handler returns (mcp's inline
// calls): the forwarder completes its client's response.
func (rw *linkResponse) EndResponse() {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if !rw.ended {
		_ = rw.sendLocked(true, false)
	}
}

// end ends the answer when the handler returned (or panicked: aborted).
func (rw *linkResponse) end(aborted bool) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.ended {
		return
	}
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	if !rw.headSent && !aborted {
		if _, ok := rw.header["Content-Length"]; !ok {
			rw.header["Content-Length"] = lengthValue(len(rw.buf))
		}
	}
	if err := rw.sendLocked(true, aborted); err != nil && !errors.Is(err, errLinkClosed) {
		rw.s.log.Debug("cluster: an answer on a link was lost", "err", err)
	}
}

// sendLocked sends the head (once), the buffered body and, when end, the
// frameEnd, in one batch.
func (rw *linkResponse) sendLocked(end, aborted bool) error {
	if rw.headSent && len(rw.buf) == 0 && !end {
		return nil
	}
	if end {
		rw.ended = true
	}
	err := rw.s.w.send(rw.deadline, func(b []byte) []byte {
		if end && !aborted && !rw.headSent && len(rw.buf) <= maxDataFrame {
			return appendHeadFrame(b, frameAnswer, rw.id, rw.status, rw.header, rw.buf)
		}
		if !rw.headSent {
			b = appendHeadFrame(b, frameHead, rw.id, rw.status, rw.header, nil)
		}
		for rest := rw.buf; len(rest) > 0; {
			n := min(len(rest), maxDataFrame)
			b = appendFrame(b, frameData, rw.id, rest[:n]...)
			rest = rest[n:]
		}
		if end {
			code := endComplete
			if aborted {
				code = endAborted
			}
			b = appendFrame(b, frameEnd, rw.id, code)
		}
		return b
	})
	rw.headSent = true
	rw.buf = rw.buf[:0]
	if cap(rw.buf) > 4*maxDataFrame {
		rw.buf = nil // a long answer's buffer goes with its burst
	}
	if err != nil {
		rw.ended = true
	}
	return err
}

// appendHeadFrame appends a frameHead or a frameAnswer (typ): the status,
// the end-to-end fields of h, and the body.
func appendHeadFrame(b []byte, typ byte, id uint32, status int, h http.Header, body []byte) []byte {
	start := len(b)
	b = appendFrameHeader(b, typ, id)
	b = append(b, byte(status>>8), byte(status))
	count := len(b)
	b = append(b, 0, 0)
	n := 0
	for name, values := range h {
		if hopByHop(name) || !validName(name) || len(name) > 0xffff {
			continue
		}
		for _, v := range values {
			if !validValue(v) {
				continue
			}
			b = appendString16(b, name)
			b = appendString32(b, v)
			n++
		}
	}
	b[count], b[count+1] = byte(n>>8), byte(n)
	b = append(b, body...)
	return endFrame(b, start)
}
