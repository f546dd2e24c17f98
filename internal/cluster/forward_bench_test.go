package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// cannedOwner is an owner node reduced to its wire: it answers every request
// on a kept-alive connection with the same JSON answer, so that a benchmark
// of Forward counts the forwarder's allocations, not an HTTP server's.
func cannedOwner(tb testing.TB, answer string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 18:00:00 GMT\r\nContent-Length: " +
		strconv.Itoa(len(answer)) + "\r\n\r\n" + answer)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					n := 0
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
						if len(line) > 16 && bytes.EqualFold(line[:16], []byte("content-length: ")) {
							n = 0
							for _, c := range bytes.TrimSpace(line[16:]) {
								n = n*10 + int(c-'0')
							}
						}
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// discardWriter is a ResponseWriter that keeps nothing but its headers.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(status int)      { d.status = status }
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discardWriter) Flush()                      {}

func benchJoin(tb testing.TB, owner string) *Node {
	tb.Helper()
	e, err := StartEmbedded("127.0.0.1", 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Shutdown)
	join := func(id, advertise string) *Node {
		nc, err := nats.Connect(e.URL())
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(nc.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := Join(ctx, Config{Conn: nc, NodeID: id, Advertise: advertise})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { n.Close() })
		return n
	}
	join("b", owner)
	return join("a", "http://127.0.0.1:1")
}

// benchAnswer and benchBody are the forwarded tools/call of the
// benchmarks: a small JSON body, a small JSON answer.
const (
	benchAnswer = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello"}]}}`
	benchBody   = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
)

// benchForwards runs forward on the benchmarks' call with header (a Go SDK
// client's, as the entry node marks or signs it), serially and in
// parallel, checking each answer.
func benchForwards(b *testing.B, header http.Header, forward func(w http.ResponseWriter, r *http.Request)) {
	run := func(pb interface{ Next() bool }) {
		w := &discardWriter{h: make(http.Header)}
		r, _ := http.NewRequest(http.MethodPost, "http://entry.example:8750/mcp/echo", nil)
		r.Host = "entry.example:8750"
		r.Header = header.Clone()
		rd := strings.NewReader(benchBody)
		for pb.Next() {
			clear(w.h)
			w.n = 0
			rd.Reset(benchBody)
			r.Body = io.NopCloser(rd)
			r.ContentLength = int64(len(benchBody))
			forward(w, r)
			if w.status != http.StatusOK || w.n != len(benchAnswer) {
				panic("forward failed: status " + strconv.Itoa(w.status))
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		run(loopNext(b.Loop))
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) { run(pb) })
	})
}

// sdkHeader is what a Go SDK client sends with a tools/call, marked by the
// entry node as forwarded.
func sdkHeader() http.Header {
	return http.Header{
		"Accept":                 {"application/json, text/event-stream"},
		"Content-Type":           {"application/json"},
		"Mcp-Session-Id":         {"b.0123456789abcdef0123456789abcdef"},
		"Mcp-Protocol-Version":   {"2025-06-18"},
		"User-Agent":             {"Go-http-client/1.1"},
		"Accept-Encoding":        {"gzip"},
		"Luamcp-Forwarded-By":    {"a"},
		"Luamcp-Forwarded-For":   {"127.0.0.1:50000"},
		"Luamcp-Forwarded-Proto": {"http"},
	}
}

// BenchmarkForward measures one forwarded tools/call as the entry node
// makes it over HTTP/1.1, signed.
func BenchmarkForward(b *testing.B) {
	a := benchJoin(b, cannedOwner(b, benchAnswer))
	h := sdkHeader()
	h.Set("Luamcp-Forward-Signature", "1796320000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	benchForwards(b, h, func(w http.ResponseWriter, r *http.Request) { a.Forward(w, r, "b", nil) })
}

// loopNext adapts b.Loop to the interface run takes.
type loopNext func() bool

func (f loopNext) Next() bool { return f() }

// BenchmarkLink measures one tools/call forwarded on a link, both ends in
// this process: the forwarder's frame out and answer in, and the owner's
// frame in, request, response writer and frames out (its handler writes a
// canned answer).
func BenchmarkLink(b *testing.B) {
	o := startLinkOwner(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, benchAnswer)
	}, nil)
	p := linkPeer(b, o)
	benchForwards(b, sdkHeader(), func(w http.ResponseWriter, r *http.Request) {
		if err := p.forward(w, r, nil); err != nil {
			panic(fmt.Sprint("forward failed: ", err))
		}
	})
}
