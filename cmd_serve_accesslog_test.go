package main

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// TestAccessLog: with --access-log each request is logged once answered,
// with its status and a hash of its session, never the session id itself.
func TestAccessLog(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	logs := &syncbuf.Buffer{}
	run := startServe(t, logs, "--dir", dir, "--addr", "127.0.0.1:0", "--access-log")
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/s) `).FindStringSubmatch(run.lines(t, 1)[0])
	if route == nil {
		t.Fatal("no route line")
	}
	post := func(body, session string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, route[1], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	initResp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	sid := initResp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d, no session", initResp.StatusCode)
	}
	post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, sid)
	post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, "not-a-session")

	tag := sessionTag(sid)
	want := []*regexp.Regexp{
		regexp.MustCompile(`msg="http request" method=POST path=/mcp/s status=200 bytes=\d+ duration=\S+ client=127\.0\.0\.1:\d+ session=` + tag + ` proto=HTTP/1\.1`),
		regexp.MustCompile(`msg="http request" method=POST path=/mcp/s status=404 .* session=` + sessionTag("not-a-session") + ` `),
	}
	deadline := time.Now().Add(10 * time.Second) // liveness bound only
	for _, re := range want {
		for len(re.FindAllString(logs.String(), -1)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no log line matches %s:\n%s", re, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := len(want[0].FindAllString(logs.String(), -1)); n != 2 {
		t.Errorf("%d lines for the session's two requests, want 2:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), sid) {
		t.Errorf("the log shows the session id itself:\n%s", logs.String())
	}
	run.stop(t)
}
