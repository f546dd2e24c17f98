package mcp

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recorder is a Subscriber that keeps what it receives.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Deliver(msg []byte) {
	r.mu.Lock()
	r.msgs = append(r.msgs, string(msg))
	r.mu.Unlock()
}

// recordingPubSub stands for a distributed PubSub: it sees every call.
type recordingPubSub struct {
	*LocalPubSub
	published []string
}

func (p *recordingPubSub) Publish(channel string, msg []byte) {
	p.published = append(p.published, channel+" "+string(msg))
	p.LocalPubSub.Publish(channel, msg)
}

func TestLocalPubSub(t *testing.T) {
	ps := NewLocalPubSub()
	a, b := &recorder{}, &recorder{}
	ps.Subscribe("x", a)
	ps.Subscribe("x", b)
	ps.Subscribe("y", b)
	ps.Publish("x", []byte("1"))
	ps.Unsubscribe("x", a)
	ps.Unsubscribe("x", a) // idempotent
	ps.Publish("x", []byte("2"))
	ps.Publish("y", []byte("3"))
	ps.Publish("nobody", []byte("4"))
	if want := []string{"1"}; !slices.Equal(a.msgs, want) {
		t.Errorf("a got %q, want %q", a.msgs, want)
	}
	if want := []string{"1", "2", "3"}; !slices.Equal(b.msgs, want) {
		t.Errorf("b got %q, want %q", b.msgs, want)
	}
}

func TestHubWithPubSub(t *testing.T) {
	ps := &recordingPubSub{LocalPubSub: NewLocalPubSub()}
	h := NewHubWith(ps, nil)
	a, b := h.Route("/mcp/a"), h.Route("/mcp/b")
	a.Broadcast("news", "notifications/tools/list_changed", nil)
	a.ResourceUpdated("mem://a")
	b.Broadcast("news", "notifications/message", json.RawMessage(`{"level":"info","data":1}`))
	// Channel names carry the route: a PubSub shared by many processes keeps
	// the routes apart.
	want := []string{
		// Published once, on its channel: the route's listen streams that
		// joined it hear it there.
		`c:/mcp/a#news {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`r:/mcp/a#mem://a {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://a"}}`,
		`c:/mcp/b#news {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}`,
	}
	if !slices.Equal(ps.published, want) {
		t.Errorf("published:\n%q\nwant:\n%q", ps.published, want)
	}
}

func TestEventRingBounds(t *testing.T) {
	ev := func(id uint64, size int) ringEvent { return ringEvent{id: id, data: make([]byte, size)} }
	ids := func(r *eventRing) []uint64 {
		var out []uint64
		for _, e := range r.after(0, nil) {
			out = append(out, e.id)
		}
		return out
	}
	tests := []struct {
		name      string
		max, maxB int
		sizes     []int
		want      []uint64
		wantBytes int
	}{
		{"count bound", 3, 0, []int{1, 1, 1, 1, 1}, []uint64{3, 4, 5}, 3},
		{"byte bound drops the oldest", 100, 10, []int{4, 4, 4}, []uint64{2, 3}, 8},
		{"one big event evicts the rest", 100, 10, []int{3, 3, 9}, []uint64{3}, 9},
		{"an event over the budget is kept alone", 100, 10, []int{3, 30}, []uint64{2}, 30},
		{"and goes at the next push", 100, 10, []int{30, 2}, []uint64{2}, 2},
		{"both bounds", 2, 10, []int{1, 1, 1, 8}, []uint64{3, 4}, 9},
		{"both bounds, bytes first", 2, 10, []int{1, 1, 10}, []uint64{3}, 10},
		{"disabled", 0, 10, []int{1}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &eventRing{max: tt.max, maxBytes: tt.maxB}
			for i, size := range tt.sizes {
				r.add(ev(uint64(i+1), size))
			}
			if got := ids(r); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
			if r.bytes != tt.wantBytes {
				t.Errorf("bytes %d, want %d", r.bytes, tt.wantBytes)
			}
		})
	}
}

func TestHubQuotas(t *testing.T) {
	h := NewHub(nil)
	for _, tt := range []struct {
		name string
		set  func(int)
		q    *quota
		def  int
	}{
		{"sessions", h.SetMaxSessions, &h.sessionSlots, DefaultMaxSessions},
		{"listens", h.SetMaxListens, &h.listenSlots, DefaultMaxListens},
		{"stateless", h.SetMaxStateless, &h.statelessSlots, DefaultMaxStateless},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.max.Load(); got != int64(tt.def) {
				t.Errorf("default cap %d, want %d", got, tt.def)
			}
			tt.set(2)
			if !tt.q.take() || !tt.q.take() {
				t.Fatal("two slots refused")
			}
			if tt.q.take() {
				t.Fatal("a third slot granted past the cap")
			}
			tt.q.give()
			if !tt.q.take() {
				t.Fatal("a released slot was not given again")
			}
			tt.set(0)
			if !tt.q.take() {
				t.Fatal("no cap, and still refused")
			}
		})
	}
}

// TestPushEvent: a push keeps its message as given, shared by the streams
// it went to, and frames it as appendEvent does; one with a line break,
// which an SSE data line cannot hold, is framed in a copy.
func TestPushEvent(t *testing.T) {
	for _, msg := range []string{`{"a":1}`, "{\"a\":\n1}", "{\"a\":\r\n1}"} {
		b := []byte(msg)
		e1, e2 := pushEvent(7, "7", b), pushEvent(7, "7", b)
		var frame []byte
		for _, c := range e1.appendChunks(nil) {
			frame = append(frame, c...)
		}
		if want := appendEvent(nil, "7", []byte(msg)); string(frame) != string(want) || e1.size() != len(want) {
			t.Errorf("%q: framed %q (size %d), want %q", msg, frame, e1.size(), want)
		}
		shared := e1.msg != nil && &e1.msg[0] == &b[0] && &e2.msg[0] == &b[0]
		if broken := strings.ContainsAny(msg, "\r\n"); shared == broken {
			t.Errorf("%q: kept shared = %v", msg, shared)
		}
		if string(b) != msg {
			t.Errorf("%q: the message was changed to %q", msg, b)
		}
	}
}
