package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// The forwarding end of a link ([clientLink]) and how a peer picks one.

// SignFunc signs a forward: it sets the forward headers on h for a request
// with these fields ([mcp.LinkCluster.SignForwards]).
type SignFunc func(h http.Header, method, path, session, client, proto string)

const (
	// maxStreamBuffered bounds what the forwarder holds of one answer that
	// its client does not take (it reads slower than the owner writes):
	// past it the stream is cancelled, rather than holding the link's reader
	// or growing without bound.
	maxStreamBuffered = 8 << 20
	// noLinkRetry is how long a node that refused a link (a luamcp without
	// links, or a proxy in between) is forwarded to over HTTP/1.1 before
	// a link is tried again.
	noLinkRetry = time.Minute
)

// errNoLink is a link the node refused, or a request a link cannot carry:
// forward it over HTTP/1.1.
var errNoLink = errors.New("cluster: no link to the node")

// errPeerClosed is a forward on a peer that was closed (the node forgotten:
// it left, its entry expired, or another request to it failed) before the
// request was handed to a link: nothing of it was sent, and the caller looks
// the node up again rather than answering 404 for a node that may be there.
var errPeerClosed = errors.New("cluster: the node was forgotten before the request was sent")

// errStopped ends a forward that this node's shutdown cut before an answer.
var errStopped = errors.New("cluster: this node shuts down")

// errStreamOverflow ends a stream whose client fell maxStreamBuffered
// behind.
var errStreamOverflow = errors.New("cluster: the client fell too far behind a forwarded answer")

// linkSlot is the link to a node for one route path, or the dial of it in
// progress.
type linkSlot struct {
	ready chan struct{} // closed when the dial ended
	l     *clientLink   // set before ready is closed; nil when the dial failed
	err   error
}

// clientLink is a link as the forwarding node holds it.
type clientLink struct {
	w *linkWriter

	mu      sync.Mutex
	streams map[uint32]*linkStream // the requests waiting for (the rest of) an answer
	next    uint32                 // the last stream id used
	err     error                  // set once the link failed: no new stream
	opened  *atomic.Int64          // the node's count of open links; nil in tests
	// retired is set when the link takes no new request (retire): it
	// closes once the last answer it carries is in.
	retired bool

	// frames counts the frames read (watch compares it between ticks);
	// done is closed when the link fails.
	frames atomic.Uint64
	done   chan struct{}
}

// pingEvery is how often a link with answers awaited checks that frames
// arrive: after a silent interval it pings the owner, and after a second
// one without any frame it fails the link. An owner whose machine vanished
// without a reset would otherwise hold those requests until TCP keep-alive
// noticed, minutes later (a tool call may run long: silence alone is not
// a failure). 15 s, or pingOverride.
func pingEvery() time.Duration {
	if d := pingOverride.Load(); d != 0 {
		return time.Duration(d)
	}
	return 15 * time.Second
}

// pingOverride, when not 0, is pingEvery (tests shorten it; atomic, as the
// links of earlier tests may still read it).
var pingOverride atomic.Int64

// watch pings the owner while answers are awaited and nothing arrives,
// and fails the link when a ping goes unanswered for pingEvery.
func (l *clientLink) watch() {
	every := pingEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	seen, pinged := l.frames.Load(), false
	for {
		select {
		case <-t.C:
		case <-l.done:
			return
		}
		n := l.frames.Load()
		l.mu.Lock()
		waiting := len(l.streams) > 0
		l.mu.Unlock()
		switch {
		case n != seen || !waiting:
			seen, pinged = n, false
		case pinged:
			l.fail(fmt.Errorf("cluster: the node did not answer a ping on the link within %v", every))
			return
		default:
			pinged = true
			_ = l.w.send(time.Time{}, func(b []byte) []byte { return appendFrame(b, framePing, 0) })
		}
	}
}

// linkStream is one forwarded request's answer as it arrives.
type linkStream struct {
	id    uint32
	ready chan struct{} // capacity 1: frames or err arrived

	mu     sync.Mutex
	frames []linkFrame  // arrived, not yet taken; first in inline
	inline [3]linkFrame // a whole answer's head, data and end
	bytes  int          // their payloads' size
	err    error        // the link failed, or the client fell behind
	ended  bool         // frameEnd arrived: nothing follows
}

