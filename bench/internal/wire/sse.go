package wire

import (
	"bufio"
	"bytes"
	"io"
)

// Events reads the data of server-sent events from a stream. Comments,
// event names and ids are skipped; an event without data is skipped.
type Events struct {
	r    *bufio.Reader
	data []byte
}

// NewEvents reads events from r.
func NewEvents(r io.Reader) *Events {
	return &Events{r: bufio.NewReaderSize(r, 16<<10)}
}

// Next returns the data of the next event (multi-line data joined with
// "\n"). The slice is valid until the next call. At the end of the stream it
// returns io.EOF; a stream cut inside an event returns io.ErrUnexpectedEOF.
func (e *Events) Next() ([]byte, error) {
	e.data = e.data[:0]
	has := false
	for {
		line, err := e.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long data line: gather it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = e.r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if err == io.EOF && !has && len(line) == 0 {
				return nil, io.EOF
			}
			if err == io.EOF {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if done := e.line(bytes.TrimRight(line, "\r\n"), &has); done {
			return e.data, nil
		}
	}
}

// line handles one line of the stream and reports whether it ended an event
// that had data.
func (e *Events) line(line []byte, has *bool) bool {
	if len(line) == 0 {
		return *has
	}
	if field, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		field, _ = bytes.CutPrefix(field, []byte(" "))
		if *has {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, field...)
		*has = true
	}
	return false
}

// EachEvent calls fn with the data of every event in a complete SSE body.
func EachEvent(body []byte, fn func(data []byte)) {
	var e Events
	has := false
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if e.line(bytes.TrimRight(line, "\r"), &has) {
			fn(e.data)
			e.data, has = e.data[:0], false
		}
	}
	// An event cut off before its blank line is not dispatched (as in
	// browsers), so a server that forgets it fails the reply checks.
}
