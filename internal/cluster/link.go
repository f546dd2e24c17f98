package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"
)

// A link carries the POSTs and DELETEs one node forwards to another for one
// route, many at once, on one connection: it is opened as an HTTP/1.1
// upgrade to [mcp.LinkProtocol] on the route's path, signed as a forward is,
// and then both ends exchange frames. Requests and answers are framed in
// binary rather than HTTP/1.1 and the frames waiting at either end go in one
// write: on a busy pair of nodes a batch of answers costs one system call
// instead of one each, and the owner parses no HTTP. The forwarded
// tools/call cost 2.3 times a local one over a kept-alive HTTP/1.1
// connection per request; the hop, not the call, was most of the difference.
// GET streams (long, idle, resumed) still go over HTTP/1.1 ([peer.forward]).
//
// A frame is a 9-byte header, its type (one byte), its stream (four bytes,
// big-endian; the forwarding end numbers them) and its payload's length
// (four bytes), then the payload:
//
//	frameRequest  (forwarder to owner) method, request URI, host, header
//	              fields, then the whole body (the forwarder read it)
//	frameCancel   (forwarder to owner) the client left: cancel the request
//	frameHead     (owner to forwarder) status and header fields
//	frameData     (owner to forwarder) body bytes, up to maxDataFrame; the
//	              owner flushed there, so the forwarder flushes too
//	frameEnd      (owner to forwarder) the answer is complete (payload 0)
//	              or was cut short (1: the forwarder aborts its client's)
//	frameAnswer   (owner to forwarder) a whole answer at once, the common
//	              case: a head's payload, then the body (a frameHead, a
//	              frameData and a frameEnd in one)
//	frameGoAway   (owner to forwarder, stream 0) the route shuts down: no
//	              new request on this link (the owner reads no more); the
//	              ones in flight are answered, then the link closes
//	framePing     (forwarder to owner, stream 0) answers are awaited and
//	              nothing arrived for a while: is the owner there?
//	framePong     (owner to forwarder, stream 0) the answer to a ping
//
// Strings are a length (one byte for a method, two for others, four for
// header values) then the bytes; field lists a two-byte count then pairs.
const (
	frameRequest byte = 1 + iota
	frameCancel
	frameHead
	frameData
	frameEnd
	frameAnswer
	frameGoAway
	framePing
	framePong
)

const (
	frameHeaderLen = 9
	// maxDataFrame bounds a data frame: a larger write is split, so that a
	// long answer does not hold the link (and the forwarder's memory) at once.
	maxDataFrame = 64 << 10
	// maxAnswerFrame bounds any frame the forwarder reads: a head is at
	// most maxHeadBytes, data at most maxDataFrame.
	maxAnswerFrame = maxHeadBytes
	// maxLinkPending bounds the frames waiting to be written on a link;
	// a sender waits (within its deadline) for room beyond that.
	maxLinkPending = 4 << 20
	// linkWriteTimeout bounds one write on a link: a node that stops
	// reading its links fails them rather than holding every forward.
	linkWriteTimeout = 30 * time.Second
	// linkReaderSize is a link's read buffer: a batch of small frames is
	// read in one system call.
	linkReaderSize = 64 << 10
	// endComplete and endAborted are a frameEnd's payload.
	endComplete byte = 0
	endAborted  byte = 1
)

// errLinkClosed is a send on a link that has failed or was closed.
var errLinkClosed = errors.New("cluster: link closed")

// errLinkFull is a send that found no room before its deadline.
var errLinkFull = errors.New("cluster: link backed up past the write deadline")

// linkWriter writes the frames of a link. Senders append to a buffer under
// mu; one goroutine ([linkWriter.run]) writes whatever gathered while its
// previous write was in the kernel, so frames sent together by many
// goroutines leave in one system call.
type linkWriter struct {
	conn net.Conn

	mu sync.Mutex
	// buf holds the frames not yet handed to the connection. Invariant:
	// when it is not empty, kick holds a token or run is about to take buf.
	buf []byte
	// spare is the buffer run wrote last, reused for the next batch.
	spare []byte
	// err is set once the link failed or closed; sends fail with it.
	err error
	// room, when not nil, is closed after the next write: senders waiting
	// for buf to shrink below maxLinkPending.
	room chan struct{}
	// deadlineSet is when run last set the connection's write deadline
	// (to linkWriteTimeout later); only run touches it.
	deadlineSet time.Time

	kick      chan struct{} // capacity 1
	done      chan struct{} // closed when run returns
	closeOnce sync.Once
}

