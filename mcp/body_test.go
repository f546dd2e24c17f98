package mcp

import (
	"errors"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// stalledBody yields its bytes, then fails as a read deadline would: the
// client announced more than it sent.
type stalledBody struct{ r io.Reader }

var errStalled = errors.New("read deadline")

func (b *stalledBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = errStalled
	}
	return n, err
}

// readBodyBytes holds memory in proportion to the bytes that arrived, not
// to the announced Content-Length, and still reads every well-formed body.
func TestReadBodyGrowsAsBytesArrive(t *testing.T) {
	const max = 4 << 20
	h := &Handler{opts: Options{MaxBodyBytes: max}}
	big := strings.Repeat("x", max)
	for _, tc := range []struct {
		name      string
		announced int64 // -1: unknown (chunked)
		body      io.Reader
		want      string
		wantErr   error // nil: want is the body
		maxAlloc  uint64
	}{
		{"announced max, 18 bytes sent", max, &stalledBody{strings.NewReader(`{"jsonrpc":"2.0",`)}, "", errStalled, 256 << 10},
		{"announced max, sent", max, strings.NewReader(big), big, nil, 3*max + 256<<10},
		{"announced, exact", 7, strings.NewReader(`{"a":1}`), `{"a":1}`, nil, 64 << 10},
		{"announced, short", 8, strings.NewReader(`{"a":1}`), "", io.ErrUnexpectedEOF, 64 << 10},
		{"announced past the limit", max + 1, strings.NewReader(big + "x"), "", errBodyTooLarge, 64 << 10},
		{"unknown, within the limit", -1, strings.NewReader(big), big, nil, 3*max + 256<<10},
		{"unknown, past the limit", -1, strings.NewReader(big + "x"), "", errBodyTooLarge, 3*max + 256<<10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.ContentLength = tc.announced
			// net/http's body reader stops at the announced length and
			// reports a shorter body as io.ErrUnexpectedEOF.
			r.Body = io.NopCloser(tc.body)
			if tc.announced >= 0 {
				r.Body = io.NopCloser(&announcedBody{r: io.LimitReader(tc.body, tc.announced), left: tc.announced})
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := h.readBodyBytes(r, nil)
			runtime.ReadMemStats(&after)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			} else if err != nil || string(got) != tc.want {
				t.Fatalf("read %d bytes, err %v; want %d bytes", len(got), err, len(tc.want))
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > tc.maxAlloc {
				t.Errorf("allocated %d bytes, want at most %d", n, tc.maxAlloc)
			}
		})
	}
}

// announcedBody is a body of announced length left, as net/http serves it.
type announcedBody struct {
	r    io.Reader
	left int64
}

func (b *announcedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