type linkFrame struct {
	typ     byte
	payload []byte
}

// link returns the link to the node for path, dialling it if there is none
// or the last one failed. errNoLink: the node refused links lately.
func (p *peer) link(ctx context.Context, path string) (*clientLink, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errPeerClosed
		}
		if time.Now().Before(p.noLinkUntil) {
			p.mu.Unlock()
			return nil, errNoLink
		}
		s := p.links[path]
		if s == nil {
			s = &linkSlot{ready: make(chan struct{})}
			if p.links == nil {
				p.links = map[string]*linkSlot{}
			}
			p.links[path] = s
			p.mu.Unlock()
			// The link serves every request to the node: its dial does not
			// end with this request's client (dialTimeout bounds it).
			s.l, s.err = p.dialLink(context.WithoutCancel(ctx), path)
			close(s.ready)
			if s.err != nil {
				p.mu.Lock()
				if p.links[path] == s {
					delete(p.links, path)
				}
				if errors.Is(s.err, errNoLink) {
					p.noLinkUntil = time.Now().Add(noLinkRetry)
				}
				p.mu.Unlock()
				if errors.Is(s.err, errNoLink) {
					p.logger().Warn("cluster: a node refused a link: its requests go over HTTP/1.1 for a while (an older luamcp, or a proxy between the nodes?)",
						"node", p.node, "path", path, "retry", noLinkRetry, "err", s.err)
				}
			} else {
				p.mu.Lock()
				orphan := p.closed || p.links[path] != s
				p.mu.Unlock()
				if orphan {
					// The peer was closed (the node forgotten) while the link
					// was dialled: no slot holds it, so nothing else would
					// close it. It closes after its last answer.
					s.l.retire()
				} else {
					p.logger().Info("cluster: link opened", "node", p.node, "path", path)
				}
			}
			return s.l, s.err
		}
		p.mu.Unlock()
		select {
		case <-s.ready:
		default: // being dialled: wait (ctx.Done makes a channel: not on the common path)
			select {
			case <-s.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if s.l != nil && s.l.alive() {
			return s.l, nil
		}
		if s.err != nil {
			return nil, s.err
		}
		p.mu.Lock()
		if p.links[path] == s {
			delete(p.links, path) // failed since: dial another
		}
		p.mu.Unlock()
	}
}

