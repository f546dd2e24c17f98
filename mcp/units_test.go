package mcp

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseCursor(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name   string
		params string
		offset int
		ok     bool
	}{
		{"no params", ``, 0, true},
		{"no cursor", `{}`, 0, true},
		{"null cursor", `{"cursor":null}`, 0, true},
		{"zero", `{"cursor":"` + b64("0") + `"}`, 0, true},
		{"offset", `{"cursor":"` + b64("50") + `"}`, 50, true},
		{"past end", `{"cursor":"` + b64("1000") + `"}`, 1000, true},
		{"numeric cursor", `{"cursor":50}`, 0, false},
		{"not base64", `{"cursor":"%%%"}`, 0, false},
		{"not a number", `{"cursor":"` + b64("abc") + `"}`, 0, false},
		{"negative", `{"cursor":"` + b64("-1") + `"}`, 0, false},
		{"plus sign", `{"cursor":"` + b64("+1") + `"}`, 0, false},
		{"empty", `{"cursor":""}`, 0, false},
		{"huge", `{"cursor":"` + b64("99999999999999999999") + `"}`, 0, false},
		{"too long", `{"cursor":"` + strings.Repeat("A", 200) + `"}`, 0, false},
	}
	for _, tt := range tests {
		var params []byte
		if tt.params != "" {
			params = []byte(tt.params)
		}
		offset, ok := parseCursor(params)
		if ok != tt.ok || (ok && offset != tt.offset) {
			t.Errorf("%s: got %d %v, want %d %v", tt.name, offset, ok, tt.offset, tt.ok)
		}
	}
	for _, n := range []int{0, 2, 49, 1234} {
		c := appendCursor(nil, n)
		got, ok := parseCursor([]byte(`{"cursor":"` + string(c) + `"}`))
		if !ok || got != n {
			t.Errorf("cursor %d round-trips to %d %v", n, got, ok)
		}
	}
}

func TestMatchTemplate(t *testing.T) {
	tests := []struct {
		tpl, uri string
		vars     map[string]string
	}{
		{"mem://user/{id}", "mem://user/42", map[string]string{"id": "42"}},
		{"mem://user/{id}", "mem://user/", nil},
		{"mem://user/{id}", "mem://user/4/2", nil},
		{"mem://user/{id}", "mem://other/42", nil},
		{"mem://user/{id}/posts/{post}", "mem://user/ada/posts/7", map[string]string{"id": "ada", "post": "7"}},
		{"file:///{dir}/{name}.txt", "file:///docs/a.b.txt", map[string]string{"dir": "docs", "name": "a.b"}},
		{"x://{a}-{b}", "x://1-2-3", map[string]string{"a": "1-2", "b": "3"}},
		{"x://{a}", "x://a%20b", map[string]string{"a": "a b"}},
		{"x://{a}/{a}", "x://same/same", map[string]string{"a": "same"}},
		{"x://{a}/{a}", "x://one/two", nil},
		{"x://plain", "x://plain", map[string]string{}},
		{"x://{+path}", "x://a", nil},
		{"x://{unclosed", "x://a", nil},
		{"x://}", "x://}", nil},
		{"x://{a}{b}{c}{d}{e}{f}!", "x://" + strings.Repeat("a", 20000), nil}, // linear, not exponential
		{"x://{a}{b}", "x://abc", map[string]string{"a": "ab", "b": "c"}},
	}
	for _, tt := range tests {
		vars, ok := MatchTemplate(tt.tpl, tt.uri)
		if ok != (tt.vars != nil) || (ok && !maps.Equal(vars, tt.vars)) {
			t.Errorf("MatchTemplate(%q, %q) = %v %v, want %v", tt.tpl, tt.uri, vars, ok, tt.vars)
		}
	}
}

func TestLogLevels(t *testing.T) {
	for i, l := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if levelSeverity(l) != i || !ValidLogLevel(l) {
			t.Errorf("%s: severity %d", l, levelSeverity(l))
		}
	}
	for _, l := range []string{"", "INFO", "warn", "fatal"} {
		if ValidLogLevel(l) {
			t.Errorf("%q is valid", l)
		}
	}
}

func TestEventRing(t *testing.T) {
	r := eventRing{max: 3}
	for i := uint64(1); i <= 5; i++ {
		r.add(ringEvent{id: i})
	}
	var ids []uint64
	for _, e := range r.after(0, nil) {
		ids = append(ids, e.id)
	}
	if len(ids) != 3 || ids[0] != 3 || ids[2] != 5 {
		t.Fatalf("ring keeps %v, want [3 4 5]", ids)
	}
	if got := r.after(4, nil); len(got) != 1 || got[0].id != 5 {
		t.Fatalf("after 4: %v", got)
	}
	if got := (&eventRing{}).after(0, nil); len(got) != 0 {
		t.Fatal("empty ring replays")
	}
}

