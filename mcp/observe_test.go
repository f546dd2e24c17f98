package mcp

import "testing"

func TestAnswerErrorType(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		id     string // "" = a null id
		out    string
		want   string
	}{
		{"result", "tools/list", "1", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, ""},
		{"error", "tools/list", "1", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`, "-32603"},
		{"error with data", "tools/call", `"a"`, `{"jsonrpc":"2.0","id":"a","error":{"code":-32021,"message":"x","data":{}}}`, "-32021"},
		{"null id", "ping", "", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`, "-32600"},
		{"tool error", "tools/call", "7", `{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}`, ErrorToolError},
		{"tool error after content", "tools/call", "7", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\"isError\":true"}],"isError":false}}`, ""},
		{"tool error, 2026 era", "tools/call", "7", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","isError":true,"content":[]}}`, ErrorToolError},
		{"isError elsewhere", "prompts/get", "7", `{"jsonrpc":"2.0","id":7,"result":{"isError":true}}`, ""},
		{"nothing", "tools/call", "7", ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &message{method: tc.method}
			if tc.id != "" {
				m.id = []byte(tc.id)
			}
			if got := answerErrorType([]byte(tc.out), m); got != tc.want {
				t.Errorf("answerErrorType(%s) = %q, want %q", tc.out, got, tc.want)
			}
		})
	}
}

// TestPushStreamCountsEvictedUnread checks that a push stream reports the
// pushes its ring evicts before a reader took them, and only those.
func TestPushStreamCountsEvictedUnread(t *testing.T) {
	lost := 0
	p := newPushStream(true, 2, 0, nil)
	p.dropped = func(n int) { lost += n }
	for range 5 { // no reader: 3 of 5 are lost
		p.push([]byte(`{}`))
	}
	if lost != 3 {
		t.Fatalf("lost %d pushes without a reader, want 3", lost)
	}
	_, _, _ = p.attach(0, false) // a reader takes over from push 5
	p.push([]byte(`{}`))         // 6 evicts 4, which was never read but predates the reader
	if lost != 3 {
		t.Fatalf("lost %d after a reader attached, want still 3", lost)
	}
	p.after(6, nil) // the reader sent 6
	p.push([]byte(`{}`))
	p.push([]byte(`{}`)) // 8 evicts 6 (read)
	if lost != 3 {
		t.Fatalf("lost %d once read, want still 3", lost)
	}
	p.push([]byte(`{}`)) // 9 evicts 7 (unread)
	if lost != 4 {
		t.Fatalf("lost %d, want 4: push 7 was evicted unread", lost)
	}
	// A ring bounded by bytes evicts the same way.
	lost = 0
	b := newPushStream(false, 100, 60, nil)
	b.dropped = func(n int) { lost += n }
	for range 4 {
		b.push([]byte(`{"a":1}`))
	}
	if kept := len(b.after(0, nil)); lost != 4-kept || kept == 4 {
		t.Fatalf("byte-bounded ring kept %d and lost %d of 4", kept, lost)
	}
}