// dialLink opens a link for path: a signed upgrade request, answered 101.
func (p *peer) dialLink(ctx context.Context, path string) (*clientLink, error) {
	if p.sign == nil {
		return nil, errNoLink
	}
	c, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	p.sign(h, http.MethodGet, path, "", "", "http")
	b := make([]byte, 0, 512)
	b = append(b, "GET "...)
	b = append(b, p.prefix...)
	b = append(b, (&url.URL{Path: path}).EscapedPath()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, p.addr...)
	b = append(b, "\r\nConnection: Upgrade\r\nUpgrade: "...)
	b = append(b, mcp.LinkProtocol...)
	b = append(b, "\r\n"...)
	for name, values := range h {
		for _, v := range values {
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	defer stop()
	_ = c.nc.SetDeadline(time.Now().Add(dialTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.nc.Close()
		return nil, err
	}
	var head respHead
	total := 0
	line, err := readLine(c.br, &total)
	if err == nil {
		err = head.parseStatus(line)
	}
	for err == nil {
		if line, err = readLine(c.br, &total); err == nil && len(line) == 0 {
			break
		}
	}
	if err != nil {
		c.nc.Close()
		return nil, fmt.Errorf("cluster: opening a link: %w", err)
	}
	if head.status != http.StatusSwitchingProtocols {
		c.nc.Close()
		return nil, fmt.Errorf("%w: it answered %d", errNoLink, head.status)
	}
	if !stop() {
		return nil, ctx.Err() // closed meanwhile
	}
	_ = c.nc.SetDeadline(time.Time{})
	l := &clientLink{w: newLinkWriter(c.nc), streams: map[uint32]*linkStream{}, opened: p.linksOpen, done: make(chan struct{})}
	if l.opened != nil {
		l.opened.Add(1)
	}
	go l.read(bufio.NewReaderSize(c.br, linkReaderSize))
	go l.watch()
	return l, nil
}

func (p *peer) logger() *slog.Logger {
	if p.log == nil {
		return slog.Default()
	}
	return p.log
}

// closeLinksLocked retires every link to the node: the requests in flight
// on them are answered, then they close.
func (p *peer) closeLinksLocked() {
	for path, s := range p.links {
		select {
		case <-s.ready:
			if s.l != nil {
				s.l.retire()
			}
		default: // its dialler finds p closed next time
		}
		delete(p.links, path)
	}
}

func (l *clientLink) alive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err == nil && !l.retired
}

// retire stops new requests on the link and closes it once the answers in
// flight are in: the owner said it goes away, or this node forgot the owner
// (one failed request must not fail the others on the link).
func (l *clientLink) retire() {
	l.mu.Lock()
	l.retired = true
	idle := len(l.streams) == 0
	l.mu.Unlock()
	if idle {
		l.fail(errLinkClosed)
	}
}

// fail ends the link: every waiting stream gets err.
func (l *clientLink) fail(err error) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	streams := l.streams
	l.streams = nil
	l.mu.Unlock()
	close(l.done)
	if l.opened != nil {
		l.opened.Add(-1)
	}
	go l.w.close(err, false) // waits for the writer, which may sit in a write
	l.w.conn.Close()
	for _, st := range streams {
		st.fail(err)
	}
}

// read delivers the frames the owner sends to their streams.
func (l *clientLink) read(br *bufio.Reader) {
	for {
		typ, id, payload, err := readFrame(br, maxAnswerFrame)
		if err != nil {
			l.fail(fmt.Errorf("cluster: reading a link: %w", err))
			return
		}
		l.frames.Add(1)
		if typ == framePong {
			continue // watch saw the frame count move
		}
		if typ == frameGoAway {
			l.retire()
			continue
		}
		if typ != frameHead && typ != frameData && typ != frameEnd && typ != frameAnswer {
			l.fail(fmt.Errorf("cluster: a link frame of unknown type %d", typ))
			return
		}
		l.mu.Lock()
		st := l.streams[id]
		last := false
		if st != nil && (typ == frameEnd || typ == frameAnswer) {
			delete(l.streams, id)
			last = l.retired && len(l.streams) == 0
		}
		l.mu.Unlock()
		if st == nil {
			continue // cancelled: the owner had sent these before it knew
		}
		if !st.deliver(linkFrame{typ, payload}) {
			l.cancel(st) // its client fell too far behind
		}
		if last {
			l.fail(errLinkClosed) // retired, and its last answer is in
			return
		}
	}
}

// deliver queues f for the stream's forward; false when the stream holds
// more than maxStreamBuffered, which fails it.
func (st *linkStream) deliver(f linkFrame) bool {
	st.mu.Lock()
	ok := st.err == nil
	if ok {
		st.frames = append(st.frames, f)
		st.bytes += len(f.payload)
		st.ended = f.typ == frameEnd || f.typ == frameAnswer
		if st.bytes > maxStreamBuffered && !st.ended {
			st.err, ok = errStreamOverflow, false
		}
	}
	st.mu.Unlock()
	st.signal()
	return ok
}

func (st *linkStream) fail(err error) {
	st.mu.Lock()
	if st.err == nil && !st.ended {
		st.err = err
	}
	st.mu.Unlock()
	st.signal()
}

func (st *linkStream) signal() {
	select {
	case st.ready <- struct{}{}:
	default:
	}
}

// take returns the frames that arrived, and the stream's error once they
// are all taken.
func (st *linkStream) take(into []linkFrame) ([]linkFrame, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	into = append(into, st.frames...)
	clear(st.frames)
	st.frames = st.frames[:0]
	st.bytes = 0
	return into, st.err
}

// open registers a new stream.
func (l *clientLink) open() (*linkStream, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	if l.retired {
		return nil, errLinkClosed
	}
	l.next++
	st := &linkStream{id: l.next, ready: make(chan struct{}, 1)}
	st.frames = st.inline[:0]
	l.streams[st.id] = st
	return st, nil
}

// cancel drops st and tells the owner, unless its answer is complete.
func (l *clientLink) cancel(st *linkStream) {
	l.mu.Lock()
	_, live := l.streams[st.id]
	delete(l.streams, st.id)
	last := live && l.retired && len(l.streams) == 0
	l.mu.Unlock()
	if live {
		_ = l.w.sendControl(frameCancel, st.id) // the reader cancels too: it must not wait for room
	}
	if last {
		l.fail(errLinkClosed) // closing the connection cancels on the owner too
	}
}

// maxLinkBody bounds the body a link carries in one frame, whose length
// field is 32 bits: mcp's handler forwards only bodies it read within
// MaxBodyBytes, far below; a larger one must not wrap the length and leave
// its tail to be read as frames.
const maxLinkBody = 1 << 30

// requestFits reports whether a link can carry r's head: its strings and
// field count fit the frame's length fields, its body the frame. (Its bytes
// were checked by net/http when the request arrived; unlike a request
// written as HTTP/1.1 text, a frame cannot be broken by what its strings
// hold.)
func requestFits(r *http.Request, uri string) bool {
	if len(r.Method) > 0xff || len(uri) > 0xffff || len(r.Host) > 0xffff ||
		(hasBody(r) && (r.ContentLength < 0 || r.ContentLength > maxLinkBody)) {
		return false
	}
	n := 0
	head := 1 + len(r.Method) + 2 + len(uri) + 2 + len(r.Host) + 2 // as appendRequestFrame writes it
	for name, values := range r.Header {
		if len(name) > 0xffff {
			return false
		}
		n += len(values)
		for _, v := range values {
			head += 2 + len(name) + 4 + len(v)
		}
	}
	// The owner refuses a longer head by failing the link, with every
	// request it carries: net/http let this one in (its header bound is
	// counted otherwise), so it goes over HTTP/1.1 instead.
	return n <= 0xffff && head <= maxLinkHead
}

func hasBody(r *http.Request) bool { return r.Body != nil && r.Body != http.NoBody }

// appendRequestFrame appends r as a frameRequest of stream id, with its
// body, of r.ContentLength bytes in memory (mcp's handler read it).
func appendRequestFrame(b []byte, id uint32, r *http.Request, uri string) ([]byte, error) {
	start := len(b)
	b = appendFrameHeader(b, frameRequest, id)
	b = append(b, byte(len(r.Method)))
	b = append(b, r.Method...)
	b = appendString16(b, uri)
	b = appendString16(b, r.Host)
	count := len(b)
	b = append(b, 0, 0)
	n := 0
	conn := r.Header["Connection"]
	for name, values := range r.Header {
		if !endToEnd(name, conn) {
			continue
		}
		for _, v := range values {
			b = appendString16(b, name)
			b = appendString32(b, v)
			n++
		}
	}
	binary.BigEndian.PutUint16(b[count:], uint16(n))
	if hasBody(r) && r.ContentLength > 0 {
		k := len(b)
		b = append(b, make([]byte, r.ContentLength)...)
		if _, err := io.ReadFull(r.Body, b[k:]); err != nil {
			return b[:start], fmt.Errorf("cluster: reading the request body: %w", err)
		}
	}
	return endFrame(b, start), nil
}

// forwardLinked sends r on a link to the node and copies the answer to w.
// handled is false when no link can carry it (errNoLink): the caller
// forwards it over HTTP/1.1. Errors are as [peer.forward]'s.
func (p *peer) forwardLinked(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) (handled bool, err error) {
	uri := p.prefix + r.URL.RequestURI()
	if !requestFits(r, uri) {
		return false, nil
	}
	ctx := r.Context()
	for attempt := 0; ; attempt++ {
		l, err := p.link(ctx, r.URL.Path)
		if errors.Is(err, errNoLink) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		st, err := l.open()
		var bodyErr error
		if err == nil {
			// The body goes straight from memory into the link's buffer. Once
			// it is read the request is sent: it is not sent again.
			err = l.w.send(time.Time{}, func(b []byte) []byte {
				b, bodyErr = appendRequestFrame(b, st.id, r, uri)
				return b
			})
			if err != nil {
				l.fail(err)
			}
		}
		if bodyErr != nil {
			l.cancel(st)
			return true, bodyErr
		}
		if err != nil {
			if attempt == 0 && ctx.Err() == nil {
				continue // the link had failed: nothing of r was sent on it
			}
			if errors.Is(err, errLinkClosed) {
				err = fmt.Errorf("%w: %w", errPeerClosed, err) // retired again: nothing of r was sent
			}
			return true, err
		}
		return true, l.copyAnswer(w, r, st, stop)
	}
}

// copyAnswer copies the answer of st to w as its frames arrive.
func (l *clientLink) copyAnswer(w http.ResponseWriter, r *http.Request, st *linkStream, stop <-chan struct{}) error {
	ctx := r.Context()
	var frames [8]linkFrame
	headDone := false
	var rc *http.ResponseController
	for {
		select {
		case <-st.ready:
		case <-ctx.Done():
			l.cancel(st)
			return nil // the client left
		case <-stop:
			l.cancel(st)
			if !headDone {
				return errStopped
			}
			return nil // this node shuts down: the answer ends here
		}
		got, err := st.take(frames[:0])
		for i, f := range got {
			switch f.typ {
			case frameAnswer:
				var body []byte
				ok := !headDone
				if ok {
					body, ok = copyHead(w, f.payload)
				}
				if !ok {
					l.fail(errors.New("cluster: a malformed answer on a link"))
					return abort(r, headDone, errors.New("cluster: malformed answer"))
				}
				if len(body) > 0 {
					w.Write(body) // a failure is the client's leaving: the answer is complete here
				}
				return nil
			case frameHead:
				if headDone {
					l.fail(errors.New("cluster: a second answer head on a link"))
					return abort(r, headDone, errors.New("cluster: malformed answer head"))
				}
				body, ok := copyHead(w, f.payload)
				headDone = ok // the status is written
				if !ok || len(body) > 0 {
					l.fail(errors.New("cluster: a malformed answer head on a link"))
					return abort(r, headDone, errors.New("cluster: malformed answer head"))
				}
			case frameData:
				if !headDone {
					l.fail(errors.New("cluster: answer data before its head on a link"))
					return errors.New("cluster: answer data before its head")
				}
				if _, werr := w.Write(f.payload); werr != nil {
					l.cancel(st)
					return nil // the client left
				}
			case frameEnd:
				if !headDone {
					return errors.New("cluster: an answer without a head")
				}
				if len(f.payload) == 1 && f.payload[0] == endAborted {
					return abort(r, true, errors.New("cluster: the owner cut its answer short"))
				}
				return nil
			}
			got[i] = linkFrame{}
		}
		if err != nil {
			return abort(r, headDone, err)
		}
		if headDone && len(got) > 0 {
			if rc == nil {
				rc = http.NewResponseController(w)
			}
			if flush(rc) != nil {
				l.cancel(st)
				return nil
			}
		}
	}
}

// abort ends a forward whose answer failed: an error when nothing was
// written to the client, else its response is aborted, so that a truncated
// answer does not look complete (as [peer.forward]).
func abort(r *http.Request, headDone bool, err error) error {
	if !headDone || r.Context().Err() != nil || r.Context().Value(http.ServerContextKey) == nil {
		return err
	}
	panic(http.ErrAbortHandler)
}

// copyHead decodes the head of a frameHead or frameAnswer onto w and writes
// the status; body is what follows the head (a frameAnswer's body).
func copyHead(w http.ResponseWriter, payload []byte) (body []byte, ok bool) {
	f := fieldReader{s: payloadString(payload)}
	status := f.uint16()
	if status < 200 || status > 999 {
		return nil, false
	}
	f.fieldsInto(w.Header(), f.uint16())
	if f.bad {
		return nil, false
	}
	w.WriteHeader(status)
	return payload[len(payload)-len(f.s):], true
}
