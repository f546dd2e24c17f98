package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rpc is a request the fake server received.
type rpc struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
		Cursor    string            `json:"cursor"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

// answer is what the fake server sends back.
type answer struct {
	status  int
	session string
	sse     bool
	body    string
}

func result(id json.RawMessage, res string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
}

func text(id json.RawMessage, s string) string {
	return result(id, fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"isError":false}`, s))
}

const goodInit = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`

// fake answers initialize well and everything else with respond.
func fake(t *testing.T, respond func(r *rpc) answer) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var a answer
		if req.Method == "DELETE" {
			a = respond(&rpc{Method: "DELETE"})
		} else {
			var r rpc
			body, _ := io.ReadAll(req.Body)
			if err := json.Unmarshal(body, &r); err != nil {
				t.Errorf("request is not JSON: %s", body)
			}
			switch r.Method {
			case "initialize":
				a = answer{session: "s1", body: result(r.ID, goodInit)}
			case "notifications/initialized":
				a = answer{status: 202}
			default:
				a = respond(&r)
			}
		}
		if a.session != "" {
			w.Header().Set("Mcp-Session-Id", a.session)
		}
		if a.sse {
			w.Header().Set("Content-Type", "text/event-stream")
		} else if a.body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		if a.status == 0 {
			a.status = 200
		}
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	c := New(strings.TrimPrefix(srv.URL, "http://"), "/mcp", 5*time.Second)
	t.Cleanup(func() { c.Close() })
	return c
}

func sse(msgs ...string) string {
	var b strings.Builder
	b.WriteString("id: 0\ndata: \n\n") // a priming event, as 2025-11-25 servers send
	for _, m := range msgs {
		fmt.Fprintf(&b, "event: message\ndata: %s\n\n", m)
	}
	return b.String()
}

func TestInitialize(t *testing.T) {
	tests := []struct {
		name    string
		session bool
		init    func(id json.RawMessage) answer
		initd   answer
		ok      bool
	}{
		{"session", true, func(id json.RawMessage) answer { return answer{session: "s1", body: result(id, goodInit)} }, answer{status: 202}, true},
		{"stateless", false, func(id json.RawMessage) answer { return answer{body: result(id, goodInit)} }, answer{status: 202}, true},
		{"as SSE", true, func(id json.RawMessage) answer {
			return answer{session: "s1", sse: true, body: sse(result(id, goodInit))}
		}, answer{status: 202}, true},
		{"no session id", true, func(id json.RawMessage) answer { return answer{body: result(id, goodInit)} }, answer{status: 202}, false},
		{"bad version", true, func(id json.RawMessage) answer {
			return answer{session: "s1", body: result(id, strings.Replace(goodInit, "2025-11-25", "1999-01-01", 1))}
		}, answer{status: 202}, false},
		{"no tools capability", true, func(id json.RawMessage) answer {
			return answer{session: "s1", body: result(id, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"f"}}`)}
		}, answer{status: 202}, false},
		{"error", true, func(id json.RawMessage) answer {
			return answer{session: "s1", body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"no"}}`, id)}
		}, answer{status: 202}, false},
		{"wrong id", true, func(json.RawMessage) answer { return answer{session: "s1", body: result([]byte("99"), goodInit)} }, answer{status: 202}, false},
		{"initialized not 202", true, func(id json.RawMessage) answer { return answer{session: "s1", body: result(id, goodInit)} }, answer{status: 200}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				var r rpc
				json.NewDecoder(req.Body).Decode(&r)
				a := tt.initd
				if r.Method == "initialize" {
					a = tt.init(r.ID)
				}
				if a.session != "" {
					w.Header().Set("Mcp-Session-Id", a.session)
				}
				ct := "application/json"
				if a.sse {
					ct = "text/event-stream"
				}
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(max(a.status, 200))
				io.WriteString(w, a.body)
			}))
			defer srv.Close()
			c := New(strings.TrimPrefix(srv.URL, "http://"), "/mcp", 5*time.Second)
			defer c.Close()
			err := c.Initialize(tt.session)
			if tt.ok != (err == nil) {
				t.Fatalf("Initialize: %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrCheck) {
				t.Fatalf("Initialize: %v is not a check failure", err)
			}
			if tt.ok && (tt.session != (c.SessionID == "s1") || c.Version != "2025-11-25") {
				t.Fatalf("session %q version %q", c.SessionID, c.Version)
			}
		})
	}
}

func TestEcho(t *testing.T) {
	tests := []struct {
		name    string
		respond func(r *rpc) answer
		ok      bool
	}{
		{"json", func(r *rpc) answer { return answer{body: text(r.ID, r.Params.Arguments["text"])} }, true},
		{"sse", func(r *rpc) answer {
			return answer{sse: true, body: sse(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, text(r.ID, r.Params.Arguments["text"]))}
		}, true},
		{"wrong text", func(r *rpc) answer { return answer{body: text(r.ID, "other")} }, false},
		{"wrong id", func(r *rpc) answer { return answer{body: text([]byte(`"x"`), r.Params.Arguments["text"])} }, false},
		{"tool error", func(r *rpc) answer {
			return answer{body: result(r.ID, `{"content":[{"type":"text","text":"hi"}],"isError":true}`)}
		}, false},
		{"two blocks", func(r *rpc) answer {
			return answer{body: result(r.ID, `{"content":[{"type":"text","text":"hi"},{"type":"text","text":"hi"}]}`)}
		}, false},
		{"404", func(r *rpc) answer { return answer{status: 404, body: `{}`} }, false},
		{"sse without response", func(r *rpc) answer { return answer{sse: true, body: sse()} }, false},
		{"sse with two responses", func(r *rpc) answer {
			return answer{sse: true, body: sse(text(r.ID, "hi"), text(r.ID, "hi"))}
		}, false},
		{"not json", func(r *rpc) answer { return answer{body: `hi`} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake(t, tt.respond)
			if err := c.Initialize(true); err != nil {
				t.Fatal(err)
			}
			err := c.Echo([]byte("hi"))
			if tt.ok != (err == nil) {
				t.Fatalf("Echo: %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrCheck) {
				t.Fatalf("Echo: %v is not a check failure", err)
			}
		})
	}
}

func TestListTools(t *testing.T) {
	name := func(i int) string { return fmt.Sprintf("t%d", i) }
	page := func(r *rpc, names []string, next string) answer {
		var tools []string
		for _, n := range names {
			tools = append(tools, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, n))
		}
		cursor := ""
		if next != "" {
			cursor = fmt.Sprintf(`,"nextCursor":%q`, next)
		}
		return answer{body: result(r.ID, fmt.Sprintf(`{"tools":[%s]%s}`, strings.Join(tools, ","), cursor))}
	}
	tests := []struct {
		name    string
		respond func(r *rpc) answer
		pages   int
		ok      bool
	}{
		{"two pages", func(r *rpc) answer {
			if r.Params.Cursor == "" {
				return page(r, []string{"t1", "t2"}, "c2")
			}
			return page(r, []string{"t3"}, "")
		}, 2, true},
		{"duplicate", func(r *rpc) answer {
			if r.Params.Cursor == "" {
				return page(r, []string{"t1", "t2"}, "c2")
			}
			return page(r, []string{"t2", "t3"}, "")
		}, 2, false},
		{"missing", func(r *rpc) answer { return page(r, []string{"t1", "t2", "t4"}, "") }, 1, false},
		{"short", func(r *rpc) answer { return page(r, []string{"t1", "t2"}, "") }, 1, false},
		{"no schema", func(r *rpc) answer {
			return answer{body: result(r.ID, `{"tools":[{"name":"t1"},{"name":"t2"},{"name":"t3"}]}`)}
		}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake(t, tt.respond)
			if err := c.Initialize(true); err != nil {
				t.Fatal(err)
			}
			pages, err := c.ListTools(3, name)
			if tt.ok != (err == nil) || pages != tt.pages {
				t.Fatalf("ListTools: %d pages, %v; want %d pages, ok=%v", pages, err, tt.pages, tt.ok)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	note := func(tok json.RawMessage, p int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":3}}`, tok, p)
	}
	tests := []struct {
		name    string
		respond func(r *rpc) answer
		ok      bool
	}{
		{"three", func(r *rpc) answer {
			tok := r.Params.Meta.ProgressToken
			return answer{sse: true, body: sse(note(tok, 1), note(tok, 2), note(tok, 3), text(r.ID, "done"))}
		}, true},
		{"two", func(r *rpc) answer {
			tok := r.Params.Meta.ProgressToken
			return answer{sse: true, body: sse(note(tok, 1), note(tok, 2), text(r.ID, "done"))}
		}, false},
		{"json without progress", func(r *rpc) answer { return answer{body: text(r.ID, "done")} }, false},
		{"wrong token", func(r *rpc) answer {
			tok := json.RawMessage(`"other"`)
			return answer{sse: true, body: sse(note(tok, 1), note(tok, 2), note(tok, 3), text(r.ID, "done"))}
		}, false},
		{"not increasing", func(r *rpc) answer {
			tok := r.Params.Meta.ProgressToken
			return answer{sse: true, body: sse(note(tok, 1), note(tok, 1), note(tok, 3), text(r.ID, "done"))}
		}, false},
		{"request on the stream", func(r *rpc) answer {
			tok := r.Params.Meta.ProgressToken
			return answer{sse: true, body: sse(note(tok, 1), note(tok, 2), note(tok, 3),
				`{"jsonrpc":"2.0","id":"s-1","method":"roots/list"}`, text(r.ID, "done"))}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake(t, tt.respond)
			if err := c.Initialize(true); err != nil {
				t.Fatal(err)
			}
			err := c.Progress("tok-1", 3)
			if tt.ok != (err == nil) {
				t.Fatalf("Progress: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestDeleteAndStatus(t *testing.T) {
	status := 204
	c := fake(t, func(r *rpc) answer {
		if r.Method == "ping" {
			return answer{status: 404, body: `{}`}
		}
		return answer{status: status}
	})
	if err := c.Initialize(true); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Status(); err != nil || s != 404 {
		t.Fatalf("Status = %d, %v", s, err)
	}
	if err := c.Delete(); err != nil || c.SessionID != "" {
		t.Fatalf("Delete: %v, session %q", err, c.SessionID)
	}
	status = 404
	c.SessionID = "s1"
	if err := c.Delete(); !errors.Is(err, ErrCheck) {
		t.Fatalf("Delete answered 404: %v", err)
	}
}

func TestListen(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != "GET" || req.Header.Get("Mcp-Session-Id") != "s1" {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":1}}`,
			`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := New(addr, "/mcp", 5*time.Second)
	c.SessionID = "s1"
	l, err := c.Listen(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(5 * time.Second)
	if data, err := l.Next(deadline); err != nil || !strings.Contains(string(data), `"data":1`) {
		t.Fatalf("first event %s, %v", data, err)
	}
	if _, err := l.Next(deadline); !errors.Is(err, ErrCheck) {
		t.Fatalf("a response on the GET stream: %v", err)
	}

	c.SessionID = "other"
	if _, err := c.Listen(addr, 5*time.Second); !errors.Is(err, ErrCheck) {
		t.Fatalf("Listen answered 400: %v", err)
	}
}
