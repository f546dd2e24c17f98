// Package upstream is the HTTP API the fetch scenario's tools call: the
// harness runs it, and every server's fetch tool makes one request to it per
// call.
package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/luamcp/luamcp/bench/internal/spec"
)

// Server is a running upstream.
type Server struct {
	// Addr is its host:port on 127.0.0.1.
	Addr string
	srv  *http.Server
}

// Start serves spec.UpstreamItem on 127.0.0.1: GET ?text=T answers
// {"text": T} as JSON.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(spec.UpstreamItem, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			Text string `json:"text"`
		}{r.URL.Query().Get("text")})
	})
	s := &Server{Addr: ln.Addr().String(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Fetch is the Go servers' fetch tool: it GETs u on client and returns the
// "text" member of its JSON answer.
func Fetch(ctx context.Context, client *http.Client, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var item struct {
		Text string `json:"text"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 10<<20)).Decode(&item); err != nil {
		return "", err
	}
	return item.Text, nil
}
