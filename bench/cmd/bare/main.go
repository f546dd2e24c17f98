// Command bare is the floor of the benchmark: a plain net/http JSON-RPC echo
// with just enough session handling (ids, lookup, DELETE, idle TTL) to run
// the session, stateless and churn scenarios. No MCP library can be faster
// than this; the other servers are measured against it.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"net/http"
	"sync"
	"time"

	"github.com/luamcp/luamcp/bench/internal/serve"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

func main() {
	f := serve.RegisterFlags(flag.CommandLine)
	flag.Parse()
	churn := newRoute(true, f.TTL)
	serve.Main(serve.Server{
		Name: "bare",
		Routes: map[string]http.Handler{
			spec.PathEcho:      newRoute(true, 0),
			spec.PathStateless: newRoute(false, 0),
			spec.PathChurn:     churn,
		},
		ChurnSessions: churn.count,
	}, f.Addr)
}

// route is one endpoint; in session mode it keeps the last-seen time of
// every session.
type route struct {
	sessions bool
	ttl      time.Duration

	mu   sync.Mutex
	seen map[string]time.Time
}

func newRoute(sessions bool, ttl time.Duration) *route {
	r := &route{sessions: sessions, ttl: ttl, seen: make(map[string]time.Time)}
	if ttl > 0 {
		go r.reap()
	}
	return r
}

func (rt *route) count() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.seen)
}

// reap drops sessions idle longer than the TTL. It runs for the life of the
// process, like the route.
func (rt *route) reap() {
	for range time.Tick(rt.ttl / 4) {
		now := time.Now()
		rt.mu.Lock()
		for id, t := range rt.seen {
			if now.Sub(t) > rt.ttl {
				delete(rt.seen, id)
			}
		}
		rt.mu.Unlock()
	}
}

// touch records activity on id and reports whether the session exists.
func (rt *route) touch(id string) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.seen[id]; !ok {
		return false
	}
	rt.seen[id] = time.Now()
	return true
}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type callResult struct {
	Content []text `json:"content"`
	IsError bool   `json:"isError"`
}

var initResult = map[string]any{
	"protocolVersion": "2025-11-25",
	"capabilities":    map[string]any{"tools": map[string]any{}},
	"serverInfo":      map[string]any{"name": "bare", "version": "1.0.0"},
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	switch {
	case r.Method == http.MethodDelete && rt.sessions:
		rt.mu.Lock()
		_, ok := rt.seen[sid]
		delete(rt.seen, sid)
		rt.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		write(w, http.StatusOK, response{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{-32700, "Parse error"}})
		return
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if req.Method == "initialize" {
		if rt.sessions {
			id := newID()
			rt.mu.Lock()
			rt.seen[id] = time.Now()
			rt.mu.Unlock()
			w.Header().Set("Mcp-Session-Id", id)
		}
		write(w, http.StatusOK, response{JSONRPC: "2.0", ID: req.ID, Result: initResult})
		return
	}
	if rt.sessions && !rt.touch(sid) {
		write(w, http.StatusNotFound, response{JSONRPC: "2.0", ID: req.ID, Error: &rpcError{-32600, "Unknown or expired session"}})
		return
	}
	if req.Method != "tools/call" {
		write(w, http.StatusOK, response{JSONRPC: "2.0", ID: req.ID, Error: &rpcError{-32601, "Method not found"}})
		return
	}
	var call struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(req.Params, &call); err != nil || call.Name != spec.EchoTool {
		write(w, http.StatusOK, response{JSONRPC: "2.0", ID: req.ID, Error: &rpcError{-32602, "Unknown tool"}})
		return
	}
	write(w, http.StatusOK, response{JSONRPC: "2.0", ID: req.ID, Result: callResult{Content: []text{{"text", call.Arguments.Text}}}})
}

func write(w http.ResponseWriter, status int, resp response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(resp)
}

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