// TestEventRingAfter checks after's bisection against a plain scan, for
// every id asked and every position of the ring's start, ids with gaps.
func TestEventRingAfter(t *testing.T) {
	for pushes := range 12 {
		r := eventRing{max: 5}
		for i := 1; i <= pushes; i++ {
			r.add(ringEvent{id: uint64(3 * i)})
		}
		for id := uint64(0); id <= uint64(3*pushes+1); id++ {
			var want []uint64
			for i := 0; i < r.n; i++ {
				if e := r.evs[(r.start+i)%len(r.evs)]; e.id > id {
					want = append(want, e.id)
				}
			}
			var got []uint64
			for _, e := range r.after(id, nil) {
				got = append(got, e.id)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%d pushes, after %d: %v, want %v", pushes, id, got, want)
			}
		}
	}
}

func TestStreamEventIDs(t *testing.T) {
	id := string(streamEventID(nil, 3, 14))
	k, n, ok := parseStreamEventID(id)
	if id != "3_14" || !ok || k != 3 || n != 14 {
		t.Fatalf("%q -> %d %d %v", id, k, n, ok)
	}
	for _, bad := range []string{"5", "_1", "1_", "a_1", "0_1", "1_x"} {
		if _, _, ok := parseStreamEventID(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestAppendEventKeepsOneDataLine(t *testing.T) {
	ev := string(appendEvent(nil, "7", []byte("{\n  \"a\": 1\r\n}")))
	if ev != "event: message\nid: 7\ndata: {   \"a\": 1  }\n\n" {
		t.Fatalf("%q", ev)
	}
}

func TestParseAccept(t *testing.T) {
	tests := []struct {
		values        []string
		ok, json, sse bool
	}{
		{nil, true, true, false},
		{[]string{""}, true, true, false},
		{[]string{"application/json, text/event-stream"}, true, true, true},
		{[]string{"application/json"}, true, true, false},
		{[]string{"text/event-stream"}, true, false, true},
		{[]string{"*/*"}, true, true, false},
		{[]string{"application/*;q=0.5"}, true, true, false},
		{[]string{"text/*"}, true, false, true},
		{[]string{"text/html"}, false, false, false},
		{[]string{"application/json;q=0"}, false, false, false},
		{[]string{"application/json;q=1, text/event-stream;q=0"}, true, true, false},
		{[]string{"APPLICATION/JSON ; q=0.9"}, true, true, false},
		{[]string{"text/html", "application/json"}, true, true, false},
	}
	for _, tt := range tests {
		a, ok := parseAccept(tt.values)
		if ok != tt.ok || a.json != tt.json || a.sse != tt.sse {
			t.Errorf("%v: ok=%v json=%v sse=%v", tt.values, ok, a.json, a.sse)
		}
	}
}

func TestLoopback(t *testing.T) {
	peers := map[string]bool{
		"127.0.0.1:5000": true, "127.1.2.3:1": true, "[::1]:80": true, "[::ffff:127.0.0.1]:9": true,
		"[::ffff:127.1.2.3]:9": true, "203.0.113.7:5": false, "[2001:db8::1]:5": false, "": false, "garbage": false,
		"[::ffff:10.0.0.1]:1": false,
	}
	for addr, want := range peers {
		if loopbackPeer(addr) != want {
			t.Errorf("peer %q: want %v", addr, want)
		}
	}
	hosts := map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1": true, "127.0.0.1:3000": true, "[::1]:80": true,
		"[::1]": true, "evil.example.com": false, "evil.example.com:80": false, "": false, "localhost.evil.com": false,
		"10.0.0.1:80": false,
	}
	for host, want := range hosts {
		if loopbackHost(host) != want {
			t.Errorf("host %q: want %v", host, want)
		}
	}
}

// TestQuotaShare pins the exact size of one client's share of a
// process-wide cap (quota.takeFor): an eighth of the cap, at least one, and
// the whole cap for an anonymous client or without a cap. The route-level
// share tests only check that another client still gets in, which a share
// one place too large, or none for caps under eight, would also pass.
func TestQuotaShare(t *testing.T) {
	tests := []struct {
		name string
		max  int
		key  string
		want int // takes that succeed, of 100
	}{
		{"cap 16", 16, "sub:a", 2},
		{"cap 17", 17, "sub:a", 2},
		{"cap 8", 8, "sub:a", 1},
		{"cap 7 still one", 7, "sub:a", 1},
		{"cap 1", 1, "sub:a", 1},
		{"anonymous takes the cap", 16, "", 16},
		{"no cap", 0, "sub:a", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q quota
			q.setMax(tt.max)
			got := 0
			for range 100 {
				if q.takeFor(tt.key) {
					got++
				}
			}
			if got != tt.want {
				t.Fatalf("takeFor succeeded %d times, want %d", got, tt.want)
			}
			// Another client still has its own share while the cap allows.
			if tt.key != "" && tt.max > got && !q.takeFor("sub:other") {
				t.Error("another client was refused")
			}
			// A give returns exactly one place to the client.
			q.giveFor(tt.key)
			if !q.takeFor(tt.key) {
				t.Error("no place after a give")
			}
			if tt.max > 0 && q.takeFor(tt.key) {
				t.Error("two places after one give")
			}
		})
	}
}

// TestPendingTableBounds pins the bounds of a table of requests to clients:
// maxPendingRequests entries in all and maxPendingPerOwner per quota key,
// each exactly (not one more), and a removed or resolved entry gives its
// key's place back (else a client that answers loses its share for good).
// An answer from another owner resolves nothing.
func TestPendingTableBounds(t *testing.T) {
	tests := []struct {
		name  string
		quota func(i int) string
		want  int
	}{
		{"anonymous", func(int) string { return "" }, maxPendingRequests},
		{"one client", func(int) string { return "cred:a" }, maxPendingPerOwner},
		{"many clients", func(i int) string { return fmt.Sprintf("cred:%d", i%64) }, maxPendingRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tab pendingTable
			n := 0
			for i := range 2 * maxPendingRequests {
				if tab.add(fmt.Sprint(i), "", tt.quota(i), make(chan clientAnswer, 1)) {
					n++
				}
			}
			if n != tt.want {
				t.Fatalf("%d entries added, want %d", n, tt.want)
			}
			// Removing and resolving each give one place back.
			tab.remove("0")
			if !tab.add("x", "", tt.quota(0), make(chan clientAnswer, 1)) {
				t.Fatal("no place after a remove")
			}
			if tab.add("y", "", tt.quota(0), make(chan clientAnswer, 1)) {
				t.Fatal("two places after one remove")
			}
			if !tab.resolve("x", "", clientAnswer{}) {
				t.Fatal("resolve found nothing")
			}
			if !tab.add("y", "", tt.quota(0), make(chan clientAnswer, 1)) {
				t.Fatal("no place after a resolve")
			}
		})
	}
	var tab pendingTable
	tab.add("k", "sub:alice", "sub:alice", make(chan clientAnswer, 1))
	if tab.resolve("k", "sub:mallory", clientAnswer{}) {
		t.Error("another owner's answer resolved the request")
	}
	if !tab.resolve("k", "sub:alice", clientAnswer{}) {
		t.Error("the owner's answer did not resolve the request")
	}
}