func newLinkWriter(conn net.Conn) *linkWriter {
	w := &linkWriter{conn: conn, buf: make([]byte, 0, 16<<10), spare: make([]byte, 0, 16<<10), kick: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// run writes batches until the link fails or closes.
func (w *linkWriter) run() {
	defer close(w.done)
	for range w.kick {
		// Let the goroutines that are ready run first: on a busy node they
		// add their frames to this batch. (A goroutine woken by a send runs
		// next on its P, so without this the writer would take each frame
		// alone as soon as it is sent.)
		runtime.Gosched()
		w.mu.Lock()
		if w.err != nil {
			w.mu.Unlock()
			return
		}
		b := w.buf
		w.buf = w.spare[:0]
		w.mu.Unlock()
		if len(b) == 0 {
			continue
		}
		// The deadline is moved once a second, not at every batch (a timer
		// update each): a write is bounded by linkWriteTimeout give or
		// take that second.
		if now := time.Now(); now.Sub(w.deadlineSet) > time.Second {
			_ = w.conn.SetWriteDeadline(now.Add(linkWriteTimeout))
			w.deadlineSet = now
		}
		_, err := w.conn.Write(b)
		w.mu.Lock()
		if cap(b) <= 4*maxDataFrame {
			w.spare = b[:0]
		} else {
			w.spare = make([]byte, 0, 16<<10) // a burst passed: do not keep its buffer
		}
		if w.room != nil {
			close(w.room)
			w.room = nil
		}
		if err != nil && w.err == nil {
			w.err = fmt.Errorf("cluster: writing to a link: %w", err)
		}
		failed := w.err != nil
		w.mu.Unlock()
		if failed {
			w.conn.Close() // the reader fails too
			return
		}
	}
}

// send appends the frames fill writes (after b, which it must return
// extended) and has them written. It waits for room while the link is
// backed up, until deadline (zero: linkWriteTimeout).
func (w *linkWriter) send(deadline time.Time, fill func(b []byte) []byte) error {
	w.mu.Lock()
	for len(w.buf) >= maxLinkPending && w.err == nil {
		if w.room == nil {
			w.room = make(chan struct{})
		}
		room := w.room
		w.mu.Unlock()
		if deadline.IsZero() {
			deadline = time.Now().Add(linkWriteTimeout)
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-room:
			t.Stop()
		case <-t.C:
			return errLinkFull
		}
		w.mu.Lock()
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	was := len(w.buf)
	w.buf = fill(w.buf)
	if was == 0 && len(w.buf) > 0 {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	return nil
}

// sendControl queues a control frame (a cancel, a pong: a few bytes)
// without waiting for room: the links' readers send them, and a reader that
// waited for its own end's writer could wait on the other end's reader,
// itself waiting for room on its writer, which waits for this reader: both
// directions of a full link stalled until linkWriteTimeout
// (TestLinkReaderNotHeldByWriter). There is one cancel per request and one
// pong per ping: they cannot grow the buffer without bound.
func (w *linkWriter) sendControl(typ byte, stream uint32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	was := len(w.buf)
	w.buf = appendFrame(w.buf, typ, stream)
	if was == 0 {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// close fails later sends with err and stops the writer once it has written
// what is queued (or at once, when flush is false).
func (w *linkWriter) close(err error, flush bool) {
	w.closeOnce.Do(func() { w.closeNow(err, flush) })
}

func (w *linkWriter) closeNow(err error, flush bool) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	pending := len(w.buf) > 0
	b := w.buf
	w.buf = nil
	if w.room != nil {
		close(w.room)
		w.room = nil
	}
	w.mu.Unlock()
	close(w.kick)
	<-w.done
	if flush && pending {
		_ = w.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = w.conn.Write(b)
	}
}

// appendFrameHeader appends a frame's header; the payload's length is
// patched by endFrame.
func appendFrameHeader(b []byte, typ byte, stream uint32) []byte {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, 0, 0, 0, 0)
}

// endFrame sets the length of the frame whose header starts at start.
func endFrame(b []byte, start int) []byte {
	binary.BigEndian.PutUint32(b[start+5:], uint32(len(b)-start-frameHeaderLen))
	return b
}

func appendFrame(b []byte, typ byte, stream uint32, payload ...byte) []byte {
	start := len(b)
	b = appendFrameHeader(b, typ, stream)
	b = append(b, payload...)
	return endFrame(b, start)
}

func appendString16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendString32(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// readFrame reads one frame from br; its payload is a new slice of at most
// max bytes.
func readFrame(br *bufio.Reader, max int) (typ byte, stream uint32, payload []byte, err error) {
	// The header is peeked, not copied out: a local array handed to
	// io.ReadFull would escape, an allocation per frame.
	h, err := br.Peek(frameHeaderLen)
	if err != nil {
		if err == io.EOF && len(h) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, nil, err
	}
	typ, stream = h[0], binary.BigEndian.Uint32(h[1:5])
	n := binary.BigEndian.Uint32(h[5:9])
	br.Discard(frameHeaderLen)
	if int64(n) > int64(max) {
		return 0, 0, nil, fmt.Errorf("cluster: a link frame of %d bytes (at most %d)", n, max)
	}
	if typ == frameEnd && n == 1 {
		// The commonest frame has one of two payloads: shared, not made.
		b, err := br.ReadByte()
		if err != nil {
			return 0, 0, nil, unexpected(err)
		}
		if b == endComplete {
			return typ, stream, endCompletePayload, nil
		}
		if b == endAborted {
			return typ, stream, endAbortedPayload, nil
		}
		return typ, stream, []byte{b}, nil
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(br, payload); err != nil {
		return 0, 0, nil, unexpected(err)
	}
	return typ, stream, payload, nil
}

// lengthValues are the Content-Length values of small answers, made once:
// most answers are small, and a value made per answer cost two allocations.
// The slices are shared: nothing may write into them (http.Header's
// methods replace a value, never write into it).
var lengthValues = func() (v [4096][]string) {
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// lengthValue is the header value of a Content-Length of n.
func lengthValue(n int) []string {
	if n < len(lengthValues) {
		return lengthValues[n]
	}
	return []string{strconv.Itoa(n)}
}

// endCompletePayload and endAbortedPayload are the payloads of frameEnd;
// nothing writes them.
var endCompletePayload, endAbortedPayload = []byte{endComplete}, []byte{endAborted}

// unexpected is err, a read failing inside a frame: the end of input there
// is not a clean end.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// payloadString is p as a string without a copy: p is a payload readFrame
// made, which nothing writes after.
func payloadString(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	return unsafe.String(&p[0], len(p))
}

// fieldReader decodes the strings of a payload; its strings share one
// allocation, s. A short payload sets bad rather than panicking.
type fieldReader struct {
	s   string
	bad bool
}

func (f *fieldReader) take(n int) string {
	if f.bad || n > len(f.s) {
		f.bad = true
		return ""
	}
	v := f.s[:n]
	f.s = f.s[n:]
	return v
}

func (f *fieldReader) uint8() int {
	b := f.take(1)
	if f.bad {
		return 0
	}
	return int(b[0])
}

func (f *fieldReader) uint16() int {
	b := f.take(2)
	if f.bad {
		return 0
	}
	return int(b[0])<<8 | int(b[1])
}

func (f *fieldReader) uint32() int {
	b := f.take(4)
	if f.bad {
		return 0
	}
	return int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}

func (f *fieldReader) string8() string  { return f.take(f.uint8()) }
func (f *fieldReader) string16() string { return f.take(f.uint16()) }
func (f *fieldReader) string32() string { return f.take(f.uint32()) }

// fields decodes a field list into a header map. The names arrive
// canonical and the values valid: they come from an http.Header of the node
// at the other end, which net/http filled and checked (and a node holds the
// cluster's key: it is trusted as much as this one).
func (f *fieldReader) fields() map[string][]string {
	n := f.uint16()
	if f.bad {
		return nil
	}
	h := make(map[string][]string, n)
	f.fieldsInto(h, n)
	return h
}

// fieldsInto decodes n fields into h, after the values it holds.
func (f *fieldReader) fieldsInto(h map[string][]string, n int) {
	slab := make([]string, n) // one allocation for the values of every field
	for i := range n {
		name, value := f.string16(), f.string32()
		if f.bad {
			return
		}
		if old, ok := h[name]; ok {
			h[name] = append(old, value)
			continue
		}
		slab[i] = value
		h[name] = slab[i : i+1 : i+1]
	}
}
