package main

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/luamcp/luamcp/internal/logcap"
)

// accessLogFlag is serve's --access-log.
func accessLogFlag() cli.Flag {
	return &cli.BoolFlag{Name: "access-log", Usage: "log every HTTP request at info level: method, path, status, bytes, duration, client, session (hashed)"}
}

// accessLog logs each request next served, once it is answered: an event
// stream when it ends. A session id is a bearer credential (whoever has it
// may use the session, on a route without oauth), so the log carries a
// short hash of it: enough to follow one session's requests, useless to
// take it over.
func accessLog(next http.Handler, logger *slog.Logger) http.Handler {
	// What a client controls (its path, above all) is cut at logcap.Max, as
	// in every other log line: a path of a megabyte is no line to write at
	// each request.
	logger = logcap.Logger(logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		session := r.Header.Get("Mcp-Session-Id")
		if session == "" {
			session = rec.Header().Get("Mcp-Session-Id") // an initialize's answer
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		logger.Info("http request", "method", r.Method, "path", r.URL.Path, "status", status, "bytes", rec.bytes,
			"duration", time.Since(start), "client", r.RemoteAddr, "session", logcap.Session(session), "proto", r.Proto)
	})
}

// recorder notes the status and the body bytes of a response as they pass.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// FlushError is what [http.ResponseController.Flush] calls: the error is
// the transport's to see (a client that stopped reading).
func (r *recorder) FlushError() error { return http.NewResponseController(r.ResponseWriter).Flush() }

// Flush implements [http.Flusher] for the handlers that assert it.
func (r *recorder) Flush() { _ = r.FlushError() }

// Hijack hands the connection over (a cluster link takes it): the request
// is logged as switching protocols, when the link ends.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// Unwrap lets an [http.ResponseController] reach the writer's other methods
// (deadlines, flushing).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
