package wire

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func serverAddr(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestDo(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		status  int
		ctype   string
		session string
		body    string
	}{
		{
			name: "content-length",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Mcp-Session-Id", "abc")
				io.WriteString(w, `{"ok":true}`)
			},
			status: 200, ctype: "application/json", session: "abc", body: `{"ok":true}`,
		},
		{
			name: "chunked",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: 1\n\n")
				w.(http.Flusher).Flush()
				io.WriteString(w, "data: 2\n\n")
			},
			status: 200, ctype: "text/event-stream", body: "data: 1\n\ndata: 2\n\n",
		},
		{
			name:    "no body",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
			status:  204,
		},
		{
			name: "accepted",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusAccepted)
			},
			status: 202,
		},
		{
			name: "connection close",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Connection", "close")
				io.WriteString(w, "bye")
			},
			status: 200, ctype: "text/plain; charset=utf-8", body: "bye",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewConn(serverAddr(t, tt.handler), 5*time.Second)
			defer c.Close()
			var resp Response
			// Three times on one Conn: the body and trailer of each response
			// must be consumed exactly, or the next status line is garbage.
			for i := range 3 {
				if err := c.Do(&Request{Method: "POST", Path: "/", Body: []byte(`{}`)}, &resp); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if resp.Status != tt.status || resp.ContentType != tt.ctype || resp.SessionID != tt.session || string(resp.Body) != tt.body {
					t.Fatalf("request %d: got %d %q %q %q, want %d %q %q %q", i,
						resp.Status, resp.ContentType, resp.SessionID, resp.Body, tt.status, tt.ctype, tt.session, tt.body)
				}
			}
		})
	}
}

func TestRequestHeaders(t *testing.T) {
	got := make(chan http.Header, 2)
	addr := serverAddr(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Header.Set("X-Body", string(body))
		r.Header.Set("X-Method", r.Method)
		got <- r.Header
	})
	c := NewConn(addr, 5*time.Second)
	defer c.Close()
	var resp Response
	if err := c.Do(&Request{Method: "POST", Path: "/mcp", SessionID: "s1", ProtocolVersion: "2025-11-25",
		MCPMethod: "tools/call", MCPName: "echo", Body: []byte(`{"a":1}`)}, &resp); err != nil {
		t.Fatal(err)
	}
	h := <-got
	want := map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Session-Id": "s1", "Mcp-Protocol-Version": "2025-11-25", "X-Body": `{"a":1}`, "X-Method": "POST",
		"Mcp-Method": "tools/call", "Mcp-Name": "echo",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if err := c.Do(&Request{Method: "GET", Path: "/mcp"}, &resp); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h.Get("Accept") != "text/event-stream" || h.Get("Mcp-Session-Id") != "" || h.Get("X-Method") != "GET" || h.Get("Mcp-Method") != "" {
		t.Errorf("GET headers: %v", h)
	}
}

func TestOpenStreams(t *testing.T) {
	addr := serverAddr(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for _, ev := range []string{": comment\n\n", "id: 1\ndata: \n\n", "event: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n", "data: last\n\n"} {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	})
	c := NewConn(addr, 5*time.Second)
	defer c.Close()
	var resp Response
	body, err := c.Open(&Request{Method: "GET", Path: "/"}, &resp)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsSSE() {
		t.Fatalf("content type %q", resp.ContentType)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	ev := NewEvents(body)
	var got []string
	for {
		data, err := ev.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data))
	}
	want := []string{"", "{\"a\":\n1}", "last"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestEachEvent(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{"data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"data:a\r\n\r\n", []string{"a"}},
		{": keepalive\n\nevent: message\nid: 7\ndata: x\ndata: y\n\n", []string{"x\ny"}},
		{"data: cut", nil},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		EachEvent([]byte(tt.body), func(d []byte) { got = append(got, string(d)) })
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("EachEvent(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestMalformed(t *testing.T) {
	addr := serverAddr(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, _ := w.(http.Hijacker).Hijack()
		buf.WriteString("garbage\r\n\r\n")
		buf.Flush()
		conn.Close()
	})
	c := NewConn(addr, 5*time.Second)
	var resp Response
	if err := c.Do(&Request{Method: "POST", Path: "/"}, &resp); err == nil {
		t.Fatal("no error for a malformed status line")
	}
}