// TestOpenStateBinding pins each binding of a requestState: a state sealed
// for one call opens for that call only: the same method (a tool's state
// must not answer a prompt or resource of the same name), name, arguments
// and principal, before it expires, under the key that sealed it. Through
// the handler most of these coincide with another, so each is checked
// alone here.
func TestOpenStateBinding(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_900_000_000, 0)
	digest := []byte{1, 2, 3}
	state := sealState(key, &statePayload{Method: "tools/call", Name: "x", Args: digest,
		Expires: now.Unix() + 60, Subject: "alice"})
	tests := []struct {
		name    string
		key     []byte
		method  string
		call    string
		digest  []byte
		subject string
		at      time.Time
		ok      bool
	}{
		{"the call it was sealed for", key, "tools/call", "x", digest, "alice", now, true},
		{"at its expiry", key, "tools/call", "x", digest, "alice", now.Add(60 * time.Second), true},
		{"after its expiry", key, "tools/call", "x", digest, "alice", now.Add(61 * time.Second), false},
		{"another method", key, "prompts/get", "x", digest, "alice", now, false},
		{"another name", key, "tools/call", "y", digest, "alice", now, false},
		{"other arguments", key, "tools/call", "x", []byte{1, 2, 4}, "alice", now, false},
		{"another subject", key, "tools/call", "x", digest, "mallory", now, false},
		{"no subject", key, "tools/call", "x", digest, "", now, false},
		{"another key", []byte("another key"), "tools/call", "x", digest, "alice", now, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openState(tt.key, state, tt.method, tt.call, tt.digest, tt.subject, tt.at)
			if (err == nil) != tt.ok {
				t.Fatalf("openState: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
